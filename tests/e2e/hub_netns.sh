#!/usr/bin/env bash
# rankscope hub over two "nodes" on one machine, each its own network namespace, joined by a
# veth pair (rsn0 at both ends): a real 4-rank PyTorch DDP job (gloo, CPU, 3 equal buckets a
# step) whose ranks 0 and 1 are born in namespace and cgroup A and ranks 2 and 3 in B, so gloo
# talks TCP across the veth. One daemon per node, started inside its namespace, scoped to its
# cgroup, listening on its veth address with a bearer token; the hub runs in A and pulls both.
# On 2 vCPUs shared by 4 ranks a DDP step's ends (each rank's own prepare_for_forward)
# scatter by ~5 ms, as much as step lengths vary: the hub lines node B up by the polls'
# clocks (each daemon's now against the hub's), and the check below holds it to the truth.
#  1. rank 3 computes 80 ms more a step: the hub names rank 3 and compute, as the workload's
#     own expect line says, with all 4 ranks each on its node; daemon A alone sees 2 of 4 and
#     says remote_wait (no rank of its own, never the network); a capture across both nodes (POST to the hub) has
#     every rank on its node's tracks and the all-reduces joined across the nodes;
#  4. daemon B killed: the hub marks ranks 2 and 3 unobserved and keeps serving; restarted on
#     the same address and port: the hub resumes with all 4 ranks;
#  then a healthy job, whose ranks the running daemons adopt as they start:
#  2. the veth throttled (tbf) at both ends: the all-reduce is most of every rank's step (the
#     workload's own clock says so) and the hub says communication; daemon A alone never does;
#  3. the throttle lifted, rank 2 stopped: the hub says hang on rank 2, and shows it stopped.
# Detached (SIGTERM), the daemons leave no rs_ program behind.
. "$(dirname "$0")/../lib.sh"
need_root
$PY -c 'import torch' 2>/dev/null || skip "python3-torch not installed (make deps)"
command -v ip >/dev/null && command -v tc >/dev/null || skip "iproute2 (ip, tc) not installed"
test_cgroups a b

test_netns a b
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
(umask 077 && echo "$TOKEN" >"$T/token")
PORT_a=$(free_port)
PORT_b=$(free_port)
PORT_h=$(free_port)
NODE_a=$ADDR_a:$PORT_a NODE_b=$ADDR_b:$PORT_b
HUB=http://127.0.0.1:$PORT_h

# get URL FILE: GET from inside node A's namespace with the bearer token; the body to FILE
get() {
	ip netns exec "$NS_a" $PY - "$1" "$T/token" >"$2" 2>"$T/get.err" <<'PY' && return
import sys, urllib.request
req = urllib.request.Request(sys.argv[1])
req.add_header("Authorization", "Bearer " + open(sys.argv[2]).read().strip())
sys.stdout.write(urllib.request.urlopen(req, timeout=5).read().decode())
PY
	fail "GET $1: $(tail -1 "$T/get.err")"
}

# job NAME RUNID ARGS...: 4 DDP ranks, 0 and 1 born in node A's namespace and cgroup, 2 and 3
# in B's; rank 0's veth address is the master
job() {
	local name=$1 id=$2
	shift 2
	bg "$name" env GLOO_SOCKET_IFNAME=rsn0 ZOO_DDP_RUN_ID="$id" ZOO_DDP_MASTER_ADDR="$ADDR_a" \
		ZOO_DDP_NETNS="$NS_a $NS_a $NS_b $NS_b" \
		ZOO_DDP_CGROUPS="$ROOT/$CG-a $ROOT/$CG-a $ROOT/$CG-b $ROOT/$CG-b" \
		"$ZOO_DDP" 4 --buckets 3 --steps 100000 --go-file "$T/go-$name" \
		--data-dir "$T/data" "$@"
	wait_lines "$T/$name.out" '^ready rank=' 4 90 || fail "DDP job $name did not start"
	read -r -a PIDS <<<"$(ready_pids "$T/$name.out" | tr , ' ')"
	[ "${#PIDS[@]}" = 4 ] || fail "expected 4 rank pids, got: ${PIDS[*]}"
	# each rank, and its loader worker (born there too), in its node's namespace and cgroup
	local r p n ns
	for r in 0 1 2 3; do
		n=a && ((r > 1)) && n=b
		ns=NS_$n
		for p in "${PIDS[r]}" \
			$(sed -n "s/^worker rank=$r pid=\([0-9]*\).*/\1/p" "$T/$name.out"); do
			[ "$(stat -L -c %i "/proc/$p/ns/net")" = "$(stat -L -c %i "/run/netns/${!ns}")" ] ||
				fail "rank $r's process $p is not in namespace ${!ns}"
			grep -q ":/$CG-$n\$" "/proc/$p/cgroup" ||
				fail "rank $r's process $p is not in cgroup /$CG-$n: $(cat "/proc/$p/cgroup")"
		done
	done
}

