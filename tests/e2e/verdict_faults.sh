#!/usr/bin/env bash
# Faults the profiler is not told about, on real jobs:
#  - SIGSTOP on one rank of an OpenMPI job: "hang" on that rank, "stopped", within the
#    timeout (1 s here) + 1 s;
#  - then kill -9 of it: "rank_exited" on that rank, killed by signal 9;
#  - one rank of a 4-rank job on the NCCL TEST DOUBLE (NCCL needs a GPU) reduces a different
#    size once: "divergent" on that rank, both signatures reported.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
mono() { $PY -c 'import time; print(time.monotonic_ns())'; }

VICTIM=$((RANDOM % 2))
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go" \
	--iters 1000000 --compute-us 1000
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start"
PIDS=$(ready_pids "$T/job.out")
VPID=$(echo "$PIDS" | cut -d, -f$((VICTIM + 1)))
bg rs "$RS" diagnose -p "$PIDS" --json --hang-timeout 1
wait_lines "$T/rs.out" '"type":"rank"' 2 30 || fail "rankscope did not attach"
touch "$T/go"
sleep 2
STOP=$(mono)
kill -STOP "$VPID"
wait_lines "$T/rs.out" '"class":"hang"' 1 10 || fail "no hang verdict 10 s after SIGSTOP"
kill -CONT "$VPID"
sleep 1
KILL=$(mono)
kill -KILL "$VPID"
wait_lines "$T/rs.out" '"class":"rank_exited"' 1 15 || fail "no rank_exited verdict after kill -9"
kill -TERM "$PID_rs"
wait_exit "$PID_rs" 60
$PY - "$T/rs.out" "$VICTIM" "$STOP" "$KILL" <<'PY' || exit 1
import json, sys
victim, stop, kill = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
v = [json.loads(l) for l in open(sys.argv[1]) if '"type":"verdict"' in l]
hang = [d for d in v if d['class'] == 'hang'][0]
assert hang['rank'] == victim, f"hang names rank {hang['rank']}, stopped was {victim}"
assert 'stopped' in hang['evidence']['detail'], hang
lat = (hang['t_ns'] - stop) / 1e9
assert lat <= 1 + 1 + 0.2, f"hang verdict {lat:.2f} s after SIGSTOP (timeout 1 s)"
ex = [d for d in v if d['class'] == 'rank_exited'][0]
assert ex['rank'] == victim and 'signal 9' in ex['evidence']['detail'], ex
print(f"hang on rank {victim} {lat:.2f} s after SIGSTOP: {hang['evidence']['detail']}")
print(f"rank_exited {(ex['t_ns'] - kill) / 1e9:.2f} s after kill -9: {ex['evidence']['detail']}")
PY

if [ -x "$FIX/nccl_ranks" ]; then
	ODD=$((RANDOM % 4))
	bg djob "$FIX/nccl_ranks" --go-file "$T/dgo" --nranks 4 --iters 80 --diverge-rank $ODD \
		--diverge-iter 30
	wait_lines "$T/djob.out" '^ready rank=' 4 30 || fail "NCCL double job did not start"
	bg drs "$RS" diagnose -p "$(ready_pids "$T/djob.out")" --json
	wait_lines "$T/drs.out" '"type":"rank"' 4 30 || fail "rankscope did not attach"
	touch "$T/dgo"
	wait_exit "$PID_djob" 60 || fail "NCCL double job failed"
	wait_exit "$PID_drs" 60 || fail "rankscope did not exit"
	$PY - "$T/drs.out" "$ODD" <<'PY' || exit 1
import json, sys
odd = int(sys.argv[2])
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
rank = {}
for d in lines:
    if d['type'] == 'rank':
        rank[d['pid']] = d['rank']   # the last line wins: ranks come from ncclCommInitRank
div = [d for d in lines if d['type'] == 'verdict' and d['class'] == 'divergent']
assert div, "no divergent verdict"
d = div[0]
assert d['rank'] == odd, f"divergent names rank {d['rank']}, the odd one was {odd}"
assert '8192 bytes' in d['evidence']['detail'] and '16384 bytes' in d['evidence']['detail'], d
print("divergent:", d['evidence']['detail'])
PY
else
	echo "note: NCCL double not built (no CUDA toolkit nccl.h): divergent case not run"
fi
pass "hang, rank_exited and divergent named the right rank"
