"""Draw one training shape and one fault from a seed, and build each rank's program.

A program is, per rank, a flat list of op tuples, each tagged with its step index:
  (s, 'L', kind, dur)                     local: compute, io, input_wait, sched_delay
  (s, 'C', op, comm, nbytes, xfer, handle, starve, never)
                                          collective; handle >= 0: asynchronous (a later W);
                                          starve: runnable-not-running time inside it;
                                          never: it never completes (a hang inside)
  (s, 'W', handle, starve)                blocked until the asynchronous collective completes
  (s, 'P', op, comm, nbytes, peer, xfer, tag)   send/recv, matched by tag
  (s, 'H', kind)                          a local op that never ends (hang)
  (s, 'E', code, signal)                  the process ends
Noise comes from per-rank streams that faults never touch, so the same seed without its
fault (the what-if twin) gets the same noise.
"""
import math
import random

OPS_CAP = 80_000           # op lines per draw; the minimum shape may take up to twice that
MS = 1_000_000

CLASSES = ["none", "input", "storage", "compute", "cpu_contention", "communication",
           "divergent", "hang", "rank_exited"]


def logu(rng, a, b):
    return math.exp(rng.uniform(math.log(a), math.log(b)))


def sub(seed, stream):
    # independent, reproducible streams of one seed (int seeds hash identically everywhere)
    return random.Random(seed * 1_000_003 + stream)


# ---------------------------------------------------------------- shape

