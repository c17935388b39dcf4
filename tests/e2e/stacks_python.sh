#!/usr/bin/env bash
# Python frames of CPython 3.11 ranks, read from the interpreter's frame chain.
#  - A real 3-rank PyTorch DDP (gloo) job whose rank R (random) time.sleep()s 600 s in its
#    training step (zoo_ddp's sleep fault from step 5), all of it before rankscope comes.
#    `rankscope diagnose --hang-timeout 2` gives hang on rank R; its stack in the evidence
#    names the Python frame it sleeps in (zoo_ddp.py, run_step, the line of the
#    time.sleep call, read here from the script itself), and a peer's stack shows DDP's wait
#    (a c10d frame) under its Python backward. `rankscope stacks --json` interleaves them:
#    the sleeping Python frames sit just inside a _PyEval_EvalFrameDefault native frame.
#  - The same process stopped (SIGSTOP) is read without being attached: still T after, and
#    its Python frames are there.
#  - A Python process whose main thread strace holds: the note names strace, and its Python
#    frames are still read (no ptrace needed for them).
#  - A corrupted frame chain (tests/fixtures/py_corrupt.py overwrites its own threads' frame
#    links: a loop, random bytes, a non-code object): every walk is bounded, the frames before
#    the damage are kept and the damage is said; rankscope does not crash.
. "$(dirname "$0")/../lib.sh"
need_root
$PY -c 'import torch' 2>/dev/null || skip "python3-torch not installed (make deps)"
PY311=/usr/bin/python3.11
[ -x "$PY311" ] || skip "no /usr/bin/python3.11 (Debian's CPython 3.11)"

W=3
R=$((RANDOM % W))
bg job "$ZOO_DDP" $W --steps 100000 --fault "sleep:$R:600000" --fault-from 5 \
	--data-dir "$T/data"
wait_lines "$T/job.out" '^ready rank=' $W 180 || fail "DDP job did not start"
wait_lines "$T/job.out" '"type":"truth".*"step":4,' $W 180 || fail "DDP job made no 5 steps"
sleep 2		# rank R sleeps in step 5; its peers wait in the all-reduce of its backward
PIDLIST=$(ready_pids "$T/job.out")
PID_R=$(sed -n "s/^ready rank=$R pid=\([0-9]*\).*/\1/p" "$T/job.out")
ZOO=$TOP/tests/workloads/zoo_ddp.py
# the truth: the line of the sleep fault's time.sleep in zoo_ddp.py
LINE=$(awk '/for f in mine\["sleep"\]/ { s = 1 } s && /time\.sleep\(/ { print NR; exit }' "$ZOO")
[ -n "$LINE" ] || fail "cannot find the sleep fault's line in $ZOO"

"$RS" diagnose -p "$PIDLIST" --duration 6 --hang-timeout 2 --json >"$T/diag.json" \
	2>"$T/diag.err" || fail "diagnose failed: $(tail -3 "$T/diag.err")"
"$RS" stacks -p "$PIDLIST" --json >"$T/st.json" 2>"$T/st.err" ||
	fail "stacks failed: $(cat "$T/st.err")"
$PY - "$T/diag.json" "$T/st.json" "$R" "$LINE" <<'PY' || exit 1
import json, sys
diag, st, r, line = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
v = [json.loads(l) for l in open(diag) if l.startswith('{"type":"verdict"')]
v = [x for x in v if x["class"] != "none"]
assert v, "no verdict"
h = v[0]
assert (h["class"], h["rank"]) == ("hang", r), (h["class"], h["rank"], h["evidence"])
stacks = {s["role"]: s for s in h["evidence"].get("stacks", [])}
assert stacks.get("rank", {}).get("rank") == r, h["evidence"]
want = f"run_step (zoo_ddp.py:{line})"
assert want in stacks["rank"]["stack"], (want, stacks["rank"]["stack"])
assert stacks["peer"]["rank"] != r and "c10d" in stacks["peer"]["stack"], stacks["peer"]
assert "backward" in stacks["peer"]["stack"], stacks["peer"]
print(f"hang on rank {r}: {stacks['rank']['stack']}")
print(f"  its peer {stacks['peer']['rank']}: {stacks['peer']['stack'][:150]}")

lines = [json.loads(l) for l in open(st)]
byrank = {x["rank"]: x for x in lines if x["type"] == "stacks"}
assert sorted(byrank) == [0, 1, 2], sorted(byrank)
for k, x in byrank.items():
    assert x.get("python") == "3.11", (k, x.get("python"), x.get("python_note"))
    main = [t for t in x["threads"] if t["tid"] == x["pid"]][0]
    fr = main["frames"]
    py = [i for i, f in enumerate(fr) if f["kind"] == "python"]
    assert py, f"rank {k}: no Python frame"
    # each run of Python frames ends just inside a native _PyEval_EvalFrameDefault
    for i in py:
        if i + 1 < len(fr) and fr[i + 1]["kind"] == "native":
            assert fr[i + 1]["func"] == "_PyEval_EvalFrameDefault", (k, fr[i + 1])
    assert any(f["kind"] == "python" and f["func"] == "<module>" and
               f["file"].endswith("zoo_ddp.py") for f in fr), f"rank {k}: no <module> frame"
    if k == r:
        top = fr[py[0]]
        assert (top["func"], top["line"]) == ("main.<locals>.run_step", line), top
        assert top["file"].endswith("zoo_ddp.py"), top
        assert any("nanosleep" in (f["func"] or "") for f in fr[:py[0]]), fr[:py[0]]
    else:
        assert any((f["func"] or "").startswith("_ZN4c10d") for f in fr[:py[0]]), \
            f"rank {k}: no c10d frame inside its Python frames"
