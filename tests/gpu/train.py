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
for i in range(a.steps):
    if a.pause_file and i == a.pause_at:
        print(f"paused step={i}", flush=True)
        while not os.path.exists(a.pause_file):
            time.sleep(0.05)
    t0 = time.monotonic_ns()
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
time.sleep(2)   # the library's last forced flush (every 0.5 s) reaches the daemon
print(f"done steps={a.steps}", flush=True)
