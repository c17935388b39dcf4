/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The daemon's jobs across their restarts: one life (model/life.h) per job id, kept apart
 * from the session's jobs, which are made anew when a job's ranks all exit and the same id
 * comes back.
 *
 * A failure is not judged when it is seen: the job model builds steps once they settle
 * (JOB_SETTLE_NS after their end), so a rank's death is held back that long (or until the
 * job's last steps are flushed) before the steps it lost are counted. Of the failures seen
 * meanwhile, the earliest is the cause: the launcher's cleanup kills the others after it.
 *
 * The incarnation (train_run_id) is the start of the newest rank of the job's membership when
 * its first step ends, unix seconds: it changes when the ranks are relaunched, and is the
 * same for a daemon that restarts and finds the same ranks.
 */
#ifndef RS_JOBLIFE_H
#define RS_JOBLIFE_H

#include <stdbool.h>
#include <stdint.h>
#include "json.h"
#include "life.h"
#include "prom.h"

#define JOBLIFE_MAX		64
#define JOBLIFE_EVENTS		32	/* the timeline each job keeps, newest last */
#define JOBLIFE_DETAIL		192
#define JOBLIFE_REC_BUCKETS	11	/* rankscope_job_recovery_seconds */

enum joblife_ev {
	JL_STARTED,	/* an incarnation's first step */
	JL_FAILED,
	JL_RECOVERED,
	JL_ABANDONED,
};

struct joblife_event {
	enum joblife_ev kind;
	uint64_t t_ns;		/* CLOCK_MONOTONIC */
	double t_unix;
	char detail[JOBLIFE_DETAIL];
};

struct joblife_job {
	bool used;
	char id[128];
	struct life *l;
	bool live;		/* the session has a job of this id */
	uint64_t idle_ns;	/* no job of this id since (0: there is one) */
	/* the membership: a new generation on every (re)start of the ranks */
	uint64_t gen;
	double run_unix;	/* its incarnation (0: no step of it yet) */
	/* a failure waiting for the job's steps to settle */
	bool pend;
	uint64_t pend_run, pend_due_ns;
	struct life_cause pcause;
	/* recoveries, for the histogram */
	uint64_t rec_counts[JOBLIFE_REC_BUCKETS];
	double rec_sum;
	uint64_t rec_n;
	struct joblife_event ev[JOBLIFE_EVENTS];
	unsigned int nev;	/* events ever; the newest JOBLIFE_EVENTS are kept */
};

struct joblife {
	struct joblife_job j[JOBLIFE_MAX];
	uint64_t abandon_ns;	/* a failed job not back within this is abandoned */
	uint64_t retain_ns;	/* an ended or abandoned job's series stay this long */
	uint64_t settle_ns;	/* a failure waits this long for the steps before it */
};

void joblife__init(struct joblife *jl, uint64_t abandon_ns, uint64_t retain_ns,
		   uint64_t settle_ns);
void joblife__free(struct joblife *jl);

/* The entry of job id; create: make one if there is none (NULL when the table is full or out
 * of memory: that job's life is not followed, nothing else is lost). */
struct joblife_job *joblife__get(struct joblife *jl, const char *id, bool create);

/* The session made (or remade) the job's membership: its next step starts an incarnation
 * whose key is worked out then (joblife__needs_run). */
void joblife__generation(struct joblife_job *e);

/* Whether the caller must say which incarnation the next step belongs to. */
bool joblife__needs_run(const struct joblife_job *e);

/* A step of the job ended at end_ns after dur_ns; run_unix: its incarnation, used only when
 * joblife__needs_run() said so. */
void joblife__step(struct joblife_job *e, double run_unix, uint64_t end_ns, uint64_t dur_ns);

/* A checkpoint over [start_ns, end_ns]. */
void joblife__ckpt(struct joblife_job *e, uint64_t start_ns, uint64_t end_ns);

/* A failure seen at now_ns (the cause's at_ns may be earlier: a hang's last progress). */
void joblife__fail(struct joblife *jl, struct joblife_job *e, const struct life_cause *cause,
		   uint64_t now_ns);

/* The job's steps are all built (its ranks are gone and the model flushed): a failure held
 * back for them is judged now. */
void joblife__flush(struct joblife_job *e);

/* Whether the session has a job of this id now. */
void joblife__set_live(struct joblife_job *e, bool live, uint64_t now_ns);

/* Time passes: held-back failures whose steps settled, abandons, and entries to forget. */
void joblife__tick(struct joblife *jl, uint64_t now_ns);

/* The series: train_run_id, job_recovery_seconds, rankscope_job_recovery_seconds,
 * job_checkpoint_age_at_failure_seconds, rankscope_job_failures_total{reason},
 * rankscope_job_lost_step_seconds_total, rankscope_job_lost_steps_total,
 * rankscope_job_recoveries_total, rankscope_job_lifecycle_state{state}. */
void joblife__metrics(const struct joblife *jl, struct prom *p);

/* /api/v1/jobs: one object a job (its state, last failure and recovery, timeline). */
void joblife__json(const struct joblife *jl, struct json *j, uint64_t now_ns);

/* The timeline's event names. */
const char *joblife__event_name(enum joblife_ev k);

#endif /* RS_JOBLIFE_H */
