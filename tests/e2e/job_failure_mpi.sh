#!/usr/bin/env bash
# A job's failure and recovery, seen by the daemon from outside, on two real 2-rank OpenMPI
# jobs (tests/workloads/zoo_mpi) that run at once, each with its own job id, checkpointing
# every 5 steps (rank 0 writes 24 MiB, fsyncs and renames it) and each losing rank 1 to
# SIGKILL at a random step:
#  - job A is relaunched by its loop 1 s later, resumes from its checkpoint and finishes;
#  - job B never comes back: abandoned after --abandon-after.
# The workloads print their own truth (every step's start and length, every checkpoint's
# start and end, the resume step); against it, from /metrics and /api/v1/jobs:
#  - A: 1 failure by signal 9 on rank 1, 1 recovery, a new train_run_id; recovery seconds
#    within 0.5 s; the checkpoint age at the failure within one step; the lost steps exactly,
#    and their seconds within 20%;
#  - B: its own failure (its lost steps, its checkpoint age), abandoned, no recovery: the two
#    failures are not merged.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
ZOO="$TOP/build/workloads/zoo_mpi"
[ -x "$ZOO" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
ABANDON=30

# steps of ~200 ms (the checkpoint detector samples every 100 ms), three gradient buckets:
# the step period is known after 48 collectives (16 steps), and each run goes past that
ARGS=(--warmup 0 --compute-us 120000 --opt-us 2000 --buckets 3 --last-bytes 8192
	--ckpt-every 5 --ckpt-mb 24 --resume)
# rank 1 of A dies at the start of step SA, B's at SB: not the step right after a checkpoint,
# which rank 1 can reach while rank 0 still writes it (saved or not: no truth to hold to)
SA=$((5 * (4 + RANDOM % 4) + 1 + RANDOM % 4))
SB=$((5 * (4 + RANDOM % 4) + 1 + RANDOM % 4))
echo "job A: rank 1 killed at step $SA; job B: at step $SB"
mkdir -p "$T/ckA" "$T/ckB"

bg rsd "$RS" daemon --listen "127.0.0.1:$PORT" --lock-file "$T/lock" --ckpt-min-mb 8 \
	--abandon-after $ABANDON --retain 120
wait_lines "$T/rsd.out" 'serving /metrics' 1 30 || fail "the daemon did not start"

# launch NAME DIR STEPS [ARGS...]: one mpirun of zoo_mpi as job id NAME; output in $T/NAME.N
cat >"$T/launch.sh" <<EOF
#!/bin/bash
name=\$1 out=\$2 dir=\$3 steps=\$4
shift 4
RANKSCOPE_JOB_ID=\$name exec mpirun --allow-run-as-root --oversubscribe -np 2 \
	-x RANKSCOPE_JOB_ID "$ZOO" --steps \$steps --ckpt-dir "\$dir" ${ARGS[*]} "\$@" >"\$out" 2>&1
EOF
chmod +x "$T/launch.sh"
# A: killed, then relaunched by its loop 1 s after mpirun gives up
bg jobA bash -c "'$T/launch.sh' fail-a '$T/a1.out' '$T/ckA' 80 --fault kill:1:$SA;
	echo first rc=\$?; sleep 1; '$T/launch.sh' fail-a '$T/a2.out' '$T/ckA' $((SA + 25));
	echo second rc=\$?"
bg jobB "$T/launch.sh" fail-b "$T/b1.out" "$T/ckB" 80 --fault kill:1:$SB

# metric NAME JOB: its value for job_id JOB (empty if absent)
metric() {
	http_get "$URL/metrics" | tail -n +2 | grep -E "^$1\{job_id=\"$2\"" | head -1 | awk '{print $NF}'
}
# A's incarnation while its first run steps
RUN1=
for i in $(seq 120); do
	RUN1=$(metric train_run_id fail-a)
	[ -n "$RUN1" ] && break
	sleep 0.5
done
[ -n "$RUN1" ] || fail "no train_run_id for job fail-a: $(tail -5 "$T/rsd.out")"
wait_lines "$T/jobA.out" '^second rc=' 1 150 || fail "job A's relaunch did not finish"
grep -q '^second rc=0' "$T/jobA.out" || fail "job A's relaunch failed: $(tail -5 "$T/a2.out")"
# B is abandoned ABANDON s after its failure
for i in $(seq $((ABANDON * 2 + 20))); do
	http_get "$URL/metrics" | grep -q \
		'^rankscope_job_lifecycle_state{job_id="fail-b",state="abandoned"} 1' && break
	sleep 0.5
done
sleep 1
http_get "$URL/metrics" | tail -n +2 >"$T/metrics.txt"
http_get "$URL/api/v1/jobs" | tail -n +2 >"$T/jobs.json"
cat "$T/jobs.json" >&2

$PY - "$T" "$SA" "$SB" "$RUN1" <<'PY' || { tail -20 "$T/rsd.out"; exit 1; }
import json, re, sys
d, sa, sb, run1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])

def lines(path):
    out = []
    for l in open(path, errors="replace"):
        l = l.strip()
        if l.startswith("{"):
            try:
                out.append(json.loads(l))
            except ValueError:
                pass
    return out

