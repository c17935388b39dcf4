// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * hub: a job across two nodes, fed as the nodes' daemons serve it. Node B's clock is offset
 * from node A's by seconds to days and its steps are numbered from a later attach; the
 * verdicts must not change, and the offset found must be within the error the hub states.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "hub.h"
#include "ranks.h"

#define MS	1000000ULL
#define US	1000ULL
#define STEPS	160
#define LATE_ATTACH	37	/* node B's daemon saw its first step at the job's step 37 */

struct seen {
	int n;
	enum vclass cls[256];
	int rank[256];
	uint64_t step[256];
	int ranks_seen[256], world[256];
};

static void on_verdict(void *ctx, const char *job, const struct job_verdict *v, int rank)
{
	struct seen *s = ctx;

	if (s->n == 256)
		return;
	s->cls[s->n] = v->cls;
	s->rank[s->n] = rank;
	s->step[s->n] = v->step;
	s->ranks_seen[s->n] = v->ranks_seen;
	s->world[s->n] = v->world_size;
	s->n++;
}

static uint64_t rnd(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

/* The job: 4 ranks, 0 and 1 on node A, 2 and 3 on node B; slow computes 4 ms more a step. */
struct gen {
	uint64_t seed;
	uint64_t t;		/* the job's time (node A's clock) */
	int g;			/* the next job step */
	int slow;
	int colls;		/* collectives a step, as the step lines say */
	int div_rank, div_g;	/* at job step div_g, rank div_rank enters another sequence */
	bool flat;		/* every step as long as every other: no jitter to line up by */
	bool per_node_comm;	/* each node's ranks on a communicator of their own */
};

static void ranks_doc(char *buf, size_t n, int lo)
{
	snprintf(buf, n, "[{\"type\":\"rank\",\"job\":\"j1\",\"rank\":%d,\"pid\":%d,\"world_size\":4},"
		 "{\"type\":\"rank\",\"job\":\"j1\",\"rank\":%d,\"pid\":%d,\"world_size\":4},"
		 "{\"type\":\"rank\",\"pid\":99}]", lo, 100 + lo, lo + 1, 101 + lo);
}

/*
 * nsteps job steps as each node serves them: node A numbers them g + 1 from the start, node
 * B g - LATE_ATTACH + 1 from its attach, on a clock offset by off.
 */
static void steps_docs(struct gen *gn, int nsteps, uint64_t off, char *a, char *b, size_t n,
		       uint64_t cur)
{
	size_t la, lb;
	int s, r;

	la = snprintf(a, n, "{\"cursor\":%llu,\"lost\":0,\"more\":false,\"steps\":[",
		      (unsigned long long)(cur + nsteps));
	lb = snprintf(b, n, "{\"cursor\":%llu,\"lost\":0,\"more\":false,\"steps\":[",
		      (unsigned long long)(cur + nsteps));
	for (s = 0; s < nsteps; s++, gn->g++) {
		uint64_t base = 6 * MS + (gn->flat ? 0 : rnd(&gn->seed) % (2 * MS)), work[4], dur = 0;

		for (r = 0; r < 4; r++) {
			work[r] = base + (gn->flat ? 0 : rnd(&gn->seed) % (100 * US)) +
				  (r == gn->slow ? 4 * MS : 0);
			dur = work[r] > dur ? work[r] : dur;
		}
		dur += 500 * US;	/* the all-reduce, after the last arrival */
		for (r = 0; r < 4; r++) {
			char *d = r < 2 ? a : b;
			size_t *l = r < 2 ? &la : &lb;
			uint64_t k = r < 2 ? gn->g + 1 : gn->g - LATE_ATTACH + 1;
			bool odd = gn->div_g && r == gn->div_rank && gn->g == gn->div_g;

			if (r >= 2 && gn->g < LATE_ATTACH)
				continue;
			*l += snprintf(d + *l, n - *l,
				       "%s{\"type\":\"step\",\"job\":\"j1\",\"rank\":%d,\"pid\":%d,"
				       "\"step\":%llu,\"start_ns\":%llu,\"dur_ns\":%llu,"
				       "\"collectives\":%d,\"phases\":"
				       "{\"compute\":%llu,\"comm\":%llu,\"sched_delay\":0},"
				       "\"communicators\":[{\"name\":\"%s\",\"ops\":%d,"
				       "\"sig\":\"%s\",\"sig_ops\":\"%s\"}]}",
				       d[*l - 1] == '[' ? "" : ",", r, 100 + r,
				       (unsigned long long)k,
				       (unsigned long long)(gn->t + (r < 2 ? 0 : off)),
				       (unsigned long long)dur, gn->colls, (unsigned long long)work[r],
				       (unsigned long long)(dur - work[r]),
				       gn->per_node_comm && r >= 2 ? "nccl:bbbb" : "nccl:aaaa", gn->colls,
				       odd ? "00000000000d1e55" : "00000000000011aa",
				       odd ? "broadcast:128 allreduce:4096" :
				       "broadcast:64 allreduce:4096");
		}
		gn->t += dur;
	}
	snprintf(a + la, n - la, "]}");
	snprintf(b + lb, n - lb, "]}");
}

/* Run the job through a hub with node B's clock off by off; the verdicts in s. */
static int colls = 1;	/* collectives a step in run()'s step lines */

static struct gen gen_with;	/* divergence and communicators for run()'s job */
static int b_from;	/* run(): node B first answers at this poll, with all its lines kept */

static struct hub *run(uint64_t off, int slow, struct seen *s, int *na, int *nb)
{
	static char a[1 << 20], b[1 << 20], ra[512], rb[512], bq[STEPS / 10][1 << 15];
	struct gen gn = gen_with;
	uint64_t ca = 0, cb = 0;
	struct hub *h = hub__new(8);
	char err[160];
	bool more;
	int p, q = 0;

	gn.seed = 42;
	gn.t = 5 * 86400 * 1000 * MS;
	gn.slow = slow;
	gn.colls = colls;
	assert_non_null(h);
	memset(s, 0, sizeof(*s));
	*na = hub__node(h, "10.0.0.1:9464");
	*nb = hub__node(h, "10.0.0.2:9464");
	ranks_doc(ra, sizeof(ra), 0);
	ranks_doc(rb, sizeof(rb), 2);
	for (p = 0; p < STEPS / 10; p++) {
		uint64_t cur = ca;

		steps_docs(&gn, 10, off, a, b, sizeof(a), cur);
		assert_true(strlen(b) < sizeof(bq[p]));
		strcpy(bq[p], b);
		assert_int_equal(hub__feed_ranks(h, *na, ra, strlen(ra), err, sizeof(err)), 0);
		assert_int_equal(hub__feed_steps(h, *na, a, strlen(a), &ca, &more, err,
						 sizeof(err)), 0);
		hub__node_ok(h, *na, p);
		if (p >= b_from) {
			assert_int_equal(hub__feed_ranks(h, *nb, rb, strlen(rb), err,
							 sizeof(err)), 0);
			for (; q <= p; q++)
				assert_int_equal(hub__feed_steps(h, *nb, bq[q], strlen(bq[q]), &cb,
								 &more, err, sizeof(err)), 0);
			hub__node_ok(h, *nb, p);
		}
		hub__judge(h, p, on_verdict, s);
	}
	return h;
}

static void two_nodes__clock_offsets_seconds_to_days__same_verdicts(void **state)
{
	static const int64_t offs[] = { 3 * 1000 * MS, 86400LL * 1000 * MS,
					-2 * 86400LL * 1000 * MS, 7 * MS };
	static struct seen first, s;
	int i, k, na, nb, late = 0;
	int64_t shift, offset;
	uint64_t err;
	struct hub *h;

	for (i = 0; i < (int)(sizeof(offs) / sizeof(offs[0])); i++) {
		h = run((uint64_t)offs[i], 3, &s, &na, &nb);
		/* lined up: node B's step k is the job's k + LATE_ATTACH; its clock found within
		 * the stated error (and that error is small against the steps) */
		assert_true(hub__offset(h, "j1", nb, &shift, &offset, &err));
		assert_int_equal(shift, LATE_ATTACH);
		assert_true(llabs(offset - offs[i]) <= (int64_t)err);
		assert_true(err < 1 * MS && err >= HUB_CLOCK_ERR_MIN_NS);
		assert_true(hub__offset(h, "j1", na, &shift, &offset, &err));
		assert_int_equal(offset, 0);
		/* rank 3, on node B, computes more: named across the nodes */
		for (k = 0; k < s.n; k++) {
			if (s.cls[k] == V_NONE)
				continue;
			assert_int_equal(s.cls[k], V_COMPUTE);
			assert_int_equal(s.rank[k], 3);
			assert_int_equal(s.ranks_seen[k], 4);
			assert_int_equal(s.world[k], 4);
			late++;
		}
		assert_true(late > 0);
		if (!i)
			first = s;
		/* the same verdicts whatever the clocks */
		assert_int_equal(s.n, first.n);
		for (k = 0; k < s.n; k++) {
			assert_int_equal(s.cls[k], first.cls[k]);
			assert_int_equal(s.rank[k], first.rank[k]);
			assert_int_equal(s.step[k], first.step[k]);
		}
		hub__free(h);
	}
	/* steps of 3 collectives: the two daemons could end their steps at different ones, so
	 * the error owns up to a collective's share of the step (about 3.5 ms here) */
	colls = 3;
	h = run(offs[0], 3, &s, &na, &nb);
	assert_true(hub__offset(h, "j1", nb, &shift, &offset, &err));
	assert_true(llabs(offset - offs[0]) <= (int64_t)err);
	assert_true(err >= 3 * MS);
	hub__free(h);
	colls = 1;
}

static void healthy_job__no_verdict_and_node_down__ranks_unobserved(void **state)
{
	static struct seen s;
	static char a[1 << 20], b[1 << 20];
	struct gen gn = { .seed = 7, .t = 1000 * MS, .slow = -1 };
	uint64_t ca = 0;
	char err[160];
	struct hub *h;
	int k, na, nb, before;
	size_t len;
	char *doc;
	bool more;

	h = run(11 * 1000 * MS, -1, &s, &na, &nb);
	for (k = 0; k < s.n; k++)
		assert_int_equal(s.cls[k], V_NONE);
	assert_true(s.n > 0);
	/* node B stops answering: after 3 failed polls its ranks are unobserved */
	hub__node_failed(h, nb, "connect: refused", 100);
	hub__node_failed(h, nb, "connect: refused", 101);
	hub__node_failed(h, nb, "connect: refused", 102);
	gn.g = STEPS;
	gn.t = 10000 * MS;
	before = s.n;
	for (k = 0; k < 4; k++) {
		steps_docs(&gn, 10, 0, a, b, sizeof(a), 1000 + k * 10);
		ca = 1000 + k * 10;
		assert_int_equal(hub__feed_steps(h, na, a, strlen(a), &ca, &more, err,
						 sizeof(err)), 0);
		hub__judge(h, 200 + k, on_verdict, &s);
	}
	assert_true(s.n > before);
	for (k = before; k < s.n; k++) {
		assert_int_equal(s.ranks_seen[k], 2);
		assert_int_equal(s.world[k], 4);
	}
	/* rank 0 (node A) stopped, and no step for the hang timeout: a hang on rank 0, from its
	 * node's word on its state; a rank that is merely gone is no hang */
	doc = "[{\"job\":\"j1\",\"rank\":0,\"pid\":100,\"world_size\":4,\"state\":\"gone\"}]";
	assert_int_equal(hub__feed_ranks(h, na, doc, strlen(doc), err, sizeof(err)), 0);
	before = s.n;
	hub__judge(h, 300 + HUB_HANG_NS, on_verdict, &s);
	for (k = before; k < s.n; k++)
		assert_int_not_equal(s.cls[k], V_HANG);
	doc = "[{\"job\":\"j1\",\"rank\":0,\"pid\":100,\"world_size\":4,\"state\":\"stopped\"}]";
	assert_int_equal(hub__feed_ranks(h, na, doc, strlen(doc), err, sizeof(err)), 0);
	hub__judge(h, 301 + HUB_HANG_NS, on_verdict, &s);
	assert_int_equal(s.cls[s.n - 1], V_HANG);
	assert_int_equal(s.rank[s.n - 1], 0);
	before = s.n;
	hub__judge(h, 302 + HUB_HANG_NS, on_verdict, &s);
	assert_int_equal(s.n, before);		/* said once */
	/* no step for 5 minutes: the job is over, its slot freed */
	hub__judge(h, 400 + HUB_RETAIN_NS, on_verdict, &s);
	doc = hub__diagnosis(h, &len);
	assert_string_equal(doc, "[]");
	free(doc);
	hub__free(h);
}

static void bad_answers__refused_and_counted__other_job_untouched(void **state)
{
	static const char *const garbage[] = {
		"", "<html>502 Bad Gateway</html>", "{\"cursor\":-1,\"steps\":[]}",
		"{\"cursor\":5}", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]",
		"{\"cursor\":1,\"steps\":[1,2", "\"\\ud800",
	};
	static struct seen s;
	char err[160], *doc;
	uint64_t cur = 9;
	struct hub *h;
	size_t i, len;
	int na, nb, nc;
	bool more;

	h = run(0, 3, &s, &na, &nb);
	for (i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		err[0] = 0;
		assert_int_equal(hub__feed_steps(h, na, garbage[i], strlen(garbage[i]), &cur, &more,
						 err, sizeof(err)), -EINVAL);
		assert_true(err[0]);
		assert_int_equal(cur, 9);	/* the cursor is not moved by a bad answer */
		assert_int_equal(hub__feed_ranks(h, na, garbage[i], strlen(garbage[i]), err,
						 sizeof(err)), -EINVAL);
		assert_int_equal(hub__feed_diagnosis(h, na, garbage[i], strlen(garbage[i]), err,
						     sizeof(err)), -EINVAL);
	}
	/* a third node claims rank 3 of j1 while node B serves it: counted, not taken */
	nc = hub__node(h, "10.0.0.3:9464");
	hub__node_ok(h, nc, 1000);
	doc = "[{\"job\":\"j1\",\"rank\":3,\"pid\":5}]";
	assert_int_equal(hub__feed_ranks(h, nc, doc, strlen(doc), err, sizeof(err)), 0);
	doc = hub__nodes(h, &len);
	assert_non_null(doc);
	assert_non_null(strstr(doc, "\"node\":\"10.0.0.3:9464\",\"up\":true,\"why\":null,"
				    "\"polls\":1,\"failed_polls\":0,\"bad_answers\":0,"
				    "\"duplicate_ranks\":1"));
	free(doc);
	doc = hub__ranks(h, &len);
	assert_non_null(strstr(doc, "\"rank\":3,\"world_size\":4,\"pid\":103,"
				    "\"node\":\"10.0.0.2:9464\""));
	free(doc);
	doc = hub__diagnosis(h, &len);
	assert_non_null(strstr(doc, "\"class\":\"compute\",\"rank\":3"));
	free(doc);
	doc = hub__metrics(h, &len);
	assert_non_null(strstr(doc, "rankscope_straggler_verdict{job_id=\"j1\",class=\"compute\","
				    "rank=\"3\""));
	free(doc);
	hub__free(h);
}

