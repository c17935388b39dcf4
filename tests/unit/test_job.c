// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* job: steps and verdicts from synthetic per-rank timelines shaped like real jobs (equal
 * buckets, DDP markers of ranks attached a step apart, a pattern that changes mid-run, tensor +
 * data parallel groups attached mid-run). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "collectives.h"
#include "io.h"
#include "job.h"

#define US 1000ULL
#define MS 1000000ULL
#define MAXV 4096
#define SEEN_COLS 6	/* columns a test's job has at most */

struct seen {
	struct job_verdict v[MAXV];
	int nv;
	int steps[SEEN_COLS];		/* steps per column */
	uint32_t colls[SEEN_COLS][8];	/* steps by collectives in them (capped at 7) */
	uint64_t dur[SEEN_COLS];	/* summed step time */
	uint64_t end[SEEN_COLS];	/* the last step's end */
	uint64_t dmin[SEEN_COLS];	/* the shortest step from the third on */
	uint64_t ph[SEEN_COLS][PH_MAX];	/* summed phases */
	int rules, changed;
	int last_period;
	int stage[SEEN_COLS], stages, micro;	/* the last step's */
	uint64_t p2p[SEEN_COLS];
	char sig[SEEN_COLS][JOB_SIG_TEXT];	/* the last step's first communicator's ops, as text */
};

static void on_step(void *ctx, const struct job_step *st, const char *rule)
{
	struct seen *s = ctx;
	int p;

	s->steps[st->col]++;
	s->stage[st->col] = st->stage;
	s->stages = st->stages;
	s->micro = st->micro;
	s->p2p[st->col] += st->p2p_ns;
	if (st->ncomm)
		memcpy(s->sig[st->col], st->comm[0].sig_ops, sizeof(s->sig[0]));
	s->colls[st->col][st->collectives < 7 ? st->collectives : 7]++;
	s->dur[st->col] += st->dur_ns;
	s->end[st->col] = st->start_ns + st->dur_ns;
	if (s->steps[st->col] > 2 && (!s->dmin[st->col] || st->dur_ns < s->dmin[st->col]))
		s->dmin[st->col] = st->dur_ns;
	for (p = 0; p < PH_MAX; p++)
		s->ph[st->col][p] += st->ph.ns[p];
}

static void on_verdict(void *ctx, const struct job_verdict *v)
{
	struct seen *s = ctx;

	if (s->nv < MAXV)
		s->v[s->nv++] = *v;
}

static void on_rule(void *ctx, const char *rule, int period, double confidence, bool changed,
		    const char *note)
{
	struct seen *s = ctx;

	s->rules++;
	s->changed += changed;
	s->last_period = period;
}

/* A job of n columns (rank c on column c) judged with a hang timeout, whose probes say what
 * each column is in (inflight) and its process state (state), where not NULL. */
static struct job *job_with(struct seen *s, int n, enum steps_mode mode, uint64_t hang_ns,
			    bool (*inflight)(void *, int, struct job_inflight *),
			    void (*state)(void *, int, char *, size_t))
{
	struct job_cfg cfg = { .mode = mode, .hang_timeout_ns = hang_ns, .window = 8 };
	struct job_probe_ops ops = {
		.on_step = on_step, .on_verdict = on_verdict, .on_rule = on_rule, .ctx = s,
		.inflight = inflight, .state = state,
	};
	struct job *j;
	int c;

	memset(s, 0, sizeof(*s));
	j = job__new(&cfg, n, &ops);
	assert_non_null(j);
	for (c = 0; c < n; c++)
		job__set_rank(j, c, c, 100 + c);
	return j;
}

static struct job *new_job(struct seen *s, int n, enum steps_mode mode)
{
	return job_with(s, n, mode, 60000 * MS, NULL, NULL);
}

/* The verdicts after the first settled window: all of class cls on column col, and some. */
static void expect_verdicts(const struct seen *s, enum vclass cls, int col)
{
	int i, right = 0;

	for (i = 0; i < s->nv; i++) {
		if (s->v[i].cls == V_NONE)
			continue;
		if (s->v[i].cls != cls || s->v[i].col != col)
			print_error("verdict %d: class %d col %d (want %d, %d)\n", i, s->v[i].cls,
				    s->v[i].col, cls, col);
		assert_int_equal(s->v[i].cls, cls);
		assert_int_equal(s->v[i].col, col);
		right++;
	}
	assert_true(right > 0);
}

/* An MPI job's generator state: each column's seq and the time reached. */
struct gen {
	uint64_t seq[4];
	int k;			/* collectives so far, for skip */
	uint64_t t;
};

/*
 * An MPI loop with nb equal buckets a step: read (0.1 ms), compute (2.3 ms, + extra on the
 * slow column), buckets back to back, optimizer (0.3 ms). Column c was attached after
 * skip[c] collectives: its seqs count from there.
 */
static uint64_t bucket_xfer = 60 * US;	/* each bucket's time once all ranks came */
static uint64_t step_compute = 2300 * US;

static void mpi_buckets(struct job *j, int n, int steps, int nb, int slow, uint64_t extra,
			const int *skip, struct gen *g)
{
	uint64_t arrive[4], done, e;
	int s, b, c;

	for (s = 0; s < steps; s++) {
		for (c = 0; c < n; c++)	/* each rank's input and compute */
			arrive[c] = g->t + 100 * US + step_compute + (c == slow ? extra : 0);
		for (b = 0; b < nb; b++, g->k++) {
			done = 0;
			for (c = 0; c < n; c++)
				done = arrive[c] > done ? arrive[c] : done;
			done += bucket_xfer;
			for (c = 0; c < n; c++) {
				if (g->k >= skip[c])
					job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 7,
						     ++g->seq[c], 256 << 10, arrive[c], done + c * US);
				arrive[c] = done + c * US + 5 * US;
			}
		}
		e = arrive[0] + 300 * US;
		for (c = 1; c < n; c++)
			e = arrive[c] + 300 * US > e ? arrive[c] + 300 * US : e;
		g->t = e;
		job__advance(j, g->t, false);
	}
}

/*
 * Asynchronous buckets (they return at once): each rank computes (3 ms, + extra on the slow
 * one), launches nb buckets 1 ms apart (of sizes 1, 2, 3 MiB..., or all of 1 MiB: equal),
 * then waits (marked, off CPU) until the last one completes on every rank. The slow rank
 * waits least: its peers' longer waits are no work of theirs, and it is late. With
 * in_order, the model looks in only after its peers' launches, before the slow rank's (their
 * records come first, as live).
 */
static void async_steps_of(struct job *j, int steps, int nb, bool equal, int slow,
			   uint64_t extra, bool in_order, uint64_t *seq, uint64_t *tp)
{
	uint64_t t = 1000 * MS, at[4], done, last = (nb - 1) * MS;
	int s, b, c, i;

	for (s = 0; s < steps; s++) {
		for (done = 0, i = 0; i < 4; i++) {
			c = in_order ? (slow + 1 + i) % 4 : i;
			at[c] = t + 3 * MS + (c == slow ? extra : 0) + c * 7 * US;
			if (in_order && c == slow)
				job__advance(j, at[c], false);
			for (b = 0; b < nb; b++)
				job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, ++seq[c],
					     (equal ? 1 : 1 + b) << 20, at[c] + b * MS,
					     at[c] + b * MS + 10 * US);
			done = at[c] + last + 500 * US > done ? at[c] + last + 500 * US : done;
		}
		for (c = 0; c < 4; c++) {
			uint64_t w = at[c] + last + 20 * US;

			job__on_coll(j, c, 100 + c, RS_OP_STEP_BACKWARD, RS_LIB_TORCH, 0, 0, 0, w, w);
			job__on_off(j, c, 100 + c, w, done + c * US, 0, 202);
		}
		t = done + 10 * US;
		if (!in_order)
			job__advance(j, t, false);
	}
	*tp = t;
}

static void async_steps_slow(struct job *j, int steps, int slow, uint64_t extra, uint64_t *seq,
			     uint64_t *tp)
{
	async_steps_of(j, steps, 3, false, slow, extra, false, seq, tp);
}

static void async_steps(struct job *j, int steps, uint64_t *seq, uint64_t *tp)
{
	async_steps_slow(j, steps, -1, 0, seq, tp);
}

static void async_buckets(struct job *j, int steps, int slow, uint64_t extra)
{
	uint64_t seq[4] = {}, t;

	async_steps_slow(j, steps, slow, extra, seq, &t);
	job__advance(j, t + 1000 * MS, true);
}

/*
 * 30 steps of asynchronous buckets, then a 31st whose buckets are launched and whose wait
 * began but never ends in what was recorded (odd: rank 1's last bucket is another size, so
 * it never completes). The 31st is no step: its wait is not over. With odd, the launch of
 * the other size is there to see: divergent on rank 1, though no step ends after it.
 */
static void async_cut_in_wait(struct job *j, bool odd)
{
	uint64_t seq[4] = {}, t;
	int c, b;

	async_steps(j, 30, seq, &t);
	for (c = 0; c < 4; c++) {
		uint64_t at = t + 3 * MS, w = at + 2 * MS + 20 * US;

		for (b = 0; b < 3; b++)
			job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, ++seq[c],
				     (uint64_t)(odd && c == 1 && b == 2 ? 5 : 1 + b) << 20,
				     at + b * MS, at + b * MS + 10 * US);
		job__on_coll(j, c, 100 + c, RS_OP_STEP_BACKWARD, RS_LIB_TORCH, 0, 0, 0, w, w);
		job__on_off(j, c, 100 + c, w, w + 300 * US, 0, 202);	/* the first of the waits */
	}
	job__advance(j, t + 10 * MS, false);
	job__advance(j, t + 10 * MS, true);
}

static void async_recording_cut_in_a_wait__no_step_and_the_odd_launch_named(void **state)
{
	static struct seen s;
	struct job *j;
	int i, div;

	for (i = 0; i < 2; i++) {
		j = new_job(&s, 4, STEPS_AUTO);
		async_cut_in_wait(j, i);
		/* step 0 has no start: 29 steps of the 30, and not the cut one */
		assert_int_equal(s.steps[0], 29);
		assert_int_equal(s.steps[3], 29);
		for (div = 0; div < s.nv && s.v[div].cls != V_DIVERGENT; div++)
			;
		if (i) {
			assert_true(div < s.nv);
			assert_int_equal(s.v[div].col, 1);
		} else {
			assert_int_equal(div, s.nv);
		}
		job__free(j);
	}
}

/*
 * 30 steps of asynchronous buckets, then a 31st whose 3 buckets each get their own wait (as
 * with one handle a bucket): the first two waits end, the third begins and never ends in what
 * was recorded (a peer died: its collective never completes). The 31st is no step: seeing
 * the rank enter that wait is no sign its step is over.
 */
static void async_last_of_the_waits_never_ends__no_step(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 4, STEPS_AUTO);
	uint64_t seq[4] = {}, t;
	int c, b;

	async_steps(j, 30, seq, &t);
	for (c = 0; c < 4; c++) {
		uint64_t at = t + 3 * MS, w = at + 2 * MS + 20 * US;

		for (b = 0; b < 3; b++)
			job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, ++seq[c],
				     (1 + b) << 20, at + b * MS, at + b * MS + 10 * US);
		for (b = 0; b < 3; b++) {
			job__on_coll(j, c, 100 + c, RS_OP_STEP_BACKWARD, RS_LIB_TORCH, 0, 0, 0,
				     w + b * 10 * US, w + b * 10 * US);
			if (b < 2)
				job__on_off(j, c, 100 + c, w + b * 10 * US, w + b * 10 * US + 2 * US,
					    0, 202);
		}
	}
	job__advance(j, t + 10 * MS, false);
	job__advance(j, t + 10 * MS, true);
	assert_int_equal(s.steps[0], 29);
	assert_int_equal(s.steps[3], 29);
	job__free(j);
}

/*
 * 30 steps of asynchronous buckets, then a 31st whose buckets are launched and return, and
 * what was recorded ends before the rank waits for them (each step before it waited). The
 * 31st is no step: the steps before ended with their wait.
 */
static void async_recording_cut_before_the_wait__no_step(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 4, STEPS_AUTO);
	uint64_t seq[4] = {}, t;
	int c, b;

	async_steps(j, 30, seq, &t);
	for (c = 0; c < 4; c++)
		for (b = 0; b < 3; b++)
			job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, ++seq[c],
				     (1 + b) << 20, t + 3 * MS + b * MS, t + 3 * MS + b * MS + 10 * US);
	job__advance(j, t + 6 * MS, false);
	job__advance(j, t + 6 * MS, true);
	assert_int_equal(s.steps[0], 29);
	assert_int_equal(s.steps[3], 29);
	job__free(j);
}

static void async_buckets__slow_rank_waits_least__compute_on_it(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 4, STEPS_AUTO);

	async_buckets(j, 120, 2, 2 * MS);
	assert_true(s.steps[0] > 100);
	expect_verdicts(&s, V_COMPUTE, 2);
	job__free(j);
}

/*
 * Eight equal asynchronous buckets a step, 1 ms apart, the reference rank (0) 6 ms late to
 * launch them: its launches return near its peers' later ones, and pairing returns would line
 * it up a bucket off, cutting its peers' steps in their launches. The ends of the waits line
 * them up: every rank's steps end together, compute on rank 0.
 */
static void async_equal_buckets__reference_late__steps_end_together(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 4, STEPS_AUTO);
	uint64_t seq[4] = {}, t;
	int c;

	async_steps_of(j, 120, 8, true, 0, 6 * MS, true, seq, &t);
	job__advance(j, t + 1000 * MS, true);
	assert_true(s.steps[0] > 100);
	for (c = 1; c < 4; c++) {
		assert_int_equal(s.steps[c], s.steps[0]);
		assert_true(s.end[c] < s.end[0] + 50 * US && s.end[0] < s.end[c] + 50 * US);
	}
	expect_verdicts(&s, V_COMPUTE, 0);
	job__free(j);
}

