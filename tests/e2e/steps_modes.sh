#!/usr/bin/env bash
# Step boundaries, on real processes:
#  - auto on the NCCL TEST DOUBLE (NCCL needs a GPU), 2 ranks: each iteration computes and
#    all-reduces, every 10th also all-gathers, and once, mid-run, every rank broadcasts (an
#    eval). The step is the iteration (period 1: the all-gathers end at short pauses); the
#    all-gathers and the broadcast stay inside their step and shift nothing after them;
#  - marker:PMPI_Allreduce@libmpi on a 2-rank OpenMPI job: one step per call, rule "marker",
#    and the straggler still found;
#  - every:2 on the same job: half as many steps, rule "every";
#  - usdt:python:gc__start on an unmodified /usr/bin/python3.11 whose loop collects garbage
#    once per iteration: one step per iteration from a USDT probe.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
ITERS=80

mpi_run() {	# mpi_run NAME RANKSCOPE-ARGS...
	local name=$1
	shift
	bg "$name" mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" \
		--go-file "$T/$name.go" --iters $ITERS --compute-us 1000 --slow-rank 1 --slow-us 4000
	wait_lines "$T/$name.out" '^ready rank=' 2 60 || fail "$name: MPI job did not start"
	bg "${name}rs" "$RS" diagnose -p "$(ready_pids "$T/$name.out")" --json "$@"
	wait_lines "$T/${name}rs.out" '"type":"rank"' 2 30 || fail "$name: rankscope did not attach"
	touch "$T/$name.go"
	wait_exit "$(eval echo "\$PID_$name")" 120 || fail "$name: the job failed"
	wait_exit "$(eval echo "\$PID_${name}rs")" 60 || fail "$name: rankscope did not exit"
}

mpi_run marker --steps marker:PMPI_Allreduce@libmpi
mpi_run every --steps every:2
$PY - "$T" $ITERS <<'PY' || exit 1
import json, sys
T, iters = sys.argv[1], int(sys.argv[2])
def lines(n):
    return [json.loads(l) for l in open(f"{T}/{n}rs.out") if l.startswith('{')]
for name, rule, want in (("marker", "marker", iters - 1), ("every", "every", iters // 2 - 1)):
    d = lines(name)
    steps = [x for x in d if x['type'] == 'step' and x['rank'] == 0]
    assert steps and all(x['rule'] == rule for x in steps), (name, steps[:1])
    assert want - 3 <= len(steps) <= want + 1, f"{name}: {len(steps)} steps, want ~{want}"
    v = [x for x in d if x['type'] == 'verdict' and x['class'] != 'none']
    assert v and all(x['class'] == 'compute' and x['rank'] == 1 for x in v), (name, v[:2])
    print(f"{name}: {len(steps)} steps on rank 0, verdict compute on rank 1")
PY

[ -x "$FIX/nccl_ranks" ] || [ ! -e /usr/local/cuda/include/nccl.h ] ||
	fail "the NCCL double was not built: make fixtures"
if [ -x "$FIX/nccl_ranks" ]; then
	bg ejob "$FIX/nccl_ranks" --go-file "$T/ego" --nranks 2 --iters 100 --extra-iter 45 \
		--compute-us 500
	wait_lines "$T/ejob.out" '^ready rank=' 2 30 || fail "NCCL double job did not start"
	bg ers "$RS" diagnose -p "$(ready_pids "$T/ejob.out")" --json
	wait_lines "$T/ers.out" '"type":"rank"' 2 30 || fail "rankscope did not attach"
	touch "$T/ego"
	wait_exit "$PID_ejob" 60 || fail "NCCL double job failed"
	wait_exit "$PID_ers" 60 || fail "rankscope did not exit"
	$PY - "$T/ers.out" <<'PY' || exit 1
import json, sys, collections
steps = [json.loads(l) for l in open(sys.argv[1]) if '"type":"step"' in l]
for r in (0, 1):
    n = collections.Counter(d['collectives'] for d in steps if d['rank'] == r)
    # 100 iterations: 9 or 10 all-gathers and the broadcast each make a step of 2
    assert set(n) == {1, 2} and 9 <= n[2] <= 11 and n[1] >= 85, f"rank {r}: steps by size {dict(n)}"
    assert all(d['rule'] == 'period' for d in steps), "rule"
print("extra collectives: steps of 1 with", n[2], "steps of 2, on both ranks")
PY
fi

PY311=/usr/bin/python3.11
[ -x $PY311 ] && readelf -n $PY311 2>/dev/null | grep -q gc__start ||
	skip "no python3.11 with USDT probes: the usdt case did not run (marker and every passed)"
cat >"$T/loop.py" <<'PYLOOP'
import gc, os, sys, time
go, n = sys.argv[1], int(sys.argv[2])
print(f"ready rank=0 pid={os.getpid()}", flush=True)
while not os.path.exists(go):
    time.sleep(0.005)
for _ in range(n):
    time.sleep(0.005)   # the step's work
    gc.collect()        # fires the interpreter's python:gc__start USDT probe
print("done", flush=True)
PYLOOP
bg py $PY311 "$T/loop.py" "$T/py.go" 60
wait_lines "$T/py.out" '^ready rank=' 1 20 || fail "python did not start"
bg pyrs "$RS" diagnose -p "$(ready_pids "$T/py.out")" --json --steps usdt:python:gc__start
wait_lines "$T/pyrs.out" '"type":"rank"' 1 30 || fail "rankscope did not attach"
touch "$T/py.go"
wait_exit "$PID_py" 60 || fail "python loop failed"
wait_exit "$PID_pyrs" 60 || fail "rankscope did not exit"
n=$(grep -c '"type":"step".*"rule":"marker"' "$T/pyrs.out")
# automatic collections can add a few
[ "$n" -ge 50 ] && [ "$n" -le 75 ] || fail "usdt: $n steps from python:gc__start, want ~59"
echo "usdt: $n steps from python:gc__start"
pass "marker, every and usdt step modes"
