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
#  - a real 2-rank OpenMPI job: most samples reach _start and main, none with frame pointers;
#  - a real 2-rank PyTorch DDP (gloo) job: the samples carry Python frames (read by a BPF
#    program at each sample from the thread's CPython 3.11 frame chain), each run of them
#    just inside the _PyEval_EvalFrameDefault that evaluates it, at lines of the script.
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
kill -TERM "$PID_job"
wait_exit "$PID_job" 20 >/dev/null

# 4. a real PyTorch DDP (gloo) job: Python frames in the samples, where they run
$PY -c 'import torch' 2>/dev/null || skip "python3-torch not installed (parts 1-3 passed)"
bg ddp "$ZOO_DDP" 2 --steps 100000 --data-dir "$T/data"
wait_lines "$T/ddp.out" '"type":"truth".*"step":3,' 2 180 || fail "the DDP job made no 4 steps"
"$RS" capture -p "$(ready_pids "$T/ddp.out")" --seconds 3 -o "$T/ddp.json" 2>"$T/ddp.err" ||
	fail "capture of the DDP job failed: $(tail -3 "$T/ddp.err")"
$PY - "$T/ddp.json" "$TOP/tests/workloads/zoo_ddp.py" <<'PY' || exit 1
import json, re, sys
d = json.load(open(sys.argv[1]))
src = open(sys.argv[2]).read().splitlines()
st = [e["args"]["stack"].split(";") for e in d["traceEvents"] if e.get("cat") == "sample"]
py = [s for s in st if any(re.search(r" \(zoo_ddp\.py:\d+\)$", f) for f in s)]
print(f"DDP: {len(st)} samples, {len(py)} with zoo_ddp.py frames; {d['otherData']['samples']}")
assert len(py) >= 0.3 * len(st), [";".join(s)[:300] for s in st[:3]]
rooted = 0
for s in py:
    # root first: the script's <module> is there, right after the _PyEval_EvalFrameDefault
    # frame that runs it, or outermost when the stack copy ended before that frame
    i = next(i for i, f in enumerate(s) if f.startswith("<module> (zoo_ddp.py:"))
    assert i == 0 or s[i - 1] == "_PyEval_EvalFrameDefault", s[max(0, i - 2):i + 1]
    rooted += s[0] == "_start"
    # every zoo_ddp.py line named is a line of the script, not a blank one
    for f in s:
        m = re.search(r"^(.*) \(zoo_ddp\.py:(\d+)\)$", f)
        if m:
            assert 1 <= int(m.group(2)) <= len(src) and src[int(m.group(2)) - 1].strip(), f
print(f"DDP: {rooted} of them unwound to _start (16 KiB of stack), the rest to <module>")
assert rooted >= 0.3 * len(py), rooted
steps = [s for s in py if any(f.startswith("main.<locals>.run_step (zoo_ddp.py:") for f in s)]
assert steps, "no sample inside the training step"
print("e.g. " + ";".join(steps[0][-12:])[:400])
PY
pass "capture samples unwound from CFI: 12 frames deep without frame pointers (also stripped)," \
	"lost with frame pointers only; a real MPI job's samples reach main; a DDP job's samples" \
	"carry its Python frames where they run"