/*
 * Eight asynchronous buckets a step on 4 ranks, each launched after a slice of compute (1 ms;
 * slow_slice on rank slow), then a wait for all of them and 150 us of optimizer. With
 * preempt, every 5th step rank 0 is runnable and not running for 400 us between its last
 * launch's return and its wait.
 */
static void sliced_async(struct job *j, int steps, int slow, uint64_t slow_slice, bool preempt)
{
	uint64_t seq[4] = {}, t = 1000 * MS, done, last, slice;
	int k, b, c;

	for (k = 0; k < steps; k++) {
		done = t + 8 * slow_slice + 120 * US;
		for (c = 0; c < 4; c++) {
			slice = c == slow ? slow_slice : 1 * MS;
			for (b = 0; b < 8; b++)
				job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, ++seq[c],
					     1 << 20, t + (b + 1) * slice,
					     t + (b + 1) * slice + 10 * US);
			last = t + 8 * slice + 20 * US;
			if (preempt && !c && k % 5 == 4) {
				job__on_off(j, c, 100 + c, last, last + 400 * US, 400 * US, -1);
				last += 400 * US;
			}
			job__on_coll(j, c, 100 + c, RS_OP_STEP_BACKWARD, RS_LIB_TORCH, 0, 0, 0,
				     last, last);
			job__on_off(j, c, 100 + c, last, done + c * US, 0, 202);
		}
		t = done + 150 * US;
		job__advance(j, t, false);
	}
	job__advance(j, t + 1000 * MS, true);
}

/*
 * The reference rank (0) slices 2.25 ms and waits 0.1 ms, so its pause after a step's last
 * launch (its wait, the optimizer and its first slice: 2.51 ms) is not clearly longer than
 * its other slices; its peers wait 10 ms there. Steps end at the job's longest pause: every
 * rank's steps are the job's 8 launches, compute on rank 0.
 */
static void async_sliced_buckets__reference_late__steps_of_eight(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 4, STEPS_AUTO);
	int c;

	sliced_async(j, 120, 0, 2250 * US, false);
	assert_int_equal(s.last_period, 8);
	assert_true(s.steps[0] > 100);
	for (c = 1; c < 4; c++)
		assert_int_equal(s.steps[c], s.steps[0]);
	expect_verdicts(&s, V_COMPUTE, 0);
	job__free(j);
}

/*
 * Rank 1 slices 1.5 ms; every 5th step rank 0 is preempted for 400 us between its last
 * launch's return and its wait (a loaded host): the wait is still for that launch, and the
 * step ends where the wait does, not at the launch's return (a step of 8 ms, then one of 16).
 */
static void async_wait_late_after_last_launch__step_ends_with_the_wait(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 4, STEPS_AUTO);
	int c;

	sliced_async(j, 60, 1, 1500 * US, true);
	assert_true(s.steps[0] > 50);
	for (c = 0; c < 4; c++) {
		assert_int_equal(s.steps[c], s.steps[0]);
		if (s.dmin[c] < 12 * MS)
			print_error("rank %d: a step of %" PRIu64 " us\n", c, (uint64_t)(s.dmin[c] / US));
		assert_true(s.dmin[c] >= 12 * MS);
	}
	expect_verdicts(&s, V_COMPUTE, 1);
	job__free(j);
}

static void equal_buckets__slow_rank__compute_on_it(void **state)
{
	static const int nbs[] = { 3, 8 };
	static const int skip[] = { 0, 7, 2, 11 };
	static struct seen s;
	struct job *j;
	struct gen g;
	int i;

	for (i = 0; i < 2; i++) {
		j = new_job(&s, 4, STEPS_AUTO);
		g = (struct gen){ .t = 1000 * MS };
		mpi_buckets(j, 4, 120, nbs[i], 2, 4 * MS, skip, &g);
		job__advance(j, g.t + 1000 * MS, true);
		/* steps of nb collectives, not of one */
		assert_true(s.steps[0] > 60);
		assert_true(s.colls[0][nbs[i] < 7 ? nbs[i] : 7] >= (uint32_t)s.steps[0] - 2);
		assert_int_equal(s.last_period, nbs[i]);
		expect_verdicts(&s, V_COMPUTE, 2);
		/* the step's ops as text: 3 fit; of 8, 7 fit in 127 characters, then " ..." */
		assert_string_equal(s.sig[1], i == 0 ?
				    "allreduce:262144 allreduce:262144 allreduce:262144" :
				    "allreduce:262144 allreduce:262144 allreduce:262144 "
				    "allreduce:262144 allreduce:262144 allreduce:262144 "
				    "allreduce:262144 ...");
		job__free(j);
	}
}

static void equal_buckets__healthy__no_verdict(void **state)
{
	static const int skip[] = { 0, 3, 5, 1 };
	static struct seen s;
	struct job *j;
	struct gen g = { .t = 1000 * MS };
	int i;

	j = new_job(&s, 4, STEPS_AUTO);
	mpi_buckets(j, 4, 200, 3, -1, 0, skip, &g);
	job__advance(j, g.t + 1000 * MS, true);
	assert_true(s.steps[0] > 150);
	for (i = 0; i < s.nv; i++)
		assert_int_equal(s.v[i].cls, V_NONE);
	assert_true(s.nv > 0);
	job__free(j);
}

/*
 * Column 2 computes 8 ms more in every 12th step only: a window of 8 steps holds one such step
 * at most, never twice, so it is judged over every step kept. Intermittent compute on it, in
 * about 1 of 12 of those steps; the verdicts before a second slow step came say nothing.
 */
static void late_every_12th_step__intermittent_from_the_steps_kept(void **state)
{
	static const int skip[] = { 0, 0, 0, 0 };
	static struct seen s;
	struct job *j = new_job(&s, 4, STEPS_AUTO);
	struct gen g = { .t = 1000 * MS };
	int i, named = 0;
	double share;

	for (i = 0; i < 10; i++) {
		mpi_buckets(j, 4, 11, 3, -1, 0, skip, &g);
		mpi_buckets(j, 4, 1, 3, 2, 8 * MS, skip, &g);
	}
	job__advance(j, g.t + 1000 * MS, true);
	assert_true(s.steps[0] > 100);
	for (i = 0; i < s.nv; i++) {
		if (s.v[i].cls == V_NONE)
			continue;
		assert_int_equal(s.v[i].cls, V_COMPUTE);
		assert_int_equal(s.v[i].col, 2);
		assert_true(s.v[i].v.intermittent);
		share = (double)s.v[i].v.hits / s.v[i].v.nsteps;
		assert_true(share >= 1.0 / 16 && share < 1.0 / 9);
		/* the window it names is longer than one of 8 steps */
		assert_true(s.v[i].last - s.v[i].first + 1 > 8);
		named++;
	}
	assert_true(named > 0);
	job__free(j);
}

/*
 * Column 2 computes 8 ms more in two steps 11 apart, and the job ends 6 steps after the
 * second: no window of 8 holds both, the longer view does. Steps on time between them make
 * them two, not one burst: named from the longer view, not after yet another window. Two 3
 * steps apart may be one burst of contention: not named before it comes again.
 */
static void late_twice_eleven_steps_apart__named_soon_after_the_second(void **state)
{
	static const int skip[] = { 0, 0, 0, 0 };
	static const int apart[] = { 11, 3 };
	static struct seen s;
	int i, a, named;

	for (a = 0; a < 2; a++) {
		struct job *j = new_job(&s, 4, STEPS_AUTO);
		struct gen g = { .t = 1000 * MS };

		mpi_buckets(j, 4, 10, 3, -1, 0, skip, &g);
		mpi_buckets(j, 4, 1, 3, 2, 8 * MS, skip, &g);
		mpi_buckets(j, 4, apart[a] - 1, 3, -1, 0, skip, &g);
		mpi_buckets(j, 4, 1, 3, 2, 8 * MS, skip, &g);
		mpi_buckets(j, 4, 6, 3, -1, 0, skip, &g);
		job__advance(j, g.t + 1000 * MS, true);
		for (named = 0, i = 0; i < s.nv; i++) {
			if (s.v[i].cls == V_NONE)
				continue;
			assert_int_equal(s.v[i].cls, V_COMPUTE);
			assert_int_equal(s.v[i].col, 2);
			assert_true(s.v[i].v.intermittent);
			assert_int_equal(s.v[i].v.hits, 2);
			named++;
		}
		if ((named > 0) != (a == 0))
			print_error("%d apart: %d verdict(s)\n", apart[a], named);
		assert_int_equal(named > 0, a == 0);
		job__free(j);
	}
}

/*
 * Six ranks, four layers a step, each with its all-reduce. Column 5 computes `extra` more
 * before every one; at each layer another of the others computes 0.8 ms more and another
 * 0.8 ms less (noise of both signs, taking turns). With 0.6 ms extra it is late in every
 * step against its peers' median (2.4 ms a step) but never the last to come: the job waits
 * for the noise, not for it, and there is nobody to name. With 1.2 ms it comes last at every
 * layer and is named.
 */
static void layers_with_noise_taking_turns(struct job *j, int steps, uint64_t extra)
{
	uint64_t seq[6] = { 0 }, t = 1000 * MS, at[6], done;
	int s, b, c;

	for (s = 0; s < steps; s++) {
		for (c = 0; c < 6; c++)
			at[c] = t;
		for (b = 0; b < 4; b++) {
			for (done = 0, c = 0; c < 6; c++) {
				at[c] += 2 * MS + (c == 5 ? extra : 0) + (c == (s + b) % 5 ? 800 * US : 0);
				at[c] -= c == (s + b + 2) % 5 ? 800 * US : 0;
				done = at[c] > done ? at[c] : done;
			}
			done += 60 * US;
			for (c = 0; c < 6; c++) {
				job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, ++seq[c],
					     (uint64_t)(b + 1) << 16, at[c], done + c * US);
				at[c] = done + c * US;
			}
		}
		t = done + 300 * US;
		job__advance(j, t, false);
	}
	job__advance(j, t + 1000 * MS, true);
}

static void layers_late_everywhere_never_last__nobody_named(void **state)
{
	static const uint64_t extra[] = { 600 * US, 1200 * US };
	static struct seen s;
	int a, i, named;

	for (a = 0; a < 2; a++) {
		struct job *j = new_job(&s, 6, STEPS_AUTO);

		layers_with_noise_taking_turns(j, 40, extra[a]);
		for (named = 0, i = 0; i < s.nv; i++) {
			if (s.v[i].cls == V_NONE)
				continue;
			if (a == 0)
				print_error("0.6 ms: verdict class %d col %d\n", s.v[i].cls,
					    s.v[i].col);
			assert_int_equal(s.v[i].cls, V_COMPUTE);
			assert_int_equal(s.v[i].col, 5);
			named++;
		}
		assert_true(s.steps[5] >= 38);
		assert_int_equal(named > 0, a == 1);
		job__free(j);
	}
}

/*
 * Column 2 computes 8 ms more in every 6th step: a window of 8 steps that holds two of them
 * tells it (2 of 8), one that holds one does not, so the windows that name it overstate its
 * share. Told over every step kept, it is 1 in 6.
 */
static void late_every_6th_step__share_over_every_step_kept(void **state)
{
	static const int skip[] = { 0, 0, 0, 0 };
	static struct seen s;
	struct job *j = new_job(&s, 4, STEPS_AUTO);
	struct gen g = { .t = 1000 * MS };
	int i, named = 0;
	double share;

	for (i = 0; i < 20; i++) {
		mpi_buckets(j, 4, 5, 3, -1, 0, skip, &g);
		mpi_buckets(j, 4, 1, 3, 2, 8 * MS, skip, &g);
	}
	job__advance(j, g.t + 1000 * MS, true);
	for (i = 0; i < s.nv; i++) {
		if (s.v[i].cls == V_NONE)
			continue;
		assert_int_equal(s.v[i].cls, V_COMPUTE);
		assert_int_equal(s.v[i].col, 2);
		assert_true(s.v[i].v.intermittent);
		if (s.v[i].last < 64)
			continue;
		share = (double)s.v[i].v.hits / s.v[i].v.nsteps;
		if (share < 1.0 / 7 || share > 1.0 / 5)
			print_error("verdict at step %llu: %d of %d steps\n",
				    (unsigned long long)s.v[i].last, s.v[i].v.hits, s.v[i].v.nsteps);
		assert_true(share >= 1.0 / 7 && share <= 1.0 / 5);
		named++;
	}
	assert_true(named > 0);
	job__free(j);
}

/* Every rank gone, rank 2 killed first: rank_exited on it, at the step after the last one
 * (no empty steps of nobody counted on), and no step line for a step no rank ran. */
static void all_ranks_exit__rank_exited_at_the_next_step(void **state)
{
	static const int skip[] = { 0, 0, 0, 0 };
	static struct seen s;
	struct job *j;
	struct gen g = { .t = 1000 * MS };
	int i, c, steps;

	j = new_job(&s, 4, STEPS_AUTO);
	mpi_buckets(j, 4, 100, 3, -1, 0, skip, &g);
	job__on_exit(j, 2, g.t + 1 * MS, 9);	/* SIGKILL */
	for (c = 0; c < 4; c++)
		if (c != 2)
			job__on_exit(j, c, g.t + 50 * MS, 0);
	job__advance(j, g.t + 5000 * MS, false);
	steps = s.steps[0];
	job__advance(j, g.t + 6000 * MS, true);
	assert_int_equal(s.steps[0], steps);
	for (i = 0; i < s.nv && s.v[i].cls != V_RANK_EXITED; i++)
		;
	assert_true(i < s.nv);
	assert_int_equal(s.v[i].col, 2);
	assert_true(s.v[i].step <= (uint64_t)steps + 1);
	job__free(j);
}

