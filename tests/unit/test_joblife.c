// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* user/node/joblife.c: failures held back until their steps settle, the earliest cause, two
 * jobs apart, a hang that clears, abandon and forget, and the series and JSON it renders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "joblife.h"
#include "jsonp.h"

#define MS	1000000ULL
#define SEC	1000000000ULL
#define SETTLE	(2500 * MS)

static struct joblife jl;

static struct joblife_job *job(const char *id)
{
	struct joblife_job *e = joblife__get(&jl, id, true);

	assert_non_null(e);
	return e;
}

/* n steps of 100 ms ending from t on; returns the end of the last */
static uint64_t steps(struct joblife_job *e, double run, uint64_t t, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		t += 100 * MS;
		joblife__step(e, run, t, 100 * MS);
	}
	return t;
}

static struct life_cause cause(int rank, enum life_reason why, int code, uint64_t at)
{
	return (struct life_cause){ .rank = rank, .reason = why, .code = code, .at_ns = at };
}

/*
 * A rank killed; its peers' steps settle after the kill and count as lost; the launcher's
 * later kills of the others are not the cause; nothing is judged until the settle time.
 */
static void kill__held_back_then_judged_on_settled_steps(void **state)
{
	struct joblife_job *e;
	struct life_cause c;
	uint64_t t;

	joblife__init(&jl, 60 * SEC, 30 * SEC, SETTLE);
	e = job("a");
	joblife__generation(e);
	joblife__set_live(e, true, 0);
	t = steps(e, 1000.5, 10 * SEC, 10);
	joblife__ckpt(e, t + 10 * MS, t + 50 * MS);
	t = steps(e, 0, t + 50 * MS, 3);
	c = cause(1, LIFE_SIGNAL, 9, t + 20 * MS);
	joblife__fail(&jl, e, &c, t + 30 * MS);
	c = cause(0, LIFE_SIGNAL, 15, t + 900 * MS);	/* mpirun's cleanup */
	joblife__fail(&jl, e, &c, t + 950 * MS);
	assert_true(e->pend);
	assert_int_equal(e->l->state, LIFE_RUNNING);
	/* a survivor's last step, built after the kill */
	joblife__step(e, 0, t + 100 * MS, 100 * MS);
	joblife__tick(&jl, t + 1 * SEC);
	assert_int_equal(e->l->state, LIFE_RUNNING);
	joblife__tick(&jl, t + 30 * MS + SETTLE);
	assert_int_equal(e->l->state, LIFE_FAILED);
	assert_int_equal(e->l->cause.rank, 1);
	assert_int_equal(e->l->cause.code, 9);
	assert_int_equal(e->l->lost_steps, 4);
	assert_int_equal(e->l->lost_steps_total, 4);
	assert_int_equal(e->l->failures[LIFE_SIGNAL], 1);
	assert_int_equal(e->l->ckpt_age_ns, t + 20 * MS - (t - 300 * MS));

	/* relaunched: a new membership, its first step starts 5 s after the kill */
	joblife__generation(e);
	joblife__step(e, 1010.25, t + 5100 * MS, 100 * MS);
	assert_int_equal(e->l->state, LIFE_RUNNING);
	assert_int_equal(e->l->recoveries, 1);
	assert_int_equal(e->l->recovery_ns, 5 * SEC - 20 * MS);
	assert_int_equal(e->rec_n, 1);
	assert_int_equal(e->rec_counts[2], 1);	/* le 5 */
	joblife__free(&jl);
}

/* A relaunch that comes before the settle time judges the failure first, on what it has. */
static void relaunch_before_settle__failure_judged_first(void **state)
{
	struct joblife_job *e;
	struct life_cause c;
	uint64_t t;

	joblife__init(&jl, 60 * SEC, 30 * SEC, SETTLE);
	e = job("a");
	joblife__generation(e);
	t = steps(e, 1000, SEC, 5);
	c = cause(2, LIFE_EXIT_CODE, 1, t);
	joblife__fail(&jl, e, &c, t);
	joblife__generation(e);
	joblife__step(e, 1001, t + 900 * MS, 100 * MS);
	assert_int_equal(e->l->failures[LIFE_EXIT_CODE], 1);
	assert_int_equal(e->l->recoveries, 1);
	assert_int_equal(e->l->lost_steps, 5);
	assert_int_equal(e->nev, 4);	/* started, failed, started, recovered */
	assert_int_equal(e->ev[1].kind, JL_FAILED);
	assert_int_equal(e->ev[3].kind, JL_RECOVERED);
	joblife__free(&jl);
}

/* Two jobs failing at once stay apart; one never comes back and is abandoned, then, once the
 * retain time has passed without ranks, forgotten. */
