# zoo_ddp.py - rankscope test workload: PyTorch DDP (gloo, CPU) with known structure and faults
"""Start one process per rank with zoo_ddp_launch.sh (it sets RANK, WORLD_SIZE, MASTER_*).

A small model trained with DDP, fed by a file-reading DataLoader, that prints its own ground
truth: what the job is (structure, injected faults, the verdict a profiler should reach) and,
for every rank and measured step, where the step's time went, measured with CLOCK_MONOTONIC
(time.monotonic_ns(), the clock bpf_ktime_get_ns() reads). Measured steps are numbered
0..--steps-1; faults never fire in the --warmup steps.

Structures
  default          SmallCNN (conv-conv-linear, no BatchNorm): one gradient bucket per step
  --buckets N      N identical Linear(H, H) layers (H = --hidden, default 256) and no other
                   parameter; bucket_cap_mb and dist._DEFAULT_FIRST_BUCKET_BYTES are both set to
                   one layer's size. DDP (1.13, find_unused_parameters=False) runs its first
                   step with one bucket and rebuilds them for the second (with a broadcast),
                   so with --warmup >= 2 (the default) every measured step has N equal buckets:
                   N gloo::allreduce calls per step (checked with a uprobe and a comm hook)
  --accum A        A micro-batches per step, the first A-1 under DDP no_sync()
  --eval-every K   after the optimizer of every K-th step (step % K == K-1), dist.all_reduce of
                   a 1-element tensor (the summed loss; rank 0 prints an "eval" line)
  --len-skew       every rank's batch length this step is scaled 1x..2x by a PRNG seeded by the
                   step number (the same on all ranks): everyone is slow together, no straggler
  --seq-len L      the model sees each sample L times (rows = batch x L x skew factor): more
                   compute per step without more input work, so len-skew and seqskew stand
                   out from the noise of a shared CPU (SmallCNN fwd ~2 ms at L=1, ~7 ms at 4)

Faults (--fault may be repeated; R = rank, S = step; --fault-from S, default 0, is the first
step of the first six; expect names the first fault's class)
  compute:R:MS     rank R burns MS ms of its own CPU time (busy loop, thread CPU clock) before
                   the forward, each step: extra_ns is MS, or more when the CPU is shared
  sleep:R:MS       rank R time.sleep()s MS ms before the forward, each step: sleep_ns
  slowdata:R:MS    rank R's Dataset (in the loader worker) sleeps MS ms per batch: rank R's
                   input_ns grows by about MS minus the step's own work
  workerquota:R:PCT  rank R's loader worker is moved (from worker_init_fn, or from its first
                   item for step S > 0) into a new cgroup with a CPU quota of PCT% of one CPU
                   (period 10 ms); every rank's dataset does --decode-us (default 500 with
                   this fault) of CPU work per sample. The cgroup is removed at exit (by the
                   launcher if the rank was killed)
  storage:R:KB     rank R's dataset also reads KB KiB per batch with O_DIRECT from
                   DATA_DIR/zoo_storage.bin (--storage-mb, made before ready)
  seqskew:R        rank R's batch length scaled 1x..2x per step by its own PRNG
  sigstop:R:S      rank R stops itself with SIGSTOP at step S, before its forward (someone
                   must SIGCONT it): stop_ns on R, the peers' bwd_ns holds the wait
  kill:R:S         rank R SIGKILLs itself at step S, before its forward
  divergent:R:S    at step S every rank calls dist.all_reduce after the optimizer, rank R with a
                   tensor twice its peers' size (256 floats)
  The dataset faults act on the batches of step >= S; the worker prefetches, so input_ns
  can rise from step S-1.

What gloo does (Debian 12 gloo, measured with 2 and 4 ranks): at a divergent all_reduce the
rank that receives more bytes than it expects aborts at once (std::terminate on gloo's pair
thread, "op.preamble.length <= op.nbytes", SIGABRT, exit 134: nothing to catch); the others
get RuntimeError "Connection reset by peer" / "Connection closed by peer", print
"collective failed" and exit 1. After a kill, the peers fail the same way. Both errors come
~5 s late: the dead rank's DataLoader worker, forked after init_process_group, holds copies of
its gloo sockets until torch's worker watchdog (5 s poll) sees its parent gone.

Output (stdout, one write() per line)
  rank 0, before ready: {"type":"workload","world_size":W,"structure":{...},"faults":[{"kind":
                         K,"rank":R,"arg":A,"from_step":S}],"expect":{"class":C,"rank":R}}
                        (class none: rank null)
  each loader worker:   worker rank=R pid=P ppid=PP
  every rank:           ready rank=R pid=P
  every rank and step:  {"type":"truth","rank":R,"pid":P,"step":K,"start_ns":..,"step_ns":..,
                         "input_ns":..,"fwd_ns":..,"bwd_ns":..,"opt_ns":..,"sleep_ns":..,
                         "extra_ns":..,"eval_ns":..,"stop_ns":..,"other_ns":..,"scale":F,
                         "wait_ns":..,"cpu_ns":..,"runq_ns":..}
                        The parts are contiguous intervals of the step, in this order: sleep
                        (sleep fault), extra (compute fault), stop (sigstop fault), then per
                        micro-batch input (blocked in next() on the DataLoader iterator, plus
                        dropping the previous batch, ~0.1 ms), fwd (batch scaling, forward,
                        loss), bwd (backward, which includes DDP's wait for the gradient
                        all-reduce); then opt (optimizer step, zero_grad), eval (the
                        --eval-every and divergent all_reduce). other: the rest (rank 0's checkpoints), mostly writing
                        the previous step's line (~0.07 ms; a few ms in a step where the rank
                        is preempted or the file system stalls the write). They add up to
                        step_ns exactly. step_ns runs from this step's start to the next
                        step's start (the last step: to the end of its work). scale = batch
                        length factor (len-skew x seqskew). A line is written at the start of
                        the next step (the last one after the loop), so a rank stopped or
                        stuck in step K has written lines up to K-1.
                        Not parts: wait_ns is the time backward() spent blocked (neither on a
                        CPU nor runnable, from /proc/thread-self/schedstat): DDP's wait for
                        the all-reduce, so step_ns - wait_ns is the rank's own work and the
                        rank with the most of it arrives last. cpu_ns and runq_ns: the main
                        thread's CPU time and run-queue wait over the step.
  rank 0, eval steps:   {"type":"eval","step":K,"loss":L}
  rank 0, --resume:     {"type":"resume","step":S} (the first measured step run)
  rank 0, checkpoints:  {"type":"ckpt","rank":0,"step":K,"start_ns":T0,"end_ns":T1}

Checkpoints: with --ckpt-every K, after the optimizer of measured steps K-1, 2K-1, ... rank 0
torch.save()s the model, the optimizer, the step and --ckpt-mb MB (32) of padding to
DIR/zoo-ckpt.pt.tmp, fsyncs it and renames it to DIR/zoo-ckpt.pt (--ckpt-dir DIR, default
the --data-dir); T0..T1 spans the save, the fsync and the rename. With --resume (a
relaunched job), rank 0 loads that file before DDP is made (its broadcast gives every rank
rank 0's weights) and broadcasts the step after the saved one: the first measured step.
  every rank, at end:   done rank=R pid=P steps=N

ZOO_DDP_STARTUP_HELPER=S: before it imports torch each rank runs `sleep S` as a child, which
inherits its RANK (as ctypes.util.find_library's ldconfig does in real jobs).

Everything that is not training happens before "ready": data generation and a barrier,
process-group init, DDP's parameter broadcast, loader worker start, --warmup steps. Between
the go-file and "done" the only collectives are those of the --steps training steps (plus the
--eval-every and divergent all_reduce). Exit status: 0; 1 when a collective fails (134 when
gloo aborts); 2 on bad arguments; 3 when the go-file never appears; 77 when the workerquota
fault cannot make a cgroup with a CPU quota (every rank checks before any collective).
"""