def draw_shape(seed):
    rng = sub(seed, 1)
    kind = rng.choice(["dp", "dp", "tpdp", "pp", "pp", "fsdp", "moe"])
    W = max(2, min(1024, int(round(logu(rng, 2, 1024)))))
    sh = {"kind": kind, "rpn": rng.choice([4, 8, 8, 8, 16]),
          "T": int(logu(rng, 20, 2000) * MS),          # healthy compute per step
          "comm_frac": rng.uniform(0.05, 0.4),         # comm time / compute time
          "jitter": rng.uniform(0.005, 0.04),          # per-op compute noise (sd)
          "os_noise": rng.choice([0.0, 0.002, 0.01]),  # chance of a short preemption per op
          "var": rng.choice([0.0, 0.0, 0.05, 0.2]),    # per-step work shared by all ranks
          "accum": 1, "eval_every": 0, "ckpt_every": 0, "ckpt_rank0": False,
          "async": False, "meta": rng.random() < 0.8, "steps": rng.randint(30, 60),
          "tail": 1}     # one more step, cut short: a recording stops mid-step
    if kind == "dp":
        sh["buckets"] = rng.randint(1, 8)
        sh["equal"] = rng.random() < 0.5
        sh["async"] = rng.random() < 0.4
        if rng.random() < 0.3:
            sh["accum"] = rng.randint(2, 8)
    elif kind == "tpdp":
        t = rng.choice([2, 4, 8])
        W = max(2 * t, W - W % t)
        sh.update(tp=t, layers=rng.randint(2, 16), buckets=rng.randint(1, 4))
        if rng.random() < 0.3:
            sh["accum"] = rng.randint(2, 4)
    elif kind == "pp":
        S = rng.randint(2, 8)
        D = max(1, W // S)
        W = S * D
        sh.update(stages=S, dp=D, micro=rng.randint(1, 16),
                  sched=rng.choice(["gpipe", "1f1b", "interleaved"]))
    elif kind == "fsdp":
        sh.update(layers=rng.randint(2, 24), prefetch=rng.random() < 0.7)
        sh["async"] = sh["prefetch"]
    elif kind == "moe":
        sh.update(layers=rng.randint(1, 12), buckets=rng.randint(1, 3))
    if rng.random() < 0.25:
        sh["eval_every"] = rng.randint(5, 15)
    if rng.random() < 0.25:
        sh["ckpt_every"] = rng.randint(5, 20)
        sh["ckpt_rank0"] = rng.random() < 0.5
        sh["ckpt_T"] = int(sh["T"] * rng.uniform(0.2, 2.0))
    sh["W"] = W
    fit(sh)
    return sh


def ops_per_step(sh):
    """Rough op lines per rank per step (the prelude is ~3)."""
    k = sh["kind"]
    n = 1 + (3 if sh["eval_every"] else 0)
    if k == "dp":
        return n + 2 * sh["buckets"] + (sh["buckets"] if sh["async"] else 0)
    if k == "tpdp":
        return n + sh["accum"] * 4 * sh["layers"] + sh["buckets"]
    if k == "pp":
        v = 2 if sh["sched"] == "interleaved" else 1
        return n + 2 * sh["micro"] * v * 3 + 2
    if k == "fsdp":
        return n + sh["layers"] * (8 if sh["prefetch"] else 5) + 1
    return n + sh["layers"] * 8 + sh["buckets"]


def fit(sh):
    """Keep W x ops x steps under OPS_CAP: fewer steps first (never < 30), then less work."""
    knobs = {"dp": ["accum", "buckets"], "tpdp": ["layers", "accum", "buckets"],
             "pp": ["micro"], "fsdp": ["layers"], "moe": ["layers", "buckets"]}[sh["kind"]]
    while sh["W"] * ops_per_step(sh) * sh["steps"] > OPS_CAP:
        if sh["steps"] > 30:
            sh["steps"] = max(30, OPS_CAP // (sh["W"] * ops_per_step(sh)))
            continue
        big = max(knobs, key=lambda x: sh[x])
        if sh[big] > 1:
            sh[big] = max(1, sh[big] * 2 // 3)
        elif sh["eval_every"]:
            sh["eval_every"] = 0
        elif sh["kind"] == "pp" and sh["sched"] == "interleaved":
            sh["sched"] = "1f1b"
        elif sh["kind"] == "fsdp" and sh["prefetch"]:
            sh["prefetch"] = sh["async"] = False
        else:          # the minimum shape: fewer ranks, under twice the cap
            W = min(sh["W"], max(2, 18 * OPS_CAP // (10 * ops_per_step(sh) * sh["steps"])))
            if sh["kind"] == "tpdp":
                W = max(2 * sh["tp"], W - W % sh["tp"])
            elif sh["kind"] == "pp":
                sh["dp"] = max(1, W // sh["stages"])
                W = sh["dp"] * sh["stages"]
            sh["W"] = W
            break


# ---------------------------------------------------------------- fault

def draw_fault(seed, sh):
    rng = sub(seed, 2)
    W, n = sh["W"], sh["steps"]
    kinds = [("healthy", 25), ("compute", 7), ("input", 7), ("storage", 7), ("stage", 4),
             ("cpu", 8), ("intermittent", 10), ("random", 5), ("link", 7), ("hang", 8),
             ("divergent", 6), ("exit", 6)]
    tot = sum(w for _, w in kinds)
    x = rng.uniform(0, tot)
    for kind, w in kinds:
        x -= w
        if x <= 0:
            break
    if kind == "stage" and sh["kind"] != "pp":
        kind = "compute"
    f = {"kind": kind, "rank": rng.randrange(W), "start": 0, "persistent": True,
         "culprits": [], "culprit_required": True, "no_persistent": False}
    f["culprits"] = [f["rank"]]
    mag = logu(rng, 0.05, 1.5)       # extra per step, as a share of the healthy compute
    if kind == "healthy":
        f.update({"class": "none", "culprits": [], "culprit_required": False,
                  "persistent": False})
    elif kind in ("compute", "input", "storage"):
        f.update({"class": kind, "mag": mag})
    elif kind == "stage":
        s = rng.randrange(sh["stages"])
        f.update({"class": "compute", "mag": mag, "stage": s,
                  "culprits": [r for r in range(W) if r // sh["dp"] == s]})
    elif kind == "cpu":
        f.update({"class": "cpu_contention", "mag": mag,
                  "where": rng.choice(["outside", "inside", "both"])})
    elif kind == "intermittent":
        f.update({"class": rng.choice(["compute", "input", "storage"]), "persistent": False,
                  "mag": rng.uniform(0.5, 3.0)})
        if rng.random() < 0.5:
            f["k"] = rng.randint(3, 12)
        else:
            f["p"] = rng.uniform(0.05, 0.3)
    elif kind == "random":
        f.update({"class": "compute", "mag": rng.uniform(0.2, 1.0), "persistent": False,
                  "culprits": [], "culprit_required": False, "no_persistent": True})
    elif kind == "link":
        f.update({"class": "communication", "factor": logu(rng, 2, 10),
                  "culprit_required": False})
        if sh["kind"] == "pp" and rng.random() < 0.5:
            a = f["rank"]
            b = a + sh["dp"] if a + sh["dp"] < W else a - sh["dp"]   # next/prev stage
            f.update(pair=[min(a, b), max(a, b)], culprits=[a, b])
    elif kind in ("hang", "divergent", "exit"):
        f["class"] = {"hang": "hang", "divergent": "divergent", "exit": "rank_exited"}[kind]
        h = rng.randint(30, 40)
        sh["steps"] = h + 2              # peers block within a step; no need for more
        sh["tail"] = 0
        f["start"] = h
        if kind == "hang":
            f["where"] = rng.choice(["compute", "before", "inside"])
            if f["where"] == "inside":   # all ranks inside it: nothing shows who
                f.update(culprits=[], culprit_required=False)
        elif kind == "divergent":
            f["how"] = rng.choice(["skip", "reorder", "mismatch"])
        else:
            f["signal"] = rng.choice([0, 9, 9, 11, 6])
            f["code"] = rng.choice([1, 137]) if not f["signal"] else None
    if kind in ("compute", "input", "storage", "stage", "cpu", "link") and rng.random() < 0.6:
        f["start"] = rng.randint(3, n // 3)
    if kind == "intermittent":
        f["start"] = rng.randint(0, 5)
    return f


# ---------------------------------------------------------------- programs

class Builder:
    """Builds all ranks' programs for one (shape, fault or None)."""

    def __init__(self, seed, sh, f):
        self.sh, self.f, self.seed = sh, f, seed
        self.W = sh["W"]
        self.comms = {"world": list(range(self.W))}
        srng = sub(seed, 3)                     # shared per-step work and fault draws
        n = sh["steps"] + sh["tail"]
        self.stepf = [math.exp(srng.gauss(0, sh["var"])) if sh["var"] else 1.0
                      for _ in range(n)]
        frng = sub(seed, 4)
        self.hit = [False] * n                  # intermittent / random-rank steps
        self.rand_rank = [-1] * n
        if f:
            for i in range(f["start"], n):
                if "k" in f:
                    self.hit[i] = (i - f["start"]) % f["k"] == f["k"] - 1
                elif "p" in f:
                    self.hit[i] = frng.random() < f["p"]
                if f["kind"] == "random":
                    self.rand_rank[i] = frng.randrange(self.W)
        bw_intra, bw_inter = logu(srng, 100, 300), logu(srng, 10, 50)   # bytes per ns
        self.bw = bw_inter if self.W > sh["rpn"] else bw_intra
        self.lat = int(srng.uniform(10e3, 40e3))
        self.frng = frng

    # --- per-rank helpers; self.r, self.i, self.ops, self.nr are set by build()
    def starve(self):
        """CPU starvation inside one synchronous collective or wait of the culprit."""
        f = self.f
        if f and f["kind"] == "cpu" and f["where"] != "outside" and self.r == f["rank"] \
                and self.i >= f["start"]:
            return int(self.sh["T"] * f["mag"] / self.ncoll_step
                       * (0.5 if f["where"] == "both" else 1))
        return 0

    def compute(self, dur):
        nr, sh = self.nr, self.sh
        d = dur * self.stepf[self.i] * (1 + sh["jitter"] * nr.gauss(0, 1))
        osn = sh["os_noise"] and nr.random() < sh["os_noise"]
        osd = nr.uniform(0.1, 2) * MS if osn else 0
        f = self.f
        if f and self.i >= f["start"]:
            if f["kind"] in ("compute", "stage") and self.r in self.cset:
                d *= 1 + f["mag"]
            elif (f["kind"] == "intermittent" and f["class"] == "compute" and
                  self.r == f["rank"] and self.hit[self.i]):
                d *= 1 + f["mag"]
            elif f["kind"] == "random" and self.rand_rank[self.i] == self.r:
                d *= 1 + f["mag"]
            elif f["kind"] == "cpu" and self.r == f["rank"] and f["where"] != "inside":
                sd = dur * f["mag"] * (0.5 if f["where"] == "both" else 1)
                d1 = d * 0.5                    # preempted halfway through this chunk
                self.pend += d1
                self.put((self.i, "L", "sched_delay", max(1000, int(sd))))
                d -= d1
        if osd:
            self.pend += d * 0.5
            self.put((self.i, "L", "sched_delay", int(osd)))
            d *= 0.5
        self.pend += d

    def put(self, op):
        """Adjacent compute is one op (fewer lines); anything else ends it."""
        if self.pend:
            self.ops.append((self.i, "L", "compute", max(1000, int(self.pend))))
            self.pend = 0
        if op:
            self.ops.append(op)

    def xfer(self, op, comm, nbytes):
        n = len(self.comms[comm])
        k = {"allreduce": 2 * (n - 1) / n, "allgather": (n - 1) / n,
             "reduce_scatter": (n - 1) / n, "alltoall": (n - 1) / n}.get(op, 1.0)
        x = self.lat * (1 + math.log2(n)) + k * nbytes / self.bw
        if self.link_on() and self.f["rank"] in self.comm_set(comm):
            x *= self.f["factor"]
        return int(x)

    def link_on(self):
        f = self.f
        return bool(f and f["kind"] == "link" and "pair" not in f and self.i >= f["start"])

    def comm_set(self, comm):
        s = self._sets.get(comm)
        if s is None:
            s = self._sets[comm] = frozenset(self.comms[comm])
        return s

    def nbytes(self, op, comm, t):
        """Bytes so that this collective's transfer takes about t ns."""
        n = len(self.comms[comm])
        k = {"allreduce": 2 * (n - 1) / n}.get(op, (n - 1) / n if n > 1 else 1.0)
        return max(4, int(max(0, t - self.lat * (1 + math.log2(n))) * self.bw / k) // 4 * 4)

    def coll(self, op, comm, t_or_bytes, asyn=False, by_bytes=False):
        ck = (op, comm, t_or_bytes, by_bytes, self.link_on())
        c = self._xc.get(ck)          # the same collectives recur every step
        if c is None:
            nb = t_or_bytes if by_bytes else self.nbytes(op, comm, t_or_bytes)
            c = self._xc[ck] = (nb, self.xfer(op, comm, nb))
        nb, x = c
        starve = 0 if asyn else self.starve()
        h = -1
        if asyn:
            h = self.nh
            self.nh += 1
        self.put((self.i, "C", op, comm, nb, x, h, starve, False))
        return h

    def wait(self, h):
        self.put((self.i, "W", h, self.starve()))

    def p2p(self, op, comm, t, peer_rank, tag):
        nb = self.nbytes("send", comm, t)
        x = int(self.lat + nb / self.bw)
        f = self.f
        if f and f["kind"] == "link" and self.i >= f["start"] and (
                sorted((self.r, peer_rank)) == f["pair"] if "pair" in f
                else f["rank"] in (self.r, peer_rank)):
            x = int(x * f["factor"])
        self.put((self.i, "P", op, comm, nb, self.comms[comm].index(peer_rank), x, tag))

    def local(self, kind, dur):
        self.put((self.i, "L", kind, max(1000, int(dur))))

    def prelude(self):
        sh, i, r, T, f = self.sh, self.i, self.r, self.sh["T"], self.f
        if i > 0:
            self.compute(0.03 * T)                            # optimizer step
        if sh["ckpt_every"] and i > 0 and i % sh["ckpt_every"] == 0:
            if not sh["ckpt_rank0"] or r == 0:
                # a save: writes and a flush ("write": true in the trace), not reads
                self.local("io_write", sh["ckpt_T"] * self.nr.uniform(0.95, 1.05))
            if sh["ckpt_rank0"]:
                self.coll("barrier", "world", 0)
        if sh["eval_every"] and i > 0 and i % sh["eval_every"] == 0:
            self.compute(0.2 * T)
            self.coll("allreduce", "world", 8, by_bytes=True)
            self.coll("allgather", "world", 4096, by_bytes=True)
        self.local("input_wait", T * self.nr.uniform(0.002, 0.01))
        if f and self.i >= f["start"]:
            if f["kind"] in ("input", "storage") and r == f["rank"]:
                self.local("input_wait" if f["kind"] == "input" else "io", T * f["mag"])
            elif f["kind"] == "intermittent" and r == f["rank"] and self.hit[i] and \
                    f["class"] != "compute":
                self.local("input_wait" if f["class"] == "input" else "io", T * f["mag"])

    # --- shapes: one step's body on rank self.r; each ends with the step's last collective
    def body_dp(self):
        sh, T = self.sh, self.sh["T"]
        B, a = sh["buckets"], sh["accum"]
        C = T * sh["comm_frac"]
        w = [1.0] * B if sh["equal"] else [self.shrng_w[b] for b in range(B)]
        for m in range(a):
            self.compute(T / 3 / a)
            if m < a - 1:
                self.compute(2 * T / 3 / a)
                continue
            hs = []
            for b in range(B):
                self.compute(2 * T / 3 / a / B)
                h = self.coll("allreduce", "world", C * w[b] / sum(w), asyn=sh["async"])
                hs.append(h)
            if sh["async"]:
                for h in hs:
                    self.wait(h)

    def body_tpdp(self):
        sh, T, L = self.sh, self.sh["T"], self.sh["layers"]
        tp = "tp%d" % (self.r // sh["tp"])
        dp = "dp%d" % (self.r % sh["tp"])
        C = T * sh["comm_frac"]
        for m in range(sh["accum"]):
            for _ in range(L):
                self.compute(T / 3 / L / sh["accum"])
                self.coll("allreduce", tp, C * 0.3 / L)
            for _ in range(L):
                self.compute(2 * T / 3 / L / sh["accum"])
                self.coll("allreduce", tp, C * 0.3 / L)
        for b in range(sh["buckets"]):
            self.coll("allreduce", dp, C * 0.4 / sh["buckets"])

    def body_pp(self):
        sh, T = self.sh, self.sh["T"]
        S, D = sh["stages"], sh["dp"]
        s, d = self.r // D, self.r % D
        pp = "pp%d" % d
        v = 2 if sh["sched"] == "interleaved" else 1
        V, M = S * v, sh["micro"]
        tf = T / 3 / (M * v)
        tx = T * sh["comm_frac"] * 0.5 / (M * v)
        for kind, vs, m in self.pp_order[s]:
            if kind == "F":
                if vs > 0:
                    self.p2p("recv", pp, tx, (vs - 1) % S * D + d, ("f", vs, m, d, self.i))
                self.compute(tf)
                if vs < V - 1:
                    self.p2p("send", pp, tx, (vs + 1) % S * D + d, ("f", vs + 1, m, d, self.i))
            else:
                if vs < V - 1:
                    self.p2p("recv", pp, tx, (vs + 1) % S * D + d, ("b", vs, m, d, self.i))
                self.compute(2 * tf)
                if vs > 0:
                    self.p2p("send", pp, tx, (vs - 1) % S * D + d, ("b", vs - 1, m, d, self.i))
        if D > 1:
            self.coll("allreduce", "dps%d" % s, T * sh["comm_frac"] * 0.5)
        self.coll("allreduce", "world", 8, by_bytes=True)      # grad norm / loss

    def body_fsdp(self):
        sh, T, L = self.sh, self.sh["T"], self.sh["layers"]
        C = T * sh["comm_frac"] / (3 * L)
        pf = sh["prefetch"]
        for direction, work in (("f", T / 3 / L), ("b", 2 * T / 3 / L)):
            h = self.coll("allgather", "world", C, asyn=True) if pf else -1
            rs = []
            for l in range(L):
                if pf:
                    self.wait(h)
                    if l + 1 < L:
                        h = self.coll("allgather", "world", C, asyn=True)
                else:
                    self.coll("allgather", "world", C)
                self.compute(work)
                if direction == "b":
                    rs.append(self.coll("reduce_scatter", "world", C, asyn=pf))
            for h2 in rs:
                if pf:
                    self.wait(h2)
        self.coll("allreduce", "world", 8, by_bytes=True)

    def body_moe(self):
        sh, T, L = self.sh, self.sh["T"], self.sh["layers"]
        C = T * sh["comm_frac"]
        for work in (T / 3 / L, 2 * T / 3 / L):
            for _ in range(L):
                self.compute(work * 0.4)
                self.coll("alltoall", "world", C * 0.15 / L)
                self.compute(work * 0.6)
                self.coll("alltoall", "world", C * 0.15 / L)
        for b in range(sh["buckets"]):
            self.coll("allreduce", "world", C * 0.4 / sh["buckets"])

    def setup(self):
        sh, W = self.sh, self.W
        self._sets, self._xc = {}, {}
        k = sh["kind"]
        if k == "tpdp":
            t = sh["tp"]
            for g in range(W // t):
                self.comms["tp%d" % g] = list(range(g * t, g * t + t))
            for j in range(t):
                self.comms["dp%d" % j] = list(range(j, W, t))
        elif k == "pp":
            S, D = sh["stages"], sh["dp"]
            for d in range(D):
                self.comms["pp%d" % d] = [s * D + d for s in range(S)]
            for s in range(S):
                self.comms["dps%d" % s] = [s * D + d for d in range(D)]
            self.pp_order = pp_schedule(S, sh["micro"], sh["sched"])
        if k == "dp":
            wr = sub(self.seed, 5)
            self.shrng_w = [logu(wr, 0.2, 5) for _ in range(sh["buckets"])]
        # synchronous collectives and waits per step: CPU starvation is spread over them
        L = sh.get("layers", 1)
        self.ncoll_step = {"dp": sh.get("buckets", 1),
                           "tpdp": 2 * L * sh["accum"] + sh.get("buckets", 1),
                           "pp": 2 if sh.get("dp", 1) > 1 else 1, "fsdp": 3 * L + 1,
                           "moe": 4 * L + sh.get("buckets", 1)}[k]
        self.cset = set(self.f["culprits"]) if self.f else set()

    def build(self):
        self.setup()
        body = getattr(self, "body_" + self.sh["kind"])
        progs = []
        for r in range(self.W):
            self.r, self.ops, self.nh, self.pend = r, [], 0, 0
            self.nr = sub(self.seed, 1000 + r)
            for i in range(self.sh["steps"] + self.sh["tail"]):
                self.i = i
                self.prelude()
                body()
            self.put(None)
            progs.append(self.ops)
        if self.f and self.f["kind"] in ("hang", "divergent", "exit"):
            terminal(progs, self.f, sub(self.seed, 6))
        return progs


def pp_schedule(S, M, sched):
    """Per stage, the order of (F|B, virtual stage, micro-batch) tasks, from a unit-time
    list schedule: every task's inputs finish on an earlier tick, so any such order is
    deadlock free with eager sends."""
    v = 2 if sched == "interleaved" else 1
    V = S * v
    pend = [[(k, vs, m) for vs in range(s, V, S) for m in range(M) for k in "FB"]
            for s in range(S)]
    done, order = {}, [[] for _ in range(S)]
    inflight = [0] * S
    tick, relax = 0, False
    while any(pend):
        moved = False
        for s in range(S):
            ready = []
            for t in pend[s]:
                k, vs, m = t
                if k == "F":
                    dep = [("F", vs - 1, m)] if vs else []
                else:
                    dep = [("F", vs, m)] + ([("B", vs + 1, m)] if vs < V - 1 else [])
                if all(done.get(x, tick) < tick for x in dep):
                    ready.append(t)
            if not ready:
                continue
            fs = [t for t in ready if t[0] == "F"]
            bs = [t for t in ready if t[0] == "B"]
            if sched == "gpipe":
                pick = min(fs, key=lambda t: (t[2], t[1])) if fs else \
                    (min(bs, key=lambda t: (t[2], -t[1])) if not any(
                        t[0] == "F" for t in pend[s]) else None)
            else:
                limit = (S - s) * v
                if bs:
                    pick = min(bs, key=lambda t: (t[2], -t[1]))
                elif fs and (inflight[s] < limit or relax):
                    pick = min(fs, key=lambda t: (t[2] // S, t[1], t[2]))
                else:
                    pick = None
            if pick is None:
                continue
            pend[s].remove(pick)
            done[pick] = tick
            order[s].append(pick)
            inflight[s] += 1 if pick[0] == "F" else -1
            moved = True
        relax = not moved
        tick += 1
    return order


def stop_in_compute(ops, j, h):
    """Rank's program ops ends in work of step h that never ends, from ops[j] on. After the
    step's last collective that work is the next step's: a step ends with its last collective."""
    later = not any(o[0] == h and o[1] in "CWP" for o in ops[j:])
    del ops[j:]
    ops.append((h + later, "H", "compute"))


def terminal(progs, f, rng):
    """Hang, divergence or exit of rank f['rank'] at step f['start'] (peers just block)."""
    X, h = f["rank"], f["start"]
    ops = progs[X]
    idx = [j for j, o in enumerate(ops) if o[0] == h]
    comp = [j for j in idx if o_is(ops[j], "L", "compute")]
    colls = [j for j in idx if ops[j][1] == "C" and ops[j][6] < 0]
    kind = f["kind"]
    if kind == "exit":
        j = rng.choice(comp)
        o = ops[j]
        del ops[j:]
        ops.append((h, "L", "compute", max(1000, o[3] // 2)))
        ops.append((h, "E", f["code"], f["signal"]))
    elif kind == "hang":
        w = f["where"]
        if w == "compute":
            stop_in_compute(ops, rng.choice(comp), h)
        elif w == "before":
            j = next(j for j in idx if ops[j][1] in "CWP")
            del ops[j:]
            ops.append((h, "H", rng.choice(["input_wait", "io"])))
        else:
            j = rng.choice(colls) if colls else idx[-1]
            o = ops[j]
            if o[1] == "C":
                ops[j] = o[:8] + (True,)
            else:            # no synchronous collective in the step: stop in compute
                stop_in_compute(ops, j, h)
                f.update(where="compute", culprits=[X], culprit_required=True)
    else:
        how = f["how"]
        if how == "reorder":
            # two calls of one communicator that differ: its members disagree. Two of
            # different communicators swapped is no divergence: each one's calls are in
            # order, and unless that makes a cycle of waits the job goes on, a little later
            pairs = [(a, b) for a, b in zip(colls, colls[1:])
                     if ops[a][3] == ops[b][3] and ops[a][2:5] != ops[b][2:5]]
            if pairs:
                a, b = rng.choice(pairs)
                ops[a], ops[b] = ops[b], ops[a]
                return
            how = f["how"] = "mismatch"
        if how == "skip" and colls:
            del ops[rng.choice(colls)]
            return
        f["how"] = "mismatch"
        j = rng.choice(colls) if colls else None
        if j is None:                      # only asynchronous ones: mismatch the launch
            j = next(j for j in idx if ops[j][1] == "C")
        o = ops[j]
        new = "broadcast" if o[2] != "broadcast" else "allreduce"
        ops[j] = o[:2] + (new,) + o[3:]


def o_is(o, t, kind):
    return o[1] == t and o[2] == kind
