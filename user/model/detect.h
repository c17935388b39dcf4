/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Straggler verdicts (seed 004's method): who is late, in which phase, and what would disprove it. */
#ifndef RS_DETECT_H
#define RS_DETECT_H

#include <stdbool.h>
#include <stdint.h>
#include "steps.h"

enum vclass {
	V_NONE,
	V_INPUT,
	V_STORAGE,
	V_COMPUTE,
	V_CPU_CONTENTION,
	V_COMMUNICATION,
	V_DIVERGENT,
	V_HANG,
	V_RANK_EXITED,
	V_REMOTE_WAIT,	/* communication-like, but ranks of the job are not observed here */
	V_BUBBLE,	/* no straggler, but a pipeline stage idles well over its schedule's bubble */
	V_CHECKPOINT,	/* a rank late in its own writes and flushes: the job waits for a save */
	V_MAX,
};

/* Skews under 2 ms, or under a quarter of the step, are scheduling noise on a busy host
 * (measured: healthy 2-rank DDP on 2 vCPUs shows 1-2.5 ms on 8-12 ms steps). */
#define DETECT_SKEW_MIN_NS	2000000
#define DETECT_SKEW_FRAC	0.25
#define DETECT_CONSISTENT	0.75	/* ... and late by half that (or the latest rank, by a
					 * quarter), in 3/4 of the window's steps */
#define DETECT_MOSTLY	0.60	/* ... or, late by twice the threshold at the median, late by
					 * half of it in 3/5 of the steps */
#define DETECT_EXPLAINED	0.50	/* a late rank's own phase explains half its lateness at least */
#define DETECT_HOLDS_FRAC	0.01	/* ... and holds its peers back by 1% of the step (its
					 * lateness over the next latest rank's, at the median): later
					 * than the rest, by less, it costs the job nothing to name */
#define DETECT_HITS_MIN	2	/* an intermittent straggler is late by a lot in this many episodes
				 * (runs of late steps, apart) at least: once is noise */
#define DETECT_HITS_MAX	64	/* steps of a window looked at for it (a window is at most JOB_ROWS) */
#define DETECT_COMM_FRAC	0.50	/* post-arrival time over half the step is communication-bound */
#define DETECT_COMM_MIN_NS	5000000	/* ... and over 5 ms: CPU contention delays completions too */
/* With this many peers at least, their own lateness measures the job's noise: a rank late by
 * DETECT_NOISE_K times what they reach in 1 of 10 steps stands out under the quarter step. */
#define DETECT_NOISE_PEERS	3
#define DETECT_NOISE_Q		0.90
#define DETECT_NOISE_K		3
/* With fewer, the latest rank's own lateness, how far it strays from its median over this many
 * steps at least, measures it */
#define DETECT_NOISE_STEPS	8
#define DETECT_PERSIST_OF	12
#define DETECT_PERSIST_MIN	6

/* One rank's view of one step. */
struct step_obs {
	bool present;
	uint64_t dur_ns;
	struct phases ph;
	uint64_t arrival_ns;	/* entry into the step's first collective; 0: none */
	uint64_t done_ns;	/* return from it; 0: unknown */
	uint64_t gpu_arrival_ns;/* start of its NCCL kernel (CUPTI); 0: none */
	uint64_t gpu_done_ns;	/* end of it */
	/* Over every collective of the step that all ranks returned from (not only the first):
	 * a backward overlapped with its buckets spreads a straggler's lateness over them. */
	bool has_late;
	int64_t late_ns;	/* sum of (own entry - the peers' median entry) */
	/* where has_alone: sum of (own work before the collective - the most any peer did)
	 * where it did the most, what its peers waited for it alone; late_ns counts every
	 * collective a peer was late at by its own noise against it, and many peers take
	 * turns at that */
	bool has_alone;
	uint64_t alone_ns;
	uint64_t wait_ns;	/* sum of (last entry - own entry), each clamped to the time inside */
	/* pipeline parallel: the rank's stage (-1: none), the stages and micro-batches a step
	 * (0: not known) and its main thread's time in sends and receives */
	int stage, stages, micro;
	uint64_t p2p_ns;
	uint64_t held_ns;	/* its time runnable and not running in its sends, receives and
				 * stage all-reduce while the other end (every member) was inside
				 * too: the time it held them (a pipeline's rank) */
	uint64_t slack_ns;	/* its time not computing just before receives that then waited
				 * for the peer: it held nobody (a pipeline's rank) */
};

