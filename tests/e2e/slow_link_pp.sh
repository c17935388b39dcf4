#!/usr/bin/env bash
# One rank's link gets slower mid-run in a pipeline: a real 4-rank OpenMPI job
# (tests/workloads/zoo_mpi --pp 4: 2 stages, 2 replicas, GPipe, 4 micro-batches of 256 KiB
# MPI_Send/MPI_Recv, then each stage's all-reduce among its replicas) over the TCP transport.
# Ranks 0, 1 and 3 run in network namespace A, rank 2 in B, joined by a veth pair: rank 2's
# sends to its next stage (rank 3) and its all-reduce with its replica (rank 0) cross it. After
# ~15 s the veth is throttled (tbf) at both ends. No rank computes more; the step grows from
# transfers alone, and only where rank 2 is one end.
#  - before the throttle: never communication;
#  - after it: communication, on no rank, from the change, within 40 s. rankscope measures a
#    pipeline's transfers as the time both ends of a send and its receive were inside them, on
#    to the receive's return for the receiver (a send returns once TCP queued its bytes); the
#    replicas' all-reduce here is named by per-process handles (attached after MPI_Init), so
#    its time is no transfer: counted as one, a host short of CPUs (3 ranks starved, one not,
#    waiting for its replica) read as a slower link before the throttle, 6 runs of 6 on one
#    machine. The slowest rank holds the step. Before that a
#    pipeline's transfer was read at its first call (a receive waiting for the previous stage),
#    and this job read no verdict or a compute blame on rank 3;
#  - the workload's own clock agrees: rank 2's time in MPI calls rises by most of the step's
#    rise, and no rank's compute rises by half of it.
# OpenMPI's launcher (PMIx) listens on loopback in A only: rank 2 reaches it through a TCP
# forwarder on A's veth address (lib.sh's mpi_wrap_in_b).
. "$(dirname "$0")/../lib.sh"
mpi_two_ns 2

mpi_two_ns_job 4 --pp 4 --act-bytes 262144 --steps 100000
bg rs "$RS" diagnose -p "$(ready_pids "$T/job.out")" --json
wait_lines "$T/rs.out" '"type":"rank"' 4 30 || fail "rankscope did not attach"
touch "$T/go"
sleep 15
t_throttle=$($PY -c 'import time; print(time.monotonic_ns())')
throttle_veth 400mbit
wait_class communication 40
sleep 3		# throttled steps for the workload's own measure
stop_rs_job
PYTHONPATH="$TOP/tests/e2e" $PY - "$T" "$t_throttle" <<'PY' || exit 1
import records, statistics, sys
t, at = sys.argv[1], int(sys.argv[2])
lines = lambda name, ty: records.lines(f"{t}/{name}", ty)
truth = [x for x in lines("job.out", "truth") if x["step"] >= 10]
before = [x for x in truth if x["start_ns"] + x["step_ns"] < at]
after = [x for x in truth if x["start_ns"] > at + 1_000_000_000]
assert len(before) >= 200 and len(after) >= 40, (len(before), len(after))
med = lambda xs, k, r=None: statistics.median(x[k] for x in xs if r is None or x["rank"] == r)
rise = med(after, "step_ns") - med(before, "step_ns")
comm2 = med(after, "comm_ns", 2) - med(before, "comm_ns", 2)
print(f"workload: step {med(before, 'step_ns') / 1e6:.1f} -> {med(after, 'step_ns') / 1e6:.1f} ms; "
      f"rank 2 in MPI calls +{comm2 / 1e6:.1f} ms; compute by rank " +
      ", ".join(f"{med(before, 'compute_ns', r) / 1e6:.2f} -> {med(after, 'compute_ns', r) / 1e6:.2f}"
                for r in range(4)))
assert rise > 5e6 and comm2 > rise / 2, "the throttle did not slow the job by its transfers"
# the busy loops of the ranks at the shaped veth's ends run longer too (the softirqs of its
# transfers on the same 2 vCPUs), but the transfers are most of the rise
up = [med(after, "compute_ns", r) - med(before, "compute_ns", r) for r in range(4)]
assert max(up) < rise / 2, up
v = lines("rs.out", "verdict")
early = [x for x in v if x["class"] == "communication" and x["t_ns"] < at]
assert not early, f"communication before the throttle: {early[0]['evidence']['detail']}"
comm = [x for x in v if x["class"] == "communication"]
d = comm[0]["evidence"]["detail"]
assert comm[0]["rank"] == -1 and "more than in steps" in d, (comm[0]["rank"], d)
print(f"rankscope, {(comm[0]['t_ns'] - at) / 1e9:.1f} s after the throttle: {d}")
PY
pass "a pipeline rank's link throttled mid-run is communication, from the change"