import argparse
import atexit
import datetime
import functools
import json
import mmap
import os
import random
import signal
import sys
import time

if os.environ.get("ZOO_DDP_STARTUP_HELPER"):
    # a short-lived child that inherits RANK while the rank has no collective library yet
    # (as ctypes.util.find_library runs ldconfig): a daemon must not lose the rank to it
    import subprocess
    subprocess.run(["sleep", os.environ["ZOO_DDP_STARTUP_HELPER"]], check=True)

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, Sampler

IMG_SHAPE = (3, 32, 32)
SAMPLE_BYTES = IMG_SHAPE[0] * IMG_SHAPE[1] * IMG_SHAPE[2]
NUM_CLASSES = 10
GO_POLL_S = 0.005
EXIT_FAIL = 1
EXIT_NO_GO = 3
EXIT_SKIP = 77
DIVERGENT_NUMEL = 256  # peers' size at the divergent all_reduce; rank R uses twice this
STORAGE_FILE = "zoo_storage.bin"
DIRECT_ALIGN = 4096

FAULT_CLASS = {
    "compute": "compute", "sleep": "compute", "seqskew": "compute",
    "slowdata": "input", "workerquota": "input",
    "storage": "storage",
    "sigstop": "hang",
    "kill": "rank_exited",
    "divergent": "divergent",
}
STEP_FAULTS = ("sigstop", "kill", "divergent")  # their argument is the step
NO_ARG_FAULTS = ("seqskew",)
PARTS = ("input", "fwd", "bwd", "opt", "sleep", "extra", "eval", "stop", "other")


