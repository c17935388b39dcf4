/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The hub's model of jobs that span nodes: each node daemon's step lines, joined by (job,
 * rank), lined up without a shared clock, and judged by the same detector as one job.
 *
 * Nodes number their steps from their own attach and read their own CLOCK_MONOTONIC. A step's
 * length is the same on every rank (its ends are collective returns, nearly simultaneous
 * everywhere), and step lengths jitter from step to step, so the shift between two nodes'
 * step numbers is the one under which their step lengths match; the clock offset is then the
 * median difference of the matched steps' starts, and its error the spread around it. Lateness
 * needs no clock at all: a rank's own work in a step (the step less its time in collectives)
 * against its peers'.
 *
 * Kernel-free and single-threaded: the caller feeds parsed answers and renders documents.
 */
#ifndef RS_HUB_H
#define RS_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "job.h"

#define HUB_MAX_NODES	1024
#define HUB_MAX_JOBS	256
#define HUB_JOB_RANKS	8192	/* ranks of one job */
#define HUB_MAX_RANKS	16384	/* ranks of all jobs: bounds memory (~9 KB each) whatever peers say */
#define HUB_STEPS	96	/* step lines kept per rank */
#define HUB_ALIGN_MIN	16	/* matched steps needed to line two nodes up */
#define HUB_ALIGN_USE	48	/* a node's newest steps matched (older ones may have been cut
				 * by the rule its daemon had before it learned the step) */
#define HUB_ALIGN_WAIT_NS 30000000000ULL	/* verdicts wait this long for a node to line up */
#define HUB_CLOCK_ERR_MIN_NS 20000	/* the least error a clock offset is stated with */
#define HUB_RETAIN_NS	300000000000ULL	/* a job with no new step for this long is over */
#define HUB_HANG_NS	60000000000ULL	/* the default hang timeout, as the daemon's */
#define HUB_WINDOW	8	/* steps a verdict is judged over (as the daemon's default) */
#define HUB_DOWN_POLLS	3	/* failed polls in a row before a node's ranks are unobserved */
#define HUB_SIGS	4	/* distinct sequences of collectives a rank's text is kept of */

struct hub_step {
	uint64_t k;		/* the node's step number */
	uint64_t start_ns;	/* the node's clock */
	uint64_t dur_ns;
	uint64_t ph[PH_MAX];
	uint64_t comm_sched;	/* of ph[PH_SCHED_DELAY], inside collectives (0: not said) */
	uint64_t io_write;	/* of ph[PH_IO], in writes and flushes (0: not said) */
	uint32_t collectives;	/* in the step, as its node counted them (0: not said) */
	uint64_t sig_comm;	/* the step's first named communicator with collectives (a hash
				 * of its name; 0: none) */
	uint64_t sig;		/* and its sequence of collectives, as the node hashed it */
};

struct hub_node_stats {
	uint64_t polls, fails, bad, dups, lost, steps;
};

struct hub;

struct hub *hub__new(int window);
void hub__free(struct hub *h);

/* The node called name (its address), made on first use. Returns its index or -ENOSPC. */
int hub__node(struct hub *h, const char *name);

/*
 * Feed a node's answers (JSON text as served by a daemon). Returns 0 or -EINVAL with the
 * reason in err; a bad answer changes nothing. ranks: GET /api/v1/ranks. steps: GET
 * /api/v1/steps?since=CURSOR (*cursor is read and advanced; a daemon whose cursor went back
 * was restarted: its steps start again). diagnosis: GET /api/v1/diagnosis (the node's own
 * hang, divergent and rank_exited verdicts are the job's).
 */
int hub__feed_ranks(struct hub *h, int node, const char *text, size_t len, char *err, size_t n);
int hub__feed_steps(struct hub *h, int node, const char *text, size_t len, uint64_t *cursor,
		    bool *more, char *err, size_t n);
int hub__feed_diagnosis(struct hub *h, int node, const char *text, size_t len, char *err,
			size_t n);

