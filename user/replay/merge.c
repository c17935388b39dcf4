// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Op traces (and recordings without model lines, or several of them): ranks into columns,
 * sequence numbers, one clock, then the records in the order a live run would have drained
 * them, with a tick every --drain-ms of their time.
 *
 * Clocks: no two nodes share one. A collective completes on every rank at nearly the same
 * instant, so a clock's offset from the reference is the median difference of the returns of
 * the blocking collectives two columns share (same communicator, same sequence number). An op
 * trace gives each rank a clock of its own; a recording gives its file one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "detect.h"
#include "log.h"
#include "rp.h"

#define RP_ANCHORS	8	/* columns of known clock a column is compared with, at most */
#define RP_MATCH_MIN	3	/* shared collectives that make an offset */
#define RP_SEEN		4096	/* ranks remembered while columns are listed */

struct rp_key {
	int job, rank, key;
	int domain;
	bool trace;
};

static int cmp_key(const void *a, const void *b)
{
	const struct rp_key *x = a, *y = b;

	if (x->job != y->job)
		return x->job < y->job ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* Records (~100 bytes) are ordered through small keys; a stable LSD radix sort keeps a
 * replay of millions of records from spending its time in qsort. */
struct rp_order {
	uint64_t k;
	uint32_t idx;
};

/* Stable sort of o[0..n) by its k, tmp as large; passes whose byte is alike everywhere are
 * skipped (a column number needs one or two). */
#define RADIX(name, type)							\
static void name(type *o, type *tmp, size_t n)					\
{										\
	size_t cnt[256], i, sum;						\
	int shift, b;								\
										\
	for (shift = 0; shift < 64; shift += 8) {				\
		memset(cnt, 0, sizeof(cnt));					\
		for (i = 0; i < n; i++)						\
			cnt[(o[i].k >> shift) & 0xff]++;			\
		for (b = 0; b < 256 && cnt[b] != n; b++)			\
			;							\
		if (b < 256)							\
			continue;	/* one byte value: nothing moves */	\
		for (b = 0, sum = 0; b < 256; b++) {				\
			size_t c = cnt[b];					\
										\
			cnt[b] = sum;						\
			sum += c;						\
		}								\
		for (i = 0; i < n; i++)						\
			tmp[cnt[(o[i].k >> shift) & 0xff]++] = o[i];		\
		memcpy(o, tmp, n * sizeof(*o));					\
	}									\
}

RADIX(radix, struct rp_order)

/* A collective a column returned from: k its communicator's number and seq, t its return. */
struct rp_ret {
	uint64_t k, t;
};

RADIX(radix_ret, struct rp_ret)

/* The order of the records by job, column and start (by_col), or by when they were done;
 * equal keys keep their input order. o: scratch for 2 * nrec keys. */
static void sort_records(struct replay *rp, bool by_col, uint32_t *ord, struct rp_order *o)
{
	struct rp_order *tmp = o + rp->nrec;
	size_t i;

	for (i = 0; i < rp->nrec; i++) {
		const struct rp_rec *r = &rp->rec[i];

		o[i] = (struct rp_order){ by_col ? r->f.start : feed__done_ns(&r->f), (uint32_t)i };
	}
	radix(o, tmp, rp->nrec);
	if (by_col) {	/* then by job and column, stable: start order holds within each */
		for (i = 0; i < rp->nrec; i++) {
			const struct rp_rec *r = &rp->rec[o[i].idx];

			o[i].k = ((uint64_t)(uint32_t)(r->job + 1) << 32) | (uint32_t)(r->f.col + 1);
		}
		radix(o, tmp, rp->nrec);
	}
	for (i = 0; i < rp->nrec; i++)
		ord[i] = o[i].idx;
}

/* A recording's pid as its rank line said it, or NULL. */
static const struct rp_pid *pid_of(const struct replay *rp, pid_t pid)
{
	uint32_t h = (uint32_t)pid * 2654435761u, s;

	for (s = 0; s < RP_PIDS && rp->pids[(h + s) % RP_PIDS].pid; s++)
		if (rp->pids[(h + s) % RP_PIDS].pid == pid)
			return &rp->pids[(h + s) % RP_PIDS];
	return NULL;
}

/* Record r's job, rank and clock into x; false: not a rank's (a pid with no rank line). */
static bool rec_key(struct replay *rp, struct rp_rec *r, struct rp_key *x)
{
	const struct rp_pid *p;
	struct rp_job *j;

	*x = (struct rp_key){ .job = r->job, .key = r->key, .rank = r->key,
			      .domain = -1 - r->key, .trace = r->trace };
	if (r->trace)
		return true;	/* each rank of a trace: a clock of its own */
	/* a recording's pid: its rank line says who it is; its file is its clock */
	p = pid_of(rp, r->key);
	if (!p || !p->job_id[0] || !(j = rp__job(rp, p->job_id))) {
		r->job = -1;
		return false;
	}
	r->job = x->job = j - rp->jobs;
	x->rank = p->rank;
	x->domain = r->domain;
	if (p->world > j->world)
		j->world = p->world;
	return true;
}

static bool same_key(const struct rp_key *a, const struct rp_key *b)
{
	return a->job == b->job && a->key == b->key && a->rank == b->rank;
}

/* Which job and rank each record is; the columns of every job, in rank order. */
static int columns(struct replay *rp)
{
	struct rp_key seen[RP_SEEN], x, *u = NULL, *hit;
	size_t i, n = 0, m, cap = 0;
	uint32_t h;
	int err = 0;

	memset(seen, 0xff, sizeof(seen));	/* job -1 never repeats: it is skipped */
	for (i = 0; i < rp->nrec; i++) {
		if (!rec_key(rp, &rp->rec[i], &x))
			continue;
		/* most records repeat a recent rank: a small cache keeps the list short */
		h = ((uint32_t)x.key * 2654435761u ^ (uint32_t)x.job) % RP_SEEN;
		if (same_key(&seen[h], &x))
			continue;
		seen[h] = x;
		if (n == cap) {
			struct rp_key *nu = realloc(u, (cap = cap ? 2 * cap : 1024) * sizeof(*u));

			if (!nu) {
				err = -ENOMEM;
				goto out;
			}
			u = nu;
		}
		u[n++] = x;
	}
	if (u)
		qsort(u, n, sizeof(*u), cmp_key);
	for (i = 0, m = 0; i < n; i++)	/* unique (job, rank, key) */
		if (!m || cmp_key(&u[m - 1], &u[i]))
			u[m++] = u[i];
	for (i = 0; i < m; i++) {
		struct rp_job *j = &rp->jobs[u[i].job];
		struct rp_col *c;

		if (j->ncols == j->cap) {
			int ncap = j->cap ? j->cap * 2 : 16;
			struct rp_col *nc = realloc(j->cols, ncap * sizeof(*nc));

			if (!nc) {
				err = -ENOMEM;
				goto out;
			}
			j->cols = nc;
			j->cap = ncap;
		}
		c = &j->cols[j->ncols++];
		memset(c, 0, sizeof(*c));
		c->rank = u[i].rank;
		c->pid = u[i].trace ? 0 : u[i].key;
		c->domain = u[i].domain;
		u[i].domain = j->ncols - 1;	/* from here on: its column */
	}
	memset(seen, 0xff, sizeof(seen));
	for (i = 0; i < rp->nrec; i++) {
		struct rp_rec *r = &rp->rec[i];

		r->f.col = -1;
		if (r->job < 0 && !r->trace)
			continue;
		if (!rec_key(rp, r, &x))
			continue;
		h = ((uint32_t)x.key * 2654435761u ^ (uint32_t)x.job) % RP_SEEN;
		if (same_key(&seen[h], &x)) {
			r->f.col = seen[h].domain;
		} else {
			hit = bsearch(&x, u, m, sizeof(*u), cmp_key);
			r->f.col = hit ? hit->domain : -1;
			if (hit)
				seen[h] = *hit;
		}
		if (!r->trace && !r->f.tid)
			r->f.tid = (uint32_t)r->key;
	}
out:
	free(u);
	return err;
}

/* An op trace's sequence numbers, per rank and communicator in entry order (as the probes
 * count them), and the ops each rank never ended. Records end sorted by job, column, start. */
static int sequence(struct replay *rp, const uint32_t *ord)
{
	struct { uint64_t comm, next; } *cn = NULL;
	int ncn = 0, capcn = 0, job = -2, col = -2, k;
	uint64_t waits = 0;
	size_t i;

	for (i = 0; i < rp->nrec; i++) {
		struct rp_rec *r = &rp->rec[ord[i]];
		struct rp_col *c;

		if (r->job < 0 || r->f.col < 0)
			continue;
		c = &rp->jobs[r->job].cols[r->f.col];
		if (r->job != job || r->f.col != col) {
			job = r->job;
			col = r->f.col;
			ncn = 0;
			waits = 0;
		}
		if (r->wait)	/* the n-th wait for asynchronous collectives, on every rank */
			r->f.seq = waits++;
		if (r->trace && r->f.kind == FEED_COLL) {
			for (k = 0; k < ncn && cn[k].comm != r->f.comm; k++)
				;
			if (k == ncn) {
				if (ncn == capcn) {
					int cap = capcn ? capcn * 2 : 16;
					void *n = realloc(cn, cap * sizeof(*cn));

					if (!n) {
						free(cn);
						return -ENOMEM;
					}
					cn = n;
					capcn = cap;
				}
				cn[ncn].comm = r->f.comm;
				cn[ncn++].next = 0;
			}
			r->f.seq = cn[k].next++;
		}
		if (r->open && !c->open) {
			c->open = r->open;
			c->open_call = (struct job_inflight){
				.enter_ns = r->f.start, .seq = r->f.seq, .comm = r->f.comm,
				.bytes = r->f.bytes, .op = r->f.op,
			};
		}
	}
	free(cn);
	return 0;
}

/* Does r end at nearly the same instant on every rank: a blocking collective's return, or
 * the end of a wait for asynchronous ones (an op trace's only reference when all are)? */
static bool clock_ref(const struct rp_rec *r)
{
	if (r->f.col < 0 || r->comm_idx < 0)
		return false;
	return r->wait || (r->sync && r->f.kind == FEED_COLL && r->f.end);
}

/* Column b's clock minus column a's: the median over the collectives both returned from. */
static int offset(const struct rp_ret *a, int na, const struct rp_ret *b, int nb, int64_t *off)
{
	uint64_t *d = malloc((na < nb ? na : nb) * sizeof(*d) + 1);
	int i = 0, k = 0, n = 0;

	if (!d)
		return -ENOMEM;
	while (i < na && k < nb) {
		if (a[i].k == b[k].k)	/* signed, as unsigned that sorts the same */
			d[n++] = (b[k++].t - a[i++].t) ^ (1ULL << 63);
		else if (a[i].k < b[k].k)
			i++;
		else
			k++;
	}
	if (n >= RP_MATCH_MIN)
		*off = (int64_t)(detect__median(d, n) ^ (1ULL << 63));
	free(d);
	return n >= RP_MATCH_MIN ? 0 : -ENOENT;
}

/* Every column's clock offset from column 0's, then every record on that one clock. */
static int clocks(struct replay *rp, struct rp_job *j, const uint32_t *ord, size_t from,
		  size_t to)
{
	struct rp_ret **ret = calloc(j->ncols, sizeof(*ret));
	int *nret = calloc(j->ncols, sizeof(*nret)), *order = calloc(j->ncols, sizeof(*order));
	int c, a, k, nknown = 0, err = 0, lost = 0;
	size_t i;

	if (!ret || !nret || !order) {
		err = -ENOMEM;
		goto out;
	}
	for (i = from; i < to; i++) {	/* by column: each column's returns in a run */
		const struct rp_rec *r = &rp->rec[ord[i]];

		if (clock_ref(r))
			nret[r->f.col]++;
	}
	for (c = 0; c < j->ncols; c++) {
		ret[c] = malloc((2 * nret[c] + 1) * sizeof(**ret));	/* and radix scratch */
		if (!ret[c]) {
			err = -ENOMEM;
			goto out;
		}
		nret[c] = 0;
	}
	for (i = from; i < to; i++) {
		const struct rp_rec *r = &rp->rec[ord[i]];

		if (clock_ref(r))
			ret[r->f.col][nret[r->f.col]++] = (struct rp_ret){
				(uint64_t)r->comm_idx << 48 | (r->f.seq & ((1ULL << 48) - 1)),
				r->f.end };
	}
	for (c = 0; c < j->ncols; c++)
		radix_ret(ret[c], ret[c] + nret[c], nret[c]);
	for (c = 0; c < j->ncols; c++) {
		/* a column on a clock already placed shares its offset */
		for (a = 0; a < nknown; a++)
			if (j->cols[order[a]].domain == j->cols[c].domain)
				break;
		if (a < nknown) {
			j->cols[c].off_ns = j->cols[order[a]].off_ns;
		} else if (nknown) {
			/* column 0 first (a world collective), then the latest placed */
			for (k = 0; k < RP_ANCHORS && k < nknown; k++) {
				int64_t off;

				a = k ? order[nknown - k] : order[0];
				if (!offset(ret[a], nret[a], ret[c], nret[c], &off)) {
					j->cols[c].off_ns = j->cols[a].off_ns + off;
					break;
				}
			}
			if (k == RP_ANCHORS || k == nknown)
				lost++;
		}
		order[nknown++] = c;
	}
	if (lost)
		pr_warn("replay: job '%s': %d rank%s share%s no collective with the others; "
			"their clocks are taken as the first rank's", j->id, lost,
			lost == 1 ? "" : "s", lost == 1 ? "s" : "");
	for (i = from; i < to; i++) {
		struct rp_rec *r = &rp->rec[ord[i]];
		int64_t off;

		if (r->f.col < 0)
			continue;
		off = j->cols[r->f.col].off_ns;
		r->f.start = (uint64_t)((int64_t)r->f.start - off);
		if (r->f.end)
			r->f.end = (uint64_t)((int64_t)r->f.end - off);
	}
	for (c = 0; c < j->ncols; c++)
		if (j->cols[c].open)
			j->cols[c].open_call.enter_ns = (uint64_t)
				((int64_t)j->cols[c].open_call.enter_ns - j->cols[c].off_ns);
out:
	for (c = 0; ret && c < j->ncols; c++)
		free(ret[c]);
	free(ret);
	free(nret);
	free(order);
	return err;
}

/* Each column's blocking collectives of an op trace, by entry (ord: the records by job,
 * column and start), for rp__inside. */
static int calls_by_col(struct replay *rp, const uint32_t *ord)
{
	size_t i;

	for (i = 0; i < rp->nrec; i++) {
		const struct rp_rec *r = &rp->rec[ord[i]];
		struct rp_col *c;
		uint32_t *n;

		if (r->job < 0 || r->f.col < 0 || !r->trace || !r->sync || r->open ||
		    r->f.kind != FEED_COLL || !r->f.end)
			continue;
		c = &rp->jobs[r->job].cols[r->f.col];
		if (!(c->ncalls & (c->ncalls + 1)) || !c->calls) {	/* 0, 1, 3, 7...: grow */
			n = realloc(c->calls, 2 * ((size_t)c->ncalls + 1) * sizeof(*n));
			if (!n)
				return -ENOMEM;
			c->calls = n;
		}
		c->calls[c->ncalls++] = ord[i];
	}
	return 0;
}

bool rp__inside(struct rp_job *j, int col, struct job_inflight *in)
{
	struct rp_col *c = &j->cols[col];
	const struct rp_rec *r;

	while (c->cur < c->ncalls && j->rp->rec[c->calls[c->cur]].f.end <= j->now)
		c->cur++;
	if (c->exited || c->cur >= c->ncalls)
		return false;
	r = &j->rp->rec[c->calls[c->cur]];
	if (r->f.start > j->now)
		return false;
	*in = (struct job_inflight){ .enter_ns = r->f.start, .seq = r->f.seq,
				     .comm = r->f.comm, .bytes = r->f.bytes, .op = r->f.op };
	return true;
}

#define RP_RUNQ_END_NS	200000	/* a sched_delay ending this near its op's end ends it (as
				 * job.c's chain of off-CPU intervals) */

/*
 * An op trace's sched_delay inside a blocking op of the same rank (its wait for asynchronous
 * collectives, a futex: ord, by column and start) is told as a live run tells it, where the
 * intervals a thread is off CPU never overlap. One that ends the op is the op's last part,
 * woken and runnable (its runq): it delays the thread. One that ends before the op does, the
 * thread was runnable and then blocked again: the op is cut around it, and what comes after
 * it is what it waited anyway. Either way the op stays one wait and its end the step's.
 */
static int nest_runq(struct replay *rp, const uint32_t *ord)
{
	size_t i, n = rp->nrec, more = 0, box = SIZE_MAX;
	struct rp_rec *b, *r;

	for (i = 0; i < n; i++)
		more += rp->rec[i].trace && rp->rec[i].f.kind == FEED_OFF && rp->rec[i].f.runq;
	if (rp__reserve(rp, more))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		r = &rp->rec[ord[i]];
		if (!r->trace || r->f.kind != FEED_OFF || r->open || r->job < 0 || r->f.col < 0)
			continue;
		b = box != SIZE_MAX ? &rp->rec[box] : NULL;
		if (b && (b->job != r->job || b->f.col != r->f.col))
			b = NULL;
		if (r->f.runq < r->f.end - r->f.start) {	/* blocked: a box */
			if (!b || r->f.end > b->f.end)
				box = ord[i];
			continue;
		}
		if (!b || r->f.start < b->f.start || r->f.end > b->f.end)
			continue;
		if (r->f.end + RP_RUNQ_END_NS >= b->f.end) {
			b->f.runq += b->f.end - r->f.start;
			if (b->f.runq > b->f.end - b->f.start)
				b->f.runq = b->f.end - b->f.start;
			r->f.col = -1;		/* fed as the box's */
			continue;
		}
		rp->rec[rp->nrec] = *b;		/* after it: a box of its own (reserved) */
		rp->rec[rp->nrec].f.start = r->f.end;
		b->f.end = r->f.start;
		b->f.runq = 0;
		box = rp->nrec++;
	}
	return 0;
}

