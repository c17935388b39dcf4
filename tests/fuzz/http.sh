#!/usr/bin/env bash
# libFuzzer on what the HTTP server takes from a request (number arguments, the capture query,
# capture ids looked up in a capture directory, --listen addresses), with ASan and UBSan, from
# tests/fuzz/corpus/http, for a bounded time (FUZZ_SECONDS, default 20). Each must keep its
# contract (bounds, no file reached by a made-up id); any crash or report fails the test.
. "$(dirname "$0")/../lib.sh"
fuzz_target http "the HTTP query and path validators"
pass "the HTTP query and path validators fuzzed for ${FUZZ_SECONDS:-20} s without a finding"
