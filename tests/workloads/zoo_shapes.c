/* zoo_shapes.c - what one step of zoo_mpi does: its compute, its structure's MPI calls */
/*
 * The step structures of zoo_mpi.c's option list (--buckets, --fsdp, --tp, --pp, ...) and
 * step(), which runs one step: input, the per-step faults, the structure, the optimizer, the
 * checkpoint and the eval. The options, the setup and the lines printed are in zoo_mpi.c.
 */
#include <signal.h>

#include "zoo_mpi.h"

#define GAP_NS		10000		/* a burn-loop gap longer than this: off CPU */

/* ---- clocks, compute ---- */

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* in [1, 2), the same for the same seed on every rank */
static double skew(uint64_t seed)
{
	return 1.0 + (double)(splitmix64(seed) >> 11) * 0x1p-53;
}

void lap(struct acct *a, int what)
{
	int64_t now = fix_now_ns();

	a->ns[what] += now - a->t;
	a->t = now;
}

/*
 * Burn ns of CPU: time counts only while the loop sees itself running (no gap over GAP_NS
 * between two clock reads), so a rank that is throttled or waits for a CPU takes longer, as
 * real compute would. vDSO clock only: no syscalls in the loop.
 */
int64_t burn_ns(int64_t ns)
{
	int64_t t = fix_now_ns(), done = 0, off = 0;

	while (done < ns) {
		int64_t now = fix_now_ns(), d = now - t;

		if (d > GAP_NS)
			off += d;
		else
			done += d;
		t = now;
	}
	return off;
}

static void compute(struct acct *a, int64_t ns, bool pp_busy)
{
	int64_t t = a->t;

	a->preempt += burn_ns(ns);
	lap(a, A_COMPUTE);
	if (pp_busy)
		a->busy += a->t - t;
}

/* ---- collectives ---- */

static void allreduce(struct acct *a, long bytes, MPI_Comm comm)
{
	MPI_Allreduce(z.sbuf, z.rbuf, (int)(bytes / 4), MPI_FLOAT, MPI_SUM, comm);
	/* the result, first and last element: a rank that got a wrong or short sum changes it */
	z.checksum += z.rbuf[0] + z.rbuf[bytes / 4 - 1];
	a->coll++;
	lap(a, A_COMM);
}

static long nbuckets(long k)
{
	return z.buckets + (z.change_at >= 0 && k >= z.change_at ? 2 : 0);
}

/* the gradient buckets; with overlap, compute/N before each, else compute before all */
static void buckets(struct acct *a, long k, int64_t compute_ns, MPI_Comm comm)
{
	long nb = nbuckets(k), i;

	if (!z.overlap && compute_ns)
		compute(a, compute_ns, false);
	for (i = 0; i < nb; i++) {
		if (z.overlap)
			compute(a, compute_ns / nb, false);
		allreduce(a, i == nb - 1 && z.last_bytes ? z.last_bytes : z.bucket_bytes, comm);
	}
}

/*
 * Forward: n all-gathers; backward: n reduce-scatters. --fsdp-interleave: the forward freed
 * each layer's parameters (PyTorch FSDP's reshard after forward), so the backward gathers
 * each layer again before its gradients: n x (all-gather, compute, reduce-scatter).
 */
