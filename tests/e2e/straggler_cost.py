#!/usr/bin/python3
"""straggler_cost.py - what a straggler costs, against the workload's own clock (issue 18).

Run by straggler_cost.sh. Real jobs of tests/workloads/ under `rankscope diagnose --json
--gpu-hour-cost 2.9`, each shape twice, side by side in one run: healthy, then with a delay
injected on one rank picked at random (rankscope is not told which). Shapes: OpenMPI with 4
equal buckets on 2 ranks (a sleep), tensor + data parallel on 4 ranks (extra compute, the CPUs
shared), PyTorch DDP (gloo) with 4 equal buckets on 2 ranks (a sleep).

The truth is what each rank measured itself: per step, its own work (the step less its time in
collectives: MPI comm_ns and log_ns, DDP wait_ns), and the late rank's lead over its peers'
median. Checked:
  - the wait rankscope measures against the late rank over the run is (peers x its measured
    lateness, summed over the steps) within 10% (15% for 4 ranks on 2 vCPUs); what it charges
    (once the verdict names the rank) is 75% of that at least, and on 2 ranks also within 10%
    of the truth, and for a sleep (wall time on any CPU) (peers x the
    injected delay x the faulted steps) within 10%; nobody else is charged beyond 2% of it;
  - rankscope finds the workload's steps, within 5% in count, healthy and faulted: on the
    tensor-parallel shape with the reference rank (0) late, its pauses are all alike and so
    are its TP all-reduces, and only the data-parallel all-reduce on the other communicator
    marks the step (it found 611, 134 or 67 steps for 153 before that was used);
  - the what-if step is within 10% of the healthy run's step, each as rankscope's time over
    the workload's own count of steps; MPI cells only (see cell()),
    20% for 4 ranks on 2 vCPUs, where the late rank's extra compute and its peers' spinning
    share the CPUs (measured 22.8 to 27.7 ms against healthy 22.6 to 24.9 ms);
  - a healthy run (no delay injected) charges no rank more than its own measured lateness
    in the steps it led (peers x its lead, +10%) plus 2% of the rank-time: ranks sharing 2
    vCPUs need not be equal, and one that really lags a stretch of a healthy run is rightly
    charged;
  - the faulted MPI cell is also served with --listen: /metrics passes promtool, its wait
    counter names the late rank, its dollars are the wait at the price, its slowdown ratio and
    what-if histogram are there; the verdict's cost words name the rank.
"""
import json
import os
import random
import re
import statistics as st
import subprocess
import sys
import time
import urllib.request

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RS = os.environ.get("RS_BIN") or os.path.join(TOP, "build", "rankscope")
ZOO = os.path.join(TOP, "build", "workloads", "zoo_mpi")
DDP = os.path.join(TOP, "tests", "workloads", "zoo_ddp_launch.sh")
PRICE = 2.9


def wait_for(pred, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def count(path, rx):
    try:
        return sum(1 for l in open(path, errors="replace") if re.search(rx, l))
    except OSError:
        return 0


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def run(d, name, kind, np, args, listen=None):
    """One job under rankscope diagnose; returns (job lines, rankscope lines, metrics text)."""
    job_out, rs_out, go = (os.path.join(d, name + s) for s in (".job", ".rs", ".go"))
    if kind == "mpi":
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np), ZOO,
               "--go-file", go] + args
    else:
        cmd = [DDP, str(np), "--go-file", go] + args
    job = subprocess.Popen(cmd, stdout=open(job_out, "w"), stderr=subprocess.STDOUT,
                           start_new_session=True)
    rs = None
    metrics = ""
    try:
        if not wait_for(lambda: count(job_out, r"^ready rank=") >= np or job.poll() is not None,
                        180) or job.poll() is not None:
            sys.exit(f"FAIL: {name}: the job did not start:\n" + open(job_out).read()[-2000:])
        pids = [re.search(r"pid=(\d+)", l).group(1) for l in open(job_out)
                if l.startswith("ready rank=")]
        rs_cmd = [RS, "diagnose", "-p", ",".join(pids), "--json", "--gpu-hour-cost", str(PRICE)]
        if listen:
            rs_cmd += ["--listen", f"127.0.0.1:{listen}"]
        rs = subprocess.Popen(rs_cmd, stdout=open(rs_out, "w"), stderr=subprocess.STDOUT,
                              start_new_session=True)
        if not wait_for(lambda: count(rs_out, '"type":"rank"') >= np or rs.poll() is not None, 60):
            sys.exit(f"FAIL: {name}: rankscope did not attach:\n" + open(rs_out).read()[-2000:])
        open(go, "w").close()
        if listen:
            # scrape once the straggler has been charged for a while
            wait_for(lambda: count(rs_out, '"type":"verdict"') >= 4 or job.poll() is not None, 120)
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{listen}/metrics",
                                             timeout=10).read().decode()
        if job.wait(600):
            sys.exit(f"FAIL: {name}: the job exited {job.returncode}:\n" +
                     open(job_out).read()[-2000:])
        rs.wait(120)
    finally:
        for p in (job, rs):
            if p and p.poll() is None:
                os.killpg(p.pid, 9)
    jl = [json.loads(l) for l in open(job_out) if l.startswith("{")]
    rl = [json.loads(l) for l in open(rs_out) if l.startswith("{")]
    return jl, rl, metrics


