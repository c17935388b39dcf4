// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A job's failures and recoveries, from its steps, checkpoints and rank exits: see life.h. */
#include <stdio.h>
#include <string.h>
#include "life.h"

void life__init(struct life *l)
{
	memset(l, 0, sizeof(*l));
	l->state = LIFE_RUNNING;
}

/*
 * Is a step's work lost at a failure, the last checkpoint not holding it? A job writes its
 * checkpoint between iterations, and where a step's boundary falls depends on what marks it:
 * after an iteration's collectives (then the step that holds the checkpoint is mostly the next
 * iteration's work), or at an iteration's start (then it is mostly the saved iteration's). So
 * a step that overlaps the checkpoint is lost when more of it lies after the checkpoint than
 * before; the burst's edges are known to a drain tick (100 ms), far less than a step's work.
 */
static bool lost(const struct life *l, uint64_t end_ns, uint64_t dur_ns)
{
	uint64_t start = end_ns > dur_ns ? end_ns - dur_ns : 0;
	int64_t before, after;

	if (!l->have_ckpt || start >= l->ckpt_end_ns)
		return true;
	if (end_ns <= l->ckpt_start_ns)
		return false;
	before = (int64_t)(l->ckpt_start_ns - start);
	after = (int64_t)(end_ns - l->ckpt_end_ns);
	return after > before;
}

static void forget_steps(struct life *l)
{
	l->head = l->n = 0;
	l->over_steps = l->over_ns = 0;
}

static void keep_step(struct life *l, uint64_t end_ns, uint64_t dur_ns)
{
	struct life_step *s;

	if (l->n == LIFE_STEPS) {
		/* the oldest goes; if it came after the last checkpoint, it is still lost work
		 * at a failure */
		s = &l->steps[l->head];
		if (lost(l, s->end_ns, s->dur_ns)) {
			l->over_steps++;
			l->over_ns += s->dur_ns;
		}
		l->head = (l->head + 1) % LIFE_STEPS;
		l->n--;
	}
	s = &l->steps[(l->head + l->n) % LIFE_STEPS];
	s->end_ns = end_ns;
	s->dur_ns = dur_ns;
	l->n++;
}

/* A failure's loss goes into the totals: at once, or a hang's when it proves lasting. */
static void settle_loss(struct life *l)
{
	if (!l->lost_pending)
		return;
	l->lost_pending = false;
	l->lost_ns_total += l->lost_ns;
	l->lost_steps_total += l->lost_steps;
}

bool life__step(struct life *l, uint64_t run, uint64_t end_ns, uint64_t dur_ns)
{
	bool recovered = false;
	uint64_t back;

	if (!run)
		return false;
	if (l->state != LIFE_RUNNING) {
		if (run == l->failed_run &&
		    (l->cause.reason != LIFE_HANG || end_ns <= l->cause.at_ns))
			return false;	/* a survivor of the failed incarnation */
		recovered = true;
		l->recoveries++;
		l->in_place = run == l->failed_run;
		/* a relaunch's first step seen starts where its first iteration ended (no step
		 * boundary comes before it); a hang's ends the wait */
		back = l->in_place || dur_ns > end_ns ? end_ns : end_ns - dur_ns;
		l->recovery_ns = back > l->cause.at_ns ? back - l->cause.at_ns : 0;
		l->recovered_at_ns = back;
		l->state = LIFE_RUNNING;
		if (l->in_place) {
			l->lost_pending = false;	/* the hang cleared: nothing to redo */
		} else {
			settle_loss(l);
			l->run = 0;
		}
	}
	if (run != l->run) {
		/* a new incarnation (the first, or one that replaced the last without a failure
		 * seen): it restarts from a checkpoint, so only its own steps can be lost */
		l->run = run;
		forget_steps(l);
	}
	if (!l->start_ns)
		l->start_ns = end_ns > dur_ns ? end_ns - dur_ns : end_ns;
	keep_step(l, end_ns, dur_ns);
	return recovered;
}

void life__ckpt(struct life *l, uint64_t start_ns, uint64_t end_ns)
{
	if (end_ns < start_ns || (l->have_ckpt && end_ns <= l->ckpt_end_ns))
		return;
	l->have_ckpt = true;
	l->ckpt_start_ns = start_ns;
	l->ckpt_end_ns = end_ns;
	/* what was pushed out of the ring is older than the ring: saved now, normally */
	l->over_steps = l->over_ns = 0;
}

bool life__fail(struct life *l, uint64_t run, uint64_t at_ns, enum life_reason why, int rank,
		int code, const char *phase)
{
	const struct life_step *s;
	unsigned int i;

	if (l->state != LIFE_RUNNING || !run || run != l->run || why >= LIFE_REASONS)
		return false;
	l->state = LIFE_FAILED;
	l->failed_run = run;
	l->failures[why]++;
	l->cause.rank = rank;
	l->cause.reason = why;
	l->cause.code = code;
	l->cause.at_ns = at_ns;
	snprintf(l->cause.phase, sizeof(l->cause.phase), "%s", phase ? phase : "");
	/* the work to redo: the failed incarnation's steps the last checkpoint does not hold
	 * (lost() above). Steps that end after the failure count too: a survivor reaches the boundary of a step
	 * the dead rank finished (DDP's steps end at the next forward) before it blocks in the
	 * collective the dead rank never joins; no step ends past that */
	l->lost_steps = l->over_steps;
	l->lost_ns = l->over_ns;
	for (i = 0; i < l->n; i++) {
		s = &l->steps[(l->head + i) % LIFE_STEPS];
		if (lost(l, s->end_ns, s->dur_ns)) {
			l->lost_steps++;
			l->lost_ns += s->dur_ns;
		}
	}
	l->lost_pending = true;
	if (why != LIFE_HANG)
		settle_loss(l);
	l->ckpt_age_known = l->have_ckpt && l->ckpt_end_ns <= at_ns;
	if (l->ckpt_age_known)
		l->ckpt_age_ns = at_ns - l->ckpt_end_ns;
	else
		l->ckpt_age_ns = at_ns > l->start_ns ? at_ns - l->start_ns : 0;
	return true;
}

bool life__tick(struct life *l, uint64_t now_ns, uint64_t abandon_ns)
{
	if (l->state != LIFE_FAILED || now_ns < l->cause.at_ns ||
	    now_ns - l->cause.at_ns < abandon_ns)
		return false;
	l->state = LIFE_ABANDONED;
	l->abandoned++;
	settle_loss(l);
	return true;
}

const char *life__state_name(enum life_state s)
{
	switch (s) {
	case LIFE_RUNNING: return "running";
	case LIFE_FAILED: return "failed";
	case LIFE_ABANDONED: return "abandoned";
	}
	return "unknown";
}

const char *life__reason_name(enum life_reason r)
{
	switch (r) {
	case LIFE_SIGNAL: return "signal";
	case LIFE_EXIT_CODE: return "exit_code";
	case LIFE_HANG: return "hang";
	default: return "unknown";
	}
}
