#!/usr/bin/env bash
# Runs every test: cmocka unit binaries, root tests (tests/bpf), end to end (tests/e2e), the
# deploy/ checks (tests/deploy), the fuzzers (tests/fuzz) and the shape simulator's regression
# guard (tests/sim/guard.sh).
# Prints each skip with its reason and ends with "N passed, N failed, N skipped".
# tests/run.sh --sanitize DIR E2E...: the sanitized build's run (make check SANITIZE=1).
set -u
cd "$(dirname "$0")/.."
pass=0 failn=0 skipn=0
skips=() fails=() leaks=()
logdir=build/test-logs
mkdir -p "$logdir"

# A test's processes still alive after it (a job or a CPU hog it did not stop) slow the tests
# after it. Each test runs with its own RS_TEST_RUN in the environment, which its children
# inherit: those left are named in its log and on the summary, and stopped.
leftovers() {	# leftovers NAME LOG ID
	local name=$1 log=$2 id=$3 d cmd
	sleep 0.3
	for d in /proc/[0-9]*; do
		grep -qsxz "RS_TEST_RUN=$id" "$d/environ" || continue
		cmd=$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null | cut -c1-80)
		echo "leftover of $name: PID ${d#/proc/}: $cmd" | tee -a "$log"
		leaks+=("$name: PID ${d#/proc/}: $cmd")
		kill -9 "${d#/proc/}" 2>/dev/null
	done
}

run_one() {
	local name=$1 log="$logdir/$(echo "$1" | tr '/' '_').log" rc start dur id
	shift
	id=$$.$((pass + failn + skipn))
	start=$(date +%s)
	RS_TEST_RUN=$id timeout 600 "$@" >"$log" 2>&1
	rc=$?
	dur=$(( $(date +%s) - start ))
	leftovers "$name" "$log" "$id"
	case $rc in
	0) pass=$((pass + 1)); printf 'ok    %-36s %3ss\n' "$name" "$dur" ;;
	77) skipn=$((skipn + 1))
	    reason=$(grep -E '^SKIP:|\[  SKIPPED \]' "$log" | tail -1)
	    skips+=("$name: ${reason:-no reason given}")
	    printf 'skip  %-36s %s\n' "$name" "${reason:-}" ;;
	*) failn=$((failn + 1)); fails+=("$name")
	   printf 'FAIL  %-36s %3ss (exit %d)\n' "$name" "$dur" "$rc"
	   tail -25 "$log" | sed 's/^/      | /' ;;
	esac
}

# --sanitize DIR E2E...: DIR's ASan+UBSan rankscope and unit tests, then the e2e tests named;
# every sanitizer report (written under $logdir/sanitizer) is a failure
units=build/tests
e2e=(tests/bpf/*.sh tests/e2e/*.sh tests/deploy/*.sh tests/fuzz/*.sh tests/sim/*.sh)
san=
if [ "${1:-}" = --sanitize ]; then
	units=$2/tests
	shift 2
	e2e=()
	for t in "$@"; do
		e2e+=("tests/e2e/$t.sh")
	done
	san=$logdir/sanitizer
	rm -rf "$san"
	mkdir -p "$san"
	export RS_BIN=$PWD/$(dirname "$units")/rankscope
	export ASAN_OPTIONS=log_path=$PWD/$san/asan:detect_leaks=1
	export UBSAN_OPTIONS=log_path=$PWD/$san/ubsan:print_stacktrace=1
	echo "sanitized: $RS_BIN and $units/, reports in $san"
fi

for t in "$units"/test_*; do
	[ -x "$t" ] || continue
	run_one "unit/$(basename "$t")" "$t"
done
for t in "${e2e[@]}"; do
	[ -f "$t" ] || continue
	run_one "${t#tests/}" bash "$t"
done
if [ -n "$san" ]; then
	for r in "$san"/*; do
		[ -f "$r" ] || continue
		failn=$((failn + 1))
		fails+=("sanitizer report $r")
		echo "FAIL  sanitizer report $r"
		head -40 "$r" | sed 's/^/      | /'
	done
fi

echo
if [ ${#skips[@]} -gt 0 ]; then
	echo "skipped:"
	printf '  %s\n' "${skips[@]}"
fi
if [ ${#leaks[@]} -gt 0 ]; then
	echo "left running by a test, and stopped:"
	printf '  %s\n' "${leaks[@]}"
fi
if [ ${#fails[@]} -gt 0 ]; then
	echo "failed (logs in $logdir):"
	printf '  %s\n' "${fails[@]}"
fi
echo "$pass passed, $failn failed, $skipn skipped"
[ "$failn" -eq 0 ]
