/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Math on the kernel's cumulative log2 histograms. */
#ifndef RS_HIST_H
#define RS_HIST_H

#include <stdint.h>
#include <linux/types.h>
#include "rankscope.h"

/* The bucket the kernel puts v in (floor(log2(v)), 0 for 0 and 1, clamped). */
unsigned int hist__bucket(uint64_t v);

/* Count one value of ns in h, as the kernel does. */
void hist__add(struct rs_hist *h, uint64_t ns);

/* out = now - prev, per bucket, saturating at 0 (a map re-created under us reads as reset). */
void hist__diff(const struct rs_hist *now, const struct rs_hist *prev, struct rs_hist *out);

/* Estimate the q-quantile (0 < q <= 1) in ns, interpolating linearly inside the bucket.
 * Returns 0 for an empty histogram. */
uint64_t hist__quantile(const struct rs_hist *h, double q);

#endif /* RS_HIST_H */
