#!/usr/bin/env bash
# Pipeline parallel on a real 2-rank OpenMPI job (tests/workloads/zoo_mpi --pp 4: GPipe, 4
# micro-batches, MPI_Send/MPI_Recv between the stages), with stage 1 slowed by 3 ms of extra
# compute a step that rankscope is not told about. rankscope attach --listen must:
#  - find the stages from the send/receive graph (step lines carry stage, stages 2 and
#    micro_batches 4);
#  - serve pipeline_stage_seconds{stage,phase="busy"}, train_step_seconds with a stage label,
#    job_id_micro_batches_per_step 4 and job_id_theoretical_bubble (2-1)/(4+2-1) = 0.2, so that
#    the reference documents' bubble PromQL gives stage 0, waiting on the slow stage, a bubble
#    over 1.5x the theoretical one (deploy/prometheus: Train_Bubble_Excess), and stage 1 less;
#  - pass promtool check metrics, and name rank 1 (compute);
# then stage 1 throttled by a CPU quota inside its sends and receives (below).
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
command -v promtool >/dev/null || skip "promtool not installed (make deps installs prometheus)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
PORT=$(free_port)
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$TOP/build/workloads/zoo_mpi" \
	--pp 4 --steps 2500 --go-file "$T/go" --fault compute:1:3000
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "the MPI job did not start"
bg rs "$RS" attach -p "$(ready_pids "$T/job.out")" --json --listen 127.0.0.1:$PORT
wait_lines "$T/rs.out" '"type":"rank"' 2 30 || fail "rankscope did not attach"
touch "$T/go"
sleep 6
http_get "http://127.0.0.1:$PORT/metrics" >"$T/get.txt"
[ "$(head -1 "$T/get.txt")" = 200 ] || fail "GET /metrics: $(head -3 "$T/get.txt")"
tail -n +2 "$T/get.txt" >"$T/metrics.txt"
promtool check metrics <"$T/metrics.txt" || fail "promtool check metrics"
wait_exit "$PID_job" 120 || fail "the job failed: $(tail -5 "$T/job.out")"
wait_exit "$PID_rs" 60 || fail "rankscope did not exit after the job"
$PY - "$T/metrics.txt" "$T/rs.out" <<'PY' || exit 1
import json, re, sys
m = {}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    name, val = line.rsplit(" ", 1)
    m[name] = float(val)
def get(prefix, **lab):
    for k, v in m.items():
        if k.startswith(prefix + "{") and all(f'{a}="{b}"' in k for a, b in lab.items()):
            return v
    raise AssertionError(f"no {prefix} {lab} in /metrics")
theo = get("job_id_theoretical_bubble")
assert abs(theo - 0.2) < 1e-9, theo
assert get("job_id_micro_batches_per_step") == 4
bubble = {}
for st in ("0", "1"):
    busy = get("pipeline_stage_seconds_sum", stage=st, phase="busy")
    step = get("train_step_seconds_sum", stage=st)
    bubble[st] = 1 - busy / step
