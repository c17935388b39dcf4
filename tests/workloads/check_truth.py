#!/usr/bin/env python3
"""check_truth.py - check the stdout of a zoo_mpi job (tests/workloads/zoo_mpi.c): its workload
line, one truth line per rank per step that adds up, the collectives each step must have made,
the faults' marks, and a done line per rank.

    check_truth.py JOB.out [--partial] [--min-frac 0.98]

--partial: the job was stopped or killed on purpose: ranks may end early and need no done
line (implied by a kill fault). Prints a summary per rank; exit 0 if good, 1 if not (one line per problem).

As a module (stdlib only): load(path) -> (workload, {rank: [truth, ...] sorted by step}),
validate(path, ...) -> (problems, summary), expected_calls(workload, rank, step), COMPONENTS.
"""
import argparse
import json
import statistics
import sys

# the parts of step_ns (log_ns: the workload printing the previous step's line); the rest is
# a few clock reads
COMPONENTS = ("input_ns", "io_ns", "compute_ns", "sleep_ns", "comm_ns", "stopped_ns", "log_ns")
FIELDS = ("rank", "pid", "step", "start_ns", "step_ns", "preempt_ns", "collectives") + COMPONENTS
PP_FIELDS = ("stage", "busy_ns", "bubble_ns", "p2p")


def load(path):
    """(workload dict, {rank: [truth dicts sorted by step]}); other lines are skipped."""
    workload, truth = None, {}
    with open(path, errors="replace") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line.startswith('{"type":'):
                continue
            try:
                d = json.loads(line)
            except ValueError as e:
                raise ValueError(f"{path}:{n}: bad JSON line: {e}: {line[:120]}") from None
            if d.get("type") == "workload":
                if workload is not None:
                    raise ValueError(f"{path}:{n}: a second workload line")
                workload = d
            elif d.get("type") == "truth":
                truth.setdefault(d["rank"], []).append(d)
    if workload is None:
        raise ValueError(f"{path}: no workload line")
    for v in truth.values():
        v.sort(key=lambda d: d["step"])
    return workload, truth


def load_done(path):
    """{rank: steps} from the 'done rank=R pid=P steps=N' lines."""
    done = {}
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("done rank="):
                kv = dict(p.split("=", 1) for p in line.split()[1:])
                done[int(kv["rank"])] = int(kv["steps"])
    return done


def _faults(w, kind):
    return [f for f in w["faults"] if f["kind"] == kind]


def expected_calls(w, rank, step):
    """(collectives, p2p) that rank must have made in step (warmup steps are negative)."""
    s = w["structure"]
    meas = step >= 0
    changed = meas and s["change_at"] >= 0 and step >= s["change_at"]
    nb = s["buckets"] + (2 if changed else 0)
    coll, p2p = 0, 0
    if s["kind"] == "fsdp":
        k = s["fsdp"] + (2 if changed else 0)
        # --fsdp-interleave: the backward gathers each layer again before its reduce-scatter
        coll = s["accum"] * k + k * (2 if s.get("fsdp_interleave") else 1)
    elif s["kind"] == "tp":
        coll = s["accum"] * 2 * s["tp"] + (nb if s["dp_size"] > 1 else 0)
    elif s["kind"] == "moe":
        coll = 4 * s["moe"] + nb            # dispatch and combine, forward and backward
    elif s["kind"] == "pp":
        S = s.get("stages", 2)
        # the gradient norm on the world past 2 stages; middle stages pass both ways
        coll = (nb if s["dp_size"] > 1 else 0) + (1 if S > 2 else 0)
        p2p = 2 * s["pp"] * (1 if rank % S in (0, S - 1) else 2)
    else:
        coll = nb
    if meas and s["eval_every"] and (step + 1) % s["eval_every"] == 0:
        coll += 1
    if meas and any(f["arg"] == step for f in _faults(w, "divergent")):
        coll += 1
    return coll, p2p


