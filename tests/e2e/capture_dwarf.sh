#!/usr/bin/env bash
# Capture stack samples unwound from CFI (perf's --call-graph dwarf): each 99 Hz sample copies
# the top of the thread's stack and its registers, and the chain is unwound with libdwfl when
# the capture is written.
#  - build/fixtures/deep_stack --spin burns CPU 12 calls deep in a shared library built
#    without frame pointers: nearly every sample has the whole chain, _start .. main ..
#    deep_1 .. deep_12, in order; the trace's otherData says how each sample was unwound;
#  - the same with a copy of the library stripped to .dynsym and .eh_frame;
#  - the same with --sample-stack-kb 0 (frame pointers only): the chain is lost (the test
#    can tell the two apart);
#  - a real 2-rank OpenMPI job: most samples reach _start and main, none with frame pointers.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$FIX/deep_stack" ] || fail "build/fixtures/deep_stack is missing: make fixtures"

# check FILE MODE: MODE dwarf (the chain whole) or fp (frame pointers only: the chain lost)
check() {
	$PY - "$@" <<'PY'
import json, sys
path, mode = sys.argv[1], sys.argv[2]
d = json.load(open(path))
sm = d["otherData"]["samples"]
st = [e["args"]["stack"].split(";") for e in d["traceEvents"] if e.get("cat") == "sample"]
assert len(st) >= 100, f"{len(st)} samples"
want = ["main"] + [f"deep_{n}" for n in range(1, 13)]
whole = sum(1 for s in st if s[-13:] == want and s[0] == "_start")
print(f"{mode}: {len(st)} samples, {whole} with _start .. main .. deep_12 whole; {sm}")
if mode == "dwarf":
    assert whole >= 0.9 * len(st), st[:3]
    assert sm["dwarf"] >= 0.9 * len(st) and sm["stack_bytes"] > 0, sm
else:
    assert whole <= 0.1 * len(st), st[:3]
    assert sm["dwarf"] == 0 and sm["stack_bytes"] == 0, sm
PY
}

# 1. no frame pointers, with and without stack copies
bg deep "$FIX/deep_stack" --spin
wait_lines "$T/deep.out" '^ready pid=' 1 10 || fail "deep_stack did not start"
"$RS" capture -p "$PID_deep" --seconds 2 -o "$T/deep.json" 2>"$T/deep.err" ||
	fail "capture failed: $(tail -3 "$T/deep.err")"
check "$T/deep.json" dwarf || exit 1
"$RS" capture -p "$PID_deep" --seconds 2 --sample-stack-kb 0 -o "$T/fp.json" 2>"$T/fp.err" ||
	fail "capture --sample-stack-kb 0 failed: $(tail -3 "$T/fp.err")"
check "$T/fp.json" fp || exit 1
kill "$PID_deep"

# 2. the library stripped to .dynsym and .eh_frame
mkdir -p "$T/stripped/deep"
cp "$FIX/deep_stack" "$T/stripped/"
strip -o "$T/stripped/deep/libdeep.so" "$FIX/deep/libdeep.so"
bg deep2 "$T/stripped/deep_stack" --spin
wait_lines "$T/deep2.out" '^ready pid=' 1 10 || fail "the stripped deep_stack did not start"
"$RS" capture -p "$PID_deep2" --seconds 2 -o "$T/deep2.json" 2>"$T/deep2.err" ||
	fail "capture failed: $(tail -3 "$T/deep2.err")"
check "$T/deep2.json" dwarf || exit 1
kill "$PID_deep2"

# 3. a real OpenMPI job
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go" \
	--iters 100000 --compute-us 1000
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start"
touch "$T/go"
"$RS" capture -p "$(ready_pids "$T/job.out")" --seconds 2 -o "$T/mpi.json" 2>"$T/mpi.err" ||
	fail "capture of the MPI job failed: $(tail -3 "$T/mpi.err")"
$PY - "$T/mpi.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
sm = d["otherData"]["samples"]
st = [e["args"]["stack"].split(";") for e in d["traceEvents"] if e.get("cat") == "sample"]
rooted = sum(1 for s in st if s[0] == "_start" and "main" in s)
print(f"MPI job: {len(st)} samples, {rooted} from _start through main; {sm}")
assert len(st) >= 100 and rooted >= 0.8 * len(st), st[:3]
PY
pass "capture samples unwound from CFI: 12 frames deep without frame pointers (also stripped)," \
	"lost with frame pointers only; a real MPI job's samples reach main"
