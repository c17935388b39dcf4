#!/usr/bin/env bash
# GPU timing through the real daemon. CUPTI and the CUDA driver are TEST DOUBLES
# (tests/fixtures/cupti_double: no GPU here); librankscope_cupti.so and the daemon are real.
#  - a rank (RANK in its environ) running the injection library is asked for data, and its
#    kernels (NCCL vs compute), copies and state reach /metrics and /api/v1/ranks;
#  - a process that is not a rank is left dormant, and the daemon says so;
#  - a rank whose CUPTI has another subscriber reports it and sends nothing;
#  - the library reconnects after a daemon restart and records again.
. "$(dirname "$0")/../lib.sh"
need_root
command -v promtool >/dev/null || skip "promtool not installed (make deps installs prometheus)"
LIB=$TOP/build/librankscope_cupti.so
DBL=$FIX/cupti_double
[ -e /usr/local/cuda/include/cupti.h ] ||
	skip "no CUPTI headers (/usr/local/cuda/include/cupti.h): the library and its doubles need them"
[ -f "$LIB" ] && [ -f "$DBL/libcupti.so" ] && [ -x "$FIX/cupti_host" ] ||
	fail "the CUPTI library or its doubles were not built: make all fixtures"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
SOCK=$T/cupti/cupti.sock	# the daemon's default: cupti/ next to its lock file
host() {	# host NAME ENV... -- ARGS...: cupti_host on the doubles, in the background
	local name=$1
	shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	bg "$name" env "${envs[@]}" LD_LIBRARY_PATH="$DBL" RANKSCOPE_CUPTI_SOCKET="$SOCK" \
		"$FIX/cupti_host" --quiet "$@" "$LIB"
}

bg rsd "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/daemon.lock"
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 || fail "daemon did not start"
grep -q "GPU timing from librankscope_cupti.so on $SOCK" "$T/rsd.out" || fail "no CUPTI socket"

STEPS=2500
host gpu RANK=0 WORLD_SIZE=1 TORCHELASTIC_RUN_ID=gpu-$$ -- --steps $STEPS --kernels 3 \
	--kernel-us 200 --nccl-us 500 --idle-us 1500 --linger-ms 8000 --wait-enable-ms 15000
host idle -- --steps 100000 --idle-us 1000 --linger-ms 0
host other RANK=0 WORLD_SIZE=1 TORCHELASTIC_RUN_ID=other-$$ RSDOUBLE_OTHER_SUBSCRIBER=1 -- \
	--steps 100000 --idle-us 1000 --linger-ms 0
wait_lines "$T/rsd.out" "rank 0 of job 'gpu-$$'.*GPU timing: recording" 1 20 ||
	fail "the rank's library was not enabled: $(grep -v libbpf "$T/rsd.out" | tail -5)"
wait_lines "$T/rsd.out" "PID $PID_idle \(not a rank\): GPU timing: dormant" 1 20 ||
	fail "no dormant report for a non-rank: $(grep -v libbpf "$T/rsd.out" | tail -5)"
wait_lines "$T/rsd.out" "job 'other-$$'.*another CUPTI subscriber" 1 20 ||
	fail "no other-subscriber report: $(grep -v libbpf "$T/rsd.out" | tail -5)"
[ "$(grep -c "PID $PID_idle (not a rank)" "$T/rsd.out")" = 1 ] || fail "a dormant library reported more than once"
wait_lines "$T/gpu.out" '^done steps=' 1 120 || fail "the GPU host did not finish"
sleep 2		# the last flush and status

http_get $URL/metrics | tail -n +2 >"$T/metrics"
promtool check metrics <"$T/metrics" || fail "promtool check metrics failed"
grep -E "^rankscope_(gpu_|cupti_)" "$T/metrics" | grep -v '_bucket' | head -30
$PY - "$T/metrics" "gpu-$$" "other-$$" $STEPS <<'PY' || fail "GPU series"
import re, sys
text, job, other, steps = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3], int(sys.argv[4])
def val(name, **lab):
    for line in text.splitlines():
        m = re.match(r'(\w+)\{(.*)\} (\S+)$', line)
        if not m or m[1] != name:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m[2]))
        if all(labels.get(k) == v for k, v in lab.items()):
            return float(m[3])
    return None
nccl = val("rankscope_gpu_kernels_total", job_id=job, kind="nccl")
comp = val("rankscope_gpu_kernels_total", job_id=job, kind="compute")
nccl_s = val("rankscope_gpu_kernel_seconds_total", job_id=job, kind="nccl")
comp_s = val("rankscope_gpu_kernel_seconds_total", job_id=job, kind="compute")
htod = val("rankscope_gpu_memcpy_bytes_total", job_id=job, direction="htod")
print(f"kernels nccl={nccl} compute={comp} seconds nccl={nccl_s} compute={comp_s} htod={htod}")
assert nccl == steps and comp == 3 * steps, (nccl, comp)            # every one, classified
assert abs(nccl_s - steps * 500e-6) < steps * 500e-6 * 0.1, nccl_s   # durations kept
assert abs(comp_s - 3 * steps * 200e-6) < 3 * steps * 200e-6 * 0.1, comp_s
assert htod and htod > 0, htod
assert val("rankscope_gpu_timing", job_id=job, state="active") == 1
assert val("rankscope_gpu_timing", job_id=other, state="other_subscriber") == 1
assert val("rankscope_cupti_records_total", result="received") >= 5 * steps
assert val("rankscope_cupti_records_total", result="invalid") == 0
assert val("rankscope_cupti_connections", state="ready") >= 1        # the non-rank, dormant
PY
http_get $URL/api/v1/ranks | tail -n +2 | $PY -c '
import json, sys
r = {x["job"]: x for x in json.load(sys.stdin)}
g = r[sys.argv[1]]["gpu"]
assert g["state"] == "active" and g["detail"] == "recording", g
assert r[sys.argv[2]]["gpu"]["detail"] == "GPU timing unavailable: another CUPTI subscriber", r' \
	"gpu-$$" "other-$$" || fail "/api/v1/ranks gpu"

