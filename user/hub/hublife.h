/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A job's failures and recoveries across nodes: what each node daemon's /api/v1/jobs says of
 * the job (user/node/joblife.h), joined into one life per job, with no shared clock but the
 * nodes' unix time (NTP's millisecond, far below the seconds between a rank's death and its
 * peers' end).
 *
 *   - state: failed while any node says failed (its ranks have not stepped again), abandoned
 *     when every node does, else running;
 *   - the cause: the earliest failure of any node (a rank's death comes before its peers'
 *     errors and the launcher's cleanup on the other nodes); the failure counts are those of
 *     the cause's node, unless another counts more;
 *   - recoveries: the fewest of any node (the job is back when every node's ranks step);
 *     the recovery time runs from the cause to the last node's first step after it (each
 *     joined recovery also goes into the hub's own histogram of them);
 *   - the checkpoint age and the work lost: from the node that saw the freshest checkpoint
 *     (the writer's), else from the cause's node; the age is at the cause, not at that
 *     node's own failure (its ranks may have failed seconds later);
 *   - train_run_id: the newest of the nodes' values (a relaunch changes every node's).
 * Every string in the answers is hostile: bounded and copied as text.
 */
#ifndef RS_HUBLIFE_H
#define RS_HUBLIFE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "json.h"
#include "prom.h"

#define HUBLIFE_JOBS	256
#define HUBLIFE_NODES	1024	/* nodes a job can be on */
#define HUBLIFE_EVENTS	32

struct hl_event {
	double t;
	char event[12];
	char detail[192];
};

/* One node's view of one job. */
struct hl_view {
	int node;
	uint64_t round;			/* the feed that said it */
	char state[12];
	double run_id;			/* 0: none */
	uint64_t failures[3];		/* signal, exit_code, hang */
	uint64_t recoveries, lost_steps_total;
	double lost_s_total;
	bool fail;
	char reason[12], phase[16], detail[192];
	int rank;
	int code;			/* the signal or the exit status; -1: none */
	double at, ckpt_age, lost_s;
	bool ckpt_seen;
	uint64_t lost_steps;
	bool rec, in_place;
	double rec_s, rec_at;
	struct hl_event ev[HUBLIFE_EVENTS];
	int nev;
};

#define HUBLIFE_REC_BUCKETS	11

struct hl_job {
	char id[128];
	struct hl_view *v;
	int nv;
	/* the joined recoveries, for rankscope_job_recovery_seconds */
	uint64_t rec_seen;
	uint64_t rec_counts[HUBLIFE_REC_BUCKETS];
	double rec_sum;
	uint64_t rec_n;
};

struct hublife {
	struct hl_job *jobs[HUBLIFE_JOBS];
	int nj;
	uint64_t round;
};

void hublife__free(struct hublife *hl);

/* A node's /api/v1/jobs answer: its views replace what it said before (a job it no longer
 * lists is no longer on it). Returns 0, or -EINVAL with the reason in err (nothing changes). */
int hublife__feed(struct hublife *hl, int node, const char *text, size_t len, char *err,
		  size_t n);

/* Every node answered (or not) for this round: recoveries that every node of a job has now
 * seen go into its histogram, once each. */
void hublife__round(struct hublife *hl);

/* The node is gone from the hub: its views go. */
void hublife__node_gone(struct hublife *hl, int node);

/* The daemon's series, one per job, joined across its nodes. */
void hublife__metrics(const struct hublife *hl, struct prom *p);

/* /api/v1/jobs: one object a job, as a daemon's, plus "nodes": [{"node","state"}]. name(node)
 * gives a node's name. */
void hublife__json(const struct hublife *hl, struct json *j,
		   const char *(*name)(int node, void *ctx), void *ctx);

#endif /* RS_HUBLIFE_H */
