/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Step boundaries without instrumentation: the period of a rank's collective signatures. */
#ifndef RS_PERIOD_H
#define RS_PERIOD_H

#include <stdbool.h>
#include <stdint.h>

#define PERIOD_MAX		512
#define PERIOD_MIN_REPEATS	3	/* a period must be seen this many times */
#define PERIOD_THRESHOLD	0.85	/* fraction of positions that must repeat */
#define PERIOD_FLOOR		0.50	/* below this best score nothing repeats */
#define PERIOD_DIVISOR_MIN	0.60	/* a divisor must repeat this well to replace the period */
#define PERIOD_NEAR		0.05	/* a period this close to the best score repeats as well */
#define PERIOD_GAP_FLOOR_NS	20000	/* pauses under 20 us are all alike (probe jitter) */
#define PERIOD_GAP_CONSISTENT	0.60	/* steps' end pauses this often one or two steps apart */
#define PERIOD_GAP_STRICT	0.50	/* ... and this often exactly one step apart */
#define PERIOD_GAP_LIFT		1.5	/* ... which is this many times the share of such pauses */
#define PERIOD_GAP_END_RATIO	1.25	/* ... and typically this much over the others of the step */
#define PERIOD_GAP_CONTRAST	1.15	/* a step's end pause over the longest other in its step */
#define PERIOD_BIG_PAUSE	5	/* a pause this many times the median stands out */
#define PERIOD_WAIT_MAX		512	/* wait no longer than this for standing-out pauses to recur */
#define PERIOD_ALIKE		2	/* pauses within this factor of the median are alike */
#define PERIOD_WAIT_ALIKE	128	/* equal signatures, unlike pauses: wait this long for a step */

struct period_result {
	int period;		/* collectives per step; 0 when nothing repeats */
	int phase;		/* steps end after the collective at index phase (mod period) */
	double confidence;	/* fraction of positions i with sig[i] == sig[i - period] */
	double late_confidence;	/* the same over the later half of the signatures */
	int late_misses;	/* positions of the later half where it does not repeat */
	uint64_t long_ns;	/* steps found from pauses: the median pause that ends one;
				 * 0: from signatures alone */
};

/* Find the step period p (1..max_period, at most n / PERIOD_MIN_REPEATS) of the signatures:
 * the period of the runs of equal signatures (FSDP's K all-gathers then K reduce-scatters),
 * else the smallest scoring PERIOD_THRESHOLD or within PERIOD_NEAR of the best; period 0 if
 * even the best is under PERIOD_FLOOR. Signatures alone cannot split N equal buckets into
 * steps, so a multiple of that period whose steps end at their longest pause (period__step_end
 * against the others of the step), one step apart in most steps, is the step (long_ns is then
 * set). Otherwise a shorter period or a divisor that repeats PERIOD_DIVISOR_MIN and ends at
 * pauses at least 70% as long replaces it (eval collectives every few steps make the eval
 * cycle score best). The phase is the position whose following gap (gap[i]: exit of i to
 * entry of i + 1, n - 1 values) is typically the step's end.
 * Returns 0; -EAGAIN when one or two pauses stand out that the steps found do not end at
 * (steps longer than n / PERIOD_MIN_REPEATS may be coming: call again with more), or when
 * every signature is alike, no step shows in the pauses, and the pauses are not alike
 * either, before PERIOD_WAIT_ALIKE collectives; -EINVAL when n is too small to see any
 * period. */
int period__detect(const uint64_t *sig, const uint64_t *gap, int n, int max_period,
		   struct period_result *out);

/* period__detect, told which signatures other communicators' collectives came before
 * (fold[i]; NULL: none). When no pause ends the steps and those come every d main collectives
 * (d > 1, a data-parallel all-reduce between tensor-parallel layers all alike), d is the step
 * and it ends before them. last: no more collectives will come, so never -EAGAIN; the
 * pauses seen still choose the step (two preemptions in a short job are not a longer one). */
int period__detect_folded(const uint64_t *sig, const uint64_t *gap, const bool *fold, int n,
			  int max_period, bool last, struct period_result *out);

/* What every step holds: its gradients' reductions (red[i]: the collective reduces), and the
 * collectives it makes on other communicators (fold[i]: some came before collective i; TP+DP's
 * data-parallel all-reduce). When the n collectives hold marks but under PERIOD_THRESHOLD of
 * the blocks of out->period in a row hold one, that period is a part of the step (a MoE
 * layer's dispatch and combine, ended by the experts' compute as a step is by its longest
 * pause; a TP layer's all-reduces): out becomes the smallest longer period whose blocks do
 * hold one and that repeats within PERIOD_NEAR of the best of those, ending at the last mark
 * (before it: the step ends before the collective a fold came before). Returns 0, and out as
 * it was when its blocks hold marks or there are none; -EAGAIN when no period seen
 * PERIOD_MIN_REPEATS times does, or (unless last: no more will come) when it repeats less
 * well than the part (the step may be longer than what was seen: call again with more). */
int period__marked(const uint64_t *sig, const bool *mark, int n, bool before, bool last,
		   struct period_result *out);

/* Is a pause of after the end of a step whose other pauses were at most inside? Pauses
 * under PERIOD_GAP_FLOOR_NS are all alike; an end is PERIOD_GAP_CONTRAST times longer. */
bool period__step_end(uint64_t after, uint64_t inside);

/* A collective's signature: its op, bytes and communicator, hashed. */
uint64_t period__sig(unsigned int op, uint64_t bytes, uint64_t comm_hash);

#endif /* RS_PERIOD_H */