static void pattern_change__relearned_and_reported(void **state)
{
	static const int skip[] = { 0, 4 };
	static struct seen s;
	struct job *j;
	struct gen g = { .t = 1000 * MS };
	int before, i;

	j = new_job(&s, 2, STEPS_AUTO);
	mpi_buckets(j, 2, 60, 3, -1, 0, skip, &g);
	assert_int_equal(s.last_period, 3);
	assert_int_equal(s.changed, 0);
	before = s.steps[0];
	/* a new phase of the model: 5 buckets a step from here, and rank 1 slow in it */
	mpi_buckets(j, 2, 80, 5, 1, 4 * MS, skip, &g);
	job__advance(j, g.t + 1000 * MS, true);
	assert_int_equal(s.changed, 1);
	assert_int_equal(s.last_period, 5);
	assert_true(s.colls[0][5] > 40);
	assert_true(s.steps[0] > before + 40);
	assert_true(s.nv > 0 && s.v[s.nv - 1].cls == V_COMPUTE && s.v[s.nv - 1].col == 1);
	job__free(j);

	/* 30 ms of compute and buckets of 3 ms each, healthy: 5 of them a step take 6 ms more
	 * than 3 did, and the steps built before the change are no reference for those after */
	bucket_xfer = 3 * MS;
	step_compute = 30 * MS;
	g = (struct gen){ .t = 1000 * MS };
	j = new_job(&s, 2, STEPS_AUTO);
	mpi_buckets(j, 2, 60, 3, -1, 0, skip, &g);
	mpi_buckets(j, 2, 80, 5, -1, 0, skip, &g);
	job__advance(j, g.t + 1000 * MS, true);
	bucket_xfer = 60 * US;
	step_compute = 2300 * US;
	assert_int_equal(s.changed, 1);
	assert_int_equal(s.last_period, 5);
	for (i = 0; i < s.nv; i++)
		assert_int_equal(s.v[i].cls, V_NONE);
	job__free(j);
}

/*
 * DDP (gloo): each rank's step is its input (rank 1 starved: 58 ms in a pipe read), forward
 * (prepare_for_forward marks the step), backward, finalize_backward (the wait for the bucket
 * all-reduces on gloo's thread, entry-only), optimizer. Rank 1 was attached a step before
 * rank 0, so its marker numbers run one ahead.
 */
static void ddp_attached_a_step_apart__starved_rank_named(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 2, STEPS_AUTO);
	uint64_t t = 1000 * MS, fwd[2], bwd[2], done, in0, in1;
	int k;

	for (k = 0; k < 80; k++) {
		in0 = 2 * MS;
		in1 = 58 * MS;
		fwd[0] = t + in0;
		fwd[1] = t + in1;
		bwd[0] = fwd[0] + 20 * MS;
		bwd[1] = fwd[1] + 20 * MS;
		done = (bwd[0] > bwd[1] ? bwd[0] : bwd[1]) + 3 * MS;
		/* the input: rank 0 reads a ready batch, rank 1 waits in the pipe read */
		job__on_io(j, 0, 100, false, RS_FD_PIPE, false, t, t + in0, 4096);
		job__on_io(j, 1, 101, false, RS_FD_PIPE, false, t, t + in1, 4096);
		job__on_coll(j, 0, 100, RS_OP_STEP_FORWARD, RS_LIB_TORCH, 9, k + 1, 0, fwd[0], 0);
		job__on_coll(j, 1, 101, RS_OP_STEP_FORWARD, RS_LIB_TORCH, 9, k + 2, 0, fwd[1], 0);
		/* gloo's bucket all-reduces, entered from its worker thread during backward */
		job__on_coll(j, 0, 200, RS_OP_ALLREDUCE, RS_LIB_GLOO, 5, 2 * k + 1, 0,
			     bwd[0] - 5 * MS, 0);
		job__on_coll(j, 0, 200, RS_OP_ALLREDUCE, RS_LIB_GLOO, 5, 2 * k + 2, 0,
			     bwd[0] - 1 * MS, 0);
		job__on_coll(j, 1, 201, RS_OP_ALLREDUCE, RS_LIB_GLOO, 5, 2 * k + 3, 0,
			     bwd[1] - 5 * MS, 0);
		job__on_coll(j, 1, 201, RS_OP_ALLREDUCE, RS_LIB_GLOO, 5, 2 * k + 4, 0,
			     bwd[1] - 1 * MS, 0);
		job__on_coll(j, 0, 100, RS_OP_STEP_BACKWARD, RS_LIB_TORCH, 9, k + 1, 0, bwd[0], 0);
		job__on_coll(j, 1, 101, RS_OP_STEP_BACKWARD, RS_LIB_TORCH, 9, k + 2, 0, bwd[1], 0);
		/* the wait for the buckets: a futex after finalize_backward */
		job__on_off(j, 0, 100, bwd[0] + 10 * US, done, 5 * US, 202);
		if (done > bwd[1] + 200 * US)
			job__on_off(j, 1, 101, bwd[1] + 10 * US, done, 5 * US, 202);
		t = done + 2 * MS;	/* the optimizer */
		job__advance(j, t, false);
	}
	job__advance(j, t + 1000 * MS, true);
	assert_true(s.steps[0] > 60);
	assert_true(s.steps[1] > 60);
	expect_verdicts(&s, V_INPUT, 1);
	job__free(j);
}

/*
 * --steps marker:train_step on an MPI loop, no DDP: each rank calls the marker at the top of
 * its step, computes (rank 1: 4 ms more), then one all-reduce that returns on both at once.
 * Rank 1 was attached a step after rank 0, so its marker numbers run one behind. Lined up by
 * the all-reduce's exits, rank 1 is 4 ms late a step (its extra compute); numbered from each
 * attach, it would look a whole step off.
 */
static void marker_attached_a_step_apart__skew_is_the_extra_compute(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 2, STEPS_MARKER);
	uint64_t t = 1000 * MS, enter0, enter1, done;
	int k, i, late = 0;

	for (k = 0; k < 80; k++) {
		enter0 = t + 1 * MS;
		enter1 = t + 5 * MS;
		done = enter1 + 50 * US;
		job__on_coll(j, 0, 100, RS_OP_STEP_FORWARD, RS_LIB_MPI, 9, k + 1, 0, t, 0);
		if (k)
			job__on_coll(j, 1, 101, RS_OP_STEP_FORWARD, RS_LIB_MPI, 9, k, 0, t, 0);
		job__on_coll(j, 0, 100, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, k + 1, 4096, enter0, done);
		job__on_coll(j, 1, 101, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, k + 1, 4096, enter1, done);
		t = done + 300 * US;	/* the optimizer */
		job__advance(j, t, false);
	}
	job__advance(j, t + 1000 * MS, true);
	assert_true(s.steps[0] > 60);
	assert_true(s.steps[1] > 60);
	expect_verdicts(&s, V_COMPUTE, 1);
	for (i = 0; i < s.nv; i++) {
		if (s.v[i].cls == V_NONE)
			continue;
		if (s.v[i].v.skew_ns < 3 * (int64_t)MS || s.v[i].v.skew_ns > 5 * (int64_t)MS)
			print_error("verdict %d: skew %lld ns, want ~4 ms\n", i,
				    (long long)s.v[i].v.skew_ns);
		assert_true(s.v[i].v.skew_ns >= 3 * (int64_t)MS &&
			    s.v[i].v.skew_ns <= 5 * (int64_t)MS);
		late++;
	}
	assert_true(late > 0);
	job__free(j);
}

/*
 * A 2-stage pipeline (GPipe, 4 micro-batches, eager sends): stage 0 (rank 0) computes c0 a
 * micro-batch and sends each activation; stage 1 (rank 1) receives it and computes c1; then
 * stage 1 computes each gradient and sends it back, and stage 0 receives it and computes c0.
 * A send reaches the other stage link after it returns. Rank 1 was attached after its first 5
 * receives.
 */
static void gpipe(struct job *j, int steps, uint64_t c0, uint64_t c1, uint64_t link)
{
	uint64_t t = 1000 * MS, t0 = t, t1 = t, x, seq[2] = {}, sent[4];
	int k, m, skip = 5;

	for (k = 0; k < steps; k++) {
		t0 += 300 * US;		/* input and optimizer, each stage on its own */
		t1 += 300 * US;
		for (m = 0; m < 4; m++) {	/* forward */
			t0 += c0;
			job__on_coll_peer(j, 0, 100, RS_OP_SEND, RS_LIB_MPI, 7, ++seq[0], 64 << 10,
					  t0, t0 + 20 * US, 1);
			sent[m] = t0 += 20 * US;
		}
		for (m = 0; m < 4; m++) {
			x = (t1 > sent[m] + link ? t1 : sent[m] + link) + 20 * US;
			if (skip)
				skip--;
			else
				job__on_coll_peer(j, 1, 101, RS_OP_RECV, RS_LIB_MPI, 7, ++seq[1],
						  64 << 10, t1, x, 0);
			t1 = x + c1;
		}
		for (m = 0; m < 4; m++) {	/* backward */
			t1 += c1;
			job__on_coll_peer(j, 1, 101, RS_OP_SEND, RS_LIB_MPI, 7, ++seq[1], 64 << 10,
					  t1, t1 + 20 * US, 0);
			sent[m] = t1 += 20 * US;
		}
		for (m = 0; m < 4; m++) {
			x = (t0 > sent[m] + link ? t0 : sent[m] + link) + 20 * US;
			job__on_coll_peer(j, 0, 100, RS_OP_RECV, RS_LIB_MPI, 7, ++seq[0], 64 << 10,
					  t0, x, 1);
			t0 = x + c0;
		}
		t = t0 > t1 ? t0 : t1;
		job__advance(j, t, false);
	}
	job__advance(j, t + 1000 * MS, true);
}

static void pipeline_two_stages__stages_micro_batches_and_slow_stage(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 2, STEPS_AUTO);

	gpipe(j, 150, 300 * US, 1100 * US, 0);
	assert_true(s.steps[0] > 100 && s.steps[1] > 100);
	assert_int_equal(s.last_period, 8);
	assert_int_equal(s.stages, 2);
	assert_int_equal(s.stage[0], 0);
	assert_int_equal(s.stage[1], 1);
	assert_int_equal(s.micro, 4);
	/* stage 0 waits for the slow stage: its bubble is the larger */
	assert_true(s.p2p[0] > 2 * s.p2p[1]);
	expect_verdicts(&s, V_COMPUTE, 1);
	job__free(j);
}

/* The step's gradient norm: an all-reduce on MPI's world (comm 7) of n ranks, entered at each
 * rank's t and returned by all 30 us after the last came; each rank goes on `after` later.
 * Returns the return. */
static uint64_t world_allreduce(struct job *j, int n, uint64_t *t, uint64_t *seq,
				uint64_t after)
{
	uint64_t done = 0;
	int r;

	for (r = 0; r < n; r++)
		done = t[r] > done ? t[r] : done;
	done += 30 * US;
	for (r = 0; r < n; r++) {
		job__on_coll(j, r, 100 + r, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, ++seq[r], 8, t[r], done);
		t[r] = done + after;
	}
	return done;
}

/*
 * A 4-stage pipeline on MPI's world (GPipe, 3 micro-batches): stage s receives each
 * activation from s-1, computes c[s] and sends it to s+1, then the gradients go back the same
 * way; the middle stages make twice the sends and receives of the ends. Each step ends with
 * the gradient norm, an all-reduce on the same communicator, which all 4 return from
 * together: the one collective they share. From step slow_from on, the link between stages 1
 * and 2 is slower: a send between them blocks slow_ns (the transfer) before it returns. With
 * rd (NULL: none), a stage reads a file each step, at its start or before its first send.
 */
struct pp_read {
	int stage;
	uint64_t ns;
	bool before_send;
};

static uint64_t pp_read(struct job *j, int s, uint64_t t, uint64_t ns)
{
	job__on_io(j, s, 100 + s, false, RS_FD_REG, false, t, t + ns, 1 << 20);
	return t + ns;
}

static void gpipe4(struct job *j, int steps, const uint64_t *c, int slow_from, uint64_t slow_ns,
		   const struct pp_read *rd)
{
	uint64_t t[4], seq[4] = {}, fwd[4][3], bwd[4][3], x, done = 1000 * MS, l;
	int k, m, s;

	for (s = 0; s < 4; s++)
		t[s] = done;
	for (k = 0; k < steps; k++) {
		for (s = 0; s < 4; s++) {
			t[s] += 300 * US;	/* input and optimizer */
			for (m = 0; m < 3; m++) {
				if (rd && rd->stage == s && !m && !rd->before_send)
					t[s] = pp_read(j, s, t[s], rd->ns);
				if (s) {
					x = (t[s] > fwd[s - 1][m] ? t[s] : fwd[s - 1][m]) + 20 * US;
					job__on_coll_peer(j, s, 100 + s, RS_OP_RECV, RS_LIB_MPI, 7,
							  ++seq[s], 64 << 10, t[s], x, s - 1);
					t[s] = x;
				}
				t[s] += c[s];
				if (rd && rd->stage == s && !m && rd->before_send)
					t[s] = pp_read(j, s, t[s], rd->ns);
				if (s < 3) {
					l = s == 1 && k >= slow_from ? slow_ns : 20 * US;
					job__on_coll_peer(j, s, 100 + s, RS_OP_SEND, RS_LIB_MPI, 7,
							  ++seq[s], 64 << 10, t[s], t[s] + l,
							  s + 1);
					t[s] += l;
				}
				fwd[s][m] = t[s];
			}
		}
		for (s = 3; s >= 0; s--) {
			for (m = 2; m >= 0; m--) {
				if (s < 3) {
					x = (t[s] > bwd[s + 1][m] ? t[s] : bwd[s + 1][m]) + 20 * US;
					job__on_coll_peer(j, s, 100 + s, RS_OP_RECV, RS_LIB_MPI, 7,
							  ++seq[s], 64 << 10, t[s], x, s + 1);
					t[s] = x;
				}
				t[s] += 2 * c[s];
				if (s) {
					l = s == 2 && k >= slow_from ? slow_ns : 20 * US;
					job__on_coll_peer(j, s, 100 + s, RS_OP_SEND, RS_LIB_MPI, 7,
							  ++seq[s], 64 << 10, t[s], t[s] + l,
							  s - 1);
					t[s] += l;
				}
				bwd[s][m] = t[s];
			}
		}
		done = world_allreduce(j, 4, t, seq, 0);
		job__advance(j, done, false);
	}
	job__advance(j, done + 1000 * MS, true);
}