def say(line):
    # One write() per line: all ranks and workers share one stdout and a test parses lines.
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def die(msg, code):
    sys.stderr.write(f"zoo_ddp: {msg}\n")
    sys.stderr.flush()
    sys.exit(code)


def parse_fault(text, from_step):
    parts = text.split(":")
    kind = parts[0]
    if kind not in FAULT_CLASS:
        raise argparse.ArgumentTypeError(f"unknown fault kind {kind!r} in {text!r} "
                                         f"(one of {', '.join(FAULT_CLASS)})")
    want = 2 if kind in NO_ARG_FAULTS else 3
    if len(parts) != want:
        form = f"{kind}:RANK" if want == 2 else f"{kind}:RANK:ARG"
        raise argparse.ArgumentTypeError(f"fault {text!r}: expected {form}")
    try:
        rank = int(parts[1])
        arg = float(parts[2]) if want == 3 else None
    except ValueError:
        raise argparse.ArgumentTypeError(f"fault {text!r}: RANK and ARG must be numbers")
    if arg is not None and arg == int(arg):
        arg = int(arg)
    if rank < 0 or (arg is not None and arg < 0):
        raise argparse.ArgumentTypeError(f"fault {text!r}: negative value")
    if kind in STEP_FAULTS:
        arg = int(arg)
        from_step = arg
    if kind == "workerquota" and not 0 < arg <= 100:
        raise argparse.ArgumentTypeError(f"fault {text!r}: PCT must be in (0, 100]")
    return {"kind": kind, "rank": rank, "arg": arg, "from_step": from_step}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--go-file", default=None,
                   help="print ready, then wait until this file exists (default: start at once)")
    p.add_argument("--go-timeout-s", type=float, default=300.0)
    p.add_argument("--warmup", type=int, default=2,
                   help="untimed steps before 'ready' (DDP rebuilds buckets after step 1)")
    p.add_argument("--buckets", type=int, default=0,
                   help="N identical Linear layers in N equal gradient buckets (0: SmallCNN)")
    p.add_argument("--hidden", type=int, default=256, help="Linear width with --buckets")
    p.add_argument("--accum", type=int, default=1)
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--len-skew", action="store_true")
    p.add_argument("--seq-len", type=int, default=1,
                   help="the model sees each sample this many times (batch rows = batch "
                        "size x seq-len x skew factor): more compute per step, same input")
    p.add_argument("--fault", action="append", default=[], metavar="KIND:RANK[:ARG]")
    p.add_argument("--fault-from", type=int, default=0,
                   help="first step of compute/sleep/slowdata/workerquota/storage/seqskew")
    p.add_argument("--decode-us", type=float, default=None,
                   help="CPU time of decode-like work per sample in the dataset, every rank "
                        "(default 0, or 500 with a workerquota fault)")
    p.add_argument("--data-dir", default="/tmp/rankscope-zoo-ddp-data",
                   help="sample files; generated there if missing")
    p.add_argument("--num-files", type=int, default=256)
    p.add_argument("--storage-mb", type=int, default=256,
                   help="size of the file the storage fault reads with O_DIRECT")
    p.add_argument("--workers", type=int, default=1, help="DataLoader num_workers")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--ckpt-every", type=int, default=0,
                   help="rank 0 checkpoints after every K-th measured step (0: never)")
    p.add_argument("--ckpt-mb", type=int, default=32, help="padding in each checkpoint")
    p.add_argument("--ckpt-dir", default=None, help="where checkpoints go (the --data-dir)")
    p.add_argument("--resume", action="store_true",
                   help="start after the step of the checkpoint in --ckpt-dir, if any")
    p.add_argument("--timeout-s", type=float, default=300.0,
                   help="gloo collective timeout, so a dead peer does not hang us forever")
    a = p.parse_args()
    try:
        a.faults = [parse_fault(f, a.fault_from) for f in a.fault]
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    if a.steps < 0 or a.warmup < 0 or a.buckets < 0 or a.accum < 1 or a.eval_every < 0 \
            or a.fault_from < 0 or a.batch_size < 1 or a.seq_len < 1 or a.workers < 0 or a.hidden < NUM_CLASSES:
        p.error("bad value: --steps/--warmup/--buckets/--eval-every/--fault-from >= 0, "
                f"--accum/--batch-size/--seq-len >= 1, --hidden >= {NUM_CLASSES}")
    if any(f["kind"] in ("slowdata", "workerquota", "storage") for f in a.faults) \
            and a.workers < 1:
        p.error("slowdata, workerquota and storage faults need --workers >= 1")
    if a.ckpt_every < 0 or a.ckpt_mb < 1:
        p.error("bad value: --ckpt-every >= 0, --ckpt-mb >= 1")
    if a.ckpt_dir is None:
        a.ckpt_dir = a.data_dir
    if a.decode_us is None:
        a.decode_us = 500.0 if any(f["kind"] == "workerquota" for f in a.faults) else 0.0
    return a


