// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * CUPTI time to CLOCK_MONOTONIC, at the time a record was made.
 *
 * CUPTI's clock is CLOCK_REALTIME unless a client registers a timestamp callback, and any
 * client may register one at any time (Kineto installs raw TSC ticks): the clock can step, and
 * can change its domain and rate, under us. So the library calibrates every tick (100 ms) and
 * keeps the points, and a record converts by the two points around its own timestamp, not by
 * the clock of the moment it is delivered.
 *
 * Points come in epochs: a point that does not continue the line of the epoch before it (the
 * clock went back, stepped, or changed rate) starts a new one. A timestamp inside an epoch's
 * points interpolates between its neighbours; one past the newest point waits for the next
 * calibration (-EAGAIN); one in the gap between two epochs (made after the old epoch's last
 * point, before the new one's first) extrapolates from the side it belongs to, and must land
 * in that gap in host time. Anything else (before every point, from the future, claimed by two
 * epochs) is rejected: -ERANGE, counted by the caller.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rs_cupti.h"

#define TL_TOL_NS	100000ULL	/* a point off its epoch's line by more than this + 1e-3
					 * of the time since the last point starts a new epoch */
#define TL_SLOPE_MIN	0.01		/* CUPTI ticks per ns outside [1/100, 100]: no clock */
#define TL_SLOPE_MAX	100.0
#define TL_FUTURE_NS	2000000000ULL	/* past the newest point: wait this long, then reject */
#define TL_FIRST_NS	1000000ULL	/* before the first point ever: made before we enabled */
#define TL_BASE_PTS	10		/* the slope of an epoch's last 10 points (1 s) */

static const struct rsc_cal *pt(const struct rsc_timeline *tl, unsigned int i)
{
	return &tl->pt[(tl->head + i) % RSC_CAL_POINTS];
}

/* The first point (index) of the epoch of point i */
static unsigned int epoch_first(const struct rsc_timeline *tl, unsigned int i)
{
	uint32_t e = pt(tl, i)->epoch;

	while (i > 0 && pt(tl, i - 1)->epoch == e)
		i--;
	return i;
}

/* mono per CUPTI tick over points [a, b] of one epoch, from at most TL_BASE_PTS points back */
static double slope(const struct rsc_timeline *tl, unsigned int a, unsigned int b)
{
	const struct rsc_cal *p, *q;

	if (b > a + TL_BASE_PTS)
		a = b - TL_BASE_PTS;
	p = pt(tl, a);
	q = pt(tl, b);
	if (a == b || q->cupti <= p->cupti)
		return 0;
	return (double)(q->mono - p->mono) / (double)(q->cupti - p->cupti);
}

static bool slope_ok(double s)
{
	return s >= TL_SLOPE_MIN && s <= TL_SLOPE_MAX;
}

void rsc_timeline_reset(struct rsc_timeline *tl)
{
	memset(tl, 0, sizeof(*tl));
}

int rsc_timeline_add(struct rsc_timeline *tl, uint64_t cupti, uint64_t mono, uint64_t err)
{
	const struct rsc_cal *q;
	struct rsc_cal *p;
	bool fresh = true;
	unsigned int a;
	double s, pred;
	uint64_t dt;

	if (!cupti || !mono)
		return -EINVAL;
	if (tl->n) {
		q = pt(tl, tl->n - 1);
		if (mono < q->mono)
			return -EINVAL;	/* CLOCK_MONOTONIC does not go back: a bad read */
		a = epoch_first(tl, tl->n - 1);
		dt = mono - q->mono;
		if (cupti > q->cupti) {
			if (a == tl->n - 1) {
				/* a second point: its rate must be a clock's */
				fresh = !slope_ok((double)dt / (double)(cupti - q->cupti));
			} else {
				s = slope(tl, a, tl->n - 1);
				pred = (double)q->mono + (double)(cupti - q->cupti) * s;
				fresh = !slope_ok(s) ||
					__builtin_fabs(pred - (double)mono) >
					(double)(TL_TOL_NS + err + q->err) + 1e-3 * (double)dt;
			}
		}
	}
	if (tl->n == RSC_CAL_POINTS) {
		/* the oldest goes; its epoch, if it goes on, no longer knows where it began */
		if (pt(tl, 1)->epoch == pt(tl, 0)->epoch)
			tl->truncated = true;
		else
			tl->truncated = false;
		tl->head = (tl->head + 1) % RSC_CAL_POINTS;
		tl->n--;
	}
	if (fresh && tl->n)
		tl->epochs++;
	p = &tl->pt[(tl->head + tl->n) % RSC_CAL_POINTS];
	p->cupti = cupti;
	p->mono = mono;
	p->err = err;
	p->epoch = tl->epochs;
	tl->n++;
	return fresh && tl->n > 1;
}

/* A candidate for t from the epoch [a, b]: 0 and *mono, -EAGAIN, or -ERANGE (none). */
static int from_epoch(const struct rsc_timeline *tl, unsigned int a, unsigned int b, uint64_t t,
		      uint64_t *mono)
{
	const struct rsc_cal *lo = pt(tl, a), *hi = pt(tl, b), *x, *y;
	bool newest = b == tl->n - 1, oldest = a == 0;
	unsigned int l, r, m;
	double s = slope(tl, a, b), v;

	if (t >= lo->cupti && t <= hi->cupti) {
		if (a == b) {
			*mono = lo->mono;
			return 0;
		}
		/* the last point at or before t, then interpolate to the next */
		l = a;
		r = b;
		while (r - l > 1) {
			m = l + (r - l) / 2;
			if (pt(tl, m)->cupti <= t)
				l = m;
			else
				r = m;
		}
		x = pt(tl, l);
		y = pt(tl, r);
		*mono = x->mono + (uint64_t)((double)(t - x->cupti) *
					     (double)(y->mono - x->mono) /
					     (double)(y->cupti - x->cupti));
		return 0;
	}
	if (t > hi->cupti) {
		if (a == b || !slope_ok(s))
			return newest ? -EAGAIN : -ERANGE;
		v = (double)hi->mono + (double)(t - hi->cupti) * s;
		if (newest)
			return v - (double)hi->mono <= (double)TL_FUTURE_NS ? -EAGAIN : -ERANGE;
		/* in the gap: made before the next epoch's first point */
		x = pt(tl, b + 1);
		if (v > (double)(x->mono + x->err))
			return -ERANGE;
		*mono = (uint64_t)v;
		return 0;
	}
	/* t < lo->cupti */
	if (a == b || !slope_ok(s))
		return newest ? -EAGAIN : -ERANGE;
	v = (double)lo->mono - (double)(lo->cupti - t) * s;
	if (v <= 0)
		return -ERANGE;
	if (!oldest) {
		x = pt(tl, a - 1);	/* the last point of the epoch before */
		if (v + (double)x->err < (double)x->mono)
			return -ERANGE;
	} else if (!tl->truncated) {
		/* the first epoch ever: nothing is made before its first point */
		if (v + (double)(TL_FIRST_NS + lo->err) < (double)lo->mono)
			return -ERANGE;
	} else if ((double)lo->mono - v > (double)RSC_CAL_KEEP_NS) {
		return -ERANGE;		/* older than the points kept: no line to trust */
	}
	*mono = (uint64_t)v;
	return 0;
}

int rsc_timeline_map(const struct rsc_timeline *tl, uint64_t t, uint64_t *mono)
{
	unsigned int a, b;
	uint64_t m, found = 0;
	int r, n = 0;
	bool again = false;

	if (!t || !tl->n)
		return tl->n ? -ERANGE : -EAGAIN;
	for (b = tl->n - 1;; b = a - 1) {
		a = epoch_first(tl, b);
		r = from_epoch(tl, a, b, t, &m);
		if (r == -EAGAIN)
			again = true;
		else if (!r && n++ == 0)
			found = m;
		if (!a)
			break;
	}
	if (again)
		return -EAGAIN;
	if (n != 1)
		return -ERANGE;	/* none, or two epochs claim it */
	*mono = found;
	return 0;
}
