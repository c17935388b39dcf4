// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* user/model/cost.c: a straggler's cost on made-up rows whose truth is known: peers that wait
 * a chosen time in collectives for one late rank, noise under the floor, a pipeline, and the
 * accounting (charged only once a verdict names the rank, then its recent steps too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "cost.h"
#include "prom.h"

#define MS	1000000ULL
#define SEC	1000000000ULL

/* n ranks, steps of dur; rank late is late by lag: its peers spend lag more in comm, it spends
 * lag more in compute (late < 0: none) */
static void make_row(struct step_obs *row, int n, int late, uint64_t dur, uint64_t lag)
{
	int c;

	memset(row, 0, sizeof(*row) * n);
	for (c = 0; c < n; c++) {
		row[c].present = true;
		row[c].dur_ns = dur;
		row[c].ph.ns[PH_COMM] = 1 * MS + (c == late || late < 0 ? 0 : lag);
		row[c].ph.ns[PH_COMPUTE] = dur - row[c].ph.ns[PH_COMM];
		row[c].stage = -1;
	}
}

static void straggler_step(void **state)
{
	struct step_obs row[4];
	struct cost_step cs;

	make_row(row, 4, 2, 30 * MS, 20 * MS);
	cost__step(row, 4, &cs);
	assert_int_equal(cs.culprit, 2);
	assert_int_equal(cs.phase, PH_COMPUTE);
	assert_int_equal(cs.wait_ns, 3 * 20 * MS);	/* 3 peers x 20 ms */
	assert_int_equal(cs.real_ns, 30 * MS);
	assert_int_equal(cs.whatif_ns, 10 * MS);
	assert_int_equal(cs.rank_ns, 4 * 30 * MS);
	/* the late rank's time went to input, not compute */
	row[2].ph.ns[PH_COMPUTE] -= 15 * MS;
	row[2].ph.ns[PH_INPUT_WAIT] = 15 * MS;
	cost__step(row, 4, &cs);
	assert_int_equal(cs.phase, PH_INPUT_WAIT);
}

static void noise_and_pipeline(void **state)
{
	struct step_obs row[2];
	struct cost_step cs;

	/* 1 ms of a 100 ms step: under max(2 ms, 5%) */
	make_row(row, 2, 0, 100 * MS, 1 * MS);
	cost__step(row, 2, &cs);
	assert_int_equal(cs.culprit, -1);
	assert_int_equal(cs.wait_ns, 0);
	assert_int_equal(cs.whatif_ns, cs.real_ns);
	/* 6 ms of it is over the floor */
	make_row(row, 2, 0, 100 * MS, 6 * MS);
	cost__step(row, 2, &cs);
	assert_int_equal(cs.culprit, 0);
	/* a pipeline's stages wait by schedule */
	row[0].stages = row[1].stages = 2;
	cost__step(row, 2, &cs);
	assert_int_equal(cs.culprit, -1);
	/* one rank: nobody to wait */
	make_row(row, 1, 0, 100 * MS, 50 * MS);
	cost__step(row, 1, &cs);
	assert_int_equal(cs.culprit, -1);
}

static void charged_by_verdict(void **state)
{
	struct cost *c = calloc(1, sizeof(*c));
	struct step_obs row[4];
	struct cost_step cs;
	struct cost_sum sum;
	char words[320];
	int k;

	assert_non_null(c);
	make_row(row, 4, 3, 30 * MS, 20 * MS);
	cost__step(row, 4, &cs);
	for (k = 0; k < 10; k++)
		cost__add(c, &cs, 7, 100 * SEC + k * 30 * MS);
	assert_int_equal(c->steps, 10);
	assert_int_equal(c->wait_ns, 0);	/* no verdict yet: not charged */
	cost__sum(c, 101 * SEC, 2.9, 1, &sum);
	assert_int_equal(sum.rank, -1);
	cost__text(&sum, words, sizeof(words));
	assert_string_equal(words, "");
	/* the verdict names rank 7: its recent steps are charged, once */
	cost__charge(c, 7, 101 * SEC);
	cost__charge(c, 7, 101 * SEC);
	assert_int_equal(c->wait_ns, 10 * 60 * MS);
	assert_int_equal(c->nc, 1);
	assert_int_equal(c->c[0].rank, 7);
	assert_int_equal(c->c[0].steps, 10);
	cost__sum(c, 101 * SEC, 2.9, 2, &sum);
	assert_int_equal(sum.rank, 7);
	assert_int_equal(sum.real_ns, 30 * MS);
	assert_int_equal(sum.whatif_ns, 10 * MS);
	assert_true(sum.slowdown > 2.99 && sum.slowdown < 3.01);
	assert_true(sum.hour_rank_s > 0.599 && sum.hour_rank_s < 0.601);
	cost__text(&sum, words, sizeof(words));
	assert_non_null(strstr(words, "rank 7 (compute) slows every step by 200%"));
	assert_non_null(strstr(words, "from 30ms to 10ms"));
	/* an hour later the words' hour is empty, the totals are not */
	cost__sum(c, 101 * SEC + 3600 * SEC, 2.9, 1, &sum);
	assert_true(sum.hour_rank_s == 0);
	assert_int_equal(c->wait_ns, 600 * MS);
	/* a healthy step after: not charged to anyone */
	make_row(row, 4, -1, 30 * MS, 0);
	cost__step(row, 4, &cs);
	cost__add(c, &cs, -1, 102 * SEC);
	cost__charge(c, 7, 102 * SEC);
	assert_int_equal(c->wait_ns, 600 * MS);
	free(c);
}

static void bounded_and_series(void **state)
{
	struct cost *c = calloc(1, sizeof(*c));
	const char *ids[1] = { "job-a" };
	const struct cost *cs[1] = { c };
	struct step_obs row[2];
	struct cost_step st;
	struct prom p;
	uint64_t sum = 0;
	int r;

	assert_non_null(c);
	make_row(row, 2, 1, 40 * MS, 10 * MS);
	cost__step(row, 2, &st);
	for (r = 0; r < 3 * COST_CULPRITS; r++) {
		cost__add(c, &st, r, SEC);
		cost__charge(c, r, SEC);
	}
	assert_int_equal(c->nc, COST_CULPRITS);
	assert_int_equal(c->c[COST_CULPRITS - 1].rank, -1);	/* the rest, whole */
	for (r = 0; r < c->nc; r++)
		sum += c->c[r].wait_ns;
	assert_int_equal(sum, c->wait_ns);
	assert_int_equal(c->wait_ns, 3 * COST_CULPRITS * 10 * MS);
	prom__init(&p);
	cost__series(&p, ids, cs, 1, 2.9, 1);
	assert_int_equal(p.err, 0);
	assert_non_null(strstr(p.buf, "rankscope_straggler_wait_seconds_total{job_id=\"job-a\","
				      "culprit_rank=\"other\",phase=\"other\"}"));
	assert_non_null(strstr(p.buf, "rankscope_straggler_cost_dollars_total{job_id=\"job-a\","
				      "culprit_rank=\"0\"}"));
	assert_non_null(strstr(p.buf, "rankscope_whatif_step_seconds_count{job_id=\"job-a\"}"));
	prom__reset(&p);
	cost__series(&p, ids, cs, 1, 0, 1);	/* no price: no dollars */
	assert_null(strstr(p.buf, "dollars"));
	prom__free(&p);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(straggler_step),
		cmocka_unit_test(noise_and_pipeline),
		cmocka_unit_test(charged_by_verdict),
		cmocka_unit_test(bounded_and_series),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