/* Exactly one divergent verdict in s, on rank at step; rank -1: none at all. */
static void one_divergence(const struct seen *s, int rank, uint64_t step)
{
	int i, div = 0, where = -1;

	for (i = 0; i < s->n; i++)
		if (s->cls[i] == V_DIVERGENT) {
			div++;
			where = i;
		}
	assert_int_equal(div, rank < 0 ? 0 : 1);
	if (rank < 0)
		return;
	assert_int_equal(s->rank[where], rank);
	assert_int_equal(s->step[where], step);
}

/*
 * At one step, rank 2 (node B, its clock days off) enters a broadcast of other bytes: the hub
 * names it, once, at that step, however the nodes number their steps. With each node's ranks
 * on a communicator of their own, two ranks against two name nobody.
 */
static void divergent__odd_rank_across_nodes__named_at_its_step(void **state)
{
	struct seen s;
	struct hub *h;
	int na, nb;

	(void)state;
	gen_with = (struct gen){ .div_rank = 2, .div_g = 100 };
	h = run(3 * 86400 * 1000 * MS + 17 * MS, -1, &s, &na, &nb);
	one_divergence(&s, 2, 101);	/* node A's numbering: g + 1 */
	hub__free(h);

	gen_with.per_node_comm = true;
	h = run(3 * 86400 * 1000 * MS + 17 * MS, -1, &s, &na, &nb);
	one_divergence(&s, -1, 0);
	hub__free(h);

	/* node B first answers 40 steps after the odd one (its daemon kept the lines): the
	 * steps node A's ranks were judged alone in are looked at again once B lines up */
	gen_with = (struct gen){ .div_rank = 2, .div_g = 50 };
	b_from = 9;
	h = run(3 * 86400 * 1000 * MS + 17 * MS, -1, &s, &na, &nb);
	one_divergence(&s, 2, 51);
	hub__free(h);
	b_from = 0;
	gen_with = (struct gen){};
}