def faults_for(faults, rank, kind):
    return [f for f in faults if f["rank"] == rank and f["kind"] == kind]


# ---------------------------------------------------------------- CPU quota cgroup

class QuotaGroup:
    """A CPU-quota cgroup (v2 at /sys/fs/cgroup when it lists cpu, else v1 cpu controller)."""

    def __init__(self, name, pct):
        self.pct = pct
        v2root = "/sys/fs/cgroup"
        v1root = "/sys/fs/cgroup/cpu"
        try:
            with open(os.path.join(v2root, "cgroup.controllers")) as f:
                v2 = "cpu" in f.read().split()
        except OSError:
            v2 = False
        self.v2 = v2
        self.root = v2root if v2 else v1root
        self.path = os.path.join(self.root, name)
        # quota >= 1 ms (the kernel's minimum); the period grows for small percentages
        self.period_us = max(10000, int(round(1000 * 100 / pct)))
        self.quota_us = int(round(self.period_us * pct / 100))

    def create(self):
        """Create it; raise OSError with a readable message when that is not possible."""
        if not self.v2 and not os.path.isfile(os.path.join(self.root, "cpu.cfs_quota_us")):
            raise OSError(f"no cgroup v2 with the cpu controller at /sys/fs/cgroup and no "
                          f"v1 cpu controller at {self.root}")
        if self.v2:
            try:
                with open(os.path.join(self.root, "cgroup.subtree_control"), "w") as f:
                    f.write("+cpu")
            except OSError:
                pass  # may already be on; the cpu.max write below tells
        os.makedirs(self.path, exist_ok=True)
        try:
            if self.v2:
                with open(os.path.join(self.path, "cpu.max"), "w") as f:
                    f.write(f"{self.quota_us} {self.period_us}")
            else:
                with open(os.path.join(self.path, "cpu.cfs_period_us"), "w") as f:
                    f.write(str(self.period_us))
                with open(os.path.join(self.path, "cpu.cfs_quota_us"), "w") as f:
                    f.write(str(self.quota_us))
        except OSError:
            self.remove()
            raise

    def add(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def remove(self):
        """Move anything left back to the root group, then rmdir. Never raises."""
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                pids = f.read().split()
        except OSError:
            pids = []
        for pid in pids:
            try:
                with open(os.path.join(self.root, "cgroup.procs"), "w") as f:
                    f.write(pid)
            except OSError:
                pass
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)  # a task that just exited may still be listed


def cgroup_name(rank):
    tag = os.environ.get("ZOO_DDP_TAG") or f"pid{os.getpid()}"
    return f"zoo_ddp-{tag}-r{rank}"


# ---------------------------------------------------------------- data