static void fsdp(struct acct *a, long k, int64_t c, bool last)
{
	long n = z.fsdp + (z.change_at >= 0 && k >= z.change_at ? 2 : 0), i;
	int cnt = (int)(z.bucket_bytes / 4);

	for (i = 0; i < n; i++) {
		compute(a, c / (2 * n), false);
		MPI_Allgather(z.sbuf, cnt, MPI_FLOAT, z.rbuf, cnt, MPI_FLOAT, MPI_COMM_WORLD);
		a->coll++;
		lap(a, A_COMM);
	}
	if (!last) {	/* accumulating: backward without the reduce-scatters (or re-gathers) */
		compute(a, c / 2, false);
		return;
	}
	for (i = 0; i < n; i++) {
		if (z.fsdp_interleave) {
			MPI_Allgather(z.sbuf, cnt, MPI_FLOAT, z.rbuf, cnt, MPI_FLOAT,
				      MPI_COMM_WORLD);
			a->coll++;
			lap(a, A_COMM);
		}
		compute(a, c / (2 * n), false);
		MPI_Reduce_scatter_block(z.sbuf, z.rbuf, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		a->coll++;
		lap(a, A_COMM);
	}
}

static void tp(struct acct *a, int64_t c)
{
	long i;

	int64_t t;

	for (i = 0; i < 2 * z.tp; i++) {
		compute(a, c / (2 * z.tp), false);
		t = a->t;
		allreduce(a, z.act_bytes, z.tp_comm);
		a->tp += a->t - t;
	}
}

static void p2p(struct acct *a, bool send, int peer, int tag)
{
	MPI_Comm comm = z.pp_comm != MPI_COMM_NULL ? z.pp_comm : MPI_COMM_WORLD;
	int cnt = (int)(z.act_bytes / 4);
	int64_t t;

	if (send)
		MPI_Send(z.sbuf, cnt, MPI_FLOAT, peer, tag, comm);
	else
		MPI_Recv(z.rbuf, cnt, MPI_FLOAT, peer, tag, comm, MPI_STATUS_IGNORE);
	a->p2p++;
	t = a->t;
	lap(a, A_COMM);
	a->bubble += a->t - t;
}

/* GPipe over --stages: all forwards (activations from r-1 to r+1), then all backwards in
 * reverse (gradients from r+1 to r-1); more than 2 stages end with the gradient norm */
static void pp(struct acct *a, int64_t c)
{
	int64_t slice = c / (2 * z.pp);
	bool first = z.stage == 0, last = z.stage == z.stages - 1;
	int me = z.pp_comm != MPI_COMM_NULL ? z.stage : z.rank;	/* its rank where it sends */
	long m;

	for (m = 0; m < z.pp; m++) {
		if (!first)
			p2p(a, false, me - 1, (int)m);
		compute(a, slice, true);
		if (!last)
			p2p(a, true, me + 1, (int)m);
	}
	for (m = z.pp - 1; m >= 0; m--) {
		if (!last)
			p2p(a, false, me + 1, (int)(100000 + m));
		compute(a, slice, true);
		if (!first)
			p2p(a, true, me - 1, (int)(100000 + m));
	}
}

/*
 * Mixture of experts: each layer sends its tokens to the ranks that hold their experts and
 * takes the results back, 2 all-to-alls a layer, forward and again in the backward (the
 * gradients go the same way); then the dense layers' gradients: the buckets on the world.
 */
static void moe(struct acct *a, long k, int64_t c)
{
	int cnt = (int)(z.act_bytes / 4);
	long i;

	/* 2L layers (L forward, L backward), each: compute, dispatch, experts, combine; the
	 * experts take 3/5 of a layer, so the pauses alternate as a short step's would */
	for (i = 0; i < 4 * z.moe; i++) {
		compute(a, (i % 2 ? 3 : 2) * c / (10 * z.moe), false);
		MPI_Alltoall(z.sbuf, cnt, MPI_FLOAT, z.rbuf, cnt, MPI_FLOAT, MPI_COMM_WORLD);
		a->coll++;
		lap(a, A_COMM);
	}
	buckets(a, k, 0, MPI_COMM_WORLD);
}

/* ---- one step ---- */

/* A training step's own function, as a script's train_step(): the target of --steps
 * marker:zoo_train_step. Called first thing in each step, right after its truth start. */
__attribute__((noinline, used)) long zoo_train_step(long k)
{
	__asm__ volatile("" : "+r"(k));
	return k;
}

void step(struct acct *a, long k)
{
	bool meas = k >= 0;
	double scale = 1.0;
	int64_t c;
	long m, arg;

	if (meas && fault_at(F_SIGSTOP, k, true)) {
		raise(SIGSTOP);
		lap(a, A_STOP);
	}
	if (meas && fault_at(F_KILL, k, true))
		raise(SIGKILL);
	if (z.len_skew)
		scale *= skew((uint64_t)k);
	if (meas && fault_on(F_SEQSKEW) && k >= z.fault_from)
		scale *= skew((uint64_t)k * 0x100000001b3ULL + 0xc0ffee + (uint64_t)z.rank);
	c = (int64_t)(z.compute_us * 1000 * scale);
	if (meas)
		c += fault_arg(F_COMPUTE, k) * 1000;
	/* rotate: rank k mod the world size has the long batch of step k */
	if (meas && k >= z.fault_from && fault_any(F_ROTATE) && k % z.size == z.rank)
		c += fault_any(F_ROTATE)->arg * 1000;

	for (m = 0; m < z.accum; m++) {
		input(a);
		if (m == 0 && meas) {
			arg = fault_arg(F_STORAGE, k) * 1024;
			if (arg) {
				read_all(z.direct_fd, z.dbuf, arg,
					 (off_t)(z.direct_reads++ % DIRECT_CHUNKS) * arg, "O_DIRECT");
				lap(a, A_IO);
			}
			arg = fault_arg(F_SLEEP, k);
			if (arg) {
				fix_sleep_ns(arg * 1000);
				lap(a, A_SLEEP);
			}
			if (fault_at(F_DIVERGENT, k, false)) {
				bool odd = fault_at(F_DIVERGENT, k, true);
				int root = 0, i;

				for (i = 0; i < z.nfaults; i++)
					if (z.faults[i].kind == F_DIVERGENT && z.faults[i].arg == k)
						root = (int)((z.faults[i].rank + 1) % z.size);
				MPI_Bcast(z.rbuf, odd ? 2 * DIV_COUNT : DIV_COUNT, MPI_FLOAT, root,
					  MPI_COMM_WORLD);
				a->coll++;
				lap(a, A_COMM);
			}
			if (fault_at(F_DIVHANG, k, true)) {
				MPI_Barrier(MPI_COMM_WORLD);	/* never returns */
				a->coll++;
				lap(a, A_COMM);
			}
		}
		if (z.fsdp)
			fsdp(a, k, c / z.accum, m == z.accum - 1);
		else if (z.tp)
			tp(a, c / z.accum);
		else if (z.pp)
			pp(a, c);
		else if (z.moe)
			moe(a, k, c);	/* no --accum: c is the whole step's */
		else if (m < z.accum - 1)
			compute(a, c / z.accum, false);
		else
			buckets(a, k, c / z.accum, MPI_COMM_WORLD);
	}
	if ((z.tp || z.pp) && z.dp_size > 1)
		buckets(a, k, 0, z.dp_comm);
	if (z.pp && z.stages > 2)
		allreduce(a, 8, MPI_COMM_WORLD);	/* the gradient norm */
	compute(a, z.opt_us * 1000, false);
	if (z.loss)
		allreduce(a, 8, MPI_COMM_WORLD);
	if (meas && z.ckpt_every && (k + 1) % z.ckpt_every == 0 && (!z.rank || z.ckpt_shards))
		checkpoint(k);
	if (meas && z.eval_every && (k + 1) % z.eval_every == 0) {
		double loss = 1.0 + z.rank, sum;

		MPI_Allreduce(&loss, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		a->coll++;
		lap(a, A_COMM);
	}
	if (meas && z.barrier_every && (k + 1) % z.barrier_every == 0) {
		MPI_Barrier(MPI_COMM_WORLD);
		a->coll++;
		lap(a, A_COMM);
	}
}