static void inflight_doc(char *buf, size_t n, int lo, const char *op_lo, const char *op_hi)
{
	snprintf(buf, n, "[{\"type\":\"rank\",\"job\":\"j1\",\"rank\":%d,\"pid\":%d,"
		 "\"world_size\":4,\"state\":\"running\",\"inflight\":{\"op\":\"%s\","
		 "\"bytes\":4096,\"comm\":\"mpi:world\",\"for_ns\":9000000000}},"
		 "{\"type\":\"rank\",\"job\":\"j1\",\"rank\":%d,\"pid\":%d,"
		 "\"world_size\":4,\"state\":\"running\",\"inflight\":{\"op\":\"%s\","
		 "\"bytes\":4096,\"comm\":\"mpi:world\",\"for_ns\":9000000000}}]",
		 lo, 100 + lo, op_lo, lo + 1, 101 + lo, op_hi);
}

/*
 * The job stops: no step for the hang timeout, every rank waits in a collective. Rank 2 (node
 * B) waits in a barrier where the others wait in an all-reduce: divergent, rank 2. All in
 * the same collective: not divergent (a hang the nodes tell, or a remote wait).
 */
static void hung_job__ranks_in_different_collectives__divergent(void **state)
{
	char ra[1024], rb[1024], err[160];
	struct seen s;
	struct hub *h;
	int na, nb, i, before;

	(void)state;
	for (int same = 0; same < 2; same++) {
		h = run(7 * MS, -1, &s, &na, &nb);
		hub__set_hang_timeout(h, 2000000000ULL);
		before = s.n;
		inflight_doc(ra, sizeof(ra), 0, "allreduce", "allreduce");
		inflight_doc(rb, sizeof(rb), 2, same ? "allreduce" : "barrier", "allreduce");
		hub__node_ok(h, na, 10000000000ULL);
		hub__node_ok(h, nb, 10000000000ULL);
		assert_int_equal(hub__feed_ranks(h, na, ra, strlen(ra), err, sizeof(err)), 0);
		assert_int_equal(hub__feed_ranks(h, nb, rb, strlen(rb), err, sizeof(err)), 0);
		hub__judge(h, 10000000000ULL, on_verdict, &s);
		hub__judge(h, 11000000000ULL, on_verdict, &s);
		for (i = before; i < s.n; i++)
			if (same)
				assert_int_not_equal(s.cls[i], V_DIVERGENT);
		if (!same) {
			assert_int_equal(s.n, before + 1);
			assert_int_equal(s.cls[before], V_DIVERGENT);
			assert_int_equal(s.rank[before], 2);
		}
		hub__free(h);
	}
}

