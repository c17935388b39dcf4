// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* user/model/life.c: failures, recoveries, checkpoint age and lost work, on made-up timelines
 * whose truth is known: steps of 100 ms, checkpoints every K steps, a kill at a chosen step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "life.h"

#define MS	1000000ULL
#define SEC	1000000000ULL
#define RUN1	1764600000ULL	/* incarnation keys: the start of their earliest rank, unix s */
#define RUN2	1764600090ULL

static struct life l;

/* n steps of dur from t (the end of the last one returned), a checkpoint after every k-th
 * (0: none), taking ck ns */
static uint64_t run_steps(uint64_t run, uint64_t t, int n, uint64_t dur, int k, uint64_t ck)
{
	int i;

	for (i = 1; i <= n; i++) {
		t += dur;
		assert_false(life__step(&l, run, t, dur));
		if (k && i % k == 0) {
			life__ckpt(&l, t, t + ck);
			t += ck;
		}
	}
	return t;
}

static void kill_mid_interval__lost_steps_exact_age_from_ckpt_end(void **state)
{
	uint64_t t0 = 50 * SEC, t, ckpt_end;

	life__init(&l);
	/* 23 steps, a checkpoint (300 ms) after steps 10 and 20, then killed 40 ms into step 24 */
	t = run_steps(RUN1, t0, 20, 100 * MS, 10, 300 * MS);
	ckpt_end = t;
	t = run_steps(RUN1, t, 3, 100 * MS, 0, 0);
	assert_true(life__fail(&l, RUN1, t + 40 * MS, LIFE_SIGNAL, 3, 9, "compute"));
	assert_int_equal(l.state, LIFE_FAILED);
	assert_int_equal(l.lost_steps, 3);
	assert_int_equal(l.lost_ns, 300 * MS);
	assert_true(l.ckpt_age_known);
	assert_int_equal(l.ckpt_age_ns, t + 40 * MS - ckpt_end);
	assert_int_equal(l.failures[LIFE_SIGNAL], 1);
	assert_int_equal(l.cause.rank, 3);
	assert_int_equal(l.cause.code, 9);
	assert_string_equal(l.cause.phase, "compute");
	/* the other ranks go down too: one failure */
	assert_false(life__fail(&l, RUN1, t + 60 * MS, LIFE_EXIT_CODE, 0, 1, "comm"));
	assert_int_equal(l.failures[LIFE_EXIT_CODE], 0);
	assert_int_equal(l.cause.rank, 3);
}

static void relaunch__recovery_from_failure_to_first_new_step(void **state)
{
	uint64_t t, fail;

	life__init(&l);
	t = run_steps(RUN1, 10 * SEC, 15, 100 * MS, 5, 200 * MS);
	fail = t + 10 * MS;
	assert_true(life__fail(&l, RUN1, fail, LIFE_SIGNAL, 1, 9, ""));
	/* a survivor of the killed incarnation finishes its step: no recovery, no new work */
	assert_false(life__step(&l, RUN1, fail + 50 * MS, 100 * MS));
	assert_int_equal(l.state, LIFE_FAILED);
	/* relaunched; its first step seen ends 7.25 s after the kill, 400 ms long: the
	 * relaunch's first iteration ended as it began, 6.85 s after the kill */
	assert_true(life__step(&l, RUN2, fail + 7250 * MS, 400 * MS));
	assert_int_equal(l.state, LIFE_RUNNING);
	assert_int_equal(l.recoveries, 1);
	assert_int_equal(l.recovery_ns, 6850 * MS);
	assert_int_equal(l.run, RUN2);
	assert_false(life__step(&l, RUN2, fail + 7350 * MS, 100 * MS));
	assert_int_equal(l.recoveries, 1);
	/* the new incarnation restarts from the old checkpoint: its own steps are what a
	 * second failure loses */
	assert_true(life__fail(&l, RUN2, fail + 7400 * MS, LIFE_EXIT_CODE, 0, 1, "io"));
	assert_int_equal(l.lost_steps, 2);
	assert_int_equal(l.lost_ns, 500 * MS);
	assert_int_equal(l.lost_ns_total, 500 * MS);
}

static void no_checkpoint__everything_lost_age_since_start(void **state)
{
	uint64_t t;

	life__init(&l);
	t = run_steps(RUN1, 2 * SEC, 30, 100 * MS, 0, 0);
	assert_true(life__fail(&l, RUN1, t, LIFE_HANG, -1, 0, "comm"));
	assert_int_equal(l.lost_steps, 30);
	assert_int_equal(l.lost_ns, 3 * SEC);
	assert_false(l.ckpt_age_known);
	assert_int_equal(l.ckpt_age_ns, 3 * SEC);
	assert_int_equal(l.failures[LIFE_HANG], 1);
}

static void never_back__abandoned_once_and_still_recoverable(void **state)
{
	uint64_t t;

	life__init(&l);
	t = run_steps(RUN1, SEC, 5, 100 * MS, 0, 0);
	assert_true(life__fail(&l, RUN1, t, LIFE_SIGNAL, 0, 9, ""));
	assert_false(life__tick(&l, t + 59 * SEC, 60 * SEC));
	assert_true(life__tick(&l, t + 60 * SEC, 60 * SEC));
	assert_false(life__tick(&l, t + 90 * SEC, 60 * SEC));
	assert_int_equal(l.state, LIFE_ABANDONED);
	assert_int_equal(l.abandoned, 1);
	/* it came back after all */
	assert_true(life__step(&l, RUN2, t + 120 * SEC, 100 * MS));
	assert_int_equal(l.state, LIFE_RUNNING);
	assert_int_equal(l.recovery_ns, 120 * SEC - 100 * MS);
}

