#!/usr/bin/env bash
# HTTP on a real 2-rank OpenMPI straggler job, found by `rankscope daemon`:
#  - /metrics passes `promtool check metrics` and names the straggler;
#  - /healthz, /api/v1/ranks, /api/v1/steps?rank=R&last=N (and ?since=CURSOR) and /api/v1/diagnosis (one verdict per job) answer JSON;
#  - bad input: unknown path 404, POST 405, bad query 400, a huge header is refused, malformed
#    request lines and URLs get no 200, and an idle half-sent request is closed at the timeout
#    while /metrics keeps answering;
#  - a real Prometheus on loopback scrapes it with deploy/prometheus/rules.yaml loaded, and the
#    persistent-straggler alert reaches pending or firing.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
command -v promtool >/dev/null || skip "promtool not installed (make deps installs prometheus)"
PORT=$(free_port)
PPORT=$(free_port)
[ "$PPORT" != "$PORT" ] || PPORT=$(free_port)
URL=http://127.0.0.1:$PORT
get() { http_get "$@"; }

SLOW=$((RANDOM % 2))
# the daemon, as in production: it finds the job, started after it, by itself
bg rs "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/daemon.lock"
wait_lines "$T/rs.out" 'serving /metrics' 1 30 || fail "rankscope did not serve: $(tail -3 "$T/rs.out")"
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go" \
	--iters 100000 --compute-us 1000 --slow-rank $SLOW --slow-us 4000
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start"
wait_lines "$T/rs.out" 'attached to PID' 2 10 || fail "the daemon did not attach to the job"
touch "$T/go"
sleep 3

get $URL/metrics >"$T/metrics.raw"
[ "$(head -1 "$T/metrics.raw")" = 200 ] || fail "/metrics: $(head -3 "$T/metrics.raw")"
tail -n +2 "$T/metrics.raw" >"$T/metrics"
promtool check metrics <"$T/metrics" || fail "promtool check metrics failed"
grep -q "^rankscope_straggler_verdict{.*class=\"compute\",rank=\"$SLOW\",persistent=\"true\"} 1" \
	"$T/metrics" || fail "no persistent compute verdict on rank $SLOW in /metrics"
grep -q '^train_step_seconds_count{job_id=".*",rank="0"} [1-9]' "$T/metrics" || fail "no steps"
grep -q '^rankscope_collective_duration_seconds_count{job_id=".*",rank="0",lib="mpi",op="allreduce",size_bucket="<64KB"} [1-9]' \
	"$T/metrics" || fail "no MPI allreduce duration histogram"
grep -q '^nccl_collective_duration_seconds' "$T/metrics" && fail "NCCL series for an MPI job"
# rankscope's own CPU by thread: the loop did the work; each kind is exported, none negative
for th in loop http capture; do
	grep -qE "^rankscope_cpu_seconds_total\{thread=\"$th\"\} [0-9.e+-]+$" "$T/metrics" ||
		fail "no rankscope_cpu_seconds_total for thread $th"
done
grep -qE '^rankscope_cpu_seconds_total\{thread="loop"\} (0\.0*[1-9]|[1-9])' "$T/metrics" ||
	fail "the loop thread's CPU is zero: $(grep rankscope_cpu_seconds_total "$T/metrics")"
# /metrics is made per scrape (lazy): a later scrape is a fresh copy, not the first one again
sleep 1.2
get $URL/metrics | grep '^rankscope_cpu_seconds_total{thread="loop"}' >"$T/cpu2"
[ -s "$T/cpu2" ] || fail "no loop CPU series in a second scrape"
cmp -s "$T/cpu2" <(grep '^rankscope_cpu_seconds_total{thread="loop"}' "$T/metrics") &&
	fail "a second scrape 1.2 s later served the same copy: $(cat "$T/cpu2")"
