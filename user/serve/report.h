/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Step, rule and verdict lines, the daemon's and the hub's: the JSON-lines contract (field
 * names are a stable API) and their text for people. Model types only. */
#ifndef RS_REPORT_H
#define RS_REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include "comms.h"
#include "decode.h"
#include "job.h"
#include "json.h"

/* A text bar of width characters for a step's phases, one letter per phase: c compute,
 * s sched_delay, m comm, g gpu_wait, i io, n input_wait, o other. Every phase with time gets
 * at least one letter when it fits; buf holds width + 1. Returns buf. */
char *report__phase_bar(const struct phases *ph, uint64_t dur, char *buf, int width);

/* Under the table on a TTY: each rank's last step as a phase bar, then a progress line. */
void report__steps_text(FILE *f, const int *rank, const struct job_step *const *last, int n,
			uint64_t steps, const char *rule, int period, double confidence,
			double attached_s);

/* {"type":"step",...}: one per rank per step. */
void report__step(struct json *j, const char *job, int rank, pid_t pid, const struct job_step *st,
		  const char *rule, double confidence, const struct comm_use *comms, int ncomms);

/* {"type":"verdict",...} */
/* How steps are found: {"type":"rule",...}, once learned and again when the pattern changed. */
void report__rule(struct json *j, const char *job, const char *rule, int period,
		  double confidence, bool changed, const char *note);

void report__verdict(struct json *j, const struct job_verdict *v, const char *job, int rank,
		     pid_t pid);

/* {"type":"cost",...}: one per job per step, what its straggler (if any) cost (cost.h). */
void report__cost(struct json *j, const char *job, uint64_t step, const struct cost_step *cs,
		  int rank);

/* {"type":"cost_total",...}: what stragglers cost the job over the whole session, by culprit
 * rank and phase (dollars with a price). */
void report__cost_total(struct json *j, const char *job, const struct cost *c,
			double usd_per_gpu_h, int gpus_per_rank);

/* One human line for a verdict (the table and diagnose). */
void report__verdict_text(FILE *f, const struct job_verdict *v, int rank, char *buf, size_t n);

/* What diagnose's report says, from a live session or a replay. */
struct report_diag {
	int ncols, world;			/* world -1: not known */
	uint64_t steps_seen;
	const char *rule;			/* "": no step boundary found */
	int period;
	double conf;
	const int *rank;			/* per column */
	const struct job_step *const *last;	/* per column; dur_ns 0: none yet */
	uint64_t attempted, dropped;		/* records lost are said before the verdict */
	int window;
	const struct job_verdict *worst;	/* NULL: none yet */
	int worst_rank;
	const struct cost *cost;		/* NULL: none */
	double usd;				/* --gpu-hour-cost, 0: none */
	int gpus;
};

/* diagnose's human report: the rule, each rank's last step, the verdict and the cost. */
void report__diagnose(FILE *f, const struct report_diag *d);

/* "1.2ms"-style duration into buf. */
const char *report__dur(double ns, char *buf, size_t n);

#endif /* RS_REPORT_H */
