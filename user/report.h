/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Output: the JSON-lines contract and the live table. Field names here are a stable API. */
#ifndef RS_REPORT_H
#define RS_REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include "rs_cupti_wire.h"
#include "decode.h"
#include "job.h"
#include "json.h"
#include "stats.h"

struct self_stats {
	uint64_t attempted[RS_FAM_MAX];
	uint64_t received[RS_FAM_MAX];
	uint64_t dropped[RS_FAM_MAX];
	uint64_t invalid;		/* records that failed to decode */
	unsigned int probes_attached;
	/* for /metrics */
	const uint64_t *attach;		/* attach results, counted by reason (NULL: none) */
	const char *const *attach_names;
	int nattach;
	bool have_run;			/* bpf_stats is on: run_ns/run_cnt are valid */
	uint64_t run_ns[RS_FAM_MAX];
	uint64_t run_cnt[RS_FAM_MAX];
	uint64_t series_overflow;	/* /metrics lines left out by the series cap */
	bool cupti;			/* the CUPTI socket is open */
	uint64_t cupti_records[5];	/* received, invalid, dropped_queue, dropped_cupti,
					 * dropped_clock */
	unsigned int cupti_conns[RSC_ST_MAX];	/* connections by library state */
	unsigned int ranks, jobs;	/* watched now */
};

/* {"type":"rank",...}: once per rank on attach, again if its rank number is learned later. */
void report__rank(struct json *j, const struct rank_state *rs, const char *const *families,
		  int nfam);

/* {"type":"collective",...}: comm is the communicator's global name, bytes 0 if unknown. */
void report__coll(struct json *j, const struct rank_state *rs, const struct rs_ev_coll *e,
		  const char *comm, uint64_t bytes);

/* {"type":"comm_init",...} */
void report__comm_init(struct json *j, const struct rank_state *rs,
		       const struct rs_ev_comm_init *e, const char *comm);

/* The other streamed kinds with --events: "offcpu", "io", "fork", "exit", "tcp". */
void report__event(struct json *j, const struct rank_state *rs, const struct rs_event *ev);

/* {"type":"stats",...}: once a second per rank. */
void report__stats(struct json *j, const struct rank_row *row, uint64_t t_ns);

/* {"type":"self",...}: once a second and once at exit ("final":true). */
void report__self(struct json *j, const struct self_stats *s, uint64_t t_ns, bool final);

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

/* One human line for a verdict (the table and diagnose). */
void report__verdict_text(FILE *f, const struct job_verdict *v, int rank, char *buf, size_t n);

/* The live table. ansi: clear the screen first (a TTY). */
void report__table(FILE *f, const struct rank_row *rows, int n, const struct self_stats *s,
		   bool ansi);

/* "1.2ms"-style duration into buf. */
const char *report__dur(double ns, char *buf, size_t n);

#endif /* RS_REPORT_H */
