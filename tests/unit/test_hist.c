// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* hist: log2 bucketing, snapshot diffs, bucket-interpolated quantiles. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "hist.h"

/* The reference the kernel side implements: floor(log2(v)), 0 for 0 and 1, clamped. */
static unsigned int ref_bucket(uint64_t v)
{
	unsigned int b = 0;

	while (v > 1) {
		v >>= 1;
		b++;
	}
	return b > RS_HIST_SLOTS - 1 ? RS_HIST_SLOTS - 1 : b;
}

static uint64_t lo_of(unsigned int b)
{
	return b ? 1ULL << b : 0;
}

static uint64_t hi_of(unsigned int b)
{
	return 1ULL << (b + 1);
}

static void bucket__small_values__floor_log2(void **state)
{
	assert_int_equal(hist__bucket(0), 0);
	assert_int_equal(hist__bucket(1), 0);
	assert_int_equal(hist__bucket(2), 1);
	assert_int_equal(hist__bucket(3), 1);
	assert_int_equal(hist__bucket(4), 2);
	assert_int_equal(hist__bucket(1023), 9);
	assert_int_equal(hist__bucket(1024), 10);
	assert_int_equal(hist__bucket(2047), 10);
}

static void bucket__huge__clamped_to_last(void **state)
{
	assert_int_equal(hist__bucket((1ULL << (RS_HIST_SLOTS - 1)) - 1), RS_HIST_SLOTS - 2);
	assert_int_equal(hist__bucket(1ULL << (RS_HIST_SLOTS - 1)), RS_HIST_SLOTS - 1);
	assert_int_equal(hist__bucket(1ULL << RS_HIST_SLOTS), RS_HIST_SLOTS - 1);
	assert_int_equal(hist__bucket(1ULL << 63), RS_HIST_SLOTS - 1);
	assert_int_equal(hist__bucket(UINT64_MAX), RS_HIST_SLOTS - 1);
}

static void bucket__powers_and_neighbours__match_reference(void **state)
{
	uint64_t v;
	int s;

	for (s = 0; s < 64; s++) {
		v = 1ULL << s;
		assert_int_equal(hist__bucket(v), ref_bucket(v));
		assert_int_equal(hist__bucket(v - 1), ref_bucket(v - 1));
		assert_int_equal(hist__bucket(v + 1), ref_bucket(v + 1));
	}
}

static void diff__normal__per_bucket(void **state)
{
	struct rs_hist now = { 0 }, prev = { 0 }, out;

	now.slots[3] = 10;
	prev.slots[3] = 4;
	now.slots[RS_HIST_SLOTS - 1] = 7;
	now.count = 17;
	prev.count = 4;
	now.sum_ns = 1000;
	prev.sum_ns = 100;
	memset(&out, 0xff, sizeof(out));
	hist__diff(&now, &prev, &out);
	assert_true(out.slots[3] == 6);
	assert_true(out.slots[RS_HIST_SLOTS - 1] == 7);
	assert_true(out.slots[0] == 0);
	assert_true(out.count == 13);
	assert_true(out.sum_ns == 900);
}

static void diff__counter_went_back__saturates_at_zero(void **state)
{
	struct rs_hist now = { 0 }, prev = { 0 }, out;

	/* the map was re-created under us: now < prev */
	now.slots[5] = 1;
	prev.slots[5] = 100;
	now.slots[6] = 3;
	prev.slots[6] = 1;
	now.count = 4;
	prev.count = 101;
	now.sum_ns = 5;
	prev.sum_ns = UINT64_MAX;
	hist__diff(&now, &prev, &out);
	assert_true(out.slots[5] == 0);
	assert_true(out.slots[6] == 2);
	assert_true(out.count == 0);
	assert_true(out.sum_ns == 0);
}

