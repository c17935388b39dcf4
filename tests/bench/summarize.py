#!/usr/bin/env python3
"""Turns bench.sh's raw samples into the markdown results table (tests/bench/results.md).

Samples, one per line, tab-separated:
  p1 COND ROUND MEAN_NS MEDIAN_NS SEEN     per-call times of one 1-rank allreduce_ns run
  p2 COND RUN MEDIAN_NS PER_RANK SEEN      median over ranks of mpi_loop's iter_ns_median
  p3 PROG 0 RUNS RUN_TIME_NS WINDOW_NS     one BPF program's runs and run time over a window
  p4 CLASS RUN STEPS NS -                   steps and ns from a fault's start to its verdict
"""
import argparse
import os
import statistics
import sys

P1_NAMES = {
    "a": "(a) no probes",
    "b": "(b) floor: empty uprobe + uretprobe",
    "c": "(c) rankscope attach --json",
    "d": "(d) bpftrace enter/exit hist",
}


def med(v):
    return statistics.median(v) if v else float("nan")


def rng(v, fmt="{:.0f}"):
    return f"{fmt.format(min(v))}–{fmt.format(max(v))}" if v else "–"


def ratio(x, y):
    return x / y if y > 0 else float("nan")


def load(path):
    p1, p2, p3, p4 = {}, {}, {}, []
    global P5, P2J, P2J_CPU
    P5, P2J, P2J_CPU = {}, {}, {}
    with open(path) as f:
        for line in f:
            part, cond, rnd, a, b, seen = line.rstrip("\n").split("\t")
            if part == "p4":
                p4.append((cond, int(a), int(b)))
            elif part == "p3":
                p3[cond] = (int(a), int(b), int(seen))
            elif part == "p1":
                p1.setdefault(cond, {})[int(rnd)] = (float(a), float(b), seen)
            elif part == "p2":
                p2.setdefault(cond, {})[int(rnd)] = (float(a), b, seen)
            elif part == "p5":
                P5.setdefault(cond, {})[int(rnd)] = (float(a), b, seen)
            elif part in ("p2zoo", "p2ddp"):
                P2J.setdefault(part, {}).setdefault(cond, {})[int(rnd)] = float(a)
                if cond == "on" and seen not in ("-", ""):
                    P2J_CPU.setdefault(part, {})[int(rnd)] = float(seen)
    return p1, p2, p3, p4


def part4(p4, out):
    if not p4:
        return
    steps = [s for _, s, _ in p4]
    secs = [ns / 1e9 for _, _, ns in p4]
    out.append("## 4. Detection latency\n")
    out.append("A healthy 2-rank job; from iteration 150 one rank (picked at random) sleeps 4 ms "
               "before each allreduce. Latency is from the fault's first iteration to the first "
               "`compute` verdict on that rank, from `rankscope diagnose --json` (window 8).\n")
    out.append("| runs | steps, median | steps, max | seconds, median | seconds, max |")
    out.append("| ---: | ---: | ---: | ---: | ---: |")
    out.append(f"| {len(p4)} | {med(steps):.0f} | {max(steps)} | {med(secs):.2f} | "
               f"{max(secs):.2f} |\n")
    out.append(f"Goal: at most 10 steps or 5 s.\n")


def part3(p3, args, out):
    if not p3:
        return
    window = next(iter(p3.values()))[2]
    out.append(f"## 3. Where rankscope's time goes\n")
    out.append(f"BPF run time per program (`kernel.bpf_stats_enabled`) over a {window / 1e9:.1f} s "
               f"window of the {args.np}-rank job with rankscope attached. `% of a CPU` is run "
               "time / window; the stats themselves add a few tens of ns per run.\n")
    out.append("| program | runs/s | ns/run | % of a CPU |")
    out.append("| --- | ---: | ---: | ---: |")
    total = 0
    for name, (runs, ns, w) in sorted(p3.items(), key=lambda kv: -kv[1][1]):
        total += ns
        out.append(f"| `{name}` | {runs / (w / 1e9):.0f} | {ns / runs:.0f} | {ns / w * 100:.3f} |")
    out.append(f"| all | | | {total / window * 100:.3f} |\n")


