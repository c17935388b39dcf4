#!/usr/bin/env bash
# Steps, phases and verdicts on a real 2-rank OpenMPI job (2 ranks: one per vCPU here, so the
# healthy run is not a contended one). Three runs, the profiler never told which rank:
#  1. healthy, 250 steps: every verdict is "none", and the phases sum to each step (1%);
#  2. one rank, picked at random, sleeps 4 ms before each allreduce: "compute" on it, first
#     within 10 steps of the window filling, and persistent;
#  3. phases agree with the workload's own clock within 10% or 2 ms on average.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"

run() {	# run NAME ARGS...: a job under rankscope diagnose --json
	local name=$1
	shift
	bg "$name" mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" \
		--go-file "$T/$name.go" --compute-us 1000 "$@"
	wait_lines "$T/$name.out" '^ready rank=' 2 60 || fail "MPI job did not start"
	bg "${name}rs" "$RS" diagnose -p "$(ready_pids "$T/$name.out")" --json
	wait_lines "$T/${name}rs.out" '"type":"rank"' 2 30 || fail "rankscope did not attach"
	touch "$T/$name.go"
	wait_exit "$(eval echo "\$PID_$name")" 120 || fail "$name: the job failed"
	wait_exit "$(eval echo "\$PID_${name}rs")" 60 || fail "$name: rankscope did not exit"
}

run healthy --iters 250
SLOW=$((RANDOM % 2))
run slow --iters 120 --slow-rank $SLOW --slow-us 4000
$PY - "$T" $SLOW <<'PY' || exit 1
import json, re, sys, collections
T, slow = sys.argv[1], int(sys.argv[2])
def lines(name):
    return [json.loads(l) for l in open(f"{T}/{name}rs.out") if l.startswith('{')]

h = lines("healthy")
steps = [d for d in h if d['type'] == 'step']
per_rank = collections.Counter(d['rank'] for d in steps)
assert min(per_rank.values()) >= 200, f"healthy: steps per rank {dict(per_rank)} < 200"
for d in steps:
    total = sum(v for k, v in d['phases'].items() if k not in ('comm_wait', 'comm_transfer'))
    assert abs(total - d['dur_ns']) <= d['dur_ns'] * 0.01, f"phases {total} != step {d['dur_ns']}"
    assert d['phases']['comm_wait'] + d['phases']['comm_transfer'] == d['phases']['comm'], d
    assert d['rule'] == 'period', d['rule']
bad = [d for d in h if d['type'] == 'verdict' and d['class'] != 'none']
assert not bad, f"healthy run, false positives: {bad[:2]}"
assert any(d['type'] == 'verdict' for d in h), "healthy run: no verdict at all"
print(f"healthy: {len(steps)} rank-steps, all verdicts none")

s = lines("slow")
rank_of_pid = {d['pid']: d['rank'] for d in s if d['type'] == 'rank'}
verdicts = [d for d in s if d['type'] == 'verdict']
right = [d for d in verdicts if d['class'] == 'compute' and d['rank'] == slow]
assert right, f"no compute verdict on rank {slow}: {[(d['class'], d['rank']) for d in verdicts]}"
first = right[0]
assert first['step'] <= 8 + 10, f"first correct verdict only at step {first['step']}"
assert any(d['persistent'] for d in right), "never persistent"
wrong = [d for d in verdicts if d['class'] not in ('none', 'compute') or
         (d['class'] == 'compute' and d['rank'] != slow)]
assert not wrong, f"wrong verdicts: {wrong[:2]}"
assert first['skew_ns'] > 3e6 and first['experiment'], first
print(f"slow rank {slow}: compute verdict at step {first['step']}, skew {first['skew_ns']/1e6:.1f} ms")

# accuracy: the workload's clock vs rankscope's phases, per rank, on average
job = open(f"{T}/slow.out").read()
seen = 0
for m in re.finditer(r'done rank=(\d+) pid=(\d+) .*compute_ns_mean=(\d+) read_ns_mean=(\d+) '
                     r'sleep_ns_mean=(\d+) allreduce_ns_mean=(\d+)', job):
    r, pid = int(m[1]), int(m[2])
    seen += 1
    compute, sleep, allreduce = int(m[3]), int(m[5]), int(m[6])
    st = [d for d in s if d['type'] == 'step' and d['pid'] == pid]
    mean = lambda k: sum(d['phases'][k] for d in st) / len(st)
    own = mean('compute') + mean('other') + mean('sched_delay')   # the rank's own work and sleep
    comm = mean('comm')
    for name, want, got in (("compute+sleep", compute + sleep, own), ("allreduce", allreduce, comm)):
        assert abs(got - want) <= max(0.10 * want, 2e6), \
            f"rank {r} {name}: rankscope {got/1e6:.2f} ms vs workload {want/1e6:.2f} ms"
    print(f"rank {r}: compute+sleep {own/1e6:.2f}/{(compute+sleep)/1e6:.2f} ms, "
          f"allreduce {comm/1e6:.2f}/{allreduce/1e6:.2f} ms (rankscope/workload)")
assert seen == 2, f"the accuracy check compared {seen} ranks' done lines, want 2"
PY
pass "healthy: none over 250 steps; slow rank: compute, persistent; phases match the workload"
