// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* period: step boundaries from synthetic collective signature sequences and their gaps. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "period.h"

#define US 1000ULL
#define MS 1000000ULL

/* Room for the largest sequence: 4 x PERIOD_MAX plus noise. */
#define SEQ_MAX (8 * PERIOD_MAX)

struct seq {
	uint64_t sig[SEQ_MAX];
	uint64_t gap[SEQ_MAX];
	int n;
};

/* A training collective: position k of the step, each with its own bucket size. */
static uint64_t train_sig(int k)
{
	return period__sig(0, 4096ULL * (k + 1), 0xc0ffee);
}

/* Collectives that are not part of the training step (eval, a stray barrier). */
static uint64_t odd_sig(int k)
{
	return period__sig(5, 8ULL * (k + 1), 0xe7a1);
}

/* Append one collective and the pause that follows it. */
static void push(struct seq *q, uint64_t sig, uint64_t gap)
{
	assert_true(q->n < SEQ_MAX);
	q->sig[q->n] = sig;
	q->gap[q->n] = gap;
	q->n++;
}

/* The pause after position k of a step: long after the boundary, short and jittery elsewhere. */
static uint64_t step_gap(int k, int boundary, int step)
{
	return k == boundary ? 40 * MS + (step % 3) * MS : 50 * US + ((k * 7 + step) % 11) * US;
}

/* steps whole steps of period p whose longest pause follows position boundary. */
static void build(struct seq *q, int p, int steps, int boundary)
{
	int s, k;

	q->n = 0;
	for (s = 0; s < steps; s++)
		for (k = 0; k < p; k++)
			push(q, train_sig(k), step_gap(k, boundary, s));
}

static struct seq *new_seq(void)
{
	struct seq *q = calloc(1, sizeof(*q));

	assert_non_null(q);
	return q;
}

static void detect__exact_periods__period_and_phase_found(void **state)
{
	static const int periods[] = { 1, 2, 3, 7, 64, 512 };
	struct seq *q = new_seq();
	struct period_result r;
	int i, j, p, phases[3];

	for (i = 0; i < (int)(sizeof(periods) / sizeof(periods[0])); i++) {
		p = periods[i];
		phases[0] = 0;
		phases[1] = p / 2;
		phases[2] = p - 1;
		for (j = 0; j < 3; j++) {
			build(q, p, 4, phases[j]);
			assert_int_equal(q->n, 4 * p);
			memset(&r, 0xa5, sizeof(r));
			assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
			assert_int_equal(r.period, p);
			assert_int_equal(r.phase, phases[j]);
			assert_true(r.confidence == 1.0);
		}
	}
	free(q);
}

static void detect__no_gaps__phase_zero(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;

	build(q, 7, 4, 3);
	assert_int_equal(period__detect(q->sig, NULL, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 7);
	assert_int_equal(r.phase, 0);
	free(q);
}

static void detect__one_huge_gap_elsewhere__phase_by_median(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;

	/* a single 5 s stall (a checkpoint, a page fault storm) after position 1 of one step */
	build(q, 7, 6, 5);
	q->gap[2 * 7 + 1] = 5000 * MS;
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 7);
	assert_int_equal(r.phase, 5);
	free(q);
}

static void detect__max_period_caps_search__no_longer_period(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;

	build(q, 64, 4, 10);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, 32, &r), 0);
	assert_in_range(r.period, 0, 32);
	assert_true(r.confidence < 0.9);
	free(q);
}

/* Training steps of period p with one extra collective in step 1 and one missing in step
 * steps - 2 (a lost probe event, a conditional barrier). */
static void build_noisy(struct seq *q, int p, int steps, bool extra, bool missing)
{
	int s, k;

	q->n = 0;
	for (s = 0; s < steps; s++)
		for (k = 0; k < p; k++) {
			if (missing && s == steps - 2 && k == p / 2)
				continue;
			push(q, train_sig(k), step_gap(k, p - 1, s));
			if (extra && s == 1 && k == p / 2)
				push(q, odd_sig(0), 30 * US);
		}
}

static void detect__extra_and_missing_collectives__period_found_not_certain(void **state)
{
	static const int periods[] = { 2, 3, 7, 64 };
	struct seq *q = new_seq();
	struct period_result r;
	int i, v;

	for (i = 0; i < (int)(sizeof(periods) / sizeof(periods[0])); i++)
		for (v = 1; v <= 3; v++) {
			build_noisy(q, periods[i], 16, v & 1, v & 2);
			assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
			assert_int_equal(r.period, periods[i]);
			assert_true(r.confidence < 1.0);
			assert_true(r.confidence > 0.5);
		}
	free(q);
}

static void detect__noise_at_n_4p__period_found_not_certain(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;

	build_noisy(q, 7, 4, true, false);
	assert_int_equal(q->n, 29);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 7);
	assert_true(r.confidence < 1.0);
	build_noisy(q, 64, 4, false, true);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 64);
	assert_true(r.confidence < 1.0);
	free(q);
}

/* micro micro-steps, each with two small-bucket allreduces (sizes a, b) and the forward and
 * backward pause after it, then one big optimizer allreduce followed by the longest pause
 * (optimizer step, next batch). */
