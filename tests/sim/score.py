"""Score rankscope's replay output against a draw's truth, and aggregate many draws.

The draw's predicted verdict (the rule, also printed under the table):
  1. if any verdict is rank_exited, divergent or hang, the most serious present
     (rank_exited > divergent > hang), with the rank of its last verdict;
  2. else, if any verdict that blames someone (a class other than none, pipeline_bubble and
     checkpoint)
     is persistent, the most frequent class among the persistent ones (ties: the latest),
     with its most frequent rank;
  3. else, if verdicts that blame someone are at least a quarter of all verdicts, the most
     frequent class among them (transient), with its most frequent rank;
  4. else none.  pipeline_bubble and checkpoint alone count as none (a schedule, a save the
     job waits for: no straggler; the simulator's checkpoints are part of the shape).
It is right when the class equals the truth's and the culprit is right: a named rank (>= 0)
must be one of the truth's culprits; rank -1 is right only where the truth does not require
a culprit (communication: nothing in a host trace shows whose link is slow; a hang where
every rank sits inside the same collective; sequence-length imbalance; none). Where nobody
is persistent (a random rank each step), a prediction from persistent verdicts is wrong.
"""
import bisect
import json
import statistics
from collections import Counter

PHASES = ("compute", "sched_delay", "comm", "gpu_wait", "io", "input_wait", "other")
TERMINAL = ("rank_exited", "divergent", "hang")
STRAGGLER = ("input", "storage", "compute", "cpu_contention")
# verdicts that blame no straggler: a pipeline's schedule, a checkpoint the job waits for
# (the simulator's checkpoints are part of the shape, not a fault)
NOBODY = ("none", "pipeline_bubble", "checkpoint")
CLASSES = ("none", "input", "storage", "compute", "cpu_contention", "communication",
           "divergent", "hang", "rank_exited")
SHARE_KEYS = ("share", "late_share", "hit_share", "share_late", "fraction_late", "late_fraction")
PHASE_OK = 0.05


def parse(text):
    steps, verdicts, rules, bad = {}, [], [], 0
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            o = json.loads(line)
        except ValueError:
            bad += 1
            continue
        ty = o.get("type")
        if ty == "step":
            steps.setdefault(o.get("rank"), []).append(o)
        elif ty == "verdict":
            verdicts.append(o)
        elif ty == "rule":
            rules.append(o)
    return steps, verdicts, rules, bad


def predict(verdicts):
    """(class, rank, source, verdict) by the rule in the module comment."""
    for c in TERMINAL:
        vs = [v for v in verdicts if v.get("class") == c]
        if vs:
            return c, vs[-1].get("rank", -1), "terminal", vs[-1]
    blame = [v for v in verdicts if v.get("class") not in NOBODY + (None,)]
    pers = [v for v in blame if v.get("persistent")]
    for group, src in ((pers, "persistent"), (blame, "transient")):
        if not group or (src == "transient" and len(blame) * 4 < len(verdicts)):
            continue
        cnt = Counter(v["class"] for v in group)
        top = max(cnt.values())
        cls = [v["class"] for v in group if cnt[v["class"]] == top][-1]
        ranks = Counter(v.get("rank", -1) for v in group if v["class"] == cls)
        rank = ranks.most_common(1)[0][0]
        last = [v for v in group if v["class"] == cls][-1]
        return cls, rank, src, last
    return "none", -1, "none", None


def culprit_ok(t, rank, src):
    if t["no_persistent"] and src == "persistent":
        return False
    if rank is None or rank < 0 or not t["culprits"]:
        return rank is None or rank < 0 or not t["culprit_required"]
    return rank in t["culprits"]


