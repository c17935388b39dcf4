#!/usr/bin/env bash
# The daemon at the node's limits, alive and serving throughout:
#  1. fds: under an open file limit 56 above what it holds idle, 50 ranks come (each probed
#     rank holds link fds): it attaches what fits, refuses the rest with the named result
#     fd_limit (rankscope_attach_total) and one line that says to raise the limit, and /healthz
#     and /metrics still answer while it is at the limit;
#  2. a flood: 5,000 connections at once from 127.0.0.1: the limits hold (the daemon holds no
#     more than 64 more fds), /healthz from 127.0.0.2 still answers, and tracing goes on
#     (records of a real 2-rank MPI job keep coming in);
#  3. SIGPIPE: a client that reads 100 bytes of a capture's download through a 4 KiB receive
#     buffer and resets the connection: the daemon lives on and serves the whole file after.
# TEST DOUBLE for the ranks of part 1: short_rank maps the NCCL double (NCCL needs a GPU).
. "$(dirname "$0")/../lib.sh"
need_root
[ -x "$FIX/short_rank" ] || skip "no NCCL double (no CUDA toolkit nccl.h)"
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
command -v prlimit >/dev/null || fail "prlimit missing: run make deps"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
metric() {
	http_get $URL/metrics | tail -n +2 | grep -E "$1" | awk '{s += $NF} END {print s + 0}'
}
up() {
	local i
	for i in $(seq 100); do
		[ "$(http_get $URL/healthz 2>/dev/null | sed -n 1p)" = 200 ] && return 0
		sleep 0.1
	done
	fail "the daemon does not answer /healthz: $(tail -3 "$T/$1.out")"
}

# 1) fds: what it holds idle, then a limit 56 above (32 of them the reserve)
bg rsd0 "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/lock0"
up rsd0
sleep 1
IDLE=$(ls /proc/$PID_rsd0/fd | wc -l)
kill -TERM "$PID_rsd0"
wait_exit "$PID_rsd0" 20 || fail "daemon 0 did not exit"
LIMIT=$((IDLE + 56))
bg rsd prlimit --nofile=$LIMIT:$LIMIT "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/lock" \
	--capture-dir "$T/caps"
up rsd
for r in $(seq 0 49); do
	RANK=$r WORLD_SIZE=50 TORCHELASTIC_RUN_ID=fd-job setsid "$FIX/short_rank" 60000 >/dev/null 2>&1 &
	BG_PIDS+=($!)
	RANKS+=" $!"
done
for i in $(seq 100); do
	[ "$(metric '^rankscope_attach_total\{result="fd_limit"\}')" -gt 0 ] && break
	sleep 0.1
done
sleep 2
ATT=$(metric '^rankscope_attach_total\{result="attached"\}')
FDL=$(metric '^rankscope_attach_total\{result="fd_limit"\}')
OPEN=$(ls /proc/$PID_rsd/fd | wc -l)
echo "limit $LIMIT (idle $IDLE): $ATT ranks attached, $FDL refused as fd_limit, $OPEN fds open"
[ "$ATT" -gt 0 ] && [ "$FDL" -gt 0 ] || fail "attached $ATT, fd_limit $FDL"
[ $((ATT + FDL)) -ge 50 ] || fail "only $((ATT + FDL)) of 50 ranks have a result"
[ "$OPEN" -lt "$LIMIT" ] || fail "$OPEN fds open at a limit of $LIMIT"
grep -q 'fds left under the open file limit .*raise it (ulimit -n' "$T/rsd.out" ||
	fail "no line says to raise the limit: $(tail -3 "$T/rsd.out")"
[ "$(http_get $URL/healthz | sed -n 1p)" = 200 ] || fail "/healthz at the fd limit"
[ "$(http_get $URL/api/v1/ranks | sed -n 1p)" = 200 ] || fail "/api/v1/ranks at the fd limit"
{ kill -KILL $RANKS; wait $RANKS; } 2>/dev/null

# 2) a flood from one address, with a real job traced meanwhile
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go" \
	--iters 100000 --compute-us 500
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start"
wait_lines "$T/rsd.out" "job 'ppid:|attached to PID .* of job '(mpi|slurm):" 2 20 >/dev/null
touch "$T/go"
sleep 2
C0=$(metric '^rankscope_events_received_total\{family="collectives"\}')
FD_PRE=$(ls /proc/$PID_rsd/fd | wc -l)
$PY - "$PORT" "$PID_rsd" "$FD_PRE" <<'PY' || fail "flood"
import os, resource, socket, sys, time, urllib.request
port, daemon, fd_pre = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
socks, refused = [], 0
for i in range(5000):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(('127.0.0.1', port))
    except BlockingIOError:
        pass
    except OSError:
        refused += 1
        s.close()
        continue
    socks.append(s)
time.sleep(1)
# what the daemon holds: its connection limit (64), not the flood's 5000
fds = len(os.listdir(f'/proc/{daemon}/fd'))
print(f'daemon fds: {fd_pre} before the flood, {fds} during it')
assert fds <= fd_pre + 64, (fd_pre, fds)
# another address on loopback
t0 = time.time()
c = socket.create_connection(('127.0.0.1', port), timeout=10, source_address=('127.0.0.2', 0))
c.sendall(f'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n'.encode())
reply = b''
while True:
    b = c.recv(4096)
    if not b:
        break
    reply += b
status = reply.split(b'\r\n', 1)[0].decode()
print(f'5000 connections from 127.0.0.1 ({refused} refused at connect); /healthz from '
      f'127.0.0.2: {status} in {1e3 * (time.time() - t0):.0f} ms')
assert status.endswith('200 OK'), reply[:200]
for s in socks:
    s.close()
PY
sleep 2
C1=$(metric '^rankscope_events_received_total\{family="collectives"\}')
echo "collective records received: $C0 before the flood, $C1 after"
[ "$C1" -gt "$C0" ] || fail "tracing stopped during the flood"

# 3) a download cut short
r=$(http_get "$URL/api/v1/capture?seconds=1" POST)
[ "$(echo "$r" | sed -n 1p)" = 202 ] || fail "POST capture: $r"
ID=$(echo "$r" | tail -n +2 | $PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
for i in $(seq 100); do
	[ "$(http_get $URL/api/v1/captures/$ID | sed -n 1p)" = 200 ] && break
	sleep 0.2
done
$PY - "$PORT" "$ID" <<'PY' || fail "cut download"
import socket, struct, sys
port, cid = int(sys.argv[1]), sys.argv[2]
for _ in range(3):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(('127.0.0.1', port))
    s.sendall(f'GET /api/v1/captures/{cid} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n'.encode())
    got = s.recv(100)
    assert got.startswith(b'HTTP/1.1 200'), got
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    s.close()    # a reset while the daemon still writes
print('3 downloads cut after 100 bytes')
PY
sleep 1
kill -0 "$PID_rsd" 2>/dev/null || fail "the daemon died after a cut download: $(tail -3 "$T/rsd.out")"
SIZE=$(http_get "$URL/api/v1/captures/$ID" | tail -n +2 | wc -c)
echo "the whole capture after: $SIZE bytes"
[ "$SIZE" -gt 1000 ] || fail "capture download after the cut ones: $SIZE bytes"
pass "fd limit: fd_limit results and /healthz served; 5000-connection flood: limits held, tracing on; cut downloads survived"