def part1(p1, args, out):
    rounds = sorted(p1.get("a", {}))
    if not rounds or "b" not in p1:
        out.append("Part 1 has no samples.\n")
        return None
    # k = 0: mean of the run (total / calls); k = 1: median of single calls
    t = {c: [[p1[c][r][k] for r in rounds if r in p1[c]] for k in (0, 1)] for c in p1}
    base = [med(t["a"][0]), med(t["a"][1])]
    floor = [med(t["b"][0]) - base[0], med(t["b"][1]) - base[1]]

    out.append(f"## 1. Per-call probe cost on `MPI_Allreduce` (libmpi.so.40)\n")
    out.append(f"1 rank, {args.calls} back-to-back calls of {args.count} double(s) per run "
               f"(`build/bench/allreduce_ns`), {len(rounds)} alternating rounds "
               f"({' '.join(sorted(p1))}). Times are medians over rounds; the range is "
               "min–max over rounds. Added = t(x) − t(a); ratio = added / floor's added.\n")
    out.append("| condition | per call, median (ns) | range | added (ns) | / floor "
               "| per call, mean (ns) | range | added (ns) | / floor |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    heads = {}
    for c in sorted(t):
        cells = []
        for k in (1, 0):
            m = med(t[c][k])
            add = m - base[k]
            r = ratio(add, floor[k]) if c != "a" else float("nan")
            cells += [f"{m:.0f}", rng(t[c][k]), "–" if c == "a" else f"{add:.0f}",
                      "–" if c == "a" else f"{r:.2f}"]
            heads[(c, k)] = r
        out.append(f"| {P1_NAMES.get(c, c)} | " + " | ".join(cells) + " |")

    # Same-round ratios: the rounds share the machine's state at that moment.
    paired = {}
    for c in ("c", "d"):
        if c not in p1:
            continue
        v = []
        for r in rounds:
            if r in p1[c] and r in p1["b"]:
                fl = p1["b"][r][1] - p1["a"][r][1]
                v.append(ratio(p1[c][r][1] - p1["a"][r][1], fl))
        paired[c] = v
    out.append("")
    lines = [f"**rankscope / floor = {heads[('c', 1)]:.2f}** on per-call medians "
             f"({heads[('c', 0)]:.2f} on means); goal ≤ 1.2."]
    if paired.get("c"):
        lines.append(f"Per-round ratios: median {med(paired['c']):.2f}, "
                     f"range {rng(paired['c'], '{:.2f}')}.")
    if "d" in p1:
        vb = [ratio(p1["c"][r][1] - p1["a"][r][1], p1["d"][r][1] - p1["a"][r][1])
              for r in rounds if r in p1.get("c", {}) and r in p1["d"]]
        if vb:
            lines.append(f"rankscope's added cost / bpftrace's, per round: median "
                         f"{med(vb):.2f}, range {rng(vb, '{:.2f}')} (goal ≤ 0.8).")
    if "d" in t:
        lines.append(f"bpftrace / floor = {heads[('d', 1)]:.2f} on medians "
                     f"({heads[('d', 0)]:.2f} on means)"
                     + (f", per-round {rng(paired['d'], '{:.2f}')}" if paired.get("d") else "")
                     + ".")
    out.append(" ".join(lines) + "\n")
    return heads[("c", 1)]


def part2(p2, args, out):
    runs = sorted(set(p2.get("off", {})) & set(p2.get("on", {})))
    if not runs:
        out.append("Part 2 has no samples.\n")
        return None
    off = [p2["off"][r][0] for r in runs]
    on = [p2["on"][r][0] for r in runs]
    floor = [p2["floor"][r][0] for r in runs if r in p2.get("floor", {})]
    over = (med(on) / med(off) - 1) * 100
    paired = [(p2["on"][r][0] / p2["off"][r][0] - 1) * 100 for r in runs]

    out.append(f"## 2. Loop iteration of the {args.np}-rank MPI job\n")
    out.append(f"`mpi_loop -np {args.np} --iters {args.iters} --compute-us {args.compute_us}` "
               f"(default --count 1024), {len(runs)} alternating runs off/floor/on; per run the "
               "median over ranks of each rank's median iteration; rankscope attached to all "
               "ranks with `attach -p PIDS --json`; floor: the empty uprobe+uretprobe on every "
               "rank's MPI_Allreduce.\n")
    out.append("| condition | runs | iteration, median (µs) | range (µs) | stdev (µs) | vs without |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    rows = [("without rankscope", off), ("floor: empty uprobe+uretprobe", floor),
            ("with rankscope", on)]
    for name, v in rows:
        if not v:
            continue
        sd = statistics.stdev(v) if len(v) > 1 else 0.0
        out.append(f"| {name} | {len(v)} | {med(v) / 1e3:.1f} | "
                   f"{rng([x / 1e3 for x in v], '{:.1f}')} | {sd / 1e3:.1f} | "
                   f"{(med(v) / med(off) - 1) * 100:+.2f}% |")
    out.append("")
    spread = (max(off) - min(off)) / med(off) * 100
    out.append(f"**Overhead = {over:+.2f}%** (ratio of medians; goal ≤ 0.3%). Paired per-run "
               f"overheads (run i on vs run i off): median {med(paired):+.2f}%, range "
               f"{min(paired):+.2f}% to {max(paired):+.2f}%. Noise floor: the runs without "
               f"rankscope spread over {spread:.1f}% of their median.")
    if floor:
        out.append(f" The bare uprobe+uretprobe alone costs {(med(floor) / med(off) - 1) * 100:+.2f}%, "
                   f"so rankscope adds {(med(on) / med(floor) - 1) * 100:+.2f}% over the floor.")
    out.append("\n")
    return over


def part2j(out):
    """Part 2's other shapes: the 3-bucket OpenMPI job and DDP, by their own step clocks."""
    rows = [("p2zoo", "OpenMPI, 3 equal buckets a step (zoo_mpi, 2 ranks)"),
            ("p2ddp", "PyTorch DDP on gloo (zoo_ddp.py, 2 ranks)")]
    if not any(P2J.get(k) for k, _ in rows):
        return
    out.append("The same part on two more shapes, by each workload's own step clock (median "
               "over ranks of each rank's median `step_ns` after 5 steps; alternating runs; "
               "*vs without* pairs each run with the run without rankscope of the same round, "
               "median over rounds, range in brackets):\n")
    out.append("| job | condition | runs | step, median (ms) | vs without, paired |")
    out.append("| --- | --- | ---: | ---: | ---: |")
    for key, title in rows:
        d = P2J.get(key, {})
        off = d.get("off", {})
        for cond, name in (("off", "without rankscope"), ("floor", "floor: empty uprobe+uretprobe"),
                           ("on", "with rankscope")):
            v = d.get(cond, {})
            if not v:
                continue
            pair = [(v[r] / off[r] - 1) * 100 for r in sorted(v) if r in off]
            vs = (f"{med(pair):+.2f}% [{min(pair):+.2f}, {max(pair):+.2f}]"
                  if cond != "off" and pair else "")
            out.append(f"| {title} | {name} | {len(v)} | {med(list(v.values())) / 1e6:.3f} | {vs} |")
        on, fl = d.get("on", {}), d.get("floor", {})
        both = [r for r in sorted(on) if r in fl and r in off]
        if both:
            over = [(on[r] - fl[r]) / off[r] * 100 for r in both]
            out.append(f"| {title} | rankscope over the floor, points | {len(both)} | | "
                       f"{med(over):+.2f} [{min(over):+.2f}, {max(over):+.2f}] |")
    out.append("")
    ncpu = os.cpu_count() or 1
    for key, title in rows:
        cpu = list(P2J_CPU.get(key, {}).values())
        if cpu:
            out.append(f"{title}: rankscope's own process used {med(cpu):.2f}% of one core "
                       f"[{min(cpu):.2f}, {max(cpu):.2f}] while the job ran, "
                       f"{med(cpu) / ncpu:.2f} points of this {ncpu}-CPU machine. A job that "
                       "keeps every CPU busy gives that up to the drain, on top of the "
                       "probes: the floor under *rankscope over the floor* here.\n")


def part5(p5, args, out):
    runs = sorted(set(p5.get("on", {})) & set(p5.get("cap", {})))
    if not runs:
        return
    on = [p5["on"][r][0] for r in runs]
    cap = [p5["cap"][r][0] for r in runs]
    paired = [(p5["cap"][r][0] / p5["on"][r][0] - 1) * 100 for r in runs]
    sizes = [int(p5["cap"][r][2]) for r in runs if p5["cap"][r][2].isdigit()]
    out.append("## 5. During a capture\n")
    out.append(f"The job of part 2, {len(runs)} alternating runs: rankscope attached "
               "(`attach -p PIDS --json`) vs recording a capture of every rank for the whole "
               "run (`capture -p PIDS`: every syscall and off-CPU interval streamed, phase runs, "
               "the trace written when the ranks exit).\n")
    fruns = sorted(set(runs) & set(p5.get("capfp", {})))
    capfp = [p5["capfp"][r][0] for r in fruns]
    out.append("| condition | runs | iteration, median (µs) | range (µs) |")
    out.append("| --- | ---: | ---: | ---: |")
    rows = [("attached", on), ("capturing", cap)]
    if capfp:
        rows.append(("capturing, samples without stack copies", capfp))
    for name, v in rows:
        out.append(f"| {name} | {len(v)} | {med(v) / 1e3:.1f} | {rng([x / 1e3 for x in v], '{:.1f}')} |")
    out.append("")
    out.append(f"**A capture costs {(med(cap) / med(on) - 1) * 100:+.2f}%** over steady attach "
               f"(ratio of medians); paired per run: median {med(paired):+.2f}%, range "
               f"{min(paired):+.2f}% to {max(paired):+.2f}%."
               + (f" Trace size: median {med(sizes) / 1e6:.1f} MB per run." if sizes else "") + "\n")
    if capfp:
        pf = [(p5["cap"][r][0] / p5["capfp"][r][0] - 1) * 100 for r in fruns]
        out.append(f"**Copying 16 KiB of stack with each 99 Hz sample** (unwound from CFI when "
                   f"the trace is written) costs {(med(cap) / med(capfp) - 1) * 100:+.2f}% over "
                   f"the same capture with frame-pointer chains only (ratio of medians); paired "
                   f"per run: median {med(pf):+.2f}%, range {min(pf):+.2f}% to {max(pf):+.2f}%.\n")


def raw(p1, p2, out):
    out.append("<details><summary>raw samples</summary>\n")
    out.append("| part | condition | round | per call mean / iter median over ranks (ns) "
               "| per call median / per-rank iter medians (ns) | calls seen by tool |")
    out.append("| --- | --- | ---: | ---: | ---: | ---: |")
    for c in sorted(p1):
        for r, (a, b, s) in sorted(p1[c].items()):
            out.append(f"| 1 | {c} | {r} | {a:.1f} | {b:.0f} | {s} |")
    for c in ("off", "floor", "on"):
        for r, (a, b, s) in sorted(p2.get(c, {}).items()):
            out.append(f"| 2 | {c} | {r} | {a:.0f} | {b} | {s} |")
    out.append("\n</details>\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("samples")
    for k in ("date", "kernel", "cpu", "rev", "mpi", "bpftrace", "load", "elapsed", "out"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--rs-args", default="")
    for k in ("calls", "count", "rounds", "np", "iters", "compute-us", "runs"):
        ap.add_argument("--" + k, type=int, required=True)
    args = ap.parse_args()
    p1, p2, p3, p4 = load(args.samples)

    out = ["# rankscope bench results\n",
           f"- date: {args.date}",
           f"- kernel: {args.kernel}",
           f"- CPU: {args.cpu}",
           f"- rankscope: {args.rev}; {args.mpi}; {args.bpftrace}",
           f"- load average (1/5/15 min) before -> after: {args.load}; bench took {args.elapsed} s",
           "- command: `make bench` (= `tests/bench/bench.sh` as root after `make all fixtures`)"
           + (f"; extra rankscope options: `{args.rs_args}`" if args.rs_args else "") + "\n"]
    part1(p1, args, out)
    part2(p2, args, out)
    part2j(out)
    part3(p3, args, out)
    part4(p4, out)
    part5(P5, args, out)
    out.append("## Method\n")
    out.append(
        "- Each run is a fresh `mpirun`; the tool attaches by PID after the program prints "
        "`ready` and before the go-file exists (rankscope: its `{\"type\":\"rank\"` line with "
        "MPI `collective_probes`; bpftrace: `Attaching` + 1 s; floor: its `attached` line), "
        "so only the measured loop runs under the probes.\n"
        "- A run counts only if the tool saw every call: rankscope's final `self` line "
        "(collectives attempted) and the sum of bpftrace's histogram must reach the number of "
        "calls made.\n"
        "- Floor: `build/bench/uprobe_floor`, two empty BPF programs (`SEC(\"uprobe\")`, "
        "`SEC(\"uretprobe\")`, both `return 0`) attached by PID at `MPI_Allreduce`'s file "
        "offset (first instruction `push`, emulated, no single-step).\n"
        "- rankscope attaches all its families (sched, io, net and every MPI API entry); "
        "its collective probe writes one ring-buffer record per call.\n"
        "- Per call, median: median of single calls, each timed with two vDSO clock reads; "
        "mean: loop time / calls (includes rare slow calls and preemption by other load). "
        "Both include the same clock-read cost, which cancels in t(x) − t(a).\n"
        "- Other work on this machine (parallel tests) adds noise to both parts; the load "
        "average above shows how busy it was.\n"
        "\n## Reading the numbers\n\n"
        "- On this VM a bare uprobe+uretprobe already costs about 1.5 µs per call, and 0.3–0.7% "
        "of a 1 ms iteration: the 0.3% job goal is at or below the floor of any "
        "uprobe-based tool here. Compare rankscope with the floor row, not with zero.\n"
        "- Since Linux 6.11 the x86-64 uretprobe trampoline is a syscall, so every return "
        "probe also runs the io family's raw `sys_enter`/`sys_exit` programs (the `rs_sys_*` "
        "runs/s in part 3 include them); that is about 150 ns of rankscope's per-call cost.\n"
        "- Part 3 is measured inside the 1 ms-compute job: the collective programs run with "
        "caches and TLB cold after each compute phase, so their ns/run is several times the "
        "back-to-back cost in part 1. A map lookup that misses the TLB costs ~1 µs in this VM.\n")
    raw(p1, p2, out)
    with open(args.out, "w") as f:
        f.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
