// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Period detection over collective signatures and the pauses between them; pure, unit-tested
 * on synthetic sequences. */
#include <errno.h>
#include <stdbool.h>
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

/*
 * The position (mod p) followed by the longest typical pause, and that pause (median). low
 * (when not NULL): the longest pause that follows a position nearly every time (its lower
 * quartile): with few steps of p seen, a long pause by chance in two of three (a rank's
 * intermittent stall) lifts a median, not that.
 */
static int phase_gap_low(const uint64_t *gap, int n, int p, int *phase, uint64_t *pause,
			 uint64_t *low)
{
	uint64_t *tmp, med;
	int j, k, m;

	*phase = 0;
	*pause = 0;
	if (low)
		*low = 0;
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
		if (low && tmp[m / 4] > *low)
			*low = tmp[m / 4];
	}
	free(tmp);
	return 0;
}

static int phase_gap(const uint64_t *gap, int n, int p, int *phase, uint64_t *pause)
{
	return phase_gap_low(gap, n, p, phase, pause, NULL);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* m[i] = max of v over [i - r, i] (clipped at 0), for all i: O(n) whatever r (van Herk).
 * The window spans at most two blocks of r + 1: the tail of one (suf), the head of the next
 * (pre); a window inside one block starts at its first element, so pre alone is its max. */
static void window_max(const uint64_t *v, int n, int r, uint64_t *m, uint64_t *pre, uint64_t *suf)
{
	int w = r + 1, i, lo;

	for (i = 0; i < n; i++)
		pre[i] = i % w && v[i] < pre[i - 1] ? pre[i - 1] : v[i];
	for (i = n - 1; i >= 0; i--)
		suf[i] = (i + 1) % w && i + 1 < n && v[i] < suf[i + 1] ? suf[i + 1] : v[i];
	for (i = 0; i < n; i++) {
		lo = i - r < 0 ? 0 : i - r;
		m[i] = lo / w == i / w || suf[lo] < pre[i] ? pre[i] : suf[lo];
	}
}

bool period__step_end(uint64_t after, uint64_t inside)
{
	if (inside < PERIOD_GAP_FLOOR_NS)
		inside = PERIOD_GAP_FLOOR_NS;
	return after > PERIOD_GAP_FLOOR_NS && after >= PERIOD_GAP_CONTRAST * (double)inside;
}

/*
 * The period the pauses show, a multiple of p0 (2..limit): steps of d end at their longest
 * pause (the longest of d in a row), and the distance from one such pause to the next is d
 * in most cases. Local, so it holds when step lengths vary 2x from batch to batch, and an
 * inserted eval collective shifts the positions after it but not the distances. Returns d,
 * 0 for none; *phase: the position (mod d) of most of those pauses, *pause their median.
 */
static int gap_period(const uint64_t *gap, int n, int p0, int limit, int *phase_out,
		      uint64_t *pause_out, double *share_out)
{
	uint64_t *m = NULL, *pre = NULL, *suf = NULL, *b = NULL;
	double *ratio = NULL;
	int *res = NULL, d, i, nsp, hit, strict, nb, k, best = 0;
	bool *is = NULL;
	double share;

	*phase_out = 0;
	*pause_out = 0;
	*share_out = 0;
	if (!gap || n < 2 * PERIOD_MIN_REPEATS || p0 < 1)
		return 0;
	m = malloc(sizeof(*m) * n);
	pre = malloc(sizeof(*pre) * n);
	suf = malloc(sizeof(*suf) * n);
	b = malloc(sizeof(*b) * n);
	res = calloc(limit + 1, sizeof(*res));
	is = calloc(n, sizeof(*is));
	ratio = malloc(sizeof(*ratio) * n);
	if (!m || !pre || !suf || !b || !res || !is || !ratio)
		goto out;
	for (d = p0 < 2 ? 2 : p0; d <= limit && !best; d += d % p0 ? p0 - d % p0 : p0) {
		/* the longest of the d - 1 pauses before each */
		window_max(gap, n, d - 2, m, pre, suf);
		memset(res, 0, sizeof(*res) * (limit + 1));
		/* a step's end: clearly the longest of its pauses, and a step or two after another
		 * one (a preemption inside one step takes its place, but not the next one's) */
		for (nsp = hit = strict = nb = 0, i = 0; i < n; i++) {
			is[i] = i && period__step_end(gap[i], m[i - 1]);
			if (!is[i])
				continue;
			if (i >= 2 * d) {
				nsp++;
				strict += is[i - d];
				hit += is[i - d] || is[i - 2 * d];
			}
			b[nb] = gap[i];
			ratio[nb++] = gap[i] / (double)(m[i - 1] > PERIOD_GAP_FLOOR_NS ?
							m[i - 1] : PERIOD_GAP_FLOOR_NS);
			res[i % d]++;
		}
		/* most steps must show their end, or a few coincidences would do */
		if (nsp < PERIOD_MIN_REPEATS - 1 || nb * 2 < n / d)
			continue;
		share = (double)hit / nsp;
		/* ... and one step apart far more often than ends fall anywhere by chance, and
		 * clearly longer, typically, than jitter makes one pause over its neighbours */
		if (share < PERIOD_GAP_CONSISTENT || strict < nsp * PERIOD_GAP_STRICT ||
		    (double)strict / nsp < PERIOD_GAP_LIFT * nb / n)
			continue;
		qsort(ratio, nb, sizeof(*ratio), cmp_dbl);
		if (ratio[nb / 2] < PERIOD_GAP_END_RATIO)
			continue;
		best = d;
		*share_out = share;
		for (k = 0, i = 1; i < d; i++)
			if (res[i] > res[k])
				k = i;
		*phase_out = k;
		qsort(b, nb, sizeof(*b), cmp_u64);
		*pause_out = b[nb / 2];
	}
out:
	free(m);
	free(pre);
	free(suf);
	free(b);
	free(res);
	free(is);
	free(ratio);
	return best;
}

/*
 * The period of the runs of equal signatures: FSDP's K all-gathers then K reduce-scatters are
 * two runs a step, whatever K, where position by position the period of 1 scores (2K - 2) /
 * 2K. The first and last runs may be cut, so they are left out. Returns the step's length in
 * collectives, 0 when the runs do not repeat (or all are one run).
 */
static int run_period(const uint64_t *sig, int n, int limit)
{
	uint64_t *h = NULL;
	int *len = NULL, nr = 0, i, q, same, best = 0, first, sum;

	h = malloc(sizeof(*h) * n);
	len = malloc(sizeof(*len) * n);
	if (!h || !len)
		goto out;
	for (i = 0; i < n; i++) {
		if (i && sig[i] == sig[i - 1]) {
			len[nr - 1]++;
			continue;
		}
		h[nr] = sig[i];
		len[nr++] = 1;
	}
	if (nr < 3 * PERIOD_MIN_REPEATS)
		goto out;
	for (i = 1; i < nr - 1; i++)
		h[i] = period__sig(len[i], h[i], 0x52554e53);	/* "RUNS" */
	first = 1;
	for (q = 1; q <= (nr - 2) / PERIOD_MIN_REPEATS && !best; q++) {
		for (same = 0, i = first + q; i < nr - 1; i++)
			same += h[i] == h[i - q];
		if ((double)same / (nr - 2 - q) < PERIOD_THRESHOLD)
			continue;
		for (sum = 0, i = first; i < first + q; i++)
			sum += len[i];
		best = sum <= limit ? sum : 0;
		if (!best)
			break;
	}
out:
	free(h);
	free(len);
	return best;
}

/* The share of the pause time in pauses over PERIOD_BIG_PAUSE times med. */
static double big_share(const uint64_t *gap, int n, uint64_t med)
{
	uint64_t big = 0, all = 0;
	int i;

	for (i = 0; i < n; i++) {
		all += gap[i];
		if (gap[i] > PERIOD_BIG_PAUSE * med)
			big += gap[i];
	}
	return all ? (double)big / all : 0;
}

/* The median pause, and how many pauses are over PERIOD_BIG_PAUSE times it. */
static int big_pauses(const uint64_t *gap, int n, uint64_t *median)
{
	uint64_t *t, med;
	int i, nbig = 0;

	*median = 0;
	if (!gap || n < 1)
		return 0;
	t = malloc(sizeof(*t) * n);
	if (!t)
		return 0;
	memcpy(t, gap, sizeof(*t) * n);
	qsort(t, n, sizeof(*t), cmp_u64);
	med = t[n / 2] > PERIOD_GAP_FLOOR_NS ? t[n / 2] : PERIOD_GAP_FLOOR_NS;
	for (i = 0; i < n; i++)
		nbig += t[i] > PERIOD_BIG_PAUSE * med;
	free(t);
	*median = med;
	return nbig;
}

/*
 * The distance (2..limit) between the main collectives that other communicators' collectives
 * came before (fold[i]), in PERIOD_THRESHOLD of the cases: a data-parallel all-reduce once a
 * step between tensor-parallel layers that are all alike. Returns 0 for none; *phase_out:
 * the position (mod d) before most of them, where the step ends.
 */
static int fold_period(const bool *fold, int n, int limit, int *phase_out)
{
	int *cnt = NULL, *pos = NULL, i, last = -1, nd = 0, d, best = 0, k;

	*phase_out = 0;
	if (!fold || limit < 2)
		return 0;
	cnt = calloc(limit + 1, sizeof(*cnt));
	if (!cnt)
		return 0;
	for (i = 0; i < n; i++) {
		if (!fold[i])
			continue;
		if (last >= 0) {
			d = i - last;
			cnt[d <= limit ? d : 0]++;
			nd++;
		}
		last = i;
	}
	for (d = 2; d <= limit; d++)
		if (cnt[d] > cnt[best])
			best = d;
	if (!best || nd < PERIOD_MIN_REPEATS || cnt[best] < PERIOD_THRESHOLD * nd ||
	    !(pos = calloc(best, sizeof(*pos)))) {
		best = 0;
		goto out;
	}
	for (i = 0; i < n; i++)
		pos[i % best] += fold[i];
	for (k = 0, i = 1; i < best; i++)
		if (pos[i] > pos[k])
			k = i;
	*phase_out = (k + best - 1) % best;
out:
	free(cnt);
	free(pos);
	return best;
}

/*
 * Is a cycle of `cycle` collectives (the last one seen) whole steps of `p` plus a few
 * extras (an eval's all-reduce, a save's barrier)? Then some p in a row within it (unit[],
 * when not NULL) hold each of their signatures at least k times fewer than the cycle does,
 * and what is left over (the extras, which may repeat a signature of the step: an eval's
 * loss all-reduce is the step's own) is fewer than the steps (k). FSDP's (reduce-scatter,
 * all-gather) pairs are not its step: the forward's all-gathers leave as many over as pairs.
 * strict: no extra repeats a signature of the step (each k times over, the same k); the
 * places of its collectives then shift by whole steps only.
 */
static bool tiles(const uint64_t *sig, int n, int p, int cycle, bool strict, uint64_t *unit)
{
	const uint64_t *c = sig + n - cycle;
	int st, i, q, k, kk, inT, inC;

	if (n < cycle || p < 1 || p > cycle)
		return false;
	for (st = 0; st + p <= cycle; st++) {
		for (k = -1, i = 0; i < p; i++) {
			for (inT = 0, q = 0; q < p; q++)
				inT += c[st + q] == c[st + i];
			for (inC = 0, q = 0; q < cycle; q++)
				inC += c[q] == c[st + i];
			kk = inC / inT;
			if (strict && (inC % inT || (k >= 0 && kk != k)))
				break;
			k = k < 0 || kk < k ? kk : k;
		}
		if (i < p)
			continue;
		if (k > 0 && cycle - k * p < k) {
			for (i = 0; unit && i < p; i++)
				unit[i] = c[st + i];
			return true;
		}
	}
	return false;
}

/*
 * Is a cycle of `cycle` collectives (the last one seen) m steps of p in a row and one block of
 * extras, fewer than m (an eval's all-reduces every m steps, a checkpoint's barrier)? Read
 * around the cycle from each start: the unit repeats for m whole steps, the rest is one run.
 * However few collectives a step makes, the extras then lower its score below any floor (one
 * all-reduce a step and two for an eval every 5 steps repeat at 4 of 7 positions), yet it is
 * the step. FSDP's all-gathers are not: its reduce-scatters come between them, not together.
 */
static bool tiles_block(const uint64_t *sig, int n, int p, int cycle, uint64_t *unit)
{
	const uint64_t *c = sig + n - cycle;
	int st, i, m;

	if (n < cycle || p < 1 || 2 * p > cycle)
		return false;
	for (st = 0; st < cycle; st++) {
		for (i = p; i < cycle && c[(st + i) % cycle] == c[(st + i - p) % cycle]; i++)
			;
		m = i / p;
		if (m >= 2 && cycle - m * p > 0 && cycle - m * p < m) {
			for (i = 0; i < p; i++)
				unit[i] = c[(st + i) % cycle];
			return true;
		}
	}
	return false;
}

/*
 * phase_gap for a step of p (unit[]) among blocks of extras, which shift the positions after
 * them: a collective's place in the step is read from the p before it (a turn of the unit),
 * not from its index. The place followed by the longest typical pause: *pause (the median),
 * *phase the index (mod p) of its first occurrence. False when no place is seen.
 */
static bool block_gap(const uint64_t *sig, const uint64_t *gap, int n, int p,
		      const uint64_t *unit, int *phase, uint64_t *pause)
{
	uint64_t *v = malloc(sizeof(*v) * n), med;
	int *at = malloc(sizeof(*at) * n), i, q, t, pos, m, k;

	*pause = 0;
	*phase = -1;
	if (!v || !at) {
		free(v);
		free(at);
		return false;
	}
	for (i = 0; i < n; i++)
		at[i] = -1;
	for (i = p - 1; i < n - 1; i++)
		for (t = 0; t < p; t++) {
			for (q = 0; q < p && sig[i - p + 1 + q] == unit[(t + q) % p]; q++)
				;
			if (q == p) {
				at[i] = (t + p - 1) % p;
				break;
			}
		}
	for (pos = 0; pos < p; pos++) {
		for (m = 0, k = -1, i = 0; i < n - 1; i++)
			if (at[i] == pos) {
				v[m++] = gap[i];
				k = k < 0 ? i : k;
			}
		if (!m)
			continue;
		qsort(v, m, sizeof(*v), cmp_u64);
		med = v[m / 2];
		if (med > *pause) {
			*pause = med;
			*phase = k % p;
		}
	}
	free(v);
	free(at);
	return *phase >= 0;
}

/*
 * The step among the periods 1..limit (scores in s[]): the period of the runs of equal
 * signatures, else the smallest period that repeats about as well as any, or the smallest
 * over PERIOD_THRESHOLD (a multiple of the step repeats as well as the step; an extra
 * collective hurts long periods more). Equal buckets repeat at every period, so the pauses
 * decide: when steps of a multiple of that period end at their longest pause, that is the
 * step. Then a divisor that repeats fairly well and ends at pauses as long wins back
 * (periodic eval collectives make a longer cycle score best).
 */
static int choose(const double *s, int limit, const uint64_t *sig, const uint64_t *gap,
		  const bool *fold, int n, int *phase_out, double *conf, uint64_t *long_ns)
{
	double best = -1, want, share;
	uint64_t pause = 0, low, d_pause, g_pause, *unit;
	int p, best_p = 0, phase = 0, d_phase, gp, g_phase, fp, f_phase;

	*long_ns = 0;
	for (p = 1; p <= limit; p++)
		if (s[p] > best + 1e-9)
			best = s[p];
	if (best < PERIOD_FLOOR) {
		*conf = best;
		return 0;
	}
	best_p = run_period(sig, n, limit);
	if (best_p && s[best_p] < PERIOD_DIVISOR_MIN)
		best_p = 0;
	want = best - PERIOD_NEAR;
	for (p = 1; p <= limit && !best_p; p++)
		if (s[p] >= want - 1e-9)
			best_p = p;
	gp = gap_period(gap, n - 1, best_p, limit, &g_phase, &g_pause, &share);
	/* another communicator's collective once a step (a data-parallel all-reduce between
	 * tensor-parallel layers): pauses that end every second step only do so by chance */
	fp = fold_period(fold, n, limit, &f_phase);
	if (fp && gp && gp != fp && gp % fp == 0 && s[fp] >= PERIOD_DIVISOR_MIN) {
		*conf = s[fp];
		*phase_out = f_phase;
		return fp;
	}
	/* the same step both ways: the other communicator's collectives (a data-parallel
	 * all-reduce after the backward) place its end, not the longest pause (the backward's
	 * compute, before the last tensor-parallel all-reduce) */
	if (fp && gp == fp && s[fp] >= PERIOD_DIVISOR_MIN) {
		*conf = s[fp];
		*phase_out = f_phase;
		return fp;
	}
	if (gp && s[gp] >= PERIOD_DIVISOR_MIN) {
		/* the pauses only confirm the signatures' step, or they made it */
		*conf = gp == best_p || s[gp] < share ? s[gp] : share;
		*long_ns = g_pause ? g_pause : 1;
		*phase_out = g_phase;
		return gp;
	}
	/* no pause ends the steps, but another communicator's collective comes once a step:
	 * that is the step, not a divisor whose pauses are merely alike (all of them are) */
	if (fp && best_p % fp == 0 && s[fp] >= PERIOD_DIVISOR_MIN) {
		*conf = s[fp];
		*phase_out = f_phase;
		return fp;
	}
	/* what ends the cycle every time, against what ends most of the shorter steps */
	if (phase_gap_low(gap, n, best_p, &phase, &pause, &low))
		return 0;
	/* a shorter step than the signatures' cycle, with ends as long: equal buckets and a
	 * logged loss every few steps make a cycle of several steps */
	gp = best_p > 2 ? gap_period(gap, n - 1, 1, best_p - 1, &g_phase, &g_pause, &share) : 0;
	if (gp && tiles(sig, n, gp, best_p, true, NULL) && s[gp] >= PERIOD_DIVISOR_MIN &&
	    g_pause * 10 >= low * 7) {
		*conf = s[gp] < share ? s[gp] : share;
		*long_ns = g_pause ? g_pause : 1;
		*phase_out = g_phase;
		return gp;
	}
	*conf = s[best_p];
	unit = malloc(sizeof(*unit) * best_p);
	for (p = 1; gap && unit && p < best_p; p++) {
		if (best_p % p == 0 && s[p] >= PERIOD_DIVISOR_MIN) {
			if (phase_gap(gap, n, p, &d_phase, &d_pause))
				break;
		} else if ((!tiles_block(sig, n, p, best_p, unit) &&
			    !(s[p] >= PERIOD_DIVISOR_MIN && tiles(sig, n, p, best_p, false, unit))) ||
			   !block_gap(sig, gap, n, p, unit, &d_phase, &d_pause)) {
			continue;
		}
		if (d_pause * 10 >= low * 7) {
			best_p = p;
			*conf = s[p];
			phase = d_phase;
			break;
		}
	}
	free(unit);
	*phase_out = phase;
	return best_p;
}

int period__detect(const uint64_t *sig, const uint64_t *gap, int n, int max_period,
		   struct period_result *out)
{
	return period__detect_folded(sig, gap, NULL, n, max_period, false, out);
}

int period__detect_folded(const uint64_t *sig, const uint64_t *gap, const bool *fold, int n,
			  int max_period, bool last, struct period_result *out)
{
	double *s = NULL, conf = 0;
	int p, limit, phase = 0, i;
	uint64_t long_ns = 0;

	memset(out, 0, sizeof(*out));
	if (n < PERIOD_MIN_REPEATS)
		return -EINVAL;
	limit = n / PERIOD_MIN_REPEATS;
	if (limit > max_period)
		limit = max_period;
	if (limit < 1)
		return -EINVAL;
	s = calloc(limit + 1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (p = 1; p <= limit; p++)
		s[p] = score(sig, n, p);
	p = choose(s, limit, sig, gap, fold, n, &phase, &conf, &long_ns);
	/* every collective alike and no pause structure found: one collective a step, if the
	 * pauses are alike too; else the structure may need more steps to show (unless last) */
	if (!last && p == 1 && s[1] >= 1.0 && gap && n < PERIOD_WAIT_ALIKE) {
		uint64_t med, mx = 0;
		int i;

		big_pauses(gap, n - 1, &med);
		for (i = 0; i < n - 1; i++)
			mx = gap[i] > mx ? gap[i] : mx;
		if (mx >= PERIOD_ALIKE * med) {
			free(s);
			return -EAGAIN;
		}
	}
	/*
	 * One or two pauses far longer than the rest, not where the chosen steps end: steps may
	 * be longer than the sequence seen so far (25 equal buckets in 48 collectives); wait for
	 * them to repeat, or for PERIOD_WAIT_MAX collectives (a rare stall in a simple loop);
	 * when no more will come (last), the pauses seen still place the steps.
	 */
	if (!last && p && n < PERIOD_WAIT_MAX) {
		uint64_t med, pause;
		int nbig = big_pauses(gap, n - 1, &med), ph;

		if (nbig && nbig < PERIOD_MIN_REPEATS && !long_ns &&
		    !phase_gap(gap, n, p, &ph, &pause) && pause <= PERIOD_BIG_PAUSE * med &&
		    (s[p] < 1.0 || big_share(gap, n - 1, med) * 3 >= 1)) {
			free(s);
			return -EAGAIN;
		}
	}
	out->period = p;
	out->phase = p ? phase : 0;
	out->confidence = conf;
	/* over the later half alone: what the job does now, without its setup's collectives */
	out->late_confidence = p && n - n / 2 > p ? score(sig + n / 2, n - n / 2, p) : conf;
	out->late_misses = 0;
	for (i = n / 2 > p ? n / 2 : p; p && i < n; i++)
		out->late_misses += sig[i] != sig[i - p];
	out->long_ns = p ? long_ns : 0;
	free(s);
	return 0;
}

/* Do the marks come every q collectives or sooner? 1: yes, at most 1 - PERIOD_THRESHOLD of
 * the n collectives lie in runs of q or more without one (an eval's extra collectives
 * lengthen a run once; the first and last runs, cut where the collectives seen begin and
 * end, count from over q: the first collective seen may lack the fold that came before it);
 * 0: no; -1: under PERIOD_MIN_REPEATS marks seen. */
static int marks_hold(const bool *mark, int n, int q)
{
	int i, prev = -1, nm = 0, far = 0;

	for (i = 0; i <= n; i++) {
		if (i < n && !mark[i])
			continue;
		if (i - prev - 1 >= q + (prev < 0 || i == n))
			far += i - prev - 1;
		prev = i;
		nm += i < n;
	}
	if (nm < PERIOD_MIN_REPEATS)
		return -1;
	return far <= n * (1 - PERIOD_THRESHOLD);
}

/*
 * marks_hold for steps of p, over the collectives of the unit only: an unmarked collective
 * that repeats neither p before nor p after is an extra (a checkpoint's barrier every few
 * steps), no step of its own, so no step without a mark. A marked one stays whatever it is.
 */
static int unit_marks_hold(const uint64_t *sig, const bool *mark, int n, int p)
{
	bool *m = malloc(sizeof(*m) * (size_t)(n > 0 ? n : 1));
	int i, k = 0, h;

	if (!m)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (mark[i] || (i >= p && sig[i] == sig[i - p]) || (i + p < n && sig[i] == sig[i + p]))
			m[k++] = mark[i];
	h = marks_hold(m, k, p);
	free(m);
	return h;
}

int period__marked(const uint64_t *sig, const bool *mark, int n, bool before, bool last,
		   struct period_result *out)
{
	int q, i, limit = n / PERIOD_MIN_REPEATS, end = -1, best_q = 0, h;
	double best = -1;

	for (i = 0; i < n; i++)
		end = mark[i] ? i : end;
	if (end < 0 || out->period <= 0)
		return 0;
	h = unit_marks_hold(sig, mark, n, out->period);
	if (h == -ENOMEM)
		return h;
	if (h == 1 || (h < 0 && last))
		return 0;
	if (h < 0)
		return -EAGAIN;
	limit = limit > PERIOD_MAX ? PERIOD_MAX : limit;
	for (q = out->period + 1; q <= limit; q++)
		if (score(sig, n, q) > best && marks_hold(mark, n, q) == 1)
			best = score(sig, n, q);
	for (q = out->period + 1; q <= limit && !best_q; q++)
		if (score(sig, n, q) >= best - PERIOD_NEAR - 1e-9 && marks_hold(mark, n, q) == 1)
			best_q = q;
	/* none yet, or the part repeats better: the step may be longer than what was seen */
	if (!best_q || (!last && score(sig, n, best_q) < out->confidence - 1e-9))
		return -EAGAIN;
	q = best_q;
	out->period = q;
	out->phase = ((before ? end - 1 : end) % q + q) % q;
	out->confidence = score(sig, n, q);
	out->late_confidence = n - n / 2 > q ? score(sig + n / 2, n - n / 2, q) : out->confidence;
	for (out->late_misses = 0, i = n / 2 > q ? n / 2 : q; i < n; i++)
		out->late_misses += sig[i] != sig[i - q];
	out->long_ns = 0;
	return 0;
}
