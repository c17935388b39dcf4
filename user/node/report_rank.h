/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A node's JSON lines of its ranks (attach, events, stats) and of itself, and the live table.
 * Field names here are a stable API. */
#ifndef RS_REPORT_RANK_H
#define RS_REPORT_RANK_H

#include <stdbool.h>
#include <stdio.h>
#include "feed.h"
#include "rs_cupti_wire.h"
#include "report.h"
#include "stats.h"

struct self_stats {
	uint64_t attempted[RS_FAM_MAX];
	uint64_t received[RS_FAM_MAX];
	uint64_t dropped[RS_FAM_MAX];
	uint64_t map_full[RS_FAM_MAX];	/* hash map updates refused for want of room */
	struct lru_count lru[RS_LRU_MAX];	/* LRU maps: entries, capacity, evicted */
	uint64_t lru_ns;		/* when they were last counted */
	uint64_t invalid;		/* records that failed to decode */
	unsigned int probes_attached;
	uint64_t coll_trap_ns;		/* measured trap cost of a probed call (see probes.h) */
	/* for /metrics */
	const uint64_t *attach;		/* attach results, counted by reason (NULL: none) */
	const char *const *attach_names;
	int nattach;
	const uint64_t *lib_refused;	/* [LR_MAX]: paths under a process' root not used */
	const uint64_t *lib_errors;	/* [LE_MAX]: libraries not probed, by why */
	bool have_run;			/* bpf_stats is on: run_ns/run_cnt are valid */
	uint64_t run_ns[RS_FAM_MAX];
	uint64_t run_cnt[RS_FAM_MAX];
	uint64_t series_overflow;	/* /metrics lines left out by the series cap */
	bool cupti;			/* the CUPTI socket is open */
	uint64_t cupti_records[5];	/* received, invalid, dropped_queue, dropped_cupti,
					 * dropped_clock */
	unsigned int cupti_conns[RSC_ST_MAX];	/* connections by library state */
	unsigned int ranks, jobs;	/* watched now */
	uint64_t drain_period_ns;	/* the ring buffer's drain period now (shorter in a storm) */
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

/* With --events, what a replay (diagnose --replay) needs beyond the events themselves:
 * {"type":"model",...}: job's model (re)built at t_ns with these columns (rank, pid);
 * {"type":"tick",...}: time passed for job's model (final: the session ended);
 * {"type":"rank_exit",...} and {"type":"gpu",...}: the feed records of those kinds. The
 * README ("Recordings and replay") lists their fields. */
void report__model(struct json *j, const char *job, uint64_t t_ns, const int *rank,
		   const pid_t *pid, int n, int world_size);
void report__tick(struct json *j, const char *job, uint64_t t_ns, bool final);
void report__feed(struct json *j, int rank, pid_t pid, const struct feed_rec *r);
/* {"type":"answer",...}: what the model asked about a rank during a tick, and the answer. */
void report__answer(struct json *j, const char *job, const struct job_answer *a);

/* {"type":"stats",...}: once a second per rank. */
void report__stats(struct json *j, const struct rank_row *row, uint64_t t_ns);

/* {"type":"self",...}: once a second and once at exit ("final":true). */
void report__self(struct json *j, const struct self_stats *s, uint64_t t_ns, bool final);

/* The live table. ansi: clear the screen first (a TTY). */
void report__table(FILE *f, const struct rank_row *rows, int n, const struct self_stats *s,
		   bool ansi);

#endif /* RS_REPORT_RANK_H */