# attached NODE PID...: wait until node's daemon says it attached to each PID
attached() {
	local n=$1 p
	shift
	for p in "$@"; do
		wait_lines "$T/rsd_$n.out" "attached to PID $p:" 1 30 ||
			fail "daemon $n did not attach to PID $p"
	done
}

# lined_up JOB NODESFILE: the hub's view of node B in the job (/api/v1/nodes) against the
# truth: both daemons read one clock here, so B's step k is A's step whose start is nearest
# (their --json step lines; rsd_b.out is the running daemon's), and the offset is 0
lined_up() {
	$PY - "$T" "$1" "$2" "$NODE_b" <<'PY'
import collections, json, sys
t, job, path, nb = sys.argv[1:]
def starts(f, rank):
    out = {}
    for l in open(f"{t}/{f}"):
        if l.startswith('{"type":"step"'):
            s = json.loads(l)
            if s["job"] == job and s["rank"] == rank:
                out[s["step"]] = s["start_ns"]
    return out
a, b = starts("rsd_a.out", 0), starts("rsd_b.out", 2)
assert a and b, (len(a), len(b))
shifts = collections.Counter(min(a, key=lambda k: abs(a[k] - sb)) - k for k, sb in b.items())
want = shifts.most_common(1)[0][0]
n = {x["node"]: x for x in json.load(open(path))}
j = [x for x in n[nb]["jobs"] if x["job"] == job]
assert n[nb]["up"] and j and j[0]["lined_up"], n[nb]
j = j[0]
assert j["step_shift"] == want and abs(j["clock_offset_ns"]) <= j["clock_error_ns"], \
    f"node B in the hub: step shift {j['step_shift']}, clock offset {j['clock_offset_ns']} " \
    f"+- {j['clock_error_ns']} ns; its steps are node A's plus {want} (start times: {shifts})"
print(f"node B lined up: step shift {want}, clock offset {j['clock_offset_ns']} ns "
      f"+- {j['clock_error_ns']} ns (one clock: 0)")
PY
}

start_daemon() {	# node
	local ns=NS_$1 node=NODE_$1
	mkdir -p "$T/$1"
	bg "rsd_$1" ip netns exec "${!ns}" "$RS" daemon --all --cgroup "/$CG-$1" \
		--listen "${!node}" --token-file "$T/token" --lock-file "$T/$1/daemon.lock" \
		--cupti-socket "$T/$1/cupti.sock" --hang-timeout 2 --capture-dir "$T/$1/cap" --json
	wait_lines "$T/rsd_$1.out" 'watching for training processes' 1 30 ||
		fail "daemon $1 did not start: $(grep -v '^{' "$T/rsd_$1.out" | tail -3)"
}

# 1. rank 3 computes 80 ms more a step
J1=netns-compute-$$
job job1 "$J1" --fault compute:3:80
start_daemon a
start_daemon b
attached a "${PIDS[@]:0:2}"
attached b "${PIDS[@]:2:2}"
touch "$T/go-job1"
bg hub ip netns exec "$NS_a" "$RS" hub --peers "$NODE_a,$NODE_b" --token-file "$T/token" \
	--listen "127.0.0.1:$PORT_h" --interval 0.5 --hang-timeout 2 --capture-dir "$T/hcap" --json
wait_lines "$T/hub.out" "\"job\":\"$J1\".*\"class\":\"compute\",\"rank\":3," 1 60 ||
	fail "the hub named no compute straggler on rank 3: $(grep -v '^{' "$T/hub.out" | tail -5)"
sleep 2
get "$HUB/api/v1/diagnosis" "$T/h_diag.json"
get "$HUB/api/v1/ranks" "$T/h_ranks.json"
get "$HUB/api/v1/nodes" "$T/h_nodes.json"
get "http://$NODE_a/api/v1/diagnosis" "$T/a_diag.json"
$PY - "$T" "$J1" "$NODE_a" "$NODE_b" "${PIDS[@]}" <<'PY' || exit 1
import json, sys
t, job, na, nb, pids = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
ld = lambda n: json.load(open(f"{t}/{n}"))
truth = [json.loads(l) for l in open(f"{t}/job1.out") if l.startswith('{"type":"workload"')]
want = (truth[0]["expect"]["class"], truth[0]["expect"]["rank"])
assert want == ("compute", 3), truth
d = [x for x in ld("h_diag.json") if x["job"] == job]
assert len(d) == 1, d
d = d[0]
assert (d["class"], d["rank"], d["ranks_seen"], d["world_size"]) == want + (4, 4), d
ranks = sorted((r["rank"], r["node"], r["observed"], r["pid"]) for r in ld("h_ranks.json")
               if r["job"] == job)
