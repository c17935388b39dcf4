// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* ckpt: the checkpoint burst heuristic, fed cumulative regular-file write bytes per tick. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "ckpt.h"

#define MS 1000000ULL
#define MIB (1ULL << 20)

static const struct ckpt_cfg cfg = {
	.active_bytes = CKPT_ACTIVE_BYTES, .gap_ns = CKPT_GAP_NS, .min_bytes = CKPT_MIN_BYTES,
};

/* Feed per-tick deltas, 100 ms apart from t=0, with when the latest write or flush returned
 * as of each tick (last, NULL: unknown); return how many checkpoints ended, the last in *out. */
static int feed_at(struct ckpt *c, const uint64_t *delta, const uint64_t *last, int n,
		   struct ckpt_done *out)
{
	uint64_t cum = 0;
	int i, done = 0;

	for (i = 0; i < n; i++) {
		cum += delta[i];
		done += ckpt__sample(c, &cfg, (uint64_t)i * 100 * MS, cum, last ? last[i] : 0, out);
	}
	return done;
}

static int feed(struct ckpt *c, const uint64_t *delta, int n, struct ckpt_done *out)
{
	return feed_at(c, delta, NULL, n, out);
}

static void burst__big_then_quiet__one_checkpoint(void **state)
{
	/* t=0 primes; 4 ticks of 8 MiB (t=100..400 ms), then quiet for over a second */
	uint64_t d[20] = { 0, 8 * MIB, 8 * MIB, 8 * MIB, 8 * MIB };
	struct ckpt c = {};
	struct ckpt_done out = {};

	assert_int_equal(feed(&c, d, 20, &out), 1);
	assert_int_equal(out.bytes, 32 * MIB);
	assert_int_equal(out.start_ns, 0);		/* the writes began after the t=0 sample */
	assert_int_equal(out.last_start_ns, 0);
	assert_int_equal(out.end_ns, 400 * MS);
}

/* Two checkpoints 0.6 s apart (closer than the 1 s gap): one burst, and the later one's
 * start kept as its last run's start. */
static void burst__two_close__one_burst_with_the_last_run_start(void **state)
{
	uint64_t d[30] = { 0, 8 * MIB, 8 * MIB, 0, 0, 0, 0, 0, 8 * MIB, 8 * MIB, 8 * MIB };
	struct ckpt c = {};
	struct ckpt_done out = {};

	assert_int_equal(feed(&c, d, 30, &out), 1);
	assert_int_equal(out.start_ns, 0);
	assert_int_equal(out.last_start_ns, 700 * MS);
	assert_int_equal(out.end_ns, 1000 * MS);
	assert_int_equal(out.bytes, 40 * MIB);
}

/* The probe says when the writes returned: the burst ends at its last write, or at the flush
 * that returned in the tick after it; a log line later than that does not move it. */
static void burst__end__the_last_write_or_the_flush_after_it(void **state)
{
	uint64_t d[20] = { 0, 8 * MIB, 8 * MIB, 8 * MIB, 8 * MIB };
	uint64_t last[20] = { 0, 95 * MS, 199 * MS, 298 * MS, 330 * MS, 330 * MS };
	struct ckpt c = {};
	struct ckpt_done out = {};
	int i;

	assert_int_equal(feed_at(&c, d, last, 20, &out), 1);
	assert_int_equal(out.end_ns, 330 * MS);		/* no flush: the last write */
	assert_int_equal(out.start_ns, 0);

	memset(&c, 0, sizeof(c));
	last[5] = 460 * MS;				/* its fsync */
	for (i = 6; i < 20; i++)
		last[i] = 460 * MS;
	last[9] = last[10] = 880 * MS;			/* a log line, two ticks later */
	for (i = 11; i < 20; i++)
		last[i] = 880 * MS;
	assert_int_equal(feed_at(&c, d, last, 20, &out), 1);
	assert_int_equal(out.end_ns, 460 * MS);
	assert_int_equal(out.bytes, 32 * MIB);
}

static void burst__small_writes__not_a_checkpoint(void **state)
{
	/* 512 KiB per tick for 2 s (logs): never "active" */
	uint64_t d[20];
	struct ckpt c = {};
	struct ckpt_done out = {};
	int i;

	for (i = 0; i < 20; i++)
		d[i] = 512 << 10;
	assert_int_equal(feed(&c, d, 20, &out), 0);
}

static void burst__big_but_short__under_minimum(void **state)
{
	uint64_t d[20] = { 0, 4 * MIB, 4 * MIB };	/* 8 MiB < 16 MiB */
	struct ckpt c = {};
	struct ckpt_done out = {};

	assert_int_equal(feed(&c, d, 20, &out), 0);
}

static void burst__pause_shorter_than_gap__one_checkpoint(void **state)
{
	/* 10 MiB, 500 ms pause with a trickle, 10 MiB: one checkpoint of 20 MiB + the trickle */
	uint64_t d[30] = { 0, 10 * MIB, 0, 4096, 0, 0, 0, 10 * MIB };
	struct ckpt c = {};
	struct ckpt_done out = {};

	assert_int_equal(feed(&c, d, 30, &out), 1);
	assert_int_equal(out.bytes, 20 * MIB + 4096);
	assert_int_equal(out.end_ns, 700 * MS);
}

static void burst__two_separated__two_checkpoints(void **state)
{
	uint64_t d[60] = { 0, 20 * MIB };
	struct ckpt c = {};
	struct ckpt_done out = {};

	d[40] = 17 * MIB;
	assert_int_equal(feed(&c, d, 60, &out), 2);
	assert_int_equal(out.bytes, 17 * MIB);
	assert_int_equal(out.start_ns, 3900 * MS);
}

static void counter__goes_backwards__restarts_quietly(void **state)
{
	struct ckpt c = {};
	struct ckpt_done out = {};

	assert_false(ckpt__sample(&c, &cfg, 0, 100 * MIB, 0, &out));
	assert_false(ckpt__sample(&c, &cfg, 100 * MS, 200 * MIB, 0, &out));	/* burst */
	/* the slot was reused: the counter restarts from 0, no checkpoint from the jump */
	assert_false(ckpt__sample(&c, &cfg, 200 * MS, 0, 0, &out));
	assert_false(ckpt__sample(&c, &cfg, 5000 * MS, 0, 0, &out));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(burst__two_close__one_burst_with_the_last_run_start),
		cmocka_unit_test(burst__big_then_quiet__one_checkpoint),
		cmocka_unit_test(burst__end__the_last_write_or_the_flush_after_it),
		cmocka_unit_test(burst__small_writes__not_a_checkpoint),
		cmocka_unit_test(burst__big_but_short__under_minimum),
		cmocka_unit_test(burst__pause_shorter_than_gap__one_checkpoint),
		cmocka_unit_test(burst__two_separated__two_checkpoints),
		cmocka_unit_test(counter__goes_backwards__restarts_quietly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
