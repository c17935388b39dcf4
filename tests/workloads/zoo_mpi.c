/* zoo_mpi.c - rankscope MPI test workload: training-shaped steps, many structures, faults, truth */
/*
 * One rank of a training job, started by mpirun (OpenMPI 4.1.4 here, as root):
 *
 *   mpirun --allow-run-as-root --oversubscribe -np 4 build/workloads/zoo_mpi --buckets 3 \
 *	--fault sleep:1:2000 --go-file /tmp/go
 *
 * Life of a rank: parse the options (before MPI_Init, so that a --loader child can be forked
 * before MPI exists), MPI_Init, set up (files, communicators, cgroups; one MPI_Allreduce of the
 * setup status and one MPI_Barrier, all before "ready"), rank 0 prints the "workload" line, every
 * rank prints "ready" (and "loader"), waits for --go-file if given, then runs --warmup steps
 * (numbered -W..-1, no faults, no eval) and --steps measured steps (0..N-1), prints "done",
 * cleans up, MPI_Finalize, exit 0. Between "ready" and the end of the loop the only MPI calls
 * are the structure's own (no barrier). This file: the options, setup, the lines, the loop;
 * zoo_shapes.c: one step (its compute, its structure's MPI calls, its faults); zoo_mpi.h: what
 * the two share.
 *
 * Options (N, US, KB, B, R, S are decimal integers; bad input: one line on stderr, exit 2):
 *   --steps N (100)  --warmup N (3)  --go-file PATH  --data-dir DIR (/tmp/rankscope-zoo)
 *   --init-file PATH  print "pre-init pid=" and wait for PATH before MPI_Init (a test attaches
 *                 before the communicators are made)
 *   --compute-us US (2300) busy "forward+backward" per step; --opt-us US (300) busy "optimizer"
 *   --input-kb KB (4) input read at the start of each step (each micro-batch with --accum)
 *   --buckets N (1) --bucket-bytes B (65536) --last-bytes B: N MPI_Allreduce of floats
 *   --overlap     compute/N before each bucket (DDP's backward overlap); plain buckets only
 *   --fsdp K      K MPI_Allgather (compute/2K before each; each rank gives --bucket-bytes)
 *                 then K MPI_Reduce_scatter_block (compute/2K before each; each rank gets B)
 *   --fsdp-interleave  with --fsdp: the parameters are freed after the forward (PyTorch
 *                 FSDP's reshard), so the backward is K x (MPI_Allgather, compute/2K,
 *                 MPI_Reduce_scatter_block): a step is K all-gathers then K of those
 *   --tp L        TP groups of 2 consecutive ranks, DP groups of equal TP position: L TP
 *                 MPI_Allreduce of --act-bytes (forward), L more (backward), compute/2L before
 *                 each, then the buckets on the DP communicator (skipped if it has 1 rank)
 *   --pp M        2 stages: even ranks stage 0, odd ranks stage 1, peer rank^1; GPipe: M
 *                 forward micro-batches (compute/2M; MPI_Send/MPI_Recv of --act-bytes), M
 *                 backward in reverse, then the buckets on the DP communicator (-np >= 4)
 *   --stages S    with --pp: S stages (2), rank r is stage r mod S and passes activations to
 *                 r+1 and gradients to r-1, so middle stages make twice the sends and
 *                 receives of the ends; S > 2 ends each step with the gradient norm, an
 *                 8-byte MPI_Allreduce on MPI_COMM_WORLD (the one collective all share)
 *   --pp-comm     with --pp: Megatron's layout, each pipeline on a communicator of its own:
 *                 with R = ranks / S replicas, rank r is stage r / R of pipeline r % R, which
 *                 is MPI_Comm_split(MPI_COMM_WORLD, r % R, r), so a send's or receive's peer
 *                 is a stage there, not a rank
 *   --moe L       mixture of experts: L layers forward, then L backward, each: compute/4L,
 *                 MPI_Alltoall of --act-bytes per peer on MPI_COMM_WORLD (dispatch),
 *                 compute/4L (the experts), MPI_Alltoall (combine); then the buckets on
 *                 MPI_COMM_WORLD. Not with --fsdp, --tp, --pp, --overlap or --accum > 1
 *   --act-bytes B (16384)  --accum A (1): A micro-batches of input + compute/A; the buckets
 *                 (DP) once per step; with --fsdp the reduce-scatters (and the
 *                 --fsdp-interleave all-gathers of the backward) only in the last one
 *   --eval-every K  after the optimizer of measured steps K-1, 2K-1, ...: MPI_Allreduce of 8
 *                 bytes on MPI_COMM_WORLD
 *   --barrier-every K  after the optimizer of measured steps K-1, 2K-1, ...: MPI_Barrier on
 *                 MPI_COMM_WORLD (a save's "every rank is done" barrier: it reduces nothing)
 *   --loss        after the optimizer of every step: the loss, an 8-byte MPI_Allreduce on
 *                 MPI_COMM_WORLD, alike to an eval's
 *   --len-skew    every rank's compute scaled by [1, 2) from a PRNG seeded by the step
 *   --change-at S from measured step S on: N+2 buckets (or K+2 with --fsdp)
 *   --ckpt-every K  after the optimizer of measured steps K-1, 2K-1, ...: rank 0 writes a
 *                 checkpoint of --ckpt-mb MB (32) in 1 MiB writes to DIR/zoo-ckpt.tmp,
 *                 fsyncs it and renames it to DIR/zoo-ckpt (--ckpt-dir DIR, default the
 *                 --data-dir); the others go on to the next step's collectives, as DDP's do
 *   --ckpt-shards every rank saves its own shard, DIR/zoo-ckpt.R (sharded state, as FSDP's
 *                 or DeepSpeed's), rank 0's is the one --resume reads
 *   --resume      rank 0 reads DIR/zoo-ckpt (if there is one) and every rank starts at the
 *                 step after the one it saved (a relaunched job)
 *   --loader      a data-loader child (see below); --loader-us US (500) its busy time per batch
 *   --fault KIND:R[:ARG] (repeatable; the first one is the workload line's "expect"),
 *   --fault-from S (0): the first measured step of the per-step faults
 *   --fault-every K (1): compute and sleep only in every K-th step from S (S+K-1, S+2K-1, ...):
 *                 an intermittent straggler
 *     compute:R:US  extra busy compute     sleep:R:US    nanosleep before the collectives
 *     pipe:R:US     loader sleeps first    storage:R:KB  also read KB (multiple of 4) O_DIRECT
 *     quota:R:PCT   rank in a CPU-quota cgroup (PCT% of one CPU, 1..100)
 *     workerquota:R:PCT  the same for its loader child     seqskew:R  compute scaled [1, 2)
 *     rotate:0:US   in step k, rank k mod the world size computes US more: a different
 *                   rank each step, as with sequence lengths; nobody's straggler (R must be
 *                   0; the workload line's expect says rank -1)
 *     sigstop:R:S / kill:R:S  raise(SIGSTOP / SIGKILL) at the start of step S
 *     divergent:R:S  an extra MPI_Bcast (see below) at step S
 *     divhang:R:S    at step S rank R enters MPI_Barrier on the world communicator where its
 *                    peers enter their first bucket's MPI_Allreduce: they wait for each
 *                    other forever (a divergence that hangs the job, as mismatched NCCL
 *                    collectives do); the test kills the job
 *   compute, sleep, pipe, storage, seqskew start at --fault-from; quota and workerquota put
 *   the process into its cgroup during setup with no limit and set the quota just before step
 *   --fault-from (period 10 ms, quota PCT*100 us, at least 1 ms: then a longer period); the
 *   cgroup is v2 /sys/fs/cgroup if its cgroup.controllers has cpu, else v1 /sys/fs/cgroup/cpu;
 *   neither: an error line and every rank exits 77. The rank moves back and removes it at exit
 *   (a kill fault on the same rank leaves it behind). With HZ=250 the throttling often lands
 *   at the rank's next syscall (the truth line's write: log_ns) rather than in its compute.
 *   workerquota bites only below the loader's share of a step (--loader-us / step: ~15%).
 *   The compute is CPU time, not wall time: see burn_ns().
 *
 * Input: without --loader each rank reads --input-kb with pread from its own file in
 * --data-dir (16 chunks, page cache: io_ns). With --loader the child is forked BEFORE MPI_Init
 * and never calls MPI; after MPI_Init the rank sends it its settings over the request pipe. Per
 * batch the rank writes the step number into the request pipe and reads --input-kb from the
 * data pipe (input_ns, no prefetch: the loader's time is on the critical path); the child burns
 * --loader-us, fills the batch and writes it. It dies with the rank (PR_SET_PDEATHSIG) and
 * exits on EOF. Files are unlinked as soon as they are open.
 *
 * divergent:R:S on OpenMPI 4.1.4 (vader): a mismatched MPI_Allreduce count aborts the job
 * (MPI_ERR_TRUNCATE), and a mismatched MPI_Bcast hangs on some sizes (4 KiB vs 8 KiB with
 * -np 4, 64 B vs 128 B with -np 5) because tuned picks its algorithm from each rank's own
 * size. So with this fault every rank sets OMPI_MCA_coll_tuned_use_dynamic_rules=1 and
 * OMPI_MCA_coll_tuned_bcast_algorithm=1 (linear) before MPI_Init, and at step S every rank
 * calls MPI_Bcast of 16 floats (64 bytes) from root (R+1)%W on MPI_COMM_WORLD, rank R with 32
 * (128 bytes): it receives less than it posted, which works (np 2..12 tried), the job goes on.
 * Same sequence number on the world communicator, different bytes on R.
 *
 * Output, one write per line (a line is under PIPE_BUF, so mpirun cannot split it):
 *   rank 0: {"type":"workload",...}; every rank: "loader rank= pid= ppid=", "ready rank= pid=";
 *   rank 0 with --resume: {"type":"resume","step":S} (S: the first measured step run);
 *   rank 0 per checkpoint: {"type":"ckpt","rank":0,"step":K,"start_ns":T0,"end_ns":T1}
 *   (CLOCK_MONOTONIC, from the first write to the rename; K: the last step it holds);
 *   per step: {"type":"truth",...}. step_ns runs from this step's start to the next one's (or
 *   the end of the last); input_ns + io_ns + compute_ns + sleep_ns + comm_ns + stopped_ns +
 *   log_ns is step_ns less a few clock reads. log_ns: this step printing the previous step's
 *   line (a pipe write to mpirun: ~10-50 us, more on a busy machine, where the woken reader
 *   can preempt the rank). preempt_ns: the part of compute_ns the burn loop spent off CPU
 *   (gaps over 10 us). pp adds stage, busy_ns (micro-batch compute, part of compute_ns),
 *   bubble_ns (in MPI_Send/MPI_Recv, part of comm_ns) and p2p; tp adds tp_ns (in the TP
 *   all-reduces, part of comm_ns). "collectives" counts the step's
 *   collective calls. At the end: "done rank= pid= steps=N checksum=C" (C: the bucket
 *   all-reduces' results summed, the same on every run of the same arguments).
 *   tests/workloads/check_truth.py checks a job's stdout.
 */
