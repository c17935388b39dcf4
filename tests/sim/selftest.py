#!/usr/bin/python3
"""Self-test of the simulator without rankscope: hand-made replay outputs against real draws.

An oracle output (the truth written as rankscope's lines) must score perfectly, a wrong one
must fail, an empty one must fail everything: the scorer can pass and it can fail. Also
checks the truth (phases partition each step) and the trace (each rank's lines in time order,
its ops never overlap except sched_delay inside a collective or wait; collectives without an
end only at the end).  Usage: selftest.py [SEEDS]
"""
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import draw   # noqa: E402
import score  # noqa: E402

OFF = 5     # the oracle numbers its steps from 5 less than the truth's index, as an engine may


def oracle(t, cls=None, rank=None):
    L = ['{"type":"rule","rule":"period","period":1,"confidence":1.0}']
    for r, (b, ph) in enumerate(zip(t["bounds"], t["phases"])):
        for i, p in enumerate(ph):
            L.append(json.dumps({"type": "step", "rank": r, "step": i + 1 - OFF,
                                 "start_ns": b[i], "dur_ns": b[i + 1] - b[i],
                                 "phases": dict(p, comm_wait=0, comm_transfer=0)}))
    c = cls or t["class"]
    rk = rank if rank is not None else (t["culprits"][0] if t["culprits"] else -1)
    n = len(t["phases"][0]) if t["phases"] else 0
    first = t["start"] + 3
    for s in range(first, max(first + 1, n), 8):
        v = {"type": "verdict", "step": s - OFF, "window": [s - OFF - 7, s - OFF], "class": c,
             "rank": rk, "persistent": bool(t["persistent"]) and c != "none",
             "evidence": {}, "cost": {"whatif_step_ns": t.get("whatif_step_ns", 0)}}
        if "share_hit" in t:
            v["evidence"]["share"] = t["share_hit"]
        L.append(json.dumps(v))
    return "\n".join(L) + "\n"


def check_truth(t):
    errs = []
    for r, (b, ph) in enumerate(zip(t["bounds"], t["phases"])):
        for i, p in enumerate(ph):
            d = b[i + 1] - b[i]
            if d <= 0 or sum(p.values()) != d or min(p.values()) < 0:
                errs.append("rank %d step %d: phases %s, step %d" % (r, i + 1, p, d))
                break
    return errs


COMM = {"allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast", "reduce",
        "barrier", "send", "recv", "wait"}


def check_trace(path):
    last = {}          # rank -> (start, end, op) of the last op that is not an inner delay
    errs = []
    with open(path) as fh:
        for line in fh:
            o = json.loads(line)
            if o["type"] != "op":
                continue
            r, s, d = o["rank"], o["start_ns"], o.get("dur_ns")
            p = last.get(r)
            if p and p[1] is None:
                errs.append("rank %d: an op after one that never ended" % r)
            elif p and o["op"] == "sched_delay" and p[2] in COMM and s >= p[0] and \
                    (p[1] is None or s + d <= p[1]):
                continue       # inside the collective
            elif p and s < p[1]:
                errs.append("rank %d: %s at %d overlaps %s ending %d" % (
                    r, o["op"], s, p[2], p[1]))
            last[r] = (s, None if d is None else s + d, o["op"])
            if len(errs) > 3:
                break
    return errs


def main():
    seeds = [int(x) for x in sys.argv[1:]] or list(range(0, 60))
    tmp = tempfile.mkdtemp(prefix="rankscope-simtest-")
    fails = 0
    try:
        for seed in seeds:
            t = draw.make(seed, tmp, keep_truth=False)
            bad = check_truth(t) + check_trace(os.path.join(tmp, "trace.jsonl"))
            good = score.score(t, oracle(t))
            wrong_cls = "compute" if t["class"] != "compute" else "storage"
            wrong = score.score(t, oracle(t, cls=wrong_cls))
            empty = score.score(t, "")
            exp_lat = 3 if t["class"] != "none" else None
            if t["class"] not in ("none",) and t["culprits"] and t["culprit_required"]:
                other = next(r for r in range(t["world_size"] + 1) if r not in t["culprits"])
                wrong_rank = score.score(t, oracle(t, rank=other % t["world_size"]
                                                   if other < t["world_size"] else -1))
            else:
                wrong_rank = {"right": False}
            probs = list(bad)
            if not (good["right"] and good["steps_exact"] and
                    good["phase_ok"] == good["rank_steps"] and good.get("latency") == exp_lat):
                probs.append("oracle not perfect: %s" % good)
            if good.get("whatif_err") not in (None, 0.0) or good.get("share_named") is False:
                probs.append("oracle what-if/share: %s" % good)
            if wrong["right"] or wrong_rank["right"]:
                probs.append("a wrong answer scored right")
            if (empty["right"] and t["class"] != "none") or empty["steps_exact"] or \
                    (empty["phase_ok"] and empty["rank_steps"]):
                probs.append("an empty answer scored: %s" % empty)
            if probs:
                fails += 1
                print("seed %d FAIL (%s/%s): %s" % (seed, t["shape"]["kind"], t["fault"]["kind"],
                                                    "; ".join(probs)[:600]))
        print("selftest: %d of %d seeds failed" % (fails, len(seeds)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
