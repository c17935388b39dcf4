#!/usr/bin/env bash
# GPU time joined into steps, on a real OpenMPI job whose ranks load the real
# librankscope_cupti.so over the CUPTI TEST DOUBLE (no GPU here: tests/fixtures/cupti_double).
# Each rank records its compute as a kernel and its all-reduce as an NCCL kernel that starts
# when its GPU reaches the collective; rank 1 sleeps 3 ms on the host before it, and its GPU
# lags its host by 2 ms more. With rankscope diagnose --cupti-socket:
#  - step lines carry GPU busy and idle time: rank 1's GPU idles through its sleep;
#  - comm_wait comes from the NCCL kernels (device-side arrival): rank 0 waits ~5 ms, the host
#    skew (3 ms) plus the GPU lag, not the host's 3 ms;
#  - the late rank is still rank 1;
#  - /metrics has each rank's GPU idle fraction (the pipeline-bubble series).
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
LIB=$TOP/build/librankscope_cupti.so
DBL=$FIX/cupti_double
[ -e /usr/local/cuda/include/cupti.h ] ||
	skip "no CUPTI headers (/usr/local/cuda/include/cupti.h): the library and its doubles need them"
[ -f "$LIB" ] && [ -f "$DBL/libcupti.so" ] || fail "the CUPTI library or its doubles were not built: make all fixtures"
SOCK=$T/cupti.sock
bg job mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_LIBRARY_PATH="$DBL" \
	-x RANKSCOPE_CUPTI_SOCKET="$SOCK" "$FIX/mpi_loop" --go-file "$T/go" --iters 100000 \
	--compute-us 1000 --slow-rank 1 --slow-us 3000 --cupti "$LIB" --gpu-lag-us 2000
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start: $(tail -3 "$T/job.out")"
PORT=$(free_port)
bg rs "$RS" diagnose -p "$(ready_pids "$T/job.out")" --json --cupti-socket "$SOCK" --duration 7 \
	--listen 127.0.0.1:$PORT
wait_lines "$T/rs.out" 'GPU timing: recording' 2 20 ||
	fail "the ranks' libraries were not enabled: $(grep -v libbpf "$T/rs.out" | grep -v '^{' | tail -5)"
touch "$T/go"
sleep 4.5
http_get http://127.0.0.1:$PORT/metrics | tail -n +2 >"$T/metrics"
grep -E '^rankscope_gpu_idle_fraction' "$T/metrics"
$PY - "$T/metrics" <<'PY' || fail "rankscope_gpu_idle_fraction"
import re, sys
v = {int(r): float(x) for r, x in
     re.findall(r'^rankscope_gpu_idle_fraction\{job_id="[^"]*",rank="(\d)"\} (\S+)$', open(sys.argv[1]).read(), re.M)}
assert set(v) == {0, 1}, v
assert v[0] < 0.25 and 0.35 < v[1] < 0.9, v    # rank 1's GPU idles through its host's sleep
PY
wait_exit "$PID_rs" 60 || fail "diagnose did not end"
$PY - "$T/rs.out" <<'PY' || fail "GPU time in steps"
import json, sys, statistics as st
steps, verdicts = {0: [], 1: []}, []
for l in open(sys.argv[1]):
    if not l.startswith("{"):
        continue
    d = json.loads(l)
    if d["type"] == "step":
        steps[d["rank"]].append(d)
    elif d["type"] == "verdict":
        verdicts.append(d)
ms = lambda v: round(st.median(v) / 1e6, 2)
for r in (0, 1):
    s = [x for x in steps[r] if "gpu_busy_ns" in x]
    assert len(s) >= 20, (r, len(s), len(steps[r]))
    steps[r] = s
idle = {r: ms([x["gpu_idle_ns"] for x in steps[r]]) for r in (0, 1)}
busy = {r: ms([x["gpu_busy_ns"] for x in steps[r]]) for r in (0, 1)}
wait = {r: ms([x["phases"]["comm_wait"] for x in steps[r]]) for r in (0, 1)}
nccl = {r: ms([x["gpu_nccl_ns"] for x in steps[r]]) for r in (0, 1)}
print("median per step (ms): gpu busy", busy, "gpu idle", idle, "nccl", nccl, "comm_wait", wait)
assert 2.5 < idle[1] < 6.0, idle        # its host sleeps 3 ms, and its GPU starts the collective 2 ms late
assert idle[0] < 1.5, idle
assert 4.0 < wait[0] < 6.5, wait        # device-side: 3 ms host skew + 2 ms GPU lag
assert wait[1] < 1.0, wait
# verdicts judged while GPU records flowed (the last steps, judged at the end of the session,
# have none yet: the library flushes every 0.5 s)
skews = [v["skew_ns"] / 1e6 for v in verdicts if v["rank"] == 1]
print("verdicts:", len(verdicts), "on rank 1:", len(skews), "median skew (ms):", ms([x * 1e6 for x in skews]))
assert len(skews) >= len(verdicts) * 0.8, [(v["class"], v["rank"]) for v in verdicts][-5:]
assert st.median(skews) > 4.0, skews     # the skew is measured on the GPU too
PY
pass "GPU busy/idle per step, comm_wait and skew from the NCCL kernels"
