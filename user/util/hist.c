// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Histogram math: diffs of cumulative snapshots and bucket-interpolated quantiles. */
#include <math.h>
#include "hist.h"

void hist__add(struct rs_hist *h, uint64_t ns)
{
	h->slots[hist__bucket(ns)]++;
	h->count++;
	h->sum_ns += ns;
}

unsigned int hist__bucket(uint64_t v)
{
	unsigned int b = v ? 63 - __builtin_clzll(v) : 0;

	return b >= RS_HIST_SLOTS ? RS_HIST_SLOTS - 1 : b;
}

static uint64_t sat_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

void hist__diff(const struct rs_hist *now, const struct rs_hist *prev, struct rs_hist *out)
{
	int i;

	for (i = 0; i < RS_HIST_SLOTS; i++)
		out->slots[i] = sat_sub(now->slots[i], prev->slots[i]);
	out->count = sat_sub(now->count, prev->count);
	out->sum_ns = sat_sub(now->sum_ns, prev->sum_ns);
}

uint64_t hist__quantile(const struct rs_hist *h, double q)
{
	uint64_t total = 0, seen = 0, lo, hi;
	double target, frac;
	int i;

	for (i = 0; i < RS_HIST_SLOTS; i++)
		total += h->slots[i];
	if (!total || !(q > 0))
		return 0;
	if (q > 1)
		q = 1;
	target = q * (double)total;
	for (i = 0; i < RS_HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		if ((double)(seen + h->slots[i]) >= target) {
			lo = i ? 1ULL << i : 0;
			hi = 1ULL << (i + 1);
			frac = (target - (double)seen) / (double)h->slots[i];
			/* stay inside the bucket: hi itself belongs to the next one */
			return lo + (uint64_t)llround(frac * (double)(hi - 1 - lo));
		}
		seen += h->slots[i];
	}
	return 1ULL << RS_HIST_SLOTS;
}