cls = [x for x in lines if x["type"] == "stack_classes"][0]
odd = [c for c in cls["classes"] if c["ranks"] == [r]]
assert odd, cls["classes"]
print(f"stacks: 3 ranks with Python frames; rank {r} alone in its class")
PY

# the same rank stopped: read without attaching, still stopped after
kill -STOP "$PID_R"
sleep 0.3
"$RS" stacks -p "$PID_R" --json >"$T/stopped.json" || fail "stacks of a stopped rank failed"
[ "$(awk '{print $3}' "/proc/$PID_R/stat")" = T ] || fail "the stopped rank is no longer stopped"
kill -CONT "$PID_R"
$PY - "$T/stopped.json" "$LINE" <<'PY' || exit 1
import json, sys
x = json.loads(open(sys.argv[1]).readline())
line = int(sys.argv[2])
assert x["state"] == "T" and "not attached" in x["note"], x.get("note")
main = [t for t in x["threads"] if t["tid"] == x["pid"]][0]
py = [f for f in main["frames"] if f["kind"] == "python"]
assert py and (py[0]["func"], py[0]["line"]) == ("main.<locals>.run_step", line), py[:2]
assert not [f for f in main["frames"] if f["kind"] == "native"], "native frames of a stopped rank"
print(f"stopped rank: {len(py)} Python frames, not attached")
PY
kill -TERM "$PID_job"
wait_exit "$PID_job" 30 >/dev/null

# another tracer holds the main thread: named, and the Python frames are still read
command -v strace >/dev/null || skip "strace not installed (the rest passed)"
bg sleeper "$PY311" -c 'import time
def waits_here():
    time.sleep(600)
print("ready", flush=True)
waits_here()'
wait_lines "$T/sleeper.out" '^ready' 1 20 || fail "the sleeper did not start"
bg tracer strace -p "$PID_sleeper" -o /dev/null
sleep 1
"$RS" stacks -p "$PID_sleeper" --json >"$T/traced.json" 2>"$T/traced.err"
$PY - "$T/traced.json" <<'PY' || exit 1
import json, sys
x = json.loads(open(sys.argv[1]).readline())
main = [t for t in x["threads"] if t["tid"] == x["pid"]][0]
note = main.get("note") or x.get("note") or ""
assert "strace" in note, ("the tracer is not named", note)
py = [f for f in main["frames"] if f["kind"] == "python"]
assert py and py[0]["func"] == "waits_here" and py[0]["line"] == 3, py
print(f"traced by strace: '{note}', Python frames {[f['func'] for f in py]}")
PY
kill "$PID_tracer" "$PID_sleeper"

# a corrupted frame chain: bounded walks, no crash
bg bad "$PY311" "$TOP/tests/fixtures/py_corrupt.py"
wait_lines "$T/bad.out" '^corrupted' 3 20 || fail "py_corrupt.py did not corrupt its frames"
for i in 1 2 3; do
	timeout 20 "$RS" stacks -p "$PID_bad" --json >"$T/bad$i.json" 2>"$T/bad$i.err"
	rc=$?
	[ $rc -eq 0 ] || fail "stacks on a corrupted frame chain: rc $rc: $(tail -3 "$T/bad$i.err")"
done
$PY - "$T/bad1.json" "$T/bad.out" <<'PY' || exit 1
import json, re, sys
x = json.loads(open(sys.argv[1]).readline())
tids = dict((m[1], int(m[0])) for m in re.findall(r'^corrupted tid=(\d+) how=(\w+)', open(sys.argv[2]).read(), re.M))
assert sorted(tids) == ["garbage", "loop", "notcode"], tids
th = {t["tid"]: t for t in x["threads"]}
for how, tid in tids.items():
    t = th[tid]
    py = [f for f in t["frames"] if f["kind"] == "python"]
    note = t.get("python_note", "")
    assert "corrupt frame chain" in note, (how, note)
    assert len(py) <= 64, (how, len(py))
    # the innermost frame (the one the fixture damaged the link of) is kept
    assert py and py[0]["func"] == "damaged", (how, py[:2])
    print(f"{how}: {len(py)} Python frame(s) kept, '{note}'")
main = th[x["pid"]]
assert "python_note" not in main and any(f["func"] == "<module>" for f in main["frames"]), main
PY
kill "$PID_bad"
pass "Python frames: a stuck DDP rank named by its Python line, peers in c10d; stopped," \
	"traced and corrupted interpreters read safely"
