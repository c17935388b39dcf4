/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The /metrics document: rankscope's view of its ranks as Prometheus series. */
#ifndef RS_METRICS_H
#define RS_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "collectives.h"
#include "gpu.h"
#include "job.h"
#include "probes.h"
#include "prom.h"
#include "report_rank.h"

#define METRICS_SIZE_BUCKETS 4	/* <64KiB, <1MiB, <16MiB, larger */
#define METRICS_LIBS	(RS_LIB_GLOO + 1)	/* collective libraries: nccl, mpi, gloo */
#define METRICS_OPS	RS_OP_GROUP_START	/* collective ops */

/* Cumulative per-rank counters the session keeps for the exposition. */
struct metrics_acc {
	uint64_t steps;
	struct rs_hist step_hist;		/* step durations, log2 ns */
	uint64_t phase_ns[PH_MAX];
	uint64_t wait_ns, transfer_ns, inside_ns;
	uint64_t last_seq;			/* main communicator, aligned */
	uint64_t ckpt_count, ckpt_ns, ckpt_bytes;	/* checkpoints (ckpt.h) */
	double ckpt_last_unix;			/* when the last one ended, unix seconds */
	struct rs_hist coll[METRICS_LIBS][METRICS_OPS][METRICS_SIZE_BUCKETS];
	/* a pipeline stage (job.h): its latest stage, and its time busy and in sends/receives;
	 * pp_steps 0: not in a pipeline */
	int stage, stages, micro;
	uint64_t pp_steps, pp_busy_ns, pp_bubble_ns;
};

/* One rank as the exposition sees it. */
struct metrics_rank {
	int rank;
	pid_t pid;
	const char *job;
	const char *job_src;	/* ranks__job_source_name(); NULL: no rankscope_rank_info */
	const char *node;	/* NULL or "": left out of rankscope_rank_info, as ns and pod */
	const char *ns;		/* the pod's namespace and name (the pod watch) */
	const char *pod;
	bool exited;
	bool hung;
	const struct slot_snapshot *snap;
	const struct metrics_acc *acc;
	const struct gpu_acc *gpu;	/* NULL: no CUPTI library reported */
};

/* One job as the exposition sees it: its latest verdict. */
struct metrics_job {
	const char *id;
	const struct job_verdict *v;	/* NULL: none yet */
	int vrank;			/* the verdict's rank number, -1: none */
	int ranks_seen;			/* ranks of the job observed here */
	int world_size;			/* ranks in the job, -1: not known */
	const struct cost *cost;	/* what stragglers cost it; NULL: no model yet */
	double gpu_hour_usd;		/* --gpu-hour-cost (0: none) and --gpus-per-rank */
	int gpus_per_rank;
};

/* Account one returned collective. */
void metrics__on_coll(struct metrics_acc *a, unsigned int lib, unsigned int op, uint64_t bytes,
		      uint64_t inside_ns);

/* Account one step. */
void metrics__on_step(struct metrics_acc *a, const struct job_step *st);

/* The size bucket label of a message size. */
const char *metrics__size_bucket(uint64_t bytes);

/* Render every series: the ranks' and the jobs' (capped by p->max_series), then rankscope's own
 * (never capped). planned_steps 0: no rankscope_planned_steps. */
void metrics__render(struct prom *p, const struct metrics_rank *r, int n,
		     const struct metrics_job *jobs, int njobs, const struct self_stats *self,
		     long planned_steps);

#endif /* RS_METRICS_H */