/*
 * Steps all alike (no jitter): their lengths cannot line the nodes up. With the polls'
 * timings (each node's now against the hub's, 100 us round trips) they line up at the right
 * shift, the offset within its error; without them, node B stays not lined up.
 */
static void flat_steps__lined_up_by_poll_clocks(void **state)
{
	static char a[1 << 20], b[1 << 20], ra[512], rb[512], tmp[(1 << 20) + 64];
	const uint64_t off = 3 * 86400 * 1000 * MS + 5 * MS;
	uint64_t ca = 0, cb = 0, err;
	int64_t shift, o;
	char e[160];
	bool more;

	(void)state;
	for (int timed = 0; timed < 2; timed++) {
		struct gen gn = { .seed = 9, .t = 5 * 86400 * 1000 * MS, .slow = -1, .colls = 1,
				  .flat = true };
		struct hub *h = hub__new(8);
		int na = hub__node(h, "10.0.0.1:9464"), nb = hub__node(h, "10.0.0.2:9464"), p;
		struct seen s = {};

		ca = cb = 0;
		ranks_doc(ra, sizeof(ra), 0);
		ranks_doc(rb, sizeof(rb), 2);
		for (p = 0; p < STEPS / 10; p++) {
			uint64_t sent = (uint64_t)(p + 1) * 1000000000ULL;

			steps_docs(&gn, 10, off, a, b, sizeof(a), ca);
			/* each answer with its node's now (the job's time on its clock) */
			snprintf(tmp, sizeof(tmp), "{\"now_ns\":%llu,%s", (unsigned long long)gn.t,
				 a + 1);
			strcpy(a, tmp);
			snprintf(tmp, sizeof(tmp), "{\"now_ns\":%llu,%s",
				 (unsigned long long)(gn.t + off), b + 1);
			strcpy(b, tmp);
			assert_int_equal(hub__feed_ranks(h, na, ra, strlen(ra), e, sizeof(e)), 0);
			assert_int_equal(hub__feed_ranks(h, nb, rb, strlen(rb), e, sizeof(e)), 0);
			assert_int_equal(hub__feed_steps(h, na, a, strlen(a), &ca, &more, e,
							 sizeof(e)), 0);
			if (timed)
				hub__node_timing(h, na, sent - 50 * US, sent + 50 * US);
			assert_int_equal(hub__feed_steps(h, nb, b, strlen(b), &cb, &more, e,
							 sizeof(e)), 0);
			if (timed)
				hub__node_timing(h, nb, sent - 50 * US, sent + 50 * US);
			hub__node_ok(h, na, sent);
			hub__node_ok(h, nb, sent);
			hub__judge(h, sent, on_verdict, &s);
		}
		if (timed) {
			assert_true(hub__offset(h, "j1", nb, &shift, &o, &err));
			assert_int_equal(shift, LATE_ATTACH);
			assert_true(llabs(o - (int64_t)off) <= (int64_t)err);
		} else {
			assert_false(hub__offset(h, "j1", nb, &shift, &o, &err));
		}
		hub__free(h);
	}
}

