#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A small real PyTorch training loop on one GPU, for tests/gpu/run.sh: an MLP, its optimizer,
host-to-device batches and one NCCL all-reduce per step (a world of one: NCCL still runs its
kernel). Prints "ready pid=P", then "step i t0=NS t1=NS" (CLOCK_MONOTONIC around each step)
and "done steps=N". With --wait-file it waits for that file before touching CUDA, so that
rankscope inject can load the CUPTI library first or later (--inject-after-steps)."""
import argparse
import os
import time

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200)
p.add_argument("--wait-file")
p.add_argument("--pause-file", help="after --pause-at steps, wait for this file (injection)")
p.add_argument("--pause-at", type=int, default=0)
p.add_argument("--tiny-kernels", type=int, default=0,
               help="launch-bound steps: this many tiny elementwise kernels each, no NCCL")
p.add_argument("--profile-at", type=int, default=-1,
               help="run torch.profiler (Kineto, CUDA activities) from this step")
p.add_argument("--profile-steps", type=int, default=30)
a = p.parse_args()
print(f"ready pid={os.getpid()}", flush=True)
if a.wait_file:
    while not os.path.exists(a.wait_file):
        time.sleep(0.05)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
dist.init_process_group("nccl", rank=0, world_size=1)
dev = torch.device("cuda:0")
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                            torch.nn.Linear(4096, 1024)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
host_x = torch.randn(64, 1024).pin_memory()
tiny = torch.zeros(256, device=dev)
prof = None
for i in range(a.steps):
    if a.pause_file and i == a.pause_at:
        print(f"paused step={i}", flush=True)
        while not os.path.exists(a.pause_file):
            time.sleep(0.05)
    if i == a.profile_at:
        # another CUPTI client in the process: Kineto takes the activity API over
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                  torch.profiler.ProfilerActivity.CUDA])
        prof.__enter__()
        print(f"profile start step={i}", flush=True)
    if prof and i == a.profile_at + a.profile_steps:
        prof.__exit__(None, None, None)
        prof = None
        print(f"profile stop step={i}", flush=True)
    t0 = time.monotonic_ns()
    if a.tiny_kernels:
        for _ in range(a.tiny_kernels):
            tiny.add_(1.0)
    else:
        x = host_x.to(dev, non_blocking=True)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        for prm in model.parameters():
            dist.all_reduce(prm.grad)
        opt.step()
    torch.cuda.synchronize()
    print(f"step {i} t0={t0} t1={time.monotonic_ns()}", flush=True)
dist.destroy_process_group()
time.sleep(1)   # the library's last flushes (every 0.1 s) reach the daemon
print(f"done steps={a.steps}", flush=True)
