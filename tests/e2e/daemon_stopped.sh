#!/usr/bin/env bash
# The daemon stopped under load (SIGSTOP for 10 s, as a debugger or a frozen cgroup would): the
# probes never wait for it (records go to a ring nobody drains; submitted without a wakeup),
# so the job's steps, by its own clock, are as long while it is stopped as before; what the
# ring could not hold is counted in rankscope_events_dropped_total; after SIGCONT the same
# daemon serves again and makes new steps, and says once, not per record, that its loop did
# not run. A small ring (--ringbuf-kb 64) so that 10 s of a real 2-rank OpenMPI job fill it.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$TOP/build/workloads/zoo_mpi" \
	--buckets 3 --steps 100000 --go-file "$T/go"
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "the MPI job did not start"
PIDS=$(ready_pids "$T/job.out")
bg rsd "$RS" daemon -p "$PIDS" --listen 127.0.0.1:$PORT --lock-file "$T/lock" --ringbuf-kb 64
wait_lines "$T/rsd.out" 'attached to PID' 2 30 || fail "the daemon did not attach"
touch "$T/go"
metric() {	# metric REGEX: the sum of the /metrics lines matching REGEX
	http_get $URL/metrics | tail -n +2 | grep -E "$1" | awk '{s += $NF} END {printf "%d\n", s}'
}
steps() {	# the newest step index the daemon has for rank 0
	http_get "$URL/api/v1/steps?rank=0&last=1" | tail -n +2 |
		$PY -c 'import json, sys; s = json.load(sys.stdin); print(s[0]["step"] if s else -1)'
}
sleep 5
D0=$(metric '^rankscope_events_dropped_total')
S0=$(steps)
[ "$S0" -ge 0 ] || fail "no steps before the stop"
T_STOP=$($PY -c 'import time; print(time.monotonic_ns())')
kill -STOP "$PID_rsd"
sleep 10
T_CONT=$($PY -c 'import time; print(time.monotonic_ns())')
kill -CONT "$PID_rsd"
sleep 4
D1=$(metric '^rankscope_events_dropped_total')
S1=$(steps)
kill -0 "$PID_rsd" || fail "the daemon died"
[ "$D1" -gt "$D0" ] || fail "no drop counted while the daemon was stopped ($D0 -> $D1)"
[ "$S1" -gt "$S0" ] || fail "no new step after SIGCONT (rank 0's newest: $S0 -> $S1)"
n=$(grep -c 'the loop did not run for' "$T/rsd.out")
[ "$n" = 1 ] || fail "the stall was said $n times, not once: $(grep -i 'loop\|drop' "$T/rsd.out" | head -5)"
grep 'the loop did not run for' "$T/rsd.out"
kill -TERM "$PID_job"
wait_exit "$PID_job" 30
# the job's own step clock: steps wholly inside the stop against the 10 s before it
$PY - "$T/job.out" "$T_STOP" "$T_CONT" <<'PY' || exit 1
import json, statistics, sys
f, stop, cont = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
before, during = [], []
for l in open(f):
    if not l.startswith('{"type":"truth"'):
        continue
    try:
        t = json.loads(l)
    except ValueError:
        continue    # two ranks' lines cut into each other by mpirun's output forwarding
    if "start_ns" not in t or "step_ns" not in t:
        continue
    s, e = t["start_ns"], t["start_ns"] + t["step_ns"]
    if stop - 10 * 10**9 <= s and e < stop:
        before.append(t["step_ns"])
    elif stop <= s and e <= cont:
        during.append(t["step_ns"])
assert len(before) > 50 and len(during) > 50, (len(before), len(during))
b, d = statistics.median(before), statistics.median(during)
print(f"job step, median: {b / 1e6:.3f} ms before the stop ({len(before)} steps), "
      f"{d / 1e6:.3f} ms while the daemon was stopped ({len(during)} steps)")
# a sanity bound, not a benchmark: a probe that waited on the stopped daemon would stall
# the step for the whole 10 s
assert d < 1.5 * b + 1e6, "the job slowed while the daemon was stopped"
PY
pass "daemon stopped 10 s: the job kept its pace, $((D1 - D0)) records dropped and counted, the daemon resumed and said so once"
