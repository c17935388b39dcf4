#!/usr/bin/python3
"""async_trace.py - a real job with asynchronous collectives that writes its own op trace

usage: async_trace.py --world W --out DIR [--steps N] [--buckets B] [--compute-ms MS]
       [--slow-rank R] [--slow-ms MS]

Starts W local ranks of itself (RANK, WORLD_SIZE, MASTER_ADDR/PORT set for each) and exits
with the first failing rank's status.

Each rank (torch.distributed, gloo) runs N steps: its compute (a busy loop, + slow-ms on the
slow rank), split into B slices, each followed by an all_reduce(async_op=True) of the same
size (equal buckets: the call returns at once, gloo's thread does the work), then a wait on
every handle, then a short optimizer. What it did goes to DIR/rank<R>.jsonl as op-trace lines
(rankscope diagnose --replay reads them: README, "Op traces") on the rank's own clock
(CLOCK_MONOTONIC), and each step's truth to DIR/truth<R>.jsonl: {"step", "end_ns"}, the
return of the step's last wait, where the step ends on every rank at once.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

import torch
import torch.distributed as dist


def busy(ns):
    end = time.monotonic_ns() + ns
    while time.monotonic_ns() < end:
        pass


def launch(world):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    i = sys.argv.index("--world")
    args = sys.argv[1:i] + sys.argv[i + 2:]
    procs = [subprocess.Popen([sys.executable, __file__] + args, env=dict(
        os.environ, RANK=str(r), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port))) for r in range(world)]
    rcs = [q.wait() for q in procs]
    return next((rc for rc in rcs if rc), 0)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--buckets", type=int, default=8)
    p.add_argument("--compute-ms", type=float, default=8.0)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-ms", type=float, default=0.0)
    p.add_argument("--world", type=int, default=0, help="start this many ranks")
    a = p.parse_args()
    if a.world:
        return launch(a.world)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    bufs = [torch.ones(16384) for _ in range(a.buckets)]
    nbytes = bufs[0].numel() * bufs[0].element_size()
    ops, truth = [], []

    def op(kind, t0, t1, **kw):
        ops.append(dict(type="op", rank=rank, op=kind, start_ns=t0, dur_ns=t1 - t0, **kw))

    dist.barrier()
    compute = a.compute_ms + (a.slow_ms if rank == a.slow_rank else 0.0)
    for step in range(a.steps):
        work = []
        for b in range(a.buckets):
            t0 = time.monotonic_ns()
            busy(int(compute * 1e6 / a.buckets))
            t1 = time.monotonic_ns()
            op("compute", t0, t1)
            work.append(dist.all_reduce(bufs[b], async_op=True))
            op("allreduce", t1, time.monotonic_ns(), comm="world", bytes=nbytes, **{"async": True})
        t0 = time.monotonic_ns()
        for w in work:
            w.wait()
        t1 = time.monotonic_ns()
        op("wait", t0, t1, comm="world")
        truth.append(dict(step=step, end_ns=t1))
        t0 = time.monotonic_ns()
        busy(300_000)
        op("compute", t0, time.monotonic_ns())
    dist.barrier()
    with open(os.path.join(a.out, f"rank{rank}.jsonl"), "w") as f:
        f.write(json.dumps(dict(type="meta", world_size=world, job="async-trace")) + "\n")
        f.writelines(json.dumps(o) + "\n" for o in ops)
    with open(os.path.join(a.out, f"truth{rank}.jsonl"), "w") as f:
        f.writelines(json.dumps(t) + "\n" for t in truth)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
