#!/usr/bin/env bash
# libFuzzer on the ring-buffer record decoder and the names of a record's enums
# (user/util/decode.c), with ASan and UBSan, from the corpus in tests/fuzz/corpus/decode (a
# record of each kind, a short one, one from a newer ABI), for a bounded time (FUZZ_SECONDS,
# default 20). Any crash, leak or sanitizer report fails the test.
. "$(dirname "$0")/../lib.sh"
fuzz_target decode "the ring-buffer record decoder"
pass "the ring-buffer record decoder fuzzed for ${FUZZ_SECONDS:-20} s without a finding"