static void pipeline_four_stages__steps_end_together_at_the_shared_all_reduce(void **state)
{
	static struct seen s;
	static const uint64_t c[4] = { 400 * US, 400 * US, 1200 * US, 400 * US };
	struct job *j = new_job(&s, 4, STEPS_AUTO);
	int k;

	gpipe4(j, 120, c, INT_MAX, 0, NULL);
	/* every stage, steps of the same count and length, though its calls differ in number:
	 * all the job's 120 but step 0 (it has no start), from its first (the ends' stages make
	 * as many calls, which pair at other seqs than the reference's) to its last (ended by
	 * the all-reduce the recording ends with) */
	for (k = 0; k < 4; k++) {
		assert_int_equal(s.steps[k], 119);
		assert_true(s.dur[k] > s.dur[0] - s.dur[0] / 100 &&
			    s.dur[k] < s.dur[0] + s.dur[0] / 100);
	}
	expect_verdicts(&s, V_COMPUTE, 2);
	job__free(j);
}

/*
 * The same pipeline, its stages alike (4 ms a micro-batch), stage 2 reading a file for 5 ms each
 * step. At the start of its step, while stages 0 and 1 compute the first micro-batch (8 ms),
 * its receive waits for it all the same: it holds nobody, none. Before its first send, every
 * later stage waits for it: storage, on rank 2.
 */
static void pipeline_read_while_it_fills__none_before_a_send__storage(void **state)
{
	static const uint64_t c[4] = { 4 * MS, 4 * MS, 4 * MS, 4 * MS };
	int late;

	for (late = 0; late < 2; late++) {
		struct pp_read rd = { .stage = 2, .ns = 5 * MS, .before_send = late };
		static struct seen s;
		struct job *j;
		int i;

		memset(&s, 0, sizeof(s));
		j = new_job(&s, 4, STEPS_AUTO);
		gpipe4(j, 120, c, INT_MAX, 0, &rd);
		if (late) {
			expect_verdicts(&s, V_STORAGE, 2);
		} else {
			for (i = 0; i < s.nv; i++)
				if (s.v[i].cls != V_NONE)
					print_error("verdict %d: class %d col %d\n", i, s.v[i].cls,
						    s.v[i].col);
			for (i = 0; i < s.nv; i++)
				assert_int_equal(s.v[i].cls, V_NONE);
			assert_true(s.nv > 0);
		}
		job__free(j);
	}
}

/*
 * Two pipelines of 3 stages (Megatron's layout: stage s of replica p is rank 2s + p), each on
 * its own communicator (31 + p), so a message's peer is its stage there, not a rank: stage 2
 * of replica 1 (rank 5) receives from peer 1, which is rank 3 on its communicator (rank 1 is
 * the other replica's stage 0). One micro-batch a step, then each stage's gradients across its
 * replicas (communicator 40 + stage), then the gradient norm on the world. Stage slow computes
 * extra more in each pass, in both replicas.
 */
/* pp_replicas' time unit for compute (US: 0.4 and 0.8 ms a micro-batch) and whether the
 * work varies from step to step, on every stage alike (by up to 40%) */
static uint64_t pp_unit = US;
static bool pp_vary;

static uint64_t pp_work(uint64_t us, int k)
{
	return us * pp_unit * (10 + (pp_vary ? k * 7 % 5 : 0)) / 10;
}

static void pp_replicas(struct job *j, int steps, int slow, uint64_t extra)
{
	uint64_t t[6], seq[6] = {}, x, done = 1000 * MS;
	int k, st, p, r;

	for (r = 0; r < 6; r++)
		t[r] = done;
	for (k = 0; k < steps; k++) {
		for (p = 0; p < 2; p++) {
			for (st = 0; st < 3; st++) {	/* forward */
				r = 2 * st + p;
				if (st) {
					x = (t[r] > t[r - 2] ? t[r] : t[r - 2]) + 20 * US;
					job__on_coll_peer(j, r, 100 + r, RS_OP_RECV, RS_LIB_MPI, 31 + p,
							  ++seq[r], 64 << 10, t[r], x, st - 1);
					t[r] = x;
				}
				t[r] += pp_work(400, k) + (st == slow ? extra : 0);
				if (st < 2) {
					job__on_coll_peer(j, r, 100 + r, RS_OP_SEND, RS_LIB_MPI, 31 + p,
							  ++seq[r], 64 << 10, t[r], t[r] + 20 * US,
							  st + 1);
					t[r] += 20 * US;
				}
			}
			for (st = 2; st >= 0; st--) {	/* backward */
				r = 2 * st + p;
				if (st < 2) {
					x = (t[r] > t[r + 2] ? t[r] : t[r + 2]) + 20 * US;
					job__on_coll_peer(j, r, 100 + r, RS_OP_RECV, RS_LIB_MPI, 31 + p,
							  ++seq[r], 64 << 10, t[r], x, st + 1);
					t[r] = x;
				}
				t[r] += pp_work(800, k) + (st == slow ? extra : 0);
				if (st) {
					job__on_coll_peer(j, r, 100 + r, RS_OP_SEND, RS_LIB_MPI, 31 + p,
							  ++seq[r], 64 << 10, t[r], t[r] + 20 * US,
							  st - 1);
					t[r] += 20 * US;
				}
			}
		}
		for (st = 0; st < 3; st++) {	/* the stage's gradients, across its replicas */
			x = (t[2 * st] > t[2 * st + 1] ? t[2 * st] : t[2 * st + 1]) + 30 * US;
			for (p = 0; p < 2; p++) {
				r = 2 * st + p;
				job__on_coll(j, r, 100 + r, RS_OP_ALLREDUCE, RS_LIB_MPI, 40 + st,
					     ++seq[r], 1 << 20, t[r], x);
				t[r] = x;
			}
		}
		done = world_allreduce(j, 6, t, seq, 300 * US);
		job__advance(j, done, false);
	}
	job__advance(j, done + 1000 * MS, true);
}

static void pipeline_per_replica_communicators__stages_by_place(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 6, STEPS_AUTO);
	int r;

	pp_replicas(j, 60, -1, 0);
	assert_int_equal(s.stages, 3);
	for (r = 0; r < 6; r++) {
		assert_true(s.steps[r] > 40);
		assert_int_equal(s.stage[r], r / 2);
	}
	for (r = 0; r < s.nv; r++)
		assert_int_equal(s.v[r].cls, V_NONE);
	job__free(j);
}

/*
 * Stage 1 of both pipelines computes 1 ms more in each pass: each of its ranks is as slow as
 * its replica in the other pipeline and reaches their all-reduce on time, so no rank is late
 * against its stage's peers (the cap on a stage's lateness), but the
 * stage is busy 3.3 ms a step to the others' 1.3 ms and the pipelines run at its pace: compute,
 * on a rank of stage 1. Stage 2 as slow by a tenth of that is within a quarter: none.
 */
/* Each stage computes 48-67 ms a step (varying from step to step, on every stage alike), stage 1
 * 4.8 ms more: under a quarter of the others, but in every step, where the other stages are
 * no farther apart than their work: compute on it. Without it, none. */
static void pipeline_stage_slower_by_a_tenth__compute_on_it(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 6, STEPS_AUTO);
	int i, named = 0;

	pp_unit = 20 * US;
	pp_vary = true;
	pp_replicas(j, 60, 1, 1200 * US);
	for (i = 0; i < s.nv; i++) {
		if (s.v[i].cls == V_NONE)
			continue;
		assert_int_equal(s.v[i].cls, V_COMPUTE);
		assert_true(s.v[i].col == 2 || s.v[i].col == 3);
		named++;
	}
	assert_true(named > 0);
	job__free(j);
	j = new_job(&s, 6, STEPS_AUTO);
	pp_replicas(j, 60, -1, 0);
	for (i = 0; i < s.nv; i++)
		assert_int_equal(s.v[i].cls, V_NONE);
	job__free(j);
	pp_unit = US;
	pp_vary = false;
}

static void pipeline_stage_slower_in_every_replica__compute_on_it(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 6, STEPS_AUTO);
	int i, named = 0;

	pp_replicas(j, 60, 1, 1 * MS);
	for (i = 0; i < s.nv; i++) {
		if (s.v[i].cls == V_NONE)
			continue;
		assert_int_equal(s.v[i].cls, V_COMPUTE);
		assert_true(s.v[i].col == 2 || s.v[i].col == 3);
		named++;
	}
	assert_true(named > 0);
	job__free(j);
	j = new_job(&s, 6, STEPS_AUTO);
	pp_replicas(j, 60, 2, 100 * US);
	for (i = 0; i < s.nv; i++)
		assert_int_equal(s.v[i].cls, V_NONE);
	job__free(j);
}

/*
 * The 4-stage pipeline, equal stages, whose link between stages 1 and 2 gets slower at step
 * 40: each of its 12 sends a step takes 1 ms, not 20 us. No stage computes more: the step
 * grows by its transfers, which rankscope reads as the time both ends of a send and its
 * receive were inside them (a receive posted early waits for its send; that is no transfer).
 * Before the change: no verdict; after it: communication, on no rank.
 */
static void pipeline_link_slower_mid_run__communication(void **state)
{
	static struct seen s;
	static const uint64_t c[4] = { 400 * US, 400 * US, 400 * US, 400 * US };
	struct job *j = new_job(&s, 4, STEPS_AUTO);
	int i, comm = 0;

	gpipe4(j, 120, c, 40, 1 * MS, NULL);
	assert_int_equal(s.stages, 4);
	for (i = 0; i < s.nv; i++) {
		if (s.v[i].cls == V_NONE || s.v[i].cls == V_BUBBLE)
			continue;
		if (s.v[i].cls != V_COMMUNICATION || s.v[i].col != -1 || s.v[i].step < 40)
			print_error("verdict %d at step %" PRIu64 ": class %d col %d\n", i,
				    s.v[i].step, s.v[i].cls, s.v[i].col);
		assert_int_equal(s.v[i].cls, V_COMMUNICATION);
		assert_int_equal(s.v[i].col, -1);
		assert_true(s.v[i].step >= 40);
		comm++;
	}
	assert_true(comm > 0);
	job__free(j);
}

/*
 * A 3-stage pipeline of 2 replicas on 6 ranks (stage r % 3, replica r / 3; rank r sends its
 * activations to r + 1 and gets its gradients back, GPipe, 2 micro-batches of 2 ms a stage, on
 * the world communicator 7: the middle stage makes twice the calls of the ends), then each
 * stage's all-reduce among its replicas (communicators 30-32), then the world's 8-byte
 * all-reduce. The last stage ends its backward first, the first stage last. Rank `starved` is
 * runnable and not running for 3 ms inside its stage's all-reduce once both members came.
 */
static void pp3x2_named(struct job *j, int steps, int starved, bool own, int late_from)
{
	uint64_t t[6], seq[6] = {}, fwd[6][2], bwd[6][2], x, last, done = 1000 * MS, e;
	int k, m, r, st, g;

	for (r = 0; r < 6; r++)
		t[r] = done;
	for (k = 0; k < steps; k++) {
		for (st = 0; st < 3; st++)		/* forward */
			for (r = st; r < 6; r += 3)
				for (m = 0; m < 2; m++) {
					if (st) {
						x = (t[r] > fwd[r - 1][m] ? t[r] : fwd[r - 1][m]) +
						    20 * US;
						job__on_coll_peer(j, r, 100 + r, RS_OP_RECV, RS_LIB_MPI,
								  7, ++seq[r], 64 << 10, t[r], x, r - 1);
						t[r] = x;
					}
					t[r] += 2 * MS;
					if (st < 2) {
						job__on_coll_peer(j, r, 100 + r, RS_OP_SEND, RS_LIB_MPI,
								  7, ++seq[r], 64 << 10, t[r],
								  t[r] + 20 * US, r + 1);
						t[r] += 20 * US;
					}
					fwd[r][m] = t[r];
				}
		for (st = 2; st >= 0; st--)		/* backward */
			for (r = st; r < 6; r += 3)
				for (m = 0; m < 2; m++) {
					if (st < 2) {
						x = (t[r] > bwd[r + 1][m] ? t[r] : bwd[r + 1][m]) +
						    20 * US;
						job__on_coll_peer(j, r, 100 + r, RS_OP_RECV, RS_LIB_MPI,
								  7, ++seq[r], 64 << 10, t[r], x, r + 1);
						t[r] = x;
					}
					t[r] += 2 * MS;
					if (st) {
						job__on_coll_peer(j, r, 100 + r, RS_OP_SEND, RS_LIB_MPI,
								  7, ++seq[r], 64 << 10, t[r],
								  t[r] + 20 * US, r - 1);
						t[r] += 20 * US;
					}
					bwd[r][m] = t[r];
				}
		for (r = 0; late_from >= 0 && k >= late_from && r < 6; r++)
			if (r != 2) {		/* runnable, not running, before the all-reduce */
				job__on_off(j, r, 100 + r, t[r], t[r] + 3 * MS, 3 * MS, -1);
				t[r] += 3 * MS;
			}
		for (g = 0; g < 3; g++) {		/* each stage's all-reduce */
			last = t[g] > t[g + 3] ? t[g] : t[g + 3];
			e = last + 100 * US + (starved % 3 == g ? 3 * MS : 0);
			for (r = g; r < 6; r += 3) {
				if (r == starved)
					job__on_off(j, r, 100 + r, last, last + 3 * MS, 3 * MS, -1);
				job__on_coll(j, r, 100 + r, RS_OP_ALLREDUCE, RS_LIB_MPI,
					     own ? 60 + r : 30 + g, ++seq[r], 1 << 20, t[r], e);
				t[r] = e;
			}
		}
		done = world_allreduce(j, 6, t, seq, 200 * US);
		job__advance(j, done, false);
	}
	job__advance(j, done + 1000 * MS, true);
}