static void stale_or_bad_input__ignored(void **state)
{
	uint64_t t;

	life__init(&l);
	assert_false(life__fail(&l, RUN1, SEC, LIFE_SIGNAL, 0, 9, ""));	/* no step yet */
	assert_false(life__step(&l, 0, SEC, MS));			/* no incarnation */
	t = run_steps(RUN1, SEC, 5, 100 * MS, 2, 0);	/* checkpoints after 2 and 4 */
	assert_false(life__fail(&l, RUN2, t, LIFE_SIGNAL, 0, 9, ""));	/* not the current one */
	assert_false(life__fail(&l, RUN1, t, LIFE_REASONS, 0, 9, ""));
	/* an older or reversed checkpoint changes nothing */
	life__ckpt(&l, 0, 5);
	life__ckpt(&l, 10, 5);
	assert_true(life__fail(&l, RUN1, t, LIFE_SIGNAL, 0, 9, NULL));
	assert_int_equal(l.lost_steps, 1);
	assert_int_equal(l.ckpt_age_ns, 100 * MS);
	assert_string_equal(l.cause.phase, "");
}

static void long_run__ring_overflow_still_counts_lost_steps(void **state)
{
	uint64_t t;

	life__init(&l);
	t = run_steps(RUN1, SEC, 10, 10 * MS, 10, 0);		/* a checkpoint, then ... */
	t = run_steps(RUN1, t, LIFE_STEPS + 500, 10 * MS, 0, 0);	/* more than the ring */
	assert_true(life__fail(&l, RUN1, t, LIFE_SIGNAL, 0, 9, ""));
	assert_int_equal(l.lost_steps, LIFE_STEPS + 500);
	assert_int_equal(l.lost_ns, (LIFE_STEPS + 500) * 10 * MS);
}

/* A hang that clears: the same incarnation steps again. A recovery in place, no restart, and
 * no work lost; a hang that ends in a relaunch loses its steps since the checkpoint. */
static void hang_clears__recovered_in_place_nothing_lost(void **state)
{
	uint64_t t, since;

	life__init(&l);
	t = run_steps(RUN1, SEC, 12, 100 * MS, 10, 0);
	since = t;
	assert_true(life__fail(&l, RUN1, since, LIFE_HANG, 2, 0, "comm"));
	assert_int_equal(l.lost_steps, 2);
	assert_int_equal(l.lost_ns_total, 0);	/* not yet: it may clear */
	/* a step of the hung incarnation that ended before its last progress: nothing */
	assert_false(life__step(&l, RUN1, since - 10 * MS, 100 * MS));
	assert_true(life__step(&l, RUN1, since + 90 * SEC, 90 * SEC));
	assert_int_equal(l.state, LIFE_RUNNING);
	assert_true(l.in_place);
	assert_int_equal(l.run, RUN1);
	assert_int_equal(l.recovery_ns, 90 * SEC);
	assert_int_equal(l.lost_ns_total, 0);
	assert_int_equal(l.lost_steps_total, 0);

	/* hung again, and this time relaunched: the loss counts */
	t = run_steps(RUN1, since + 90 * SEC, 3, 100 * MS, 0, 0);
	assert_true(life__fail(&l, RUN1, t, LIFE_HANG, 2, 0, "comm"));
	assert_true(life__step(&l, RUN2, t + 20 * SEC, 100 * MS));
	assert_false(l.in_place);
	assert_int_equal(l.failures[LIFE_HANG], 2);
	assert_int_equal(l.lost_steps_total, l.lost_steps);
	assert_int_equal(l.lost_ns_total, l.lost_ns);
	assert_true(l.lost_steps >= 5);
}

/* The step that holds the checkpoint: boundaries after the collectives put the checkpoint near
 * its start (it is the next iteration's work: lost), boundaries at an iteration's start near
 * its end (it is the saved iteration's: not lost). Edges off by a drain tick change neither. */
static void checkpoint_inside_a_step__the_larger_side_decides(void **state)
{
	int near_start;

	for (near_start = 0; near_start < 2; near_start++) {
		uint64_t t = 10 * SEC, s0;

		life__init(&l);
		t = run_steps(RUN1, t, 5, 300 * MS, 0, 0);
		s0 = t;	/* the step [s0, s0 + 300 ms] holds the checkpoint */
		if (near_start)
			life__ckpt(&l, s0 + 10 * MS - 90 * MS, s0 + 60 * MS + 80 * MS);
		else
			life__ckpt(&l, s0 + 230 * MS - 90 * MS, s0 + 290 * MS + 80 * MS);
		t = run_steps(RUN1, t, 3, 300 * MS, 0, 0);
		assert_true(life__fail(&l, RUN1, t, LIFE_SIGNAL, 1, 9, ""));
		assert_int_equal(l.lost_steps, near_start ? 3 : 2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kill_mid_interval__lost_steps_exact_age_from_ckpt_end),
		cmocka_unit_test(relaunch__recovery_from_failure_to_first_new_step),
		cmocka_unit_test(no_checkpoint__everything_lost_age_since_start),
		cmocka_unit_test(never_back__abandoned_once_and_still_recoverable),
		cmocka_unit_test(stale_or_bad_input__ignored),
		cmocka_unit_test(long_run__ring_overflow_still_counts_lost_steps),
		cmocka_unit_test(hang_clears__recovered_in_place_nothing_lost),
		cmocka_unit_test(checkpoint_inside_a_step__the_larger_side_decides),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
