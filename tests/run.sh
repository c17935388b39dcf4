#!/usr/bin/env bash
# Runs every test: cmocka unit binaries, root tests (tests/bpf), end to end (tests/e2e), the
# deploy/ checks (tests/deploy) and the fuzzers (tests/fuzz).
# Prints each skip with its reason and ends with "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
pass=0 failn=0 skipn=0
skips=() fails=()
logdir=build/test-logs
mkdir -p "$logdir"

run_one() {
	local name=$1 log="$logdir/$(echo "$1" | tr '/' '_').log" rc start dur
	shift
	start=$(date +%s)
	timeout 600 "$@" >"$log" 2>&1
	rc=$?
	dur=$(( $(date +%s) - start ))
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

for t in build/tests/test_*; do
	[ -x "$t" ] || continue
	run_one "unit/$(basename "$t")" "$t"
done
for t in tests/bpf/*.sh tests/e2e/*.sh tests/deploy/*.sh tests/fuzz/*.sh; do
	[ -f "$t" ] || continue
	run_one "${t#tests/}" bash "$t"
done

echo
if [ ${#skips[@]} -gt 0 ]; then
	echo "skipped:"
	printf '  %s\n' "${skips[@]}"
fi
if [ ${#fails[@]} -gt 0 ]; then
	echo "failed (logs in $logdir):"
	printf '  %s\n' "${fails[@]}"
fi
echo "$pass passed, $failn failed, $skipn skipped"
[ "$failn" -eq 0 ]