#define _GNU_SOURCE	/* O_DIRECT, pipe2 */
#include <fcntl.h>
#include <getopt.h>
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "zoo_mpi.h"

#define IN_CHUNKS	16
#define EXIT_SKIP	77
#define CG_PERIOD_US	10000

static const struct fkind_desc {
	const char *name, *cls, *arg;	/* arg: NULL if none */
	long min, max;
} fkinds[F_NKINDS] = {
	[F_COMPUTE]	= { "compute", "compute", "US", 0, INT_MAX },
	[F_SLEEP]	= { "sleep", "compute", "US", 0, INT_MAX },
	[F_PIPE]	= { "pipe", "input", "US", 0, INT_MAX },
	[F_STORAGE]	= { "storage", "storage", "KB", 4, 1 << 20 },
	[F_QUOTA]	= { "quota", "cpu_contention", "PCT", 1, 100 },
	[F_WQUOTA]	= { "workerquota", "input", "PCT", 1, 100 },
	[F_SEQSKEW]	= { "seqskew", "compute", NULL, 0, 0 },
	[F_SIGSTOP]	= { "sigstop", "hang", "S", 0, INT_MAX },
	[F_KILL]	= { "kill", "rank_exited", "S", 0, INT_MAX },
	[F_DIVERGENT]	= { "divergent", "divergent", "S", 0, INT_MAX },
	[F_DIVHANG]	= { "divhang", "divergent", "S", 0, INT_MAX },
	[F_ROTATE]	= { "rotate", "compute", "US", 0, INT_MAX },
};

