#!/usr/bin/env bash
# Communicators on a real 4-rank OpenMPI job with tensor + data parallel groups
# (tests/workloads/zoo_mpi --tp 3: MPI_Comm_split into TP groups {0,1} {2,3} and DP groups
# {0,2} {1,3}).
# Phase "early": the daemon's probes are on every rank before MPI_Init (the ranks wait on
# --init-file until /api/v1/ranks shows their MPI probes), so it sees each split:
#  - every rank's /api/v1/ranks line lists its TP and DP communicators under one name per
#    group (MPI handles are pointers in each process), each with 2 members seen, and the
#    collectives on them (2 x 3 TP all-reduces and 2 DP buckets a step);
#  - the two TP groups have different names; the steps are learned on the TP communicator;
#  - an injected straggler inside one TP group is named.
# Phase "late": a daemon started (--all) after the splits cannot know how many each rank
# made, so it reads OpenMPI's ompi_mpi_state (2: initialized), gives no rank an mpi:sub: name,
# says so in each rank's notes and the log, names the sub-communicators by their handles, and
# still names the straggler (groups found by who is inside a collective together). The same
# check keeps a rank attached between two splits (CI, a loaded machine: rank 2 missed its
# first split and its DP group took a name no other rank had) from counting from the middle.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"

# mpi_probed URL: 0 once 4 zoo_mpi ranks have their MPI collective probes on
mpi_probed() {
	http_get "$1/api/v1/ranks" | tail -n +2 | $PY -c '
import json, sys
try:
    rs = [r for r in json.load(sys.stdin) if r["comm"] == "zoo_mpi"]
except ValueError:
    sys.exit(1)
sys.exit(0 if sum(1 for r in rs
                  if r["collective_probes"].get("mpi", {}).get("sites", 0) > 0) >= 4 else 1)'
}

wait_probed() {
	local i
	for i in $(seq 300); do
		mpi_probed "$1" && return 0
		sleep 0.1
	done
	return 1
}

# check PHASE RANKS_JSON DAEMON_OUT
check() {
	$PY - "$@" <<'PY' || exit 1
import json, sys
phase = sys.argv[1]
ranks = [r for r in json.load(open(sys.argv[2])) if r["comm"] == "zoo_mpi"]
assert len(ranks) == 4, [r["rank"] for r in ranks]
by = {r["rank"]: {c["name"]: c for c in r["communicators"]} for r in ranks}
late_note = "attached after MPI_Init: MPI sub-communicators are named by handle"
for r in ranks:
    late = late_note in r["notes"]
    assert late == (phase == "late"), (phase, r["rank"], r["notes"])
for r, cs in sorted(by.items()):
    print(f"{phase}: rank {r}:", [(n, c["members_seen"], c["ops"]) for n, c in cs.items()])
    pre = "mpi:sub:" if phase == "early" else "mpi:0x"
    subs = {n: c for n, c in cs.items() if n.startswith(pre)}
    assert len(subs) == 2, f"rank {r}: sub-communicators {list(cs)}"
    if phase == "late":
        assert not any(n.startswith("mpi:sub:") for n in cs), f"rank {r}: {list(cs)}"
    else:
        assert all(c["members_seen"] == 2 for c in subs.values()), subs
    ops = sorted(c["ops"] for c in subs.values())
    # 400 steps (+3 warmup): 2 buckets on DP, 6 TP all-reduces a step
    assert ops[0] >= 2 * 400 and ops[1] >= 6 * 400, ops
if phase == "early":
    sub = lambda cs, f: f((c for n, c in cs.items() if n.startswith("mpi:sub:")),
                          key=lambda c: c["ops"])["name"]
    tp = {r: sub(cs, max) for r, cs in by.items()}
    dp = {r: sub(cs, min) for r, cs in by.items()}
    assert tp[0] == tp[1] and tp[2] == tp[3] and tp[0] != tp[2], tp
    assert dp[0] == dp[2] and dp[1] == dp[3] and dp[0] != dp[1], dp
    assert not set(dp.values()) & set(tp.values()), (dp, tp)
    print("TP groups", tp)
lines = [json.loads(l) for l in open(sys.argv[3]) if l.startswith("{")]
rule = [d for d in lines if d.get("type") == "rule"]
assert rule and rule[0]["period"] == 6, rule[:1]
v = [d for d in lines if d.get("type") == "verdict" and d["class"] != "none"]
assert v and v[0]["class"] == "compute" and v[0]["rank"] == 2, [(d["class"], d["rank"]) for d in v[:3]]
print(phase, "steps of", rule[0]["period"], "verdict", v[0]["class"], "on rank", v[0]["rank"])
PY
}

JOB=(mpirun --allow-run-as-root --oversubscribe -np 4 "$TOP/build/workloads/zoo_mpi"
	--tp 3 --buckets 2 --steps 400 --go-file "$T/go" --fault compute:2:6000)

# early: the daemon first, the ranks held before MPI_Init until their probes are on
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg rsd "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/daemon.lock" --json
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 ||
	fail "the daemon did not start: $(tail -3 "$T/rsd.out")"
bg job "${JOB[@]}" --init-file "$T/init"
wait_lines "$T/job.out" '^pre-init pid=' 4 60 || fail "the MPI job did not start"
wait_probed "$URL" || fail "the daemon did not put MPI probes on 4 ranks in 30 s"
touch "$T/init"
wait_lines "$T/job.out" '^ready rank=' 4 60 || fail "the MPI job did not get ready"
touch "$T/go"
wait_exit "$PID_job" 120 || fail "the job failed: $(tail -5 "$T/job.out")"
sleep 1.5
http_get "$URL/api/v1/ranks" | tail -n +2 >"$T/ranks.json" || fail "GET /api/v1/ranks"
check early "$T/ranks.json" "$T/rsd.out"
kill -TERM "$PID_rsd"
wait_exit "$PID_rsd" 30 || fail "the daemon did not stop"

# late: the job has made its communicators before the daemon starts
rm -f "$T/go"
bg job2 "${JOB[@]}"
wait_lines "$T/job2.out" '^ready rank=' 4 60 || fail "the MPI job did not start"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg rsd2 "$RS" daemon --all --listen 127.0.0.1:$PORT --lock-file "$T/daemon.lock" --json
wait_lines "$T/rsd2.out" 'watching for training processes' 1 30 ||
	fail "the daemon did not start: $(tail -3 "$T/rsd2.out")"
wait_probed "$URL" || fail "the late daemon did not put MPI probes on 4 ranks in 30 s"
touch "$T/go"
wait_exit "$PID_job2" 120 || fail "the job failed: $(tail -5 "$T/job2.out")"
sleep 1.5
http_get "$URL/api/v1/ranks" | tail -n +2 >"$T/ranks2.json" || fail "GET /api/v1/ranks"
grep -q 'was attached after MPI_Init (ompi_mpi_state 2)' "$T/rsd2.out" ||
	fail "the late daemon did not say it was attached after MPI_Init: $(grep -i mpi_init "$T/rsd2.out" | head -3)"
check late "$T/ranks2.json" "$T/rsd2.out"
pass "MPI sub-communicators named per group when seen made, by handle when not; steps on TP; straggler named"
