#!/usr/bin/env bash
# The wall clock stepped an hour ahead under load (date -s '+1 hour', as a bad NTP source or a
# hand would), then back: the daemon's durations come from the monotonic clock, so
#  - no step line has a negative or huge (> 1 min) duration or phase, before, during or after;
#  - steps keep coming and the straggler (a real 2-rank MPI job, rank 1 slow by 4 ms an
#    iteration) is still named after the step;
#  - process_start_time_seconds does not move (Prometheus would take that for a restart).
# The clock is put back by the same amount at exit, whatever happens.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ "${RS_NO_CLOCK_STEP:-}" ] && skip "RS_NO_CLOCK_STEP is set: this machine's clock is not to be touched"
STEPPED=0
trap '[ $STEPPED = 1 ] && date -s "-1 hour" >/dev/null; cleanup' EXIT
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg rsd "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/lock"
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 || fail "daemon did not start"
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go" \
	--iters 4000 --compute-us 2000 --slow-rank 1 --slow-us 4000
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start"
wait_lines "$T/rsd.out" 'attached to PID' 2 20 || fail "the daemon did not attach"
touch "$T/go"
metric() {
	http_get $URL/metrics | tail -n +2 | grep -E "$1" | awk '{s += $NF} END {printf "%.3f", s}'
}
named() {
	local i
	for i in $(seq 40); do
		http_get $URL/api/v1/diagnosis | tail -n +2 | grep -q '"rank":1,' && return 0
		sleep 0.5
	done
	return 1
}
named || fail "rank 1 not named before the step"
S0=$(metric '^process_start_time_seconds')
N0=$(metric '^train_step_seconds_count')
date -s '+1 hour' >/dev/null || skip "cannot set the wall clock here (no CAP_SYS_TIME?)"
STEPPED=1
echo "clock stepped to $(date -u +%T)"
sleep 4
S1=$(metric '^process_start_time_seconds')
N1=$(metric '^train_step_seconds_count')
http_get $URL/api/v1/diagnosis | tail -n +2 >"$T/diag"
date -s '-1 hour' >/dev/null && STEPPED=0
echo "clock back at $(date -u +%T)"
sleep 2
named || fail "rank 1 not named after the step: $(cat "$T/diag" | head -c 300)"
http_get "$URL/api/v1/steps" | tail -n +2 >"$T/steps"
echo "steps counted: $N0 before the step, $N1 an hour later"
[ "$S1" = "$S0" ] || fail "process_start_time_seconds moved with the clock: $S0 -> $S1"
$PY -c "import sys; sys.exit(0 if float('$N1') > float('$N0') else 1)" || fail "no step counted while the clock was ahead"
$PY - "$T/steps" <<'PY' || exit 1
import json, sys
text = open(sys.argv[1]).read().strip()
lines = json.loads(text) if text.startswith('[') else [json.loads(l) for l in text.splitlines() if l.strip()]
bad, n = [], 0
def walk(o, path=''):
    if isinstance(o, dict):
        for k, v in o.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k.endswith('_ns') \
               and k not in ('start_ns', 'end_ns', 't_ns', 'enter_ns', 'exit_ns'):
                if v < 0 or v > 60e9:
                    bad.append((path + '.' + k, v))
            else:
                walk(v, path + '.' + k)
    elif isinstance(o, list):
        for v in o:
            walk(v, path)
for d in lines:
    n += 1
    walk(d)
assert n > 0, 'no step lines'
assert not bad, bad[:5]
print(f'{n} step lines: no negative or huge duration')
PY
pass "clock stepped +1 h and back: durations sane, straggler still named, start time unmoved"
