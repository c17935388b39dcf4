#!/usr/bin/env python3
"""hub_faults.py - the zoo's faults on a job across two "nodes", judged by `rankscope hub`.

Each cell runs a real OpenMPI job (tests/workloads/zoo_mpi.c, 3 equal buckets a step) whose
ranks are split between two cgroups, a node daemon scoped to each (`--cgroup`, its own port
and lock file), and `rankscope hub` over both. The fault is on a rank of node B (the last
rank). The cell is right when:

  - the hub's first verdict that is not "none" names the fault's class and rank, and most of
    its later ones do too (a hang, an exit or a divergence: its first one);
  - node A's daemon, which sees only its own ranks, never says "communication" (the waits it
    sees are for node B's rank: "remote_wait");
  - a healthy job gets no verdict from the hub that is not "none" after its first 20 s.

Straggler cells run 2 ranks (one a node, one a vCPU of the test machine: more ranks than CPUs
is CPU contention itself); divergence needs a majority to name the odd rank, so those run 4.

Usage: hub_faults.py [--only REGEX] [--out DIR] [--json FILE]; prints a markdown table.
Exit 0 when every cell is right. Needs root, OpenMPI, a writable cgroup hierarchy.
"""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
RS = os.path.join(TOP, "build", "rankscope")
ZOO = os.path.join(TOP, "build", "workloads", "zoo_mpi")
HANG = 2        # --hang-timeout of daemons and hub

