#!/usr/bin/env bash
# A job's failure and recovery, seen by the daemon from outside, on two real 2-rank OpenMPI
# jobs (tests/workloads/zoo_mpi) that run at once, each with its own job id, checkpointing
# every 5 steps (rank 0 writes 24 MiB, fsyncs and renames it) and each losing rank 1 to
# SIGKILL at a random step:
#  - job A is relaunched by its loop 1 s later, resumes from its checkpoint and finishes;
#  - job B never comes back: abandoned after --abandon-after.
# The workloads print their own truth (every step's start and length, every checkpoint's
# start and end, the resume step); against it, from /metrics and /api/v1/jobs
# (tests/e2e/job_failure_check.py):
#  - A: 1 failure by signal 9 on rank 1, 1 recovery, a new train_run_id; recovery seconds
#    within 0.1 s; the checkpoint age at the failure within one step; the lost steps exactly,
#    and their seconds within 20%;
#  - B: its own failure (its lost steps, its checkpoint age), abandoned, no recovery: the two
#    failures are not merged;
#  - the live view (Chromium, when installed) draws each job's band: running, failed, then
#    running again for A and abandoned for B, with a mark at each failure and recovery.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib_life.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
ZOO="$TOP/build/workloads/zoo_mpi"
[ -x "$ZOO" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
ABANDON=15

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

RUN1=$(run_id "$URL" fail-a "$T/rsd.out") || exit 1	# A's, while its first run steps
wait_lines "$T/jobA.out" '^second rc=' 1 150 || fail "job A's relaunch did not finish"
grep -q '^second rc=0' "$T/jobA.out" || fail "job A's relaunch failed: $(tail -5 "$T/a2.out")"
# B is abandoned ABANDON s after its failure
for i in $(seq $((ABANDON * 2 + 20))); do
	http_get "$URL/metrics" | grep -q \
		'^rankscope_job_lifecycle_state{job_id="fail-b",state="abandoned"} 1' && break
	sleep 0.5
done
sleep 1
snapshot "$URL"

life_check "$T/rsd.out" \
	"fail-a:$T/a1.out:$SA:$T/a2.out:$RUN1" "fail-b:$T/b1.out:$SB" || exit 1
# the live view's lifecycle band, where Debian's Chromium is installed
if command -v chromium >/dev/null; then
	chrome lifeA --virtual-time-budget=4000 --dump-dom "$URL/?job=fail-a" ||
		fail "chromium --dump-dom"
	$PY "$TOP/tests/e2e/live_view_check.py" life "$T/lifeA.out" running,failed,running \
		failed,recovered "last failure: rank 1 killed by signal 9" ||
		fail "the live view's band for job fail-a"
	chrome lifeB --virtual-time-budget=4000 --dump-dom "$URL/?job=fail-b" ||
		fail "chromium --dump-dom"
	$PY "$TOP/tests/e2e/live_view_check.py" life "$T/lifeB.out" running,failed,abandoned \
		failed,abandoned "steps (" || fail "the live view's band for job fail-b"
else
	echo "note: chromium is not installed: the live view's band is not checked"
fi
pass "two jobs killed at once: failures, recovery, checkpoint age and lost steps match the workloads' truth; the one never back is abandoned"
