"""Run the programs of shapes.py on one global clock, then write the op trace and the truth.

Timing rules (what a real job does, as far as a host trace can see it):
  - a collective completes on every member at last effective arrival + transfer + a few us
    of per-rank jitter; effective arrival = entry + CPU starvation inside it;
  - the transfer of a collective is the largest any member asks for (a slow link slows all),
    and starts after the previous one on its communicator ended (one stream);
  - a collective whose members disagree on (op, bytes), or that is marked never, never
    completes: the ranks that reach it sit there (no dur_ns);
  - asynchronous collectives return at once; their `wait` ends at completion;
  - sends are eager (end after their own transfer); a recv ends at send + transfer.
Each rank's clock is its node's: global time + the node's offset.
"""
import random
from collections import deque

PHASES = ("compute", "sched_delay", "comm", "gpu_wait", "io", "input_wait", "other")
COMMOPS = frozenset("CWP")


class Key:
    __slots__ = ("sig", "size", "n", "arr", "xfer", "members", "broken", "done", "comm")

    def __init__(self, sig, size, comm):
        self.sig, self.size, self.n, self.arr, self.xfer = sig, size, 0, 0, 0
        self.comm = comm
        self.members, self.broken, self.done = [], False, False


def simulate(progs, comms, seed):
    """Returns per-rank records [name, start, end|None, comm, bytes, peer, async, step,
    starve, kind] (kind: the program op's letter) and per-rank exit (t, code, signal)."""
    W = len(progs)
    rng = random.Random(seed * 7 + 11)
    rnd = rng.random
    size = {c: len(m) for c, m in comms.items()}
    recs = [[] for _ in range(W)]
    T = [0] * W
    idx = [0] * W
    cnt = [dict() for _ in range(W)]
    handles = [dict() for _ in range(W)]     # handle -> Key
    comp = [dict() for _ in range(W)]        # handle -> completion time on that rank
    waiting = [None] * W                     # blocked: ('C', rec) | ('W', h, rec) | ('P',..)
    keys, p2p = {}, {}
    exits = {}
    ready = deque(range(W))

    def gap():
        return 1000 + int(rnd() * 3000)       # 1-4 us between calls: "other"

    def jit():
        return 2000 + int(rnd() * 8000)

    busy = {}       # comm -> when its last transfer ended: one stream, one at a time

    def complete(k):
        k.done = True
        base = max(k.arr, busy.get(k.comm, 0)) + k.xfer
        busy[k.comm] = base
        for r2, rec2, h2 in k.members:
            e = base + jit()
            if h2 < 0:
                rec2[2] = e
                T[r2] = e + gap()
                if waiting[r2] is not None:
                    waiting[r2] = None
                    ready.append(r2)
            else:
                comp[r2][h2] = e
                w = waiting[r2]
                if w is not None and w[0] == "W" and w[1] == h2:
                    rec = w[2]
                    rec[2] = max(rec[1] + rec[8] + 2000, e)
                    T[r2] = rec[2] + gap()
                    waiting[r2] = None
                    ready.append(r2)

    while ready:
        r = ready.popleft()
        prog, out = progs[r], recs[r]
        while idx[r] < len(prog):
            o = prog[idx[r]]
            idx[r] += 1
            t = T[r]
            s, typ = o[0], o[1]
            if typ == "L":      # the most common op: no calls
                e = t + o[3]
                out.append([o[2], t, e, None, 0, -1, False, s, 0, "L"])
                T[r] = e + 1000 + int(rnd() * 3000)
            elif typ == "C":
                _, _, op, comm, nb, xfer, h, starve, never = o
                c = cnt[r].get(comm, 0)
                cnt[r][comm] = c + 1
                kk = (comm, c)
                k = keys.get(kk)
                if k is None:
                    k = keys[kk] = Key((op, nb), size[comm], comm)
                if k.sig != (op, nb) or never:
                    k.broken = True
                rec = [op, t, None, comm, nb, -1, h >= 0, s, starve, "C"]
                out.append(rec)
                if starve:
                    out.append(["sched_delay", t + 1000, t + 1000 + starve, None, 0, -1,
                                False, s, 0, "inner"])
                k.n += 1
                k.arr = max(k.arr, t + 1000 + starve)
                k.xfer = max(k.xfer, xfer)
                k.members.append((r, rec, h))
                if h >= 0:
                    handles[r][h] = k
                    rec[2] = t + 5000 + int(rnd() * 15000)
                    T[r] = rec[2] + gap()
                if k.n == k.size and not k.broken:
                    complete(k)
                elif h < 0:
                    waiting[r] = ("C", rec)
                    break
            elif typ == "W":
                h, starve = o[2], o[3]
                k = handles[r][h]
                rec = ["wait", t, None, k.comm, 0, -1, False, s, starve, "W"]
                out.append(rec)
                if starve:
                    out.append(["sched_delay", t + 1000, t + 1000 + starve, None, 0, -1,
                                False, s, 0, "inner"])
                if k.done:
                    rec[2] = max(t + starve + 2000, comp[r][h])
                    T[r] = rec[2] + gap()
                else:
                    waiting[r] = ("W", h, rec)
                    break
            elif typ == "P":
                _, _, op, comm, nb, peer, xfer, tag = o
                ps = p2p.get(tag)
                if ps is None:
                    ps = p2p[tag] = [None, None]       # send arrival, waiting recv (r, rec)
                rec = [op, t, None, comm, nb, peer, False, s, 0, "P"]
                out.append(rec)
                if op == "send":
                    ps[0] = t
                    rec[2] = t + xfer + jit()
                    T[r] = rec[2] + gap()
                    if ps[1] is not None:
                        r2, rec2 = ps[1]
                        rec2[2] = max(rec2[1] + 2000, t + xfer) + jit()
                        T[r2] = rec2[2] + gap()
                        waiting[r2] = None
                        ready.append(r2)
                else:
                    if ps[0] is not None:
                        rec[2] = max(t + 2000, ps[0] + xfer) + jit()
                        T[r] = rec[2] + gap()
                    else:
                        ps[1] = (r, rec)
                        waiting[r] = ("P", rec)
                        break
            elif typ == "H":
                out.append([o[2], t, None, None, 0, -1, False, s, 0, "H"])
                idx[r] = len(prog)
                break
            elif typ == "E":
                exits[r] = (t, o[2], o[3], s)
                idx[r] = len(prog)
                break
    return recs, exits