# name, ranks, zoo_mpi args (fault on rank R, the last), expected hub class, seconds to watch
CELLS = [
    ("none", 2, [], "none", 40),
    ("compute", 2, ["--fault", "compute:{r}:4000"], "compute", 40),
    ("sleep", 2, ["--fault", "sleep:{r}:4000"], "compute", 40),
    ("pipe", 2, ["--loader", "--fault", "pipe:{r}:4000"], "input", 40),
    ("storage", 2, ["--fault", "storage:{r}:5120"], "storage", 40),
    ("quota", 2, ["--fault", "quota:{r}:20"], "cpu_contention", 40),
    ("workerquota", 2, ["--loader", "--loader-us", "1500", "--fault", "workerquota:{r}:10"],
     "input", 40),
    ("sigstop", 2, ["--fault", "sigstop:{r}:3000"], "hang", 60),
    ("kill", 2, ["--fault", "kill:{r}:3000"], "rank_exited", 60),
    ("divergent", 4, ["--fault", "divergent:{r}:3000"], "divergent", 60),
    ("divhang", 4, ["--fault", "divhang:{r}:3000"], "divergent", 60),
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cgroup_root():
    for r in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids"):
        if os.access(os.path.join(r, "cgroup.procs"), os.W_OK):
            return r
    return None


def wait_for(pred, timeout, step=0.2):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def lines(path, regex):
    try:
        with open(path, errors="replace") as f:
            return [l for l in f if re.search(regex, l)]
    except OSError:
        return []


def jlines(path):
    out = []
    for l in lines(path, r"^\{"):
        try:
            out.append(json.loads(l))
        except ValueError:
            pass
    return out


def killpg(p, sig):
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_cell(name, np, args, expect, secs, d, root):
    r = np - 1
    job_out, go = os.path.join(d, "job.out"), os.path.join(d, "go")
    cgs = {n: os.path.join(root, f"rankscope-hubfaults-{os.getpid()}-{name}-{n}") for n in "ab"}
    procs, files = [], []

    def start(tag, cmd):
        f = open(os.path.join(d, tag + ".out"), "w")
        files.append(f)
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(p)
        return p

    res = dict(cell=name, ranks=np, expect=expect, rank=r, first=None, agree=None,
               a_communication=0, error=None, seconds=None)
    try:
        for c in cgs.values():
            os.mkdir(c)
        job = start("job", ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np),
                            ZOO, "--buckets", "3", "--steps", "1000000", "--go-file", go] +
                    [a.format(r=r) for a in args])
        if not wait_for(lambda: len(lines(job_out, r"^ready rank=")) >= np, 60):
            res["error"] = "the job did not start"
            return res
        pids = {}
        for l in lines(job_out, r"^(ready|loader) rank="):
            m = re.search(r"rank=(\d+) pid=(\d+)", l)
            if m:
                pids.setdefault(int(m.group(1)), []).append(int(m.group(2)))
        for rank, ps in pids.items():
            node = "a" if rank < np // 2 else "b"
            for p in ps:
                with open(os.path.join(cgs[node], "cgroup.procs"), "w") as f:
                    f.write(str(p))
        ports = {n: free_port() for n in "ab"}
        for n in "ab":
            os.makedirs(os.path.join(d, n), exist_ok=True)
            start("rsd_" + n, [RS, "daemon", "--all", "--cgroup", "/" + os.path.basename(cgs[n]),
                               "--listen", f"127.0.0.1:{ports[n]}", "--lock-file",
                               os.path.join(d, n, "lock"), "--hang-timeout", str(HANG),
                               "--capture-dir", os.path.join(d, n, "cap"), "--json"])
        for n in "ab":
            want = [p for rank, ps in pids.items() for p in ps[-1:]
                    if ("a" if rank < np // 2 else "b") == n]
            out = os.path.join(d, f"rsd_{n}.out")
            if not wait_for(lambda: all(lines(out, f"attached to PID {p}:") for p in want), 30):
                res["error"] = f"daemon {n} did not attach"
                return res
        hub_out = os.path.join(d, "hub.out")
        start("hub", [RS, "hub", "--peers", f"127.0.0.1:{ports['a']},127.0.0.1:{ports['b']}",
                      "--listen", f"127.0.0.1:{free_port()}", "--interval", "0.5", "--json",
                      "--hang-timeout", str(HANG), "--capture-dir", os.path.join(d, "hcap")])
        t0, t0_ns = time.time(), time.monotonic_ns()
        open(go, "w").close()

        def verdicts():
            return [v for v in jlines(hub_out) if v.get("type") == "verdict"]
        if expect == "none":
            time.sleep(secs)
        else:
            wait_for(lambda: any((v["class"], v["rank"]) == (expect, r) for v in verdicts()),
                     secs)
            time.sleep(3)
        v = [x for x in verdicts() if x["class"] != "none"]
        if expect == "none":
            # the first 20 s: nodes line up, the job warms up on two shared vCPUs
            late = [x for x in v if x["t_ns"] >= t0_ns + 20 * 10**9]
            res["first"] = None if not late else (late[0]["class"], late[0]["rank"])
            res["false"] = len(late)
        elif v:
            res["first"] = (v[0]["class"], v[0]["rank"])
            res["agree"] = sum((x["class"], x["rank"]) == (expect, r) for x in v) / len(v)
            hit = [x for x in v if (x["class"], x["rank"]) == (expect, r)]
            if hit:
                res["seconds"] = round(time.time() - t0, 1)
        res["a_communication"] = sum(1 for x in jlines(os.path.join(d, "rsd_a.out"))
                                     if x.get("type") == "verdict" and
                                     x.get("class") == "communication")
        return res
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                killpg(p, signal.SIGCONT)
                killpg(p, signal.SIGKILL)
                p.wait()
        for f in files:
            f.close()
        for c in cgs.values():
            if not os.path.isdir(c):
                continue
            try:
                with open(os.path.join(c, "cgroup.procs")) as f:
                    left = f.read().split()
                for p in left:
                    with open(os.path.join(root, "cgroup.procs"), "w") as g:
                        g.write(p)
            except OSError:
                pass
            for _ in range(50):
                try:
                    os.rmdir(c)
                    break
                except OSError:
                    time.sleep(0.1)


def right(res):
    if res["error"]:
        return False
    if res["a_communication"]:
        return False
    if res["expect"] == "none":
        return res["first"] is None
    return res["first"] == (res["expect"], res["rank"]) and (res["agree"] or 0) >= 0.6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="run the cells whose name matches this regex")
    ap.add_argument("--out", help="keep the outputs here")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    if os.geteuid():
        print("hub_faults: needs root (eBPF)", file=sys.stderr)
        return 77
    root = cgroup_root()
    if not root:
        print("hub_faults: no writable cgroup hierarchy", file=sys.stderr)
        return 77
    base = a.out or tempfile.mkdtemp(prefix="rankscope-hubfaults-")
    results = []
    for name, np, args, expect, secs in CELLS:
        if a.only and not re.search(a.only, name):
            continue
        d = os.path.join(base, name)
        os.makedirs(d, exist_ok=True)
        res = run_cell(name, np, args, expect, secs, d, root)
        res["right"] = right(res)
        results.append(res)
        print(f"hub_faults: {name}: {'right' if res['right'] else 'WRONG'} {res}",
              file=sys.stderr, flush=True)
    print("| cell | ranks (A+B) | expected | hub's first verdict | later agreeing | node A said "
          "communication | seconds to verdict | right |")
    print("|---|---|---|---|---|---|---|---|")
    for res in results:
        first = "none" if not res["first"] else f"{res['first'][0]} on rank {res['first'][1]}"
        exp = "none" if res["expect"] == "none" else f"{res['expect']} on rank {res['rank']}"
        agree = "" if res["agree"] is None else f"{res['agree'] * 100:.0f}%"
        print(f"| {res['cell']} | {res['ranks'] // 2}+{res['ranks'] - res['ranks'] // 2} | "
              f"{exp} | {first}{' (' + res['error'] + ')' if res['error'] else ''} | {agree} | "
              f"{res['a_communication']} | {res['seconds'] or ''} | "
              f"{'yes' if res['right'] else 'NO'} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f)
    return 0 if all(r["right"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
