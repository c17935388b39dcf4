#!/usr/bin/env bash
# diagnose with a ring buffer too small for the job (4 KiB, drained once a second): most
# records are lost, and the report says how many, before its verdict. With the default ring,
# it says nothing of the kind.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
run() {	# run NAME DIAGNOSE-OPTIONS...
	local name=$1
	shift
	bg "job_$name" mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" \
		--go-file "$T/go_$name" --iters 3000 --compute-us 200
	wait_lines "$T/job_$name.out" '^ready rank=' 2 60 || fail "$name: MPI job did not start"
	bg "rs_$name" "$RS" diagnose -p "$(ready_pids "$T/job_$name.out")" "$@"
	wait_lines "$T/rs_$name.out" 'attached to 2 ranks' 1 30 || fail "$name: no attach"
	touch "$T/go_$name"
	wait_exit "$(eval echo "\$PID_job_$name")" 120 || fail "$name: job failed"
	wait_exit "$(eval echo "\$PID_rs_$name")" 60 || fail "$name: diagnose did not end"
}
run small --ringbuf-kb 4 --drain-ms 1000
grep -E '^events lost: [0-9]+ of [0-9]+ \([0-9.]+%; the ring buffer was full' "$T/rs_small.out" ||
	fail "no loss line: $(cat "$T/rs_small.out")"
n=$(sed -n 's/^events lost: \([0-9]*\) of.*/\1/p' "$T/rs_small.out")
[ "$n" -gt 100 ] || fail "only $n lost with a 4 KiB ring"
[ "$(grep -n '^events lost' "$T/rs_small.out" | cut -d: -f1)" -lt "$(grep -n '^verdict' "$T/rs_small.out" | cut -d: -f1)" ] ||
	fail "the loss line is not before the verdict"
run normal
grep -q '^events lost' "$T/rs_normal.out" && fail "a loss line with the default ring: $(grep '^events lost' "$T/rs_normal.out")"
pass "diagnose says how many records were lost ($n with a 4 KiB ring), and nothing when none were"