assert ranks == [(0, na, True, int(pids[0])), (1, na, True, int(pids[1])),
                 (2, nb, True, int(pids[2])), (3, nb, True, int(pids[3]))], ranks
print(f"hub: {d['class']} on rank {d['rank']} (the workload expects {want}), 4 of 4 ranks, "
      f"each with its node")
# gloo calls are probed at entry only (README, Known limits): seeing part of the job, a
# node's detector takes each rank's wait after its arrival from its comm phase, so its 2 of 4
# ranks waiting for rank 3 are remote_wait. Never a local rank, never the network.
a = [v for v in ld("a_diag.json") if v.get("job") == job]
assert a and a[0]["class"] == "remote_wait" and a[0]["rank"] == -1 and \
    a[0]["ranks_seen"] == 2 and a[0]["world_size"] == 4, a
print("daemon A alone:", a[0]["class"], "with", a[0]["ranks_seen"], "of", a[0]["world_size"])
v = [json.loads(l) for l in open(f"{t}/hub.out") if l.startswith("{")]
hits = [x for x in v if x["job"] == job and x["class"] != "none"]
wrong = [(x["class"], x["rank"]) for x in hits if (x["class"], x["rank"]) != want]
assert len(wrong) <= 1, wrong
PY

lined_up "$J1" "$T/h_nodes.json" || exit 1
tx=$(ip netns exec "$NS_b" cat /sys/class/net/rsn0/statistics/tx_bytes)
((tx > 20000000)) || fail "only $tx bytes left node B across the veth: gloo took another path"
echo "node B sent $((tx >> 20)) MiB across the veth"

# a capture across both nodes, asked of the hub: every rank on its node's tracks, and the
# all-reduces joined by flows across the veth (their slices overlapping on the merged clock)
ip netns exec "$NS_a" $PY - "$HUB" "$T/token" "$T/cap.json" <<'PY' || fail "no capture across nodes"
import json, sys, time, urllib.request
hub, tok, out = sys.argv[1], open(sys.argv[2]).read().strip(), sys.argv[3]
def req(path, method="GET"):
    r = urllib.request.Request(hub + path, method=method)
    r.add_header("Authorization", "Bearer " + tok)
    return urllib.request.urlopen(r, timeout=10)
r = req("/api/v1/capture?seconds=3", "POST")
assert r.status == 202, r.status
cid = json.load(r)["id"]
for _ in range(90):
    r = req(f"/api/v1/captures/{cid}")
    if r.status == 200:
        open(out, "wb").write(r.read())
        sys.exit(0)
    time.sleep(1)
sys.exit("the hub's capture did not finish in 90 s")
PY
$PY - "$T/cap.json" "$NODE_a" "$NODE_b" "${PIDS[@]}" <<'PY' || exit 1
import json, sys
from collections import defaultdict
tr = json.load(open(sys.argv[1]))
na, nb, pids = sys.argv[2], sys.argv[3], [int(x) for x in sys.argv[4:]]
ev, od = tr["traceEvents"], tr["otherData"]
nodes = {n["node"]: n for n in od["nodes"]}
assert all(nodes[n]["included"] and nodes[n]["lined_up"] for n in (na, nb)), nodes
names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
for r, pid in enumerate(pids):
    node = na if r < 2 else nb
    assert sum(n.startswith(f"rank {r} (pid {pid})") and n.endswith(f" on {node}")
               for n in names.values()) == 1, (r, pid, names)
flows = defaultdict(list)
for e in ev:
    if e["ph"] in ("s", "f"):
        flows[e["id"]].append(e)
across = [f for f in flows.values() if len({e["pid"] >> 22 for e in f}) == 2]
assert od["flows_across_nodes"] == len(across) and len(across) >= 6, (od, len(across))
b = nodes[nb] if od["reference_node"] == na else nodes[na]
print(f"hub capture: {len(names)} ranks, {len(across)} collectives joined across the veth, "
      f"(gloo: entries only, no residual); the other node's offset "
      f"{b['clock_offset_ns']} +- {b['clock_error_ns']} ns (one clock: 0), refined: "
      f"{b['refined_from_collectives']}")
assert abs(b["clock_offset_ns"]) <= b["clock_error_ns"], b
PY