static void build_grad_accum(struct seq *q, int steps, int micro, uint64_t a, uint64_t b)
{
	int s, m;

	q->n = 0;
	for (s = 0; s < steps; s++) {
		for (m = 0; m < micro; m++) {
			push(q, period__sig(0, a, 1), 40 * US);
			push(q, period__sig(0, b, 1), 20 * MS + m * MS);
		}
		push(q, period__sig(0, 1ULL << 30, 1), 60 * MS + s * US);
	}
}

static void detect__grad_accumulation__optimizer_step_phase_after_big(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;

	build_grad_accum(q, 4, 4, 8ULL << 20, 6ULL << 20);
	assert_int_equal(q->n, 36);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 9);
	assert_int_equal(r.phase, 8);
	assert_true(r.confidence == 1.0);
	/* equal bucket sizes: 8 identical small signatures then the big one */
	build_grad_accum(q, 6, 4, 8ULL << 20, 8ULL << 20);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 9);
	assert_int_equal(r.phase, 8);
	assert_true(r.confidence == 1.0);
	free(q);
}

static void detect__grad_accumulation_8_equal_buckets__optimizer_step(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;

	/* 8 micro-steps of 2 equal buckets: 16 identical signatures, then the optimizer's */
	build_grad_accum(q, 6, 8, 8ULL << 20, 8ULL << 20);
	assert_int_equal(q->n, 102);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	/* period 1 scores 0.88 here: it must not win over the whole optimizer step */
	assert_int_equal(r.period, 17);
	assert_int_equal(r.phase, 16);
	assert_true(r.confidence >= PERIOD_THRESHOLD);
	free(q);
}

/* Training steps of period p; every 10th step also runs 3 eval collectives after its own. */
static void build_eval(struct seq *q, int p, int steps)
{
	int s, k, e;

	q->n = 0;
	for (s = 0; s < steps; s++) {
		for (k = 0; k < p; k++)
			push(q, train_sig(k), step_gap(k, p - 1, s));
		if (s % 10 == 9)
			for (e = 0; e < 3; e++)
				push(q, odd_sig(e), 2 * MS);
	}
}

static void detect__periodic_eval_steps__training_period(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;

	build_eval(q, 7, 40);
	assert_int_equal(q->n, 40 * 7 + 4 * 3);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 7);
	assert_true(r.confidence < 1.0);
	build_eval(q, 5, 40);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 5);
	assert_true(r.confidence < 1.0);
	build_eval(q, 3, 20);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 3);
	assert_true(r.confidence < 1.0);
	free(q);
}

static void detect__periodic_eval_steps_long_run__training_period(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;

	/* 40 steps of 3 collectives (n = 132): the eval cycle (33 collectives) fits the search */
	build_eval(q, 3, 40);
	assert_int_equal(q->n, 132);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	/* the eval cycle (33) scores 1.0, the step (3) only 0.84, but the step ends at the long
	 * pauses as well: the step wins */
	assert_int_equal(r.period, 3);
	assert_int_equal(r.phase, 2);
	/* a training period of 1 (one allreduce a step) is lost the same way (eval cycle 13) */
	build_eval(q, 1, 40);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 1);
	free(q);
}

/*
 * One all-reduce a step (100 ms of compute before it), and every 5th step an eval first: its
 * compute, then two collectives of its own. The eval cycle (7 collectives) repeats exactly;
 * the step repeats at 4 of 7 positions only, under any divisor's floor, yet the cycle is 5
 * steps and one block of extras: the step is 1. An FSDP-like interleaving (6 all-gathers,
 * then 6 of (all-gather, reduce-scatter)) holds 12 all-gathers too, but its reduce-scatters
 * come between them: no block, and the all-gather alone is not its step.
 */
static void detect__eval_blocks__the_step_not_their_cycle(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;
	int s, k, n;

	for (s = 0; s < 40; s++) {
		if (s && s % 5 == 0) {
			q->gap[q->n - 1] = 23 * MS + (s % 3) * 100 * US;
			push(q, odd_sig(0), 20 * US);
			push(q, odd_sig(1), 90 * MS + (s % 5) * 100 * US);
		}
		push(q, train_sig(0), 100 * MS + (s % 7) * 100 * US);
	}
	/* as the job sees them: each time more have come, from 3 cycles on */
	for (n = 21; n <= q->n; n++) {
		assert_int_equal(period__detect(q->sig, q->gap, n, PERIOD_MAX, &r), 0);
		if (r.period != 1)
			print_error("%d collectives: period %d\n", n, r.period);
		assert_int_equal(r.period, 1);
	}
	/* steps of 3 (the last ends at the longest pause), every 6th with an eval of 2, one of
	 * them like the step's last: the cycle (20) is no multiple of the step, the places after
	 * each eval shift by 2, and the step is still 3, ending where it did */
	q->n = 0;
	for (s = 0; s < 40; s++) {
		if (s && s % 6 == 0) {
			push(q, train_sig(2), 3 * MS);
			push(q, odd_sig(0), 2 * MS);
		}
		push(q, train_sig(0), 9 * MS + (s % 3) * 100 * US);
		push(q, train_sig(1), 11 * MS + (s % 5) * 100 * US);
		push(q, train_sig(2), 30 * MS + (s % 7) * 100 * US);
	}
	for (n = 60; n <= q->n; n++) {
		assert_int_equal(period__detect(q->sig, q->gap, n, PERIOD_MAX, &r), 0);
		if (r.period != 3 || r.phase != 2)
			print_error("%d collectives: period %d phase %d\n", n, r.period, r.phase);
		assert_int_equal(r.period, 3);
		assert_int_equal(r.phase, 2);
	}
	q->n = 0;
	for (s = 0; s < 12; s++) {
		for (k = 0; k < 6; k++)
			push(q, train_sig(0), k == 5 ? 40 * MS : 2 * MS);
		for (k = 0; k < 6; k++) {
			push(q, train_sig(0), 1 * MS);
			push(q, train_sig(1), k == 5 ? 60 * MS + (s % 3) * MS : 2 * MS);
		}
	}
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 18);
	free(q);
}

