#!/usr/bin/env bash
# rankscope stacks: native stacks unwound from CFI, merged into classes.
#  - build/fixtures/deep_stack sleeps 12 calls deep in a shared library built without frame
#    pointers: all 12 frames (deep_12 .. deep_1) come back, in order, named, with file:line
#    (the library has debug info), and again from a copy of the library stripped to .dynsym
#    and .eh_frame (names still, no lines); each process is left running as it was;
#  - a real 4-rank OpenMPI job whose rank R (random) stopped itself (SIGSTOP) while its
#    peers wait in MPI_Allreduce: the peers form one class whose main stack reaches
#    MPI_Allreduce; rank R, stopped, is its own class, the odd one out, with state T and not
#    attached (its state unchanged); the time each process was held is reported.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$FIX/deep_stack" ] || fail "build/fixtures/deep_stack is missing: make fixtures"

check_deep() {	# JSON-FILE PID WANT-LINES(0|1)
	$PY - "$@" <<'PY'
import json, sys
path, pid, lines = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
st = [json.loads(l) for l in open(path) if l.startswith('{"type":"stacks"')]
assert len(st) == 1 and st[0]["pid"] == pid, st
main = [t for t in st[0]["threads"] if t["tid"] == pid][0]
funcs = [f["func"] for f in main["frames"]]
want = [f"deep_{n}" for n in range(12, 0, -1)]
got = [f for f in funcs if f and f.startswith("deep_")]
assert got == want, f"deep frames {got}, all frames {funcs}"
deep = [f for f in main["frames"] if (f["func"] or "").startswith("deep_")]
assert all(f["lib"] == "libdeep.so" for f in deep), deep
if lines:
    assert all(f["file"] == "deep_stack.c" and f["line"] for f in deep), deep
assert "main" in funcs, funcs
print(f"{len(funcs)} frames, deep_12 .. deep_1 all there{' with lines' if lines else ''}; "
      f"held {st[0]['held_ns'] / 1e6:.1f} ms")
PY
}

# 1. 12 frames deep, no frame pointers
bg deep "$FIX/deep_stack"
wait_lines "$T/deep.out" '^ready pid=' 1 10 || fail "deep_stack did not start"
"$RS" stacks -p "$PID_deep" --json >"$T/deep.json" 2>"$T/deep.err" ||
	fail "stacks failed: $(cat "$T/deep.err")"
check_deep "$T/deep.json" "$PID_deep" 1 || exit 1
[ "$(awk '{print $3}' "/proc/$PID_deep/stat")" = S ] || fail "deep_stack was not left sleeping"

# the same with the library stripped to .dynsym and .eh_frame
mkdir -p "$T/stripped/deep"
cp "$FIX/deep_stack" "$T/stripped/"
strip -o "$T/stripped/deep/libdeep.so" "$FIX/deep/libdeep.so"
readelf -S "$T/stripped/deep/libdeep.so" | grep -q debug_info && fail "strip left debug info"
bg deep2 "$T/stripped/deep_stack"
wait_lines "$T/deep2.out" '^ready pid=' 1 10 || fail "the stripped deep_stack did not start"
"$RS" stacks -p "$PID_deep2" --json >"$T/deep2.json" 2>"$T/deep2.err" ||
	fail "stacks failed: $(cat "$T/deep2.err")"
check_deep "$T/deep2.json" "$PID_deep2" 0 || exit 1

# 2. a stuck MPI job: the stopped rank is the odd class
R=$((RANDOM % 4))
bg job mpirun --allow-run-as-root --oversubscribe -np 4 "$TOP/build/workloads/zoo_mpi" \
	--buckets 3 --steps 100000 --fault "sigstop:$R:30"
wait_lines "$T/job.out" '^ready rank=' 4 60 || fail "the MPI job did not start"
read -r -a PIDS <<<"$(ready_pids "$T/job.out" | tr , ' ')"
for ((i = 0; i < 100; i++)); do
	[ "$(awk '{print $3}' "/proc/${PIDS[R]}/stat" 2>/dev/null)" = T ] && break
	sleep 0.1
done
sleep 1
PIDLIST=$(IFS=,; echo "${PIDS[*]}")
"$RS" stacks -p "$PIDLIST" --json >"$T/mpi.json" 2>"$T/mpi.err" ||
	fail "stacks failed: $(cat "$T/mpi.err")"
"$RS" stacks -p "$PIDLIST" >"$T/mpi.txt" 2>&1 || fail "stacks (text) failed: $(cat "$T/mpi.txt")"
[ "$(awk '{print $3}' "/proc/${PIDS[R]}/stat")" = T ] || fail "the stopped rank's state changed"
kill -CONT "${PIDS[R]}"
$PY - "$T/mpi.json" "$R" "${PIDS[@]}" <<'PY' || exit 1
import json, sys
path, r, pids = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3:]]
lines = [json.loads(l) for l in open(path)]
st = {x["pid"]: x for x in lines if x["type"] == "stacks"}
cls = [x for x in lines if x["type"] == "stack_classes"][0]
assert set(st) == set(pids), st.keys()
assert st[pids[r]]["state"] == "T" and "not attached" in st[pids[r]]["note"], st[pids[r]]
odd = [c for c in cls["classes"] if c["outlier"]]
assert len(odd) == 1 and odd[0]["pids"] == [pids[r]] and odd[0]["ranks"] == [r], cls
peers = [c for c in cls["classes"] if not c["outlier"]]
assert len(peers) == 1 and sorted(peers[0]["pids"]) == sorted(p for p in pids if p != pids[r]), cls
assert "MPI_Allreduce" in peers[0]["main_stack"], peers[0]["main_stack"]
med, mx = cls["thread_held_median_ns"], cls["thread_held_max_ns"]
assert 0 < med <= mx < 1e9, cls      # a sanity bound: the figures are for make bench
print(f"rank {r} stopped: its own class; ranks {peers[0]['ranks']} in "
      f"{peers[0]['main_stack'].split(';')[-1]}; each thread stopped {med / 1e6:.2f} ms "
      f"(median), {mx / 1e6:.2f} ms at most")
PY
grep -q "the odd one(s) out" "$T/mpi.txt" || fail "the text report marks no odd class: $(cat "$T/mpi.txt")"
pass "stacks: 12 frames without frame pointers (also stripped), a stuck job's odd rank"
