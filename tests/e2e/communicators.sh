#!/usr/bin/env bash
# Communicators on a real 4-rank OpenMPI job with tensor + data parallel groups
# (tests/workloads/zoo_mpi --tp 3: MPI_Comm_split into TP groups {0,1} {2,3} and DP groups
# {0,2} {1,3}), found by the daemon when the job starts:
#  - every rank's /api/v1/ranks line lists its TP and DP communicators under one name per
#    group (MPI handles are pointers in each process), each with 2 members seen, and the
#    collectives on them (2 x 3 TP all-reduces and 2 DP buckets a step);
#  - the two TP groups have different names; the steps are learned on the TP communicator;
#  - an injected straggler inside one TP group is named.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg rsd "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/daemon.lock" --json
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 ||
	fail "the daemon did not start: $(tail -3 "$T/rsd.out")"
bg job mpirun --allow-run-as-root --oversubscribe -np 4 "$TOP/build/workloads/zoo_mpi" \
	--tp 3 --buckets 2 --steps 400 --go-file "$T/go" --fault compute:2:6000
wait_lines "$T/job.out" '^ready rank=' 4 60 || fail "the MPI job did not start"
sleep 1.5
touch "$T/go"
wait_exit "$PID_job" 120 || fail "the job failed: $(tail -5 "$T/job.out")"
sleep 1.5
http_get "$URL/api/v1/ranks" | tail -n +2 >"$T/ranks.json" || fail "GET /api/v1/ranks"
$PY - "$T/ranks.json" "$T/rsd.out" <<'PY' || exit 1
import json, sys
ranks = [r for r in json.load(open(sys.argv[1])) if r["comm"] == "zoo_mpi"]
assert len(ranks) == 4, [r["rank"] for r in ranks]
by = {r["rank"]: {c["name"]: c for c in r["communicators"]} for r in ranks}
for r, cs in sorted(by.items()):
    print(f"rank {r}:", [(n, c["members_seen"], c["ops"]) for n, c in cs.items()])
    subs = {n: c for n, c in cs.items() if n.startswith("mpi:sub:")}
    assert len(subs) == 2, f"rank {r}: sub-communicators {list(cs)}"
    assert all(c["members_seen"] == 2 for c in subs.values()), subs
    ops = sorted(c["ops"] for c in subs.values())
    # 400 steps (+3 warmup): 2 buckets on DP, 6 TP all-reduces a step
    assert ops[0] >= 2 * 400 and ops[1] >= 6 * 400, ops
tp = {r: max((c for n, c in cs.items() if n.startswith("mpi:sub:")), key=lambda c: c["ops"])["name"]
      for r, cs in by.items()}
assert tp[0] == tp[1] and tp[2] == tp[3] and tp[0] != tp[2], tp
dp = {r: min((c for n, c in cs.items() if n.startswith("mpi:sub:")), key=lambda c: c["ops"])["name"]
      for r, cs in by.items()}
assert dp[0] == dp[2] and dp[1] == dp[3] and dp[0] != dp[1], dp
assert not set(dp.values()) & set(tp.values()), (dp, tp)
lines = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
rule = [d for d in lines if d.get("type") == "rule"]
assert rule and rule[0]["period"] == 6, rule[:1]
v = [d for d in lines if d.get("type") == "verdict" and d["class"] != "none"]
assert v and v[0]["class"] == "compute" and v[0]["rank"] == 2, [(d["class"], d["rank"]) for d in v[:3]]
print("TP groups", tp, "steps of", rule[0]["period"], "verdict", v[0]["class"], "on rank", v[0]["rank"])
PY
pass "MPI sub-communicators named per group, 2 members each; steps on TP; straggler named"