static void pp3x2(struct job *j, int steps, int starved)
{
	pp3x2_named(j, steps, starved, false, -1);
}

/*
 * The stages' all-reduces named by each process's own handle (MPI, attached after MPI_Init:
 * no two ranks share the name), and from step 40 on a host short of CPUs: every rank but 2 is
 * runnable and not running for 3 ms before its stage's all-reduce, where rank 2 waits for its
 * replica, rank 5. Nothing says when a member of such a communicator came, so rank 2's time
 * in it is no transfer: no communication verdict (it was: the collectives 3 ms slower).
 */
static void pipeline_stage_all_reduce_named_by_handles__its_wait_no_transfer(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 6, STEPS_AUTO);
	int i;

	pp3x2_named(j, 100, -1, true, 40);
	for (i = 0; i < s.nv; i++) {
		if (s.v[i].cls == V_COMMUNICATION)
			print_error("verdict %d at step %" PRIu64 ": communication\n", i, s.v[i].step);
		assert_int_not_equal(s.v[i].cls, V_COMMUNICATION);
	}
	job__free(j);
}

/* Rank 3 (first stage) starved inside its stage's all-reduce, the last to end: the step waits
 * for it, cpu_contention on rank 3. Rank 5 (last stage) starved as long inside its own, which
 * ends 4 ms before the first stage's anyway: it cost nothing, no verdict. */
static void pipeline_starved_in_its_stage_all_reduce__only_where_the_step_waits(void **state)
{
	static struct seen s;
	struct job *j;
	int i, n;

	j = new_job(&s, 6, STEPS_AUTO);
	pp3x2(j, 80, 3);
	assert_int_equal(s.stages, 3);
	expect_verdicts(&s, V_CPU_CONTENTION, 3);
	job__free(j);

	j = new_job(&s, 6, STEPS_AUTO);
	pp3x2(j, 80, 5);
	for (n = 0, i = 0; i < s.nv; i++) {
		if (s.v[i].cls == V_NONE || s.v[i].cls == V_BUBBLE)
			continue;
		print_error("verdict %d: class %d col %d\n", i, s.v[i].cls, s.v[i].col);
		n++;
	}
	assert_int_equal(n, 0);
	job__free(j);
}

/*
 * The same pipeline with equal stages: the bubble is what the schedule leaves, (S-1)/(M+S-1)
 * = 20%, and there is no verdict. With 1.5 ms between a send and its arrival at the other
 * stage, both stages idle far longer, and no stage is slower: pipeline_bubble, no rank.
 */
static void pipeline_equal_stages__bubble_verdict_only_when_over_the_schedule(void **state)
{
	static struct seen s;
	struct job *j;
	int i, bubble = 0;

	j = new_job(&s, 2, STEPS_AUTO);
	gpipe(j, 150, 700 * US, 700 * US, 0);
	assert_int_equal(s.stages, 2);
	assert_int_equal(s.micro, 4);
	assert_true(s.nv > 0);
	for (i = 0; i < s.nv; i++) {
		assert_int_equal(s.v[i].cls, V_NONE);
		assert_int_equal(s.v[i].pp.stages, 2);
		assert_true(s.v[i].pp.theory > 0.19 && s.v[i].pp.theory < 0.21);
		assert_false(s.v[i].pp.excess);
	}
	job__free(j);

	j = new_job(&s, 2, STEPS_AUTO);
	gpipe(j, 150, 700 * US, 700 * US, 1500 * US);
	for (i = 0; i < s.nv; i++) {
		if (s.v[i].cls == V_NONE)
			continue;
		assert_int_equal(s.v[i].cls, V_BUBBLE);
		assert_int_equal(s.v[i].col, -1);
		assert_true(s.v[i].pp.excess);
		assert_true(s.v[i].pp.bubble[s.v[i].pp.worst] > 1.5 * s.v[i].pp.theory);
		bubble++;
	}
	assert_true(bubble > 0);
	job__free(j);
}

/*
 * Tensor + data parallel on 4 ranks, attached mid-run: TP groups {0,1} and {2,3} each run 6
 * all-reduces a step (one a layer), then DP groups {0,2} and {1,3} all-reduce the gradients.
 * The sub-communicators were made before the attach, so each process names them by its own
 * handle, and seqs count from each rank's attach. In every all-reduce the lower rank returns
 * 400 us before the higher (two-rank all-reduces are not symmetric), so entries differ by that
 * much with no work behind it. slow: the rank that computes extra more a step, or -1. named:
 * the communicators have the same name in every member (NCCL's unique id, a communicator made
 * after the attach), TP {0,1} 10 and {2,3} 11, DP {0,2} 20 and {1,3} 21.
 */
static void tp_dp_layers(struct job *j, int steps, int layers, int slow, uint64_t extra,
			 bool named)
{
	static const int skip[] = { 0, 9, 4, 13 };
	uint64_t cur[4], seq[4][2] = {}, arrive[4], done;
	int s, l, c, g, k[4] = {};

	for (c = 0; c < 4; c++)
		cur[c] = 1000 * MS;
	for (s = 0; s < steps; s++) {
		for (l = 0; l <= layers; l++) {	/* the layers on the TP comm, then the DP bucket */
			for (c = 0; c < 4; c++)
				arrive[c] = cur[c] + (l < layers ? 380 * US : 500 * US) +
					    (c == slow && l < layers ? extra / layers : 0);
			for (g = 0; g < 2; g++) {
				/* TP pairs (2g, 2g+1), DP pairs (g, g+2) */
				int lo = l < layers ? 2 * g : g, hi = l < layers ? 2 * g + 1 : g + 2;
				int pair[2] = { lo, hi }, i;

				done = (arrive[lo] > arrive[hi] ? arrive[lo] : arrive[hi]) + 60 * US;
				for (i = 0; i < 2; i++) {
					c = pair[i];
					cur[c] = done + (i ? 400 * US : 0);
					if (k[c]++ < skip[c])
						continue;
					job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI,
						     !named ? (l < layers ? 10 : 20) + c :
						     l < layers ? 10 + c / 2 : 20 + c % 2,
						     ++seq[c][l == layers],
						     l < layers ? 16 << 10 : 64 << 10, arrive[c], cur[c]);
				}
			}
		}
		for (c = 0; c < 4; c++)
			cur[c] += 300 * US;	/* the optimizer */
		job__advance(j, cur[0], false);
	}
	job__advance(j, cur[0] + 1000 * MS, true);
}

static void tp_dp(struct job *j, int steps, int slow, uint64_t extra, bool named)
{
	tp_dp_layers(j, steps, 6, slow, extra, named);
}

/*
 * Two ranks, 4 tensor-parallel all-reduces a step (comm 10) and a data-parallel one (comm 20)
 * that holds them 500 ms (a late rank elsewhere): over the settle time. Its record comes at
 * its return, as a probe's does; meanwhile the probe says each rank is inside it. The step
 * ends with it: each step is 600 ms long, not the 100 ms up to the last tensor-parallel one.
 */
static uint64_t dp_enter, dp_exit;

static bool inside_dp(void *ctx, int col, struct job_inflight *in)
{
	*in = (struct job_inflight){ .enter_ns = dp_enter, .comm = 20, .op = RS_OP_ALLREDUCE,
				     .bytes = 1 << 20 };
	return dp_enter && dp_exit;
}

static void step_ends_with_its_long_data_parallel_all_reduce(void **state)
{
	static struct seen s;
	uint64_t t = 1000 * MS, seq[2][2] = {}, x;
	struct job *j = job_with(&s, 2, STEPS_AUTO, 60000 * MS, inside_dp, NULL);
	int k, l, c;

	for (k = 0; k < 40; k++) {
		for (l = 0; l < 4; l++, t += 25 * MS)
			for (c = 0; c < 2; c++)
				job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 10,
					     ++seq[c][0], 4 << 10, t + 20 * MS, t + 25 * MS);
		dp_enter = t;
		dp_exit = t + 500 * MS;
		for (x = t + 100 * MS; x < dp_exit; x += 100 * MS)
			job__advance(j, x, false);
		for (c = 0; c < 2; c++)
			job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 20, ++seq[c][1],
				     1 << 20, dp_enter, dp_exit);
		dp_enter = dp_exit = 0;
		t += 500 * MS;
		job__advance(j, t, false);
	}
	job__advance(j, t + 1000 * MS, true);
	for (c = 0; c < 2; c++) {
		assert_in_range(s.steps[c], 30, 40);
		assert_in_range(s.dur[c] / s.steps[c], 590 * MS, 610 * MS);
	}
	job__free(j);
}

/*
 * Two ranks, 4 tensor-parallel all-reduces a step (comm 10), then two data-parallel ones (comm
 * 20) that end the step. What was recorded ends after the 31st step's tensor-parallel ones,
 * before its data-parallel ones or between them: that step never ended, and the last step
 * seen is the 30th, ending at its last data-parallel all-reduce's return.
 */
static void recording_ends_before_the_step_reduces__no_step(void **state)
{
	static struct seen s;
	uint64_t t, seq[2][2], end;
	struct job *j;
	int cut, k, l, c;

	for (cut = 0; cut < 2; cut++) {
		t = 1000 * MS;
		end = 0;
		memset(seq, 0, sizeof(seq));
		j = new_job(&s, 2, STEPS_AUTO);
		for (k = 0; k < 31; k++) {
			for (l = 0; l < 4; l++, t += 25 * MS)
				for (c = 0; c < 2; c++)
					job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 10,
						     ++seq[c][0], 4 << 10, t + 20 * MS, t + 25 * MS);
			for (l = 0; l < 2 && (k < 30 || l < cut); l++, t += 50 * MS)
				for (c = 0; c < 2; c++)
					job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 20,
						     ++seq[c][1], 1 << 20, t, t + 50 * MS);
			if (k < 30)
				end = t;
			job__advance(j, t, false);
		}
		job__advance(j, t, true);
		for (c = 0; c < 2; c++) {
			assert_int_equal(s.steps[c], s.steps[0]);
			assert_true(s.steps[c] > 20);
			assert_int_equal(s.end[c], end);
		}
		job__free(j);
	}
}

/*
 * One all-reduce a step, 20 ms of compute before it; every 7th step both ranks also save a
 * checkpoint (60 ms of file writes) before it. A pause that is mostly a save says nothing of
 * where steps end: steps of 1 collective, not 7.
 */
static void checkpoint_every_7th_step__steps_of_one(void **state)
{
	static struct seen s;
	uint64_t t = 1000 * MS, seq[2] = {};
	struct job *j = new_job(&s, 2, STEPS_AUTO);
	int k, c;

	for (k = 0; k < 120; k++) {
		t += 20 * MS;
		if (k % 7 == 6) {
			for (c = 0; c < 2; c++)
				job__on_io(j, c, 100 + c, false, RS_FD_REG, true, t, t + 60 * MS,
					   64 << 20);
			t += 60 * MS;
		}
		for (c = 0; c < 2; c++)
			job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 10, ++seq[c],
				     1 << 20, t, t + 5 * MS);
		t += 5 * MS;
		job__advance(j, t, false);
	}
	job__advance(j, t + 1000 * MS, true);
	assert_int_equal(s.last_period, 1);
	for (c = 0; c < 2; c++)
		assert_in_range(s.steps[c], 100, 120);
	job__free(j);
}

/*
 * Three ranks, 60 ms of compute and one all-reduce a step; every EVERY-th step rank 0 saves a
 * checkpoint (60 ms of file writes) before it while the others wait: a save, not a straggler.
 * From step 60 the all-reduce takes 35 ms once all came, not 5 (under half the step: no
 * window tells it by itself): the link got slower. The
 * windows that tell the save still judge the collectives against the job's earlier steps:
 * communication, on no rank, from the change on, and nothing else but saves before it.
 * Returns the first step told.
 */
static uint64_t ckpt_link_slower_at_60(int every)
{
	static struct seen s;
	uint64_t t = 1000 * MS, seq[3] = {}, t0, first = UINT64_MAX;
	struct job *j = new_job(&s, 3, STEPS_AUTO);
	int k, c, i;

	for (k = 0; k < 120; k++) {
		t += 60 * MS;
		t0 = t;
		if (k % every == every - 1) {
			job__on_io(j, 0, 100, false, RS_FD_REG, true, t, t + 60 * MS, 64 << 20);
			t += 60 * MS;
		}
		for (c = 0; c < 3; c++)
			job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 10, ++seq[c],
				     1 << 20, c ? t0 : t, t + (k < 60 ? 5 : 35) * MS);
		t += (k < 60 ? 5 : 35) * MS;
		job__advance(j, t, false);
	}
	job__advance(j, t + 1000 * MS, true);
	for (i = 0; i < s.nv; i++) {
		if (s.v[i].cls == V_NONE || s.v[i].cls == V_CHECKPOINT)
			continue;
		if (s.v[i].cls != V_COMMUNICATION || s.v[i].col != -1 || s.v[i].step < 60)
			print_error("every %d, verdict %d at step %" PRIu64 ": class %d col %d\n",
				    every, i, s.v[i].step, s.v[i].cls, s.v[i].col);
		assert_int_equal(s.v[i].cls, V_COMMUNICATION);
		assert_int_equal(s.v[i].col, -1);
		assert_true(s.v[i].step >= 60);
		first = s.v[i].step < first ? s.v[i].step : first;
	}
	job__free(j);
	return first;
}

