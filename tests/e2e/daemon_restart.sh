#!/usr/bin/env bash
# A node daemon restarted under a running job (a DaemonSet rollout, an OOM kill):
#  - SIGKILL: the old daemon's programs and links go with it (the kernel frees what only its
#    fds held): none of them is left once it is gone;
#  - a new daemon (--all) adopts the running ranks again within a few rescans, with the same
#    number of programs as the first (no duplicate probes), and its counters start again from
#    zero under a new process_start_time_seconds, as Prometheus expects of a restart; it names
#    the job's straggler again;
#  - SIGTERM: it exits 0 and leaves nothing; a third daemon adopts the ranks again, and exits 0
#    on SIGHUP, leaving nothing either.
# The job (a real 2-rank OpenMPI loop, rank 1 slow by 3 ms an iteration) runs throughout and
# finishes every iteration.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
command -v bpftool >/dev/null || skip "bpftool not installed (make deps)"
[ "$(rs_progs_left)" = 0 ] || skip "rs_ programs of another rankscope are loaded"
ITERS=12000
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go" \
	--iters $ITERS --slow-rank 1 --slow-us 3000
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start"
read -r -a PIDS <<<"$(ready_pids "$T/job.out" | tr , ' ')"
touch "$T/go"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT

# rs_progs: rs_ programs loaded now
rs_progs() {
	bpftool -j prog show 2>/dev/null | $PY -c '
import json, sys
print(sum(1 for p in json.load(sys.stdin) if p.get("name", "").startswith("rs_")))'
}
# metric REGEX: the value of the first /metrics line matching REGEX
metric() {
	http_get $URL/metrics | tail -n +2 | grep -E "$1" | head -1 | awk '{print $NF}'
}
# start N: daemon N (--all), until both ranks are attached; prints seconds it took
start() {
	local t0=$(date +%s%N) p
	bg "rsd$1" "$RS" daemon --all --listen 127.0.0.1:$PORT --lock-file "$T/lock" --retain 600
	for p in "${PIDS[@]}"; do
		wait_lines "$T/rsd$1.out" "attached to PID $p:" 1 20 ||
			fail "daemon $1 did not adopt running rank PID $p: $(tail -3 "$T/rsd$1.out")"
	done
	echo "daemon $1 adopted both ranks in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}
# straggler: wait until /api/v1/diagnosis names rank 1
straggler() {
	local i
	for i in $(seq 60); do
		http_get $URL/api/v1/diagnosis | tail -n +2 | grep -q '"rank":1,' && return 0
		sleep 0.5
	done
	fail "daemon $1 did not name the slow rank: $(http_get $URL/api/v1/diagnosis | tail -c 400)"
}

start 1
straggler 1
sleep 3		# daemon 1 runs longer than daemon 2 will have when its counter is read
N1=$(rs_progs)
[ "$N1" -gt 0 ] || fail "no rs_ program loaded under daemon 1"
T1=$(metric '^process_start_time_seconds')
C1=$(metric '^rankscope_events_received_total\{family="collectives"\}')
echo "daemon 1: $N1 programs, started at $T1, $C1 collective records"

kill -KILL "$PID_rsd1"
wait_exit "$PID_rsd1" 10
left=$(rs_progs_left)
[ "$left" = 0 ] || fail "$left rs_ programs left after the daemon was killed (SIGKILL)"
echo "SIGKILL: no rs_ program left"

sleep 1.5	# past a whole second, so the new start time differs
start 2
# read at once: daemon 2 has run for less time than daemon 1 had, so a counter that starts
# again from zero is below daemon 1's last value, and one carried over is above it
T2=$(metric '^process_start_time_seconds')
C2=$(metric '^rankscope_events_received_total\{family="collectives"\}')
straggler 2
N2=$(rs_progs)
[ "$N2" = "$N1" ] || fail "daemon 2 loaded $N2 rs_ programs, daemon 1 $N1 (duplicates?)"
$PY -c 'import sys; t1, t2, c1, c2 = map(float, sys.argv[1:]); assert t2 > t1 and c2 < c1, sys.argv' \
	"$T1" "$T2" "$C1" "$C2" ||
	fail "after the restart the counters did not start again (start $T1 -> $T2, records $C1 -> $C2)"
echo "daemon 2: $N2 programs, started at $T2, $C2 collective records: a counter reset"

kill -TERM "$PID_rsd2"
wait_exit "$PID_rsd2" 30 || fail "daemon 2 did not exit 0 on SIGTERM"
left=$(rs_progs_left)
[ "$left" = 0 ] || fail "$left rs_ programs left after SIGTERM"
echo "SIGTERM: exit 0, no rs_ program left"
start 3
straggler 3
[ "$(rs_progs)" = "$N1" ] || fail "daemon 3 loaded $(rs_progs) rs_ programs, not $N1"
kill -HUP "$PID_rsd3"	# as the README says: detach and exit 0, like SIGTERM
wait_exit "$PID_rsd3" 30 || fail "daemon 3 did not exit 0 on SIGHUP"
left=$(rs_progs_left)
[ "$left" = 0 ] || fail "$left rs_ programs left after SIGHUP"
echo "SIGHUP: exit 0, no rs_ program left"

wait_exit "$PID_job" 120 || fail "the MPI job failed across the restarts"
n=$(grep -c '^done rank=' "$T/job.out")
[ "$n" = 2 ] || fail "the job's ranks did not all finish: $(tail -3 "$T/job.out")"
pass "daemon killed, restarted, stopped (TERM, HUP) under a running job: ranks adopted again, no duplicate or leftover probe, counters reset"