# 4. node B's daemon dies: its ranks are unobserved, and the hub keeps serving
kill -KILL "$PID_rsd_b"
wait_lines "$T/hub.out" "node $NODE_b does not answer" 1 10 ||
	fail "the hub did not notice daemon B stopped"
sleep 3
get "$HUB/api/v1/ranks" "$T/h_ranks2.json"
get "$HUB/api/v1/nodes" "$T/h_nodes2.json"
$PY - "$T" "$J1" "$NODE_b" <<'PY' || exit 1
import json, sys
t, job, nb = sys.argv[1], sys.argv[2], sys.argv[3]
r = {x["rank"]: x["observed"] for x in json.load(open(f"{t}/h_ranks2.json")) if x["job"] == job}
assert r == {0: True, 1: True, 2: False, 3: False}, r
n = {x["node"]: x for x in json.load(open(f"{t}/h_nodes2.json"))}
assert not n[nb]["up"] and n[nb]["why"] and n[nb]["failed_polls"] >= 3, n[nb]
print("daemon B down:", n[nb]["why"])
PY
wait_lines "$T/hub.out" "\"job\":\"$J1\".*\"ranks_seen\":2,\"world_size\":4" 1 15 ||
	fail "no verdict with 2 of 4 ranks observed after daemon B stopped"
n=$(grep -c "\"job\":\"$J1\".*\"class\":\"compute\",\"rank\":3," "$T/hub.out")
start_daemon b
wait_lines "$T/hub.out" "node $NODE_b answers again" 1 15 || fail "the hub did not resume daemon B"
wait_lines "$T/hub.out" "\"job\":\"$J1\".*\"class\":\"compute\",\"rank\":3,.*\"ranks_seen\":4," \
	$((n + 1)) 40 || fail "no compute verdict on rank 3 with 4 ranks after daemon B came back"
get "$HUB/api/v1/ranks" "$T/h_ranks3.json"
get "$HUB/api/v1/nodes" "$T/h_nodes3.json"
$PY -c 'import json, sys
r = {x["rank"]: x["observed"] for x in json.load(open(sys.argv[1])) if x["job"] == sys.argv[2]}
assert r == {0: True, 1: True, 2: True, 3: True}, r' "$T/h_ranks3.json" "$J1" ||
	fail "the hub does not observe all 4 ranks again"
# the new daemon numbers its steps from 1: lined up anew
lined_up "$J1" "$T/h_nodes3.json" || exit 1
grep "\"job\":\"$J1\"" "$T/rsd_a.out" | grep -q '"class":"communication"' &&
	fail "daemon A alone blamed the network"
grep "\"job\":\"$J1\"" "$T/hub.out" | grep -q '"class":"communication"' &&
	fail "the hub blamed the network for a compute straggler"
kill -TERM -- "-$PID_job1"
wait_exit "$PID_job1" 30 >/dev/null

# 2. a healthy job on a throttled veth: the daemons adopt its ranks as they start
J2=netns-healthy-$$
for ns in "$NS_a" "$NS_b"; do
	ip netns exec "$ns" tc qdisc add dev rsn0 root tbf rate 50mbit burst 32kb latency 400ms ||
		fail "cannot throttle rsn0 in $ns with tbf"
done
job job2 "$J2"
attached a "${PIDS[@]:0:2}"
attached b "${PIDS[@]:2:2}"
touch "$T/go-job2"
wait_lines "$T/hub.out" "\"job\":\"$J2\".*\"class\":\"communication\"" 1 40 || {
	get "$HUB/api/v1/nodes" "$T/h_nodes_j2.json"
	get "$HUB/api/v1/ranks" "$T/h_ranks_j2.json"
	get "http://$NODE_a/api/v1/ranks" "$T/a_ranks_j2.json"
	get "http://$NODE_b/api/v1/ranks" "$T/b_ranks_j2.json"
	# what each rank looks like to the hub and to its node, and how each node found it
	for f in h_ranks_j2 a_ranks_j2 b_ranks_j2; do
		echo "$f: $($PY -c 'import json, sys
print([(x["rank"], x.get("pid"), x.get("node"), x.get("observed"), x.get("state"),
        x.get("steps")) for x in json.load(open(sys.argv[1])) if x.get("job") == sys.argv[2]])' \
			"$T/$f.json" "$J2")"
	done
	grep -hv '^{' "$T/rsd_a.out" "$T/rsd_b.out" | grep -E "PID ($(IFS='|'; echo "${PIDS[*]}"))\b"
	fail "the hub did not blame the throttled network: $(grep "$J2" "$T/hub.out" | tail -1)"
}
get "$HUB/api/v1/diagnosis" "$T/h_diag4.json"
get "http://$NODE_a/api/v1/diagnosis" "$T/a_diag4.json"
for ns in "$NS_a" "$NS_b"; do
	ip netns exec "$ns" tc qdisc del dev rsn0 root || fail "cannot lift the throttle in $ns"
