#!/usr/bin/env bash
# On-demand captures (Chrome trace-event JSON for Perfetto), checked by tests/capture_check.py
# (B/E pairs, flows paired, timestamps monotonic per track, every rank present):
#  - rankscope capture -p on a real OpenMPI job, gzipped, with 99 Hz stack samples symbolized;
#  - POST /api/v1/capture on the daemon, for a real OpenMPI job and a real PyTorch DDP job
#    (its data-loader workers' reads on their own tracks), downloaded with
#    rankscope capture --server and with GET /api/v1/captures/ID;
#  - bad input: seconds=-1, abc, 1e9 and bad ranks get 400; a second capture while one runs
#    gets 409; a cross-site POST (a browser on another site's page) gets 403; path traversal
#    in the id (plain and encoded) gets 400, an unknown id 404;
#  - DELETE /api/v1/captures/ID: a recording capture is cancelled (202, GET then says so,
#    and the next POST is taken at once), a written one is deleted with its file (200, then
#    404); bad ids 400, unknown 404, cross-site 403; Ctrl-C on rankscope capture --server
#    cancels its capture on the daemon and exits 130, leaving no file;
#  - the capture directory keeps --capture-max-count captures;
#  - --auto-capture takes one capture when the straggler's verdict appears; --align step works;
#  - a full disk (a 1 MB tmpfs): the capture fails cleanly, no partial file is left, and the
#    daemon carries on.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
$PY -c 'import torch' 2>/dev/null || skip "python3-torch not installed (make deps)"
CHECK="$PY $TOP/tests/capture_check.py"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
code() { http_get "$@" | sed -n 1p; }

# 1) rankscope capture -p, gzipped
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go" \
	--iters 100000 --compute-us 1000 --slow-rank 1 --slow-us 3000
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start"
touch "$T/go"
"$RS" capture -p "$(ready_pids "$T/job.out")" --seconds 2 -o "$T/cli.json.gz" 2>"$T/cli.err" ||
	fail "rankscope capture -p failed: $(tail -3 "$T/cli.err")"
$CHECK "$T/cli.json.gz" --ranks 0,1 --min-flows 50 --need step,phase,collective,offcpu,verdict,sample ||
	fail "capture -p: bad trace"
$PY - "$T/cli.json.gz" <<'PY' || fail "capture -p: stack samples not symbolized"
import collections, gzip, json, sys
ev = json.loads(gzip.open(sys.argv[1]).read())["traceEvents"]
st = [e["args"]["stack"] for e in ev if e.get("cat") == "sample"]
leaf = collections.Counter(s.split(";")[-1] for s in st)
print(f"{len(st)} stack samples at 99 Hz on 2 ranks over 2 s; leaves: {leaf.most_common(4)}")
assert len(st) >= 100, len(st)
# frames are symbols or module+offset, hardly ever bare addresses (Debian's libraries have no
# frame pointers, so call chains are short: the leaf is what counts)
bare = sum(1 for s in st if s.split(";")[-1].startswith("0x"))
named = [s for s in st if not s.split(";")[-1].startswith("0x") and "+0x" not in s.split(";")[-1]]
print(f"bare leaves {bare}, symbolized leaves {len(named)}")
assert bare <= len(st) // 10, st[:5]
assert len(named) >= 10, st[:5]       # some by name (opal_progress, __clock_gettime, main...)
PY
kill -TERM -- "-$PID_job" 2>/dev/null
wait_exit "$PID_job" 30

# 2) the daemon: an MPI job, started after it
bg rsd "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/daemon.lock" \
	--capture-dir "$T/caps" --capture-max-count 2
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 || fail "daemon did not start"
bg job2 mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go2" \
	--iters 100000 --compute-us 1000 --slow-rank 1 --slow-us 3000
