// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Verdicts from aligned per-rank steps: medians, never means, so one rank cannot hide. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "detect.h"

const char *detect__class_name(enum vclass c)
{
	static const char *const n[V_MAX] = {
		"none", "input", "storage", "compute", "cpu_contention", "communication",
		"divergent", "hang", "rank_exited", "remote_wait", "pipeline_bubble", "checkpoint",
	};

	return c < V_MAX ? n[c] : "unknown";
}

int detect__severity(enum vclass c)
{
	switch (c) {
	case V_NONE: return 0;
	case V_HANG: case V_RANK_EXITED: case V_DIVERGENT: return 3;
	default: return 1;
	}
}

const char *detect__experiment(enum vclass c)
{
	switch (c) {
	case V_INPUT:
	case V_STORAGE:
		return "replay the same decoded batches from local memory on this rank: its input/io "
		       "wait should fall to the peers' level while its compute stays the same";
	case V_COMPUTE:
		return "equalise sequence lengths (identical synthetic batches on every rank): if the "
		       "skew disappears the work was unequal; if it stays, check this rank's device "
		       "and per-kernel timing";
	case V_CPU_CONTENTION:
		return "give this rank dedicated cores (lift the CPU quota, move co-located work): its "
		       "sched_delay and the skew should fall together";
	case V_COMMUNICATION:
		return "run an isolated collective test of matched size between these ranks: if it is "
		       "also slow the fabric is the limit, if not look at overlap and placement";
	case V_DIVERGENT:
		return "compare the ranks' operation sequences and failure logs (data-dependent "
		       "branches, exhausted iterators); tuning cannot fix a mismatch";
	case V_HANG:
		return "look again at the laggard's stack (rankscope stacks -p PID, every thread): "
		       "if it is still where the evidence shows, the peers will wait forever; if "
		       "it moves, raise the timeout";
	case V_RANK_EXITED:
		return "read the exited rank's exit status and logs; its peers cannot finish the "
		       "collective without it";
	case V_REMOTE_WAIT:
		return "look at the ranks not observed here (rankscope on their nodes, or rankscope "
		       "hub over every node's daemon): the rank these wait for is among them; only "
		       "with every rank seen and still aligned is the network to blame";
	case V_CHECKPOINT:
		return "save asynchronously (or to a faster target): the other ranks' wait in the "
		       "steps that save should fall to the time a copy in memory takes";
	case V_BUBBLE:
		return "raise the micro-batches a step (or use an interleaved schedule): the idle "
		       "share should fall toward (S-1)/(M+S-1); if it does not, time the sends "
		       "between these stages on their own";
	default:
		return "none needed; a verdict appears when one rank holds the others back";
	}
}

int detect__cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int detect__cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * One Hoare partition of v[lo..hi] around the median of its first, middle and last values
 * (sorted or reversed input stays O(n log n)): afterwards v[lo..*j] <= pivot <= v[*i..hi],
 * and whatever lies between *j and *i equals the pivot.
 */
static void partition(uint64_t *v, int lo, int hi, int *pi, int *pj)
{
	int i = lo, j = hi, mid = lo + (hi - lo) / 2;
	uint64_t pivot, t;

#define SWAP(a, b) do { t = v[a]; v[a] = v[b]; v[b] = t; } while (0)
	if (v[mid] < v[lo])
		SWAP(mid, lo);
	if (v[hi] < v[lo])
		SWAP(hi, lo);
	if (v[hi] < v[mid])
		SWAP(hi, mid);
	pivot = v[mid];
	while (i <= j) {
		while (v[i] < pivot)
			i++;
		while (v[j] > pivot)
			j--;
		if (i <= j) {
			SWAP(i, j);
			i++;
			j--;
		}
	}
#undef SWAP
	*pi = i;
	*pj = j;
}

/* The k-th smallest of v[0..n) (k from 0), v reordered around it: O(n) where a sort is
 * O(n log n) (the hub takes a median over thousands of ranks, per rank). */
static uint64_t select_u64(uint64_t *v, int n, int k)
{
	int lo = 0, hi = n - 1, i, j;

	while (lo < hi) {
		partition(v, lo, hi, &i, &j);
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;		/* j < k < i: v[k] equals the pivot */
	}
	return v[k];
}

uint64_t detect__median(const uint64_t *v, int n)
{
	uint64_t stack[256], *t = stack, lo, hi;
	int i;

	if (n <= 0)
		return 0;
	if (n > (int)(sizeof(stack) / sizeof(stack[0]))) {
		t = malloc(sizeof(*t) * n);
		if (!t)
			return v[0];
	}
	memcpy(t, v, sizeof(*t) * n);
	hi = select_u64(t, n, n / 2);
	/* even: the lower middle is the largest of what select left below n/2 */
	for (lo = hi, i = 0; n % 2 == 0 && i < n / 2; i++)
		lo = i == 0 || t[i] > lo ? t[i] : lo;
	if (t != stack)
		free(t);
	/* the mean of the middle two, without overflow or a lost carry */
	return n % 2 ? hi : lo / 2 + hi / 2 + (lo & hi & 1);
}

/* Insertion: a few values, or values each within a few places of where they belong. */
static void sort_small(uint64_t *v, int n)
{
	uint64_t x;
	int i, k;

	for (i = 1; i < n; i++) {
		x = v[i];
		for (k = i; k > 0 && v[k - 1] > x; k--)
			v[k] = v[k - 1];
		v[k] = x;
	}
}

#define SORT_CUTOFF	16

/*
 * Quicksort down to runs of SORT_CUTOFF, then one insertion pass over the whole array (each
 * value is within a run of its place). The larger part waits on the stack and the smaller is
 * split first: depth log2(n).
 */
void detect__sort_u64(uint64_t *v, int n)
{
	int stack[128], sp = 0, lo = 0, hi = n - 1, i, j;

	for (;;) {
		while (hi - lo > SORT_CUTOFF) {
			partition(v, lo, hi, &i, &j);
			if (j - lo < hi - i) {
				stack[sp++] = i;
				stack[sp++] = hi;
				hi = j;
			} else {
				stack[sp++] = lo;
				stack[sp++] = j;
				lo = i;
			}
		}
		if (!sp)
			break;
		hi = stack[--sp];
		lo = stack[--sp];
	}
	sort_small(v, n);
}

