/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The job model: per-rank timelines in, aligned steps with phases and verdicts out. */
#ifndef RS_JOB_H
#define RS_JOB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "cost.h"
#include "detect.h"
#include "period.h"
#include "steps.h"

enum steps_mode {
	STEPS_AUTO,	/* DDP marker if the job has one, else the collective period */
	STEPS_EVERY,	/* every N-th collective on the main communicator */
	STEPS_MARKER,	/* the entries of a marker probe (DDP's prepare_for_forward) */
};

struct job_cfg {
	enum steps_mode mode;
	int every;			/* STEPS_EVERY */
	uint64_t hang_timeout_ns;
	int window;			/* steps per verdict window */
	double gpu_hour_usd;		/* the straggler cost's price (--gpu-hour-cost); 0: none */
	int gpus_per_rank;		/* GPUs each rank holds (the price is per GPU) */
};

#define JOB_MAX_COLL	4096	/* per rank; the oldest are dropped (bounded memory) */
#define JOB_MAX_OFF	8192
#define JOB_MAX_IO	8192
#define JOB_MAX_MARK	1024
#define JOB_MAX_SYNC	4096	/* CUDA synchronize calls per rank */
#define JOB_MAX_GPU	65536	/* GPU kernels and copies per rank (only ranks with CUPTI data);
				 * trimmed as steps are built, so this bounds one step's worth */
#define JOB_ROWS	64	/* completed steps kept for windows */
#define JOB_GROUP_GAP_NS 300000ULL	/* returns further apart: another group's collective */
#define JOB_GROUP_LEARN	32	/* groups from the last this many collectives (bits of a u32) */
#define JOB_CONFIRM	2	/* windows in a row a new verdict must hold before it is reported */
#define JOB_PERIOD_SEEN	1024	/* the step period is learned from this many collectives at most */
#define JOB_GAP_RANKS	32	/* ... and their pauses from this many ranks at most */
#define JOB_PERIOD_SURE	0.99	/* a period that repeats this well is taken at once; one that
				 * repeats less well waits for more collectives... */
#define JOB_PERIOD_WAIT	256	/* ... up to this many (a longer period may need them) */
#define JOB_MARK_ALIGN	6	/* marker steps seen on two ranks before their numbers are lined up */
#define JOB_MARK_OFF	3	/* ... within this many steps of each other */
#define JOB_FOLD_MAX	64	/* other communicators' collectives folded into a main one's sig */
#define JOB_RELEARN_STEPS 4	/* no step found for this many periods: learn the pattern again */
#define JOB_SETTLE_NS	200000000ULL	/* wait this long after a step ends for its events */
#define JOB_GPU_SETTLE_NS 2000000000ULL	/* and up to this long for its GPU records (CUPTI) */
#define JOB_GPU_SLACK_NS 200000ULL	/* an NCCL kernel may seem to start this much before the
					 * host entered its collective (clock calibration, probe) */
#define JOB_EXIT_GRACE_NS 2000000000ULL	/* peers may end this long after a rank: a normal end */

struct job_rank;

/* A completed step of one rank, for output. */
#define JOB_STEP_COMMS	4	/* communicators a step line lists; more are counted */

#define JOB_SIG_TEXT	128	/* the start of a step's sequence of collectives, as text */

/* A step's collectives on one communicator (by the hash of its global name). */
struct job_step_comm {
	uint64_t comm;
	uint32_t ops;
	uint64_t bytes;
	uint64_t inside_ns;
	uint64_t p2p_ns;	/* of which in sends and receives */
	uint64_t held_ns;	/* runnable and not running inside its collectives */
	/* the step's sequence of collectives on it (sends and receives left out: a pipeline's
	 * stages differ), for a hub to compare across nodes: a hash of each one's operation and
	 * bytes in order (0: none), and its start as "op:bytes op:bytes ..." */
	uint64_t sig;
	char sig_ops[JOB_SIG_TEXT];
};