static void detect__all_different__low_confidence_no_period(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;
	int i;

	q->n = 0;
	for (i = 0; i < 200; i++)
		push(q, train_sig(i), (i % 13) * MS);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_true(r.confidence < 0.1);
	assert_int_equal(r.period, 0);
	free(q);
}

static void detect__n_too_small__einval(void **state)
{
	uint64_t sig[3] = { 1, 1, 1 }, gap[3] = { 5, 9, 5 };
	struct period_result r;

	assert_int_equal(period__detect(sig, gap, 0, PERIOD_MAX, &r), -EINVAL);
	assert_int_equal(period__detect(sig, gap, 1, PERIOD_MAX, &r), -EINVAL);
	memset(&r, 0xa5, sizeof(r));
	assert_int_equal(period__detect(sig, gap, PERIOD_MIN_REPEATS - 1, PERIOD_MAX, &r), -EINVAL);
	assert_int_equal(r.period, 0);
	assert_int_equal(r.phase, 0);
	assert_true(r.confidence == 0);
	/* no period can be searched at all */
	assert_int_equal(period__detect(sig, gap, 3, 0, &r), -EINVAL);
	/* the smallest n that can show a period */
	assert_int_equal(period__detect(sig, gap, 3, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 1);
	assert_true(r.confidence == 1.0);
}

static void detect__period_needs_three_repeats__not_found_in_two(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;

	/* two whole steps of 10 are not enough evidence for period 10 */
	build(q, 10, 2, 9);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_in_range(r.period, 0, 20 / PERIOD_MIN_REPEATS);
	assert_true(r.confidence < 0.9);
	build(q, 10, 3, 9);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 10);
	free(q);
}


/* ---- training structures with jittery timing (a fixed PRNG, so runs repeat) ---- */

static uint64_t rnd_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static int preempt_every = 40;

/* v +- frac, and now and then (1 in preempt_every) a preemption of 0.5-1.5 ms */
static uint64_t jit(uint64_t v, double frac, bool preempt)
{
	double f = 1 + frac * ((double)(rnd() % 2001) / 1000.0 - 1);
	uint64_t r = (uint64_t)(v * f);

	if (preempt && rnd() % preempt_every == 0)
		r += 500 * US + rnd() % (1000 * US);
	return r;
}

#define OP_AR 0
#define OP_AG 1
#define OP_RS 2
#define OP_SEND 3
#define OP_RECV 4

/*
 * FSDP without prefetch, 2 layers (2 all-gathers, 2 of (all-gather, reduce-scatter)), then the
 * loss all-reduced; the pauses alike (the two longest in every step equal). A save's barrier
 * after every 6th step, an eval after every 7th (its compute, then an all-reduce alike to the
 * loss's and a gather). A cycle of several steps and both extras repeats best; the extras are
 * fewer than its steps, though one repeats the loss's signature: the step is still the 7.
 */
static void detect__extras_alike_to_the_step__the_step_not_their_cycle(void **state)
{
	static const uint64_t g[] = { 10500, 10500, 21000, 2, 21000, 2, 2300 };
	struct seq *q = new_seq();
	struct period_result r;
	uint64_t ag = period__sig(OP_AG, 1 << 20, 5), rs = period__sig(OP_RS, 1 << 20, 5);
	uint64_t loss = period__sig(OP_AR, 8, 9);
	int s, k;

	for (s = 1; s <= 31; s++) {
		for (k = 0; k < 7; k++)
			push(q, k == 6 ? loss : k == 3 || k == 5 ? rs : ag, jit(g[k] * US, 0.01, false));
		if (s % 6 == 0) {
			q->gap[q->n - 1] = 2 * US;
			push(q, period__sig(5, 8, 9), 360 * US);
		}
		if (s % 7 == 0) {
			q->gap[q->n - 1] = 14500 * US;
			push(q, loss, 2 * US);
			push(q, period__sig(OP_AG, 4096, 9), 300 * US);
		}
	}
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 7);
	free(q);
}

/* n equal buckets; back to back, or each after a slice of the backward (overlap); the step's
 * pause holds the optimizer, the next input and the forward. last: the last bucket's size. */
static void build_buckets(struct seq *q, int steps, int n, uint64_t last, bool overlap,
			  double len_skew)
{
	uint64_t compute = 2300 * US, slice, scale;
	int s, k;

	q->n = 0;
	for (s = 0; s < steps; s++) {
		scale = len_skew > 0 ? 1000 + (uint64_t)((s * 7919 % 1000) * len_skew) : 1000;
		slice = compute * scale / 1000 / n;
		for (k = 0; k < n; k++) {
			uint64_t bytes = k == n - 1 && last ? last : 256 << 10, g;

			if (k < n - 1)
				g = overlap ? slice : 8 * US;
			else
				g = 300 * US + 40 * US + (overlap ? slice : compute * scale / 1000);
			push(q, period__sig(OP_AR, bytes, 1), jit(g, 0.1, true));
		}
	}
}

