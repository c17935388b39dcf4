#!/usr/bin/env bash
# A job spread over two "nodes" fails and is relaunched; the hub joins the two daemons' views
# of it into one. A real 2-rank PyTorch DDP (gloo) job: rank 0 is born in cgroup A, rank 1 in
# cgroup B, and a daemon scoped to each (--cgroup) sees its node's rank only. Rank 0 writes a
# checkpoint every 10 steps; rank 1 SIGKILLs itself at a random step, rank 0 then fails on the
# next all-reduce (exit status 1, on the other node, later); the job is relaunched 1 s after
# under the same TORCHELASTIC_RUN_ID, ranks born in the same cgroups, and finishes.
#
# Each daemon alone sees half the story: node B the kill and no checkpoint, node A a rank
# that exited 1 and the checkpoints. The hub's /metrics and /api/v1/jobs must tell the job's,
# against the workload's truth (tests/e2e/job_failure_check.py): one failure, by signal 9 on
# rank 1 (the earliest of the nodes'), not counted twice; the checkpoint age and the lost steps
# from node A (the writer's); the recovery from the kill to the last node's first step; a new
# train_run_id.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib_life.sh"
need_root
$PY -c 'import torch' 2>/dev/null || skip "python3-torch not installed (make deps)"
test_cgroups a b
PORT_a=$(free_port)
PORT_b=$(free_port)
PORT_h=$(free_port)
HUB=http://127.0.0.1:$PORT_h
ddp_fail_job

for n in a b; do
	port=PORT_$n
	bg "rsd_$n" "$RS" daemon --cgroup "/$CG-$n" --listen "127.0.0.1:${!port}" \
		--lock-file "$T/$n.lock" --ckpt-min-mb 4
	wait_lines "$T/rsd_$n.out" 'serving /metrics' 1 30 || fail "daemon $n did not start"
done
bg hub "$RS" hub --peers "127.0.0.1:$PORT_a,127.0.0.1:$PORT_b" --listen "127.0.0.1:$PORT_h" \
	--interval 0.5

export ZOO_DDP_RUN_ID=fail-2n ZOO_DDP_FAIL_GRACE_S=10 ZOO_DDP_CGROUPS="$ROOT/$CG-a $ROOT/$CG-b"
ddp_kill_relaunch "$S" "${ARGS[@]}"
RUN1=$(run_id "$HUB" fail-2n "$T/hub.out") || exit 1
relaunched
sleep 2
snapshot "$HUB"
# each node alone: half the story
[ "$(job_metric "http://127.0.0.1:$PORT_b" rankscope_job_failures_total fail-2n)" = 1 ] ||
	fail "node B did not see rank 1's death"
http_get "http://127.0.0.1:$PORT_a/api/v1/jobs" | tail -n +2 | grep -q '"reason":"exit_code"' ||
	fail "node A did not see its rank exit"
life_check "$T/hub.out" \
	"fail-2n:$T/d1.out:$S:$T/d2.out:$RUN1" || exit 1
$PY - "$T/jobs.json" "127.0.0.1:$PORT_b" <<'PY' || exit 1
import json, sys
j = [x for x in json.load(open(sys.argv[1])) if x["job"] == "fail-2n"][0]
nodes = sorted(n["node"] for n in j["nodes"])
assert len(nodes) == 2, nodes
assert j["last_failure"]["node"] == sys.argv[2], (j["last_failure"], sys.argv[2])
print("hub: the cause on node B,", j["last_failure"]["node"], "of", nodes)
PY
pass "a job over two nodes killed and relaunched: the hub tells one failure (the kill), the writer's checkpoint age and lost steps, and the recovery"
