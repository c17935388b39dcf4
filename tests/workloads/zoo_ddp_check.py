#!/usr/bin/env python3
# zoo_ddp_check.py - parse and validate the stdout of a zoo_ddp.py job (stdlib only)
"""load(path) -> (workload, {rank: [truth, ...]}) for the stdout of zoo_ddp_launch.sh.

Checks, raising ValueError with the first problem found:
  * exactly one "workload" line, and every other line that starts with "{" is valid JSON
    (two writers interleaving on one pipe would break that);
  * a "ready" line per rank (rank in range, once each) and the loader workers' lines
    ("worker rank=R pid=P ppid=PP" with PP the rank's pid, structure.workers per rank);
  * truth lines: pid as in the rank's ready line, steps 0, 1, 2 ... with none missing or
    repeated, each step starting where the previous one ended (start_ns + step_ns), all
    parts >= 0, the parts (input, fwd, bwd, opt, sleep, extra, eval, stop, other) adding up
    to step_ns exactly; other_ns (the workload's own bookkeeping) under 2% of the rank's
    total step time, and over 2% of step_ns in at most 2 steps or 10% of steps (a rank
    preempted, or held up by an ext4 journal commit, while it writes its line);
  * with complete=True (the default): every rank has all structure.steps steps and a
    "done rank=R pid=P steps=N" line. With complete=False (a job a fault ends early) each
    rank's steps are still checked to be 0..k without gaps.

Command line: zoo_ddp_check.py [--partial] FILE... prints one summary line per file: per
rank the median step and the median of each part, in ms.
"""

import json
import re
import statistics
import sys

PARTS = ("input", "fwd", "bwd", "opt", "sleep", "extra", "eval", "stop", "other")
TRUTH_KEYS = ("type", "rank", "pid", "step", "start_ns", "step_ns") + \
    tuple(p + "_ns" for p in PARTS) + ("scale", "wait_ns", "cpu_ns", "runq_ns")
SUM_TOLERANCE = 0.02

READY = re.compile(r"^ready rank=(\d+) pid=(\d+)$")
WORKER = re.compile(r"^worker rank=(\d+) pid=(\d+) ppid=(\d+)$")
DONE = re.compile(r"^done rank=(\d+) pid=(\d+) steps=(\d+)$")


def _fail(path, lineno, msg):
    where = f"{path}:{lineno}: " if lineno else f"{path}: "
    raise ValueError(where + msg)


