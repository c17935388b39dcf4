#!/usr/bin/env bash
# A job that stops stepping and comes back by itself, seen by the daemon: a real 2-rank OpenMPI
# job (tests/workloads/zoo_mpi, checkpointing every 5 steps) whose rank 1 stops itself
# (SIGSTOP) at a random step; the daemon (--hang-timeout 3) calls it a hang and the job a
# failure (reason hang, on rank 1); the test sends SIGCONT 8 s after the stop, the same run
# steps again, and the daemon calls that a recovery in place: no restart (train_run_id the
# same), no work lost. The recovery runs from the job's last progress (the end of its last
# step before the stop) to the end of its first step after: the step the rank was stopped in,
# whose length the workload prints (truth), within 0.5 s.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib_life.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
ZOO="$TOP/build/workloads/zoo_mpi"
[ -x "$ZOO" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
S=${RS_TEST_STEP:-$((5 * (4 + RANDOM % 3) + 1 + RANDOM % 4))}	# the step rank 1 stops at
echo "rank 1 stops at step $S"
mkdir -p "$T/ck"

bg rsd "$RS" daemon --listen "127.0.0.1:$PORT" --lock-file "$T/lock" --ckpt-min-mb 8 \
	--hang-timeout 3
wait_lines "$T/rsd.out" 'serving /metrics' 1 30 || fail "the daemon did not start"
export RANKSCOPE_JOB_ID=hang-a
bg job mpirun --allow-run-as-root --oversubscribe -np 2 \
	-x RANKSCOPE_JOB_ID "$ZOO" --steps $((S + 30)) --warmup 0 --compute-us 120000 \
	--opt-us 2000 --buckets 3 --last-bytes 8192 --ckpt-every 5 --ckpt-mb 24 --ckpt-dir "$T/ck" \
	--fault "sigstop:1:$S"
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "the MPI job did not start"
read -r -a PIDS <<<"$(ready_pids "$T/job.out" | tr , ' ')"

metric() {	# NAME [MORE]: for job hang-a
	job_metric "$URL" "$1" hang-a "${2:-}"
}
RUN1=
for i in $(seq 240); do
	[ "$(awk '{print $3}' "/proc/${PIDS[1]}/stat" 2>/dev/null)" = T ] && break
	sleep 0.25
done
[ "$(awk '{print $3}' "/proc/${PIDS[1]}/stat")" = T ] || fail "rank 1 did not stop itself"
RUN1=$(metric train_run_id)
[ -n "$RUN1" ] || fail "no train_run_id for job hang-a: $(tail -5 "$T/rsd.out")"
# the hang: 3 s without a step, then 2.5 s to judge it
for i in $(seq 40); do
	[ "$(metric rankscope_job_failures_total ',reason="hang"')" = 1 ] && break
	sleep 0.25
done
[ "$(metric rankscope_job_lifecycle_state ',state="failed"')" = 1 ] ||
	fail "no hang failure 10 s after the stop: $(http_get "$URL/api/v1/jobs" | tail -c 600)"
sleep $((8 - i / 4 > 0 ? 8 - i / 4 : 0))
kill -CONT "${PIDS[1]}"
wait_exit "$PID_job" 90 || fail "the job did not finish after SIGCONT"
sleep 1
snapshot "$URL"

$PY - "$T/job.out" "$T/metrics.txt" "$T/jobs.json" "$S" "$RUN1" <<'PY' || { tail -20 "$T/rsd.out"; exit 1; }
import json, re, sys
out, met, jobs, s, run1 = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
tr = [json.loads(l) for l in open(out) if l.startswith('{"type":"truth"')]
stopped = [x for x in tr if x["rank"] == 1 and x["step"] == s]
assert stopped and stopped[0]["stopped_ns"] > 5e9, stopped
truth = max(x["step_ns"] for x in tr if x["step"] == s) / 1e9
m = {}
for l in open(met):
    mm = re.match(r'^(\w+)\{job_id="hang-a"(,[^}]*)?\} (\S+)$', l.strip())
    if mm:
        m[(mm[1], mm[2] or "")] = float(mm[3])
j = [x for x in json.load(open(jobs)) if x["job"] == "hang-a"][0]
errs = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        errs.append(what)
check(m[("rankscope_job_failures_total", ',reason="hang"')] == 1 and
      m[("rankscope_job_failures_total", ',reason="signal"')] == 0, "one failure: a hang")
check(j["last_failure"]["reason"] == "hang" and j["last_failure"]["rank"] == 1,
      f"the hang is on rank 1 ({j['last_failure']['detail']})")
check(m[("rankscope_job_recoveries_total", "")] == 1 and j["last_recovery"]["in_place"] is True,
      "recovered in place")
check(m[("rankscope_job_lifecycle_state", ',state="running"')] == 1, "running again")
check(m[("train_run_id", "")] == run1, f"the same run: train_run_id {run1}")
check(m[("rankscope_job_lost_steps_total", "")] == 0 and
      m[("rankscope_job_lost_step_seconds_total", "")] == 0, "no work lost: the hang cleared")
got = m[("job_recovery_seconds", "")]
check(abs(got - truth) <= 0.5, f"recovery {got:.3f} s, truth (the stopped step) {truth:.3f} s")
ev = [e["event"] for e in j["timeline"]]
check(ev == ["started", "failed", "recovered"], f"timeline {ev}")
sys.exit(1 if errs else 0)
PY
pass "a job stopped past the hang timeout is a hang failure; stepping again after SIGCONT, a recovery in place with nothing lost"