struct verdict {
	enum vclass cls;
	int rank;		/* index of the late rank in the window's columns; -1: none */
	int64_t skew_ns;	/* its lateness: its arrivals minus the peers' median arrivals, summed
				 * over the step's collectives (median over steps) */
	enum phase phase;	/* the phase that explains the skew, as the step lines show it;
				 * compute, other and gpu_wait make a compute verdict */
	int32_t other_nr;	/* phase other: the syscall it was blocked in (-1 unknown) */
	int64_t phase_excess_ns;/* that phase minus the peers' median (median over steps) */
	uint64_t late_phase_ns;	/* the late rank's median time in it */
	uint64_t peer_phase_ns;	/* the peers' median time in it */
	uint64_t post_arrival_ns;/* median time inside collectives after the last arrival, over
				  * the step (comm_transfer), else at its first collective */
	uint64_t step_ns;	/* median step duration */
	int nsteps;
	/* intermittent: late by a lot (twice the threshold) in some of the nsteps only; skew
	 * and phase are the medians over those steps, hits the steps of them the phase
	 * explains (detect__hits) */
	bool intermittent;
	/* imbalance: no rank to blame (rank -1), but each step's latest one is late by the
	 * threshold in this phase, a different rank from step to step; hits: those steps */
	bool imbalance;
	int hits;
	int hit_span;		/* intermittent: steps from the first hit to the last */
	uint64_t threshold_ns;	/* the lateness that counted as late in this window */
};

/* Judge a window: obs holds nsteps rows of nranks columns (row-major). Needs 2 ranks and one
 * step present on all of them. Returns 0, or -EINVAL when there is nothing to judge. */
int detect__window(const struct step_obs *obs, int nsteps, int nranks, struct verdict *v);
/* The same, told whether every rank of the job is among the columns. With ranks unseen, a
 * rank starved of CPU inside the collectives is no verdict: the ranks seen may all be
 * waiting for one unseen, and time starved while waiting costs nothing. */
int detect__window_seen(const struct step_obs *obs, int nsteps, int nranks, bool all_seen,
			struct verdict *v);

/* The steps of obs (nsteps rows of nranks) an intermittent verdict v names (its rank, phase
 * and threshold): those where its rank is the latest, late by twice the threshold, and the
 * phase explains half of that. Sets rows to the complete rows; v's window is one that held
 * enough of them to tell, a longer view tells their share. */
int detect__hits(const struct step_obs *obs, int nsteps, int nranks, const struct verdict *v,
		 int *rows);

/* The class of a straggler whose excess is in phase ph (io: storage; a save's writes are the
 * caller's to tell). */
enum vclass detect__phase_class(enum phase ph);

/* The late column of an excess matrix (nsteps rows of ncols, ok rows only), by the rule
 * ranks are judged by: the largest median excess, at least the window's threshold (a quarter
 * of the step, or DETECT_NOISE_K times what the other columns reach in DETECT_NOISE_Q of
 * the rows, at least DETECT_SKEW_MIN_NS) and half of it in DETECT_CONSISTENT of the rows.
 * Returns it, with its median excess and the threshold; -1 when none is. */
int detect__late_column(const int64_t *ex, const bool *ok, int nsteps, int ncols,
			uint64_t step_ns, int64_t *excess, uint64_t *threshold);

/* Fill the comm_wait/comm_transfer split of one step row: arrival is entry, the last arrival
 * the largest; wait = last arrival - own arrival, clamped to the time inside. When every rank
 * of the row has an NCCL kernel from CUPTI, arrival and completion are the kernel's start and
 * end instead (host entry is only the enqueue), and the split is of the kernel's time. */
void detect__split_comm(struct step_obs *row, int nranks);
/* A job's reference for collectives that got slower (detect__comm_change): its latest steps
 * that said none, since the pattern (gen) was learned, each by its transfer and its median
 * duration. A step joins once it left the window (every window that held it said none: one
 * that overlaps a change is not the job's own), pending until then. */
