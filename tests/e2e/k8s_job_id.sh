#!/usr/bin/env bash
# rankscope daemon --k8s-pods: job ids from the pods' owners, for real, without a cluster. Fake
# pod cgroups (a systemd-driver path and a cgroupfs one, under a directory of the test's own)
# hold ranks that map the NCCL test double (TEST DOUBLE: NCCL needs a GPU), and a python
# http.server on loopback stands in for `kubectl proxy`, serving a pod list:
#  - a rank in a pod owned by a PyTorchJob gets job_id k8s:NS:PyTorchJob:NAME, job_src k8s,
#    its namespace and pod, in /api/v1/ranks and in rankscope_rank_info (promtool accepts
#    /metrics), though its environ names another job; the list was asked for with this
#    node's field selector (NODE_NAME);
#  - a second rank, in another pod of the same job (owner only, no labels) that the list
#    gained after the daemon's last poll, gets the same job id;
#  - a rank whose pod the list lacks, and one whose pod has no controller, get their
#    environ's id (the second keeps its namespace and pod);
#  - a daemon whose --k8s-pods URL does not answer warns once, with the fix, and names every
#    rank from its environ.
. "$(dirname "$0")/../lib.sh"
need_root
[ -x "$FIX/short_rank" ] || skip "no NCCL double (no CUDA toolkit nccl.h)"
command -v promtool >/dev/null || skip "promtool not installed (make deps installs prometheus)"
ROOT=
for r in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/pids; do
	[ -w "$r/cgroup.procs" ] && { ROOT=$r; break; }
done
[ -n "$ROOT" ] || skip "no writable cgroup hierarchy (v2 /sys/fs/cgroup[/unified] or v1 pids)"

# Everything under one directory of this test's, as a cgroup namespace would show a node's
# kubepods: never the host's own kubepods.slice.
TOPCG=rankscope-k8s-$$
cleanup_pods() {
	local d p i
	[ -d "$ROOT/$TOPCG" ] || return 0
	while read -r d; do
		while read -r p; do echo "$p" >"$ROOT/cgroup.procs" 2>/dev/null; done <"$d/cgroup.procs"
		# killed ranks stay in it until they are reaped
		for ((i = 0; i < 50; i++)); do
			rmdir "$d" 2>/dev/null && break
			sleep 0.1
		done
		[ -d "$d" ] && echo "could not remove cgroup $d" >&2
	done < <(find "$ROOT/$TOPCG" -depth -type d)
}
trap 'cleanup; cleanup_pods' EXIT

NS=team-a
JOB=llama-ft
WANT="k8s:$NS:PyTorchJob:$JOB"
NODE=rs-test-node
UID_A=3f1c2a9e-5b7d-4e21-9c0a-7d8e6f5a4b31	# worker 0: systemd driver, Kubeflow's labels
UID_B=8a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d	# worker 1: cgroupfs driver, owner only
UID_C=c0ffee00-1234-4abc-8def-0123456789ab	# not in the list
UID_D=d00dfeed-aaaa-4bbb-8ccc-dddddddddddd	# in the list, no controller
CID=$(printf '%064x' $$)

# pod_cg UID systemd|cgroupfs: make the pod's container cgroup, print its path
pod_cg() {
	local d
	if [ "$2" = systemd ]; then
		d=$ROOT/$TOPCG/kubepods.slice/kubepods-besteffort.slice
		d=$d/kubepods-besteffort-pod${1//-/_}.slice/cri-containerd-$CID.scope
	else
		d=$ROOT/$TOPCG/kubepods/burstable/pod$1/$CID
	fi
	mkdir -p "$d" || fail "cannot make cgroup $d"
	echo "$d"
}
# rank NAME CGROUP RANK RUN_ID: a rank (RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID) born in CGROUP
rank() {
	bg "$1" sh -c "echo \$\$ >'$2/cgroup.procs' && exec env RANK=$3 WORLD_SIZE=2 \
		TORCHELASTIC_RUN_ID=$4 '$FIX/short_rank' 600000"
}
# pods a|b|d...: the pod list the stand-in serves, with these pods (replaced whole, as the
# API answers a list)
pods() {
	$PY - "$NS" "$JOB" "$NODE" "$UID_A" "$UID_B" "$UID_D" "$@" >"$T/pods.json.new" <<'PY' ||
import json, sys
ns, job, node, ua, ub, ud = sys.argv[1:7]
owner = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": job,
         "uid": "0b5e8f7c-aaaa-4bbb-8ccc-000000000001", "controller": True,
         "blockOwnerDeletion": True}
pods = {
    "a": {"name": f"{job}-worker-0", "uid": ua, "ownerReferences": [owner],
          "labels": {"training.kubeflow.org/job-name": job,
                     "training.kubeflow.org/replica-type": "worker",
                     "training.kubeflow.org/replica-index": "0"}},
    # a non-controller owner first: the controller names the job
    "b": {"name": f"{job}-worker-1", "uid": ub,
          "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "other",
                               "uid": "0b5e8f7c-aaaa-4bbb-8ccc-000000000002"}, owner]},
    "d": {"name": "debug-shell", "uid": ud},
}
items = [{"metadata": dict(pods[k], namespace=ns), "spec": {"nodeName": node}}
         for k in sys.argv[7:]]