static void expect_step(struct seq *q, int period, int phase)
{
	struct period_result r;
	int err = period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r);

	if (err || r.period != period || r.phase != phase)
		print_error("n=%d: err %d period %d phase %d (want %d, %d) conf %.2f\n", q->n, err,
			    r.period, r.phase, period, phase, r.confidence);
	assert_int_equal(err, 0);
	assert_int_equal(r.period, period);
	assert_int_equal(r.phase, phase);
}

static void detect__equal_buckets__step_from_pauses(void **state)
{
	static const int ns[] = { 2, 3, 8, 25 };
	struct seq *q = new_seq();
	struct period_result r;
	int i;

	for (i = 0; i < 4; i++) {
		build_buckets(q, 12, ns[i], 0, false, 0);
		expect_step(q, ns[i], ns[i] - 1);
		/* a backward overlapped with 25 buckets pauses 0.1 ms between them: a 1 ms
		 * preemption in most steps would hide their ends; keep it to one in 16 steps */
		preempt_every = ns[i] > 8 ? 400 : 40;
		/* two buckets and a backward overlapped with them: the step's end pause is only
		 * 1.3x the other, about what jitter makes; not split (README: pass --steps) */
		if (ns[i] > 2) {
			build_buckets(q, 40, ns[i], 0, true, 0);
			expect_step(q, ns[i], ns[i] - 1);
		}
		/* the last bucket smaller: signatures alone say it */
		build_buckets(q, 12, ns[i], 4096, false, 0);
		expect_step(q, ns[i], ns[i] - 1);
		/* sequence lengths that vary 2x from batch to batch */
		build_buckets(q, 12, ns[i], 0, false, 1.0);
		expect_step(q, ns[i], ns[i] - 1);
		if (ns[i] > 2) {
			build_buckets(q, 40, ns[i], 0, true, 1.0);
			expect_step(q, ns[i], ns[i] - 1);
		}
		preempt_every = 40;
	}
	/* 25 buckets, 48 collectives seen: not every bucket a step; wait for more */
	build_buckets(q, 2, 25, 0, false, 0);
	q->n = 48;
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), -EAGAIN);
	free(q);
}

static void detect__one_allreduce_a_step__period_one(void **state)
{
	struct seq *q = new_seq();
	int s;

	q->n = 0;
	for (s = 0; s < 64; s++)
		push(q, period__sig(OP_AR, 1 << 20, 1), jit(2600 * US, 0.2, true));
	expect_step(q, 1, 0);
	/* a stall: one pause 20x the others may end a long step; wait for it to repeat, or for
	 * PERIOD_WAIT_ALIKE collectives */
	q->gap[5] = 60 * MS;
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &(struct period_result){}),
			 -EAGAIN);
	for (s = 64; s < PERIOD_WAIT_ALIKE; s++)
		push(q, period__sig(OP_AR, 1 << 20, 1), jit(2600 * US, 0.2, true));
	expect_step(q, 1, 0);
	free(q);
}

/* FSDP: k all-gathers in the forward, k reduce-scatters in the backward, a layer's compute
 * before each */
static void build_fsdp(struct seq *q, int steps, int k)
{
	uint64_t slice = 2300 * US / (2 * k);
	int s, i;

	q->n = 0;
	for (s = 0; s < steps; s++) {
		for (i = 0; i < k; i++)
			push(q, period__sig(OP_AG, 1 << 20, 1), jit(slice, 0.1, true));
		for (i = 0; i < k; i++)
			push(q, period__sig(OP_RS, 1 << 20, 1),
			     jit(i < k - 1 ? slice : slice + 340 * US, 0.1, true));
	}
}

static void detect__fsdp__all_gathers_then_reduce_scatters(void **state)
{
	static const int ks[] = { 2, 4, 8, 25 };
	struct seq *q = new_seq();
	int i;

	for (i = 0; i < 4; i++) {
		build_fsdp(q, 8, ks[i]);
		expect_step(q, 2 * ks[i], 2 * ks[i] - 1);
	}
	free(q);
}

/* tensor + data parallel, one thread's collectives: l small all-reduces on the TP
 * communicator in the forward and l in the backward, then the gradient bucket on DP */
static void build_tp_dp(struct seq *q, int steps, int l)
{
	uint64_t slice = 2300 * US / (2 * l);
	int s, i;

	q->n = 0;
	for (s = 0; s < steps; s++) {
		for (i = 0; i < 2 * l; i++)
			push(q, period__sig(OP_AR, 64 << 10, 2), jit(i < 2 * l - 1 ? slice : 30 * US,
								      0.1, true));
		push(q, period__sig(OP_AR, 4 << 20, 3), jit(340 * US + slice, 0.1, true));
	}
}

static void detect__tensor_and_data_parallel__step_ends_after_dp(void **state)
{
	static const int ls[] = { 1, 3, 12 };
	struct seq *q = new_seq();
	int i;

	for (i = 0; i < 3; i++) {
		build_tp_dp(q, 10, ls[i]);
		expect_step(q, 2 * ls[i] + 1, 2 * ls[i]);
	}
	free(q);
}

