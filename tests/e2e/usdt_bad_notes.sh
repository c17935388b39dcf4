#!/usr/bin/env bash
# --steps usdt: on executables whose .note.stapsdt is crafted (tests/fixtures/bad_usdt.c, as a
# hostile container's binary could be): a descsz or namesz far past the section, provider and
# name without their NUL, an argument spec of garbage, a pc outside every segment with no
# .stapsdt.base. For each, rankscope attach (which reads the notes through libbpf, as root):
#  - does not crash (its exit status is 2, "the marker could be set on no rank", with the
#    rank's reason on the line before), and leaves no rs_ program behind;
#  - the well-formed control note attaches, and its calls make steps.
. "$(dirname "$0")/../lib.sh"
need_root
command -v cc >/dev/null || skip "no C compiler to build the crafted executables"
[ "$(rs_progs_left)" = 0 ] || skip "rs_ programs of another rankscope are loaded"

for v in 1 2 3 4 5 6; do
	cc -O1 -DVARIANT=$v -o "$T/bad_usdt$v" "$TOP/tests/fixtures/bad_usdt.c" 2>"$T/cc$v.err" ||
		fail "cannot build variant $v: $(head -3 "$T/cc$v.err")"
	RANK=0 bg "t$v" "$T/bad_usdt$v"
	wait_lines "$T/t$v.out" '^ready rank=0' 1 10 || fail "variant $v did not start"
	P=$(sed -n 's/^ready rank=0 pid=//p' "$T/t$v.out")
	timeout 60 "$RS" attach -p "$P" --json --duration 2 --steps usdt:rs:bad \
		>"$T/rs$v.out" 2>"$T/rs$v.err"
	rc=$?
	echo "variant $v: exit $rc: $(grep -v '^libbpf' "$T/rs$v.err" | head -2 | tr '\n' ' ' | cut -c1-220)"
	kill -KILL "$(eval echo "\$PID_t$v")" 2>/dev/null
	if [ $v = 6 ]; then
		[ $rc = 0 ] || fail "the well-formed note: exit $rc: $(tail -3 "$T/rs$v.err")"
		n=$(grep -c '"type":"step".*"rule":"marker"' "$T/rs$v.out")
		[ "$n" -ge 20 ] || fail "the well-formed note: $n marker steps in 2 s (a call every 10 ms)"
		echo "variant 6 (control): $n steps from usdt:rs:bad"
	else
		[ $rc = 2 ] || fail "variant $v: exit $rc, want 2 (no crash, marker refused)"
		grep -q "failed to put the step marker bad on PID $P" "$T/rs$v.err" ||
			fail "variant $v: no reason given: $(tail -3 "$T/rs$v.err")"
	fi
	grep -q 'AddressSanitizer\|runtime error' "$T/rs$v.err" &&
		fail "variant $v: sanitizer report: $(grep -m3 'ERROR\|runtime error' "$T/rs$v.err")"
	left=$(rs_progs_left)
	[ "$left" = 0 ] || fail "variant $v: $left rs_ programs left"
done
pass "crafted stapsdt notes refused without a crash, no program left; the control attaches"