struct zoo z = {
	.steps = 100, .warmup = 3, .compute_us = 2300, .opt_us = 300, .input_kb = 4,
	.buckets = 1, .bucket_bytes = 65536, .act_bytes = 16384, .accum = 1,
	.change_at = -1, .loader_us = 500, .fault_every = 1, .data_dir = "/tmp/rankscope-zoo",
	.ckpt_mb = 32,
	.in_fd = -1, .direct_fd = -1, .req_fd = -1, .data_fd = -1,
};

struct loader_cfg {
	int64_t sleep_us, from, bytes, busy_us;
};

static void __attribute__((format(printf, 1, 2), noreturn)) usage_error(const char *fmt, ...)
{
	va_list ap;

	if (z.loud) {
		fputs("zoo_mpi: ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	exit(2);
}

static void __attribute__((format(printf, 1, 2), noreturn)) fatal(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "zoo_mpi: rank %d pid %d: ", z.rank, (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

static long parse_num(const char *s, const char *what, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		usage_error("bad value for %s: '%s' (need an integer in %ld..%ld)", what, s,
			    min, max);
	return v;
}

/* KIND:R[:ARG] */
static void parse_fault(const char *spec)
{
	char buf[128], what[64], *kind, *r, *arg;
	struct fault *f;
	int k;

	if (z.nfaults == MAX_FAULTS)
		usage_error("at most %d --fault options", MAX_FAULTS);
	if (strlen(spec) >= sizeof(buf))
		usage_error("bad --fault '%s'", spec);
	strcpy(buf, spec);
	kind = buf;
	r = strchr(kind, ':');
	if (!r)
		usage_error("bad --fault '%s' (need KIND:RANK[:ARG])", spec);
	*r++ = 0;
	arg = strchr(r, ':');
	if (arg)
		*arg++ = 0;
	for (k = 0; k < F_NKINDS && strcmp(kind, fkinds[k].name); k++)
		;
	if (k == F_NKINDS)
		usage_error("unknown fault kind '%s' in --fault '%s'", kind, spec);
	f = &z.faults[z.nfaults++];
	f->kind = k;
	f->rank = parse_num(r, "the --fault rank", 0, INT_MAX);
	if (!fkinds[k].arg) {
		if (arg)
			usage_error("--fault %s takes no argument: '%s'", kind, spec);
		return;
	}
	if (!arg)
		usage_error("--fault %s needs %s:R:%s", kind, kind, fkinds[k].arg);
	snprintf(what, sizeof(what), "--fault %s %s", kind, fkinds[k].arg);
	f->arg = parse_num(arg, what, fkinds[k].min, fkinds[k].max);
	if (k == F_ROTATE && f->rank)
		usage_error("--fault rotate takes every rank in turn: give rank 0 ('%s')", spec);
	if (k == F_STORAGE && f->arg % 4)
		usage_error("--fault storage KB must be a multiple of 4 (O_DIRECT): '%s'", spec);
}

static void parse_opts(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "steps", 1, NULL, 's' }, { "warmup", 1, NULL, 'w' }, { "go-file", 1, NULL, 'g' },
		{ "data-dir", 1, NULL, 'D' }, { "compute-us", 1, NULL, 'c' },
		{ "opt-us", 1, NULL, 'o' }, { "input-kb", 1, NULL, 'i' },
		{ "buckets", 1, NULL, 'b' }, { "bucket-bytes", 1, NULL, 'B' },
		{ "last-bytes", 1, NULL, 'L' }, { "overlap", 0, NULL, 'O' },
		{ "fsdp", 1, NULL, 'f' }, { "tp", 1, NULL, 't' }, { "pp", 1, NULL, 'p' },
		{ "act-bytes", 1, NULL, 'a' }, { "accum", 1, NULL, 'A' },
		{ "eval-every", 1, NULL, 'e' }, { "len-skew", 0, NULL, 'k' },
		{ "change-at", 1, NULL, 'C' }, { "loader", 0, NULL, 'l' },
		{ "loader-us", 1, NULL, 'u' }, { "fault", 1, NULL, 'F' },
		{ "fault-from", 1, NULL, 'S' }, { "fault-every", 1, NULL, 'V' }, { "init-file", 1, NULL, 'I' },
		{ "ckpt-every", 1, NULL, 'K' }, { "ckpt-mb", 1, NULL, 'M' },
		{ "ckpt-dir", 1, NULL, 'P' }, { "resume", 0, NULL, 'R' },
		{ "ckpt-shards", 0, NULL, 'H' },
		{ "moe", 1, NULL, 'E' }, { "fsdp-interleave", 0, NULL, 'G' },
		{ "stages", 1, NULL, 'T' }, { "pp-comm", 0, NULL, 'Q' },
		{ "barrier-every", 1, NULL, 'Y' }, { "loss", 0, NULL, 'X' },
		{ NULL, 0, NULL, 0 },
	};
	long big = INT_MAX / 4 * 4;
	int c, i;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1) {
		switch (c) {
		case 's': z.steps = parse_num(optarg, "--steps", 1, INT_MAX); break;
		case 'w': z.warmup = parse_num(optarg, "--warmup", 0, INT_MAX); break;
		case 'g': z.go_file = optarg; break;
		case 'I': z.init_file = optarg; break;
		case 'D': z.data_dir = optarg; break;
		case 'c': z.compute_us = parse_num(optarg, "--compute-us", 0, INT_MAX); break;
		case 'o': z.opt_us = parse_num(optarg, "--opt-us", 0, INT_MAX); break;
		case 'i': z.input_kb = parse_num(optarg, "--input-kb", 0, 1 << 20); break;
		case 'b': z.buckets = parse_num(optarg, "--buckets", 1, 4096); break;
		case 'B': z.bucket_bytes = parse_num(optarg, "--bucket-bytes", 4, big); break;
		case 'L': z.last_bytes = parse_num(optarg, "--last-bytes", 4, big); break;
		case 'O': z.overlap = true; break;
		case 'f': z.fsdp = parse_num(optarg, "--fsdp", 1, 4096); break;
		case 't': z.tp = parse_num(optarg, "--tp", 1, 4096); break;
		case 'p': z.pp = parse_num(optarg, "--pp", 1, 4096); break;
		case 'T': z.stages = parse_num(optarg, "--stages", 2, 64); break;
		case 'Q': z.pp_comm_own = true; break;
		case 'E': z.moe = parse_num(optarg, "--moe", 1, 4096); break;
		case 'G': z.fsdp_interleave = true; break;
		case 'a': z.act_bytes = parse_num(optarg, "--act-bytes", 4, big); break;
		case 'A': z.accum = parse_num(optarg, "--accum", 1, 4096); break;
		case 'e': z.eval_every = parse_num(optarg, "--eval-every", 1, INT_MAX); break;
		case 'Y': z.barrier_every = parse_num(optarg, "--barrier-every", 1, INT_MAX); break;
		case 'X': z.loss = true; break;
		case 'k': z.len_skew = true; break;
		case 'C': z.change_at = parse_num(optarg, "--change-at", 0, INT_MAX); break;
		case 'l': z.loader = true; break;
		case 'u': z.loader_us = parse_num(optarg, "--loader-us", 0, INT_MAX); break;
		case 'F': parse_fault(optarg); break;
		case 'S': z.fault_from = parse_num(optarg, "--fault-from", 0, INT_MAX); break;
		case 'V': z.fault_every = parse_num(optarg, "--fault-every", 1, INT_MAX); break;
		case 'K': z.ckpt_every = parse_num(optarg, "--ckpt-every", 1, INT_MAX); break;
		case 'M': z.ckpt_mb = parse_num(optarg, "--ckpt-mb", 1, 1 << 16); break;
		case 'P': z.ckpt_dir = optarg; break;
		case 'H': z.ckpt_shards = true; break;
		case 'R': z.resume = true; break;
		case ':': usage_error("option '%s' needs a value", argv[optind - 1]);
		default: usage_error("unknown option '%s' (the options are in zoo_mpi.c's header)",
				     argv[optind - 1]);
		}
	}
	if (optind != argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (!z.ckpt_dir)
		z.ckpt_dir = z.data_dir;
	if (z.bucket_bytes % 4 || z.last_bytes % 4 || z.act_bytes % 4)
		usage_error("--bucket-bytes, --last-bytes and --act-bytes must be multiples of 4");
	if (!!z.fsdp + !!z.tp + !!z.pp + !!z.moe > 1)
		usage_error("--fsdp, --tp, --pp and --moe do not combine");
	if (z.overlap && (z.fsdp || z.tp || z.pp || z.moe))
		usage_error("--overlap only with plain --buckets (not --fsdp, --tp, --pp, --moe)");
	if (z.fsdp_interleave && !z.fsdp)
		usage_error("--fsdp-interleave needs --fsdp K (it changes the FSDP backward)");
	if (z.fsdp && (z.buckets != 1 || z.last_bytes))
		usage_error("--fsdp has no --buckets or --last-bytes (--bucket-bytes sizes a shard)");
	if (z.pp && z.accum > 1)
		usage_error("--accum does not combine with --pp (its micro-batches accumulate)");
	if (z.stages && !z.pp)
		usage_error("--stages needs --pp M (the micro-batches the stages pass on)");
	if (z.pp_comm_own && !z.pp)
		usage_error("--pp-comm needs --pp M (the pipelines it puts on their own communicators)");
	if (!z.stages)
		z.stages = 2;
	if (z.moe && z.accum > 1)
		usage_error("--accum does not combine with --moe (one pass of the layers a step)");
	if (z.loader && !z.input_kb)
		usage_error("--loader needs --input-kb of at least 1");
	for (i = 0; i < z.nfaults; i++) {
		const struct fault *f = &z.faults[i];

		if ((f->kind == F_PIPE || f->kind == F_WQUOTA) && !z.loader)
			usage_error("--fault %s needs --loader", fkinds[f->kind].name);
		for (c = 0; c < i; c++)
			if (f->kind == F_DIVERGENT && z.faults[c].kind == F_DIVERGENT &&
			    z.faults[c].arg == f->arg)
				usage_error("at most one divergent fault per step");
	}
}

/* ---- faults ---- */

const struct fault *fault_on(enum fkind kind)
{
	int i;

	for (i = 0; i < z.nfaults; i++)
		if (z.faults[i].kind == kind && z.faults[i].rank == z.rank)
			return &z.faults[i];
	return NULL;
}

/* a fault of any rank (one that every rank takes part in) */
const struct fault *fault_any(enum fkind kind)
{
	int i;

	for (i = 0; i < z.nfaults; i++)
		if (z.faults[i].kind == kind)
			return &z.faults[i];
	return NULL;
}

/* a per-step fault of this rank, active at measured step k */
long fault_arg(enum fkind kind, long k)
{
	const struct fault *f = fault_on(kind);

	/* --fault-every K: only in every K-th step from --fault-from (an intermittent straggler) */
	return f && k >= z.fault_from && (k - z.fault_from) % z.fault_every == z.fault_every - 1 ?
	       f->arg : 0;
}

bool fault_at(enum fkind kind, long k, bool this_rank)
{
	int i;

	for (i = 0; i < z.nfaults; i++)
		if (z.faults[i].kind == kind && z.faults[i].arg == k &&
		    (!this_rank || z.faults[i].rank == z.rank))
			return true;
	return false;
}

/* ---- cgroups ---- */

static int write_file(const char *dir, const char *file, const char *val)
{
	char path[640];
	int fd, ret = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n != (ssize_t)strlen(val))
		ret = n < 0 ? -errno : -EIO;
	close(fd);
	return ret;
}

/* this process's cgroup in the hierarchy that has the cpu controller */
static int own_cgroup(bool v2, const char *root, char *out, size_t len)
{
	char line[1024];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int found = -ENOENT;

	while (f && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL, *tok, *sp;

		if (!path)
			continue;
		*path++ = 0;
		path[strcspn(path, "\n")] = 0;
		ctl++;
		if (v2 && !strcmp(line, "0") && !*ctl)
			found = 0;
		for (tok = strtok_r(ctl, ",", &sp); !v2 && tok; tok = strtok_r(NULL, ",", &sp))
			if (!strcmp(tok, "cpu"))
				found = 0;
		if (!found) {
			snprintf(out, len, "%s%s", root, strcmp(path, "/") ? path : "");
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* Make the cgroup with no limit yet and move pid into it; 0, or an error line in err. */
static int cg_setup(struct cgroup *cg, pid_t pid, long pct, const char *tag, char *err,
		    size_t elen)
{
	char ctl[256] = "", pidstr[32], *tok, *sp;
	const char *root;
	FILE *f;
	int ret;

	f = fopen("/sys/fs/cgroup/cgroup.controllers", "re");
	if (f) {
		if (!fgets(ctl, sizeof(ctl), f))
			ctl[0] = 0;
		fclose(f);
	}
	for (tok = strtok_r(ctl, " \n", &sp); tok; tok = strtok_r(NULL, " \n", &sp))
		cg->v2 |= !strcmp(tok, "cpu");
	if (!cg->v2 && access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", W_OK)) {
		snprintf(err, elen, "no writable cgroup cpu controller (v2 /sys/fs/cgroup with cpu "
			 "in cgroup.controllers, or v1 /sys/fs/cgroup/cpu): cannot make a CPU quota");
		return -1;
	}
	root = cg->v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/cpu";
	if (own_cgroup(cg->v2, root, cg->orig, sizeof(cg->orig))) {
		snprintf(err, elen, "no cpu cgroup line in /proc/self/cgroup");
		return -1;
	}
	/* the quota: PCT% of one CPU per 10 ms, at least 1 ms of CPU (then a longer period) */
	cg->quota_us = pct * CG_PERIOD_US / 100;
	cg->period_us = CG_PERIOD_US;
	if (cg->quota_us < 1000) {
		cg->quota_us = 1000;
		cg->period_us = 100000 / pct;
	}
	snprintf(cg->dir, sizeof(cg->dir), "%s/rankscope-zoo-%d-%s", root, (int)getpid(), tag);
	if (cg->v2)
		write_file(root, "cgroup.subtree_control", "+cpu");
	if (mkdir(cg->dir, 0755) && errno != EEXIST) {
		snprintf(err, elen, "mkdir %s: %s", cg->dir, strerror(errno));
		return -1;
	}
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	ret = write_file(cg->dir, "cgroup.procs", pidstr);
	if (ret) {
		snprintf(err, elen, "cannot move pid %d into %s: %s", (int)pid, cg->dir,
			 strerror(-ret));
		rmdir(cg->dir);
		return -1;
	}
	cg->pid = pid;
	cg->in = true;
	return 0;
}

static void cg_limit(struct cgroup *cg)
{
	char val[64];
	int ret;

	if (!cg->in)
		return;
	if (cg->v2) {
		snprintf(val, sizeof(val), "%ld %ld", cg->quota_us, cg->period_us);
		ret = write_file(cg->dir, "cpu.max", val);
	} else {
		snprintf(val, sizeof(val), "%ld", cg->period_us);
		ret = write_file(cg->dir, "cpu.cfs_period_us", val);
		snprintf(val, sizeof(val), "%ld", cg->quota_us);
		if (!ret)
			ret = write_file(cg->dir, "cpu.cfs_quota_us", val);
	}
	if (ret)
		fatal("cannot set the CPU quota of %s: %s", cg->dir, strerror(-ret));
}

/* Move the process back (if it still lives) and remove the cgroup. */
static void cg_remove(struct cgroup *cg, bool move_back)
{
	char pidstr[32];
	int i;

	if (!cg->in)
		return;
	if (move_back) {
		snprintf(pidstr, sizeof(pidstr), "%d", (int)cg->pid);
		write_file(cg->orig, "cgroup.procs", pidstr);
	}
	for (i = 0; i < 100 && rmdir(cg->dir) && errno == EBUSY; i++)
		fix_sleep_ns(10 * 1000 * 1000);
	cg->in = false;
}

/* ---- input: files and the loader child ---- */

/* The child: never calls MPI; exits on EOF, on a broken pipe, or when the rank dies. */
static void __attribute__((noreturn)) loader_main(int req, int data, pid_t parent)
{
	struct loader_cfg cfg;
	int64_t step;
	char *buf;
	int null;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	signal(SIGPIPE, SIG_DFL);
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		close(null);
	}
	if (read(req, &cfg, sizeof(cfg)) != sizeof(cfg))
		_exit(0);
	buf = malloc(cfg.bytes ? cfg.bytes : 1);
	if (!buf)
		_exit(1);
	while (read(req, &step, sizeof(step)) == sizeof(step)) {
		int64_t off = 0;

		if (cfg.sleep_us && step >= cfg.from)
			fix_sleep_ns(cfg.sleep_us * 1000);
		burn_ns(cfg.busy_us * 1000);	/* "decode" the batch */
		memset(buf, (int)(step & 0x7f), cfg.bytes);
		while (off < cfg.bytes) {
			ssize_t n = write(data, buf + off, cfg.bytes - off);

			if (n <= 0)
				_exit(0);
			off += n;
		}
	}
	_exit(0);
}

static void loader_fork(void)
{
	int req[2], data[2];
	pid_t parent = getpid();

	if (pipe2(req, O_CLOEXEC) || pipe2(data, O_CLOEXEC)) {
		perror("zoo_mpi: pipe");
		exit(1);
	}
	fflush(NULL);
	z.loader_pid = fork();
	if (z.loader_pid < 0) {
		perror("zoo_mpi: fork");
		exit(1);
	}
	if (!z.loader_pid) {
		close(req[1]);
		close(data[0]);
		loader_main(req[0], data[1], parent);
	}
	close(req[0]);
	close(data[1]);
	z.req_fd = req[1];
	z.data_fd = data[0];
}

static void loader_start(void)
{
	struct loader_cfg cfg = {
		.sleep_us = 0, .from = z.fault_from,
		.bytes = z.input_kb * 1024, .busy_us = z.loader_us,
	};
	const struct fault *f = fault_on(F_PIPE);

	if (f)
		cfg.sleep_us = f->arg;
	if (write(z.req_fd, &cfg, sizeof(cfg)) != sizeof(cfg))
		fatal("loader pid %d: %s", (int)z.loader_pid, strerror(errno));
}

static void loader_stop(void)
{
	if (z.loader_pid <= 0)
		return;
	close(z.req_fd);
	close(z.data_fd);
	waitpid(z.loader_pid, NULL, 0);
	z.loader_pid = 0;
}

/* a file of n bytes in the data dir, unlinked at once; O_DIRECT: written past the cache */
static int make_file(const char *what, long n, bool direct, char *err, size_t elen)
{
	char path[512];
	char *buf = NULL;
	long off;
	int fd;

	if (mkdir(z.data_dir, 0755) && errno != EEXIST) {
		snprintf(err, elen, "mkdir %s: %s", z.data_dir, strerror(errno));
		return -1;
	}
	if (snprintf(path, sizeof(path), "%s/%s-%d.bin", z.data_dir, what,
		     (int)getpid()) >= (int)sizeof(path)) {
		snprintf(err, elen, "--data-dir is too long");
		return -1;
	}
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | (direct ? O_DIRECT : 0), 0600);
	if (fd < 0) {
		snprintf(err, elen, "%s: %s", path, strerror(errno));
		return -1;
	}
	unlink(path);
	if (posix_memalign((void **)&buf, 4096, 1 << 20))
		buf = NULL;
	for (off = 0; buf && off < n; off += 1 << 20) {
		long len = n - off < (1 << 20) ? n - off : 1 << 20;

		memset(buf, (int)(off >> 20) & 0xff, len);
		if (pwrite(fd, buf, len, off) != len)
			break;
	}
	if (off < n) {
		snprintf(err, elen, "writing %s: %s", path, buf ? strerror(errno) : "no memory");
		free(buf);
		close(fd);
		return -1;
	}
	free(buf);
	fsync(fd);
	posix_fadvise(fd, 0, 0, direct ? POSIX_FADV_DONTNEED : POSIX_FADV_WILLNEED);
	return fd;
}

void read_all(int fd, char *buf, long n, off_t off, const char *what)
{
	long done = 0;

	while (done < n) {
		ssize_t r = off >= 0 ? pread(fd, buf + done, n - done, off + done) :
				       read(fd, buf + done, n - done);

		if (r <= 0)
			fatal("%s: %s", what, r ? strerror(errno) : "unexpected EOF");
		done += r;
	}
}

void input(struct acct *a)
{
	long n = z.input_kb * 1024;

	if (z.loader) {
		int64_t step = a->step;

		if (write(z.req_fd, &step, sizeof(step)) != sizeof(step))
			fatal("loader request: %s", strerror(errno));
		read_all(z.data_fd, z.inbuf, n, -1, "loader pipe");
		lap(a, A_INPUT);
	} else if (n) {
		read_all(z.in_fd, z.inbuf, n, (off_t)(z.in_reads++ % IN_CHUNKS) * n, "input file");
		lap(a, A_IO);
	}
}

/* ---- checkpoints ---- */

static void ckpt_path(char *buf, size_t n, const char *suffix)
{
	char shard[16] = "";

	if (z.ckpt_shards)
		snprintf(shard, sizeof(shard), ".%d", z.rank);
	if ((size_t)snprintf(buf, n, "%s/zoo-ckpt%s%s", z.ckpt_dir, shard, suffix) >= n)
		fatal("--ckpt-dir is too long: '%s'", z.ckpt_dir);
}

/* Rank 0 (every rank with --ckpt-shards), after measured step k: the state up to k, written
 * whole and renamed into place. */
void checkpoint(long k)
{
	char tmp[4096], path[4096];
	int64_t t0 = fix_now_ns();
	long next = k + 1, i;
	int fd;

	ckpt_path(tmp, sizeof(tmp), ".tmp");
	ckpt_path(path, sizeof(path), "");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		fatal("checkpoint %s: %s", tmp, strerror(errno));
	memset(z.ckbuf, (int)(k & 0xff), 1 << 20);
	memcpy(z.ckbuf, &next, sizeof(next));
	for (i = 0; i < z.ckpt_mb; i++)
		if (write(fd, z.ckbuf, 1 << 20) != 1 << 20)
			fatal("checkpoint %s: %s", tmp, strerror(errno));
	if (fsync(fd) || close(fd) || rename(tmp, path))
		fatal("checkpoint %s: %s", path, strerror(errno));
	printf("{\"type\":\"ckpt\",\"rank\":%d,\"step\":%ld,\"start_ns\":%lld,\"end_ns\":%lld}\n",
	       z.rank, k, (long long)t0, (long long)fix_now_ns());
	fflush(stdout);
}

/* --resume: the first measured step, from rank 0's checkpoint (0: none), to every rank. */
static long resume_step(void)
{
	char path[4096];
	long next = 0;
	int fd;

	if (!z.rank) {
		ckpt_path(path, sizeof(path), "");
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (read(fd, &next, sizeof(next)) != (ssize_t)sizeof(next) || next < 0)
				next = 0;
			close(fd);
		}
	}
	MPI_Bcast(&next, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	return next;
}

/* ---- the truth and workload lines, setup, main ---- */

static void emit(const struct acct *a, int64_t step_ns)
{
	char pp[160] = "";

	if (z.pp)
		snprintf(pp, sizeof(pp), ",\"stage\":%d,\"busy_ns\":%lld,\"bubble_ns\":%lld,\"p2p\":%d",
			 z.stage, (long long)a->busy, (long long)a->bubble, a->p2p);
	if (z.tp)
		snprintf(pp, sizeof(pp), ",\"tp_ns\":%lld", (long long)a->tp);
	printf("{\"type\":\"truth\",\"rank\":%d,\"pid\":%d,\"step\":%ld,\"start_ns\":%lld,"
	       "\"step_ns\":%lld,\"input_ns\":%lld,\"io_ns\":%lld,\"compute_ns\":%lld,"
	       "\"sleep_ns\":%lld,\"comm_ns\":%lld,\"stopped_ns\":%lld,\"log_ns\":%lld,"
	       "\"preempt_ns\":%lld,\"collectives\":%d%s}\n",
	       z.rank, z.pid, a->step, (long long)a->start, (long long)step_ns,
	       (long long)a->ns[A_INPUT], (long long)a->ns[A_IO], (long long)a->ns[A_COMPUTE],
	       (long long)a->ns[A_SLEEP], (long long)a->ns[A_COMM], (long long)a->ns[A_STOP],
	       (long long)a->ns[A_LOG], (long long)a->preempt, a->coll, pp);
	fflush(stdout);
}

static void print_workload(void)
{
	const char *kind = z.fsdp ? "fsdp" : z.tp ? "tp" : z.pp ? "pp" : z.moe ? "moe" : "ddp";
	char buf[8192];
	int n, i;

	n = snprintf(buf, sizeof(buf),
		     "{\"type\":\"workload\",\"world_size\":%d,\"structure\":{\"kind\":\"%s\","
		     "\"steps\":%ld,\"warmup\":%ld,\"compute_us\":%ld,\"opt_us\":%ld,\"input_kb\":%ld,"
		     "\"buckets\":%ld,\"bucket_bytes\":%ld,\"last_bytes\":%ld,\"overlap\":%s,"
		     "\"fsdp\":%ld,\"fsdp_interleave\":%s,\"tp\":%ld,\"pp\":%ld,\"stages\":%ld,\"moe\":%ld,"
		     "\"act_bytes\":%ld,\"accum\":%ld,"
		     "\"eval_every\":%ld,\"barrier_every\":%ld,\"len_skew\":%s,\"change_at\":%ld,\"loader\":%s,"
		     "\"loader_us\":%ld,\"dp_size\":%d},\"faults\":[",
		     z.size, kind, z.steps, z.warmup, z.compute_us, z.opt_us, z.input_kb,
		     z.buckets, z.bucket_bytes, z.last_bytes, z.overlap ? "true" : "false",
		     z.fsdp, z.fsdp_interleave ? "true" : "false", z.tp, z.pp,
		     z.pp ? z.stages : 0, z.moe,
		     z.act_bytes, z.accum, z.eval_every, z.barrier_every,
		     z.len_skew ? "true" : "false", z.change_at, z.loader ? "true" : "false",
		     z.loader_us, z.dp_size);
	for (i = 0; i < z.nfaults; i++) {
		const struct fault *f = &z.faults[i];
		bool at = f->kind == F_SIGSTOP || f->kind == F_KILL || f->kind == F_DIVERGENT ||
			  f->kind == F_DIVHANG;

		n += snprintf(buf + n, sizeof(buf) - n,
			      "%s{\"kind\":\"%s\",\"rank\":%ld,\"arg\":%ld,\"from_step\":%ld,"
			      "\"every\":%ld,\"class\":\"%s\"}", i ? "," : "", fkinds[f->kind].name,
			      f->rank, f->arg, at ? f->arg : z.fault_from, at ? 1 : z.fault_every,
			      fkinds[f->kind].cls);
	}
	snprintf(buf + n, sizeof(buf) - n, "],\"expect\":{\"class\":\"%s\",\"rank\":%ld}}\n",
		 z.nfaults ? fkinds[z.faults[0].kind].cls : "none",
		 z.nfaults && z.faults[0].kind != F_ROTATE ? z.faults[0].rank : -1L);
	fputs(buf, stdout);
	fflush(stdout);
}

/* Everything before "ready"; returns 0, 1 (error) or EXIT_SKIP, with a line in err. */
static int setup(char *err, size_t elen)
{
	long maxb = z.bucket_bytes > z.last_bytes ? z.bucket_bytes : z.last_bytes;
	const struct fault *f;
	size_t n, i;

	if (z.act_bytes > maxb)
		maxb = z.act_bytes;
	/* an all-gather receives, an all-to-all sends and receives, a block from every rank */
	n = (size_t)maxb / 4 * (z.fsdp || z.moe ? z.size : 1);
	if (n < 2 * DIV_COUNT)
		n = 2 * DIV_COUNT;
	z.sbuf = malloc(n * sizeof(float));
	z.rbuf = malloc(n * sizeof(float));
	if (z.ckpt_every && (!z.rank || z.ckpt_shards) && !(z.ckbuf = malloc(1 << 20))) {
		snprintf(err, elen, "out of memory");
		return 1;
	}
	if (posix_memalign((void **)&z.inbuf, 4096, z.input_kb * 1024 + 1))
		z.inbuf = NULL;
	if (!z.sbuf || !z.rbuf || !z.inbuf) {
		snprintf(err, elen, "out of memory");
		return 1;
	}
	for (i = 0; i < n; i++)
		z.sbuf[i] = (float)(z.rank + 1);
	if (!z.loader && z.input_kb) {
		z.in_fd = make_file("input", IN_CHUNKS * z.input_kb * 1024, false, err, elen);
		if (z.in_fd < 0)
			return 1;
	}
	f = fault_on(F_STORAGE);
	if (f) {
		z.direct_fd = make_file("direct", DIRECT_CHUNKS * f->arg * 1024, true, err, elen);
		if (z.direct_fd < 0)
			return 1;
		if (posix_memalign((void **)&z.dbuf, 4096, f->arg * 1024)) {
			snprintf(err, elen, "out of memory");
			return 1;
		}
	}
	f = fault_on(F_QUOTA);
	if (f && cg_setup(&z.cg_rank, getpid(), f->arg, "rank", err, elen))
		return EXIT_SKIP;
	f = fault_on(F_WQUOTA);
	if (f && cg_setup(&z.cg_loader, z.loader_pid, f->arg, "loader", err, elen))
		return EXIT_SKIP;
	return 0;
}

int main(int argc, char **argv)
{
	const char *env = getenv("OMPI_COMM_WORLD_RANK");
	struct acct a = { 0 }, prev = { 0 };
	char err[1024] = "";
	int ret, worst, i;
	long k, first;

	z.loud = !env || !strcmp(env, "0");
	z.pid = (int)getpid();
	parse_opts(argc, argv);
	for (i = 0; i < z.nfaults; i++)
		if (z.faults[i].kind == F_DIVERGENT) {
			/* linear broadcast: a non-root that posts more than it gets is fine */
			setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 1);
			setenv("OMPI_MCA_coll_tuned_bcast_algorithm", "1", 1);
		}
	signal(SIGPIPE, SIG_IGN);
	if (z.loader)
		loader_fork();

	if (z.init_file) {
		printf("pre-init pid=%d\n", z.pid);
		fflush(stdout);
		fix_wait_go(z.init_file, -1);
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &z.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &z.size);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < z.nfaults; i++)
		if (z.faults[i].rank >= z.size && !err[0])
			snprintf(err, sizeof(err), "--fault %s: rank %ld, but the job has %d ranks",
				 fkinds[z.faults[i].kind].name, z.faults[i].rank, z.size);
	if (z.tp && z.size % 2)
		snprintf(err, sizeof(err), "--tp needs an even number of ranks, not %d", z.size);
	if (z.pp && z.size % z.stages)
		snprintf(err, sizeof(err), "--pp with %ld stages needs a multiple of %ld ranks, "
			 "not %d (-np or --stages)", z.stages, z.stages, z.size);
	if (err[0]) {
		if (!z.rank)
			fprintf(stderr, "zoo_mpi: %s\n", err);
		MPI_Finalize();
		return 2;
	}

	z.stage = z.pp ? z.rank % (int)z.stages : 0;
	z.tp_comm = z.dp_comm = z.pp_comm = MPI_COMM_NULL;
	if (z.pp && z.pp_comm_own) {
		z.stage = z.rank / (z.size / (int)z.stages);
		MPI_Comm_split(MPI_COMM_WORLD, z.rank % (z.size / (int)z.stages), z.rank,
			       &z.pp_comm);
	}
	z.dp_size = z.size;
	if (z.tp)
		MPI_Comm_split(MPI_COMM_WORLD, z.rank / 2, z.rank, &z.tp_comm);
	if (z.tp || z.pp) {
		MPI_Comm_split(MPI_COMM_WORLD, z.pp_comm != MPI_COMM_NULL ? z.stage :
			       z.rank % (z.pp ? (int)z.stages : 2), z.rank, &z.dp_comm);
		MPI_Comm_size(z.dp_comm, &z.dp_size);
	}
	ret = setup(err, sizeof(err));
	if (ret)
		fprintf(stderr, "zoo_mpi: rank %d pid %d: %s\n", z.rank, (int)getpid(), err);
	MPI_Allreduce(&ret, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (worst) {
		cg_remove(&z.cg_rank, true);
		cg_remove(&z.cg_loader, true);
		MPI_Finalize();
		return worst;
	}
	if (z.loader)
		loader_start();
	if (!z.rank)
		print_workload();
	MPI_Barrier(MPI_COMM_WORLD);	/* the workload line first */
	if (z.loader)
		printf("loader rank=%d pid=%d ppid=%d\n", z.rank, (int)z.loader_pid, (int)getpid());
	first = z.resume ? resume_step() : 0;
	if (z.resume && !z.rank)
		printf("{\"type\":\"resume\",\"step\":%ld}\n", first);
	fix_ready(z.rank);
	if (z.go_file)
		fix_wait_go(z.go_file, z.rank);

	for (k = -z.warmup; k < z.steps; k++) {
		if (k == 0 && first > 0)
			k = first;
		if (k >= z.steps)
			break;
		if (k == z.fault_from) {	/* the quotas bite from here */
			cg_limit(&z.cg_rank);
			cg_limit(&z.cg_loader);
		}
		memset(&a, 0, sizeof(a));
		a.step = k;
		a.start = fix_now_ns();
		a.t = a.start;
		if (prev.start)
			emit(&prev, a.start - prev.start);
		zoo_train_step(k);
		lap(&a, A_LOG);
		step(&a, k);
		prev = a;
	}
	emit(&prev, fix_now_ns() - prev.start);
	printf("done rank=%d pid=%d steps=%ld checksum=%.0f\n", z.rank, (int)getpid(), z.steps,
	       z.checksum);
	fflush(stdout);

	loader_stop();
	cg_remove(&z.cg_loader, false);
	cg_remove(&z.cg_rank, true);
	if (z.in_fd >= 0)
		close(z.in_fd);
	if (z.direct_fd >= 0)
		close(z.direct_fd);
	if (z.tp_comm != MPI_COMM_NULL)
		MPI_Comm_free(&z.tp_comm);
	if (z.dp_comm != MPI_COMM_NULL)
		MPI_Comm_free(&z.dp_comm);
	if (z.pp_comm != MPI_COMM_NULL)
		MPI_Comm_free(&z.pp_comm);
	free(z.sbuf);
	free(z.rbuf);
	free(z.inbuf);
	free(z.dbuf);
	free(z.ckbuf);
	MPI_Finalize();
	return 0;
}