print("bubble fraction by stage", {k: round(v, 3) for k, v in bubble.items()}, "theoretical", theo)
assert bubble["0"] > 1.5 * theo, bubble      # stage 0 waits for the slow stage 1
assert bubble["1"] < bubble["0"], bubble
lines = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
steps = [d for d in lines if d["type"] == "step"]
st = {d["rank"]: d for d in steps}      # each rank's last step
assert set(st) == {0, 1}, sorted(st)
assert {st[r]["stage"] for r in (0, 1)} == {0, 1} and st[0]["stages"] == 2, st
assert st[0]["micro_batches"] == 4, st[0]
v = [d for d in lines if d["type"] == "verdict" and d["class"] != "none"]
# the straggler's rank first, and compute nearly always: the scrape above (curl on the job's 2
# CPUs) or a busy host can preempt a rank for a few steps, and a transient cpu_contention
# verdict then is true
other = [(d["class"], d["rank"], d["step"]) for d in v if (d["class"], d["rank"]) != ("compute", 1)]
assert v and v[0]["rank"] == 1, [(d["class"], d["rank"]) for d in v[:3]]
assert len(other) <= max(1, len(v) // 10), other
print("stages", {r: st[r]["stage"] for r in (0, 1)}, "verdict", v[0]["class"], "on rank", v[0]["rank"])
PY

# The same pipeline, stage 1's rank capped at 30% of a CPU from step 300 on (zoo_mpi's quota
# fault: a cgroup CPU quota). OpenMPI busy-polls, so the rank runs out of quota inside its
# sends and receives as often as not, its peer waiting in MPI; where the quota runs out
# depends on the host's speed (here its compute keeps its time by the workload's clock; on a
# slower host it is throttled inside its compute too). A pipeline's transfers are its sends'
# and receives' time with both ends inside, which holds the starved end's time too: that time
# is the starved rank's (cpu_contention on rank 1), not a slower link (never communication).
bg qjob mpirun --allow-run-as-root --oversubscribe -np 2 "$TOP/build/workloads/zoo_mpi" \
	--pp 4 --steps 1500 --go-file "$T/qgo" --fault quota:1:30 --fault-from 300 \
	--data-dir "$T/qdata"
wait_lines "$T/qjob.out" '^ready rank=' 2 60 || fail "the quota MPI job did not start"
bg qrs "$RS" diagnose -p "$(ready_pids "$T/qjob.out")" --json
wait_lines "$T/qrs.out" '"type":"rank"' 2 30 || fail "rankscope did not attach to the quota job"
touch "$T/qgo"
wait_exit "$PID_qjob" 180 || fail "the quota job failed: $(tail -5 "$T/qjob.out")"
wait_exit "$PID_qrs" 60 || fail "rankscope did not exit after the quota job"
$PY - "$T/qjob.out" "$T/qrs.out" <<'PY' || exit 1
import collections, json, statistics, sys
def lines(path, ty):
    return [json.loads(l) for l in open(path) if l.startswith('{"type":"%s"' % ty)]
truth = lines(sys.argv[1], "truth")
med = lambda r, k, lo, hi: statistics.median(t[k] for t in truth
                                             if t["rank"] == r and lo <= t["step"] < hi)
# the workload's clock: the step grows, rank 1's compute does not, rank 0 waits in MPI
print("workload: step %.1f -> %.1f ms, rank 1 compute %.2f -> %.2f ms, rank 0 in MPI %.2f -> "
      "%.2f ms" % tuple(x / 1e6 for x in (
          med(1, "step_ns", 10, 300), med(1, "step_ns", 400, 1500),
          med(1, "compute_ns", 10, 300), med(1, "compute_ns", 400, 1500),
          med(0, "comm_ns", 10, 300), med(0, "comm_ns", 400, 1500))))
assert med(1, "step_ns", 400, 1500) > 1.5 * med(1, "step_ns", 10, 300), "the quota did not slow it"
v = [d for d in lines(sys.argv[2], "verdict") if d["class"] not in ("none", "pipeline_bubble")]
n = collections.Counter((d["class"], d["rank"]) for d in v)
print("verdicts:", dict(n))
assert not [d for d in v if d["class"] == "communication"], "communication: " + \
    next(d["evidence"]["detail"] for d in v if d["class"] == "communication")
assert n and n.most_common(1)[0][0] == ("cpu_contention", 1), n
PY

# Megatron's layout on 6 ranks: 2 pipelines of 3 stages (stage r / 2), each on a communicator
# of its own (zoo_mpi --pp-comm), so a message's peer is a stage there, not a rank: rank 5
# receives from peer 1, which is rank 3 (rank 1 is the other pipeline's stage 0). rankscope is
# on the ranks before MPI_Init (--init-file), so it sees each pipeline's split and names the
# communicator alike in its members. Every step line's stage must be the workload's own.
# Stage 1 computes 3 ms more a step in both pipelines (ranks 2 and 3): neither is late against
# the other at their stage's all-reduce, but the pipelines run at that stage's pace: over half
# the verdicts must be compute on rank 2 or 3, and none compute on another rank (6 ranks on 2
# vCPUs: a window of CPU contention may show as well).
bg mjob mpirun --allow-run-as-root --oversubscribe -np 6 "$TOP/build/workloads/zoo_mpi" \
	--pp 2 --stages 3 --pp-comm --steps 300 --go-file "$T/mgo" --init-file "$T/minit" \
	--data-dir "$T/mdata" --fault compute:2:3000 --fault compute:3:3000
wait_lines "$T/mjob.out" '^pre-init pid=' 6 60 || fail "the 6-rank MPI job did not start"
bg mrs "$RS" diagnose -p "$(grep '^pre-init pid=' "$T/mjob.out" | sed 's/.*pid=\([0-9]*\).*/\1/' |
	paste -sd,)" --json
wait_lines "$T/mrs.out" '"type":"rank"' 6 30 || fail "rankscope did not attach before MPI_Init"
touch "$T/minit"
wait_lines "$T/mjob.out" '^ready rank=' 6 60 || fail "the 6-rank MPI job did not get ready"
touch "$T/mgo"
wait_exit "$PID_mjob" 120 || fail "the 6-rank job failed: $(tail -5 "$T/mjob.out")"
wait_exit "$PID_mrs" 60 || fail "rankscope did not exit after the 6-rank job"
$PY - "$T/mjob.out" "$T/mrs.out" <<'PY' || exit 1
import collections, json, sys
def lines(path, ty):
    return [json.loads(l) for l in open(path) if l.startswith('{"type":"%s"' % ty)]
truth = {t["rank"]: t["stage"] for t in lines(sys.argv[1], "truth")}
got = collections.defaultdict(collections.Counter)
for s in lines(sys.argv[2], "step"):
    got[s["rank"]][(s.get("stage"), s.get("stages"))] += 1
print("workload stages:", truth, "rankscope's:", {r: dict(c) for r, c in sorted(got.items())})
assert sorted(truth) == list(range(6)) and sorted(got) == list(range(6)), (truth, dict(got))
for r, c in got.items():
    (stage, stages), n = c.most_common(1)[0]
    assert stage == truth[r] and stages == 3 and n >= 0.9 * sum(c.values()), (r, dict(c))
v = [d for d in lines(sys.argv[2], "verdict") if d["class"] not in ("none", "pipeline_bubble")]
n = collections.Counter((d["class"], d["rank"]) for d in v)
print("verdicts:", dict(n))
# 6 ranks on 2 vCPUs: a window of CPU contention may show too; no other rank's compute
stage1 = sum(c for (cls, r), c in n.items() if cls == "compute" and r in (2, 3))
assert stage1 * 2 > len(lines(sys.argv[2], "verdict")), "compute on stage 1 in under half: %s" % n
assert not [d for d in v if d["class"] == "compute" and d["rank"] not in (2, 3)], n
PY
pass "pipeline stages, busy time and theoretical bubble; stage 0 over 1.5x; straggler named; a stage starved inside its sends is cpu_contention; stages of pipelines on their own communicators, and a stage slower in every one named"