def score(t, text):
    """One draw's scores (a small dict: no per-step arrays)."""
    steps, verdicts, rules, bad = parse(text)
    res = {"seed": t["seed"], "class": t["class"], "kind": t["fault"]["kind"],
           "shape": t["shape"]["kind"], "W": t["world_size"], "bad_lines": bad,
           "verdicts": len(verdicts)}

    # --- steps: truth counts steps 1.. complete on the rank (step 0 has no start boundary)
    exact = pm1 = True
    nts = nle = 0
    esum = 0.0
    offs = []
    for r, (bnd, ph) in enumerate(zip(t["bounds"], t["phases"])):
        n = len(ph)
        mine = steps.get(r, [])
        d = abs(len(mine) - n)
        exact &= d <= n / 100
        pm1 &= d <= max(1, n / 100)
        nts += n
        if n == 0:
            continue
        tol = 0.05 * statistics.median(bnd[i] - bnd[i - 1] for i in range(1, len(bnd)))
        used = set()
        for st in mine:
            s0 = st.get("start_ns", -1)
            j = bisect.bisect_left(bnd, s0)
            best = min((k for k in (j - 1, j) if 0 <= k < len(bnd) - 1),
                       key=lambda k: abs(bnd[k] - s0), default=None)
            if best is None or abs(bnd[best] - s0) > tol or best in used:
                continue
            used.add(best)
            offs.append(best + 1 - st.get("step", 0))
            tp = ph[best]
            fp = st.get("phases") or {}
            dur = bnd[best + 1] - bnd[best]
            err = sum(abs((fp.get(p) or 0) - tp[p]) for p in PHASES) / 2 / dur
            esum += err
            nle += err <= PHASE_OK
        esum += n - len(used)                 # a truth step nobody matched: all wrong
    res.update(steps_exact=exact, steps_pm1=pm1, rank_steps=nts, phase_ok=nle,
               phase_err_sum=esum, matched=len(offs))
    off, agree = Counter(offs).most_common(1)[0] if offs else (0, 0)

    # --- verdict
    cls, rank, src, v = predict(verdicts)
    right = cls == t["class"] and culprit_ok(t, rank, src)
    res.update(pred=cls, pred_rank=rank, pred_src=src, right=right)
    if t["class"] == "none":
        res["healthy_blame"] = any(x.get("persistent") and isinstance(x.get("rank"), int) and
                                   x["rank"] >= 0 and
                                   x.get("class") not in NOBODY
                                   for x in verdicts)
    # a verdict's step is in rankscope's numbering: only mapped when most steps matched
    if t["class"] != "none" and agree * 2 >= max(1, nts):
        for x in verdicts:
            xs = "persistent" if x.get("persistent") else "transient"
            if x.get("class") == t["class"] and culprit_ok(t, x.get("rank", -1), xs):
                res["latency"] = max(0, x.get("step", 0) + off - t["start"])
                break
    if right and t["class"] in STRAGGLER + ("communication",):
        res["persistence_right"] = (src == "persistent") == bool(t["persistent"])
    if t["class"] in STRAGGLER and t["persistent"] and "whatif_step_ns" in t:
        good = [x for x in verdicts if x.get("class") == t["class"] and
                culprit_ok(t, x.get("rank", -1), "persistent") and
                ((x.get("cost") or {}).get("whatif_step_ns") or 0) > 0]
        res["whatif_err"] = (abs(good[-1]["cost"]["whatif_step_ns"] - t["whatif_step_ns"]) /
                             t["whatif_step_ns"]) if good else None
    if t["fault"]["kind"] == "intermittent" and t["class"] != "none":
        named = False
        for x in verdicts:
            for o in (x, x.get("evidence") or {}):
                for k in SHARE_KEYS:
                    val = o.get(k)
                    if isinstance(val, (int, float)) and \
                            abs(val - t["share_hit"]) <= 0.5 * t["share_hit"]:
                        named = True
        res["share_named"] = named
    return res


def pct(a, b):
    return "%.1f%%" % (100.0 * a / b) if b else "-"


def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else None


def aggregate(results):
    """Summary dict (what the baseline stores) from per-draw results."""
    n = len(results)
    ok = [r for r in results if not r.get("error")]
    agg = {"draws": n, "rankscope_errors": n - len(ok), "classes": {}}
    preds = sorted(set(CLASSES) | {r.get("pred", "none") for r in results})
    for c in preds:
        tr = [r for r in results if r["class"] == c]
        pr = [r for r in results if r.get("pred") == c]
        tp = sum(1 for r in tr if r.get("right"))
        fp = len(pr) - sum(1 for r in pr if r.get("right"))
        p = tp / (tp + fp) if tp + fp else None
        rc = tp / len(tr) if tr else None
        f1 = 2 * p * rc / (p + rc) if p is not None and rc is not None and p + rc else (
            0.0 if tr or pr else None)
        lat = [r["latency"] for r in tr if "latency" in r]
        wi = [r["whatif_err"] for r in tr if r.get("whatif_err") is not None]
        wn = sum(1 for r in tr if "whatif_err" in r)
        agg["classes"][c] = {"truth": len(tr), "pred": len(pr), "tp": tp, "precision": p,
                             "recall": rc, "f1": f1, "lat_med": q(lat, 0.5),
                             "lat_p90": q(lat, 0.9), "whatif_med": q(wi, 0.5),
                             "whatif_n": len(wi), "whatif_draws": wn}
    agg["steps_exact"] = sum(r.get("steps_exact", False) for r in results) / max(1, n)
    agg["steps_pm1"] = sum(r.get("steps_pm1", False) for r in results) / max(1, n)
    rs = sum(r.get("rank_steps", 0) for r in results)
    agg["rank_steps"] = rs
    agg["phase_ok"] = sum(r.get("phase_ok", 0) for r in results) / max(1, rs)
    agg["phase_err_mean"] = sum(r.get("phase_err_sum", 0) for r in results) / max(1, rs)
    h = [r for r in results if r["class"] == "none"]
    agg["healthy"] = len(h)
    agg["healthy_blame"] = sum(1 for r in h if r.get("healthy_blame")) / max(1, len(h))
    it = [r for r in results if "share_named" in r]
    agg["intermittent"] = len(it)
    agg["share_named"] = sum(r["share_named"] for r in it) / max(1, len(it))
    pr = [r for r in results if "persistence_right" in r]
    agg["persistence_right"] = sum(r["persistence_right"] for r in pr) / max(1, len(pr))
    agg["persistence_n"] = len(pr)
    agg["accuracy"] = sum(1 for r in results if r.get("right")) / max(1, n)
    return agg