uint64_t detect__median_without(const uint64_t *v, int n, uint64_t x)
{
	int drop = 0, m = n - 1, a, b;
	uint64_t lo, hi;

	while (drop < n - 1 && v[drop] != x)
		drop++;
	a = (m - 1) / 2;	/* the lower middle of what is left, and the upper */
	b = m / 2;
	lo = v[a < drop ? a : a + 1];
	hi = v[b < drop ? b : b + 1];
	return m % 2 ? hi : lo / 2 + hi / 2 + (lo & hi & 1);
}

int64_t detect__median_i64(int64_t *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, n, sizeof(*v), detect__cmp_i64);
	return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

int64_t detect__tail(int64_t *v, int n)
{
	int64_t t;

	if (n <= 0)
		return 0;
	qsort(v, n, sizeof(*v), detect__cmp_i64);
	t = v[(int)((n - 1) * DETECT_NOISE_Q)];
	return t > 0 ? t : 0;
}

/* The median over r's peers (every present column but r) of f. */
static uint64_t peers_median(const struct step_obs *row, int nranks, int r, uint64_t *tmp,
			     uint64_t (*f)(const struct step_obs *, int), int arg)
{
	int k, m = 0;

	for (k = 0; k < nranks; k++)
		if (k != r && row[k].present)
			tmp[m++] = f(&row[k], arg);
	return detect__median(tmp, m);
}

static uint64_t get_arrival(const struct step_obs *o, int arg)
{
	return o->arrival_ns;
}

/* How late column r is in this step: summed over its collectives when known, else at the
 * step's first collective. (Its time runnable but not running inside them is not counted:
 * on a host with fewer CPUs than busy-polling ranks one rank is preempted inside them more
 * than the others in most steps, and a rank with real extra work was named less often than
 * that contention, in the accuracy matrix's 4-rank cells on 2 vCPUs.) */
static int64_t lateness(const struct step_obs *row, int nranks, int r, uint64_t *tmp)
{
	if (row[r].has_late)
		return row[r].late_ns;
	return (int64_t)row[r].arrival_ns - (int64_t)peers_median(row, nranks, r, tmp, get_arrival, 0);
}

static uint64_t get_phase(const struct step_obs *o, int ph)
{
	return o->ph.ns[ph];
}

static bool row_complete(const struct step_obs *row, int nranks)
{
	int r;

	for (r = 0; r < nranks; r++)
		if (!row[r].present || !row[r].arrival_ns)
			return false;
	return true;
}

void detect__split_comm(struct step_obs *row, int nranks)
{
	uint64_t last = 0, inside, wait;
	bool gpu = nranks > 0;
	int r;

	for (r = 0; r < nranks; r++)
		if (row[r].present && (!row[r].gpu_arrival_ns || row[r].gpu_done_ns < row[r].gpu_arrival_ns))
			gpu = false;
	for (r = 0; gpu && r < nranks; r++) {
		if (!row[r].present)
			continue;
		row[r].arrival_ns = row[r].gpu_arrival_ns;
		row[r].done_ns = row[r].gpu_done_ns;
		/* the host's entries are only enqueues: lateness is the device's */
		row[r].has_late = false;
	}
	for (r = 0; r < nranks; r++)
		if (row[r].present && row[r].arrival_ns > last)
			last = row[r].arrival_ns;
	for (r = 0; r < nranks; r++) {
		if (!row[r].present)
			continue;
		inside = gpu ? row[r].done_ns - row[r].arrival_ns : row[r].ph.ns[PH_COMM];
		if (!gpu && row[r].has_late)
			wait = row[r].wait_ns;
		else
			wait = row[r].arrival_ns ? last - row[r].arrival_ns : 0;
		if (wait > inside)
			wait = inside;
		row[r].ph.comm_wait = wait;
		row[r].ph.comm_transfer = inside - wait;
	}
}

/* v names rank r, late by skew, in phase ph by excess over its peers; mine and peer: its and
 * their time in it over the n steps judged (medians taken). */
static void name_rank(struct verdict *v, int r, int64_t skew, enum phase ph, int64_t excess,
		      uint64_t *mine, uint64_t *peer, int n)
{
	v->rank = r;
	v->skew_ns = skew;
	v->phase = ph;
	v->phase_excess_ns = excess;
	v->late_phase_ns = detect__median(mine, n);
	v->peer_phase_ns = detect__median(peer, n);
}

/*
 * Late in its io, and most of that (over the window) in its own writes and flushes, not its
 * reads: the job waits while the rank saves a checkpoint; it is not short of data.
 */
static bool writes_most(const struct step_obs *obs, int nsteps, int nranks, int late)
{
	uint64_t io = 0, wr = 0;
	int s;

	for (s = 0; s < nsteps; s++) {
		const struct step_obs *o = &obs[s * nranks + late];

		if (!o->present)
			continue;
		io += o->ph.ns[PH_IO];
		wr += o->ph.io_write;
	}
	return io && wr * 2 > io;
}

/*
 * A step an intermittent straggler hit (l: each rank's lateness in it): r is the latest rank,
 * late by twice the threshold, and its own time in the phase (mine, against the peers'
 * median) explains half of that at least. Steps it is late in for another reason (a burst of
 * contention between two saves) are no share of what the verdict names.
 */
static bool explained_hit(const int64_t *l, int nranks, int r, uint64_t threshold,
			  uint64_t mine, uint64_t peer)
{
	int k;

	if (l[r] < 2 * (int64_t)threshold)
		return false;
	for (k = 0; k < nranks; k++)
		if (l[k] > l[r])
			return false;
	return (int64_t)mine - (int64_t)peer >= (int64_t)(l[r] * DETECT_EXPLAINED);
}

/* What its peers wait for column late, at the median over the complete rows where it is late
 * by from at least: where known, what they waited for it alone at each collective of the
 * step (has_alone); else how much later than the next latest rank it is (what its lateness
 * measures against peers' medians counts it once or more: 2 ranks, twice). Not the step's
 * sums: with many peers and several collectives a step, another peer comes last at most of
 * them by its own noise, and the sums hide that. */
