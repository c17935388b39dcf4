// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Prometheus text exposition writer. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prom.h"
#include "utf8.h"

void prom__init(struct prom *p)
{
	memset(p, 0, sizeof(*p));
}

void prom__reset(struct prom *p)
{
	p->len = 0;
	p->err = 0;
	p->series = 0;
	p->over = 0;
	if (p->buf)
		p->buf[0] = '\0';
}

void prom__free(struct prom *p)
{
	free(p->buf);
	prom__init(p);
}

static void put(struct prom *p, const char *s, size_t n)
{
	size_t cap;
	char *nb;

	if (p->err)
		return;
	if (p->len + n + 1 > p->cap) {
		cap = p->cap ? p->cap : 4096;
		while (cap < p->len + n + 1)
			cap *= 2;
		nb = realloc(p->buf, cap);
		if (!nb) {
			p->err = -ENOMEM;
			return;
		}
		p->buf = nb;
		p->cap = cap;
	}
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = '\0';
}

static void puts_(struct prom *p, const char *s)
{
	put(p, s, strlen(s));
}

/* label values: \\ \" \n; HELP text: \\ \n. Text that is not UTF-8 (a job id or a name
 * from a container) becomes U+FFFD: a parser refuses the whole exposition for one bad byte. */
static void escaped(struct prom *p, const char *s, int quote)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i, l;

	for (i = 0; i < n; i += l ? l : 1) {
		l = u[i] < 0x80 ? 1 : utf8__len(u + i, n - i);
		if (!l)
			puts_(p, "\xef\xbf\xbd");	/* U+FFFD */
		else if (u[i] == '\\')
			puts_(p, "\\\\");
		else if (u[i] == '\n')
			puts_(p, "\\n");
		else if (quote && u[i] == '"')
			puts_(p, "\\\"");
		else
			put(p, s + i, l);
	}
}

void prom__family(struct prom *p, const char *name, const char *type, const char *help)
{
	puts_(p, "# HELP ");
	puts_(p, name);
	puts_(p, " ");
	escaped(p, help, 0);
	puts_(p, "\n# TYPE ");
	puts_(p, name);
	puts_(p, " ");
	puts_(p, type);
	puts_(p, "\n");
}

const char *prom__value(double v, char *buf, size_t n)
{
	int prec;

	if (isnan(v))
		snprintf(buf, n, "NaN");
	else if (isinf(v))
		snprintf(buf, n, v > 0 ? "+Inf" : "-Inf");
	else if (fabs(v) < 1e15 && v == (double)(long long)v)	/* in range before the cast */
		snprintf(buf, n, "%lld", (long long)v);
	else
		/* the shortest text that reads back as v: a double has 15-17 significant digits,
		 * and %g drops trailing zeros, so 15 gives what a smaller precision would */
		for (prec = 15; prec <= 17; prec++) {
			snprintf(buf, n, "%.*g", prec, v);
			if (strtod(buf, NULL) == v)
				break;
		}
	return buf;
}

static void labels_(struct prom *p, const char *const *labels, const char *le)
{
	int first = 1, i;

	if ((!labels || !labels[0]) && !le)
		return;
	puts_(p, "{");
	for (i = 0; labels && labels[i] && labels[i + 1]; i += 2) {
		if (!first)
			puts_(p, ",");
		first = 0;
		puts_(p, labels[i]);
		puts_(p, "=\"");
		escaped(p, labels[i + 1], 1);
		puts_(p, "\"");
	}
	if (le) {
		if (!first)
			puts_(p, ",");
		puts_(p, "le=\"");
		puts_(p, le);
		puts_(p, "\"");
	}
	puts_(p, "}");
}

static void line(struct prom *p, const char *name, const char *suffix, const char *const *labels,
		 const char *le, double v)
{
	char b[40];

	puts_(p, name);
	puts_(p, suffix);
	labels_(p, labels, le);
	puts_(p, " ");
	puts_(p, prom__value(v, b, sizeof(b)));
	puts_(p, "\n");
}

/* Room for lines more sample lines under the cap? Counts them either way. */
static bool room(struct prom *p, size_t lines)
{
	if (p->max_series && p->series + lines > p->max_series) {
		p->over += lines;
		return false;
	}
	p->series += lines;
	return true;
}

void prom__sample(struct prom *p, const char *name, const char *const *labels, double value)
{
	if (room(p, 1))
		line(p, name, "", labels, NULL, value);
}

/* le_text: each bound's text (NULL: format bounds[] here). */
static void histogram(struct prom *p, const char *name, const char *const *labels,
		      const uint64_t *counts, const double *bounds, const char *const *le_text,
		      int n, double sum, uint64_t count)
{
	uint64_t cum = 0;
	char le[40];
	int i;

	if (!room(p, n + 3))	/* a histogram goes whole or not at all */
		return;
	for (i = 0; i < n; i++) {
		cum += counts[i];
		line(p, name, "_bucket", labels,
		     le_text ? le_text[i] : prom__value(bounds[i], le, sizeof(le)), cum);
	}
	/* +Inf is the total; never below the finite buckets even if the sources disagree */
	line(p, name, "_bucket", labels, "+Inf", count > cum ? count : cum);
	line(p, name, "_sum", labels, NULL, sum);
	line(p, name, "_count", labels, NULL, count > cum ? count : cum);
}

void prom__histogram(struct prom *p, const char *name, const char *const *labels,
		     const uint64_t *counts, const double *bounds, int n, double sum,
		     uint64_t count)
{
	histogram(p, name, labels, counts, bounds, NULL, n, sum, count);
}

/*
 * Every series of a name has the same le set, so sums across ranks stay monotonic: the first
 * bucket (le 1.024us) holds everything below it, then one per power of two up to 2^39 ns
 * (550 s). The last slot also holds what overflowed it, so it goes only to +Inf.
 */
#define PROM_HIST_LO	9

/* The le texts of every log2 histogram, made once: each /metrics has thousands of buckets. */
static char log2_le[RS_HIST_SLOTS][40];
static const char *log2_le_ptr[RS_HIST_SLOTS];
static pthread_once_t log2_once = PTHREAD_ONCE_INIT;

static void log2_le_init(void)
{
	int b, n;

	/* bucket 0 holds slots 0..PROM_HIST_LO, so its bound is slot PROM_HIST_LO's */
	for (n = 0, b = PROM_HIST_LO; b < RS_HIST_SLOTS - 1; b++, n++) {
		prom__value(ldexp(1.0, b + 1) / 1e9, log2_le[n], sizeof(log2_le[n]));
		log2_le_ptr[n] = log2_le[n];
	}
}

void prom__log2_hist(struct prom *p, const char *name, const char *const *labels,
		     const struct rs_hist *h)
{
	uint64_t counts[RS_HIST_SLOTS];
	int b, n = 0;

	pthread_once(&log2_once, log2_le_init);
	counts[0] = 0;
	for (b = 0; b < RS_HIST_SLOTS - 1; b++) {
		if (b > PROM_HIST_LO)
			counts[++n] = 0;
		counts[n] += h->slots[b];
	}
	histogram(p, name, labels, counts, NULL, log2_le_ptr, n + 1, h->sum_ns / 1e9, h->count);
}