#define DETECT_REF_STEPS	128
#define DETECT_REF_MIN	4	/* steps of it before it is compared with (a window's least) */
#define DETECT_REF_MAX	64	/* rows of a window detect__comm_change reads */
struct comm_step {
	uint64_t x, step, k;	/* transfer, duration, step index */
};
struct comm_ref {
	struct comm_step s[DETECT_REF_STEPS];
	int n, pos, gen;
	struct comm_step pend[DETECT_REF_MAX];
	int npend;
	uint64_t next_k;	/* steps before it were seen */
};
/*
 * A window of m rows (of nranks) ending at step k that says none (v), every rank of the job
 * in it, against the reference at pattern gen. A step's transfer: its time inside collectives
 * once all ranks came, less the time runnable and not running there (a host short of CPUs
 * slows polling collectives; that is not the link). Most of this window's steps' transfers
 * (DETECT_CONSISTENT) above the reference's tail (DETECT_NOISE_Q), their median up by
 * DETECT_NOISE_K times the spread of either and by DETECT_SKEW_MIN_NS at least on the
 * reference's (the floor of a rank's lateness: the time starved is out of it already), the
 * step by at least half of that, and the window's latest rank (v->skew_ns) late by under half
 * of it (a rank late by as much is what they wait for):
 * communication (a slower link or network), v->cls set and why in detail; true. Else false,
 * and its steps not seen before are pending. The reference's latest steps as slow as this
 * window's (each at least its least transfer) are left out of it: a change inside the first
 * windows put them there; half of DETECT_REF_MIN steps before them at least.
 */
bool detect__comm_change(struct comm_ref *ref, const struct step_obs *win, int m, int nranks,
			 int window, int gen, uint64_t k, struct verdict *v, char *detail,
			 size_t ndetail);

/* Track the late ranks of recent windows; returns whether rank is late in at least
 * DETECT_PERSIST_MIN of the last DETECT_PERSIST_OF. */
struct persist {
	int last[DETECT_PERSIST_OF];
	int n, pos;
};
bool detect__persistent(struct persist *p, int rank);

/* The lateness a straggler needs in a window whose median step is step_ns. */
uint64_t detect__threshold(uint64_t step_ns);
/* The threshold v's window judged by (detect__threshold of its step when it says none). */
uint64_t detect__threshold_of(const struct verdict *v);


const char *detect__class_name(enum vclass c);

/* Seen from part of a job (seen of world ranks), v's late rank (numbered rank) is not what
 * holds it: the ranks seen wait longer after the last of them arrives than it was late
 * (detect.c). Then v is remote_wait on no rank, why in detail ("the ranks <as>"); true. */
bool detect__held_elsewhere(struct verdict *v, int rank, int seen, int world, const char *as,
			    char *detail, size_t n);

/* A persistent verdict of a class that names one late rank by the phase it is late in (input,
 * storage, compute, CPU contention): its peers' waits are that rank's cost. A transient one
 * is as likely a shared host's burst as a straggler. */
bool detect__straggler(enum vclass c, bool persistent);

/* How serious a class is, for a report that keeps the worst verdict (the latest among
 * equals): none 0; a stuck, broken or divergent job 3; a slow one 1. */
int detect__severity(enum vclass c);

/* The bounded experiment (seed 004) that could disprove a verdict of this class. */
const char *detect__experiment(enum vclass c);

/* qsort comparators of uint64_t and int64_t, ascending. */
int detect__cmp_u64(const void *a, const void *b);
int detect__cmp_i64(const void *a, const void *b);

/* Median of n values (copied; n > 0). */
uint64_t detect__median(const uint64_t *v, int n);

/* Sort n values in place, ascending, comparing inline (a step's interval boundaries, a
 * value per rank): insertion up to 17 values, quicksort above. */
void detect__sort_u64(uint64_t *v, int n);

/* detect__median of sorted v[0..n) less one element equal to x (n >= 2, x among them):
 * every rank's peers' median from one sort. */
uint64_t detect__median_without(const uint64_t *v, int n, uint64_t x);
/* The median of v (n of them; sorts v in place); 0 when n is 0. */
int64_t detect__median_i64(int64_t *v, int n);
/* The DETECT_NOISE_Q quantile of v (n of them; sorts v in place), 0 when that is negative or n
 * is 0: how far noise alone strays. A straggler stands out by DETECT_NOISE_K times it. */
int64_t detect__tail(int64_t *v, int n);

#endif /* RS_DETECT_H */