static int64_t holds_back(const struct step_obs *obs, const int64_t *lat, const bool *ok,
			  int nsteps, int nranks, int late, int64_t from)
{
	int64_t *v = malloc(sizeof(*v) * (size_t)nsteps), next, h;
	int s, r, n = 0;

	if (!v)
		return INT64_MAX;
	for (s = 0; s < nsteps; s++) {
		const struct step_obs *o = &obs[s * nranks + late];
		const int64_t *l = &lat[s * nranks];

		if (!ok[s] || l[late] < from)
			continue;
		if (o->has_late && o->has_alone) {
			v[n++] = (int64_t)o->alone_ns;
			continue;
		}
		for (next = INT64_MIN, r = 0; r < nranks; r++)
			if (r != late && l[r] > next)
				next = l[r];
		v[n++] = next == INT64_MIN ? l[late] : l[late] - next;
	}
	h = detect__median_i64(v, n);
	free(v);
	return h;
}

/*
 * No rank late in most steps: one late by a lot (twice the threshold) in a few of them, and
 * its own time in one phase explains it there, is an intermittent straggler (a long batch
 * every k-th step). It is the rank late by a lot most often; it must hit at least
 * DETECT_HITS_MIN steps, and the other ranks' such steps together at most half as many: a
 * different rank each step (sequence lengths) is nobody's. A step another rank is late in
 * by its own writes (rank 0 saving every 9th step) is no such step: it is that save's story.
 * Fills v (rank, skew, phase, hits) and returns true; false leaves it alone.
 */
static bool intermittent(const struct step_obs *obs, int nsteps, int nranks, const bool *ok,
			 const int64_t *lat, uint64_t threshold, uint64_t *tmp, struct verdict *v)
{
	static const enum phase cand[] = { PH_INPUT_WAIT, PH_IO, PH_COMPUTE, PH_SCHED_DELAY,
					   PH_GPU_WAIT, PH_OTHER };
	int64_t skews[DETECT_HITS_MAX], exc[DETECT_HITS_MAX], e, best_e = INT64_MIN;
	int s, r, c, m = 0, h, late = -1, hits = 0, others = 0, best_ph = PH_COMPUTE;
	int episodes = 0, prev = -2, first = -1, last = -1;
	int *tops = calloc(nsteps, sizeof(*tops)), *cnt = calloc(nranks, sizeof(*cnt));
	uint64_t mine[DETECT_HITS_MAX], peer[DETECT_HITS_MAX];

	if (!tops || !cnt)
		goto none;
	for (s = 0; s < nsteps; s++) {	/* each step's latest rank, when it is late by a lot */
		const int64_t *l = &lat[s * nranks];
		int top = -1;

		tops[s] = -1;
		if (!ok[s])
			continue;
		m++;
		for (r = 0; r < nranks; r++)
			if (top < 0 || l[r] > l[top])
				top = r;
		if (top < 0 || l[top] < 2 * (int64_t)threshold)
			continue;
		tops[s] = top;
		/* the rank late by a lot most often is the one asked about */
		if (++cnt[top] > (late < 0 ? 0 : cnt[late]))
			late = top;
	}
	for (s = 0; late >= 0 && s < nsteps; s++) {
		if (tops[s] < 0)
			continue;
		if (tops[s] == late) {
			hits++;
			/* steps on time between two hits make them two episodes: one burst of
			 * contention makes a run of late steps, a straggler comes back */
			episodes += prev != s - 1;
			prev = s;
		} else if (obs[s * nranks + tops[s]].ph.io_write * 2 <
			   (uint64_t)lat[s * nranks + tops[s]]) {
			/* another rank late in a step: a different rank each step is nobody's
			 * straggler; one late by its own writes is saving, another story */
			others++;
		}
	}
none:
	free(tops);
	free(cnt);
	if (late < 0 || episodes < DETECT_HITS_MIN || others * 2 > hits || hits == m)
		return false;
	/* the phase that explains it, over the steps it hit */
	for (c = 0; c < (int)(sizeof(cand) / sizeof(cand[0])); c++) {
		for (h = 0, s = 0; s < nsteps && h < DETECT_HITS_MAX; s++) {
			const struct step_obs *row = &obs[s * nranks];

			if (!ok[s] || lat[s * nranks + late] < 2 * (int64_t)threshold)
				continue;
			exc[h++] = (int64_t)get_phase(&row[late], cand[c]) -
				   (int64_t)peers_median(row, nranks, late, tmp, get_phase, cand[c]);
		}
		e = detect__median_i64(exc, h);
		if (e > best_e) {
			best_e = e;
			best_ph = cand[c];
		}
	}
	for (h = 0, hits = 0, s = 0; s < nsteps && h < DETECT_HITS_MAX; s++) {
		const struct step_obs *row = &obs[s * nranks];

		if (!ok[s] || lat[s * nranks + late] < 2 * (int64_t)threshold)
			continue;
		skews[h] = lat[s * nranks + late];
		mine[h] = get_phase(&row[late], best_ph);
		peer[h] = peers_median(row, nranks, late, tmp, get_phase, best_ph);
		if (explained_hit(&lat[s * nranks], nranks, late, threshold, mine[h], peer[h])) {
			first = first < 0 ? s : first;
			last = s;
			hits++;
		}
		h++;
	}
	e = detect__median_i64(skews, h);
	if (best_e < (int64_t)(e * DETECT_EXPLAINED) ||
	    holds_back(obs, lat, ok, nsteps, nranks, late, 2 * (int64_t)threshold) <
	    (int64_t)(v->step_ns * DETECT_HOLDS_FRAC))
		return false;
	name_rank(v, late, e, best_ph, best_e, mine, peer, h);
	v->intermittent = true;
	v->hits = hits;
	v->hit_span = first >= 0 ? last - first : 0;
	return true;
}

int detect__hits(const struct step_obs *obs, int nsteps, int nranks, const struct verdict *v,
		 int *rows)
{
	uint64_t *tmp;
	int64_t *l;
	int s, r, hits = 0;

	*rows = 0;
	if (v->rank < 0 || v->rank >= nranks)
		return 0;
	tmp = calloc(nranks, sizeof(*tmp));
	l = calloc(nranks, sizeof(*l));
	if (!tmp || !l)
		goto out;
	for (s = 0; s < nsteps; s++) {
		const struct step_obs *row = &obs[s * nranks];

		if (!row_complete(row, nranks))
			continue;
		(*rows)++;
		for (r = 0; r < nranks; r++)
			l[r] = lateness(row, nranks, r, tmp);
		hits += explained_hit(l, nranks, v->rank, v->threshold_ns,
				      get_phase(&row[v->rank], v->phase),
				      peers_median(row, nranks, v->rank, tmp, get_phase, v->phase));
	}
out:
	free(tmp);
	free(l);
	return hits;
}

