#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""untracked.py DIR - the markdown section of bench part 10 from bench.sh's raw files in DIR.

DIR/samples.tsv: "COND ROUND METRIC VALUE" lines (conditions none, floor, rs, runqlat);
DIR/body_{rs,floor}.{before,after}.json: `bpftool -j prog show` around one hookcost run with
bpf_stats on. Added cost = the condition minus "none" of the same round (paired: this VM's
speed drifts by tens of percent over minutes); each figure is the median over rounds, with the
range of the paired values.
"""
import collections
import json
import statistics
import sys

METRICS = [
    ("pipe_bench_us", "`perf bench sched pipe -l 20000` (µs/op)", 2),
    ("pipe_ns", "hookcost pipe: two threads ping-pong on one CPU (ns/op)", 0),
    ("read_ns", "hookcost read(2) of /dev/zero, a syscall the io family records (ns)", 1),
    ("getppid_ns", "hookcost getppid(2), a syscall no family records (ns)", 1),
]
TOOLS = [("floor", "empty tp_btf (floor)"), ("rs", "rankscope"), ("runqlat", "runqlat")]


def fmt(v, nd):
    return f"{v:.{nd}f}"


def body(d, cond):
    def load(name):
        try:
            return {p["id"]: p for p in json.load(open(f"{d}/body_{cond}.{name}.json"))}
        except (OSError, ValueError):
            return {}
    a, b = load("before"), load("after")
    out = {}
    for i, p in b.items():
        n = p.get("name", "")
        if not (n.startswith("rs_") or n.startswith("floor_")):
            continue
        runs = p.get("run_cnt", 0) - a.get(i, {}).get("run_cnt", 0)
        ns = p.get("run_time_ns", 0) - a.get(i, {}).get("run_time_ns", 0)
        if runs > 1000:
            out[n.split("_", 1)[1]] = (runs, ns / runs)
    return out


def main():
    d = sys.argv[1]
    val = collections.defaultdict(dict)	# (metric, round) -> cond -> value
    for line in open(f"{d}/samples.tsv"):
        cond, rnd, metric, v = line.split()
        val[(metric, int(rnd))][cond] = float(v)
    rounds = sorted({r for _, r in val})
    print("\n## 10. What processes rankscope does not track pay\n")
    print(f"rankscope attached to one sleeping process, so every other process on the machine is "
          f"untracked. {len(rounds)} alternating rounds of: nothing attached (*none*), empty "
          "`tp_btf` programs on the same 11 hooks (`build/bench/hook_floor`: sched_switch, "
          "sched_wakeup(_new), sched_process_fork/exit/exec, sys_enter, sys_exit and three TCP "
          "tracepoints), `rankscope attach`, and libbpf-tools' `runqlat` (system-wide, its "
          "default). *Added* is the condition minus *none* in the same round; medians over "
          "rounds, range of the paired values in brackets; *x floor* is rankscope's added "
          "median over the floor's. hookcost loops are pinned to CPU 0, the fastest of 5 runs. Every condition waits 2 s once live before it is measured (rankscope keeps a CPU busy for about a second after it attaches).\n")
    print("| metric | none | " + " | ".join(f"{t} added" for _, t in TOOLS) +
          " | rankscope x floor | rankscope added % |")
    print("|---|---|" + "---|" * (len(TOOLS) + 2))
    for m, title, nd in METRICS:
        rows = [val[(m, r)] for r in rounds if (m, r) in val]
        rows = [x for x in rows if "none" in x]
        if not rows:
            continue
        none = statistics.median(x["none"] for x in rows)
        cells, added = [], {}
        for c, _ in TOOLS:
            dif = [x[c] - x["none"] for x in rows if c in x]
            if not dif:
                cells.append("-")
                continue
            added[c] = statistics.median(dif)
            cells.append(f"{fmt(added[c], nd)} [{fmt(min(dif), nd)}, {fmt(max(dif), nd)}]")
        xf = (f"{added['rs'] / added['floor']:.2f}x" if added.get("floor", 0) > 0 and "rs" in added
              else "floor not above noise")
        pct = f"{100 * added['rs'] / none:+.1f}%" if "rs" in added else "-"
        print(f"| {title} | {fmt(none, nd)} | " + " | ".join(cells) + f" | {xf} | {pct} |")
    rs, fl = body(d, "rs"), body(d, "floor")
    if rs and fl:
        print("\nEach program's own run time (kernel.bpf_stats_enabled, over one hookcost run; "
              "both columns include the two clock reads bpf_stats adds per run, so only their "
              "difference is rankscope's work before it knows a task is not its own):\n")
        print("| hook | runs | floor ns/run | rankscope ns/run | difference ns |")
        print("|---|---|---|---|---|")
        names = {"sched_switch": "switch", "sched_wakeup": "wakeup", "sys_enter": "sys_enter",
                 "sys_exit": "sys_exit"}
        for rsn, fln in names.items():
            if rsn in rs and fln in fl:
                print(f"| {rsn} | {rs[rsn][0]} | {fl[fln][1]:.1f} | {rs[rsn][1]:.1f} | "
                      f"{rs[rsn][1] - fl[fln][1]:+.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
