// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* user/model/links.c: a slow link among sibling links, on made-up steps whose truth is known:
 * a TP+DP job's one slow rank (its TP group and its DP group slower than their siblings: the
 * rank they share is named), a pipeline's slow replica pair (its ends, no one rank), members
 * starved of CPU inside (not the link), pairs between different stages (no siblings), noise
 * alone, and names only one process knows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "links.h"

#define MS	1000000ULL
#define STEP	(100 * MS)
#define M	8

/* A pseudo-random jitter in [0, span) from a counter: the same run every time. */
static uint64_t jit(unsigned int *seed, uint64_t span)
{
	*seed = *seed * 1103515245u + 12345u;
	return span ? (*seed >> 8) % span : 0;
}

/* 16 ranks, TP groups of 4 (comm 100 + g), DP groups of equal TP position (comm 200 + p):
 * each step rank r's time inside its TP collectives is tp plus the wait for its group's
 * latest (the least is the transfer), its DP ones the same. slow: that rank's link makes
 * each of its groups' transfers x times longer (-1: none). held: every member of TP group 0
 * runnable and not running that long inside (its transfer grows by as much). */
static void tpdp_row(struct links *l, uint64_t k, int slow, double x, uint64_t held,
		     unsigned int *seed)
{
	int r, g, p;
	uint64_t tp, dp;

	links__begin(l, k);
	for (r = 0; r < 16; r++) {
		g = r / 4;
		p = r % 4;
		tp = 6 * MS + jit(seed, MS / 2);
		dp = 10 * MS + jit(seed, MS / 2);
		if (slow >= 0 && g == slow / 4)
			tp = (uint64_t)(tp * x);
		if (slow >= 0 && p == slow % 4)
			dp = (uint64_t)(dp * x);
		tp += g == 0 ? held : 0;
		links__coll(l, r, 100 + g, 0xaaaa, tp + jit(seed, 3 * MS), g == 0 ? held : 0);
		links__coll(l, r, 200 + p, 0xbbbb, dp + jit(seed, 3 * MS), 0);
	}
	links__end(l);
}

static bool judge(struct links *l, struct verdict *v, char *detail)
{
	memset(v, 0, sizeof(*v));
	v->rank = -1;
	return links__judge(l, M, STEP, v, detail, 256);
}

static void tpdp_slow_rank_named(void **state)
{
	struct links *l = links__new(16, M);
	struct verdict v;
	char detail[256];
	unsigned int seed = 1;
	uint64_t k;

	(void)state;
	assert_non_null(l);
	for (k = 0; k < M; k++)
		tpdp_row(l, k, 11, 3.0, 0, &seed);
	assert_true(judge(l, &v, detail));
	assert_int_equal(v.cls, V_COMMUNICATION);
	assert_int_equal(v.rank, 11);	/* TP group 2 and DP group 3 share rank 11 alone */
	assert_non_null(strstr(detail, "ranks 3, 7, 11 and 15"));	/* DP's excess is larger */
	assert_in_range(v.skew_ns, 18 * MS, 23 * MS);			/* ~2 x 10 ms */
	links__free(l);
}

static void noise_alone_is_nothing(void **state)
{
	struct links *l = links__new(16, M);
	struct verdict v;
	char detail[256];
	unsigned int seed = 7;
	uint64_t k;
	int hits = 0;

	(void)state;
	for (k = 0; k < 100; k++) {
		tpdp_row(l, k, -1, 1.0, 0, &seed);
		hits += k + 1 >= M && judge(l, &v, detail);
	}
	assert_int_equal(hits, 0);
	links__free(l);
}

static void starved_members_are_not_the_link(void **state)
{
	struct links *l = links__new(16, M);
	struct verdict v;
	char detail[256];
	unsigned int seed = 3;
	uint64_t k;

	(void)state;
	for (k = 0; k < M; k++)
		tpdp_row(l, k, -1, 1.0, 30 * MS, &seed);
	assert_false(judge(l, &v, detail));
	links__free(l);
}

/* 2 stages x 3 replicas: pairs (0,1) (2,3) (4,5); 8 messages each way a step. */
static void pp_row(struct links *l, uint64_t k, int slow_pair, int stage_of_5,
		   unsigned int *seed)
{
	int p, i;
	uint64_t x;

	links__begin(l, k);
	for (p = 0; p < 3; p++)
		for (i = 0; i < 8; i++) {
			x = 2 * MS + jit(seed, MS / 4);
			if (p == slow_pair)
				x *= 4;
			links__p2p(l, 2 * p + (i & 1), 2 * p + !(i & 1), 131072, x);
		}
	for (p = 0; p < 6; p++)
		links__place(l, p, p == 5 ? stage_of_5 : p % 2);
	links__end(l);
}

static void pipeline_pair_no_one_rank(void **state)
{
	struct links *l = links__new(6, M);
	struct verdict v;
	char detail[256];
	unsigned int seed = 5;
	uint64_t k;

	(void)state;
	for (k = 0; k < M; k++)
		pp_row(l, k, 2, 1, &seed);
	assert_true(judge(l, &v, detail));
	assert_int_equal(v.cls, V_COMMUNICATION);
	assert_int_equal(v.rank, -1);	/* both ends are in the one slow pair */
	assert_non_null(strstr(detail, "between ranks 4 and 5"));
	assert_in_range(v.skew_ns, 40 * MS, 56 * MS);	/* 8 messages x 3 x 2 ms */
	links__free(l);
}

static void pairs_between_other_stages_are_not_siblings(void **state)
{
	struct links *l = links__new(6, M);
	struct verdict v;
	char detail[256];
	unsigned int seed = 5;
	uint64_t k;

	(void)state;
	/* rank 5 in stage 2: pair 4-5 is another place in the schedule, two pairs are left */
	for (k = 0; k < M; k++)
		pp_row(l, k, 2, 2, &seed);
	assert_false(judge(l, &v, detail));
	links__free(l);
}

static void process_own_names_make_no_unit(void **state)
{
	struct links *l = links__new(4, M);
	struct verdict v;
	char detail[256];
	uint64_t k;
	int r;

	(void)state;
	/* each rank's communicator has its own name (an MPI handle): one member each, rank 3
	 * waits longest inside, but that is no link */
	for (k = 0; k < M; k++) {
		links__begin(l, k);
		for (r = 0; r < 4; r++)
			links__coll(l, r, 1000 + r, 0xaaaa, (r == 3 ? 40 : 5) * MS, 0);
		links__end(l);
	}
	assert_false(judge(l, &v, detail));
	links__free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tpdp_slow_rank_named),
		cmocka_unit_test(noise_alone_is_nothing),
		cmocka_unit_test(starved_members_are_not_the_link),
		cmocka_unit_test(pipeline_pair_no_one_rank),
		cmocka_unit_test(pairs_between_other_stages_are_not_siblings),
		cmocka_unit_test(process_own_names_make_no_unit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