static void quantile__empty__zero(void **state)
{
	struct rs_hist h = { 0 };

	assert_true(hist__quantile(&h, 0.5) == 0);
	assert_true(hist__quantile(&h, 1.0) == 0);
	/* count alone does not make it non-empty: the buckets are the distribution */
	h.count = 10;
	assert_true(hist__quantile(&h, 0.99) == 0);
}

static void quantile__bad_q__zero_or_clamped(void **state)
{
	struct rs_hist h = { 0 };

	h.slots[10] = 4;
	assert_true(hist__quantile(&h, 0) == 0);
	assert_true(hist__quantile(&h, -1) == 0);
	assert_true(hist__quantile(&h, NAN) == 0);
	assert_true(hist__quantile(&h, 5) == hist__quantile(&h, 1));
}

static void quantile__single_bucket__linear_interpolation(void **state)
{
	struct rs_hist h = { 0 };

	h.slots[10] = 10;
	/* [1024, 2048): q of the way in */
	assert_true(hist__quantile(&h, 0.5) == 1536);
	assert_true(hist__quantile(&h, 0.25) == 1280);
	assert_true(hist__quantile(&h, 0.1) == 1024 + 102);
	/* bucket 0 holds 0 and 1: interpolates over [0, 2) */
	memset(&h, 0, sizeof(h));
	h.slots[0] = 2;
	assert_true(hist__quantile(&h, 0.5) == 1);
}

static void quantile__known_distribution__in_bucket(void **state)
{
	struct rs_hist h = { 0 };
	uint64_t p50, p99, p100;

	h.slots[10] = 99;
	h.slots[20] = 1;
	h.count = 100;
	p50 = hist__quantile(&h, 0.50);
	p99 = hist__quantile(&h, 0.99);
	p100 = hist__quantile(&h, 1.0);
	assert_in_range(p50, lo_of(10), hi_of(10) - 1);
	assert_true(p50 == 1024 + 517);	/* 50/99 of 1024, rounded */
	assert_in_range(p99, lo_of(10), hi_of(10));
	assert_in_range(p100, lo_of(20), hi_of(20));
	assert_in_range(p99, lo_of(10), hi_of(10) - 1);
	assert_in_range(p100, lo_of(20), hi_of(20) - 1);
	assert_int_equal(hist__bucket(p99), 10);
	assert_int_equal(hist__bucket(p100), 20);
}

static void quantile__two_buckets__monotonic(void **state)
{
	struct rs_hist h = { 0 };
	uint64_t prev = 0, v;
	double q;

	h.slots[3] = 50;
	h.slots[30] = 50;
	for (q = 0.01; q <= 1.0; q += 0.01) {
		v = hist__quantile(&h, q);
		assert_true(v >= prev);
		prev = v;
	}
	assert_in_range(hist__quantile(&h, 0.25), lo_of(3), hi_of(3));
	assert_in_range(hist__quantile(&h, 0.75), lo_of(30), hi_of(30));
}

static void quantile__last_bucket__bounded(void **state)
{
	struct rs_hist h = { 0 };

	h.slots[RS_HIST_SLOTS - 1] = 3;
	assert_in_range(hist__quantile(&h, 0.5), lo_of(RS_HIST_SLOTS - 1),
			hi_of(RS_HIST_SLOTS - 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bucket__small_values__floor_log2),
		cmocka_unit_test(bucket__huge__clamped_to_last),
		cmocka_unit_test(bucket__powers_and_neighbours__match_reference),
		cmocka_unit_test(diff__normal__per_bucket),
		cmocka_unit_test(diff__counter_went_back__saturates_at_zero),
		cmocka_unit_test(quantile__empty__zero),
		cmocka_unit_test(quantile__bad_q__zero_or_clamped),
		cmocka_unit_test(quantile__single_bucket__linear_interpolation),
		cmocka_unit_test(quantile__known_distribution__in_bucket),
		cmocka_unit_test(quantile__two_buckets__monotonic),
		cmocka_unit_test(quantile__last_bucket__bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