code() { get "$@" | sed -n 1p; }	# the status alone (reads it all: no broken pipe)
[ "$(code $URL/healthz)" = 200 ] || fail "/healthz"
# the daemon watches the whole node: scope the API checks to this test's job
JOB=$(get $URL/api/v1/ranks | tail -n +2 | $PY -c '
import json, sys
pids = {int(p) for p in sys.argv[1].split(",")}
r = [x for x in json.load(sys.stdin) if x["type"] == "rank" and x["pid"] in pids]
assert len(r) == 2 and r[0]["job"] == r[1]["job"], r
print(r[0]["job"])' "$(ready_pids "$T/job.out")") || fail "/api/v1/ranks"
get "$URL/api/v1/steps?job=$JOB&rank=$SLOW&last=3" | tail -n +2 | $PY -c '
import json, sys; s = json.load(sys.stdin)
assert len(s) == 3 and all(x["type"] == "step" and x["rank"] == int(sys.argv[1]) for x in s), s
assert s[0]["step"] > s[1]["step"] > s[2]["step"], "newest first"' $SLOW || fail "/api/v1/steps"
# a puller's cursor: every line once, oldest first, and the next pull only newer ones
C=$(get "$URL/api/v1/steps?since=0&job=$JOB" | tail -n +2 | $PY -c '
import json, sys; a = json.load(sys.stdin)
k = [(x["rank"], x["step"]) for x in a["steps"]]
assert a["lost"] == 0 and len(k) >= 4 and len(set(k)) == len(k), a
for r in {x[0] for x in k}:
    mine = [x[1] for x in k if x[0] == r]
    assert mine == sorted(mine), mine
print(a["cursor"], max(x[1] for x in k))') || fail "/api/v1/steps?since=0"
sleep 1
get "$URL/api/v1/steps?since=${C% *}&job=$JOB" | tail -n +2 | $PY -c '
import json, sys; a = json.load(sys.stdin)
assert a["cursor"] >= int(sys.argv[1]) and all(x["step"] > int(sys.argv[2]) - 2 for x in a["steps"]), a
' ${C% *} ${C#* } || fail "/api/v1/steps?since=CURSOR"
get $URL/api/v1/diagnosis | tail -n +2 | $PY -c '
import json, sys; a = json.load(sys.stdin)
mine = [v for v in a if v["job"] == sys.argv[2]]
assert isinstance(a, list) and len(mine) == 1, a   # one verdict per job
d = mine[0]
assert d["type"] == "verdict" and d["class"] == "compute" and d["rank"] == int(sys.argv[1]), d' \
	$SLOW "$JOB" || fail "/api/v1/diagnosis"
[ "$(code $URL/nope)" = 404 ] || fail "unknown path not 404"
[ "$(code $URL/metrics POST)" = 405 ] || fail "POST not 405"
[ "$(code "$URL/api/v1/steps?last=abc")" = 400 ] || fail "bad query not 400"
$PY - $PORT <<'PY' || fail "bad input over raw sockets"
import socket, sys, time
port = int(sys.argv[1])
# a 100 KiB header: refused (431 or 413) or the connection closed, never served
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
try:
    head = s.recv(64)
except (ConnectionResetError, BrokenPipeError):
    head = b""
assert not head.startswith(b"HTTP/1.1 200"), head
s.close()
# slowloris: a request that never ends is closed at the timeout; others are served meanwhile
idle = socket.create_connection(("127.0.0.1", port), timeout=20)
idle.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
t0 = time.time()
ok = socket.create_connection(("127.0.0.1", port), timeout=5)
ok.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
assert ok.recv(64).startswith(b"HTTP/1.1 200"), "healthz blocked by an idle client"
closed = idle.recv(64)
waited = time.time() - t0
assert waited < 15, f"idle connection open for {waited:.1f} s"
print(f"idle connection closed after {waited:.1f} s")
# malformed request lines and URLs: an error or a closed connection, never a 200, and the
# server still answers afterwards
for req in (b"GARBAGE\r\n\r\n", b"GET metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            b"GET /metrics%zz%00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            b"GET /api/v1/steps?rank=%ff%fe&last= HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            b"GET /../../etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            b"GET /metrics HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n"):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(req)
    try:
        head = s.recv(64)
    except (ConnectionResetError, BrokenPipeError):
        head = b""
    s.close()
    assert not head.startswith(b"HTTP/1.1 200"), (req, head)
    line, status = req.split(b"\r")[0][:48], head.split(b"\r")[0].decode()
    print(f"{line!r}: {status or 'closed'}")
ok = socket.create_connection(("127.0.0.1", port), timeout=5)
ok.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
assert ok.recv(64).startswith(b"HTTP/1.1 200"), "healthz after malformed requests"
PY

# a real Prometheus on loopback, scraping every second, with the shipped rules
cat >"$T/prom.yml" <<EOF2
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $TOP/deploy/prometheus/rules.yaml
scrape_configs:
  - job_name: rankscope
    static_configs:
      - targets: ['127.0.0.1:$PORT']
EOF2
bg prom prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address=127.0.0.1:$PPORT
state=""
for _ in $(seq 60); do
	state=$(get "http://127.0.0.1:$PPORT/api/v1/alerts" 2>/dev/null | tail -n +2 | $PY -c '
import json, sys
try:
    a = json.load(sys.stdin)["data"]["alerts"]
except Exception:
    a = []
print(" ".join(sorted({x["state"] for x in a if x["labels"]["alertname"] == "RankscopePersistentStraggler"
                       and x["labels"].get("rank") == sys.argv[1]})))' $SLOW)
	case "$state" in *pending*|*firing*) break ;; esac
	sleep 1
done
case "$state" in
*pending*|*firing*) echo "Prometheus: RankscopePersistentStraggler on rank $SLOW is $state" ;;
*) fail "Prometheus never saw the straggler alert (state '$state'): $(tail -5 "$T/prom.out")" ;;
esac
kill -TERM "$PID_rs"
wait_exit "$PID_rs" 60 || fail "rankscope did not exit on SIGTERM"
grep -q "got Terminated, detaching" "$T/rs.out" || fail "SIGTERM did not go through the clean exit"
pass "/metrics passes promtool, the API answers, bad input is refused, Prometheus alerts"