wait_lines "$T/job2.out" '^ready rank=' 2 60 || fail "MPI job 2 did not start"
wait_lines "$T/rsd.out" 'attached to PID' 2 10 || fail "the daemon did not attach"
touch "$T/go2"
sleep 1
for q in "seconds=-1" "seconds=abc" "seconds=1e9" "seconds=0" "seconds=121" "ranks=x" \
	 "ranks=1,,2" "align=now" "format=zip" "bogus=1" "seconds=1&second=2"; do
	[ "$(code "$URL/api/v1/capture?$q" POST)" = 400 ] || fail "POST capture?$q: not 400"
done
r=$(http_get "$URL/api/v1/capture?seconds=2" POST)
[ "$(echo "$r" | sed -n 1p)" = 202 ] || fail "POST capture: $r"
ID=$(echo "$r" | tail -n +2 | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "capture $ID"
[ "$(code "$URL/api/v1/capture?seconds=2" POST)" = 409 ] || fail "a second capture: not 409"
$PY - "$URL" <<'PY' || fail "a cross-site POST was not refused"
import sys, urllib.request, urllib.error
port = sys.argv[1].rsplit(":", 1)[1]
for hdr in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
            {"Host": f"evil.example:{port}"}):   # DNS rebinding: another name, our address
    try:
        urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/api/v1/capture?seconds=1",
                                                      method="POST", headers=hdr), timeout=5)
        sys.exit(f"{hdr}: accepted")
    except urllib.error.HTTPError as e:
        print(f"POST with {hdr}: {e.code} {e.read().decode().strip()}")
        assert e.code == 403, e.code
PY
[ "$(code "$URL/api/v1/captures/$ID")" = 202 ] || fail "GET while recording: not 202"
$PY - $PORT <<'PY' || fail "path traversal"
import socket, sys
port = int(sys.argv[1])
for path in ("/api/v1/captures/../../etc/passwd", "/api/v1/captures/..%2f..%2fetc%2fpasswd",
             "/api/v1/captures/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/api/v1/captures/%252e%252e%252f",
             "/api/v1/captures/", "/api/v1/captures/.." , "/api/v1/captures/x/../../../etc/passwd"):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    status = data.split(b"\r\n", 1)[0].decode()
    print(f"{path}: {status}")
    assert b"root:" not in data, path
    assert status.split()[1] in ("400", "404"), (path, status)
PY
[ "$(code "$URL/api/v1/captures/20260101-000000-00000000")" = 404 ] || fail "unknown id: not 404"
for _ in $(seq 100); do [ "$(code "$URL/api/v1/captures/$ID")" = 200 ] && break; sleep 0.2; done
http_get "$URL/api/v1/captures/$ID" | tail -n +2 >"$T/mpi.json"
$CHECK "$T/mpi.json" --ranks 0,1 --min-flows 50 --need step,phase,collective,verdict ||
	fail "daemon capture (MPI): bad trace"
ls -l "$T/caps"