class ZooSamples(Dataset):
    """Each sample is one small file of raw bytes, read on every access (in the worker).

    Items are (batch_no, pos, idx): batch_no counts the batches the rank consumes, so the
    worker knows which step a batch is for (step = batch_no // accum - warmup)."""

    def __init__(self, data_dir, rank, args, quota_group):
        self.paths = sorted(os.path.join(data_dir, n) for n in os.listdir(data_dir)
                            if n.startswith("sample_") and n.endswith(".bin"))
        self.rank = rank
        self.accum = args.accum
        self.warmup = args.warmup
        self.decode_s = args.decode_us / 1e6
        self.slow = faults_for(args.faults, rank, "slowdata")
        self.storage = faults_for(args.faults, rank, "storage")
        quota = faults_for(args.faults, rank, "workerquota")
        self.quota_from = quota[0]["from_step"] if quota else None
        self.quota_group = quota_group
        self.in_quota = False
        self.storage_path = os.path.join(data_dir, STORAGE_FILE)
        self.storage_fd = -1
        self.storage_buf = None
        self.storage_off = 0

    def __len__(self):
        return len(self.paths)

    def step_of(self, batch_no):
        return batch_no // self.accum - self.warmup

    def enter_quota(self):
        self.quota_group.add(os.getpid())
        self.in_quota = True

    def decode(self, img):
        """Decode-like CPU work (blur and normalise, repeated) for decode_s of CPU time."""
        end = time.thread_time() + self.decode_s
        x = img.unsqueeze(0)
        k = torch.full((3, 1, 3, 3), 1.0 / 9.0)
        while True:
            y = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="replicate"), k, groups=3)
            x = 0.5 * x + 0.5 * (y - y.mean()) / (y.std() + 1e-6)
            if time.thread_time() >= end:
                break
        return x.squeeze(0)

    def read_direct(self, kb):
        size = kb * 1024
        if self.storage_fd < 0:
            self.storage_fd = os.open(self.storage_path, os.O_RDONLY | os.O_DIRECT)
            self.storage_size = os.fstat(self.storage_fd).st_size
            # a different start per rank and process, then a large stride through the file
            self.storage_off = (os.getpid() * 7919 * DIRECT_ALIGN) % self.storage_size
        if self.storage_buf is None or len(self.storage_buf) < size:
            self.storage_buf = mmap.mmap(-1, max(size, DIRECT_ALIGN))  # page aligned
        span = self.storage_size - size
        off = (self.storage_off % max(span, 1)) // DIRECT_ALIGN * DIRECT_ALIGN
        self.storage_off += 9973 * DIRECT_ALIGN + size
        view = memoryview(self.storage_buf)[:size]
        got = os.preadv(self.storage_fd, [view], off)
        view.release()
        if got <= 0:
            raise OSError(f"O_DIRECT read of {size} bytes at {off} returned {got}")

    def __getitem__(self, item):
        batch_no, pos, idx = item
        step = self.step_of(batch_no)
        if self.quota_from is not None and not self.in_quota and step >= self.quota_from:
            self.enter_quota()
        if pos == 0:  # once per batch
            for f in self.slow:
                if step >= f["from_step"]:
                    time.sleep(f["arg"] / 1000.0)
            for f in self.storage:
                if step >= f["from_step"]:
                    self.read_direct(f["arg"])
        with open(self.paths[idx], "rb") as fh:
            raw = fh.read(SAMPLE_BYTES)
        img = torch.frombuffer(bytearray(raw), dtype=torch.uint8).float().div_(255.0)
        img = img.view(IMG_SHAPE)
        if self.decode_s > 0:
            img = self.decode(img)
        # The label is a function of the content so the task is at least learnable.
        return img, raw[0] % NUM_CLASSES


class ZooBatches(Sampler):
    """Endless, per-rank shuffled shard as batches of (batch_no, pos, idx): one iterator
    serves every step, so persistent workers are never restarted."""

    def __init__(self, n, rank, world, batch_size, seed=0):
        self.n, self.rank, self.world, self.bs, self.seed = n, rank, world, batch_size, seed

    def __iter__(self):
        epoch, batch_no, cur = 0, 0, []
        while True:
            g = torch.Generator()
            g.manual_seed(self.seed + epoch)
            for idx in torch.randperm(self.n, generator=g).tolist()[self.rank::self.world]:
                cur.append((batch_no, len(cur), idx))
                if len(cur) == self.bs:
                    yield cur
                    cur = []
                    batch_no += 1
            epoch += 1


def worker_init(rank, dataset, quota_from, worker_id):
    del worker_id
    say(f"worker rank={rank} pid={os.getpid()} ppid={os.getppid()}")
    if quota_from is not None and quota_from <= 0:
        dataset.enter_quota()


def make_data(data_dir, rank, count, storage_mb):
    """Rank 0 fills a data dir that lacks files; everyone meets at a barrier after it."""
    if rank == 0:
        os.makedirs(data_dir, exist_ok=True)
        names = set(os.listdir(data_dir))
        for i in range(count):
            final = os.path.join(data_dir, f"sample_{i:05d}.bin")
            if os.path.basename(final) in names:
                continue
            tmp = final + f".tmp{os.getpid()}"
            with open(tmp, "wb") as f:
                f.write(os.urandom(SAMPLE_BYTES))
            os.rename(tmp, final)  # never expose a half-written sample
        final = os.path.join(data_dir, STORAGE_FILE)
        if storage_mb and (not os.path.exists(final)
                           or os.path.getsize(final) < storage_mb << 20):
            tmp = final + f".tmp{os.getpid()}"
            with open(tmp, "wb") as f:
                for _ in range(storage_mb):
                    f.write(os.urandom(1 << 20))
                os.fsync(f.fileno())
            os.rename(tmp, final)
    dist.barrier()