static void two_jobs__apart_abandoned_and_forgotten(void **state)
{
	struct joblife_job *a, *b;
	struct life_cause c;
	uint64_t ta, tb;

	joblife__init(&jl, 60 * SEC, 30 * SEC, SETTLE);
	a = job("a");
	b = job("b");
	joblife__generation(a);
	joblife__generation(b);
	ta = steps(a, 1000, SEC, 7);
	tb = steps(b, 2000, SEC, 3);
	c = cause(1, LIFE_SIGNAL, 9, ta);
	joblife__fail(&jl, a, &c, ta);
	c = cause(0, LIFE_SIGNAL, 6, tb);
	joblife__fail(&jl, b, &c, tb);
	joblife__tick(&jl, ta + SETTLE);
	assert_int_equal(a->l->lost_steps, 7);
	assert_int_equal(b->l->lost_steps, 3);
	assert_int_equal(b->l->cause.code, 6);
	joblife__set_live(a, false, ta + SETTLE);
	joblife__set_live(b, false, ta + SETTLE);
	joblife__tick(&jl, ta + 59 * SEC);
	assert_int_equal(a->l->state, LIFE_FAILED);
	joblife__tick(&jl, ta + 61 * SEC);
	assert_int_equal(a->l->state, LIFE_ABANDONED);
	assert_int_equal(a->l->abandoned, 1);
	assert_int_equal(jl.j[0].ev[jl.j[0].nev - 1].kind, JL_ABANDONED);
	joblife__tick(&jl, ta + 89 * SEC);
	assert_non_null(joblife__get(&jl, "a", false));
	joblife__tick(&jl, ta + 91 * SEC);
	assert_null(joblife__get(&jl, "a", false));
	assert_null(joblife__get(&jl, "b", false));
	joblife__free(&jl);
}

/* A hang: judged at its last progress; a step past it is a recovery in place, nothing lost. */
static void hang_clears__in_place(void **state)
{
	struct joblife_job *e;
	struct life_cause c;
	uint64_t t;

	joblife__init(&jl, 600 * SEC, 30 * SEC, SETTLE);
	e = job("h");
	joblife__generation(e);
	t = steps(e, 1000, SEC, 6);
	c = cause(3, LIFE_HANG, 0, t);
	joblife__fail(&jl, e, &c, t + 60 * SEC);
	/* it steps again before the failure is judged: judged, then recovered */
	joblife__step(e, 0, t + 61 * SEC, 61 * SEC);
	assert_int_equal(e->l->failures[LIFE_HANG], 1);
	assert_int_equal(e->l->state, LIFE_RUNNING);
	assert_true(e->l->in_place);
	assert_int_equal(e->l->recovery_ns, 61 * SEC);
	assert_int_equal(e->l->lost_steps_total, 0);
	joblife__free(&jl);
}

/* The series and the JSON: valid, with the job's values; a job with no step shows nothing. */
static void render__series_and_json(void **state)
{
	struct joblife_job *e;
	struct life_cause c;
	struct prom p;
	struct json j;
	uint64_t t;

	joblife__init(&jl, 60 * SEC, 30 * SEC, SETTLE);
	job("never-stepped");
	e = job("r\"q");
	joblife__generation(e);
	t = steps(e, 1764600000.5, SEC, 4);
	c = cause(1, LIFE_SIGNAL, 9, t);
	joblife__fail(&jl, e, &c, t);
	joblife__flush(e);
	prom__init(&p);
	joblife__metrics(&jl, &p);
	assert_false(p.err);
	assert_non_null(strstr(p.buf, "train_run_id{job_id=\"r\\\"q\"} 1764600000.5\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_failures_total{job_id=\"r\\\"q\","
				      "reason=\"signal\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_lifecycle_state{job_id=\"r\\\"q\","
				      "state=\"failed\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_lost_steps_total{job_id=\"r\\\"q\"} 4\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_recovery_seconds_count{job_id=\"r\\\"q\"} 0\n"));
	assert_null(strstr(p.buf, "job_recovery_seconds{"));
	assert_null(strstr(p.buf, "never-stepped"));
	prom__free(&p);
	json__init(&j);
	joblife__json(&jl, &j, t + SEC);
	assert_false(j.err);
	assert_non_null(strstr(j.buf, "\"job\":\"r\\\"q\",\"state\":\"failed\""));
	assert_non_null(strstr(j.buf, "\"run_id\":1764600000.500"));
	assert_non_null(strstr(j.buf, "\"reason\":\"signal\",\"rank\":1,\"signal\":9"));
	assert_non_null(strstr(j.buf, "\"event\":\"failed\""));
	assert_null(strstr(j.buf, "never-stepped"));
	json__free(&j);
	joblife__free(&jl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kill__held_back_then_judged_on_settled_steps),
		cmocka_unit_test(relaunch_before_settle__failure_judged_first),
		cmocka_unit_test(two_jobs__apart_abandoned_and_forgotten),
		cmocka_unit_test(hang_clears__in_place),
		cmocka_unit_test(render__series_and_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