/*
 * The same job seen from a rank that computes more in every layer: its pauses are all alike
 * (the DP all-reduce before the next step is short, its peers waited there), and so are its
 * TP all-reduces. The DP all-reduce is on another communicator, folded into the signature of
 * the TP all-reduce after it (fold[]), once a step. Without fold[] the one collective of a
 * different signature a cycle reads as an eval every few steps, and a divisor wins back; with
 * it, the step is the fold's distance and ends before it, also when a long pause every second
 * step would make a step of two. Folds at irregular distances say nothing.
 */
static void detect__tp_layers_alike_pauses_alike__step_from_the_dp_fold(void **state)
{
	static bool fold[SEQ_MAX];
	static const int ls[] = { 2, 3, 4 };
	struct seq *q = new_seq();
	struct period_result r;
	int i, s, k, plain;

	for (i = 0; i < 3; i++) {
		int p = 2 * ls[i];

		q->n = 0;
		memset(fold, 0, sizeof(fold));
		for (s = 0; s < 40; s++)
			for (k = 0; k < p; k++) {
				fold[q->n] = k == 0 && s > 0;
				push(q, period__sig(OP_AR, 64 << 10, fold[q->n] ? 0xd9 : 2),
				     jit(k < p - 1 ? 7500 * US : 7800 * US, 0.05, true));
			}
		assert_int_equal(period__detect_folded(q->sig, q->gap, fold, q->n, PERIOD_MAX, false,
						       &r),
				 0);
		assert_int_equal(r.period, p);
		assert_int_equal(r.phase, p - 1);
		/* the same without fold[]: from 6 layers (period 1 repeats 4 of 6) a divisor wins
		 * back (the eval reading), shown so that the fold is seen to decide */
		assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
		plain = r.period;
		if (ls[i] > 2)
			assert_int_not_equal(plain, p);
		/* every second step ends at a long pause (a preemption that recurs): the
		 * pauses alone make a step of two; the fold keeps one */
		for (k = 2 * p - 1; k < q->n; k += 2 * p)
			q->gap[k] += 20 * MS;
		assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
		assert_int_equal(r.period, 2 * p);
		assert_int_equal(period__detect_folded(q->sig, q->gap, fold, q->n, PERIOD_MAX, false,
						       &r),
				 0);
		assert_int_equal(r.period, p);
		assert_int_equal(r.phase, p - 1);
		for (k = 2 * p - 1; k < q->n; k += 2 * p)
			q->gap[k] -= 20 * MS;
		/* folds 1 to 4 collectives apart, at random: they change nothing */
		memset(fold, 0, sizeof(fold));
		for (k = 0; k < q->n; k += 1 + (int)(rnd() % 4))
			fold[k] = true;
		assert_int_equal(period__detect_folded(q->sig, q->gap, fold, q->n, PERIOD_MAX, false,
						       &r),
				 0);
		assert_int_equal(r.period, plain);
	}
	free(q);
}

/*
 * One tensor-parallel layer: its forward all-reduce after a third of the compute, its
 * backward one after the other two thirds, then the DP all-reduce (folded into the next
 * forward one). The longest pause is the backward's compute, inside the step: the pauses
 * alone end steps after the forward all-reduce; the fold ends them after the backward one.
 */
static void detect__one_tp_layer_backward_longest__step_ends_at_the_dp_fold(void **state)
{
	static bool fold[SEQ_MAX];
	struct seq *q = new_seq();
	struct period_result r;
	int s, k;

	for (s = 0; s < 40; s++)
		for (k = 0; k < 2; k++) {
			fold[q->n] = k == 0 && s > 0;
			push(q, period__sig(OP_AR, 64 << 10, fold[q->n] ? 0xd9 : 2),
			     jit(k ? 140 * MS : 280 * MS, 0.02, true));
		}
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 2);
	assert_int_equal(r.phase, 0);	/* the pauses alone: after the forward one */
	assert_int_equal(period__detect_folded(q->sig, q->gap, fold, q->n, PERIOD_MAX, false,
						       &r), 0);
	assert_int_equal(r.period, 2);
	assert_int_equal(r.phase, 1);
	free(q);
}

/*
 * A short job: an all-reduce an iteration, an all-gather after every 10th, pauses alike, and
 * two preemptions (5 ms, 2 ms) in its 111 collectives. Until more come, steps may be longer
 * than what was seen (-EAGAIN); when no more will (last), the pauses still say the step is the
 * iteration, not the all-gathers' cycle of 11 that the signatures alone repeat best.
 */
static void detect__short_job_two_preemptions_last__the_iteration(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;
	int i, k;

	for (i = 0; i < 100; i++) {
		push(q, period__sig(OP_AR, 16 << 10, 2), jit(i % 10 == 9 ? 5 * US : 490 * US,
							      0.02, false));
		if (i % 10 == 9)
			push(q, period__sig(OP_AG, 4 << 10, 2), jit(490 * US, 0.02, false));
	}
	q->gap[5] += 5 * MS;
	q->gap[36] += 2 * MS;
	k = period__detect_folded(q->sig, q->gap, NULL, q->n, PERIOD_MAX, false, &r);
	assert_int_equal(k, -EAGAIN);
	assert_int_equal(period__detect_folded(q->sig, q->gap, NULL, q->n, PERIOD_MAX, true, &r),
			 0);
	assert_int_equal(r.period, 1);
	/* the signatures alone (no pauses): the cycle */
	assert_int_equal(period__detect_folded(q->sig, NULL, NULL, q->n, PERIOD_MAX, true, &r),
			 0);
	assert_int_equal(r.period, 11);
	free(q);
}