struct job_step {
	int col;		/* rank column */
	uint64_t index;
	uint64_t start_ns;
	uint64_t dur_ns;
	struct phases ph;
	uint64_t worker_io_ns;
	uint64_t worker_io_bytes;
	uint32_t collectives;
	uint64_t inside_ns;
	bool has_gpu;		/* CUPTI records cover this rank */
	uint64_t gpu_busy_ns;	/* union of kernels and copies on any stream, inside the step */
	uint64_t gpu_nccl_ns;	/* of which NCCL kernels (each kernel's time, not a union) */
	uint64_t p2p_ns;	/* main thread inside sends and receives: a pipeline's bubble */
	int stage;		/* pipeline stage from the send/receive graph; -1: none */
	int stages;		/* the pipeline's stages (0: no pipeline) */
	int micro;		/* micro-batches a step (the first stage's sends) */
	int ncomm;
	uint32_t comm_other_ops;	/* on communicators past JOB_STEP_COMMS */
	/* last: a copy kept for later (the daemon's /api/v1/steps) holds only ncomm of them */
	struct job_step_comm comm[JOB_STEP_COMMS];
};

#define JOB_GROUP_SHOW	72	/* ranks (and -1 ends) of a verdict's groups it lists */
#define JOB_VGROUPS	4	/* distinct groups a rank is judged in, a step */

#define JOB_PP_SHOW	16	/* pipeline stages a verdict lists */

/* A pipeline's bubble over a verdict's window (stages 0: not a pipeline). */
struct job_pp {
	int stages;		/* S */
	int micro;		/* M, 0: not counted */
	double theory;		/* (S - 1) / (M + S - 1); 0 when M is not known */
	double bubble[JOB_PP_SHOW];	/* each stage's median share of its step in sends and
					 * receives */
	uint64_t busy_ns[JOB_PP_SHOW];	/* each stage's median step less its collectives */
	int worst;		/* the stage that idles most */
	bool balanced;		/* the busiest stage is within 25% of the least busy */
	bool excess;		/* its share is over 1.5x theory (the seed's Train_Bubble_Excess),
				 * and 5 points over it at least */
};

#define JOB_STACK_TEXT	384

struct job_verdict {
	struct verdict v;
	enum vclass cls;
	int col;		/* -1: no rank */
	uint64_t step;
	uint64_t first, last;	/* the window */
	bool persistent;
	uint64_t t_ns;		/* CLOCK_MONOTONIC when it was judged */
	int ranks_seen;		/* ranks of the job observed here */
	int world_size;		/* ranks in the job; -1: not known */
	char detail[256];	/* divergent signatures, hang state, exit status */
	/* the job stopped stepping (hang, a divergence seen on a stuck job's stacks, a partial
	 * view's remote hang): since_ns is its last progress, when the waiter entered the
	 * collective it waits in (else the later of its last step built and its last collective
	 * return, or the first look, for a job stuck before the probes) */
	bool stuck;
	uint64_t since_ns;
	/* the late rank was judged inside groups smaller than the job (tensor-, data- or
	 * pipeline-parallel communicators): their ranks, itself included, each group ended by
	 * -1; ngroup 0: judged against the whole job */
	int ngroup;
	int group[JOB_GROUP_SHOW];
	struct job_pp pp;
	/* a stuck job's stacks as evidence: the rank's own and a peer's (text "": none), each
	 * innermost first from the collective or call it waits in (job_probe_ops.where) */
	struct { int rank; char text[JOB_STACK_TEXT]; } stacks[2];
	/* what stragglers cost the job when it was judged (cost.h): its culprit, -1 none */
	struct cost_sum cost;
};

/* The collective a rank's main thread is inside (job_probe_ops.inflight). */
struct job_inflight {
	uint64_t enter_ns;
	uint64_t seq;		/* per (process, communicator), unaligned */
	uint64_t comm;		/* the communicator's name hash, as its records carry it */
	uint64_t bytes;
	unsigned int op;	/* enum rs_coll_op; 0: not known */
};