static uint64_t threshold_of(const int64_t *lat, const bool *ok, int nsteps, int nranks,
			     int late, uint64_t step_ns);

int detect__late_column(const int64_t *ex, const bool *ok, int nsteps, int ncols,
			uint64_t step_ns, int64_t *excess, uint64_t *threshold)
{
	int64_t *col, e, best = INT64_MIN;
	int s, r, m, c, late = -1;
	uint64_t t;

	if (nsteps < 1 || !(col = calloc(nsteps, sizeof(*col))))
		return -1;
	for (r = 0; r < ncols; r++) {
		for (m = 0, s = 0; s < nsteps; s++)
			if (ok[s])
				col[m++] = ex[s * ncols + r];
		if (!m)
			break;
		e = detect__median_i64(col, m);
		if (e > best) {
			best = e;
			late = r;
		}
	}
	free(col);
	if (late < 0 || best <= 0)
		return -1;
	t = threshold_of(ex, ok, nsteps, ncols, late, step_ns);
	for (m = 0, c = 0, s = 0; s < nsteps; s++)
		if (ok[s]) {
			m++;
			c += ex[s * ncols + late] >= (int64_t)t / 2;
		}
	if (best < (int64_t)t || c < m * DETECT_CONSISTENT)
		return -1;
	*excess = best;
	*threshold = t;
	return late;
}

/*
 * No rank late: one starved of CPU inside the collectives (runnable, not running, while
 * busy-polling) holds each of them back for everyone, after they all came. The rank whose
 * time so (comm_sched) exceeds its peers' median the most, by the lateness threshold at the
 * median and by half of it in 3/4 of the steps, is CPU contention: its excess is what the
 * others wait. Fills v and returns true; false leaves it alone.
 */
static bool starved_inside(const struct step_obs *obs, int nsteps, int nranks, const bool *ok,
			   uint64_t step_ns, uint64_t *tmp, struct verdict *v)
{
	int64_t *ex, e, best;
	int s, r, m, late, n = 0;
	uint64_t threshold, *mine, *peer;
	bool found = false;

	ex = calloc((size_t)nsteps * nranks, sizeof(*ex));
	mine = calloc(nsteps, sizeof(*mine));
	peer = calloc(nsteps, sizeof(*peer));
	if (!ex || !mine || !peer)
		goto out;
	for (s = 0; s < nsteps; s++) {
		const struct step_obs *row = &obs[s * nranks];
		uint64_t after;

		if (!ok[s])
			continue;
		/* what the collectives took once all had come: starved before that, it waited
		 * anyway, so that is the most it can hold them back (a pipeline's rank: its time
		 * so while its peer was in the send or receive too; starved while its peer is not
		 * there yet, it holds nobody) */
		for (m = 0, r = 0; r < nranks; r++)
			tmp[m++] = row[r].ph.comm_transfer;
		after = detect__median(tmp, m);
		for (m = 0, r = 0; r < nranks; r++)
			tmp[m++] = row[r].ph.comm_sched;
		detect__sort_u64(tmp, m);
		for (r = 0; r < nranks; r++) {
			if (row[0].stages > 1)
				after = row[r].held_ns;
			e = (int64_t)row[r].ph.comm_sched -
			    (int64_t)detect__median_without(tmp, m, row[r].ph.comm_sched);
			ex[s * nranks + r] = e < (int64_t)after ? e : (int64_t)after;
		}
		n++;
	}
	if (!n || (late = detect__late_column(ex, ok, nsteps, nranks, step_ns, &best,
					       &threshold)) < 0)
		goto out;
	for (m = 0, s = 0; s < nsteps; s++) {
		if (!ok[s])
			continue;
		mine[m] = obs[s * nranks + late].ph.comm_sched;
		peer[m++] = obs[s * nranks + late].ph.comm_sched - ex[s * nranks + late];
	}
	name_rank(v, late, best, PH_SCHED_DELAY, best, mine, peer, m);
	v->threshold_ns = threshold;
	found = true;
out:
	free(ex);
	free(mine);
	free(peer);
	return found;
}

/*
 * No rank late in most steps, nor one late in a few: in 3/4 of the window's steps its latest
 * rank is late by the threshold and its own time in one phase explains half of that, but no
 * rank is so in more than half of the window's steps. Work that varies by rank from step to
 * step (sequence lengths) holds the job back with nobody to blame: an imbalance in that phase,
 * with no rank (-1). Fills v and returns true; false leaves it alone.
 */
/* The tail (DETECT_NOISE_Q) of the lateness of every rank but each step's latest, over the
 * complete rows of a window: how late ranks are by noise alone; 0 when none is late. */
static int64_t others_tail(const int64_t *lat, const bool *ok, int nsteps, int nranks)
{
	int64_t *v = malloc(sizeof(*v) * (size_t)nsteps * nranks), t = 0;
	int s, r, top, n = 0;

	if (!v)
		return -1;
	for (s = 0; s < nsteps; s++) {
		const int64_t *l = &lat[s * nranks];

		if (!ok[s])
			continue;
		for (top = 0, r = 1; r < nranks; r++)
			if (l[r] > l[top])
				top = r;
		for (r = 0; r < nranks; r++)
			if (r != top)
				v[n++] = l[r];
	}
	t = detect__tail(v, n);
	free(v);
	return t;
}