def load(path, complete=True):
    workload = None
    ready, done, workers = {}, {}, {}
    truth = {}
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError as e:
                _fail(path, n, f"bad JSON line ({e}): {line[:120]}")
            kind = d.get("type")
            if kind == "workload":
                if workload is not None:
                    _fail(path, n, "a second workload line")
                workload = d
            elif kind == "truth":
                missing = [k for k in TRUTH_KEYS if k not in d]
                if missing:
                    _fail(path, n, f"truth line lacks {missing}")
                truth.setdefault(d["rank"], []).append((n, d))
            continue
        m = READY.match(line)
        if m:
            r, pid = int(m.group(1)), int(m.group(2))
            if r in ready:
                _fail(path, n, f"second ready line for rank {r}")
            ready[r] = pid
            continue
        m = WORKER.match(line)
        if m:
            workers.setdefault(int(m.group(1)), []).append((int(m.group(2)), int(m.group(3))))
            continue
        m = DONE.match(line)
        if m:
            r = int(m.group(1))
            if r in done:
                _fail(path, n, f"second done line for rank {r}")
            done[r] = (int(m.group(2)), int(m.group(3)))
    if workload is None:
        _fail(path, 0, "no workload line")
    world = workload["world_size"]
    st = workload["structure"]
    steps = st["steps"]
    if sorted(ready) != list(range(world)):
        _fail(path, 0, f"ready lines for ranks {sorted(ready)}, world_size {world}")
    for r in range(world):
        ws = workers.get(r, [])
        if len(ws) != st["workers"]:
            _fail(path, 0, f"rank {r}: {len(ws)} worker lines, structure says {st['workers']}")
        for wpid, ppid in ws:
            if ppid != ready[r]:
                _fail(path, 0, f"rank {r}: worker {wpid} has ppid {ppid}, rank pid {ready[r]}")
    out = {}
    for r in sorted(truth):
        if r not in ready:
            _fail(path, 0, f"truth lines for rank {r}, which printed no ready line")
        rows = truth[r]
        prev = None
        for i, (n, d) in enumerate(rows):
            if d["pid"] != ready[r]:
                _fail(path, n, f"rank {r}: pid {d['pid']}, ready said {ready[r]}")
            if d["step"] != i:
                _fail(path, n, f"rank {r}: step {d['step']} where step {i} was due")
            parts = [d[p + "_ns"] for p in PARTS]
            if any(v < 0 for v in parts) or d["step_ns"] <= 0:
                _fail(path, n, f"rank {r} step {i}: negative part or empty step")
            if not 0 <= d["wait_ns"] <= d["bwd_ns"] or d["cpu_ns"] < 0 or d["runq_ns"] < 0:
                _fail(path, n, f"rank {r} step {i}: wait_ns {d['wait_ns']} outside 0..bwd_ns "
                               f"{d['bwd_ns']}, or a negative cpu_ns/runq_ns")
            if sum(parts) != d["step_ns"]:
                _fail(path, n, f"rank {r} step {i}: parts add up to {sum(parts)}, "
                               f"step_ns {d['step_ns']}")
            if prev is not None and prev["start_ns"] + prev["step_ns"] != d["start_ns"]:
                _fail(path, n, f"rank {r} step {i} starts at {d['start_ns']}, the previous "
                               f"one ended at {prev['start_ns'] + prev['step_ns']}")
            prev = d
        out[r] = [d for _, d in rows]
        # A rank preempted (4 ranks on 2 vCPUs) or stalled by the file system while it writes
        # its line can push a step's other_ns to a few ms: the 2% bound holds over the run
        # and for most steps.
        total = sum(d["step_ns"] for d in out[r])
        other = sum(d["other_ns"] for d in out[r])
        if out[r] and other > SUM_TOLERANCE * total:
            _fail(path, 0, f"rank {r}: other_ns is {other / total:.1%} of all step time "
                           f"(over {SUM_TOLERANCE:.0%})")
        over = sum(d["other_ns"] > SUM_TOLERANCE * d["step_ns"] for d in out[r])
        if over > max(2, len(out[r]) // 10):
            _fail(path, 0, f"rank {r}: {over} of {len(out[r])} steps have other_ns over "
                           f"{SUM_TOLERANCE:.0%} of step_ns")
    if complete:
        for r in range(world):
            got = len(out.get(r, []))
            if got != steps:
                _fail(path, 0, f"rank {r}: {got} truth lines, {steps} steps expected")
            if r not in done:
                _fail(path, 0, f"rank {r}: no done line")
            if done[r] != (ready[r], steps):
                _fail(path, 0, f"rank {r}: done line says pid/steps {done[r]}, "
                               f"expected {(ready[r], steps)}")
    return workload, out


def summary(truth):
    """{rank: {"step": median ms, "input": median ms, ...}} over the given truth lines."""
    res = {}
    for r, rows in sorted(truth.items()):
        if not rows:
            continue
        s = {"steps": len(rows), "step": statistics.median(d["step_ns"] for d in rows) / 1e6}
        for p in PARTS:
            s[p] = statistics.median(d[p + "_ns"] for d in rows) / 1e6
        res[r] = s
    return res


def main(argv):
    partial = "--partial" in argv
    files = [a for a in argv if a != "--partial"]
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    rc = 0
    for path in files:
        try:
            w, truth = load(path, complete=not partial)
        except (ValueError, OSError) as e:
            print(f"FAIL {e}")
            rc = 1
            continue
        parts = []
        for r, s in summary(truth).items():
            nz = " ".join(f"{p}={s[p]:.2f}" for p in PARTS if s[p] >= 0.01)
            parts.append(f"r{r}[n={s['steps']} step={s['step']:.2f} {nz}]")
        print(f"OK {path}: W={w['world_size']} expect={w['expect']['class']}:"
              f"{w['expect']['rank']} " + " ".join(parts))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
