#!/usr/bin/env bash
# A real job with asynchronous collectives, replayed from its own op trace: 2 PyTorch ranks
# (gloo) launch 8 equal all-reduces a step with async_op=True between slices of compute, then
# wait for them; one rank (picked at random) computes 10 ms more. A launch returns at once, on
# each rank at its own time: the slow rank's launches return next to its peer's later ones.
# The steps must end where the job's own clock says each step ended (the return of its last
# wait), on both ranks, and the verdict is compute on the slow rank. Then each rank's trace cut
# after its last step's launches, before its wait: that step never ended, and no step is
# built of it (the steps before it ended with their wait).
. "$(dirname "$0")/../lib.sh"
$PY -c 'import torch' 2>/dev/null || skip "python3-torch not installed (make deps)"
SLOW=$((RANDOM % 2))
"$PY" "$TOP/tests/workloads/async_trace.py" --world 2 --out "$T" --steps 80 --slow-rank $SLOW \
	--slow-ms 10 >"$T/job.out" 2>&1 || fail "the job failed: $(tail -3 "$T/job.out")"
"$RS" diagnose --replay "$T/rank0.jsonl" --replay "$T/rank1.jsonl" --json >"$T/rp.out" \
	2>"$T/rp.err" || fail "replay failed: $(cat "$T/rp.err")"
$PY - "$T" $SLOW <<'PY' || exit 1
import collections, json, sys
T, slow = sys.argv[1], int(sys.argv[2])
out = [json.loads(l) for l in open(f"{T}/rp.out") if l.startswith("{")]
for r in (0, 1):
    ends = [json.loads(l)["end_ns"] for l in open(f"{T}/truth{r}.jsonl")]
    st = [d for d in out if d["type"] == "step" and d["rank"] == r]
    near = sum(min(abs(d["start_ns"] + d["dur_ns"] - e) for e in ends) <= 2_000_000 for d in st)
    print(f"rank {r}: {len(st)} steps of the job's {len(ends) - 1}, {near} end within 2 ms of "
          "its own step ends")
    assert len(st) >= len(ends) - 3 and near >= 0.95 * len(st), (r, len(st), near)
v = collections.Counter((d["class"], d["rank"]) for d in out
                        if d["type"] == "verdict" and d["class"] != "none")
print("verdicts:", dict(v))
assert v and v.most_common(1)[0][0] == ("compute", slow), v
for r in (0, 1):
    ops = open(f"{T}/rank{r}.jsonl").readlines()
    last = max(i for i, l in enumerate(ops) if json.loads(l).get("op") == "wait")
    open(f"{T}/cut{r}.jsonl", "w").writelines(ops[:last])
PY
"$RS" diagnose --replay "$T/cut0.jsonl" --replay "$T/cut1.jsonl" --json >"$T/cut.out" \
	2>"$T/cut.err" || fail "replay of the cut traces failed: $(cat "$T/cut.err")"
$PY - "$T" <<'PY' || exit 1
import json, sys
T = sys.argv[1]
steps = lambda f, r: [d for d in map(json.loads, open(f"{T}/{f}")) if d["type"] == "step"
                      and d["rank"] == r]
for r in (0, 1):
    ends = [json.loads(l)["end_ns"] for l in open(f"{T}/truth{r}.jsonl")]
    whole, cut = steps("rp.out", r), steps("cut.out", r)
    off = [min(abs(d["start_ns"] + d["dur_ns"] - e) for e in ends) for d in cut]
    print(f"rank {r}: cut before its last wait: {len(cut)} steps ({len(whole)} uncut), the "
          f"last ending {off[-1] / 1e6:.1f} ms from one of the job's own step ends")
    assert len(cut) <= len(whole) and max(off) <= 2_000_000, (r, len(cut), len(whole), off[-3:])
PY
# the same traces, rank 1's without its meta line: its ranks would be another job ("trace");
# the replay says so in one line that names the fix
tail -n +2 "$T/rank1.jsonl" >"$T/bare1.jsonl"
"$RS" diagnose --replay "$T/rank0.jsonl" --replay "$T/bare1.jsonl" >"$T/bare.out" 2>&1 ||
	fail "replay without a meta line failed: $(tail -3 "$T/bare.out")"
grep -q "bare1.jsonl has no meta line, so its ranks form job 'trace', apart from job 'async-trace'" \
	"$T/bare.out" && grep -q '{"type":"meta","job":"async-trace"} its first line' "$T/bare.out" ||
	fail "no warning for a trace without its meta line: $(head -3 "$T/bare.out")"
"$RS" diagnose --replay "$T/rank0.jsonl" --replay "$T/rank1.jsonl" 2>&1 | grep -q "no meta line" &&
	fail "a warning with every trace's meta line there"
pass "asynchronous equal buckets: steps end at the job's own step ends, compute on rank $SLOW; a trace without its meta line is named"