static bool imbalance(const struct step_obs *obs, int nsteps, int nranks, const bool *ok,
		      const int64_t *lat, uint64_t threshold, uint64_t *tmp, struct verdict *v)
{
	static const enum phase cand[] = { PH_INPUT_WAIT, PH_IO, PH_COMPUTE, PH_SCHED_DELAY,
					   PH_GPU_WAIT, PH_OTHER };
	int64_t *skews = NULL, *exc = NULL, e, best_e = 0, noise;
	int s, r, c, m = 0, h, best = -1, top, next, most;
	int *tops = NULL, *cnt = NULL;
	bool found = false;

	skews = calloc(nsteps, sizeof(*skews));
	exc = calloc(nsteps, sizeof(*exc));
	tops = calloc(nsteps, sizeof(*tops));
	cnt = calloc(nranks, sizeof(*cnt));
	if (!skews || !exc || !tops || !cnt)
		goto out;
	noise = nranks - 1 >= DETECT_NOISE_PEERS ? others_tail(lat, ok, nsteps, nranks) : -1;
	for (s = 0; s < nsteps; s++) {	/* each step's latest rank */
		const int64_t *l = &lat[s * nranks];

		tops[s] = -1;
		if (!ok[s])
			continue;
		m++;
		for (top = 0, r = 1; r < nranks; r++)
			if (l[r] > l[top])
				top = r;
		for (next = top ? 0 : 1, r = 0; r < nranks; r++)
			if (r != top && l[r] > l[next])
				next = r;
		/* late by the threshold, or, among enough peers, by DETECT_NOISE_K times the tail
		 * of the noise: the step's next latest (many ranks: one preempted is no outlier
		 * when another was too), and the others' lateness over the window (few ranks:
		 * 3 of 4 jittering alike put the top at 3x the next in half the steps) */
		if (l[top] >= (int64_t)threshold ||
		    (noise >= 0 && l[top] >= (int64_t)DETECT_SKEW_MIN_NS &&
		     l[top] >= DETECT_NOISE_K * (l[next] > noise ? l[next] : noise)))
			tops[s] = top;
	}
	/* the phase of the latest rank's largest median excess over its peers */
	for (c = 0; c < (int)(sizeof(cand) / sizeof(cand[0])); c++) {
		for (h = 0, s = 0; s < nsteps; s++) {
			const struct step_obs *row = &obs[s * nranks];

			if (tops[s] >= 0)
				exc[h++] = (int64_t)get_phase(&row[tops[s]], cand[c]) -
					   (int64_t)peers_median(row, nranks, tops[s], tmp, get_phase,
								 cand[c]);
		}
		e = detect__median_i64(exc, h);
		if (h && (best < 0 || e > best_e)) {
			best_e = e;
			best = c;
		}
	}
	if (best < 0)
		goto out;
	for (h = 0, most = 0, s = 0; s < nsteps; s++) {
		const struct step_obs *row = &obs[s * nranks];

		if (tops[s] < 0)
			continue;
		e = (int64_t)get_phase(&row[tops[s]], cand[best]) -
		    (int64_t)peers_median(row, nranks, tops[s], tmp, get_phase, cand[best]);
		if (e < (int64_t)(lat[s * nranks + tops[s]] * DETECT_EXPLAINED))
			continue;
		if (++cnt[tops[s]] > most)
			most = cnt[tops[s]];
		skews[h] = lat[s * nranks + tops[s]];
		exc[h++] = e;
	}
	/* explained in 3/4 of the window's steps, and nobody the latest in most of them */
	if (h < m * DETECT_CONSISTENT || most * 2 > m)
		goto out;
	v->rank = -1;
	v->skew_ns = detect__median_i64(skews, h);
	v->phase = cand[best];
	v->phase_excess_ns = detect__median_i64(exc, h);
	v->imbalance = true;
	v->hits = h;
	found = true;
out:
	free(skews);
	free(exc);
	free(tops);
	free(cnt);
	return found;
}

/*
 * The lateness threshold of a window: a quarter of the step (at least DETECT_SKEW_MIN_NS), or
 * less where the window shows how late noise makes a rank here, DETECT_NOISE_K times the
 * DETECT_NOISE_Q quantile of:
 * - with DETECT_NOISE_PEERS peers of the latest rank at least, their own lateness over the
 *   window's steps;
 * - with fewer (a rank's only peer is late as much as it is early), how far the latest rank's
 *   own lateness strays from its median from step to step, over DETECT_NOISE_STEPS steps at
 *   least: a straggler's extra work is late by about as much each step, noise is not.
 */
static uint64_t threshold_of(const int64_t *lat, const bool *ok, int nsteps, int nranks,
			     int late, uint64_t step_ns)
{
	uint64_t t = detect__threshold(step_ns), k;
	bool peers = nranks - 1 >= DETECT_NOISE_PEERS;
	int64_t *v, med;
	int s, r, n = 0;

	v = malloc(sizeof(*v) * (size_t)nsteps * (nranks - 1));
	if (!v)
		return t;
	for (s = 0; s < nsteps; s++)
		for (r = 0; ok[s] && r < nranks; r++)
			if (peers ? r != late : r == late)
				v[n++] = lat[s * nranks + r];
	if (!peers && n >= DETECT_NOISE_STEPS) {
		med = detect__median_i64(v, n);
		for (s = 0; s < n; s++)
			v[s] = v[s] > med ? v[s] - med : med - v[s];
	} else if (!peers) {
		n = 0;
	}
	if (n) {
		k = (uint64_t)detect__tail(v, n) * DETECT_NOISE_K;
		if (k < t)
			t = k > DETECT_SKEW_MIN_NS ? k : DETECT_SKEW_MIN_NS;
	}
	free(v);
	return t;
}

/* The time inside collectives once all had come (last: the row's last arrival): over the
 * step's collectives when the row was joined (several buckets a step: the first is a fraction
 * of it), else at its first one; 0: none. A pipeline's joined row has its sends' and
 * receives' overlap with the other end's (job.c's p2p_transfer), none when it was all
 * waiting or starved: that is not the first call's time. */
static uint64_t transfer_of(const struct step_obs *o, uint64_t last)
{
	if (o->ph.comm_transfer || (o->has_late && o->stages > 1))
		return o->ph.comm_transfer;
	return o->done_ns > last ? o->done_ns - last : 0;
}

/* A joined row's transfer time: the median over its ranks of transfer_of, less each rank's
 * time runnable and not running inside its collectives (a host short of CPUs slows the
 * collectives of ranks that poll; the link has nothing to do with it), and its median
 * duration (tmp: nranks scratch). A pipeline's ranks transfer over links of their own (to
 * the next stage, among a stage's replicas) and the slowest holds the step: the largest.
 * False when a rank is missing or none has any. */