/* Node's rank lines as its daemon serves them: ranks lo..lo+n-1 of job, world world. */
static void feed_ranks(struct hub *h, int node, const char *job, int lo, int n, int world)
{
	char doc[1024], err[160];
	size_t len = 0;
	int k;

	len += (size_t)snprintf(doc + len, sizeof(doc) - len, "[");
	for (k = 0; k < n; k++)
		len += (size_t)snprintf(doc + len, sizeof(doc) - len, "%s{\"type\":\"rank\","
					"\"job\":\"%s\",\"rank\":%d,\"pid\":%d,\"world_size\":%d}",
					k ? "," : "", job, lo + k, 4242 + k, world);
	snprintf(doc + len, sizeof(doc) - len, "]");
	assert_int_equal(hub__feed_ranks(h, node, doc, strlen(doc), err, sizeof(err)), 0);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

/*
 * The job ids each node's daemon gives its ranks (ranks.h), joined at the hub: one torchrun
 * job with torchrun's default run id on two nodes is one job; two unrelated jobs whose
 * launchers have the same PID (and start time) on two nodes stay two, and so do two
 * single-node jobs on the same loopback port.
 */
static void job_ids__rendezvous_joined__parents_and_loopback_apart(void **state)
{
	static const char torch[] = "TORCHELASTIC_RUN_ID=none\0MASTER_ADDR=10.0.0.1\0"
				    "MASTER_PORT=29500\0WORLD_SIZE=4\0";
	static const char lone[] = "RANK=0\0WORLD_SIZE=1\0";
	static const char lo[] = "MASTER_ADDR=127.0.0.1\0MASTER_PORT=29500\0WORLD_SIZE=2\0";
	struct job_ctx ca = { .node = "node-a", .ppid = 4242, .ppid_start = 100 };
	struct job_ctx cb = { .node = "node-b", .ppid = 4242, .ppid_start = 100 };
	struct hub *h = hub__new(8);
	struct rank_info a, b;
	int na, nb;
	size_t len;
	char *out;

	assert_non_null(h);
	na = hub__node(h, "10.0.0.1:9464");
	nb = hub__node(h, "10.0.0.2:9464");
	ranks__init(&a);
	ranks__init(&b);
	ranks__job(torch, sizeof(torch) - 1, &ca, &a);
	ranks__job(torch, sizeof(torch) - 1, &cb, &b);
	feed_ranks(h, na, a.job, 0, 2, 4);
	feed_ranks(h, nb, b.job, 2, 2, 4);
	ranks__job(lone, sizeof(lone) - 1, &ca, &a);
	ranks__job(lone, sizeof(lone) - 1, &cb, &b);
	feed_ranks(h, na, a.job, 0, 1, 1);
	feed_ranks(h, nb, b.job, 0, 1, 1);
	ranks__job(lo, sizeof(lo) - 1, &ca, &a);
	ranks__job(lo, sizeof(lo) - 1, &cb, &b);
	feed_ranks(h, na, a.job, 0, 2, 2);
	feed_ranks(h, nb, b.job, 0, 2, 2);
	out = hub__ranks(h, &len);
	assert_non_null(out);
	assert_int_equal(count(out, "\"job\":\"rdzv:10.0.0.1:29500+4\""), 4);
	assert_int_equal(count(out, "\"job\":\"ppid:4242.100@node-a\""), 1);
	assert_int_equal(count(out, "\"job\":\"ppid:4242.100@node-b\""), 1);
	assert_int_equal(count(out, "\"job\":\"rdzv:127.0.0.1:29500+2@node-a\""), 2);
	assert_int_equal(count(out, "\"job\":\"rdzv:127.0.0.1:29500+2@node-b\""), 2);
	/* nothing refused as a duplicate (job, rank): every rank is in the document */
	assert_int_equal(count(out, "\"type\":\"rank\""), 4 + 2 + 4);
	free(out);
	hub__free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_nodes__clock_offsets_seconds_to_days__same_verdicts),
		cmocka_unit_test(healthy_job__no_verdict_and_node_down__ranks_unobserved),
		cmocka_unit_test(bad_answers__refused_and_counted__other_job_untouched),
		cmocka_unit_test(divergent__odd_rank_across_nodes__named_at_its_step),
		cmocka_unit_test(hung_job__ranks_in_different_collectives__divergent),
		cmocka_unit_test(flat_steps__lined_up_by_poll_clocks),
		cmocka_unit_test(job_ids__rendezvous_joined__parents_and_loopback_apart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
