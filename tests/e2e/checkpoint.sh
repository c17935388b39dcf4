#!/usr/bin/env bash
# A synchronous checkpoint on a real 2-rank OpenMPI job: tests/workloads/zoo_mpi --ckpt-every 12
# makes rank 0 write 32 MiB and fsync it after every 12th step (~40 ms here, on a ~3 ms step)
# while rank 1 waits in the next all-reduce. Checked against the workload's own clock (its
# truth and ckpt lines):
# - steps are the job's steps, not cycles of 12: rank 0's own pause is no step end when its
#   peer does not pause there (rankscope counts within 2% of the workload's steps);
# - the verdicts name rank 0, class checkpoint (late in its own writes and flushes, not in
#   reads: no storage straggler), intermittent, with the share of steps it hits within 0.04
#   of the workload's and its lateness within half of the checkpoint's own time;
# - every rank saving its shard every 7th step: steps stay steps (a pause of writes is none).
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"

diagnose_job job 2 mpirun --allow-run-as-root --oversubscribe -np 2 "$TOP/build/workloads/zoo_mpi" \
	--steps 600 --ckpt-every 12 --ckpt-dir "$T" --go-file "$T/job.go"
$PY - "$T" <<'PY' || exit 1
import json, sys, statistics
T = sys.argv[1]
def lines(path):
    return [json.loads(l) for l in open(path) if l.startswith('{')]
job, rs = lines(f"{T}/job.out"), lines(f"{T}/jobrs.out")
truth = [d for d in job if d.get('type') == 'truth' and d['rank'] == 0 and d['step'] >= 0]
ckpt = [d for d in job if d.get('type') == 'ckpt']
assert len(ckpt) >= 40, f"the workload saved {len(ckpt)} checkpoints"
share = len(ckpt) / len(truth)
save = statistics.median(d['end_ns'] - d['start_ns'] for d in ckpt)
steps = [d for d in rs if d['type'] == 'step' and d['rank'] == 0]
assert abs(len(steps) - len(truth)) <= 0.02 * len(truth), \
    f"{len(steps)} steps from rankscope, {len(truth)} in the job: {[d for d in rs if d['type'] == 'rule']}"
v = [d for d in rs if d['type'] == 'verdict']
right = [d for d in v if d['class'] == 'checkpoint' and d['rank'] == 0 and d['intermittent']]
wrong = [d for d in v if d['class'] not in ('none', 'checkpoint') or
         (d['class'] == 'checkpoint' and d['rank'] != 0)]
assert right, f"no intermittent checkpoint verdict on rank 0: {[(d['class'], d['rank']) for d in v][:6]}"
assert len(right) >= len(v) // 2, f"only {len(right)} of {len(v)} verdicts name it"
assert len(wrong) <= max(1, len(v) // 10), \
    f"{len(wrong)} wrong of {len(v)} verdicts: {[(d['class'], d['rank']) for d in wrong][:4]}"
said = statistics.median(d['evidence']['late_share'] for d in right)
assert abs(said - share) <= 0.04, f"late_share {said:.3f} vs the workload's {share:.3f}"
skew = statistics.median(d['skew_ns'] for d in right)
assert abs(skew - save) <= save / 2, f"late by {skew / 1e6:.1f} ms, a save takes {save / 1e6:.1f} ms"
print(f"{len(steps)} steps ({len(truth)} in the job); checkpoint on rank 0 in {len(right)} of "
      f"{len(v)} verdicts, late_share {said:.3f} (job {share:.3f}), late {skew / 1e6:.1f} ms "
      f"(a save {save / 1e6:.1f} ms)")
PY

# Every rank saving its own shard every 7th step (--ckpt-shards): a pause on every rank, long
# over the others, but one of writes: still no step end (steps of 1 all-reduce, not 7).
mkdir -p "$T/shards"
diagnose_job shard 2 mpirun --allow-run-as-root --oversubscribe -np 2 \
	"$TOP/build/workloads/zoo_mpi" --steps 300 --ckpt-every 7 --ckpt-shards --ckpt-mb 16 \
	--ckpt-dir "$T/shards" --go-file "$T/shard.go"
$PY - "$T" <<'PY' || exit 1
import json, sys
T = sys.argv[1]
def lines(path):
    return [json.loads(l) for l in open(path) if l.startswith('{')]
job, rs = lines(f"{T}/shard.out"), lines(f"{T}/shardrs.out")
truth = [d for d in job if d.get('type') == 'truth' and d['rank'] == 0 and d['step'] >= 0]
saves = {d['rank'] for d in job if d.get('type') == 'ckpt'}
assert saves == {0, 1}, f"ranks that saved: {saves}"
steps = [d for d in rs if d['type'] == 'step' and d['rank'] == 0]
assert abs(len(steps) - len(truth)) <= 0.02 * len(truth), \
    f"{len(steps)} steps from rankscope, {len(truth)} in the job: {[d for d in rs if d['type'] == 'rule']}"
print(f"sharded saves: {len(steps)} steps ({len(truth)} in the job)")
PY
pass "a checkpoint every 12 steps is named on its rank, with its share and time, and steps stay steps, sharded saves on every rank too"