def validate(path, partial=False, min_frac=0.98, max_outliers=0.02):
    """(problems, summary): problems is a list of lines, summary {rank: {...}}."""
    probs = []
    try:
        w, truth = load(path)
    except (OSError, ValueError) as e:
        return [str(e)], {}
    s = w["structure"]
    size, want = w["world_size"], list(range(-s["warmup"], s["steps"]))
    done = load_done(path)
    stopped = {(f["rank"], f["arg"]) for f in _faults(w, "sigstop")}
    killed = {f["rank"]: f["arg"] for f in _faults(w, "kill")}
    partial = partial or bool(killed)  # mpirun ends the others anywhere
    summary = {}
    for r in range(size):
        lines = truth.get(r, [])
        steps = [d["step"] for d in lines]
        if r in killed:	# nothing from its kill step on
            exp = [k for k in want if k < killed[r]]
        else:
            exp = want
        if steps != exp and not (partial and steps == exp[:len(steps)]):
            probs.append(f"rank {r}: steps {steps[:3]}..{steps[-3:]} ({len(steps)}), "
                         f"want {exp[0] if exp else None}..{exp[-1] if exp else None}")
        if not partial and done.get(r) != s["steps"]:
            probs.append(f"rank {r}: done line {done.get(r)}, want steps={s['steps']}")
        outliers, tot, tot_sum = 0, 0, 0
        for i, d in enumerate(lines):
            where = f"rank {r} step {d.get('step')}"
            miss = [k for k in FIELDS + (PP_FIELDS if s["kind"] == "pp" else ())
                    if not isinstance(d.get(k), int)]
            if miss:
                probs.append(f"{where}: missing {miss}")
                continue
            if d["pid"] != lines[0]["pid"]:
                probs.append(f"{where}: pid {d['pid']} != {lines[0]['pid']}")
            neg = [k for k in COMPONENTS + ("step_ns", "preempt_ns") if d[k] < 0]
            if neg:
                probs.append(f"{where}: negative {neg}")
            parts = sum(d[k] for k in COMPONENTS)
            if parts > d["step_ns"]:
                probs.append(f"{where}: parts {parts} > step_ns {d['step_ns']}")
            if parts < min_frac * d["step_ns"]:
                outliers += 1
            tot += d["step_ns"]
            tot_sum += parts
            if i + 1 < len(lines) and lines[i + 1]["start_ns"] != d["start_ns"] + d["step_ns"]:
                probs.append(f"{where}: the next step does not start at start_ns + step_ns")
            if d["preempt_ns"] > d["compute_ns"]:
                probs.append(f"{where}: preempt_ns > compute_ns")
            coll, p2p = expected_calls(w, r, d["step"])
            if d["collectives"] != coll:
                probs.append(f"{where}: {d['collectives']} collectives, want {coll}")
            if s["kind"] == "pp":
                S = s.get("stages", 2)
                if d["p2p"] != p2p or d["stage"] != r % S:
                    probs.append(f"{where}: p2p {d['p2p']} stage {d['stage']}, "
                                 f"want {p2p} {r % S}")
                if d["busy_ns"] > d["compute_ns"] or d["bubble_ns"] > d["comm_ns"]:
                    probs.append(f"{where}: busy/bubble larger than compute/comm")
            if d["step"] >= 0:
                probs += _fault_marks(w, r, d, where, stopped)
        if lines and tot_sum < min_frac * tot:
            probs.append(f"rank {r}: the parts are {tot_sum / tot:.2%} of the steps' time")
        if outliers > max(1, max_outliers * len(lines)):
            probs.append(f"rank {r}: {outliers} of {len(lines)} steps have parts under "
                         f"{min_frac:.0%} of step_ns")
        meas = [d["step_ns"] for d in lines if d["step"] >= 0]
        summary[r] = {
            "steps": len(meas),
            "median_step_ns": int(statistics.median(meas)) if meas else 0,
            "parts_frac": tot_sum / tot if tot else 0.0,
            "outliers": outliers,
        }
        for k in COMPONENTS + ("preempt_ns",):
            v = [d[k] for d in lines if d["step"] >= 0 and k in d]
            summary[r][k] = int(statistics.mean(v)) if v else 0
    return probs, summary


def _fault_marks(w, r, d, where, stopped):
    """The marks a fault must leave in its rank's truth (measured steps only)."""
    out = []
    for f in w["faults"]:
        if f["rank"] != r or d["step"] < f["from_step"]:
            continue
        if f["kind"] == "sleep" and d["sleep_ns"] < f["arg"] * 1000:
            out.append(f"{where}: sleep fault, sleep_ns {d['sleep_ns']}")
        if f["kind"] == "pipe" and d["input_ns"] < f["arg"] * 1000:
            out.append(f"{where}: pipe fault, input_ns {d['input_ns']}")
        if f["kind"] == "compute" and d["compute_ns"] < f["arg"] * 1000:
            out.append(f"{where}: compute fault, compute_ns {d['compute_ns']}")
    if (r, d["step"]) not in stopped and d["stopped_ns"]:
        out.append(f"{where}: stopped_ns without a sigstop fault")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--partial", action="store_true")
    ap.add_argument("--min-frac", type=float, default=0.98)
    a = ap.parse_args()
    probs, summary = validate(a.path, a.partial, a.min_frac)
    for r, v in sorted(summary.items()):
        print(f"rank {r}: {v['steps']} steps, median {v['median_step_ns'] / 1e6:.3f} ms, "
              f"parts {v['parts_frac']:.2%} ({v['outliers']} under), mean ms: "
              + " ".join(f"{k[:-3]}={v[k] / 1e6:.3f}" for k in COMPONENTS + ("preempt_ns",)))
    for p in probs[:50]:
        print("PROBLEM:", p)
    if len(probs) > 50:
        print(f"PROBLEM: ... {len(probs) - 50} more")
    print("ok" if not probs else f"{len(probs)} problem(s)")
    return 1 if probs else 0


if __name__ == "__main__":
    sys.exit(main())
