/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What a straggler costs, live (seed 000 §3: one slow rank holds every other at each
 * collective). Per step, from the ranks' comm wait once the step's row is joined
 * (detect__split_comm):
 *   - the culprit: the rank that waited least (the last to arrive);
 *   - the rank-time its peers spent waiting for it: each peer's wait beyond the culprit's own
 *     (on a node its own is about 0; on the hub, which has no clock across nodes, the wait is
 *     the time inside collectives and the culprit's own is the transfer), summed;
 *   - the what-if step: the step (median over the ranks) less the least a peer waited for it:
 *     the peers' work before they arrive, then the collective's time after the last arrival,
 *     as the step would be had the culprit arrived with them (the collectives would still wait
 *     for the last of its peers, so not the median's arrival);
 *   - the phase the culprit spent its lateness in: its largest excess over the peers' median.
 * A step whose peers waited less than max(COST_NOISE_MIN_NS, COST_NOISE_FRAC of the step) for
 * it has no culprit: scheduling noise, not a straggler. Nor do pipeline steps, whose stages
 * wait for each other by schedule (the bubble). A culprit's wait is a straggler's, and counts,
 * only once the job's persistent straggler verdict names that rank (cost__charge): then its
 * steps among the last COST_RECENT count too. Ranks late by turns, or one late by a little,
 * are a shared host's noise: a healthy job's waits are not charged to anyone.
 * Per job it keeps totals by (culprit rank, phase), the last hour by minute and the last
 * COST_WINDOW steps. No allocation past cost__step's scratch; times are CLOCK_MONOTONIC ns.
 */
#ifndef RS_COST_H
#define RS_COST_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "rankscope.h"
#include "detect.h"

#define COST_NOISE_MIN_NS 2000000ULL
#define COST_NOISE_FRAC	0.05
#define COST_CULPRITS	32	/* (rank, phase) totals a job keeps; the last slot takes the rest */
#define COST_WINDOW	64	/* steps of the slowdown ratio and the words */
#define COST_RECENT	COST_WINDOW	/* a verdict charges its rank's steps among these */
#define COST_MINUTES	60

struct cost_step {
	int culprit;		/* column of the row; -1: no straggler in this step */
	enum phase phase;	/* where the culprit's lateness went */
	uint64_t wait_ns;	/* rank-ns its peers waited for it */
	uint64_t real_ns;	/* the step: median over the ranks present */
	uint64_t whatif_ns;	/* the step had the culprit arrived with its peers */
	uint64_t rank_ns;	/* rank-time in the step: the ranks' steps summed */
};

/* The step's cost from a joined row of n columns (after detect__split_comm). */
void cost__step(const struct step_obs *row, int n, struct cost_step *out);

struct cost_culprit {
	int rank;		/* -1: the overflow slot ("other") */
	enum phase phase;
	uint64_t wait_ns;
	uint64_t steps;
};

struct cost {
	struct cost_culprit c[COST_CULPRITS];
	int nc;
	uint64_t steps, rank_ns, wait_ns;	/* since the start */
	struct rs_hist whatif;			/* what-if steps, log2 ns: a step whose culprit
						 * was charged at the step before, else its real
						 * step */
	int charged;				/* the rank cost__charge last named */
	uint64_t charged_nw;			/* ... when nw was this less 1 (0: never) */
	struct cost_entry {
		uint64_t real_ns, whatif_ns, wait_ns;
		int rank;			/* the step's culprit rank, -1: none */
		enum phase phase;
		bool counted;			/* as a straggler's */
	} w[COST_WINDOW];
	uint64_t nw;
	struct {
		uint64_t minute;		/* CLOCK_MONOTONIC minutes + 1; 0: unused */
		uint64_t wait_ns, rank_ns;
	} m[COST_MINUTES];
};

/* Account one step; rank is the culprit's rank number (ignored without a culprit). Its wait
 * counts once cost__charge names its rank. */
void cost__add(struct cost *c, const struct cost_step *s, int rank, uint64_t now_ns);

/* The job's straggler verdict names rank: charge its uncounted steps among the last
 * COST_RECENT (call after each step's judgement while the verdict holds). */
void cost__charge(struct cost *c, int rank, uint64_t now_ns);

/* What the words say, over the last COST_WINDOW steps and the last hour. */
struct cost_sum {
	int rank;		/* the culprit of most of the window's steps with one; -1 (or
				 * late_steps 0, a zeroed sum): none */
	enum phase phase;	/* its most frequent phase */
	int steps, late_steps;	/* steps in the window; of which with that culprit */
	double slowdown;	/* real / what-if over the window (1: no cost) */
	uint64_t real_ns, whatif_ns;	/* median real and what-if step over the window */
	double hour_rank_s;	/* rank-seconds waited for any culprit in the last hour */
	double hour_frac;	/* of the rank-time in steps in the last hour */
	double usd_per_gpu_h;	/* the price given (--gpu-hour-cost); 0: none */
	int gpus_per_rank;
};

void cost__sum(const struct cost *c, uint64_t now_ns, double usd_per_gpu_h, int gpus_per_rank,
	       struct cost_sum *out);

/* "rank 3 (input_wait) slows every step by 23%; 14.2 rank-hours lost in the last hour (~$41 at
 * $2.90/GPU-h); fixing it would bring steps from 410ms to 333ms", or "" without a culprit. */
void cost__text(const struct cost_sum *s, char *buf, size_t n);

/* Dollars of rank-ns at the price (0 without one). */
double cost__dollars(uint64_t rank_ns, double usd_per_gpu_h, int gpus_per_rank);

struct prom;

/* The series of n jobs' costs (ids[i], c[i]; a NULL cost is left out), each family once:
 * rankscope_straggler_wait_seconds_total{job_id,culprit_rank,phase},
 * rankscope_step_rank_seconds_total{job_id}, rankscope_straggler_slowdown_ratio{job_id},
 * rankscope_whatif_step_seconds{job_id} (histogram) and, with a price,
 * rankscope_straggler_cost_dollars_total{job_id,culprit_rank}. */
void cost__series(struct prom *p, const char *const *ids, const struct cost *const *c, int n,
		  double usd_per_gpu_h, int gpus_per_rank);

#endif /* RS_COST_H */