/* No rank of a job has finished a step for ns, and a rank of it is stopped or a zombie (as
 * its node's /api/v1/ranks says): a hang on that rank, whichever node sees the others wait. */
void hub__set_hang_timeout(struct hub *h, uint64_t ns);

/* Price a straggler's cost (--gpu-hour-cost, --gpus-per-rank): dollars in the series and the
 * verdicts' words. */
void hub__set_price(struct hub *h, double usd_per_gpu_h, int gpus_per_rank);

/* The time now (CLOCK_MONOTONIC ns), before each round of polls: a job that no node has sent
 * a step of for HUB_RETAIN_NS is let go at the next hub__judge(). */
void hub__tick(struct hub *h, uint64_t now_ns);

/* A poll of the node failed (why: one line); after HUB_DOWN_POLLS its ranks are unobserved. */
void hub__node_failed(struct hub *h, int node, const char *why, uint64_t now_ns);
/* A poll of the node succeeded: it is up again. */
void hub__node_ok(struct hub *h, int node, uint64_t now_ns);
/* The steps request just fed was sent at sent_ns and answered by recv_ns (the hub's
 * CLOCK_MONOTONIC): with the node's now in that answer, a sample of the node's clock against
 * the hub's (error: half the round trip). Steps too alike to line up by their lengths are
 * lined up by these. */
void hub__node_timing(struct hub *h, int node, uint64_t sent_ns, uint64_t recv_ns);
/* Count a bad answer (garbage, too big) from the node. */
void hub__node_bad(struct hub *h, int node);
/* The node is no longer among the peers (its name no longer resolves to it). */
void hub__node_gone(struct hub *h, int node);

/*
 * Line the nodes of each job up and judge the steps every observed rank has. on_verdict is
 * called for each verdict that changes the job's story (and once a window while it does not).
 */
void hub__judge(struct hub *h, uint64_t now_ns,
		void (*on_verdict)(void *ctx, const char *job, const struct job_verdict *v,
				   int rank),
		void *ctx);

/* Documents, as the daemon's: JSON arrays of /api/v1/diagnosis and /api/v1/ranks (each rank
 * with its node), /api/v1/nodes (each node: up, its jobs' step shift and clock offset with
 * its error), and /metrics. Each returns a malloc'd NUL-terminated text or NULL. */
char *hub__diagnosis(struct hub *h, size_t *len);
char *hub__ranks(struct hub *h, size_t *len);
char *hub__nodes(struct hub *h, size_t *len);
/* /api/v1/jobs: each job's failures and recoveries across its nodes (hublife.h). */
char *hub__jobs(struct hub *h, size_t *len);
/* A node's GET /api/v1/jobs answer (a daemon's lifecycle of its jobs). Returns 0, or -EINVAL
 * with the reason in err. */
int hub__feed_jobs(struct hub *h, int node, const char *text, size_t len, char *err, size_t n);
char *hub__metrics(struct hub *h, size_t *len);

/* For the step lines the hub serves: visit each step fed since the last call, as a JSON line
 * with the job's step number and the rank's node. */
void hub__drain_steps(struct hub *h, void (*fn)(void *ctx, const char *job, int rank,
						 const char *json, size_t len), void *ctx);

/*
 * For a capture across nodes: the job with the most ranks (its id copied into job, "" when
 * none), and each node's clock against that job's reference node: 1 and the offset and its
 * error when lined up, 0 when it answers but is not lined up (or has no rank of the job), -1
 * when it does not answer.
 */
void hub__main_job(struct hub *h, char *job, size_t n);
int hub__node_clock(struct hub *h, const char *job, int node, int64_t *offset_ns,
		    uint64_t *err_ns);

/* Tests and the scale bench: one job's clock view of a node. Returns false until lined up. */
bool hub__offset(struct hub *h, const char *job, int node, int64_t *shift, int64_t *offset_ns,
		 uint64_t *err_ns);

#endif /* RS_HUB_H */