# a client that is no rank (this shell's python) sends names and records as a library would:
# the daemon keeps none of them (counted invalid)
$PY - "$SOCK" <<'PY' || fail "a non-rank client could not talk to the socket"
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
MAGIC, VER = 0x31435352, 1
def hdr(t, n): return struct.pack("<IHHII", MAGIC, VER, t, n, 0)
for i in range(1, 201):
    name = b"ncclDevKernel_Forged_%d" % i
    s.send(hdr(2, 24 + len(name)) + struct.pack("<II", i, len(name)) + name)
rec = struct.pack("<BBHIQQQII", 1, 0, 0, 7, 1000, 2000, 1, 0, 0)
s.send(hdr(3, 16 + 16 + 40) + struct.pack("<IIQ", 1, 0, 0) + rec)
s.close()
PY
sleep 1
bad=$(http_get $URL/metrics | tail -n +2 | grep '^rankscope_cupti_records_total{result="invalid"}' | awk '{print $2}')
echo "a non-rank client's names and records: ${bad:-0} refused"
[ "${bad:-0}" -ge 201 ] 2>/dev/null ||
	fail "names and records of a non-rank client were taken (invalid ${bad:-0}, want >= 201)"

# a flood: a client that is no rank holds every connection the daemon takes (1024); a rank's
# library that connects then still gets in (one of the flood's is closed to make room) and records
ulimit -n 4096 2>/dev/null
cat >"$T/flood.py" <<'PY'
import select, socket, sys, time
# holds as many connections as the daemon keeps, and replaces each one it closes at once: a
# slot that frees goes to the flood, never to a library that retries with a backoff
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.setblocking(False)
    try:
        s.connect(sys.argv[1])
    except BlockingIOError:
        pass
    return s
live = {}
for _ in range(1100):
    s = conn()
    live[s.fileno()] = s
open(sys.argv[2], "w").write(f"{len(live)}\n")
p = select.poll()
for fd in live:
    p.register(fd, select.POLLIN)
end = time.time() + 120
while time.time() < end:
    for fd, ev in p.poll(100):
        s = live.pop(fd)
        p.unregister(fd)
        s.close()
        s = conn()
        live[s.fileno()] = s
        p.register(s.fileno(), select.POLLIN)
    time.sleep(0.01)	# still far quicker than the library's reconnect backoff (0.1-5 s)
PY
bg flood $PY "$T/flood.py" "$SOCK" "$T/flood.ready"
for _ in $(seq 100); do [ -s "$T/flood.ready" ] && break; sleep 0.1; done
[ -s "$T/flood.ready" ] || fail "the flood client did not connect: $(tail -3 "$T/flood.out")"
sleep 1
full=$(http_get $URL/metrics | tail -n +2 | grep '^rankscope_cupti_connections' | awk '{s += $2} END {print s + 0}')
echo "flood: $(cat "$T/flood.ready") connects, the daemon holds ${full} connections"
[ "$full" -ge 1024 ] || fail "the flood did not fill the daemon's connections (${full})"
host gpu3 RANK=0 WORLD_SIZE=1 TORCHELASTIC_RUN_ID=gpu3-$$ -- --steps 100000 --idle-us 2000 \
	--linger-ms 0
wait_lines "$T/rsd.out" "job 'gpu3-$$'.*GPU timing: recording" 1 30 ||
	fail "a rank's library was kept out by a flood of non-rank connections: $(grep -v libbpf "$T/rsd.out" | tail -3)"
kill -TERM "$PID_gpu3" "$PID_flood" 2>/dev/null
wait_exit "$PID_gpu3" 30

# the daemon restarts: the library reconnects (backoff up to 5 s) and records again
host gpu2 RANK=0 WORLD_SIZE=1 TORCHELASTIC_RUN_ID=gpu2-$$ -- --steps 100000 --idle-us 2000 \
	--linger-ms 0
wait_lines "$T/rsd.out" "job 'gpu2-$$'.*GPU timing: recording" 1 20 || fail "gpu2 not enabled"
kill -TERM "$PID_rsd"
wait_exit "$PID_rsd" 60 || fail "daemon did not exit"
bg rsd2 "$RS" daemon --all --listen 127.0.0.1:$PORT --lock-file "$T/daemon.lock"
wait_lines "$T/rsd2.out" "job 'gpu2-$$'.*GPU timing: recording" 1 30 ||
	fail "the library did not come back after the restart: $(grep -v libbpf "$T/rsd2.out" | tail -5)"
sleep 2
n=$(http_get $URL/metrics | tail -n +2 | grep "^rankscope_gpu_kernels_total{job_id=\"gpu2-$$\",rank=\"0\",kind=\"nccl\"}" | awk '{print $2}')
echo "after the restart: ${n:-0} NCCL kernels of gpu2"
[ "${n:-0}" != 0 ] || fail "no records after the restart"
kill -TERM "$PID_rsd2"
wait_exit "$PID_rsd2" 60 || fail "daemon 2 did not exit"
[ ! -e "$SOCK" ] || fail "the socket file was left behind"
pass "GPU timing through the daemon: enable, classes, durations, dormant non-rank, other subscriber, reconnect"