static bool row_transfer(const struct step_obs *row, int nranks, uint64_t *tmp,
			 struct comm_step *out)
{
	uint64_t last = 0, x;
	bool pp = row[0].stages > 1;
	int r, n = 0;

	for (r = 0; r < nranks; r++) {
		if (!row[r].present || !row[r].arrival_ns)
			return false;
		if (row[r].arrival_ns > last)
			last = row[r].arrival_ns;
	}
	out->x = 0;
	for (r = 0; r < nranks; r++) {
		x = transfer_of(&row[r], last);
		if (!x)
			continue;
		/* a pipeline's transfers are of pairs with neither end starved already */
		tmp[n++] = pp ? x : x - (row[r].ph.comm_sched < x ? row[r].ph.comm_sched : x);
		out->x = tmp[n - 1] > out->x ? tmp[n - 1] : out->x;
	}
	if (!pp)
		out->x = detect__median(tmp, n);
	for (r = 0; r < nranks; r++)
		tmp[r] = row[r].dur_ns;
	out->step = detect__median(tmp, nranks);
	return n > 0;
}

/* Whether steps [j, n) of the reference are nearer the window's least transfer (low) than
 * the median of steps [0, j), above those steps' tail (their DETECT_NOISE_Q quantile, rounded
 * up: the highest of a few), with low over that median by DETECT_SKEW_MIN_NS at least. */
static bool ref_part_changed(const struct comm_step *s, int j, int n, uint64_t low)
{
	uint64_t x[DETECT_REF_STEPS], med, tail;
	int i;

	for (i = 0; i < j; i++)
		x[i] = s[i].x;
	med = detect__median(x, j);
	qsort(x, j, sizeof(*x), detect__cmp_u64);
	tail = x[(int)ceil((j - 1) * DETECT_NOISE_Q)];
	if (low < med + DETECT_SKEW_MIN_NS)
		return false;
	for (i = j; i < n; i++)
		if (s[i].x <= tail || s[i].x - med <= (low - med) / 2)
			return false;
	return true;
}

/* The reference's steps in step order (out: DETECT_REF_STEPS), less a trailing run of steps
 * like the window's: each at least the least of its transfers (low), and before those the
 * longest run ref_part_changed() tells. A change inside the first windows leaves its first
 * slow steps in the reference, which then holds both links; one landing inside a step leaves
 * that step (and the next, while queues fill) part slower, and those are not the link before
 * either. Returns how many are left; 0 when under half of DETECT_REF_MIN are. */
static int ref_before(const struct comm_ref *ref, uint64_t low, struct comm_step *out)
{
	int i, j, n, from, first = ref->n < DETECT_REF_STEPS ? 0 : ref->pos;
	uint64_t least = UINT64_MAX;

	for (i = 0; i < ref->n; i++) {
		out[i] = ref->s[(first + i) % DETECT_REF_STEPS];
		least = out[i].x < least ? out[i].x : least;
	}
	for (n = ref->n; n > 0 && out[n - 1].x >= low; n--)
		;
	/* judged every step: only a trailing run over halfway from the least step to low can
	 * be one (a median is no less than the least), and a steady job has none */
	if (!n || low < least + DETECT_SKEW_MIN_NS)
		return n >= DETECT_REF_MIN / 2 ? n : 0;
	for (from = n; from > 0 && out[from - 1].x - least > (low - least) / 2; from--)
		;
	for (j = n - 1, i = n; j >= from && j >= DETECT_REF_MIN / 2; j--)
		if (ref_part_changed(out, j, n, low))
			i = j;
	n = i;
	return n >= DETECT_REF_MIN / 2 ? n : 0;
}

/* The median transfer of n reference steps, the tail of their transfers (DETECT_NOISE_Q),
 * their spread (the median distance from their median: one step of a change among them moves
 * it little), their median step and the first and last step they hold. */
static void ref_stats(const struct comm_step *s, int n, uint64_t *med, uint64_t *tail,
		      uint64_t *spread, uint64_t *step, uint64_t *first, uint64_t *last)
{
	uint64_t x[DETECT_REF_STEPS], d[DETECT_REF_STEPS];
	int i;

	*first = *last = s[0].k;
	for (i = 0; i < n; i++) {
		x[i] = s[i].x;
		d[i] = s[i].step;
		*first = s[i].k < *first ? s[i].k : *first;
		*last = s[i].k > *last ? s[i].k : *last;
	}
	*med = detect__median(x, n);
	*step = detect__median(d, n);
	qsort(x, n, sizeof(*x), detect__cmp_u64);
	*tail = x[(int)((n - 1) * DETECT_NOISE_Q)];
	for (i = 0; i < n; i++)
		d[i] = x[i] > *med ? x[i] - *med : *med - x[i];
	*spread = detect__median(d, n);
}