done
$PY - "$T" "$J2" <<'PY' || exit 1
import json, statistics, sys
t, job = sys.argv[1], sys.argv[2]
truth = [json.loads(l) for l in open(f"{t}/job2.out") if l.startswith('{"type":"truth"')]
w = json.loads(next(l for l in open(f"{t}/job2.out") if l.startswith('{"type":"workload"')))
assert w["expect"]["class"] == "none" and not w["faults"], w
# the throttled steps: every rank waits for the all-reduce most of its step
for r in range(4):
    s = [x for x in truth if x["rank"] == r][:8]
    assert len(s) >= 4, (r, len(s))
    frac = statistics.median(x["wait_ns"] / x["step_ns"] for x in s)
    print(f"rank {r}: step {statistics.median(x['step_ns'] for x in s) / 1e6:.0f} ms, "
          f"{frac:.0%} of it waiting for the all-reduce")
    assert frac > 0.6, (r, frac)
d = [x for x in json.load(open(f"{t}/h_diag4.json")) if x["job"] == job]
assert d and d[0]["class"] == "communication" and d[0]["ranks_seen"] == 4, d
a = [x for x in json.load(open(f"{t}/a_diag4.json")) if x.get("job") == job]
assert a and a[0]["class"] == "remote_wait" and a[0]["rank"] == -1 and \
    a[0]["ranks_seen"] == 2, a
print("hub:", d[0]["class"], "| daemon A alone:", a[0]["class"])
PY
grep "\"job\":\"$J2\"" "$T/rsd_a.out" | grep -q '"class":"communication"' &&
	fail "daemon A alone blamed the network"

# 3. rank 2 stopped, on node B: the hub calls it a hang, and shows it stopped
sleep 2
kill -STOP "${PIDS[2]}"
wait_lines "$T/hub.out" "\"job\":\"$J2\".*\"class\":\"hang\",\"rank\":2," 1 20 || {
	get "$HUB/api/v1/ranks" "$T/h_ranks_hang.json"
	kill -CONT "${PIDS[2]}"
	fail "the hub did not report the hang on rank 2: $(tail -3 "$T/hub.out");" \
		"ranks: $($PY -c 'import json, sys
print([(x["rank"], x.get("state"), x.get("observed")) for x in json.load(open(sys.argv[1]))
       if x["job"] == sys.argv[2]])' "$T/h_ranks_hang.json" "$J2");" \
		"steps since the stop: $(grep -c "\"job\":\"$J2\"" "$T/rsd_a.out")"
}
stopped=
for ((i = 0; i < 15; i++)); do
	get "$HUB/api/v1/ranks" "$T/h_ranks5.json"
	$PY -c 'import json, sys
r = {x["rank"]: x["state"] for x in json.load(open(sys.argv[1])) if x["job"] == sys.argv[2]}
sys.exit(0 if r[2] == "stopped" and r[0] in ("running", "sleeping") else 1)' \
		"$T/h_ranks5.json" "$J2" && { stopped=1; break; }
	sleep 1
done
kill -CONT "${PIDS[2]}"
[ -n "$stopped" ] || fail "the hub does not show rank 2 stopped: $(cat "$T/h_ranks5.json")"

# detach: SIGTERM, exit 0, nothing left in the kernel
kill -TERM -- "-$PID_job2"
kill -TERM "$PID_hub"
wait_exit "$PID_job2" 30 >/dev/null
for n in a b; do
	pid=PID_rsd_$n
	[ "$(leftovers "${!pid}")" -gt 0 ] ||
		fail "no rs_ programs held by daemon $n (the test cannot see them)"
	kill -TERM "${!pid}"
	wait_exit "${!pid}" 30
	rc=$?
	[ $rc = 0 ] ||
		fail "daemon $n exited $rc after SIGTERM: $(grep -v '^{' "$T/rsd_$n.out" | tail -3)"
done
[ "$(rs_progs_left)" = 0 ] || fail "rs_ programs left behind: $(bpftool prog show | grep rs_)"
if [ -r /sys/kernel/tracing/uprobe_events ] && grep -q . /sys/kernel/tracing/uprobe_events; then
	fail "uprobe_events not empty: $(head -3 /sys/kernel/tracing/uprobe_events)"
fi
pass "hub across two network namespaces: compute straggler named, node loss and return," \
	"a throttled link is communication, a stopped rank a hang; nothing left behind"
