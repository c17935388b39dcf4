#!/usr/bin/env bash
# libFuzzer on the Prometheus text writer's escaping (user/util/prom.c) of HELP text and label
# values from a container, with ASan and UBSan, from tests/fuzz/corpus/prom, for a bounded time
# (FUZZ_SECONDS, default 20): each value must read back as given. Then every input of the
# grown corpus is written out as an exposition and each must pass `promtool check metrics`.
. "$(dirname "$0")/../lib.sh"
command -v promtool >/dev/null || skip "no promtool (make deps)"
fuzz_target prom "the Prometheus label escaper"
mkdir -p "$T/out"
FUZZ_PROM_OUT=$T/out "$TOP/build/fuzz/fuzz_prom" -runs=0 "$T/corpus" >"$T/replay.log" 2>&1 ||
	fail "replaying the corpus failed: $(tail -3 "$T/replay.log")"
n=0
for f in "$T"/out/*.prom; do
	promtool check metrics <"$f" >"$T/promtool.log" 2>&1 ||
		fail "promtool refused $f: $(head -3 "$T/promtool.log"; head -c 300 "$f" | od -c | head -5)"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no exposition written from the corpus"
pass "promtool read all $n expositions of the fuzzed corpus"
