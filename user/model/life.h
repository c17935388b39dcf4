/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A job's life seen from outside: it runs, fails (a rank dies by a signal or a non-zero exit,
 * or the job stops stepping past the hang timeout), comes back (the same job identity completes
 * a step again, in a new incarnation, or, after a hang, the same incarnation steps again), or
 * is abandoned (no return within the abandon time).
 *
 * Fed by the daemon with what it already sees: completed steps, checkpoint bursts, rank exits
 * and hangs. An incarnation is a key the caller derives from the ranks themselves (the start
 * time of the incarnation's earliest rank, in unix seconds, or the launcher's restart count):
 * it is the value of train_run_id, so it changes on every restart and survives a restart of
 * the daemon. Steps of the failed incarnation (survivors finishing their last step) neither
 * recover the job nor count as new work.
 *
 * Per failure it works out what the reference observability document asks for:
 *   - the time from the failure to the first step of the next incarnation (recovery): to the
 *     start of the first step seen, which is where the relaunched job's first iteration ended
 *     (a step needs a boundary before it, and the first iteration has none: no collective
 *     before it, or its forward came before the probes of a library loaded late); after a
 *     hang that clears, to the end of the first step past it;
 *   - the age of the last checkpoint at the failure;
 *   - the steps completed that the last checkpoint does not hold, lost at the failure (their
 *     count and their summed duration: the work to redo). The job writes a checkpoint between
 *     iterations; a step that overlaps it is lost when more of it lies after it than before
 *     (a step shorter than the checkpoint detector's 100 ms tick may land on the wrong side). A hang's are lost only once the job is
 *     restarted or abandoned: a hang that clears (the same incarnation steps again) lost none.
 * No allocation; all times are CLOCK_MONOTONIC ns.
 */
#ifndef RS_LIFE_H
#define RS_LIFE_H

#include <stdbool.h>
#include <stdint.h>

enum life_state {
	LIFE_RUNNING,
	LIFE_FAILED,		/* waiting for the job to come back */
	LIFE_ABANDONED,		/* failed, and not back within the abandon time */
};

enum life_reason {
	LIFE_SIGNAL,		/* a rank killed by a signal */
	LIFE_EXIT_CODE,		/* a rank exited non-zero */
	LIFE_HANG,		/* no step past the hang timeout */
	LIFE_REASONS,
};

#define LIFE_STEPS	4096	/* recent steps kept to count the lost ones */
#define LIFE_PHASE_MAX	16

struct life_cause {
	int rank;
	enum life_reason reason;
	int code;			/* the signal or the exit status */
	char phase[LIFE_PHASE_MAX];	/* the phase the rank was in, "" if unknown */
	uint64_t at_ns;			/* the failure: the exit, or the last progress of a hang */
};

struct life {
	enum life_state state;
	uint64_t run;			/* the current incarnation; 0 before the first step */
	uint64_t failed_run;		/* the incarnation that failed last */
	uint64_t start_ns;		/* the first step seen of the job */
	struct life_cause cause;	/* of the last failure */
	uint64_t failures[LIFE_REASONS];
	uint64_t recoveries, abandoned;
	/* the last failure and recovery */
	uint64_t recovery_ns;		/* failure to the first step of the next incarnation */
	uint64_t recovered_at_ns;
	uint64_t ckpt_age_ns;		/* at the failure: since the last checkpoint's end */
	bool ckpt_age_known;		/* false: no checkpoint seen (the age is since start_ns) */
	uint64_t lost_steps;		/* completed, not held by the last checkpoint */
	uint64_t lost_ns;		/* their summed duration */
	uint64_t lost_ns_total;		/* over every failure */
	uint64_t lost_steps_total;
	bool lost_pending;		/* a hang's loss, not in the totals yet */
	bool in_place;			/* the last recovery: the hung incarnation went on */
	/* checkpoints */
	bool have_ckpt;
	uint64_t ckpt_start_ns, ckpt_end_ns;
	/* steps of the current incarnation, the newest LIFE_STEPS: end and duration */
	struct life_step {
		uint64_t end_ns, dur_ns;
	} steps[LIFE_STEPS];
	unsigned int head, n;
	uint64_t over_steps, over_ns;	/* pushed out of the ring, after the last checkpoint */
};

void life__init(struct life *l);

/* A step of incarnation run ended at end_ns after dur_ns. Returns true when the job recovered
 * with it (recovery_ns is set): the first step of a new incarnation after a failure, or a step
 * of a hung incarnation that ended after the hang's last progress (in_place). */
bool life__step(struct life *l, uint64_t run, uint64_t end_ns, uint64_t dur_ns);

/* A checkpoint was written over [start_ns, end_ns]. */
void life__ckpt(struct life *l, uint64_t start_ns, uint64_t end_ns);

/* Incarnation run failed at at_ns: rank died (LIFE_SIGNAL with the signal, LIFE_EXIT_CODE with
 * the status) or the job hung (LIFE_HANG, at_ns its last progress). Returns true when this is
 * a new failure (counted, lost work computed from the steps given so far: call it once the
 * survivors' last steps are in); false when the job had already failed, or run is not the
 * current incarnation (a straggler of an older one). */
bool life__fail(struct life *l, uint64_t run, uint64_t at_ns, enum life_reason why, int rank,
		int code, const char *phase);

/* Time passes: a failed job not back within abandon_ns is abandoned (returns true, once). */
bool life__tick(struct life *l, uint64_t now_ns, uint64_t abandon_ns);

const char *life__state_name(enum life_state s);
const char *life__reason_name(enum life_reason r);

#endif /* RS_LIFE_H */
