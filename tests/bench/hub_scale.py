#!/usr/bin/env python3
"""hub_scale.py - rankscope hub against synthetic node daemons: its CPU, RSS and verdict latency.

Serves N/8 node endpoints (8 ranks each) on 127.0.X.Y:PORT from one asyncio process: each
answers /api/v1/ranks, /api/v1/steps?since=CURSOR and /api/v1/diagnosis as a daemon does. The
job makes one step a second (lengths jitter by +-5%); each node numbers its steps from its own
attach (a random shift) and reads its own clock (a random offset of up to a day). After
--inject seconds one rank computes 30% of a step more. Then `rankscope hub --peers ...` runs
with --interval 1 and is measured:

  cpu: its user+system time over the run / the run's wall time (share of one core);
  rss: its peak resident set (VmHWM);
  latency: from the end of a step (when every node serves its lines) to the hub's verdict
    line for that step naming the straggler (seconds, and poll intervals), and the steps from
    the fault's first step to that verdict.

Usage: hub_scale.py --rs build/rankscope --ranks 128 [--seconds 45] [--inject 20]
Prints one JSON line with the results. Exit 0, 1 when the hub named no straggler.
"""

import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import sys
import time

PER_NODE = 8
JOB = "scale-job"


class Job:
    def __init__(self, ranks, inject_at, slow):
        self.ranks = ranks
        self.nodes = ranks // PER_NODE
        rnd = random.Random(7)
        self.shift = [0] + [rnd.randrange(0, 6) for _ in range(self.nodes - 1)]
        self.offset = [0] + [rnd.randrange(-86400 * 10**9, 86400 * 10**9)
                             for _ in range(self.nodes - 1)]
        self.rnd = rnd
        self.t0 = time.monotonic()
        self.inject_at = inject_at
        self.slow = slow
        self.steps = []          # per job step: (dur, works, served_at)
        self.clock = 5 * 86400 * 10**9
        self.starts = []
        self.lines = [[] for _ in range(self.nodes)]   # per node: JSON step lines
        self.fault_step = None

    def advance(self):
        """Make the steps due by now (one a second)."""
        due = int(time.monotonic() - self.t0)
        while len(self.steps) < due:
            g = len(self.steps)
            base = 0.6e9 * (1 + self.rnd.uniform(-0.05, 0.05))
            fault = g >= self.inject_at
            if fault and self.fault_step is None:
                self.fault_step = g
            works = [int(base * (1 + self.rnd.uniform(0, 0.01)) +
                         (0.3e9 if fault and r == self.slow else 0)) for r in range(self.ranks)]
            dur = max(works) + int(0.05e9)
            self.starts.append(self.clock)
            self.clock += dur
            # a daemon serves a step's line once the step is over: at its second's end
            self.steps.append((dur, works, self.t0 + g + 1))
            for n in range(self.nodes):
                k = g - self.shift[n] + 1
                if k < 1:
                    continue
                for r in range(n * PER_NODE, (n + 1) * PER_NODE):
                    self.lines[n].append(json.dumps({
                        "type": "step", "job": JOB, "rank": r, "pid": 1000 + r, "step": k,
                        "start_ns": self.starts[g] + self.offset[n] + 2 * 10**18,
                        "dur_ns": dur, "phases": {"compute": works[r],
                                                  "comm": dur - works[r]}},
                        separators=(",", ":")))

    def answer(self, node, path):
        self.advance()
        if path == "/api/v1/ranks":
            return json.dumps([{"type": "rank", "job": JOB, "rank": r, "pid": 1000 + r,
                                "world_size": self.ranks}
                               for r in range(node * PER_NODE, (node + 1) * PER_NODE)])
        if path == "/api/v1/diagnosis":
            return "[]"
        m = re.match(r"/api/v1/steps\?since=(\d+)&last=(\d+)", path)
        if m:
            since, last = int(m[1]), int(m[2])
            lines = self.lines[node][since:since + last]
            cur = since + len(lines)
            return ('{"cursor":%d,"lost":0,"more":%s,"steps":[%s]}' %
                    (cur, "true" if cur < len(self.lines[node]) else "false", ",".join(lines)))
        return None


def addr(n):
    return f"127.0.{1 + n // 250}.{1 + n % 250}"


async def serve(job, port):
    async def handle(reader, writer, node):
        try:
            req = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            path = req.split(b" ", 2)[1].decode()
            body = job.answer(node, path)
            if body is None:
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            else:
                b = body.encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(b) + b)
            await writer.drain()
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    servers = []
    for n in range(job.nodes):
        servers.append(await asyncio.start_server(
            lambda r, w, n=n: handle(r, w, n), addr(n), port))
    return servers


def proc_times(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hwm_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rs", required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=45)
    ap.add_argument("--inject", type=int, default=20)
    ap.add_argument("--port", type=int, default=19464)
    a = ap.parse_args()
    job = Job(a.ranks, a.inject, a.ranks - 3)
    servers = await serve(job, a.port)
    peers = ",".join(f"{addr(n)}:{a.port}" for n in range(job.nodes))
    hub_port = a.port + 1
    p = await asyncio.create_subprocess_exec(
        a.rs, "hub", "--peers", peers, "--listen", f"127.0.0.1:{hub_port}", "--interval", "1",
        "--json", "--duration", str(a.seconds), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    t_start, cpu0 = time.monotonic(), proc_times(p.pid)
    hit, hwm, cpu1, t_last = None, 0, cpu0, t_start
    while True:
        try:
            line = await asyncio.wait_for(p.stdout.readline(), 0.5)
        except asyncio.TimeoutError:
            line = None
        try:
            hwm = max(hwm, hwm_kb(p.pid))
            cpu1, t_last = proc_times(p.pid), time.monotonic()
        except OSError:
            pass
        if line == b"":
            break
        if not line:
            continue
        v = json.loads(line)
        if hit is None and v.get("class") == "compute" and v.get("rank") == job.slow:
            g = v["step"] - 1    # job steps are the reference node's (node 0): g + 1
            served = job.steps[g][2] if 0 <= g < len(job.steps) else None
            hit = {"verdict_step": g, "fault_step": job.fault_step,
                   "latency_s": round(time.monotonic() - served, 2) if served else None,
                   "steps_to_detect": g - job.fault_step + 1}
    await p.wait()
    for s in servers:
        s.close()
    wall = t_last - t_start
    out = {"ranks": a.ranks, "nodes": job.nodes, "seconds": round(wall, 1),
           "cpu_core_share": round((cpu1 - cpu0) / wall, 4) if wall > 0 else None,
           "rss_mb": round(hwm / 1024, 1), "interval_s": 1.0, "verdict": hit}
    print(json.dumps(out))
    return 0 if hit else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