# the same job name in another namespace, on a pod of its own: never this one
items.append({"metadata": {"name": f"{job}-worker-0", "namespace": "team-b",
                           "uid": "7e7e7e7e-0000-4000-8000-000000000000",
                           "ownerReferences": [owner]}, "spec": {"nodeName": node}})
json.dump({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
           "items": items}, sys.stdout)
PY
		fail "cannot write the pod list"
	mv "$T/pods.json.new" "$T/pods.json"
}
# want_rank PID JOB SRC [NS POD]: wait up to 10 s for the rank (of $URL's /api/v1/ranks) to
# have its job id from SRC, then check the id, and the namespace and pod (none when not given)
want_rank() {
	$PY - "$URL" "$@" <<'PY' || fail "rank PID $1"
import json, sys, time, urllib.error, urllib.request
url, pid, job, src = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
r = None
for _ in range(100):
    try:	# 503 until the first publish
        with urllib.request.urlopen(url + "/api/v1/ranks", timeout=5) as f:
            r = next((x for x in json.load(f) if x.get("pid") == pid), None)
    except urllib.error.HTTPError as e:
        assert e.code == 503, f"GET /api/v1/ranks: {e.code}"
    if r and r.get("job_src") == src:
        break
    time.sleep(0.1)
assert r, f"rank PID {pid} is not in /api/v1/ranks"
got = r.get("job_id", r.get("job"))
assert (got, r["job_src"]) == (job, src), f"job {got} from {r['job_src']}, not {job} from {src}"
if len(sys.argv) > 5:
    assert (r.get("namespace"), r.get("pod")) == (sys.argv[5], sys.argv[6]), \
        f"namespace/pod {r.get('namespace')}/{r.get('pod')}, not {sys.argv[5]}/{sys.argv[6]}"
else:
    assert "namespace" not in r and "pod" not in r, f"a pod it should not know: {r}"
print(f"rank PID {pid}: job {got} ({src})" +
      (f", pod {r['namespace']}/{r['pod']}" if len(sys.argv) > 5 else ""))
PY
}