def wait_go(path, rank, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() >= deadline:
            die(f"rank {rank} pid {os.getpid()}: go-file {path} did not appear within "
                f"{timeout_s:.0f} s", EXIT_NO_GO)
        time.sleep(GO_POLL_S)


# ---------------------------------------------------------------- models

class SmallCNN(nn.Module):
    # No BatchNorm on purpose: buffers would add a broadcast to every DDP forward.
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 8 * 8, NUM_CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


class LinearStack(nn.Module):
    """N identical Linear(H, H): the only parameters, so each can be one gradient bucket.
    The input is average-pooled to H features and the logits are the first outputs."""

    def __init__(self, n, hidden):
        super().__init__()
        self.hidden = hidden
        self.layers = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(n))

    def forward(self, x):
        h = F.adaptive_avg_pool1d(x.reshape(x.shape[0], 1, -1), self.hidden).flatten(1)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i + 1 < len(self.layers):
                h = F.relu(h)
        return h[:, :NUM_CLASSES]


# ---------------------------------------------------------------- step accounting

class Sched:
    """This thread's CPU time and run-queue wait (/proc/thread-self/schedstat, ns), so the
    truth can tell the time backward() spends blocked (DDP's all-reduce wait) from the time
    it computes or waits for a CPU. Opened by the main thread: the fd stays bound to it."""

    fd = None

    @classmethod
    def now(cls):
        if cls.fd is None:
            cls.fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        cpu, runq = os.pread(cls.fd, 64, 0).split()[:2]
        return int(cpu), int(runq)


class Step:
    """Contiguous intervals: each lap() charges the time since the previous lap to a part.
    Besides: wait (blocked inside backward(), off CPU and not runnable: the all-reduce wait
    of the last bucket), cpu and runq (the main thread's CPU time and run-queue wait over
    the step)."""

    __slots__ = ("start", "last", "parts", "scale", "wait", "cpu", "runq", "_bwd")

    def __init__(self, start):
        self.start = self.last = start
        self.parts = dict.fromkeys(PARTS, 0)
        self.scale = 1.0
        self.wait = 0
        self.cpu, self.runq = Sched.now()
        self._bwd = None

    def backward(self, loss):
        t0, (c0, q0) = time.monotonic_ns(), Sched.now()
        loss.backward()
        t1, (c1, q1) = time.monotonic_ns(), Sched.now()
        self.wait += max(0, (t1 - t0) - (c1 - c0) - (q1 - q0))

    def finish(self):
        cpu, runq = Sched.now()
        self.cpu, self.runq = cpu - self.cpu, runq - self.runq

    def lap(self, part):
        now = time.monotonic_ns()
        self.parts[part] += now - self.last
        self.last = now

    def line(self, rank, pid, k):
        # %-formatting: json.dumps costs ~80 us here right after a step (cold caches)
        p = self.parts
        return TRUTH_FMT % ((rank, pid, k, self.start, self.last - self.start)
                            + tuple(p[x] for x in PARTS) + (self.scale, self.wait, self.cpu,
                                                             self.runq))


TRUTH_FMT = ('{"type":"truth","rank":%d,"pid":%d,"step":%d,"start_ns":%d,"step_ns":%d,'
             + ",".join('"%s_ns":%%d' % x for x in PARTS) +
             ',"scale":%.4f,"wait_ns":%d,"cpu_ns":%d,"runq_ns":%d}')


def ckpt_path(args, suffix=""):
    return os.path.join(args.ckpt_dir, "zoo-ckpt.pt" + suffix)


def checkpoint(args, model, opt, k):
    """Rank 0 after measured step k: the state up to k, written whole, then renamed."""
    t0 = time.monotonic_ns()
    tmp = ckpt_path(args, ".tmp")
    with open(tmp, "wb") as f:
        torch.save({"step": k, "model": model.state_dict(), "opt": opt.state_dict(),
                    "pad": torch.full((args.ckpt_mb << 18,), float(k))}, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, ckpt_path(args))
    say(json.dumps({"type": "ckpt", "rank": 0, "step": k, "start_ns": t0,
                    "end_ns": time.monotonic_ns()}, separators=(",", ":")))


def resume(args, rank, model):
    """--resume: rank 0 loads the checkpoint's weights; every rank learns the first step."""
    first = torch.zeros(1, dtype=torch.long)
    if rank == 0 and os.path.exists(ckpt_path(args)):
        state = torch.load(ckpt_path(args), map_location="cpu")
        model.load_state_dict(state["model"])
        first[0] = state["step"] + 1
    dist.broadcast(first, 0)
    return int(first[0])


