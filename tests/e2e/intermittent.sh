#!/usr/bin/env bash
# An intermittent straggler on a real 2-rank OpenMPI job (issue 30's "a rank late every 4th
# step"): tests/workloads/zoo_mpi --fault compute:1:6000 --fault-every 4 burns 6 ms more on
# rank 1 in every 4th step (a 2.7 ms step otherwise, so its median lateness is ~0); with
# --fault-every 12 a window of 8 steps holds one slow step at most, and the verdict must come
# from the steps kept beyond it. The workload's own truth lines say which steps were slow.
# rankscope diagnose must name that rank, compute, intermittent, in half its verdicts at least,
# with the share of steps it hits within 0.1 (every 4th) or 0.04 (every 12th) of the
# workload's, and hardly ever anything else; the same job without the fault gets no
# intermittent verdict and no persistent blame, but for CPU contention on a rank that its own
# clock shows preempted, or compute in steps where its own clock shows it.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"

run() {	# run NAME ARGS...: the job under rankscope diagnose --json
	local name=$1
	shift
	diagnose_job "$name" 2 mpirun --allow-run-as-root --oversubscribe -np 2 \
		"$TOP/build/workloads/zoo_mpi" --steps 1000 --go-file "$T/$name.go" "$@"
}

# Rank 1, not a random one: the step period is learned from rank 0's pauses, and a fault on
# rank 0 that recurs every 4th step makes its pauses look like steps of 4 (an open miss, in
# the README's "Known limits"); this test is about judging the lateness, given the steps.
SLOW=1
run slow --fault compute:$SLOW:6000 --fault-every 4
run rare --fault compute:$SLOW:6000 --fault-every 12
run healthy
$PY - "$T" $SLOW <<'PY' || exit 1
import json, sys, statistics
T, slow = sys.argv[1], int(sys.argv[2])
def lines(path):
    return [json.loads(l) for l in open(path) if l.startswith('{')]
def judged(name, lo, hi, tol):
    # the workload's own clock: the share of steps where the slow rank's compute stood out
    truth = [d for d in lines(f"{T}/{name}.out") if d.get('type') == 'truth' and d['step'] >= 0]
    mine = {d['step']: d['compute_ns'] for d in truth if d['rank'] == slow}
    med = statistics.median(mine.values())
    share = sum(1 for v in mine.values() if v > med + 3e6) / len(mine)
    assert lo <= share <= hi, f"{name}: the workload's own share of slow steps is {share:.2f}"
    v = [d for d in lines(f"{T}/{name}rs.out") if d['type'] == 'verdict']
    right = [d for d in v if d['class'] == 'compute' and d['rank'] == slow and d['intermittent']]
    wrong = [d for d in v if d['class'] not in ('none', 'compute') or
             (d['class'] == 'compute' and d['rank'] != slow)]
    assert right, f"{name}: no intermittent compute verdict on rank {slow}: " \
        f"{[(d['class'], d['rank'], d['intermittent']) for d in v][:6]}"
    assert len(right) >= len(v) // 2, f"{name}: only {len(right)} of {len(v)} verdicts name it"
    # a shared 2-vCPU host preempts the burning rank now and then: a transient other class on
    # it is the host's contention, so at most a tenth of the verdicts (as e2e/pipeline.sh
    # allows)
    assert len(wrong) <= max(1, len(v) // 10), \
        f"{name}: {len(wrong)} wrong of {len(v)} verdicts: {[(d['class'], d['rank']) for d in wrong][:4]}"
    said = statistics.median(d['evidence']['late_share'] for d in right)
    assert abs(said - share) <= tol, f"{name}: late_share {said:.2f} vs the workload's {share:.2f}"
    return f"{name}: compute, intermittent in {len(right)} of {len(v)} verdicts, late_share " \
        f"{said:.2f} (workload {share:.2f})"
# the workload's share: 1/4 and 1/12 of its steps, and more where the 2-vCPU host took the
# rank's vCPU for 3 ms (its own clock counts that as compute too; up to 3% of steps here, one
# run in 5 went past 0.11): rankscope is held to the share measured, not to 1/k
said = [judged("slow", 0.2, 0.33, 0.1), judged("rare", 0.06, 0.14, 0.04)]
h = [d for d in lines(f"{T}/healthyrs.out") if d['type'] == 'verdict']
# a cpu_contention (persistent or intermittent) is allowed only on a rank the workload's own
# clock shows preempted (over 1% of its steps' time): the 2-vCPU host's real contention, not a
# false one
ht = [d for d in lines(f"{T}/healthy.out") if d.get('type') == 'truth' and d['step'] >= 0]
pre = {r: sum(d.get('preempt_ns', 0) for d in ht if d['rank'] == r) /
          max(1, sum(d['step_ns'] for d in ht if d['rank'] == r)) for r in (0, 1)}
# an intermittent compute verdict is allowed only on a rank whose own clock shows its compute
# 3 ms over its median in steps of the verdict's window, 2 at least (a 2-vCPU VM's vCPU taken
# by the host for a few ms: time the guest counts as compute, in the workload's clock too)
comp = {(d['rank'], d['step']): d['compute_ns'] for d in ht}
cmed = {r: statistics.median(v for (q, _), v in comp.items() if q == r) for r in (0, 1)}
def shown(d):
    lo, hi = d['window']
    return sum(1 for k in range(lo, hi + 1)
               if comp.get((d['rank'], k), 0) > cmed.get(d['rank'], 0) + 3e6) >= 2
bad = [d for d in h if (d['intermittent'] or (d['persistent'] and d['rank'] >= 0)) and not (
    d['class'] == 'cpu_contention' and pre.get(d['rank'], 0) > 0.01) and not (
    d['class'] == 'compute' and d['intermittent'] and shown(d))]
assert h and not bad, \
    f"healthy run: {[(d['class'], d['rank'], d['intermittent']) for d in bad][:4]}; preempted {pre}"
print(f"rank {slow}: {'; '.join(said)}; healthy: {len(h)} verdicts, no blame but contention "
      f"its own clock shows (preempted {pre})")
PY
pass "an intermittent straggler (every 4th or 12th step) is named with its share of steps; a healthy run is not"