# the stand-in for kubectl proxy: the pod list on /api/v1/pods, 404 elsewhere, each request
# logged; read from disk per request, so the test changes what the next poll sees
cat >"$T/proxy.py" <<'PY'
import http.server, sys
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(f"{d}/requests.log", "a") as f:
            print(self.headers.get("Host"), self.path, file=f)
        if self.path.split("?")[0] != "/api/v1/pods":
            self.send_error(404)
            return
        body = open(f"{d}/pods.json", "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(f"{d}/port.tmp", "w").write(str(s.server_address[1]))
__import__("os").rename(f"{d}/port.tmp", f"{d}/port")
s.serve_forever()
PY
pods a
bg proxy "$PY" "$T/proxy.py" "$T"
for ((i = 0; i < 50; i++)); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || fail "the pod list server did not start: $(cat "$T/proxy.out")"
PPORT=$(cat "$T/port")

# 1) a rank of the PyTorchJob, adopted at the daemon's start (--all)
CG_A=$(pod_cg "$UID_A" systemd)
CG_B=$(pod_cg "$UID_B" cgroupfs)
CG_C=$(pod_cg "$UID_C" systemd)
CG_D=$(pod_cg "$UID_D" cgroupfs)
rank ra "$CG_A" 0 env-run-a
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg rsd env NODE_NAME=$NODE "$RS" daemon --all --cgroup "/$TOPCG" --listen 127.0.0.1:$PORT \
	--lock-file "$T/lock" --k8s-pods "http://127.0.0.1:$PPORT"
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 ||
	fail "the daemon did not start: $(tail -3 "$T/rsd.out")"
grep -q "job ids from the owners of this node's pods" "$T/rsd.out" ||
	fail "the daemon does not say where job ids come from: $(cat "$T/rsd.out")"
wait_lines "$T/rsd.out" "attached to PID $PID_ra:" 1 10 || fail "no attach to rank A"
# rank A's attach waited for a list just before this line (a daemon slow to start under load
# does so seconds after its launch: counting from the launch left rank B within the 5 s once)
start=$SECONDS
want_rank "$PID_ra" "$WANT" k8s "$NS" "$JOB-worker-0"
grep -qx "127.0.0.1:$PPORT /api/v1/pods?fieldSelector=spec.nodeName=$NODE" "$T/requests.log" ||
	fail "the daemon did not ask for this node's pods: $(cat "$T/requests.log")"
http_get "$URL/metrics" | tail -n +2 >"$T/metrics"
promtool check metrics <"$T/metrics" || fail "promtool check metrics failed"
info=$(grep '^rankscope_rank_info{' "$T/metrics")
echo "$info"
for l in "job_id=\"$WANT\"" 'rank="0"' 'job_src="k8s"' "node=\"$NODE\"" "namespace=\"$NS\"" \
	"pod=\"$JOB-worker-0\""; do
	grep -qF "$l" <<<"$info" || fail "rankscope_rank_info lacks $l"
done
grep -q 'team-b' "$T/metrics" && fail "the other namespace's pod of the same name leaked in"
grep -qF 'env-run-a' "$T/metrics" && fail "the environ's job id shows beside the pod's"

# 2) the job's second pod, new since the last list: the daemon asks again (it waits once every
# 5 s at most for a list; rank A's start took that turn)
pods a b d
while ((SECONDS - start < 7)); do sleep 0.5; done
rank rb "$CG_B" 1 env-run-a
wait_lines "$T/rsd.out" "attached to PID $PID_rb:" 1 10 || fail "no attach to rank B"
want_rank "$PID_rb" "$WANT" k8s "$NS" "$JOB-worker-1"
n=$(http_get "$URL/metrics" | grep -c "^rankscope_rank_info{job_id=\"$WANT\"")
[ "$n" = 2 ] || fail "rankscope_rank_info has $n ranks of $WANT, not 2"

# 3) a pod the list lacks, and one with no controller: the environ's id
rank rc "$CG_C" 0 env-run-c
rank rd "$CG_D" 0 env-run-d
wait_lines "$T/rsd.out" "attached to PID $PID_rc:" 1 10 || fail "no attach to rank C"
wait_lines "$T/rsd.out" "attached to PID $PID_rd:" 1 10 || fail "no attach to rank D"
want_rank "$PID_rc" env-run-c torchelastic
want_rank "$PID_rd" env-run-d torchelastic "$NS" debug-shell
grep -q "failed to list pods" "$T/rsd.out" && fail "a warning while the list answered"
kill -TERM "$PID_rsd"
wait_exit "$PID_rsd" 15 || fail "the daemon did not exit on SIGTERM"

# 4) nothing answers at the URL: one warning, and every rank named from its environ
DEAD=$(free_port)
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg rsd2 env NODE_NAME=$NODE "$RS" daemon --all --cgroup "/$TOPCG" --listen 127.0.0.1:$PORT \
	--lock-file "$T/lock" --k8s-pods "http://127.0.0.1:$DEAD"
wait_lines "$T/rsd2.out" 'watching for training processes' 1 30 ||
	fail "the second daemon did not start: $(tail -3 "$T/rsd2.out")"
want_rank "$PID_ra" env-run-a torchelastic
want_rank "$PID_rb" env-run-a torchelastic
want_rank "$PID_rc" env-run-c torchelastic
want_rank "$PID_rd" env-run-d torchelastic
# past the 10 s poll, so more than one poll has failed
sleep 11
grep 'failed to list pods' "$T/rsd2.out"
n=$(grep -c 'failed to list pods' "$T/rsd2.out")
[ "$n" = 1 ] || fail "$n warnings about the pod list, not 1: $(cat "$T/rsd2.out")"
re="failed to list pods from http://127.0.0.1:$DEAD/api/v1/pods?fieldSelector=spec.nodeName=$NODE: "
re+=".*; job ids come from the environ until it answers (is the kubectl proxy running?)"
grep -q "$re" "$T/rsd2.out" || fail "the warning does not name the URL and the fix"
kill -TERM "$PID_rsd2"
wait_exit "$PID_rsd2" 15 || fail "the second daemon did not exit on SIGTERM"
pass "ranks in a PyTorchJob's pods named $WANT (systemd and cgroupfs paths, a pod new since the last list), the others from their environ; an unanswered pod list warned once"