bool detect__comm_change(struct comm_ref *ref, const struct step_obs *win, int m, int nranks,
			 int window, int gen, uint64_t k, struct verdict *v, char *detail,
			 size_t ndetail)
{
	struct comm_step cur[DETECT_REF_MAX], before[DETECT_REF_STEPS];
	uint64_t x[DETECT_REF_MAX], dev[DETECT_REF_MAX], *tmp, med, spread, rmed, rtail, rspread;
	uint64_t rstep, first, last, i0, low = UINT64_MAX;
	int s, i, n = 0, nb = 0, above = 0;

	if (m > DETECT_REF_MAX || !(tmp = calloc(nranks, sizeof(*tmp))))
		return false;
	i0 = k + 1 - (uint64_t)m;	/* the index of the window's first step */
	for (s = 0; s < m; s++)
		if (row_transfer(&win[(size_t)s * nranks], nranks, tmp, &cur[n])) {
			cur[n].k = i0 + s;
			x[n] = cur[n].x;
			n++;
		}
	free(tmp);
	if (ref->gen != gen) {	/* another pattern: another reference */
		ref->n = ref->pos = ref->npend = 0;
		ref->gen = gen;
	}
	med = n ? detect__median(x, n) : 0;
	for (i = 0; i < n; i++) {
		dev[i] = x[i] > med ? x[i] - med : med - x[i];
		low = x[i] < low ? x[i] : low;
	}
	spread = n ? detect__median(dev, n) : 0;
	if (ref->n >= DETECT_REF_MIN && n)
		nb = ref_before(ref, low, before);
	if (nb) {
		ref_stats(before, nb, &rmed, &rtail, &rspread, &rstep, &first, &last);
		for (i = 0; i < n; i++)
			above += x[i] > rtail;
		if (med >= rmed + DETECT_SKEW_MIN_NS && above >= n * DETECT_CONSISTENT &&
		    med - rmed >= DETECT_NOISE_K * (rspread > spread ? rspread : spread) &&
		    v->step_ns >= rstep + (med - rmed) / 2 &&
		    /* a rank late by half as much is what they wait for (its launches return
		     * at once, so its lateness shows in the collectives too), not the link */
		    v->skew_ns < (int64_t)(med - rmed) / 2) {
			ref->npend = 0;		/* those overlap the change */
			ref->next_k = k + 1;
			v->cls = V_COMMUNICATION;
			snprintf(detail, ndetail, "no rank is late, and the collectives take %.1f ms a "
				 "step once all ranks came, %.1f ms more than in steps %" PRIu64 "-%"
				 PRIu64 " with the same calls: a slower link or network", med / 1e6,
				 (med - rmed) / 1e6, first, last);
			return true;
		}
	}
	for (i = 0; i < n; i++)
		if (cur[i].k >= ref->next_k && ref->npend < DETECT_REF_MAX)
			ref->pend[ref->npend++] = cur[i];
	if (k + 1 > ref->next_k)
		ref->next_k = k + 1;
	/* pending steps out of the window join the reference */
	for (i = 0; i < ref->npend && ref->pend[i].k + window <= k; i++) {
		ref->s[ref->pos] = ref->pend[i];
		ref->pos = (ref->pos + 1) % DETECT_REF_STEPS;
		ref->n += ref->n < DETECT_REF_STEPS;
	}
	memmove(ref->pend, ref->pend + i, sizeof(*ref->pend) * (ref->npend - i));
	ref->npend -= i;
	return false;
}

int detect__window(const struct step_obs *obs, int nsteps, int nranks, struct verdict *v)
{
	return detect__window_seen(obs, nsteps, nranks, true, v);
}

int detect__window_seen(const struct step_obs *obs, int nsteps, int nranks, bool all_seen,
			struct verdict *v)
{
	static const enum phase cand[] = { PH_INPUT_WAIT, PH_IO, PH_COMPUTE, PH_SCHED_DELAY,
					   PH_GPU_WAIT, PH_OTHER };
	uint64_t *tmp = NULL, *durs = NULL, *posts = NULL, *mine = NULL, *peer = NULL, last;
	int64_t *skews = NULL, *exc = NULL, *lat = NULL, best_skew = INT64_MIN, e, best_e;
	int s, r, m, nrows = 0, np = 0, c, late = -1, err = 0;
	bool consistent, quiet, *ok = NULL;
	uint64_t threshold;