/*
 * Told once a window holds only slower steps (60 + 8 rows, a few more with the save's step).
 * Saves every 9th step: a window holds one at most and tells none, the longer view tells the
 * save; the window's rows are still the ones judged, not the longer view's, most of them
 * from before the change (their median step is the old one).
 */
static void saves_every_5th_or_9th_step_link_slower_mid_run__communication(void **state)
{
	static const int every[] = { 5, 9 };
	uint64_t first;
	int i;

	for (i = 0; i < 2; i++) {
		first = ckpt_link_slower_at_60(every[i]);
		if (first > 60 + 2 * 8)
			print_error("saves every %d steps: first told at step %" PRIu64 "\n",
				    every[i], first);
		assert_true(first <= 60 + 2 * 8);
	}
}

static void tensor_data_parallel_mid_run__slow_rank_named_healthy_none(void **state)
{
	static struct seen s;
	struct job *j;
	int i, c, g;

	j = new_job(&s, 4, STEPS_AUTO);
	tp_dp(j, 150, 2, 4 * MS, false);
	for (c = 0; c < 4; c++)
		assert_in_range(s.steps[c], 100, 150);
	expect_verdicts(&s, V_COMPUTE, 2);
	/* groups learned from who is inside a collective together: the whole job here (both TP
	 * groups run at once), so a verdict names none, or groups that hold rank 2 */
	for (i = 0; i < s.nv; i++) {
		for (c = 0, g = 0; c < s.v[i].ngroup; c++) {
			g += s.v[i].group[c] == 2;
			assert_true(s.v[i].group[c] < 4);
		}
		assert_true(!s.v[i].ngroup || g > 0);
	}
	job__free(j);

	j = new_job(&s, 4, STEPS_AUTO);
	tp_dp(j, 150, 2, 4 * MS, true);
	expect_verdicts(&s, V_COMPUTE, 2);
	/* named against the groups it was judged in (TP {2,3}, DP {0,2}), never the job */
	for (i = 0; i < s.nv; i++) {
		const int *gr = s.v[i].group;

		if (s.v[i].cls == V_NONE)
			continue;
		assert_true(s.v[i].ngroup >= 3);
		for (c = 0; c < s.v[i].ngroup; c += 3)
			assert_true((gr[c] == 2 && gr[c + 1] == 3 && gr[c + 2] == -1) ||
				    (gr[c] == 0 && gr[c + 1] == 2 && gr[c + 2] == -1));
	}
	job__free(j);

	j = new_job(&s, 4, STEPS_AUTO);
	tp_dp(j, 150, -1, 0, false);
	for (c = 0; c < 4; c++)
		assert_in_range(s.steps[c], 100, 150);
	for (i = 0; i < s.nv; i++)
		assert_int_equal(s.v[i].cls, V_NONE);
	job__free(j);

	/*
	 * The reference rank (column 0, whose collectives cut the steps) computes 10 ms more a
	 * layer: its pauses are alike (10.4 ms a layer, 11.2 ms across the DP bucket), so no
	 * pause ends a step, and its TP all-reduces are alike too. The DP bucket between them
	 * still marks the step: one a step, not one a layer (was 6x the steps, or a relearn
	 * that lost some).
	 */
	j = new_job(&s, 4, STEPS_AUTO);
	tp_dp(j, 150, 0, 60 * MS, false);
	for (c = 0; c < 4; c++)
		assert_in_range(s.steps[c], 120, 150);
	assert_int_equal(s.last_period, 6);
	expect_verdicts(&s, V_COMPUTE, 0);
	job__free(j);
}

/*
 * Tensor + data parallel with 52 layers: a step makes 52 equal tensor-parallel all-reduces,
 * alike in size and pause, before its data-parallel one. The period is first looked for at 48
 * main collectives, all alike then: one a step, had the ranks not been on two main
 * communicators (two TP groups), which meet on another one once a step; until the reference
 * made a call there, its step was not seen whole.
 */
static void tensor_parallel_step_longer_than_the_first_look__one_step_not_52(void **state)
{
	static struct seen s;
	struct job *j = new_job(&s, 4, STEPS_AUTO);
	int c;

	tp_dp_layers(j, 30, 52, -1, 0, false);
	assert_int_equal(s.last_period, 52);
	for (c = 0; c < 4; c++)
		assert_in_range(s.steps[c], 25, 30);
	job__free(j);
}

/*
 * A MoE step of 24 layers: each dispatches and combines with an all-to-all around its
 * experts' compute (0.5 ms), then the gradients are all-reduced once. The first 48
 * collectives seen are all-to-alls alike: steps are learned once the step's reduction
 * repeats, 49 collectives, not one layer's 2.
 */
static void moe_layers_before_the_reduction__one_step_not_two_all_to_alls(void **state)
{
	static struct seen s;
	uint64_t t = 1000 * MS, seq[2] = {};
	struct job *j = new_job(&s, 2, STEPS_AUTO);
	int k, l, c;

	for (k = 0; k < 30; k++) {
		t += 3 * MS;
		for (l = 0; l < 48; l++) {
			for (c = 0; c < 2; c++)
				job__on_coll(j, c, 100 + c, RS_OP_ALLTOALL, RS_LIB_MPI, 10,
					     ++seq[c], 1 << 20, t, t + 200 * US);
			t += 200 * US + (l % 2 ? 100 * US : 500 * US);
			job__advance(j, t, false);
		}
		for (c = 0; c < 2; c++)
			job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 10, ++seq[c],
				     8 << 20, t, t + 2 * MS);
		t += 2 * MS;
		job__advance(j, t, false);
	}
	job__advance(j, t + 1000 * MS, true);
	assert_int_equal(s.last_period, 49);
	for (c = 0; c < 2; c++)
		assert_in_range(s.steps[c], 25, 30);
	job__free(j);
}

/*
 * A MoE step: dispatch, combine, then after the experts' longest compute (14 ms) dispatch and
 * combine again, and the gradients' all-reduce; 6 ms of data loading before the next step.
 * Rank 0 saves every 5th step and both meet at a barrier after it: each barrier shifts the
 * places of the collectives after it. The longest pause ends the step inside it; the roles
 * of the step's own collectives end it after the all-reduce that its gathers follow.
 */
static void moe_with_a_save_barrier__steps_end_after_the_all_reduce(void **state)
{
	static const uint64_t before[] = { 5 * MS, 7 * MS, 9 * MS, 14 * MS };
	static struct seen s;
	uint64_t t = 1000 * MS, seq[2] = {}, ar_end = 0;
	struct job *j = new_job(&s, 2, STEPS_AUTO);
	int k, l, c;

	for (k = 0; k < 40; k++) {
		t += 6 * MS;
		for (l = 0; l < 4; l++) {
			t += before[l];
			for (c = 0; c < 2; c++)
				job__on_coll(j, c, 100 + c, RS_OP_ALLTOALL, RS_LIB_MPI, 10,
					     ++seq[c], 1 << 20, t, t + 300 * US);
			t += 300 * US;
			job__advance(j, t, false);
		}
		for (c = 0; c < 2; c++)
			job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 10, ++seq[c],
				     8 << 20, t, t + 500 * US);
		t += 500 * US;
		ar_end = t;
		if (k % 5 == 4) {
			job__on_io(j, 0, 100, false, RS_FD_REG, true, t, t + 20 * MS, 64 << 20);
			t += 20 * MS;
			for (c = 0; c < 2; c++)
				job__on_coll(j, c, 100 + c, RS_OP_BARRIER, RS_LIB_MPI, 10,
					     ++seq[c], 0, t, t + 100 * US);
			t += 100 * US;
		}
		job__advance(j, t, false);
	}
	job__advance(j, t + 1000 * MS, true);
	assert_int_equal(s.last_period, 5);
	for (c = 0; c < 2; c++) {
		assert_in_range(s.steps[c], 34, 40);
		assert_int_equal(s.end[c], ar_end);
	}
	job__free(j);
}

/*
 * Two ranks of a 4-rank job seen on this node (the others run elsewhere): each step they
 * compute alike (column 1 late more), arrive, and wait remote_wait in the all-reduce after
 * the last of them for a rank not seen here.
 */
static void two_ranks_seen_late(struct job *j, int steps, uint64_t remote_wait, uint64_t late)
{
	uint64_t t = 1000 * MS, arrive, done;
	int k, c;

	for (k = 0; k < steps; k++) {
		arrive = t + 2400 * US;
		done = arrive + late + 60 * US + remote_wait;
		for (c = 0; c < 2; c++)
			job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, k + 1, 64 << 10,
				     arrive + c * (10 * US + late), done + c * US);
		t = done + 300 * US;
		job__advance(j, t, false);
	}
	job__advance(j, t + 1000 * MS, true);
}

static void two_ranks_seen(struct job *j, int steps, uint64_t remote_wait)
{
	two_ranks_seen_late(j, steps, remote_wait, 0);
}

static void partial_job__aligned_wait__remote_wait_not_communication(void **state)
{
	static struct seen s;
	struct job *j;
	int i, remote = 0;

	j = new_job(&s, 2, STEPS_AUTO);
	job__set_world(j, 4);
	two_ranks_seen(j, 80, 6 * MS);
	for (i = 0; i < s.nv; i++) {
		assert_int_not_equal(s.v[i].cls, V_COMMUNICATION);
		assert_int_equal(s.v[i].ranks_seen, 2);
		assert_int_equal(s.v[i].world_size, 4);
		remote += s.v[i].cls == V_REMOTE_WAIT;
	}
	assert_true(remote > 0);
	assert_non_null(strstr(s.v[s.nv - 1].detail, "2 ranks seen here (of 4)"));
	job__free(j);

	/* the same waits with every rank of the job seen: the network, a true communication */
	j = new_job(&s, 2, STEPS_AUTO);
	job__set_world(j, 2);
	two_ranks_seen(j, 80, 6 * MS);
	expect_verdicts(&s, V_COMMUNICATION, -1);
	job__free(j);
}

/*
 * Rank 1 of the two seen here computes 4 ms more a step. When both then wait 6 ms more for a
 * rank elsewhere, it holds nobody (the collectives would end no sooner were it on time):
 * remote_wait, never a blame. When the all-reduce ends as it arrives, it is the straggler.
 */
static void partial_job__late_rank_then_waits_for_another__remote_wait(void **state)
{
	static struct seen s;
	struct job *j;
	int i, remote = 0;

	j = new_job(&s, 2, STEPS_AUTO);
	job__set_world(j, 4);
	two_ranks_seen_late(j, 80, 6 * MS, 4 * MS);
	for (i = 0; i < s.nv; i++) {
		assert_int_equal(s.v[i].col, -1);
		remote += s.v[i].cls == V_REMOTE_WAIT;
	}
	assert_true(remote > 0);
	assert_non_null(strstr(s.v[s.nv - 1].detail, "rank 1 is late by 4.0 ms"));
	job__free(j);

	j = new_job(&s, 2, STEPS_AUTO);
	job__set_world(j, 4);
	two_ranks_seen_late(j, 80, 0, 4 * MS);
	expect_verdicts(&s, V_COMPUTE, 1);
	job__free(j);
}

static uint64_t inflight_since;

/* Both columns inside collective seq 41 since inflight_since. */
static bool all_inflight(void *ctx, int col, struct job_inflight *in)
{
	*in = (struct job_inflight){ .enter_ns = inflight_since, .seq = 41 };
	return true;
}

static void running(void *ctx, int col, char *buf, size_t n)
{
	snprintf(buf, n, "running");
}

static void every_seen_rank_stuck__remote_hang_or_a_hang_on_none(void **state)
{
	static struct seen s;
	struct job_cfg cfg = { .mode = STEPS_AUTO, .hang_timeout_ns = 2000 * MS, .window = 8 };
	struct job_probe_ops ops = {
		.on_step = on_step, .on_verdict = on_verdict, .on_rule = on_rule, .ctx = &s,
		.inflight = all_inflight, .state = running,
	};
	struct job *j;
	int world;

	for (world = 2; world <= 4; world += 2) {
		memset(&s, 0, sizeof(s));
		j = job__new(&cfg, 2, &ops);
		assert_non_null(j);
		job__set_rank(j, 0, 0, 100);
		job__set_rank(j, 1, 1, 101);
		job__set_world(j, world);
		inflight_since = 1000 * MS;
		job__advance(j, 1000 * MS + 3000 * MS, false);
		if (world == 2) {	/* all seen, none stopped, none outside: it never ends */
			assert_int_equal(s.nv, 1);
			assert_int_equal(s.v[0].cls, V_HANG);
			assert_int_equal(s.v[0].col, -1);
			assert_non_null(strstr(s.v[0].detail, "none is outside one"));
		} else {
			assert_int_equal(s.nv, 1);
			assert_int_equal(s.v[0].cls, V_REMOTE_WAIT);
			assert_int_equal(s.v[0].col, -1);
			assert_non_null(strstr(s.v[0].detail, "every rank seen here (2 of 4)"));
		}
		job__free(j);
	}
}

/* Column 0 already in collective seq 42, the others still in 41: the shape a stopped peer
 * leaves when it stopped inside 41 after sending column 0 its share. */
static bool split_inflight(void *ctx, int col, struct job_inflight *in)
{
	*in = (struct job_inflight){ .enter_ns = inflight_since + (col == 0 ? 5 * MS : 0),
				     .seq = col == 0 ? 42 : 41 };
	return true;
}