def step_ends(recs, i):
    """Where step i ends (its last collective returns) on each rank that ran all of it."""
    out = []
    for rr in recs:
        e = [rec[2] for rec in rr if rec[7] == i and rec[9] in COMMOPS and
             not (rec[9] == "C" and rec[6])]
        if e and None not in e:
            out.append(max(e))
    return out


def truth_steps(recs, exits, nsteps):
    """Per rank: boundaries b[i] = end of step i's last collective (global clock), for the
    steps complete on that rank, and the phases of steps 1.. as dicts."""
    out = []
    for r, rr in enumerate(recs):
        last = {}
        openstep = exits[r][3] if r in exits else nsteps
        for rec in rr:
            if rec[2] is None:
                openstep = min(openstep, rec[7])
            elif rec[9] in COMMOPS and not (rec[9] == "C" and rec[6]):
                last[rec[7]] = rec[2]
        b = []
        for i in range(nsteps):
            if i >= openstep or i not in last:
                break
            b.append(last[i])
        ph = []
        j = 0
        for i in range(1, len(b)):
            lo, hi = b[i - 1], b[i]
            acc = dict.fromkeys(PHASES, 0)
            while j < len(rr) and (rr[j][2] is not None and rr[j][1] < hi):
                rec = rr[j]
                j += 1
                if rec[1] < lo or rec[9] == "inner":
                    continue
                d = rec[2] - rec[1]
                if rec[9] == "L":
                    acc["io" if rec[0] == "io_write" else rec[0]] += d
                else:
                    acc["comm"] += d - rec[8]
                    acc["sched_delay"] += rec[8]
            acc["other"] = (hi - lo) - sum(acc.values())
            ph.append(acc)
        out.append((b, ph))
    return out


def write_trace(path, recs, exits, offsets, rpn, meta, job, rng):
    """One JSON object a line; each rank's lines in its order, ranks interleaved in chunks."""
    chunks = []
    for r, rr in enumerate(recs):
        off = offsets[r // rpn]
        lines = []
        for rec in rr:
            name, st, en, comm, nb, peer, asyn = rec[:7]
            wr = name == "io_write"
            s = '{"type":"op","rank":%d,"op":"%s","start_ns":%d' % (r, "io" if wr else name,
                                                                   st + off)
            if wr:
                s += ',"write":true'

            if en is not None:
                s += ',"dur_ns":%d' % (en - st)
            if comm is not None:
                s += ',"comm":"%s"' % comm
            if nb:
                s += ',"bytes":%d' % nb
            if peer >= 0:
                s += ',"peer":%d' % peer
            if asyn:
                s += ',"async":true'
            lines.append((st, s + "}"))
        if r in exits:
            t, code, sig, _ = exits[r]
            s = '{"type":"exit","rank":%d,"t_ns":%d,' % (r, t + off)
            s += ('"signal":%d}' % sig) if sig else ('"code":%d}' % code)
            lines.append((t, s))
        i, prev = 0, -1e30
        while i < len(lines):
            n = rng.randint(20, 200)
            c = lines[i:i + n]
            prev = max(prev + 1, c[0][0] + rng.uniform(-1, 1) * 20e6)   # rank order kept
            chunks.append((prev, [x[1] for x in c]))
            i += n
    chunks.sort(key=lambda c: c[0])
    with open(path, "w") as fh:
        if meta:
            fh.write('{"type":"meta","world_size":%d,"job":"%s"}\n' % (len(recs), job))
        for _, c in chunks:
            fh.write("\n".join(c))
            fh.write("\n")