	memset(v, 0, sizeof(*v));
	v->rank = -1;
	if (nranks < 2 || nsteps < 1)
		return -EINVAL;
	tmp = calloc(nranks, sizeof(*tmp));
	mine = calloc(nsteps, sizeof(*mine));
	peer = calloc(nsteps, sizeof(*peer));
	durs = calloc(nsteps * nranks, sizeof(*durs));
	posts = calloc(nsteps * nranks, sizeof(*posts));
	skews = calloc(nsteps, sizeof(*skews));
	exc = calloc(nsteps, sizeof(*exc));
	lat = calloc((size_t)nsteps * nranks, sizeof(*lat));	/* each rank's, each step */
	ok = calloc(nsteps, sizeof(*ok));			/* each row complete */
	if (!tmp || !mine || !peer || !durs || !posts || !skews || !exc || !lat || !ok) {
		err = -ENOMEM;
		goto out;
	}
	for (s = 0; s < nsteps; s++) {
		const struct step_obs *row = &obs[s * nranks];

		/* once per row: the loops below run per rank (thousands, on the hub) */
		ok[s] = row_complete(row, nranks);
		if (!ok[s])
			continue;
		nrows++;
		last = 0;
		for (r = 0; r < nranks; r++) {
			durs[(nrows - 1) * nranks + r] = row[r].dur_ns;
			if (row[r].arrival_ns > last)
				last = row[r].arrival_ns;
		}
		/* a pipeline rank with none (all its time inside was waiting) had none: it counts */
		for (r = 0; r < nranks; r++)
			if (transfer_of(&row[r], last) || (row[r].has_late && row[r].stages > 1))
				posts[np++] = transfer_of(&row[r], last);
	}
	if (!nrows) {
		err = -EINVAL;
		goto out;
	}
	v->nsteps = nrows;
	v->step_ns = detect__median(durs, nrows * nranks);
	v->post_arrival_ns = detect__median(posts, np);
	/* the late rank: the largest median (over steps) arrival after its peers' median */
	for (r = 0; r < nranks; r++) {
		for (m = 0, s = 0; s < nsteps; s++) {
			const struct step_obs *row = &obs[s * nranks];

			if (!ok[s])
				continue;
			lat[s * nranks + r] = lateness(row, nranks, r, tmp);
			skews[m++] = lat[s * nranks + r];
		}
		e = detect__median_i64(skews, m);
		if (e > best_skew) {
			best_skew = e;
			late = r;
		}
	}
	threshold = threshold_of(lat, ok, nsteps, nranks, late, v->step_ns);
	v->threshold_ns = threshold;
	/* consistently late, not late once by a lot: count the steps where it is late by half
	 * the threshold, and those where it is the latest rank by a quarter of it (work that
	 * varies from step to step, sequence lengths, is sometimes little but still the most) */
	consistent = true;
	if (best_skew >= (int64_t)threshold) {
		int most = 0;

		for (m = 0, c = 0, s = 0; s < nsteps; s++) {
			const int64_t *l = &lat[s * nranks];

			if (!ok[s])
				continue;
			m++;
			c += l[late] >= (int64_t)threshold / 2;
			for (r = 0; r < nranks; r++)
				if (r != late && obs[s * nranks + r].present && l[r] >= l[late])
					break;
			most += r == nranks && l[late] >= (int64_t)threshold / 4;
		}
		/* or late by twice the threshold in the median step, and by half of it in most
		 * steps: a CPU quota throttles its rank in bursts (some steps run free between
		 * them), and a rank late by half a step in most steps is no burst of noise */
		consistent = c >= m * DETECT_CONSISTENT || most >= m * DETECT_CONSISTENT ||
			     (best_skew >= 2 * (int64_t)threshold && c >= m * DETECT_MOSTLY);
	}
	/* late, consistently, but by less than the rest make it wait: nobody to name */
	quiet = best_skew >= (int64_t)threshold && consistent &&
		holds_back(obs, lat, ok, nsteps, nranks, late, INT64_MIN) <
		(int64_t)(v->step_ns * DETECT_HOLDS_FRAC);
	if ((best_skew < (int64_t)threshold || !consistent) &&
	    /* the latest of many ranks reaches the tail of their noise every step: an imbalance
	     * is judged against the quarter of the step, not the noise of one rank */
	    (imbalance(obs, nsteps, nranks, ok, lat, detect__threshold(v->step_ns), tmp, v) ||
	     intermittent(obs, nsteps, nranks, ok, lat, threshold, tmp, v) ||
	     (all_seen && starved_inside(obs, nsteps, nranks, ok, v->step_ns, tmp, v))))
		goto classify;
	if (best_skew < (int64_t)threshold || !consistent || quiet) {
		v->skew_ns = best_skew;
		v->cls = v->post_arrival_ns >= DETECT_COMM_MIN_NS &&
			 v->post_arrival_ns >= v->step_ns * DETECT_COMM_FRAC ? V_COMMUNICATION : V_NONE;
		goto out;
	}
	v->rank = late;
	v->skew_ns = best_skew;
	/* which phase explains it: the largest excess over the peers' median */
	best_e = INT64_MIN;
	for (c = 0; c < (int)(sizeof(cand) / sizeof(cand[0])); c++) {
		for (m = 0, s = 0; s < nsteps; s++) {
			const struct step_obs *row = &obs[s * nranks];

			if (!ok[s])
				continue;
			exc[m++] = (int64_t)get_phase(&row[late], cand[c]) -
				   (int64_t)peers_median(row, nranks, late, tmp, get_phase, cand[c]);
		}
		e = detect__median_i64(exc, m);
		if (e > best_e) {
			best_e = e;
			v->phase = cand[c];
		}
	}
	v->phase_excess_ns = best_e;
	/* late, but not by its own time in any phase: it left the last collective late (it was
	 * preempted inside it, on a shared host), and its peers will catch that up; no verdict */
	if (best_e < (int64_t)(best_skew * DETECT_EXPLAINED)) {
		v->rank = -1;
		v->cls = V_NONE;
		goto out;
	}
	for (m = 0, s = 0; s < nsteps; s++) {
		const struct step_obs *row = &obs[s * nranks];

		if (!ok[s])
			continue;
		mine[m] = get_phase(&row[late], v->phase);
		peer[m++] = peers_median(row, nranks, late, tmp, get_phase, v->phase);
	}
	v->late_phase_ns = detect__median(mine, m);
	v->peer_phase_ns = detect__median(peer, m);
classify:
	/* off CPU for another reason: what it was blocked in, most often over the window */
	v->other_nr = -1;
	for (s = nsteps - 1; s >= 0 && v->phase == PH_OTHER; s--) {
		const struct step_obs *o = &obs[s * nranks + (v->rank >= 0 ? v->rank : late)];

		if (o->present && o->ph.other_nr_ns) {
			v->other_nr = o->ph.other_nr;
			break;
		}
	}
	v->cls = v->phase == PH_IO && v->rank >= 0 && writes_most(obs, nsteps, nranks, v->rank) ?
		 V_CHECKPOINT : detect__phase_class(v->phase);
out:
	free(tmp);
	free(mine);
	free(peer);
	free(durs);
	free(posts);
	free(skews);
	free(lat);
	free(exc);
	free(ok);
	return err;
}

/*
 * Seen from part of a job (a node's ranks, or the hub's lined-up ones): rank v->rank is late,
 * yet the ranks seen still wait after the last of them arrives, longer than it was late and
 * over DETECT_COMM_MIN_NS. What they wait for then is a rank not seen (or the network), and
 * that holds the job, not this one: had it been on time, the collectives would have ended no
 * sooner.
 */
bool detect__held_elsewhere(struct verdict *v, int rank, int seen, int world, const char *as,
			    char *detail, size_t n)
{
	if (v->rank < 0 || v->post_arrival_ns < DETECT_COMM_MIN_NS ||
	    (int64_t)v->post_arrival_ns < v->skew_ns)
		return false;
	snprintf(detail, n, "rank %d is late by %.1f ms among the %d ranks %s (of %d), but they "
		 "still wait %.1f ms after the last of them arrives: ranks not %s hold them", rank,
		 v->skew_ns / 1e6, seen, as, world, v->post_arrival_ns / 1e6, as);
	v->rank = -1;
	v->cls = V_REMOTE_WAIT;
	v->intermittent = v->imbalance = false;
	return true;
}

enum vclass detect__phase_class(enum phase ph)
{
	switch (ph) {
	case PH_INPUT_WAIT: return V_INPUT;
	case PH_IO: return V_STORAGE;
	case PH_SCHED_DELAY: return V_CPU_CONTENTION;
	default: return V_COMPUTE;	/* compute, other and gpu_wait */
	}
}

bool detect__straggler(enum vclass c, bool persistent)
{
	return persistent &&
	       (c == V_INPUT || c == V_STORAGE || c == V_COMPUTE || c == V_CPU_CONTENTION);
}

uint64_t detect__threshold(uint64_t step_ns)
{
	uint64_t t = step_ns * DETECT_SKEW_FRAC;

	return t < DETECT_SKEW_MIN_NS ? DETECT_SKEW_MIN_NS : t;
}

uint64_t detect__threshold_of(const struct verdict *v)
{
	return v->threshold_ns ? v->threshold_ns : detect__threshold(v->step_ns);
}

bool detect__persistent(struct persist *p, int rank)
{
	int i, same = 0;

	p->last[p->pos] = rank;
	p->pos = (p->pos + 1) % DETECT_PERSIST_OF;
	if (p->n < DETECT_PERSIST_OF)
		p->n++;
	for (i = 0; i < p->n; i++)
		same += rank >= 0 && p->last[i] == rank;
	return same >= DETECT_PERSIST_MIN;
}