def f3(x):
    return "-" if x is None else "%.2f" % x


def table(agg, title):
    L = ["## %s" % title, "",
         "%d draws; rankscope failed or timed out on %d; draws right overall: %.1f%%." % (
             agg["draws"], agg["rankscope_errors"], 100 * agg["accuracy"]), "",
         "| class | truth | predicted | right | precision | recall | F1 (goal >= 0.95) | "
         "latency steps median / p90 | what-if error median (n) |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c, s in agg["classes"].items():
        if not s["truth"] and not s["pred"]:
            continue
        goal = "" if s["f1"] is None else (" ok" if s["f1"] >= 0.95 else " MISS")
        wi = "-" if not s["whatif_draws"] else "%s (%d of %d)" % (
            pct(s["whatif_med"], 1) if s["whatif_med"] is not None else "-", s["whatif_n"],
            s["whatif_draws"])
        L.append("| %s | %d | %d | %d | %s | %s | %s%s | %s / %s | %s |" % (
            c, s["truth"], s["pred"], s["tp"], f3(s["precision"]), f3(s["recall"]),
            f3(s["f1"]), goal, "-" if s["lat_med"] is None else "%g" % s["lat_med"],
            "-" if s["lat_p90"] is None else "%g" % s["lat_p90"], wi))

    def goal(ok):
        return "ok" if ok else "MISS"
    L += ["", "| score | measured | goal |", "| --- | ---: | --- |",
          "| steps exact (every rank within 1 per 100 of the truth's count) | %s | >= 98%% %s |"
          % (pct(agg["steps_exact"], 1), goal(agg["steps_exact"] >= 0.98)),
          "| steps within 1 (every rank) | %s | |" % pct(agg["steps_pm1"], 1),
          "| rank-steps with phase error <= 5%% of the step (of %d; unmatched count as wrong) "
          "| %s | >= 95%% %s |" % (agg["rank_steps"], pct(agg["phase_ok"], 1),
                                   goal(agg["phase_ok"] >= 0.95)),
          "| mean phase error per rank-step | %s | |" % pct(agg["phase_err_mean"], 1),
          "| healthy draws with a persistent blame (of %d) | %s | <= 1%% %s |" % (
              agg["healthy"], pct(agg["healthy_blame"], 1), goal(agg["healthy_blame"] <= 0.01)),
          "| intermittent draws whose share of steps hit was named (of %d) | %s | |" % (
              agg["intermittent"], pct(agg["share_named"], 1)),
          "| right draws whose persistent/intermittent call was right (of %d) | %s | |" % (
              agg["persistence_n"], pct(agg["persistence_right"], 1)),
          "", "Predicted verdict of a draw: rank_exited > divergent > hang if any verdict says "
          "so; else the most frequent class among persistent verdicts; else among transient "
          "blaming verdicts if they are >= 1/4 of all verdicts; else none (pipeline_bubble and "
          "checkpoint count as none). Right = class equal and culprit one of the truth's ranks (rank -1 "
          "accepted only where the truth needs no culprit: communication, hang with every rank "
          "inside, sequence-length imbalance). Latency: steps from the fault's start to the "
          "first right verdict (only where most steps matched the truth's). Steps: the truth "
          "counts steps 1.. complete on each rank (step 0 has no start boundary).", ""]
    return "\n".join(L)


# what a baseline comparison tolerates before it calls a score worse
MARGIN = {"f1": 0.03, "rate": 0.02}


def compare(agg, base):
    """Lines naming each score worse than the baseline by more than MARGIN."""
    worse = []
    for c, b in base.get("classes", {}).items():
        s = agg["classes"].get(c)
        if b.get("f1") is None or not b.get("truth"):
            continue
        f1 = (s or {}).get("f1") or 0.0
        if f1 < b["f1"] - MARGIN["f1"]:
            worse.append("F1 of %s: %.3f, baseline %.3f" % (c, f1, b["f1"]))
    for k in ("steps_exact", "phase_ok", "accuracy"):
        if k in base and agg[k] < base[k] - MARGIN["rate"]:
            worse.append("%s: %.3f, baseline %.3f" % (k, agg[k], base[k]))
    if "healthy_blame" in base and agg["healthy_blame"] > base["healthy_blame"] + MARGIN["rate"]:
        worse.append("healthy_blame: %.3f, baseline %.3f" % (agg["healthy_blame"],
                                                             base["healthy_blame"]))
    return worse
