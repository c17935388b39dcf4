#!/usr/bin/env bash
# Snapshots of stacks do not harm the job: a real 2-rank OpenMPI job (zoo_mpi, 3 buckets a
# step, a fixed number of steps) run twice, alone and while `rankscope stacks` takes
# STACKS_SNAPSHOTS snapshots of it back to back (20 here; `make bench` part 9 takes 200). Both
# runs must end with the same step count and the same checksum of the all-reduces' results on
# every rank, and their median step time must stay within a generous bound (the figures are
# for make bench). Prints one "stacks_harmless: {json}" line: how long each thread was held.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
N=${STACKS_SNAPSHOTS:-20}
STEPS=${STACKS_STEPS:-3000}

run_job() {	# NAME
	bg "$1" mpirun --allow-run-as-root --oversubscribe -np 2 "$TOP/build/workloads/zoo_mpi" \
		--buckets 3 --steps "$STEPS" --go-file "$T/go-$1"
	wait_lines "$T/$1.out" '^ready rank=' 2 60 || fail "the MPI job $1 did not start"
	PIDLIST=$(ready_pids "$T/$1.out")
	touch "$T/go-$1"
}
run_job alone
wait_exit "$PID_alone" 300 || fail "the job alone did not finish"

run_job snap
: >"$T/snaps.jsonl"
for ((i = 0; i < N; i++)); do
	"$RS" stacks -p "$PIDLIST" --json >"$T/snap.json" 2>>"$T/snap.err" ||
		fail "snapshot $i failed: $(tail -2 "$T/snap.err")"
	grep '"type":"stack_classes"' "$T/snap.json" >>"$T/snaps.jsonl"
done
grep -q '"done rank=' "$T/snap.out" && fail "the job ended before the $N snapshots: raise STACKS_STEPS"
wait_exit "$PID_snap" 300 || fail "the job under snapshots did not finish"

$PY - "$T" "$N" <<'PY' || exit 1
import json, statistics, sys
t, n = sys.argv[1], int(sys.argv[2])
def run(name):
    done = {}
    steps = []
    for l in open(f"{t}/{name}.out"):
        if l.startswith("done rank="):
            kv = dict(p.split("=", 1) for p in l.split()[1:])
            done[int(kv["rank"])] = (int(kv["steps"]), kv["checksum"])
        elif l.startswith('{"type":"truth"'):
            steps.append(json.loads(l)["step_ns"])
    return done, statistics.median(steps)
a, ma = run("alone")
b, mb = run("snap")
assert len(a) == 2 and a == b, f"alone {a}, under snapshots {b}"
assert mb < 1.5 * ma, f"median step {mb / 1e6:.2f} ms under snapshots, {ma / 1e6:.2f} ms alone"
snaps = [json.loads(l) for l in open(f"{t}/snaps.jsonl")]
assert len(snaps) == n, len(snaps)
med = statistics.median(s["thread_held_median_ns"] for s in snaps)
mx = max(s["thread_held_max_ns"] for s in snaps)
print(f"{n} snapshots: steps and checksums {a[0]} on every rank, as alone; median step "
      f"{mb / 1e6:.3f} ms vs {ma / 1e6:.3f} ms alone; each thread held {med / 1e6:.3f} ms "
      f"(median of medians), {mx / 1e6:.3f} ms at most")
print("stacks_harmless: " + json.dumps({"snapshots": n, "step_ms_alone": ma / 1e6,
      "step_ms_snapshots": mb / 1e6, "thread_held_median_ms": med / 1e6,
      "thread_held_max_ms": mx / 1e6}))
PY
pass "$N stack snapshots of a running job: same steps and checksums, each thread held briefly"
