/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Step boundaries without instrumentation: the period of a rank's collective signatures. */
#ifndef RS_PERIOD_H
#define RS_PERIOD_H

#include <stdint.h>

#define PERIOD_MAX		512
#define PERIOD_MIN_REPEATS	3	/* a period must be seen this many times */
#define PERIOD_THRESHOLD	0.85	/* fraction of positions that must repeat */
#define PERIOD_MARGIN		0.10	/* a multiple must repeat this much better to win */
#define PERIOD_FLOOR		0.50	/* below this best score nothing repeats */
#define PERIOD_DIVISOR_MIN	0.60	/* a divisor must repeat this well to replace the period */

struct period_result {
	int period;		/* collectives per step; 0 when nothing repeats */
	int phase;		/* steps end after the collective at index phase (mod period) */
	double confidence;	/* fraction of positions i with sig[i] == sig[i - period] */
};

/* Find the period p (1..max_period, at most n / PERIOD_MIN_REPEATS) of the signatures: the
 * smallest scoring PERIOD_THRESHOLD, or a multiple of it scoring PERIOD_MARGIN better, else
 * the best-scoring one; period 0 if even the best is under PERIOD_FLOOR. Then a divisor of it
 * that repeats PERIOD_DIVISOR_MIN and ends at pauses at least 70% as long replaces it (eval
 * collectives every few steps make the eval cycle score best). An extra or missing collective
 * costs about a period's worth of positions. The phase is the
 * position whose following gap (gap[i]: exit of i to entry of i + 1, n - 1 values) has the
 * largest median over the periods: the step boundary is the longest recurring pause.
 * Returns 0, or -EINVAL when n is too small to see any period. */
int period__detect(const uint64_t *sig, const uint64_t *gap, int n, int max_period,
		   struct period_result *out);

/* A collective's signature: its op, bytes and communicator, hashed. */
uint64_t period__sig(unsigned int op, uint64_t bytes, uint64_t comm_hash);

#endif /* RS_PERIOD_H */
