#!/usr/bin/env bash
# gpu_wait from the CUDA runtime's synchronize calls (uprobes on libcudart):
#  - the real libcudart.so.13 of the CUDA toolkit: every cudaDeviceSynchronize of a real
#    OpenMPI job is seen, on each rank (without a GPU it returns at once, with an error);
#  - a TEST DOUBLE of libcudart whose synchronize waits (a GPU would make the host wait): the
#    time lands in the gpu_wait phase, within 20% of the wait, and a rank that waits longer is
#    named, in phase gpu_wait.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
REAL=/usr/local/cuda/lib64/libcudart.so.13
DOUBLE=$FIX/cudart/libcudart.so.13
[ -f "$DOUBLE" ] || fail "the libcudart double was not built: make fixtures"

# 1) the real runtime: probed, every call seen
if [ -f "$REAL" ]; then
	ITERS=150
	bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go" \
		--iters $ITERS --compute-us 500 --cudart "$REAL"
	wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start"
	rs_attach rs -p "$(ready_pids "$T/job.out")" --json --events
	touch "$T/go"
	wait_exit "$PID_job" 120 || fail "MPI job failed: $(tail -3 "$T/job.out")"
	wait_exit "$PID_rs" 60 || fail "rankscope did not exit"
	$PY - "$T/rs.out" $ITERS <<'PY' || fail "real libcudart"
import json, sys, collections
iters = int(sys.argv[2])
sites, syncs = {}, collections.Counter()
for l in open(sys.argv[1]):
    if not l.startswith("{"):
        continue
    d = json.loads(l)
    if d["type"] == "rank":
        sites[d["rank"]] = d["collective_probes"].get("cudart", {}).get("sites", 0)
    elif d["type"] == "collective" and d["lib"] == "cudart":
        assert d["op"] == "gpu_sync", d
        syncs[d["rank"]] += 1
print("real libcudart: sync sites per rank", sites, "calls seen", dict(syncs))
assert all(n >= 4 for n in sites.values()) and len(sites) == 2, sites
assert all(syncs[r] == iters for r in (0, 1)), syncs
PY
	grep -o 'sync_ret=[0-9]*' "$T/job.out" | head -1
else
	echo "note: $REAL not found: the real runtime is not checked"
fi

# 2) the double: rank 1 waits 6 ms per step in cudaDeviceSynchronize, rank 0 0.5 ms
bg job2 mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go2" \
	--iters 100000 --compute-us 1000 --cudart "$DOUBLE" --sync-us 500 --slow-rank 1 \
	--slow-sync-us 6000
wait_lines "$T/job2.out" '^ready rank=' 2 60 || fail "MPI job 2 did not start"
bg rs2 "$RS" diagnose -p "$(ready_pids "$T/job2.out")" --json --duration 6
wait_lines "$T/rs2.out" '"type":"rank"' 2 30 || fail "rankscope did not attach"
touch "$T/go2"
wait_exit "$PID_rs2" 60 || fail "diagnose did not end"
$PY - "$T/rs2.out" <<'PY' || fail "gpu_wait phase"
import json, sys, statistics
steps, verdicts = {0: [], 1: []}, []
for l in open(sys.argv[1]):
    if not l.startswith("{"):
        continue
    d = json.loads(l)
    if d["type"] == "step":
        steps[d["rank"]].append(d["phases"]["gpu_wait"])
    elif d["type"] == "verdict":
        verdicts.append(d)
med = {r: statistics.median(v) / 1e6 for r, v in steps.items() if v}
print("median gpu_wait per step (ms):", med, "steps:", {r: len(v) for r, v in steps.items()})
assert len(steps[0]) >= 20 and len(steps[1]) >= 20, steps
assert abs(med[1] - 6.0) < 1.2, med      # within 20% of the wait the double makes
assert abs(med[0] - 0.5) < 0.3, med
last = verdicts[-1]
print("verdict:", last["class"], "rank", last["rank"], "phase", last["phase"])
assert last["class"] == "compute" and last["rank"] == 1 and last["phase"] == "gpu_wait", last
PY
kill -TERM -- "-$PID_job2" 2>/dev/null
pass "CUDA runtime synchronize calls probed (real and double); gpu_wait phase and verdict"