/* pipeline stage 0 (GPipe): m sends of activations, m receives of gradients, then the DP
 * all-reduce on another communicator (not in this sequence) */
static void build_pipeline(struct seq *q, int steps, int m)
{
	uint64_t slice = 2300 * US / (2 * m);
	int s, i;

	q->n = 0;
	for (s = 0; s < steps; s++) {
		/* after the last send, the bubble: the next stage's forward and backward of the
		 * last micro-batch; after the last receive, this stage's backward, the DP
		 * all-reduce, the optimizer, the next input and forward */
		for (i = 0; i < m; i++)
			push(q, period__sig(OP_SEND, 1 << 18, 4), jit(i < m - 1 ? slice : 2 * slice,
								       0.1, true));
		for (i = 0; i < m; i++)
			push(q, period__sig(OP_RECV, 1 << 18, 4),
			     jit(i < m - 1 ? slice : 2 * slice + 680 * US, 0.1, true));
	}
}

static void detect__pipeline_sends_and_receives__micro_batches_in_one_step(void **state)
{
	static const int ms[] = { 2, 4, 8 };
	struct seq *q = new_seq();
	struct period_result r;
	int i;

	for (i = 0; i < 3; i++) {
		build_pipeline(q, 10, ms[i]);
		expect_step(q, 2 * ms[i], 2 * ms[i] - 1);
	}
	/* one micro-batch: the bubble is about as long as the step's own pause, so either may
	 * end the step; the period is sure */
	build_pipeline(q, 10, 1);
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 2);
	free(q);
}

static void detect__equal_buckets_and_periodic_eval__training_step(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;
	int s, k;

	/* 3 equal buckets a step; every 5th step also logs its loss (an 8-byte all-reduce) */
	q->n = 0;
	for (s = 0; s < 40; s++) {
		for (k = 0; k < 3; k++)
			push(q, period__sig(OP_AR, 256 << 10, 1),
			     jit(k < 2 ? 8 * US : (s % 5 == 4 ? 300 * US : 2640 * US), 0.1, true));
		if (s % 5 == 4)
			push(q, period__sig(OP_AR, 8, 1), jit(2340 * US, 0.1, true));
	}
	/* each logged loss shifts the positions after it: the phase is any, the period sure */
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 3);
	assert_true(r.long_ns > 2 * MS);
	free(q);
}

/*
 * 5 equal buckets a step (9 ms apart, 40 ms between steps); after every 7th step an eval logs
 * its loss and gathers a metric (two collectives of their own inside that pause); a rank's
 * input stalls 210 ms before steps 3 and 10, the same place of the first two eval cycles of
 * 37. Each place of the cycle is seen 3 times: the stalls lift one place's median pause to
 * 210 ms, yet the steps end at 40 ms every time: the step is still 5.
 */
static void detect__equal_buckets_eval_cycle_two_stalls__training_step(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;
	int s, k;

	q->n = 0;
	for (s = 0; s < 24; s++) {
		for (k = 0; k < 4; k++)
			push(q, period__sig(OP_AR, 256 << 10, 1), jit(9 * MS, 0.1, true));
		if (s % 7 == 6) {
			push(q, period__sig(OP_AR, 256 << 10, 1), jit(21 * MS, 0.1, true));
			push(q, period__sig(OP_AR, 8, 1), 10 * US);
			push(q, period__sig(OP_AG, 4096, 1), jit(32 * MS, 0.1, true));
		} else {
			push(q, period__sig(OP_AR, 256 << 10, 1),
			     jit(s == 2 || s == 9 ? 210 * MS : 40 * MS, 0.1, true));
		}
	}
	assert_int_equal(period__detect(q->sig, q->gap, q->n, PERIOD_MAX, &r), 0);
	if (r.period != 5)
		print_error("period %d conf %.2f\n", r.period, r.confidence);
	assert_int_equal(r.period, 5);
	assert_true(r.long_ns > 30 * MS);
	free(q);
}

static void detect__grad_accumulation_equal_buckets_at_the_end__step(void **state)
{
	struct seq *q = new_seq();
	int s, k;

	/* 4 micro-batches of input and compute, then 3 equal buckets once */
	q->n = 0;
	for (s = 0; s < 12; s++)
		for (k = 0; k < 3; k++)
			push(q, period__sig(OP_AR, 256 << 10, 1),
			     jit(k < 2 ? 8 * US : 4 * 2400 * US, 0.1, true));
	expect_step(q, 3, 2);
	free(q);
}

/*
 * What every step holds. MoE: each of L layers' forward and backward dispatch and combine (4 all-to-alls alike, the
 * experts' compute between them longer every second one), then one gradient all-reduce.
 * Signatures and pauses say steps of 2; no step of 2 reduces, so the step is the 4L + 1 that
 * does, ending after the all-reduce, once it was seen 3 times (-EAGAIN before). FSDP without
 * prefetch (L all-gathers, then L all-gather and reduce-scatter pairs): pairs reduce in half
 * the blocks of 2; a longer period seen 3 times but repeating less well than the pairs is not
 * taken until no more will come. Steps of equal buckets all reduce: unchanged.
 */
