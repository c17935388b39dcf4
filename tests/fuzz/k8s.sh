#!/usr/bin/env bash
# libFuzzer on the Kubernetes readers (user/sys/k8s.c): /proc/PID/cgroup paths, which a
# container names itself, and the pod list the pod watch reads, with ASan and UBSan, from
# tests/fuzz/corpus/k8s, for a bounded time (FUZZ_SECONDS, default 20). Any crash, leak,
# sanitizer report or broken promise of k8s.h fails the test.
. "$(dirname "$0")/../lib.sh"
fuzz_target k8s "the Kubernetes readers"
pass "the Kubernetes readers fuzzed for ${FUZZ_SECONDS:-20} s without a finding"