static void advance_all(struct replay *rp, uint64_t t, bool final)
{
	int k;

	for (k = 0; k < rp->njobs; k++)
		if (rp->jobs[k].model)
			rp__advance(&rp->jobs[k], t, final);
}

int rp__run_merged(struct replay *rp)
{
	uint64_t tick = rp->o->tick_ns, next = 0, end = 0, hang_from = 0, t;
	uint32_t *ord = rp__big((rp->nrec + 1) * sizeof(*ord));
	struct rp_order *o = rp__big((2 * rp->nrec + 1) * sizeof(*o));
	size_t i, from;
	int err, k, c;

	err = ord && o ? columns(rp) : -ENOMEM;
	if (!err) {
		sort_records(rp, true, ord, o);
		err = sequence(rp, ord);
	}
	for (i = 0; !err && i < rp->nrec;) {	/* by job: each job's records in a run */
		int job = rp->rec[ord[i]].job;

		for (from = i; i < rp->nrec && rp->rec[ord[i]].job == job; i++)
			;
		if (job >= 0)
			err = clocks(rp, &rp->jobs[job], ord, from, i);
	}
	for (k = 0; !err && k < rp->njobs; k++) {
		struct rp_job *j = &rp->jobs[k];

		if (!j->ncols)
			continue;
		if (j->world < j->ncols)
			j->world = j->ncols;
		err = rp__build(rp, j);
		for (c = 0; c < j->ncols; c++)
			if (j->cols[c].open && j->cols[c].open_call.enter_ns > hang_from)
				hang_from = j->cols[c].open_call.enter_ns;
	}
	if (!err)
		err = calls_by_col(rp, ord);
	i = rp->nrec;
	if (!err && !(err = nest_runq(rp, ord)) && rp->nrec > i) {	/* ops cut in two */
		free(ord);
		free(o);
		ord = rp__big((rp->nrec + 1) * sizeof(*ord));
		o = rp__big((2 * rp->nrec + 1) * sizeof(*o));
		err = ord && o ? 0 : -ENOMEM;
	}
	if (err)
		goto out;
	sort_records(rp, false, ord, o);
	for (i = 0; i < rp->nrec; i++) {
		struct rp_rec *r = &rp->rec[ord[i]];

		if (r->job < 0 || r->f.col < 0 || r->open)
			continue;
		t = feed__done_ns(&r->f);
		if (!next)
			next = t + tick;
		while (t > next) {
			advance_all(rp, next, false);
			next += tick;
		}
		if (r->f.kind == FEED_EXIT)
			rp->jobs[r->job].cols[r->f.col].exited = true;
		feed__apply(rp->jobs[r->job].model, &r->f);
		end = t;
	}
	/* ranks stuck in an op they never ended: time runs on until a hang can be judged */
	if (hang_from && hang_from + rp->o->jcfg.hang_timeout_ns + 2 * tick > end)
		end = hang_from + rp->o->jcfg.hang_timeout_ns + 2 * tick;
	while (next && next < end) {
		advance_all(rp, next, false);
		next += tick;
	}
	advance_all(rp, end, true);
out:
	free(ord);
	free(o);
	return err;
}