static void last_stopped(void *ctx, int col, char *buf, size_t n)
{
	snprintf(buf, n, "%s", col == 2 ? "stopped (SIGSTOP or a debugger)" : "running");
}

/*
 * A rank stopped inside a collective leaves its peers split between that collective and the
 * next. Seen from two of four ranks, none stopped: remote_wait, never a hang on the local
 * rank still in the older one. All three seen, the third stopped: the hang is on it, not on
 * the running rank that is one collective behind.
 */
static void stuck_split_across_seqs__the_stopped_rank_or_remote(void **state)
{
	static struct seen s;
	struct job_cfg cfg = { .mode = STEPS_AUTO, .hang_timeout_ns = 2000 * MS, .window = 8 };
	struct job_probe_ops ops = {
		.on_step = on_step, .on_verdict = on_verdict, .on_rule = on_rule, .ctx = &s,
		.inflight = split_inflight, .state = running,
	};
	struct job *j;

	memset(&s, 0, sizeof(s));
	j = job__new(&cfg, 2, &ops);
	assert_non_null(j);
	job__set_rank(j, 0, 0, 100);
	job__set_rank(j, 1, 1, 101);
	job__set_world(j, 4);
	inflight_since = 1000 * MS;
	job__advance(j, 1000 * MS + 3000 * MS, false);
	assert_int_equal(s.nv, 1);
	assert_int_equal(s.v[0].cls, V_REMOTE_WAIT);
	assert_int_equal(s.v[0].col, -1);
	assert_non_null(strstr(s.v[0].detail, "every rank seen here (2 of 4)"));
	assert_non_null(strstr(s.v[0].detail, "seq 42 (some still in the one before)"));
	job__free(j);

	memset(&s, 0, sizeof(s));
	ops.state = last_stopped;
	j = job__new(&cfg, 3, &ops);
	assert_non_null(j);
	job__set_rank(j, 0, 0, 100);
	job__set_rank(j, 1, 1, 101);
	job__set_rank(j, 2, 2, 102);
	job__advance(j, 1000 * MS + 3000 * MS, false);
	assert_int_equal(s.nv, 1);
	assert_int_equal(s.v[0].cls, V_HANG);
	assert_int_equal(s.v[0].col, 2);
	assert_non_null(strstr(s.v[0].detail, "the laggard is stopped"));
	job__free(j);
}

/* Every column inside its next collective on communicator 7 since stuck_enter: an all-reduce
 * of the bucket size, stuck_odd's a barrier (-1: none); stuck_enter 0: in none. */
static int stuck_odd;
static uint64_t stuck_enter, stuck_seq[4];

static bool stuck_inflight(void *ctx, int col, struct job_inflight *in)
{
	bool odd = col == stuck_odd;

	if (!stuck_enter)
		return false;	/* not stuck yet */
	*in = (struct job_inflight){ .enter_ns = stuck_enter, .seq = stuck_seq[col] + 1, .comm = 7,
				     .bytes = odd ? 0 : 256 << 10,
				     .op = odd ? RS_OP_BARRIER : RS_OP_ALLREDUCE };
	return true;
}

/*
 * 80 steps of 3 buckets, then every rank waits in a collective past the hang timeout, none
 * outside one, none stopped. Of 4, one in a barrier where the others are in the all-reduce
 * at the same seq: divergent on it. Of 2 (no majority), the one whose call its step before
 * never made, where the other's is one its step before made: divergent on it. The same call
 * everywhere: a hang on no rank.
 */
static void all_inside__the_odd_call_diverges_else_a_hang_on_none(void **state)
{
	static const struct { int n, odd; enum vclass cls; const char *says; } t[] = {
		{ 4, 2, V_DIVERGENT, "waits in barrier of 0 bytes where most" },
		{ 2, 1, V_DIVERGENT, "the call each made the step before, where this one made" },
		{ 2, 0, V_DIVERGENT, "the call each made the step before, where this one made" },
		{ 3, -1, V_HANG, "none is outside one or behind" },
	};
	static struct seen s;
	static const int skip[4] = {};
	struct job *j;
	int i, v;

	for (i = 0; i < (int)(sizeof(t) / sizeof(t[0])); i++) {
		struct gen g = { .t = 1000 * MS };

		stuck_enter = 0;
		j = job_with(&s, t[i].n, STEPS_AUTO, 2000 * MS, stuck_inflight, running);
		mpi_buckets(j, t[i].n, 80, 3, -1, 0, skip, &g);
		memcpy(stuck_seq, g.seq, sizeof(stuck_seq));
		stuck_odd = t[i].odd;
		stuck_enter = g.t + 2400 * US;
		job__advance(j, stuck_enter + 1000 * MS, false);
		assert_true(s.steps[0] > 70);
		job__advance(j, stuck_enter + 2500 * MS, false);
		for (v = 0; v < s.nv && s.v[v].cls == V_NONE; v++)
			;
		assert_true(v < s.nv);
		if (s.v[v].cls != t[i].cls || !strstr(s.v[v].detail, t[i].says))
			print_error("case %d: class %d col %d: %s\n", i, s.v[v].cls, s.v[v].col,
				    s.v[v].detail);
		assert_int_equal(s.v[v].cls, t[i].cls);
		assert_int_equal(s.v[v].col, t[i].odd);
		assert_non_null(strstr(s.v[v].detail, t[i].says));
		job__free(j);
	}
}

/* Every column waiting since stuck_enter for what it launched (a wait: no op of its own). */
static bool waiting_inflight(void *ctx, int col, struct job_inflight *in)
{
	if (!stuck_enter)
		return false;
	*in = (struct job_inflight){ .enter_ns = stuck_enter, .seq = stuck_seq[col] + 1, .comm = 7 };
	return true;
}

/*
 * Stuck before its steps were learned (12 steps of 3 buckets: too few calls to learn them
 * from while it runs): the next step's calls return at once (launched), column 2's first
 * one a barrier where the others launch the all-reduce, and every column waits for them.
 * The steps are learned from what the job made, and the odd call is divergent; without an
 * odd one, a hang on no rank.
 */
static void stuck_before_steps_learned__the_odd_launch_diverges(void **state)
{
	static struct seen s;
	static const int skip[4] = {};
	struct job *j;
	int odd, c, v;

	for (odd = 2; odd >= -1; odd -= 3) {
		struct gen g = { .t = 1000 * MS };

		stuck_enter = 0;
		j = job_with(&s, 3, STEPS_AUTO, 2000 * MS, waiting_inflight, running);
		mpi_buckets(j, 3, 12, 3, -1, 0, skip, &g);
		assert_int_equal(s.steps[0], 0);
		stuck_enter = g.t + 2400 * US;
		for (c = 0; c < 3; c++)
			job__on_coll(j, c, 100 + c, c == odd ? RS_OP_BARRIER : RS_OP_ALLREDUCE,
				     RS_LIB_MPI, 7, ++g.seq[c], c == odd ? 0 : 256 << 10,
				     stuck_enter - 20 * US, stuck_enter - 10 * US);
		memcpy(stuck_seq, g.seq, sizeof(stuck_seq));
		job__advance(j, stuck_enter + 1000 * MS, false);
		job__advance(j, stuck_enter + 2500 * MS, false);
		for (v = 0; v < s.nv && s.v[v].cls == V_NONE; v++)
			;
		assert_true(v < s.nv);
		if (s.v[v].col != odd)
			print_error("odd %d: class %d col %d: %s\n", odd, s.v[v].cls, s.v[v].col,
				    s.v[v].detail);
		assert_int_equal(s.v[v].cls, odd >= 0 ? V_DIVERGENT : V_HANG);
		assert_int_equal(s.v[v].col, odd);
		job__free(j);
	}
}

/* Columns 0 and 1 wait for what they launched; column 2 is stuck in its own work. */
static bool waiting_but_2(void *ctx, int col, struct job_inflight *in)
{
	return col != 2 && waiting_inflight(ctx, col, in);
}

/*
 * Stuck before its steps were learned, one rank in its work: the others launched the next
 * step's all-reduce and wait for it, so the stuck rank made one call fewer than the
 * reference. Its steps are lined up with the others' (the reference's last call has no
 * counterpart on it: not paired one call off) and built, and the hang is on it.
 */
static void stuck_in_work_before_steps_learned__steps_still_built(void **state)
{
	static struct seen s;
	static const int skip[4] = {};
	struct gen g = { .t = 1000 * MS };
	struct job *j;
	int c, v;

	stuck_enter = 0;
	j = job_with(&s, 3, STEPS_AUTO, 2000 * MS, waiting_but_2, running);
	mpi_buckets(j, 3, 12, 3, -1, 0, skip, &g);
	assert_int_equal(s.steps[0], 0);
	stuck_enter = g.t + 2400 * US;
	for (c = 0; c < 2; c++)
		job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, ++g.seq[c], 256 << 10,
			     stuck_enter - 20 * US, stuck_enter - 10 * US);
	memcpy(stuck_seq, g.seq, sizeof(stuck_seq));
	job__advance(j, stuck_enter + 1000 * MS, false);
	job__advance(j, stuck_enter + 2500 * MS, false);
	job__advance(j, stuck_enter + 2600 * MS, true);
	/* the same steps everywhere: paired one bucket off, its steps end a bucket early */
	for (c = 0; c < 3; c++) {
		assert_int_equal(s.steps[c], 11);
		assert_in_range(s.end[c], s.end[0] - 10 * US, s.end[0] + 10 * US);
	}
	for (v = 0; v < s.nv && s.v[v].cls == V_NONE; v++)
		;
	assert_true(v < s.nv);
	assert_int_equal(s.v[v].cls, V_HANG);
	assert_int_equal(s.v[v].col, 2);
	job__free(j);
}

/* What each column is inside once stuck (op 0: in none), for the TP + DP hang below. */
static struct job_inflight tpdp_in[4];
static bool tpdp_odd_dp_stuck;	/* tpdp_step: ranks 1 and 3 never return from their DP call */

static bool tpdp_inflight(void *ctx, int col, struct job_inflight *in)
{
	*in = tpdp_in[col];
	return in->op != 0;
}

/*
 * One step of tensor + data parallel on 4 ranks, named communicators: TP pairs {0,1} (10) and
 * {2,3} (11) all-reduce 3 times, then DP pairs {0,2} (20) and {1,3} (21) once. With drop,
 * rank 1 makes 2 of its TP calls, as the simulator draws a skipped call: its peers' calls
 * return all the same.
 */
static void tpdp_step(struct job *j, uint64_t *cur, uint64_t (*seq)[2], bool drop)
{
	uint64_t arrive[4], done;
	int l, g, i, c;

	for (l = 0; l <= 3; l++) {
		for (c = 0; c < 4; c++)
			arrive[c] = cur[c] + (l < 3 ? 380 * US : 500 * US);
		for (g = 0; g < 2; g++) {
			int pair[2] = { l < 3 ? 2 * g : g, l < 3 ? 2 * g + 1 : g + 2 };

			done = (arrive[pair[0]] > arrive[pair[1]] ? arrive[pair[0]] :
								     arrive[pair[1]]) + 60 * US;
			for (i = 0; i < 2; i++) {
				c = pair[i];
				cur[c] = done + i * 400 * US;
				if (drop && l == 2 && c == 1)
					continue;
				++seq[c][l == 3];
				if (tpdp_odd_dp_stuck && l == 3 && c % 2) {
					tpdp_in[c] = (struct job_inflight){
						.enter_ns = arrive[c], .seq = seq[c][1], .comm = 21,
						.bytes = 64 << 10, .op = RS_OP_ALLREDUCE };
					continue;
				}
				job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI,
					     l < 3 ? 10 + c / 2 : 20 + c % 2, seq[c][l == 3],
					     l < 3 ? 16 << 10 : 64 << 10, arrive[c], cur[c]);
			}
		}
	}
	for (c = 0; c < 4; c++)
		cur[c] += 300 * US;	/* the optimizer */
	job__advance(j, cur[0], false);
}

/*
 * Tensor + data parallel, 79 steps, then three in which rank 1 makes one TP call fewer, and the
 * job stops: the others wait in the next step's first TP call past the hang timeout, rank 1
 * in none. Its calls since its last step are those of that step (both lack the call), but
 * that step's are not those of its step before: divergent on it. With no call skipped, a hang
 * on rank 1.
 */
static void skipped_call_in_the_last_steps__divergent_not_a_hang(void **state)
{
	static struct seen s;
	struct job *j;
	int drop, c, v;

	for (drop = 1; drop >= 0; drop--) {
		uint64_t cur[4], seq[4][2] = {}, t;

		for (c = 0; c < 4; c++)
			cur[c] = 1000 * MS;
		j = job_with(&s, 4, STEPS_AUTO, 2000 * MS, tpdp_inflight, running);
		for (c = 0; c < 82; c++)
			tpdp_step(j, cur, seq, drop && c >= 79);
		for (c = 0; c < 4; c++)	/* all but rank 1 in the next step's first TP call */
			tpdp_in[c] = (struct job_inflight){
				.enter_ns = cur[c] + 380 * US, .seq = seq[c][0] + 1,
				.comm = 10 + c / 2, .bytes = 16 << 10,
				.op = c == 1 ? 0 : RS_OP_ALLREDUCE };
		t = cur[0] + 380 * US;
		job__advance(j, t + 1000 * MS, false);
		assert_true(s.steps[1] > 70);
		job__advance(j, t + 2500 * MS, false);
		for (v = 0; v < s.nv && s.v[v].cls == V_NONE; v++)
			;
		assert_true(v < s.nv);
		if (s.v[v].cls != (drop ? V_DIVERGENT : V_HANG) || s.v[v].col != 1)
			print_error("drop %d: class %d col %d: %s\n", drop, s.v[v].cls, s.v[v].col,
				    s.v[v].detail);
		assert_int_equal(s.v[v].cls, drop ? V_DIVERGENT : V_HANG);
		assert_int_equal(s.v[v].col, 1);
		job__free(j);
	}
}