def burn_cpu(seconds):
    """Busy loop until this thread has used `seconds` more CPU time."""
    end = time.thread_time() + seconds
    x = 1
    while time.thread_time() < end:
        for _ in range(200):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return x


def skew_factor(seed):
    return 1.0 + random.Random(seed).random()


# ---------------------------------------------------------------- main

def main():
    args = parse_args()
    torch.set_num_threads(1)  # 2 vCPUs shared by all ranks: no intra-op thread pools
    torch.manual_seed(0)
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    bad = [f for f in args.faults if f["rank"] >= world]
    if bad:
        die(f"fault on rank {bad[0]['rank']} but WORLD_SIZE is {world}", 2)

    # The quota cgroup is checked by every rank before any collective, so that all ranks
    # exit 77 together instead of leaving peers waiting on a missing rank.
    quota_group = None
    quota = [f for f in args.faults if f["kind"] == "workerquota"]
    if quota:
        probe = QuotaGroup(cgroup_name(rank) + "-probe", quota[0]["arg"])
        try:
            probe.create()
            probe.remove()
            if quota[0]["rank"] == rank:
                quota_group = QuotaGroup(cgroup_name(rank), quota[0]["arg"])
                quota_group.create()
                atexit.register(quota_group.remove)
        except OSError as e:
            die(f"rank {rank}: workerquota fault needs a cgroup with a CPU quota and could "
                f"not make one ({e}); skipping (exit 77)", EXIT_SKIP)

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout_s))
    assert dist.get_rank() == rank and dist.get_world_size() == world
    pid = os.getpid()

    need_storage = any(f["kind"] == "storage" for f in args.faults)
    make_data(args.data_dir, rank, args.num_files, args.storage_mb if need_storage else 0)

    dataset = ZooSamples(args.data_dir, rank, args, quota_group)
    loader = DataLoader(dataset, batch_sampler=ZooBatches(len(dataset), rank, world,
                                                          args.batch_size),
                        num_workers=args.workers,
                        persistent_workers=args.workers > 0,
                        worker_init_fn=functools.partial(worker_init, rank, dataset,
                                                         dataset.quota_from))
    batches = iter(loader)
    # Fetching one batch now starts the workers, so their lines precede "ready".
    pending = [next(batches)]

    def stop_workers():
        for w in getattr(batches, "_workers", []):
            try:
                os.kill(w.pid, signal.SIGKILL)
            except (OSError, TypeError):
                pass

    if args.buckets:
        model = LinearStack(args.buckets, args.hidden)
        bucket_bytes = (args.hidden * args.hidden + args.hidden) * 4
        # After the first step DDP rebuilds its buckets with a first bucket of
        # _DEFAULT_FIRST_BUCKET_BYTES and the others of bucket_cap_mb: both one layer.
        dist._DEFAULT_FIRST_BUCKET_BYTES = bucket_bytes
        bucket_cap_mb = bucket_bytes / float(1 << 20)
        n_buckets = args.buckets
    else:
        model = SmallCNN()
        bucket_cap_mb = 25.0
        n_buckets = 1
    first_step = resume(args, rank, model) if args.resume else 0
    if args.resume and rank == 0:
        say(json.dumps({"type": "resume", "step": first_step}, separators=(",", ":")))
    # DDP() broadcasts rank 0's parameters: a collective, before ready
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)

    if rank == 0:
        structure = {
            "model": "linear_stack" if args.buckets else "small_cnn",
            "params": sum(p.numel() for p in model.parameters()),
            "buckets": n_buckets, "bucket_cap_mb": bucket_cap_mb,
            "hidden": args.hidden if args.buckets else None,
            "accum": args.accum, "eval_every": args.eval_every, "len_skew": args.len_skew,
            "seq_len": args.seq_len, "batch_size": args.batch_size, "workers": args.workers,
            "decode_us": args.decode_us, "steps": args.steps, "warmup": args.warmup,
            "allreduce_per_step": n_buckets,
            "forwards_per_step": args.accum,
        }
        if args.faults:
            first = args.faults[0]
            expect = {"class": FAULT_CLASS[first["kind"]], "rank": first["rank"]}
        else:
            expect = {"class": "none", "rank": None}
        say(json.dumps({"type": "workload", "world_size": world, "structure": structure,
                        "faults": args.faults, "expect": expect}, separators=(",", ":")))

    mine = {k: faults_for(args.faults, rank, k) for k in FAULT_CLASS}
    div_ranks = {f["from_step"]: f["rank"] for f in args.faults if f["kind"] == "divergent"}

    held = [None]  # the batch in use: kept until the next one arrives

    def run_step(k, st):
        """One training step k (negative: warmup). Faults apply from their step on."""
        scale = skew_factor(f"lenskew:{k}") if args.len_skew else 1.0
        for f in mine["seqskew"]:
            if k >= f["from_step"]:
                scale *= skew_factor(f"seqskew:{rank}:{k}")
        st.scale = scale
        for f in mine["sleep"]:
            if k >= f["from_step"]:
                time.sleep(f["arg"] / 1000.0)
                st.lap("sleep")
        for f in mine["compute"]:
            if k >= f["from_step"]:
                burn_cpu(f["arg"] / 1000.0)
                st.lap("extra")
        for f in mine["sigstop"]:
            if k == f["from_step"]:
                os.kill(pid, signal.SIGSTOP)
                st.lap("stop")
        for f in mine["kill"]:
            if k == f["from_step"]:
                os.kill(pid, signal.SIGKILL)
        total = 0.0
        for m in range(args.accum):
            st.lap("other")  # nothing should land here; keeps input exact
            batch = pending.pop() if pending else next(batches)
            # Dropping the previous batch (unmapping its shared memory, ~0.1 ms here) happens
            # here, as in `for x, y in loader`, and is charged to input with the wait.
            held[0] = batch
            x, y = batch
            del batch
            st.lap("input")
            rows = int(round(x.shape[0] * args.seq_len * scale))
            if rows != x.shape[0]:
                sel = torch.arange(rows) % x.shape[0]
                x, y = x[sel], y[sel]
            if m + 1 < args.accum:
                with ddp.no_sync():
                    loss = F.cross_entropy(ddp(x), y) / args.accum
                    st.lap("fwd")
                    st.backward(loss)
            else:
                loss = F.cross_entropy(ddp(x), y) / args.accum
                st.lap("fwd")
                st.backward(loss)  # DDP's gradient all-reduce completes in here
            total += loss.item()
            del loss, x, y  # free the output now, not in some later part
            st.lap("bwd")
        opt.step()
        opt.zero_grad(set_to_none=True)
        st.lap("opt")
        if rank == 0 and k >= 0 and args.ckpt_every and (k + 1) % args.ckpt_every == 0:
            checkpoint(args, model, opt, k)
            st.lap("other")
        if k >= 0 and args.eval_every and k % args.eval_every == args.eval_every - 1:
            t = torch.tensor([total])
            dist.all_reduce(t)
            if rank == 0:
                say(json.dumps({"type": "eval", "step": k, "loss": round(t.item() / world, 6)},
                               separators=(",", ":")))
            st.lap("eval")
        if k in div_ranks:
            n = DIVERGENT_NUMEL * (2 if div_ranks[k] == rank else 1)
            dist.all_reduce(torch.ones(n))
            st.lap("eval")
        st.finish()

    try:
        # DDP rebuilds its buckets after the first step (one more broadcast): keep it out.
        for k in range(-args.warmup, 0):
            run_step(k, Step(time.monotonic_ns()))

        say(f"ready rank={rank} pid={pid}")
        if args.go_file:
            wait_go(args.go_file, rank, args.go_timeout_s)

        prev = None
        t = time.monotonic_ns()
        for k in range(first_step, args.steps):
            st = Step(t)
            if prev is not None:
                say(prev.line(rank, pid, k - 1))
                st.lap("other")
            run_step(k, st)
            prev = st
            t = st.last  # the next step starts where this one's work ended
        if prev is not None:
            say(prev.line(rank, pid, args.steps - 1))
    except RuntimeError as e:
        # A failed collective (peer gone, mismatched sizes, timeout). Exit at once: the
        # DataLoader's and the process group's orderly shutdown could wait on dead peers.
        sys.stderr.write(f"zoo_ddp: rank {rank} pid {pid}: collective failed: {e}\n")
        sys.stderr.flush()
        sys.stdout.flush()
        stop_workers()
        if quota_group is not None:
            quota_group.remove()
        os._exit(EXIT_FAIL)

    say(f"done rank={rank} pid={pid} steps={args.steps}")
    # No barrier or destroy_process_group(): no collective may follow the measured steps.
    # The loader workers are shut down by the DataLoader at exit; a quota cgroup is removed
    # by the atexit hook (which first moves anything still in it back to the root group).


if __name__ == "__main__":
    main()