def own_work(kind, t):
    """A rank's step less its time in collectives, from its own clock."""
    if kind == "mpi":
        return t["step_ns"] - t["comm_ns"] - t["log_ns"]
    return t["step_ns"] - t["wait_ns"]


def work_by_step(kind, jl, np):
    """Each step every rank measured: {step: {rank: its own work (ns)}}."""
    by = {}
    for t in jl:
        if t.get("type") == "truth":
            by.setdefault(t["step"], {})[t["rank"]] = own_work(kind, t)
    return [w for w in by.values() if len(w) == np], len(by)


def step_lead(w, rank):
    """rank's own work less its peers' median in one step (ns)."""
    return w[rank] - st.median(v for r, v in w.items() if r != rank)


def truth_lateness(kind, jl, late, np):
    """The late rank's own work less its peers' median own work, summed over the steps every
    rank measured (ns); the median sleep it measured; the steps per rank."""
    steps, n = work_by_step(kind, jl, np)
    slept = st.median(t["sleep_ns"] for t in jl if t.get("type") == "truth" and t["rank"] == late
                      and t["step"] >= 0)
    return sum(step_lead(w, late) for w in steps), slept, n


def truth_late_steps(kind, jl, rank, np):
    """What rank's lead over its peers' median came to in the steps it led (ns): in a run with
    no delay injected, ranks take turns at being late, and their leads cancel in a sum."""
    return sum(max(0, step_lead(w, rank)) for w in work_by_step(kind, jl, np)[0])


def warmup(jl, kind):
    """Steps the workload ran before its measured ones (no fault in them)."""
    return len({t["step"] for t in jl if t.get("type") == "truth" and t["step"] < 0})


def total(rl, name):
    t = [d for d in rl if d["type"] == "cost_total"]
    if len(t) != 1:
        sys.exit(f"FAIL: {name}: {len(t)} cost_total lines, expected 1")
    return t[0]


