#!/usr/bin/env bash
# A link that gets slower mid-run: a real 4-rank PyTorch DDP job (gloo, CPU, 3 equal buckets,
# batches of 128: ~120 ms a step, a sixth of it in the all-reduces) whose ranks 0 and 1 run in
# network namespace A and 2 and 3 in B, so gloo talks TCP across a veth pair. One
# `rankscope diagnose` sees all four. After ~12 s the veth is throttled (tbf) at both ends:
# the all-reduces take longer, every rank alike, no rank late, and the step is still mostly
# compute (under half of it in the collectives: what the collectives take alone says nothing).
#  - before the throttle: never communication;
#  - after it: communication, on no rank, from the change (the collectives slower than in the
#    job's own earlier steps), within 40 s;
#  - the rise it states agrees with the workload's own clock (its truth lines): between half
#    and 3x the rise of its ranks' wait for the all-reduces. Not one number: rankscope's is
#    the time inside the collectives once all ranks came, which in DDP runs along the backward
#    it overlaps, against the least such window before (the workload sees only the wait after
#    its backward, and its step, on 2 vCPUs shared by 4 ranks, moves by as much as that).
. "$(dirname "$0")/../lib.sh"
need_root
$PY -c 'import torch' 2>/dev/null || skip "python3-torch not installed (make deps)"
command -v tc >/dev/null || skip "iproute2 (tc) not installed"
test_netns a b
ZOO_DDP="$TOP/tests/workloads/zoo_ddp_launch.sh"

bg job env GLOO_SOCKET_IFNAME=rsn0 ZOO_DDP_MASTER_ADDR="$ADDR_a" \
	ZOO_DDP_NETNS="$NS_a $NS_a $NS_b $NS_b" \
	"$ZOO_DDP" 4 --buckets 3 --batch-size 128 --steps 100000 --go-file "$T/go" \
	--data-dir "$T/data"
wait_lines "$T/job.out" '^ready rank=' 4 90 || fail "the DDP job did not start"
bg rs "$RS" diagnose -p "$(ready_pids "$T/job.out")" --json
wait_lines "$T/rs.out" '"type":"rank"' 4 30 || fail "rankscope did not attach"
touch "$T/go"
sleep 12
t_throttle=$($PY -c 'import time; print(time.monotonic_ns())')
throttle_veth 300mbit
wait_class communication 40
sleep 5		# throttled steps for the workload's own measure
stop_rs_job
PYTHONPATH="$TOP/tests/e2e" $PY - "$T" "$t_throttle" <<'PY' || exit 1
import records, statistics, sys
t, at = sys.argv[1], int(sys.argv[2])
lines = lambda name, ty: records.lines(f"{t}/{name}", ty)
truth = lines("job.out", "truth")
before = [x for x in truth if x["start_ns"] + x["step_ns"] < at and x["step"] >= 10]
after = [x for x in truth if x["start_ns"] > at + 1_000_000_000]
assert len(before) >= 40 and len(after) >= 20, (len(before), len(after))
med = lambda xs, k: statistics.median(x[k] for x in xs)
rise = med(after, "wait_ns") - med(before, "wait_ns")
step_rise = med(after, "step_ns") - med(before, "step_ns")
print(f"workload: step {med(before, 'step_ns') / 1e6:.0f} -> {med(after, 'step_ns') / 1e6:.0f} ms, "
      f"waiting for the all-reduces {med(before, 'wait_ns') / 1e6:.1f} -> "
      f"{med(after, 'wait_ns') / 1e6:.1f} ms a step")
assert med(after, "wait_ns") < med(after, "step_ns") / 2, "the collectives are most of the step"
v = lines("rs.out", "verdict")
early = [x for x in v if x["class"] == "communication" and x["t_ns"] < at]
assert not early, f"communication before the throttle: {early[0]['evidence']['detail']}"
comm = [x for x in v if x["class"] == "communication"]
d = comm[0]["evidence"]["detail"]
assert comm[0]["rank"] == -1 and "more than in steps" in d, (comm[0]["rank"], d)
said = float(d.split(" ms more than")[0].rsplit(", ", 1)[1]) * 1e6
print(f"rankscope: {d}")
assert rise / 2 <= said <= rise * 3, \
    f"said {said / 1e6:.1f} ms more; the workload's wait rose {rise / 1e6:.1f}, its step {step_rise / 1e6:.1f}"
PY
pass "a link throttled mid-run is communication, from the change, by the workload's own rise"
