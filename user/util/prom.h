/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Prometheus text exposition (format 0.0.4): a small streaming writer, tested byte for byte. */
#ifndef RS_PROM_H
#define RS_PROM_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "rankscope.h"

struct prom {
	char *buf;
	size_t len;
	size_t cap;
	int err;	/* sticky -ENOMEM */
	size_t max_series;	/* sample lines per document; 0: no cap */
	size_t series;		/* sample lines written since the reset */
	uint64_t over;		/* sample lines left out by the cap since the reset */
};

/* With max_series set, samples past the cap are left out and counted in over; a histogram
 * is kept or left out whole. */

/* Labels are given as a NULL-terminated array of name, value pairs: { "rank", "3", NULL }. */

void prom__init(struct prom *p);
void prom__reset(struct prom *p);
void prom__free(struct prom *p);

/* A NULL-ended label list, name and value pairs: LABELS("job_id", id, "rank", r). */
#define LABELS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* "# HELP name help" and "# TYPE name type", once per metric family, before its samples. */
void prom__family(struct prom *p, const char *name, const char *type, const char *help);

/* One sample line. Label values are escaped (\\, \", \n); NaN and infinities are spelled. */
void prom__sample(struct prom *p, const char *name, const char *const *labels, double value);

/* A histogram from per-bucket (not cumulative) counts with upper bounds bounds[0..n-1]:
 * cumulative name_bucket{le} lines, le="+Inf" (= count), name_sum and name_count. */
void prom__histogram(struct prom *p, const char *name, const char *const *labels,
		     const uint64_t *counts, const double *bounds, int n, double sum,
		     uint64_t count);

/* The kernel's log2(ns) histogram as a histogram in seconds: bucket b holds [2^b, 2^(b+1)) ns,
 * so its le is 2^(b+1) ns. Every series gets the same le set: 1.024us (all below), then powers
 * of two up to 2^39 ns; the last slot, which also holds the overflow, counts only in +Inf. */
void prom__log2_hist(struct prom *p, const char *name, const char *const *labels,
		     const struct rs_hist *h);

/* Format v as Prometheus does: shortest text that reads back as v. Returns buf. */
const char *prom__value(double v, char *buf, size_t n);

#endif /* RS_PROM_H */
