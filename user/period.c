// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Period detection over collective signatures; pure, unit-tested on synthetic sequences. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "period.h"

uint64_t period__sig(unsigned int op, uint64_t bytes, uint64_t comm_hash)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = (h ^ op) * 0x100000001b3ULL;
	h = (h ^ bytes) * 0x100000001b3ULL;
	h = (h ^ comm_hash) * 0x100000001b3ULL;
	return h;
}

static double score(const uint64_t *sig, int n, int p)
{
	int i, same = 0;

	for (i = p; i < n; i++)
		same += sig[i] == sig[i - p];
	return (double)same / (n - p);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The position (mod p) followed by the longest typical pause, and that pause (median). */
static int phase_gap(const uint64_t *gap, int n, int p, int *phase, uint64_t *pause)
{
	uint64_t *tmp, med;
	int j, k, m;

	*phase = 0;
	*pause = 0;
	tmp = malloc(sizeof(*tmp) * (n / p + 1));
	if (!tmp)
		return -ENOMEM;
	for (j = 0; j < p; j++) {
		for (m = 0, k = j; k < n - 1; k += p)
			tmp[m++] = gap ? gap[k] : 0;
		if (!m)
			continue;
		qsort(tmp, m, sizeof(*tmp), cmp_u64);
		med = tmp[m / 2];
		if (med > *pause) {
			*pause = med;
			*phase = j;
		}
	}
	free(tmp);
	return 0;
}

int period__detect(const uint64_t *sig, const uint64_t *gap, int n, int max_period,
		   struct period_result *out)
{
	int p, best_p = 0, limit, phase, d_phase, err;
	double s, best = -1;
	uint64_t pause, d_pause;

	memset(out, 0, sizeof(*out));
	if (n < PERIOD_MIN_REPEATS)
		return -EINVAL;
	limit = n / PERIOD_MIN_REPEATS;
	if (limit > max_period)
		limit = max_period;
	/* The smallest period that repeats well enough (multiples of it score as well), unless
	 * a multiple of it repeats clearly better: 16 equal buckets and one optimizer
	 * all-reduce are one step of 17, not 17 steps of 1. */
	for (p = 1; p <= limit; p++) {
		s = score(sig, n, p);
		if (s >= PERIOD_THRESHOLD) {
			best_p = p;
			best = s;
			break;
		}
		if (s > best + 1e-9) {
			best = s;
			best_p = p;
		}
	}
	if (!best_p)
		return -EINVAL;
	if (best < PERIOD_FLOOR) {
		out->confidence = best;
		return 0;	/* nothing repeats: period 0 */
	}
	for (p = 2 * best_p; best >= PERIOD_THRESHOLD && p <= limit; p += best_p) {
		s = score(sig, n, p);
		if (s >= best + PERIOD_MARGIN) {
			best_p = p;
			best = s;
			break;
		}
	}
	err = phase_gap(gap, n, best_p, &phase, &pause);
	if (err)
		return err;
	/*
	 * A divisor that repeats fairly well and still ends at pauses as long is the real step:
	 * periodic eval collectives made the longer cycle score better. The grad-accumulation
	 * case fails this test: period 1 there ends mostly at the short pauses between buckets.
	 */
	for (p = 1; gap && p < best_p; p++) {
		if (best_p % p || (s = score(sig, n, p)) < PERIOD_DIVISOR_MIN)
			continue;
		if (phase_gap(gap, n, p, &d_phase, &d_pause))
			break;
		if (d_pause * 10 >= pause * 7) {
			best_p = p;
			best = s;
			phase = d_phase;
			break;
		}
	}
	out->period = best_p;
	out->confidence = best;
	out->phase = phase;
	return 0;
}
