# Shared by the failure and recovery tests (e2e/job_failure_*.sh, e2e/job_hang_mpi.sh,
# e2e/hub_job_failure.sh); source it after lib.sh.

# job_metric URL NAME JOB [MORE]: the value of NAME{job_id="JOB"MORE...} in URL's /metrics, or
# nothing
job_metric() {
	http_get "$1/metrics" | tail -n +2 | grep -E "^$2\{job_id=\"$3\"${4:-}" | head -1 |
		awk '{print $NF}'
}

# run_id URL JOB LOG: the job's train_run_id on URL, once it has one (within 2 minutes); else
# a FAIL line with LOG's tail on stderr and status 1
run_id() {
	local i v=
	for i in $(seq 240); do
		v=$(job_metric "$1" train_run_id "$2")
		[ -n "$v" ] && break
		sleep 0.5
	done
	[ -n "$v" ] || { echo "FAIL: no train_run_id for job $2 on $1: $(tail -5 "$3")" >&2; return 1; }
	echo "$v"
}

# ddp_fail_job: sets ARGS, the zoo_ddp.py options of a DDP job that checkpoints and resumes,
# and S, the step rank 1 kills itself at. One gradient bucket a step, so the step is known
# after 48 all-reduces: each run goes well past that. --seq-len 120: steps of 200 ms on a fast
# host, 500 ms on a slow one (the checkpoint detector samples every 100 ms: a step of 80 ms is
# under its resolution). --warmup 0: the relaunch's first iteration is its first measured
# step, whose end is the truth of the recovery. A checkpoint every 10 steps: over a second
# apart, as the detector needs (a burst ends after 1 s without writes: checkpoints closer
# than that make one burst, see user/model/ckpt.h). S is not the step right after a
# checkpoint, which rank 1 can reach while rank 0 still saves it.
ddp_fail_job() {
	ARGS=(--warmup 0 --seq-len 120 --ckpt-every 10 --ckpt-mb 8 --resume --data-dir "$T/data"
		--ckpt-dir "$T/ck")
	S=$((10 * (5 + RANDOM % 2) + 1 + RANDOM % 4))
	echo "rank 1 killed at step $S"
	mkdir -p "$T/ck"
}

# ddp_kill_relaunch STEP ARGS...: in the background (job), 2 ranks of zoo_ddp.py with ARGS,
# rank 1 SIGKILLing itself at STEP (output $T/d1.out), then 1 s later the relaunch (as torchrun
# would: TORCHELASTIC_RESTART_COUNT 1) that resumes and runs 60 steps past STEP ($T/d2.out);
# $T/job.out says "first rc=" and "second rc=". ZOO_DDP_* from the caller's environment.
ddp_kill_relaunch() {
	local s=$1
	shift
	bg job bash -c "'$ZOO_DDP' 2 --steps 200 $* --fault kill:1:$s >'$T/d1.out' 2>&1;
		echo first rc=\$?; sleep 1;
		TORCHELASTIC_RESTART_COUNT=1 '$ZOO_DDP' 2 --steps $((s + 60)) $* >'$T/d2.out' 2>&1;
		echo second rc=\$?"
}

# relaunched: wait for ddp_kill_relaunch's two runs: the first killed, the second to its end
relaunched() {
	wait_lines "$T/job.out" '^second rc=' 1 300 || fail "the relaunch did not finish"
	grep -q '^first rc=0' "$T/job.out" && fail "the first run was not killed: $(tail -3 "$T/d1.out")"
	grep -q '^second rc=0' "$T/job.out" || fail "the relaunch failed: $(tail -5 "$T/d2.out")"
}

# snapshot URL: URL's /metrics and /api/v1/jobs into $T/metrics.txt and $T/jobs.json
snapshot() {
	http_get "$1/metrics" | tail -n +2 >"$T/metrics.txt"
	http_get "$1/api/v1/jobs" | tail -n +2 >"$T/jobs.json"
}

# life_check LOG SPEC...: tests/e2e/job_failure_check.py on $T/metrics.txt and $T/jobs.json;
# on a failure, LOG's tail and then the truth and the failed checks again, last, where a
# shortened CI log still shows them. Status 1 on a failure.
life_check() {
	local log=$1 rc=0
	shift
	$PY "$TOP/tests/e2e/job_failure_check.py" "$T/metrics.txt" "$T/jobs.json" "$@" \
		>"$T/check.out" 2>&1 || rc=1
	cat "$T/check.out"
	((rc)) || return 0
	echo "--- $(basename "$log"), its tail:"
	tail -20 "$log"
	echo "--- what failed:"
	grep -E '^(truth|FAIL|Traceback|AssertionError)' "$T/check.out"
	return 1
}