static void build_moe(struct seq *q, bool *red, int steps, int layers)
{
	uint64_t a2a = period__sig(4, 1 << 20, 0xc0ffee), ar = period__sig(0, 4 << 20, 0xc0ffee);
	int s, k;

	q->n = 0;
	for (s = 0; s < steps; s++) {
		for (k = 0; k < 4 * layers; k++) {
			red[q->n] = false;
			push(q, a2a, k % 2 ? 2 * MS : 5 * MS);
		}
		red[q->n] = true;
		push(q, ar, 30 * MS);
	}
}

static void reducing__a_step_of_gathers_alone__the_cycle_that_reduces(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;
	bool red[SEQ_MAX];
	int i, same;

	build_moe(q, red, 4, 9);
	assert_int_equal(period__detect(q->sig, q->gap, 48, PERIOD_MAX, &r), 0);
	assert_int_equal(r.period, 2);
	assert_int_equal(period__marked(q->sig, red, 48, false, false, &r), -EAGAIN);
	assert_int_equal(period__marked(q->sig, red, 3 * 37, false, false, &r), 0);
	assert_int_equal(r.period, 37);
	assert_int_equal(r.phase, 36);
	assert_true(r.confidence >= 0.99);
	/* FSDP without prefetch, 8 layers: 24 a step */
	q->n = 0;
	for (i = 0; i < 5 * 24; i++) {
		red[i] = i % 24 >= 8 && i % 2;
		push(q, red[i] ? period__sig(2, 1 << 20, 1) : period__sig(1, 1 << 20, 1), 1 * MS);
	}
	r = (struct period_result){ .period = 2, .confidence = 0.9 };
	assert_int_equal(period__marked(q->sig, red, 60, false, false, &r), -EAGAIN);
	assert_int_equal(r.period, 2);
	/* 66 seen: periods up to 22 reduce, but repeat worse than the pairs do there; unless
	 * no more will come */
	for (same = 0, i = 2; i < 66; i++)
		same += q->sig[i] == q->sig[i - 2];
	r.confidence = same / 64.0;
	assert_int_equal(period__marked(q->sig, red, 66, false, false, &r), -EAGAIN);
	assert_int_equal(r.period, 2);
	assert_int_equal(period__marked(q->sig, red, 66, false, true, &r), 0);
	assert_true(r.period > 2 && r.period <= 22);
	r = (struct period_result){ .period = 2, .confidence = 0.9 };
	assert_int_equal(period__marked(q->sig, red, 5 * 24, false, false, &r), 0);
	assert_int_equal(r.period, 24);
	assert_int_equal(r.phase, 23);
	/* TP+DP: tensor-parallel all-reduces alike, 24 a step; the data-parallel all-reduce,
	 * on another communicator, folded before each step's first: from 8 (a layer's, by its
	 * pauses) to 24, ending before the fold; under 3 folds seen, wait */
	q->n = 0;
	for (i = 0; i < 5 * 24; i++) {
		red[i] = i % 24 == 0;
		push(q, period__sig(0, 1 << 20, 7), 1 * MS);
	}
	r = (struct period_result){ .period = 8, .confidence = 1 };
	assert_int_equal(period__marked(q->sig, red, 48, true, false, &r), -EAGAIN);
	assert_int_equal(period__marked(q->sig, red, 5 * 24, true, false, &r), 0);
	assert_int_equal(r.period, 24);
	assert_int_equal(r.phase, 23);
	/* equal buckets, every one a reduction */
	build(q, 4, 12, 3);
	for (i = 0; i < q->n; i++)
		red[i] = true;
	r = (struct period_result){ .period = 1, .phase = 0, .confidence = 1 };
	assert_int_equal(period__marked(q->sig, red, q->n, false, false, &r), 0);
	assert_int_equal(r.period, 1);
	free(q);
}

/*
 * One all-reduce a step and a checkpoint's barrier every 5th step: 1 collective in 6 reduces
 * nothing, over the 15% of the collectives that may lie outside steps that reduce, but the
 * barrier is an extra (it repeats neither a step before nor a step after), no step of its
 * own: the step stays the all-reduce. Gathers alone in blocks of 2 with a barrier and an
 * all-reduce after every 6 (MoE): the barrier is left out, the gathers still reduce nothing,
 * and the step is the cycle of 8.
 */