def truth(first, killed_at, second=None):
    """What the workload says: the kill, the checkpoint before it, the lost steps, and the
    first step of the relaunch."""
    r = lines(first)
    dead = [x for x in r if x.get("type") == "truth" and x["rank"] == 1]
    assert dead and dead[-1]["step"] == killed_at - 1, (killed_at, dead[-1:])
    kill_ns = dead[-1]["start_ns"] + dead[-1]["step_ns"]
    ck = [x for x in r if x.get("type") == "ckpt" and x["end_ns"] < kill_ns]
    assert ck, "no checkpoint before the kill"
    c = ck[-1]
    lost = [x for x in dead if x["step"] > c["step"]]
    t = {"kill_ns": kill_ns, "ckpt_step": c["step"], "ckpt_age": (kill_ns - c["end_ns"]) / 1e9,
         "lost": len(lost), "lost_s": sum(x["step_ns"] for x in lost) / 1e9,
         "step_s": max(x["step_ns"] for x in dead[-6:]) / 1e9}
    if second:
        r2 = lines(second)
        res = [x for x in r2 if x.get("type") == "resume"]
        assert res and res[0]["step"] == c["step"] + 1, (res, c)
        st = [x for x in r2 if x.get("type") == "truth"]
        first_end = min(x["start_ns"] + x["step_ns"] for x in st if x["step"] == res[0]["step"])
        t["recovery"] = (first_end - kill_ns) / 1e9
    return t

ta = truth(f"{d}/a1.out", sa, f"{d}/a2.out")
tb = truth(f"{d}/b1.out", sb)
print("truth A:", {k: round(v, 3) for k, v in ta.items() if k != "kill_ns"})
print("truth B:", {k: round(v, 3) for k, v in tb.items() if k != "kill_ns"})

m = {}
for l in open(f"{d}/metrics.txt"):
    mm = re.match(r'^(\w+)\{([^}]*)\} (\S+)$', l.strip())
    if mm:
        m[(mm[1], mm[2])] = float(mm[3])
def v(name, job, extra=""):
    key = (name, f'job_id="{job}"' + (("," + extra) if extra else ""))
    assert key in m, f"no {key} in /metrics"
    return m[key]

errs = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        errs.append(what)

for job, t, back in (("fail-a", ta, True), ("fail-b", tb, False)):
    check(v("rankscope_job_failures_total", job, 'reason="signal"') == 1,
          f"{job}: one failure by signal")
    check(v("rankscope_job_failures_total", job, 'reason="exit_code"') == 0 and
          v("rankscope_job_failures_total", job, 'reason="hang"') == 0,
          f"{job}: no other failure (the launcher's cleanup is not one)")
    got = v("job_checkpoint_age_at_failure_seconds", job)
    check(abs(got - t["ckpt_age"]) <= t["step_s"],
          f"{job}: checkpoint age at failure {got:.3f} s, truth {t['ckpt_age']:.3f} s "
          f"(one step: {t['step_s']:.3f} s)")
    got = v("rankscope_job_lost_steps_total", job)
    check(got == t["lost"], f"{job}: lost steps {got:.0f}, truth {t['lost']}")
    got = v("rankscope_job_lost_step_seconds_total", job)
    check(abs(got - t["lost_s"]) <= 0.2 * t["lost_s"] + 0.05,
          f"{job}: lost step seconds {got:.3f}, truth {t['lost_s']:.3f}")
    state = "running" if back else "abandoned"
    check(v("rankscope_job_lifecycle_state", job, f'state="{state}"') == 1, f"{job}: {state}")
    check(v("rankscope_job_recoveries_total", job) == (1 if back else 0),
          f"{job}: {1 if back else 0} recovery")

got = v("job_recovery_seconds", "fail-a")
check(abs(got - ta["recovery"]) <= 0.5,
      f"fail-a: recovery {got:.3f} s, truth {ta['recovery']:.3f} s")
check(v("rankscope_job_recovery_seconds_count", "fail-a") == 1, "fail-a: 1 in the histogram")
run2 = v("train_run_id", "fail-a")
check(run2 != run1 and run2 > run1, f"fail-a: train_run_id {run1} -> {run2}")
check(("job_recovery_seconds", 'job_id="fail-b"') not in m, "fail-b: no recovery series")

jobs = {j["job"]: j for j in json.load(open(f"{d}/jobs.json"))}
a, b = jobs["fail-a"], jobs["fail-b"]
lf = a["last_failure"]
check(lf["rank"] == 1 and lf["reason"] == "signal" and lf["signal"] == 9,
      f"fail-a: the cause is rank 1, signal 9 ({lf['detail']})")
# killed at a step's start, outside collectives: its last step's largest phase (compute, or
# sched_delay when the four ranks' 2 vCPUs are short)
check(lf["phase"] not in ("", "comm"), f"fail-a: it died outside collectives ({lf['phase']})")
ev = [e["event"] for e in a["timeline"]]
check(ev == ["started", "failed", "started", "recovered"], f"fail-a: timeline {ev}")
evb = [e["event"] for e in b["timeline"]]
check(evb == ["started", "failed", "abandoned"], f"fail-b: timeline {evb}")
check(b["last_failure"]["rank"] == 1 and b["state"] == "abandoned", "fail-b: abandoned")
if errs:
    sys.exit(1)
PY
pass "two jobs killed at once: failures, recovery, checkpoint age and lost steps match the workloads' truth; the one never back is abandoned"