# 2b) cancel: DELETE, and Ctrl-C on rankscope capture --server
r=$(http_get "$URL/api/v1/capture?seconds=30" POST)
[ "$(echo "$r" | sed -n 1p)" = 202 ] || fail "POST capture (to cancel): $r"
ID2=$(echo "$r" | tail -n +2 | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
[ "$(code "$URL/api/v1/captures/x" DELETE)" = 400 ] || fail "DELETE a bad id: not 400"
[ "$(code "$URL/api/v1/captures/20260101-000000-00000000" DELETE)" = 404 ] ||
	fail "DELETE an unknown id: not 404"
$PY - "$URL" "$ID2" <<'PY' || fail "a cross-site DELETE was not refused"
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(urllib.request.Request(f"{sys.argv[1]}/api/v1/captures/{sys.argv[2]}",
                           method="DELETE", headers={"Origin": "http://evil.example"}), timeout=5)
    sys.exit("accepted")
except urllib.error.HTTPError as e:
    assert e.code == 403, e.code
PY
r=$(http_get "$URL/api/v1/captures/$ID2" DELETE)
[ "$(echo "$r" | sed -n 1p)" = 202 ] || fail "DELETE a recording capture: $r"
echo "$r" | grep -q '"state":"cancelled"' || fail "DELETE a recording capture: $r"
for i in $(seq 20); do
	r=$(http_get "$URL/api/v1/capture?seconds=1" POST)
	[ "$(echo "$r" | sed -n 1p)" = 202 ] && break
	sleep 0.1
done
[ "$(echo "$r" | sed -n 1p)" = 202 ] || fail "POST after a cancel: $r"
echo "a new capture taken $((i / 10)).$((i % 10)) s after the cancel"
ID3=$(echo "$r" | tail -n +2 | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
r=$(http_get "$URL/api/v1/captures/$ID2")
[ "$(echo "$r" | sed -n 1p)" = 500 ] && echo "$r" | grep -q cancelled ||
	fail "GET a cancelled capture: $r"
for _ in $(seq 100); do [ "$(code "$URL/api/v1/captures/$ID3")" = 200 ] && break; sleep 0.2; done
[ "$(code "$URL/api/v1/captures/$ID3")" = 200 ] || fail "the capture after the cancel was not written"
ls "$T/caps" | grep -q "$ID2" && fail "a cancelled capture left a file: $(ls "$T/caps")"
"$RS" capture --server "$URL" --seconds 30 -o "$T/int.json" 2>"$T/int.err" &
CPID=$!
wait_lines "$T/int.err" 'recording for 30 s' 1 10 || fail "capture --server: $(cat "$T/int.err")"
kill -INT $CPID
wait $CPID
rc=$?
cat "$T/int.err"
[ $rc = 130 ] || fail "capture --server after Ctrl-C: exit $rc, want 130"
grep -q "cancelled on" "$T/int.err" || fail "capture --server did not cancel"
[ ! -e "$T/int.json" ] || fail "capture --server left $T/int.json"
r=$(http_get "$URL/api/v1/capture?seconds=1" POST)
for i in $(seq 20); do
	[ "$(echo "$r" | sed -n 1p)" = 202 ] && break
	sleep 0.1
	r=$(http_get "$URL/api/v1/capture?seconds=1" POST)
done
[ "$(echo "$r" | sed -n 1p)" = 202 ] || fail "the daemon still records after Ctrl-C: $r"
ID4=$(echo "$r" | tail -n +2 | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
[ "$(code "$URL/api/v1/captures/$ID4" DELETE)" = 202 ] || fail "DELETE $ID4"

# 3) a DDP job, captured with rankscope capture --server
bg ddp env ZOO_DDP_RUN_ID=ddp-capture-$$ "$ZOO_DDP" 2 --go-file "$T/go-ddp" \
	--steps 400 --data-dir "$T/data"
wait_lines "$T/ddp.out" '^ready rank=' 2 120 || fail "DDP job did not start"
touch "$T/go-ddp"
sleep 2
"$RS" capture --server "$URL" --seconds 3 --align step -o "$T/ddp.json.gz" 2>"$T/ddp.err" ||
	fail "rankscope capture --server: $(tail -3 "$T/ddp.err")"
[ "$(head -c2 "$T/ddp.json.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "--server -o X.gz: not gzipped"
$CHECK "$T/ddp.json.gz" --ranks 0,1 --min-flows 10 --need step,collective,syscall,sample ||
	fail "daemon capture (DDP): bad trace"
$PY - "$T/ddp.json.gz" <<'PY' || fail "DDP capture: no data-loader worker track"
import gzip, json, sys
ev = json.loads(gzip.open(sys.argv[1]).read())["traceEvents"]
workers = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"
           and e["args"]["name"].startswith("worker ")}
reads = [e for e in ev if e.get("cat") == "syscall" and (e["pid"], e["tid"]) in workers]
print(f"data-loader worker tracks: {len(workers)}, their syscalls: {len(reads)}")
assert workers and reads, (len(workers), len(reads))
PY
# three captures written now (2, 2b, 3): the directory keeps the newest 2
n=$(ls "$T/caps" | grep -cE '\.json(\.gz)?$')
[ "$n" = 2 ] || fail "the capture directory holds $n captures, want 2: $(ls "$T/caps")"
# a written one deleted: 200, its file gone, then 404
ID5=$(sed -n 's/.*capture: \([0-9a-f-]*\) written to.*/\1/p' "$T/ddp.err")
[ -n "$ID5" ] || fail "no capture id in: $(cat "$T/ddp.err")"
r=$(http_get "$URL/api/v1/captures/$ID5" DELETE)
[ "$(echo "$r" | sed -n 1p)" = 200 ] && echo "$r" | grep -q '"state":"deleted"' ||
	fail "DELETE a written capture: $r"
ls "$T/caps" | grep -q "$ID5" && fail "DELETE left the file: $(ls "$T/caps")"
[ "$(code "$URL/api/v1/captures/$ID5")" = 404 ] || fail "GET a deleted capture: not 404"
[ "$(code "$URL/api/v1/captures/$ID5" DELETE)" = 404 ] || fail "DELETE twice: not 404"
kill -TERM "$PID_rsd"
wait_exit "$PID_rsd" 60 || fail "daemon did not exit"

# 4) --auto-capture: the straggler's verdict starts one capture by itself
bg rsa "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/daemon3.lock" --all \
	--capture-dir "$T/auto" --auto-capture
wait_lines "$T/rsa.out" 'capture .* started by --auto-capture' 1 30 ||
	fail "no automatic capture: $(grep -v libbpf "$T/rsa.out" | tail -3)"
wait_lines "$T/rsa.out" 'capture .* written to' 1 30 || fail "the automatic capture was not written"
grep -E 'auto-capture|written to' "$T/rsa.out"
$CHECK "$T"/auto/*.json --ranks 0,1 --need step,collective,verdict || fail "automatic capture: bad trace"
kill -TERM "$PID_rsa"
wait_exit "$PID_rsa" 60 || fail "daemon 3 did not exit"

# 5) a full disk: a 128 KiB tmpfs (a 3 s capture of the two ranks is ~0.3-0.6 MB, less on a
# loaded machine: 1 MB was not always full)
mkdir -p "$T/small"
mount -t tmpfs -o size=128k tmpfs "$T/small" || skip "cannot mount a tmpfs for the full-disk case"
trap 'umount "$T/small" 2>/dev/null; cleanup' EXIT
bg rsd2 "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/daemon2.lock" --all \
	--capture-dir "$T/small/caps"
wait_lines "$T/rsd2.out" 'attached to PID' 2 30 || fail "daemon 2 did not attach"
r=$(http_get "$URL/api/v1/capture?seconds=3" POST)
ID=$(echo "$r" | tail -n +2 | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])') ||
	fail "POST capture (full disk): $r"
for _ in $(seq 100); do
	c=$(code "$URL/api/v1/captures/$ID")
	[ "$c" != 202 ] && break
	sleep 0.2
done
r=$(http_get "$URL/api/v1/captures/$ID")
echo "full disk: $(echo "$r" | head -2 | tr '\n' ' ')"
[ "$(echo "$r" | sed -n 1p)" = 500 ] || fail "full disk: not 500"
echo "$r" | grep -q "No space left on device" || fail "full disk: no reason given"
[ -z "$(ls -A "$T/small/caps")" ] || fail "a partial file was left: $(ls -la "$T/small/caps")"
[ "$(code "$URL/healthz")" = 200 ] && [ "$(code "$URL/metrics")" = 200 ] ||
	fail "the daemon did not carry on after the failed capture"
kill -TERM "$PID_rsd2"
wait_exit "$PID_rsd2" 60 || fail "daemon 2 did not exit"
umount "$T/small"
pass "captures: CLI and daemon, MPI and DDP, valid traces; bad input refused; limits; full disk"