static void reducing__a_barrier_every_few_steps__an_extra_not_a_step(void **state)
{
	struct seq *q = new_seq();
	struct period_result r;
	bool red[SEQ_MAX];
	int i;

	for (i = 0; i < 60; i++) {
		red[q->n] = true;
		push(q, period__sig(OP_AR, 1 << 20, 3), 5 * MS);
		if (i % 5 == 4) {
			red[q->n] = false;
			push(q, period__sig(5, 8, 3), 1 * MS);
		}
	}
	r = (struct period_result){ .period = 1, .confidence = 0.7 };
	assert_int_equal(period__marked(q->sig, red, q->n, false, true, &r), 0);
	assert_int_equal(r.period, 1);
	q->n = 0;
	for (i = 0; i < 20; i++) {
		int k;

		for (k = 0; k < 6; k++) {
			red[q->n] = false;
			push(q, period__sig(4, 1 << 20, 3), k % 2 ? 2 * MS : 5 * MS);
		}
		red[q->n] = false;
		push(q, period__sig(5, 8, 3), 1 * MS);
		red[q->n] = true;
		push(q, period__sig(OP_AR, 4 << 20, 3), 30 * MS);
	}
	r = (struct period_result){ .period = 2, .confidence = 0.7 };
	assert_int_equal(period__marked(q->sig, red, q->n, false, true, &r), 0);
	assert_int_equal(r.period, 8);
	assert_int_equal(r.phase, 7);
	free(q);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sort v and fail on any duplicate. */
static void assert_all_distinct(uint64_t *v, int n)
{
	int i;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (i = 1; i < n; i++)
		assert_true(v[i] != v[i - 1]);
}

static void sig__same_inputs__same_signature(void **state)
{
	assert_true(period__sig(3, 1 << 20, 42) == period__sig(3, 1 << 20, 42));
	assert_true(period__sig(0, 0, 0) == period__sig(0, 0, 0));
}

static void sig__op_bytes_or_comm_differ__signature_differs(void **state)
{
	uint64_t v[65];
	int i, n;

	assert_true(period__sig(1, 4096, 7) != period__sig(2, 4096, 7));
	assert_true(period__sig(1, 4096, 7) != period__sig(1, 8192, 7));
	assert_true(period__sig(1, 4096, 7) != period__sig(1, 4096, 8));
	/* fields are not interchangeable */
	assert_true(period__sig(1, 2, 3) != period__sig(2, 1, 3));
	assert_true(period__sig(1, 2, 3) != period__sig(1, 3, 2));
	/* one bit anywhere in one field changes the signature */
	for (n = 0, i = 0; i < 32; i++)
		v[n++] = period__sig(1U << i, 4096, 7);
	v[n++] = period__sig(0, 4096, 7);
	assert_all_distinct(v, n);
	for (n = 0, i = 0; i < 64; i++)
		v[n++] = period__sig(2, 1ULL << i, 7);
	v[n++] = period__sig(2, 0, 7);
	assert_all_distinct(v, n);
	for (n = 0, i = 0; i < 64; i++)
		v[n++] = period__sig(2, 4096, 1ULL << i);
	v[n++] = period__sig(2, 4096, 0);
	assert_all_distinct(v, n);
}

static void sig__many_bucket_sizes__no_collision(void **state)
{
	uint64_t *v = calloc(3 * 4096, sizeof(*v));
	int i, n = 0;

	assert_non_null(v);
	for (i = 0; i < 4096; i++) {
		v[n++] = period__sig(0, 1024ULL * (i + 1), 0x1234);
		v[n++] = period__sig(1, 1024ULL * (i + 1), 0x1234);
		v[n++] = period__sig(0, 1024ULL * (i + 1), 0x1235);
	}
	assert_all_distinct(v, n);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(detect__exact_periods__period_and_phase_found),
		cmocka_unit_test(reducing__a_step_of_gathers_alone__the_cycle_that_reduces),
		cmocka_unit_test(reducing__a_barrier_every_few_steps__an_extra_not_a_step),
		cmocka_unit_test(detect__no_gaps__phase_zero),
		cmocka_unit_test(detect__one_huge_gap_elsewhere__phase_by_median),
		cmocka_unit_test(detect__max_period_caps_search__no_longer_period),
		cmocka_unit_test(detect__extra_and_missing_collectives__period_found_not_certain),
		cmocka_unit_test(detect__noise_at_n_4p__period_found_not_certain),
		cmocka_unit_test(detect__grad_accumulation__optimizer_step_phase_after_big),
		cmocka_unit_test(detect__grad_accumulation_8_equal_buckets__optimizer_step),
		cmocka_unit_test(detect__periodic_eval_steps__training_period),
		cmocka_unit_test(detect__equal_buckets_eval_cycle_two_stalls__training_step),
		cmocka_unit_test(detect__periodic_eval_steps_long_run__training_period),
		cmocka_unit_test(detect__eval_blocks__the_step_not_their_cycle),
		cmocka_unit_test(detect__extras_alike_to_the_step__the_step_not_their_cycle),
		cmocka_unit_test(detect__all_different__low_confidence_no_period),
		cmocka_unit_test(detect__equal_buckets__step_from_pauses),
		cmocka_unit_test(detect__one_allreduce_a_step__period_one),
		cmocka_unit_test(detect__fsdp__all_gathers_then_reduce_scatters),
		cmocka_unit_test(detect__tensor_and_data_parallel__step_ends_after_dp),
		cmocka_unit_test(detect__tp_layers_alike_pauses_alike__step_from_the_dp_fold),
		cmocka_unit_test(detect__one_tp_layer_backward_longest__step_ends_at_the_dp_fold),
		cmocka_unit_test(detect__short_job_two_preemptions_last__the_iteration),
		cmocka_unit_test(detect__pipeline_sends_and_receives__micro_batches_in_one_step),
		cmocka_unit_test(detect__equal_buckets_and_periodic_eval__training_step),
		cmocka_unit_test(detect__grad_accumulation_equal_buckets_at_the_end__step),
		cmocka_unit_test(detect__n_too_small__einval),
		cmocka_unit_test(detect__period_needs_three_repeats__not_found_in_two),
		cmocka_unit_test(sig__same_inputs__same_signature),
		cmocka_unit_test(sig__op_bytes_or_comm_differ__signature_differs),
		cmocka_unit_test(sig__many_bucket_sizes__no_collision),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
