#!/usr/bin/env bash
# libFuzzer on the readers of /proc text a container controls (user/sys/procfs.c, libs.c,
# ranks.c): maps lines and the library scan, stat with a hostile comm, environ and the rank
# variables, cgroup scope, with ASan and UBSan, from tests/fuzz/corpus/procfs, for a bounded
# time (FUZZ_SECONDS, default 20). Any crash, leak or sanitizer report fails the test.
. "$(dirname "$0")/../lib.sh"
fuzz_target procfs "the /proc parsers"
pass "the /proc parsers fuzzed for ${FUZZ_SECONDS:-20} s without a finding"