/*
 * Tensor + data parallel, 40 steps, then one whose DP call ranks 1 and 3 never return from
 * (the DP pair {0,2} returns from its own, then waits in the next step's first TP call), and
 * the recording ends past the hang timeout. Ranks 0 and 2 finished that step; ranks 1 and 3
 * are stuck inside it: one step fewer, not a step that ends without its reduction.
 */
static void stuck_in_the_closing_reduction__that_step_never_ends(void **state)
{
	static struct seen s;
	uint64_t cur[4], seq[4][2] = {}, t;
	struct job *j;
	int c;

	for (c = 0; c < 4; c++)
		cur[c] = 1000 * MS;
	memset(tpdp_in, 0, sizeof(tpdp_in));
	j = job_with(&s, 4, STEPS_AUTO, 2000 * MS, tpdp_inflight, running);
	for (c = 0; c < 40; c++)
		tpdp_step(j, cur, seq, false);
	tpdp_odd_dp_stuck = true;
	tpdp_step(j, cur, seq, false);
	tpdp_odd_dp_stuck = false;
	for (c = 0; c < 4; c += 2)	/* ranks 0 and 2 in the next step's first TP call */
		tpdp_in[c] = (struct job_inflight){
			.enter_ns = cur[c] + 380 * US, .seq = seq[c][0] + 1, .comm = 10 + c / 2,
			.bytes = 16 << 10, .op = RS_OP_ALLREDUCE };
	t = cur[0] + 380 * US;
	job__advance(j, t + 2500 * MS, false);
	job__advance(j, t + 3000 * MS, true);
	if (s.steps[0] != s.steps[1] + 1 || s.steps[2] != s.steps[3] + 1)
		print_error("steps %d %d %d %d\n", s.steps[0], s.steps[1], s.steps[2], s.steps[3]);
	assert_in_range(s.steps[0], 35, 41);
	assert_int_equal(s.steps[2], s.steps[0]);
	assert_int_equal(s.steps[1], s.steps[0] - 1);
	assert_int_equal(s.steps[3], s.steps[0] - 1);
	memset(tpdp_in, 0, sizeof(tpdp_in));
	job__free(j);
}

/* What each rank's process is doing, for the first-look tests: rank 1 as first_state says. */
static const char *first_state;

static void stuck_states(void *ctx, int col, char *buf, size_t n)
{
	snprintf(buf, n, "%s", col == 1 ? first_state : "blocked in syscall 7 (poll)");
}

static bool none_inflight(void *ctx, int col, struct job_inflight *in)
{
	return false;
}

/*
 * Attached to a job already stuck: no collective in flight (they predate the probes), no
 * step. Rank 1 stopped: hang on it once the hang timeout has passed since the first look.
 * Rank 1 in uninterruptible sleep: only when it stays so for another timeout (a writer's
 * moments in D are not a hang). Every rank merely waiting: no verdict.
 */
static void stuck_before_attach__first_look_names_the_stopped_rank(void **state)
{
	static struct seen s;
	struct job_cfg cfg = { .mode = STEPS_AUTO, .hang_timeout_ns = 2000 * MS, .window = 8 };
	struct job_probe_ops ops = {
		.on_step = on_step, .on_verdict = on_verdict, .on_rule = on_rule, .ctx = &s,
		.inflight = none_inflight, .state = stuck_states,
	};
	static const char *const states[] = {
		"stopped (rank 1, pid 101; SIGSTOP or a debugger)",
		"in uninterruptible sleep (D) in nfs_wait (rank 1, pid 101)",
		"blocked in syscall 7 (poll)",
	};
	struct job *j;
	int k, c;

	for (k = 0; k < 3; k++) {
		memset(&s, 0, sizeof(s));
		first_state = states[k];
		j = job__new(&cfg, 4, &ops);
		assert_non_null(j);
		for (c = 0; c < 4; c++)
			job__set_rank(j, c, c, 100 + c);
		job__advance(j, 1000 * MS, false);		/* the first look */
		job__advance(j, 2500 * MS, false);		/* not yet the timeout */
		assert_int_equal(s.nv, 0);
		job__advance(j, 3100 * MS, false);
		if (k == 0) {
			assert_int_equal(s.nv, 1);
			assert_int_equal(s.v[0].cls, V_HANG);
			assert_int_equal(s.v[0].col, 1);
			assert_non_null(strstr(s.v[0].detail, "stopped"));
			assert_non_null(strstr(s.v[0].detail, "3 other rank(s) wait"));
		} else {
			assert_int_equal(s.nv, 0);
		}
		job__advance(j, 5200 * MS, false);
		if (k == 1) {
			assert_int_equal(s.nv, 1);
			assert_int_equal(s.v[0].col, 1);
			assert_non_null(strstr(s.v[0].detail, "nfs_wait"));
		}
		if (k == 2)
			assert_int_equal(s.nv, 0);
		job__free(j);
	}
}

/* Where each rank is by its stack, for the stuck-stacks test: rank 2 as where_two says. */
static const char *where_two;

static bool stuck_where(void *ctx, int col, char *coll, size_t nc, char *frames, size_t nf)
{
	const char *w = col == 2 ? where_two : "PMPI_Allreduce";

	coll[0] = frames[0] = 0;
	if (!strncmp(w, "PMPI_", 5)) {
		snprintf(coll, nc, "%s", w);
		return true;
	}
	snprintf(frames, nf, "%s", w);
	return false;
}

/*
 * A stuck job whose ranks all merely wait (nothing in flight, none stopped): by their stacks,
 * rank 2 in another collective is divergent; rank 2 in none is the hang, its frames named;
 * every rank in the same collective gives no verdict (and the stacks are read again only a
 * hang timeout later).
 */
static void stuck_all_waiting__stacks_name_the_odd_rank(void **state)
{
	static struct seen s;
	struct job_cfg cfg = { .mode = STEPS_AUTO, .hang_timeout_ns = 2000 * MS, .window = 8 };
	struct job_probe_ops ops = {
		.on_step = on_step, .on_verdict = on_verdict, .on_rule = on_rule, .ctx = &s,
		.inflight = none_inflight, .state = stuck_states, .where = stuck_where,
	};
	static const char *const wheres[] = { "PMPI_Barrier", "clock_nanosleep <- main",
					      "PMPI_Allreduce" };
	static const enum vclass want[] = { V_DIVERGENT, V_HANG, V_NONE };
	struct job *j;
	int k, c;

	first_state = "blocked in syscall 7 (poll)";
	for (k = 0; k < 3; k++) {
		memset(&s, 0, sizeof(s));
		where_two = wheres[k];
		j = job__new(&cfg, 4, &ops);
		assert_non_null(j);
		for (c = 0; c < 4; c++)
			job__set_rank(j, c, c, 100 + c);
		job__advance(j, 1000 * MS, false);
		job__advance(j, 3100 * MS, false);
		if (want[k] == V_NONE) {
			assert_int_equal(s.nv, 0);
		} else {
			assert_int_equal(s.nv, 1);
			assert_int_equal(s.v[0].cls, want[k]);
			assert_int_equal(s.v[0].col, 2);
			assert_non_null(strstr(s.v[0].detail, k == 0 ? "PMPI_Barrier" :
					       "clock_nanosleep <- main"));
			assert_non_null(strstr(s.v[0].detail, "PMPI_Allreduce"));
		}
		job__free(j);
	}
}

/*
 * A job whose steps are not known yet (equal buckets: 48 collectives to learn, slow steps)
 * while its collectives keep returning: no step for the hang timeout is not a stuck job, even
 * when a look finds one rank computing while its peer waits. Its collectives stop returning
 * (the peer waits on): then the first look's judge may speak.
 */
static void no_step_yet_but_collectives_return__not_stuck(void **state)
{
	static struct seen s;
	struct job_cfg cfg = { .mode = STEPS_AUTO, .hang_timeout_ns = 2000 * MS, .window = 8 };
	struct job_probe_ops ops = {
		.on_step = on_step, .on_verdict = on_verdict, .on_rule = on_rule, .ctx = &s,
		.inflight = none_inflight, .state = stuck_states,
	};
	struct job *j;
	uint64_t t;
	int c, i;

	memset(&s, 0, sizeof(s));
	first_state = "stopped (rank 1, pid 101; SIGSTOP or a debugger)";
	j = job__new(&cfg, 2, &ops);
	assert_non_null(j);
	for (c = 0; c < 2; c++)
		job__set_rank(j, c, c, 100 + c);
	job__advance(j, 1000 * MS, false);		/* the first look */
	/* 20 all-reduces, 400 ms apart: too few to learn a step from */
	for (i = 0, t = 1000 * MS; i < 20; i++, t += 400 * MS) {
		for (c = 0; c < 2; c++)
			job__on_coll(j, c, 100 + c, RS_OP_ALLREDUCE, RS_LIB_MPI, 7, i + 1, 4096,
				     t + 390 * MS, t + 399 * MS);
		job__advance(j, t + 400 * MS, false);
	}
	assert_int_equal(s.nv, 0);
	/* they stop returning: after the hang timeout the stopped rank is named */
	job__advance(j, t + 1500 * MS, false);
	assert_int_equal(s.nv, 0);
	job__advance(j, t + 2500 * MS, false);
	assert_int_equal(s.nv, 1);
	assert_int_equal(s.v[0].cls, V_HANG);
	assert_int_equal(s.v[0].col, 1);
	job__free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(equal_buckets__slow_rank__compute_on_it),
		cmocka_unit_test(equal_buckets__healthy__no_verdict),
		cmocka_unit_test(late_every_12th_step__intermittent_from_the_steps_kept),
		cmocka_unit_test(late_twice_eleven_steps_apart__named_soon_after_the_second),
		cmocka_unit_test(late_every_6th_step__share_over_every_step_kept),
		cmocka_unit_test(layers_late_everywhere_never_last__nobody_named),
		cmocka_unit_test(pattern_change__relearned_and_reported),
		cmocka_unit_test(all_ranks_exit__rank_exited_at_the_next_step),
		cmocka_unit_test(stuck_before_attach__first_look_names_the_stopped_rank),
		cmocka_unit_test(stuck_all_waiting__stacks_name_the_odd_rank),
		cmocka_unit_test(ddp_attached_a_step_apart__starved_rank_named),
		cmocka_unit_test(pipeline_two_stages__stages_micro_batches_and_slow_stage),
		cmocka_unit_test(pipeline_equal_stages__bubble_verdict_only_when_over_the_schedule),
		cmocka_unit_test(pipeline_four_stages__steps_end_together_at_the_shared_all_reduce),
		cmocka_unit_test(pipeline_read_while_it_fills__none_before_a_send__storage),
		cmocka_unit_test(pipeline_per_replica_communicators__stages_by_place),
		cmocka_unit_test(pipeline_stage_slower_in_every_replica__compute_on_it),
		cmocka_unit_test(pipeline_stage_slower_by_a_tenth__compute_on_it),
		cmocka_unit_test(pipeline_link_slower_mid_run__communication),
		cmocka_unit_test(pipeline_starved_in_its_stage_all_reduce__only_where_the_step_waits),
		cmocka_unit_test(pipeline_stage_all_reduce_named_by_handles__its_wait_no_transfer),
		cmocka_unit_test(async_last_of_the_waits_never_ends__no_step),
		cmocka_unit_test(async_recording_cut_before_the_wait__no_step),
		cmocka_unit_test(async_buckets__slow_rank_waits_least__compute_on_it),
		cmocka_unit_test(async_equal_buckets__reference_late__steps_end_together),
		cmocka_unit_test(async_sliced_buckets__reference_late__steps_of_eight),
		cmocka_unit_test(async_wait_late_after_last_launch__step_ends_with_the_wait),
		cmocka_unit_test(async_recording_cut_in_a_wait__no_step_and_the_odd_launch_named),
		cmocka_unit_test(step_ends_with_its_long_data_parallel_all_reduce),
		cmocka_unit_test(recording_ends_before_the_step_reduces__no_step),
		cmocka_unit_test(moe_layers_before_the_reduction__one_step_not_two_all_to_alls),
		cmocka_unit_test(moe_with_a_save_barrier__steps_end_after_the_all_reduce),
		cmocka_unit_test(stuck_in_the_closing_reduction__that_step_never_ends),
		cmocka_unit_test(checkpoint_every_7th_step__steps_of_one),
		cmocka_unit_test(saves_every_5th_or_9th_step_link_slower_mid_run__communication),
		cmocka_unit_test(tensor_data_parallel_mid_run__slow_rank_named_healthy_none),
		cmocka_unit_test(tensor_parallel_step_longer_than_the_first_look__one_step_not_52),
		cmocka_unit_test(partial_job__aligned_wait__remote_wait_not_communication),
		cmocka_unit_test(partial_job__late_rank_then_waits_for_another__remote_wait),
		cmocka_unit_test(marker_attached_a_step_apart__skew_is_the_extra_compute),
		cmocka_unit_test(every_seen_rank_stuck__remote_hang_or_a_hang_on_none),
		cmocka_unit_test(stuck_split_across_seqs__the_stopped_rank_or_remote),
		cmocka_unit_test(all_inside__the_odd_call_diverges_else_a_hang_on_none),
		cmocka_unit_test(stuck_before_steps_learned__the_odd_launch_diverges),
		cmocka_unit_test(stuck_in_work_before_steps_learned__steps_still_built),
		cmocka_unit_test(skipped_call_in_the_last_steps__divergent_not_a_hang),
		cmocka_unit_test(no_step_yet_but_collectives_return__not_stuck),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
