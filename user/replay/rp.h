/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The replay's own state, shared by its files: replay.c (the model's side), load.c (reading
 * recordings and op traces) and merge.c (op traces: clocks, order, ticks). */
#ifndef RS_RP_H
#define RS_RP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "comms.h"
#include "feed.h"
#include "job.h"
#include "json.h"
#include "replay.h"

#define RP_JOBS_MAX	64
#define RP_COMMS_MAX	256
#define RP_WAIT_COMM	0x7fff	/* the clock key of an op trace's waits */
#define RP_PIDS		16384	/* recording: pids a replay follows (open addressing) */

/* An op a rank never ended, in an op trace. */
enum rp_open { RP_OPEN_NONE, RP_OPEN_COLL, RP_OPEN_RUNNING, RP_OPEN_BLOCKED, RP_OPEN_WAIT };

struct rp_col {
	int rank;
	pid_t pid;		/* 0 in an op trace */
	int domain;		/* its clock: a file of a recording, a rank of an op trace */
	int64_t off_ns;		/* its clock minus the job's reference clock */
	bool exited;
	/* op trace: the first op it never ended: a collective it entered and never returned
	 * from (a hang), a wait for asynchronous ones (RP_OPEN_WAIT: inside them too), or one
	 * outside any (RP_OPEN_RUNNING: it computes on; RP_OPEN_BLOCKED: blocked in input or
	 * I/O); RP_OPEN_NONE: none */
	uint8_t open;
	struct job_inflight open_call;	/* its enter_ns on the rank's own clock until built */
	/* op trace: its blocking collectives by entry (records' indices), and the first one
	 * not over at the time asked: inside it then, as a live probe would tell */
	uint32_t *calls;
	uint32_t ncalls, cur;
	struct job_step last;	/* its last step, for the report */
};

struct rp_answer {
	enum job_q q;
	int col;
	bool in;
	struct job_inflight call;
	char *coll, *text;
};

struct replay;

struct rp_job {
	char id[128];
	int world;
	struct rp_col *cols;
	int ncols, cap;
	struct job *model;
	uint64_t now;
	uint64_t steps_seen;
	struct job_verdict worst;
	bool have_worst;
	bool ended;		/* a recording's final tick came */
	/* a recording: the answers of the tick being read, given back in order */
	struct rp_answer *ans;
	int nans, next_ans, cap_ans;
	struct replay *rp;
};

/* An op trace's record before its rank has a column: key is the rank number. */
struct rp_rec {
	struct feed_rec f;
	int job;
	int key;
	bool sync;		/* a blocking collective: its return is a clock reference */
	bool trace;		/* from an op trace: each rank has a clock of its own */
	bool wait;		/* an op trace's wait for asynchronous collectives */
	uint8_t open;		/* an op never ended (enum rp_open) */
	int domain;		/* the file it came from */
	int16_t comm_idx;	/* COLL: its communicator's number (rp__comm), -1 none;
				 * RP_WAIT_COMM: a wait */
};

struct rp_pid {
	pid_t pid;		/* 0: empty */
	int job, col;		/* col -1: not in its job's model (yet) */
	int rank, world;
	char job_id[128];
};

struct replay {
	const struct replay_opts *o;
	struct json j;
	struct rp_job jobs[RP_JOBS_MAX];
	int njobs;
	struct comm_use comms[RP_COMMS_MAX];
	int ncomms, last_comm;
	bool exact;		/* a recording with model lines: replayed as it ran */
	uint64_t answers_off;
	/* a recording */
	struct rp_pid *pids;
	/* op traces (and recordings without model lines) */
	struct rp_rec *rec;
	size_t nrec, caprec;
	uint64_t last_ns;	/* the latest time seen */
};

/* replay.c */
int rp__build(struct replay *rp, struct rp_job *j);
void rp__advance(struct rp_job *j, uint64_t t, bool final);
const struct rp_answer *rp__answer(struct rp_job *j, enum job_q q, int col);
/* Is column col of an op trace inside one of its blocking collectives at j->now? Then *in
 * says which (times only go forward). */
bool rp__inside(struct rp_job *j, int col, struct job_inflight *in);
/* The communicator called name: its hash (the model's key) in *hash; returns its number in
 * rp->comms, or -1 past RP_COMMS_MAX names. */
int rp__comm(struct replay *rp, const char *name, size_t len, uint64_t *hash);
struct rp_job *rp__job(struct replay *rp, const char *id);

/* load.c: read every file; a recording with model lines runs as it is read (rp->exact). */
int rp__load(struct replay *rp, char *const *files, int n);
void rp__free_records(struct replay *rp);
/* Room for `more` records beyond those kept (the array may move). */
int rp__reserve(struct replay *rp, size_t more);
/* bytes for millions of records or keys, on huge pages where the kernel lends them (or a
 * replay spends a sixth of its time in page faults); free() it. NULL: no memory. */
void *rp__big(size_t bytes);

/* merge.c: columns, clocks and order for what rp__load kept, then the run. */
int rp__run_merged(struct replay *rp);

#endif /* RS_RP_H */
