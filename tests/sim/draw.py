"""One draw: shape + fault -> programs -> timeline -> op trace file + truth."""
import json
import os
import statistics

import engine
import shapes

ABSORBED = 0.01     # a fault that slows the job's steps by less than this is hidden

def make(seed, outdir, keep_truth=True):
    """Writes outdir/trace.jsonl (and outdir/truth.json); returns the truth (a dict)."""
    sh = shapes.draw_shape(seed)
    f = shapes.draw_fault(seed, sh)
    b = shapes.Builder(seed, sh, None if f["class"] == "none" else f)
    progs = b.build()
    nops = sum(len(p) for p in progs)
    recs, exits = engine.simulate(progs, b.comms, seed)
    del progs
    rng = shapes.sub(seed, 7)
    ts = engine.truth_steps(recs, exits, sh["steps"])
    if sh["tail"]:
        # the recording stops part way into the step after the last one counted; an op
        # running then is not written (a missing dur_ns would mean it never returned)
        ends = [b2[-1] for b2, _ in ts]
        med = statistics.median(b2[-1] - b2[-2] for b2, _ in ts)
        cut = max(ends) + int(rng.uniform(0.2, 0.8) * med)
        # ... and before that step's end on every rank: a step complete in the trace is one
        # the truth must count, and it counts steps up to the last one only
        tail = engine.step_ends(recs, sh["steps"])
        if tail:
            cut = max(min(cut, min(tail) - 1), max(ends) + 1)
        for rr in recs:
            j = next((j for j, rec in enumerate(rr) if rec[2] is None or rec[2] > cut), None)
            if j is not None:
                del rr[j:]

    W, rpn = sh["W"], sh["rpn"]
    base = rng.randint(10**11, 5 * 10**12)
    offsets = [base + int(rng.uniform(-3e9, 3e9)) for _ in range((W + rpn - 1) // rpn)]
    job = "sim%d" % seed
    trace = os.path.join(outdir, "trace.jsonl")
    engine.write_trace(trace, recs, exits, offsets, rpn, sh["meta"], job, rng)
    del recs

    terminal = f["class"] in ("hang", "divergent", "rank_exited")
    first = 1 if terminal else max(1, f["start"] + 1)
    durs = [b2[i] - b2[i - 1] for b2, _ in ts for i in range(first, len(b2))]
    t = {"seed": seed, "shape": sh, "fault": f, "class": f["class"],
         "culprits": f["culprits"], "culprit_required": f["culprit_required"],
         "no_persistent": f["no_persistent"], "persistent": f["persistent"],
         "start": f["start"], "ops": nops, "world_size": W,
         "median_step_ns": int(statistics.median(durs)) if durs else 0,
         # per rank, on its own clock: step boundaries and the phases of steps 1..
         "bounds": [[x + offsets[r // rpn] for x in b2] for r, (b2, _) in enumerate(ts)],
         "phases": [ph for _, ph in ts]}
    if f["kind"] == "intermittent":
        hit = b.hit[f["start"]:]
        t["share_hit"] = sum(hit) / max(1, len(hit))
    if f["class"] != "none" and not terminal:
        # the what-if twin: same seed, same noise, no fault
        tw = shapes.Builder(seed, sh, None)
        recs, exits = engine.simulate(tw.build(), tw.comms, seed)   # (its tail is unused)
        twin = per_step(engine.truth_steps(recs, exits, sh["steps"]))
        real = per_step(ts)
        steps = [i for i in range(first, min(len(real), len(twin)))
                 if f["kind"] != "intermittent" or b.hit[i]]
        t["whatif_step_ns"] = int(statistics.median(twin[i] for i in range(first, len(twin))))
        t["impact"] = statistics.median(real[i] / twin[i] - 1 for i in steps) if steps else 0
        if t["impact"] < ABSORBED:
            # the job never waits for it (a pipeline bubble or an overlap hides it): no
            # rank holds the others back, so the right answer is none
            f["absorbed"] = True
            t.update({"class": "none", "culprits": [], "culprit_required": False,
                      "no_persistent": False, "persistent": False})
    if keep_truth:
        with open(os.path.join(outdir, "truth.json"), "w") as fh:
            json.dump(t, fh, separators=(",", ":"))
    return t


def per_step(ts):
    """Median over ranks of each step's duration (index 0: the partial first step, 0)."""
    n = min(len(b2) for b2, _ in ts)
    return [0] + [statistics.median(b2[i] - b2[i - 1] for b2, _ in ts) for i in range(1, n)]


def describe(t):
    """Two human lines: the shape and the fault."""
    sh, f = t["shape"], t["fault"]
    keys = {"dp": ("buckets", "equal", "async", "accum"), "tpdp": ("tp", "layers", "buckets",
            "accum"), "pp": ("stages", "dp", "micro", "sched"), "fsdp": ("layers", "prefetch"),
            "moe": ("layers", "buckets")}[sh["kind"]]
    s = "shape: %s W=%d (%d/node) steps=%d compute=%.1fms comm=%.0f%% jitter=%.1f%% " % (
        sh["kind"], sh["W"], sh["rpn"], sh["steps"], sh["T"] / 1e6, sh["comm_frac"] * 100,
        sh["jitter"] * 100)
    s += " ".join("%s=%s" % (k, sh[k]) for k in keys)
    if sh["var"]:
        s += " step_var=%.2f" % sh["var"]
    if sh["eval_every"]:
        s += " eval_every=%d" % sh["eval_every"]
    if sh["ckpt_every"]:
        s += " ckpt_every=%d%s" % (sh["ckpt_every"], " rank0" if sh["ckpt_rank0"] else "")
    s += " ops=%d" % t["ops"]
    g = "fault: %s -> class %s" % (f["kind"], f["class"])
    for k in ("rank", "mag", "factor", "where", "how", "k", "p", "stage", "pair", "signal",
              "code"):
        if k in f and f[k] is not None and not (k == "rank" and f["class"] == "none"):
            g += " %s=%s" % (k, ("%.3f" % f[k]) if isinstance(f[k], float) else f[k])
    g += " start=%d persistent=%s" % (f["start"], f["persistent"])
    if "share_hit" in t:
        g += " share_hit=%.3f" % t["share_hit"]
    if "whatif_step_ns" in t:
        g += " whatif=%.1fms impact=%+.1f%%" % (t["whatif_step_ns"] / 1e6, t["impact"] * 100)
    if f.get("absorbed"):
        g += " ABSORBED (truth: none)"
    g += " median_step=%.1fms" % (t["median_step_ns"] / 1e6)
    return s + "\n" + g