def check_metrics(text, late, d):
    path = os.path.join(d, "metrics.txt")
    open(path, "w").write(text)
    r = subprocess.run(["promtool", "check", "metrics"], stdin=open(path), capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit(f"FAIL: promtool check metrics: {r.stdout}{r.stderr}")
    wait = {}
    dollars = {}
    for l in text.splitlines():
        m = re.match(r'rankscope_straggler_wait_seconds_total\{.*culprit_rank="([^"]+)".*\} (\S+)', l)
        if m:
            wait[m.group(1)] = wait.get(m.group(1), 0) + float(m.group(2))
        m = re.match(r'rankscope_straggler_cost_dollars_total\{.*culprit_rank="([^"]+)".*\} (\S+)', l)
        if m:
            dollars[m.group(1)] = float(m.group(2))
    assert wait.get(str(late), 0) > 0, f"no wait charged to rank {late} in /metrics: {wait}"
    for r, w in wait.items():
        want = w / 3600 * PRICE
        assert abs(dollars.get(r, -1) - want) <= 1e-9 + want * 1e-6, \
            f"rank {r}: dollars {dollars.get(r)} != wait {w} s at ${PRICE}/GPU-h ({want})"
    m = re.search(r'^rankscope_straggler_slowdown_ratio\{[^}]*\} (\S+)', text, re.M)
    assert m and float(m.group(1)) > 1.3, f"slowdown ratio missing or low: {m and m.group(1)}"
    m = re.search(r'^rankscope_whatif_step_seconds_count\{[^}]*\} (\S+)', text, re.M)
    assert m and float(m.group(1)) > 0, "no what-if step in the histogram"
    m = re.search(r'^rankscope_step_rank_seconds_total\{[^}]*\} (\S+)', text, re.M)
    assert m and float(m.group(1)) > wait[str(late)], "rank-seconds missing or below the wait"
    print(f"  /metrics: promtool ok; rank {late} charged {wait[str(late)]:.2f} rank-s, "
          f"${dollars[str(late)]:.6f}")


def cell(d, name, kind, np, args, fault, sleep_fault, whatif_check=True):
    late = random.randrange(np)
    h_jl, h_rl, _ = run(d, name + "-healthy", kind, np, args)
    f_jl, f_rl, metrics = run(d, name + "-fault", kind, np,
                              args + ["--fault", fault.format(r=late)],
                              listen=free_port() if kind == "mpi" and np == 2 else None)
    # healthy (no delay injected): what it charges each rank is held to that rank's own
    # measured lateness in the steps it led, plus 2% of the rank-time. Ranks sharing 2 vCPUs
    # need not be equal: a rank that really lags a stretch of a healthy run is a straggler
    # there, and charging it is right (measured: 0.52 rank-s charged for a lateness of 1.03 s
    # in its steps, 0.69 s net of the steps its peer led)
    ht = total(h_rl, name)
    frac = ht["wait_ns"] / max(1, ht["rank_ns"])
    h_nsteps = work_by_step(kind, h_jl, np)[1]
    assert abs(ht["steps"] - h_nsteps) <= 0.05 * h_nsteps, \
        f"{name} healthy: rankscope found {ht['steps']} steps for the workload's {h_nsteps}"
    h_lead = {r: truth_late_steps(kind, h_jl, r, np) for r in range(np)}
    h_charged = {c["rank"]: 0 for c in ht["culprits"]}
    for c in ht["culprits"]:
        h_charged[c["rank"]] += c["wait_ns"]
    print(f"{name} healthy: {frac:.2%} of the rank-time charged " +
          ", ".join(f"rank {r} {w/1e9:.3f} rank-s (truth {(np - 1) * h_lead.get(r, 0)/1e9:.3f})"
                    for r, w in sorted(h_charged.items())) +
          "; leads in the steps each led " +
          ", ".join(f"{r}: {v/1e9:.3f} s" for r, v in h_lead.items()))
    for r, w in h_charged.items():
        allowed = 1.10 * (np - 1) * h_lead.get(r, 0) + 0.02 * ht["rank_ns"]
        assert w <= allowed, \
            f"{name} healthy: rank {r} charged {w/1e9:.3f} rank-s ({w/max(1, ht['rank_ns']):.1%}" \
            f" of the rank-time), its own lateness {(np - 1) * h_lead.get(r, 0)/1e9:.3f}"
    # faulted: the wait charged to the late rank against its measured lateness
    ft = total(f_rl, name)
    mine = [c for c in ft["culprits"] if c["rank"] == late]
    others = sum(c["wait_ns"] for c in ft["culprits"] if c["rank"] != late)
    got_ns = sum(c["wait_ns"] for c in mine)
    steps_all = sum(c["steps"] for c in mine)
    assert others <= 0.02 * got_ns, f"{name}: {others} ns charged to other ranks"
    # totals, not per step: rankscope's steps need not be the workload's (a period learned at
    # half the step splits each in two), the time in them is the same
    lead, slept, nsteps = truth_lateness(kind, f_jl, late, np)
    want = (np - 1) * lead
    # what rankscope measured, before charging: each step's wait with the late rank as its
    # culprit. Charging waits for the straggler verdict; under load (make check) a verdict that
    # flickers to a peer's transient cpu_contention leaves some steps uncharged (measured on
    # the TP cell: 8.41 of 9.96 rank-s), so the charge is held to 75% of the measured at least
    raw = sum(c["wait_ns"] for c in f_rl if c["type"] == "cost" and c["culprit_rank"] == late)
    # 4 ranks on 2 vCPUs (the TP cell): the late rank's extra compute competes with its peers'
    # spinning in MPI, so its lead moves with the load; 2-rank cells hold 10%
    bound = 0.10 if np <= 2 else 0.15
    assert abs(raw - want) <= bound * want, \
        f"{name}: {raw/1e9:.3f} rank-s measured against rank {late}, truth {np - 1} peers x " \
        f"{lead/1e9:.3f} s of lateness = {want/1e9:.3f} rank-s"
    assert 0.75 * raw <= got_ns <= raw, \
        f"{name}: {got_ns/1e9:.3f} rank-s charged of {raw/1e9:.3f} measured against rank {late}"
    if np <= 2:
        assert abs(got_ns - want) <= bound * want, \
            f"{name}: {got_ns/1e9:.3f} rank-s charged to rank {late}, truth {np - 1} peers " \
            f"x {lead/1e9:.3f} s of lateness = {want/1e9:.3f} rank-s"
    if sleep_fault:
        inj = (np - 1) * slept * (nsteps - warmup(f_jl, kind))
        assert abs(got_ns - inj) <= 0.10 * inj, \
            f"{name}: {got_ns/1e9:.3f} rank-s vs {np - 1} x injected {slept/1e6:.2f} ms x " \
            f"{nsteps - warmup(f_jl, kind)} steps = {inj/1e9:.3f}"
    # the what-if step against the healthy run's step, each over the workload's own steps
    hs = sum(c["step_ns"] for c in h_rl if c["type"] == "cost") / h_nsteps
    wi = sum(c["whatif_step_ns"] for c in f_rl if c["type"] == "cost") / nsteps
    f_real = sum(c["step_ns"] for c in f_rl if c["type"] == "cost") / nsteps
    # DDP's ranks share the 2 vCPUs with their loader workers and gloo threads: while the late
    # one sleeps its peer runs alone and faster than in the healthy run, so the faulted run's
    # own what-if is shorter than the healthy step by that contention (measured: 16 vs 20 ms)
    # the what-if is the step less the least a peer waited, so it needs rankscope's steps to
    # be the workload's (in the same run: the late rank's own steps are the reference's pauses)
    assert abs(ft["steps"] - nsteps) <= 0.05 * nsteps, \
        f"{name}: rankscope found {ft['steps']} steps for the workload's {nsteps}"
    if whatif_check:
        assert abs(wi - hs) <= (0.10 if np <= 2 else 0.20) * hs, \
            f"{name}: what-if step {wi/1e6:.2f} ms vs healthy {hs/1e6:.2f} ms " \
            f"(real {f_real/1e6:.2f})"
    words = [v["cost"]["text"] for v in f_rl if v["type"] == "verdict" and v["cost"]["text"]]
    assert words and words[-1].startswith(f"rank {late} "), f"{name}: cost words {words[-1:]}"
    print(f"{name}: late rank {late}: {raw/1e9:.3f} rank-s measured, {got_ns/1e9:.3f} charged on {steps_all}/"
          f"{ft['steps']} steps, truth {want/1e9:.3f}; what-if step {wi/1e6:.2f} ms vs healthy "
          f"{hs/1e6:.2f} ms (real {f_real/1e6:.2f}); healthy wait {frac:.2%}")
    print(f"  words: {words[-1]}")
    if metrics:
        check_metrics(metrics, late, d)


def main():
    d = sys.argv[1]
    cells = [
        ("mpi2-buckets", "mpi", 2, ["--steps", "150", "--compute-us", "10000", "--buckets", "4"],
         "sleep:{r}:20000", True),
        ("mpi4-tp", "mpi", 4, ["--steps", "150", "--compute-us", "10000", "--tp", "2"],
         "compute:{r}:20000", False),
    ]
    if os.environ.get("RS_NO_DDP") != "1" and subprocess.run(
            ["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode == 0:
        cells.append(("ddp2-buckets", "ddp", 2, ["--steps", "120", "--buckets", "4",
                                                 "--seq-len", "8"], "sleep:{r}:60", True, False))
    else:
        print("note: PyTorch not installed: the DDP cell is left out")
    for c in cells:
        try:
            cell(d, *c)
        except AssertionError as e:
            sys.exit(f"FAIL: {e}")


if __name__ == "__main__":
    main()
