#!/usr/bin/env bash
# A link that gets slower in a job that saves a checkpoint every few steps: a real 2-rank
# OpenMPI data-parallel job (tests/workloads/zoo_mpi, 2 all-reduces of 256 KiB a step) over
# the TCP transport, rank 0 in network namespace A, rank 1 in B, joined by a veth pair. Rank
# 0 saves 64 MiB (writes, fsync, rename) every 5 steps while rank 1 waits in the next
# all-reduce: the windows tell a save (checkpoint), which blames no straggler. Once rankscope
# has told it, the veth is throttled (tbf).
#  - before the throttle: checkpoint or none, never communication;
#  - after it: communication, on no rank, within 12 steps (a window and a half) of it:
#    windows that tell a save still judge the collectives against the job's earlier steps;
#  - the rise it states is between half and twice the rise of the ranks' median time in the
#    all-reduces by the workload's own clock (comm_ns) in steps that save nothing.
. "$(dirname "$0")/../lib.sh"
mpi_two_ns 1

mpi_two_ns_job 2 --buckets 2 --bucket-bytes 262144 --compute-us 60000 --ckpt-every 5 \
	--ckpt-mb 64 --steps 100000
bg rs "$RS" diagnose -p "$(ready_pids "$T/job.out")" --json
wait_lines "$T/rs.out" '"type":"rank"' 2 30 || fail "rankscope did not attach"
touch "$T/go"
wait_class checkpoint 60
t_throttle=$($PY -c 'import time; print(time.monotonic_ns())')
throttle_veth 100mbit
wait_class communication 40
sleep 2
stop_rs_job
PYTHONPATH="$TOP/tests/e2e" $PY - "$T" "$t_throttle" <<'PY' || exit 1
import records, statistics, sys
t, at = sys.argv[1], int(sys.argv[2])
lines = lambda name, ty: records.lines(f"{t}/{name}", ty)
saves = {x["step"] for x in lines("job.out", "ckpt")}
truth = [x for x in lines("job.out", "truth") if x["step"] >= 1 and x["step"] - 1 not in saves]
med = lambda xs, k: statistics.median(x[k] for x in xs)
before = [x for x in truth if x["start_ns"] + x["step_ns"] < at]
after = [x for x in truth if x["start_ns"] > at + 1_000_000_000]
assert saves and len(before) >= 8 and len(after) >= 20, (len(saves), len(before), len(after))
rise = med(after, "comm_ns") - med(before, "comm_ns")
print(f"workload: {len(saves)} saves; steps that save nothing: {med(before, 'step_ns') / 1e6:.0f} "
      f"-> {med(after, 'step_ns') / 1e6:.0f} ms, in the all-reduces "
      f"{med(before, 'comm_ns') / 1e6:.1f} -> {med(after, 'comm_ns') / 1e6:.1f} ms")
v = lines("rs.out", "verdict")
early = [x for x in v if x["class"] not in ("none", "checkpoint") and x["t_ns"] < at]
assert not early, f"{early[0]['class']} before the throttle: {early[0]['evidence']['detail']}"
comm = [x for x in v if x["class"] == "communication"]
d = comm[0]["evidence"]["detail"]
print(f"rankscope: {d}")
# told within a window and a half (12 steps) of the first step begun after the throttle: the
# windows judged are the newest rows, not a longer view still made mostly of earlier steps
slow = min(x["step"] for x in lines("rs.out", "step") if x["start_ns"] > at)
print(f"rankscope: first step after the throttle {slow}, communication told at step {comm[0]['step']}")
assert comm[0]["step"] <= slow + 12, (slow, comm[0]["step"])
assert comm[0]["rank"] == -1 and "more than in steps" in d, (comm[0]["rank"], d)
said = float(d.split(" ms more than")[0].rsplit(", ", 1)[1]) * 1e6
assert rise / 2 <= said <= rise * 2, \
    f"said {said / 1e6:.1f} ms more; the workload's time in the all-reduces rose {rise / 1e6:.1f} ms"
PY
pass "a link throttled in a job that saves every 5 steps is communication, not hidden by the saves"