/* What the caller can tell about a rank right now (hang detection). */
struct job_probe_ops {
	/* Is column col's main thread inside a collective? Then *in says which. */
	bool (*inflight)(void *ctx, int col, struct job_inflight *in);
	/* What column col is doing: "running", "blocked in read", "stopped", "zombie"... */
	void (*state)(void *ctx, int col, char *buf, size_t n);
	/* Where column col's main thread is, from its stack (a stuck job's first look): true
	 * with the collective it is inside (e.g. "PMPI_Allreduce") in coll, or false with coll
	 * "". Either way its stack in a line in stack, innermost first, from that collective
	 * or the call it blocks in ("" when its stack cannot be read). */
	bool (*where)(void *ctx, int col, char *coll, size_t ncoll, char *stack,
		      size_t nstack);
	void (*on_step)(void *ctx, const struct job_step *st, const char *rule);
	void (*on_verdict)(void *ctx, const struct job_verdict *v);
	/* How steps are found, once learned, and again when the pattern changed (changed). */
	void (*on_rule)(void *ctx, const char *rule, int period, double confidence, bool changed,
			const char *note);
	/* Each step's straggler cost once its row is joined (rank: the culprit's; -1 none). */
	void (*on_cost)(void *ctx, uint64_t step, const struct cost_step *cs, int rank);
	/* With job__set_detail(): each run of one phase inside a step, as it is built. */
	void (*on_phase)(void *ctx, int col, enum phase ph, uint64_t start, uint64_t end);
	void *ctx;
};

struct job;

struct job *job__new(const struct job_cfg *cfg, int nranks, const struct job_probe_ops *ops);
/* When the job last made progress (a step built, or the first look): CLOCK_MONOTONIC ns. */
uint64_t job__progress_ns(const struct job *j);
void job__free(struct job *j);

void job__on_coll(struct job *j, int col, uint32_t tid, unsigned int op, unsigned int lib,
		  uint64_t comm, uint64_t seq, uint64_t bytes, uint64_t enter, uint64_t exit);
/* The same, with the peer of a send or receive (its rank in the communicator; -1 none). */
void job__on_coll_peer(struct job *j, int col, uint32_t tid, unsigned int op, unsigned int lib,
		       uint64_t comm, uint64_t seq, uint64_t bytes, uint64_t enter, uint64_t exit,
		       int peer);
void job__on_off(struct job *j, int col, uint32_t tid, uint64_t start, uint64_t end,
		 uint64_t runq, int32_t syscall);
/* The rank's thread was seen running until end (an op trace's compute): no wait for its
 * asynchronous collectives goes on from before then, unless one is marked since. */
void job__on_run(struct job *j, int col, uint32_t tid, uint64_t end);
/* write: a write-side call (write, send, fsync and the like), as a checkpoint makes */
void job__on_io(struct job *j, int col, uint32_t tid, bool worker, unsigned int kind,
		bool write, uint64_t start, uint64_t end, uint64_t bytes);
void job__on_exit(struct job *j, int col, uint64_t t, int status);
/* A GPU kernel or copy of column col, on CLOCK_MONOTONIC (from CUPTI). nccl: an NCCL kernel,
 * whose start is the rank's device-side arrival at the collective and its end the completion. */
void job__on_gpu(struct job *j, int col, bool nccl, uint64_t start, uint64_t end);
/* Column col is rank number rank (for messages) with main thread tid. */
void job__set_rank(struct job *j, int col, int rank, uint32_t tid);
/* The job has world_size ranks in all (-1: not known); more than its columns means ranks on
 * other nodes: a wait that no observed rank explains is theirs (remote_wait). */
void job__set_world(struct job *j, int world_size);

/* Assemble the steps that are complete by now, judge them, look for hangs and exits.
 * final: the session ends, take what there is without waiting for late records; now is
 * when observation stopped, and a step that ends after it is cut, not reported. */
void job__advance(struct job *j, uint64_t now, bool final);

/* Report phase runs through ops.on_phase (a capture records them), or stop. */
void job__set_detail(struct job *j, bool on);

/* "ddp_marker", "period", "every", or "" before steps are known; confidence 0..1. */
const char *job__rule(const struct job *j, double *confidence, int *period);

/* What stragglers have cost the job so far (cost.h). */
const struct cost *job__cost(const struct job *j);

/* The most recent verdict (cls V_NONE with col -1 before any). */
const struct job_verdict *job__last_verdict(const struct job *j);

#endif /* RS_JOB_H */
