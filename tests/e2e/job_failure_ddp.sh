#!/usr/bin/env bash
# A real PyTorch DDP (gloo) job that fails and is relaunched, seen by the daemon from outside:
# 2 ranks of tests/workloads/zoo_ddp.py, rank 0 torch.save()s a checkpoint every 10 steps,
# rank 1 SIGKILLs itself at a random step; its peer fails on the next all-reduce and the
# launcher exits. A relaunch loop starts the job again 1 s later under the same
# TORCHELASTIC_RUN_ID (the job id), with TORCHELASTIC_RESTART_COUNT 1 as torchrun would set
# it; it resumes from the checkpoint and finishes. Against the truth the workload prints
# (tests/e2e/job_failure_check.py): one failure by signal 9 on rank 1, the checkpoint age at
# the failure within one step, the lost steps exactly, the recovery within 0.1 s, a new
# train_run_id, and the timeline in /api/v1/jobs.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib_life.sh"
need_root
$PY -c 'import torch' 2>/dev/null || skip "python3-torch not installed (make deps)"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
ddp_fail_job

bg rsd "$RS" daemon --listen "127.0.0.1:$PORT" --lock-file "$T/lock" --ckpt-min-mb 4 \
	--retain 120
wait_lines "$T/rsd.out" 'serving /metrics' 1 30 || fail "the daemon did not start"

export ZOO_DDP_RUN_ID=fail-ddp ZOO_DDP_FAIL_GRACE_S=10
ddp_kill_relaunch "$S" "${ARGS[@]}"
RUN1=$(run_id "$URL" fail-ddp "$T/rsd.out") || exit 1
relaunched
sleep 1
snapshot "$URL"
life_check "$T/rsd.out" \
	"fail-ddp:$T/d1.out:$S:$T/d2.out:$RUN1" || exit 1
pass "a DDP job killed and relaunched: failure, recovery, checkpoint age and lost steps match the workload's truth"
