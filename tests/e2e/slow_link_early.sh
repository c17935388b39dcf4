#!/usr/bin/env bash
# A link that gets slower inside the job's first window: a real 2-rank OpenMPI data-parallel
# job (tests/workloads/zoo_mpi, 300 ms of compute, then 2 all-reduces of 256 KiB, no warm-up
# steps) over the
# TCP transport, rank 0 in network namespace A, rank 1 in B, joined by a veth pair (2 ranks:
# on 2 vCPUs more would be starved of CPU while they poll, which is not the link's). The
# veth is throttled (tbf) as soon as the workload has told step 2's line, early in its step 3,
# before that step's all-reduces (300 ms later; the job's own clock says where it landed). The
# job's first window (its first 4 steps) then holds both links, and its last steps join the
# reference the later windows are judged by; a change told against those alone is none.
#  - the workload's time in its all-reduces rose first in its step 3 (else the host reacted too
#    late and the run tells nothing of the first window);
#  - communication, on no rank, within 60 s of the throttle, against the steps before it
#    (the detail's "than in steps A-B" ends at step 2: rankscope's step numbers are the
#    workload's here, no step is missed before the go file);
#  - the rise it states agrees with the workload's own clock: between half and twice the rise
#    of the ranks' median time in the all-reduces (comm_ns).
. "$(dirname "$0")/../lib.sh"
mpi_two_ns 1

mpi_two_ns_job 2 --buckets 2 --bucket-bytes 262144 --compute-us 300000 --warmup 0 --steps 100000
bg rs "$RS" diagnose -p "$(ready_pids "$T/job.out")" --json
wait_lines "$T/rs.out" '"type":"rank"' 2 30 || fail "rankscope did not attach"
touch "$T/go"
# at once (wait_lines polls every 0.1 s): step 3 has begun when step 2's line is out
timeout 60 tail -n +1 -F "$T/job.out" 2>/dev/null |
	grep -q -m1 -E '^\{"type":"truth","rank":[0-9]+,"pid":[0-9]+,"step":2,' ||
	fail "the job told no step 2"
throttle_veth 100mbit
wait_class communication 60
sleep 2
stop_rs_job
PYTHONPATH="$TOP/tests/e2e" $PY - "$T" <<'PY' || exit 1
import records, statistics, sys
t = sys.argv[1]
lines = lambda name, ty: records.lines(f"{t}/{name}", ty)
truth = lines("job.out", "truth")
med = lambda xs, k: statistics.median(x[k] for x in xs)
before = [x for x in truth if 1 <= x["step"] <= 2]
after = [x for x in truth if x["step"] >= 5]
assert len(before) == 4 and len(after) >= 20, (len(before), len(after))
first = min(x["step"] for x in truth   # step 0 makes the TCP connections
            if x["step"] >= 1 and x["comm_ns"] > 5 * med(before, "comm_ns") + 5_000_000)
assert first == 3, f"the throttle took effect at the workload's step {first}, not 3"
rise = med(after, "comm_ns") - med(before, "comm_ns")
print(f"workload: step {med(before, 'step_ns') / 1e6:.0f} -> {med(after, 'step_ns') / 1e6:.0f} ms, "
      f"in the all-reduces {med(before, 'comm_ns') / 1e6:.1f} -> {med(after, 'comm_ns') / 1e6:.1f} ms")
v = lines("rs.out", "verdict")
blame = [x for x in v if x["class"] not in ("none", "communication")]
assert not blame, f"{blame[0]['class']} on {blame[0]['rank']}: {blame[0]['evidence']['detail']}"
comm = [x for x in v if x["class"] == "communication"]
d = comm[0]["evidence"]["detail"]
print(f"rankscope: {d}")
assert comm[0]["rank"] == -1 and "more than in steps" in d, (comm[0]["rank"], d)
last = int(d.split("than in steps ")[1].split(" ")[0].split("-")[1])
assert last == 2, f"the reference is not the 2 steps before the throttle: {d}"
said = float(d.split(" ms more than")[0].rsplit(", ", 1)[1]) * 1e6
assert rise / 2 <= said <= rise * 2, \
    f"said {said / 1e6:.1f} ms more; the workload's time in the all-reduces rose {rise / 1e6:.1f} ms"
PY
pass "a link throttled at the job's third step is communication, against the two steps before"
