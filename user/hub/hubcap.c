// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Captures of several nodes merged into one trace: see hubcap.h. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comms.h"
#include "detect.h"
#include "hubcap.h"
#include "jsonp.h"
#include "trace.h"

/* A collective slice of the merged trace, for the flows. */
struct coll {
	uint64_t comm;		/* its communicator's name, hashed */
	uint64_t op;		/* its operation's name, hashed */
	bool ended;		/* its return was seen (gloo's calls are probed at entry only) */
	uint32_t pid, tid;	/* merged tracks */
	int node;
	int64_t start, end;	/* ns, on the reference node's clock */
	int64_t seq;		/* its process's count; then shifted onto the reference's */
};

#define HUBCAP_PROCS_KEPT 256	/* a node's processes its clock is refined from, at most */

/* A node's clock against the reference node's, from its processes' collective ends. */
struct node_fit {
	int64_t med[HUBCAP_PROCS_KEPT];	/* a process's ends - its reference process's */
	int64_t mad[HUBCAP_PROCS_KEPT];	/* and their spread */
	int ref_node[HUBCAP_PROCS_KEPT];	/* that reference's node */
	int n;
	bool refined;
	int64_t refine_ns;	/* added to the step-based offset */
	uint64_t err_ns;	/* the refined offset's error */
	char note[160];
};

struct merge {
	const struct hubcap_node *nodes;
	int n;
	int ref;		/* the reference node */
	struct node_fit *nd;
	struct trace_out o;
	struct coll *c;
	size_t nc, cap;
	struct hubcap_stats st;
	int64_t *shift_ns;	/* per node: subtracted from its times */
};

/* Trace microseconds (ns precision) from ns. */
static void put_us(struct json *j, int64_t ns)
{
	char b[48];

	snprintf(b, sizeof(b), "%s%lld.%03d", ns < 0 ? "-" : "", llabs((long long)ns / 1000),
		 (int)llabs((long long)ns % 1000));
	json__raw(j, b);
}

/* Copy one parsed value (depth is bounded by the reader). */
static void copy(struct json *j, const struct jsonp *d, const struct jsonp_val *v)
{
	const struct jsonp_val *c;
	char b[40];

	switch (v->type) {
	case JSONP_NULL:
		json__null(j);
		break;
	case JSONP_BOOL:
		json__bool(j, v->b);
		break;
	case JSONP_NUM:
		if (v->is_int) {
			json__int(j, v->i);
		} else {
			snprintf(b, sizeof(b), "%.17g", v->num);
			json__raw(j, isfinite(v->num) ? b : "null");
		}
		break;
	case JSONP_STR:
		json__strn(j, v->str, v->len);
		break;
	case JSONP_ARR:
		json__arr_begin(j);
		for (c = jsonp__first(d, v); c; c = jsonp__next(d, c))
			copy(j, d, c);
		json__arr_end(j);
		break;
	case JSONP_OBJ:
		json__obj_begin(j);
		for (c = jsonp__first(d, v); c; c = jsonp__next(d, c)) {
			json__key(j, c->key);
			copy(j, d, c);
		}
		json__obj_end(j);
		break;
	}
}

static void keep_coll(struct merge *m, const struct jsonp *d, const struct jsonp_val *ev,
		      int node, uint32_t pid, uint32_t tid, int64_t start, int64_t dur)
{
	const struct jsonp_val *args = jsonp__get(d, ev, "args");
	const char *comm = jsonp__str(d, args, "comm"), *name = jsonp__str(d, ev, "name");
	struct coll *nc;
	int64_t seq;

	if (!comm || !*comm || !name || !jsonp__int64(d, args, "seq", &seq) ||
	    m->nc == HUBCAP_COLL_MAX)
		return;
	if (m->nc == m->cap) {
		nc = realloc(m->c, sizeof(*nc) * (m->cap ? m->cap * 2 : 1024));
		if (!nc)
			return;
		m->c = nc;
		m->cap = m->cap ? m->cap * 2 : 1024;
	}
	m->c[m->nc++] = (struct coll){
		.comm = comms__fnv1a((const uint8_t *)comm, strlen(comm)), .op = comms__fnv1a((const uint8_t *)name, strlen(name)), .pid = pid,
		.tid = tid, .node = node, .start = start, .end = start + (dur > 0 ? dur : 0),
		.seq = seq, .ended = dur > 0,
	};
}

/*
 * One event line of node k: copied with its pid moved onto the node's tracks, its time onto
 * the reference clock, and its process named with the node. Flows are left out (made again).
 */
static void event(struct merge *m, int k, const char *line, size_t len, bool write)
{
	const struct jsonp_val *ev, *c;
	struct json *j = &m->o.j;
	const char *ph, *name, *cat;
	int64_t pid, tid = 0, start = 0, dur = 0;
	struct jsonp d = {};
	double ts, du;
	bool has_ts;

	if (len > HUBCAP_LINE_MAX || jsonp__parse(&d, line, len, HUBCAP_LINE_VALUES) ||
	    (ev = jsonp__root(&d))->type != JSONP_OBJ || !(ph = jsonp__str(&d, ev, "ph")) ||
	    !jsonp__int64(&d, ev, "pid", &pid) || pid < 0 || pid >= (1 << HUBCAP_PID_BITS)) {
		m->st.bad_lines += write;
		goto out;
	}
	if (!strcmp(ph, "s") || !strcmp(ph, "f") || !strcmp(ph, "t"))
		goto out;
	jsonp__int64(&d, ev, "tid", &tid);
	has_ts = jsonp__double(&d, ev, "ts", &ts) && isfinite(ts) && fabs(ts) < 9e15;
	if (has_ts) {
		start = llround(ts * 1000) - m->shift_ns[k];
		if (jsonp__double(&d, ev, "dur", &du) && isfinite(du) && du >= 0 && du < 9e15)
			dur = llround(du * 1000);
	}
	name = jsonp__str(&d, ev, "name");
	cat = jsonp__str(&d, ev, "cat");
	if (!write) {
		if (has_ts && !strcmp(ph, "X") && cat && !strcmp(cat, "collective"))
			keep_coll(m, &d, ev, k, (uint32_t)((k + 1) << HUBCAP_PID_BITS | pid),
				  (uint32_t)tid, start, dur);
		goto out;
	}
	json__obj_begin(j);
	for (c = jsonp__first(&d, ev); c; c = jsonp__next(&d, c)) {
		json__key(j, c->key);
		if (!strcmp(c->key, "pid")) {
			json__uint(j, (uint64_t)(k + 1) << HUBCAP_PID_BITS | (uint64_t)pid);
		} else if (!strcmp(c->key, "ts") && has_ts) {
			put_us(j, start);
		} else if (!strcmp(c->key, "dur") && has_ts) {
			put_us(j, dur);
		} else if (!strcmp(c->key, "args") && !strcmp(ph, "M") && name &&
			   !strcmp(name, "process_name") && jsonp__str(&d, c, "name")) {
			char buf[256];

			snprintf(buf, sizeof(buf), "%.160s on %s", jsonp__str(&d, c, "name"),
				 m->nodes[k].name);
			json__obj_begin(j);
			json__kstr(j, "name", buf);
			json__obj_end(j);
		} else {
			copy(j, &d, c);
		}
	}
	json__obj_end(j);
	trace__out_event(&m->o);
	m->st.events++;
out:
	jsonp__free(&d);
}

/* Node k's event lines: every line between "traceEvents":[ and the end. */
static void node_events(struct merge *m, int k, bool write)
{
	const char *p = m->nodes[k].text, *end = p + m->nodes[k].len, *nl, *at;
	size_t len;

	at = memmem(p, m->nodes[k].len, "\"traceEvents\":[", 15);
	if (!at) {
		m->st.bad_lines += write;
		return;
	}
	p = at + 15;
	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end;
		len = nl - p;
		while (len && (p[len - 1] == ',' || p[len - 1] == ' ' || p[len - 1] == '\r'))
			len--;
		if (!len || (len == 2 && !memcmp(p, "]}", 2)))
			continue;
		event(m, k, p, len, write);
	}
}

static int by_comm_proc_seq(const void *x, const void *y)
{
	const struct coll *a = x, *b = y;

	if (a->comm != b->comm)
		return a->comm < b->comm ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int by_end(const void *x, const void *y)
{
	const struct coll *a = x, *b = y;

	return a->end < b->end ? -1 : a->end > b->end;
}

static int by_comm_seq_start(const void *x, const void *y)
{
	const struct coll *a = x, *b = y;

	if (a->comm != b->comm)
		return a->comm < b->comm ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* The collective numbered seq in r (sorted by seq), or NULL. */
static const struct coll *at_seq(const struct coll *r, size_t n, int64_t seq)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && r[lo].seq == seq ? &r[lo] : NULL;
}

static int64_t tm(const struct coll *c, bool end)
{
	return end ? c->end : c->start;
}

/* The collective of op in e (sorted by end, or by start) whose end (start) is nearest t. */
static const struct coll *nearest(const struct coll *e, size_t n, bool end, uint64_t op,
				  int64_t t)
{
	const struct coll *best = NULL;
	size_t lo = 0, hi = n, i;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (tm(&e[mid], end) < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo > 4 ? lo - 4 : 0; i < n && i < lo + 4; i++)
		if (e[i].op == op &&
		    (!best || llabs(tm(&e[i], end) - t) < llabs(tm(best, end) - t)))
			best = &e[i];
	return best;
}

static int by_start(const void *x, const void *y)
{
	const struct coll *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* Were most of these collectives seen to return? */
static bool ended(const struct coll *c, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		k += c[i].ended;
	return n && k * 2 >= n;
}

#define SEQ_TRY		8	/* shifts tried either side of the nearest ends' */
#define SEQ_SAMPLE	2048	/* a process's collectives scored, at most */
#define SEQ_MATCH_MIN	8

/*
 * p's ends against r's with p's numbers shifted by d: the median difference in *med, the
 * median absolute deviation from it returned (INT64_MAX: too few matched).
 */
static int64_t score(const struct coll *p, size_t np, const struct coll *r, size_t nr, int64_t d,
		     bool end, int64_t *buf, int64_t *med)
{
	size_t i, n = 0, step = np > SEQ_SAMPLE ? np / SEQ_SAMPLE : 1;

	for (i = 0; i < np; i += step) {
		const struct coll *x = at_seq(r, nr, p[i].seq + d);

		if (x && x->op == p[i].op)
			buf[n++] = end ? p[i].end - x->end : p[i].start - x->start;
	}
	if (n < SEQ_MATCH_MIN || n * 2 < (np + step - 1) / step)
		return INT64_MAX;
	qsort(buf, n, sizeof(*buf), detect__cmp_i64);
	*med = buf[n / 2];
	for (i = 0; i < n; i++)
		buf[i] = llabs(buf[i] - *med);
	qsort(buf, n, sizeof(*buf), detect__cmp_i64);
	return buf[n / 2];
}

static void refine(struct merge *m)
{
	int64_t v[HUBCAP_PROCS_KEPT], lim;
	uint64_t skew = 0, e;
	size_t i;
	int k, n, x;

	/* processes on the reference node share its clock: what their ends differ by is how
	 * far apart ranks leave one collective, which no clock offset explains and none can
	 * be told from; every refined offset's error holds it. A spread counts three median
	 * deviations (about two standard deviations): one is no bound, and on a busy machine
	 * the ends drift in runs (68 us off against a stated 54 us on a 2-vCPU CI run) */
	for (x = 0; x < m->nd[m->ref].n; x++) {
		e = (uint64_t)llabs(m->nd[m->ref].med[x]) + 3 * (uint64_t)m->nd[m->ref].mad[x];
		skew = e > skew ? e : skew;
	}
	for (k = 0; k < m->n; k++) {
		struct node_fit *f = &m->nd[k];
		uint64_t err = 0;

		if (k == m->ref || !m->nodes[k].text)
			continue;
		for (n = 0, x = 0; x < f->n; x++)
			if (f->ref_node[x] == m->ref)
				v[n++] = f->med[x];
		if (!n) {
			snprintf(f->note, sizeof(f->note), "no collective seen to return joined with "
				 "the reference node's (gloo's are probed at entry only): the "
				 "step-based offset stands");
			continue;
		}
		qsort(v, n, sizeof(*v), detect__cmp_i64);
		f->refine_ns = v[n / 2];
		for (x = 0; x < f->n; x++) {
			if (f->ref_node[x] != m->ref)
				continue;
			e = (uint64_t)llabs(f->med[x] - f->refine_ns) + 3 * (uint64_t)f->mad[x];
			err = e > err ? e : err;
		}
		/* within what the step ends allowed; else the pairing is not to be trusted */
		lim = m->nodes[k].lined_up ? 2 * (int64_t)m->nodes[k].err_ns : 0;
		lim = lim > 2000000 ? lim : 2000000;
		if (!m->nodes[k].lined_up || llabs(f->refine_ns) > lim) {
			snprintf(f->note, sizeof(f->note), "the collectives' ends put it %.3f ms from "
				 "the step-based offset, beyond its error: the step-based offset "
				 "stands", f->refine_ns / 1e6);
			f->refine_ns = 0;
			continue;
		}
		f->refined = true;
		err += skew;
		f->err_ns = err > 1000 ? err : 1000;
		m->shift_ns[k] += f->refine_ns;
		for (i = 0; i < m->nc; i++)
			if (m->c[i].node == k) {
				m->c[i].start -= f->refine_ns;
				m->c[i].end -= f->refine_ns;
			}
	}
}

/*
 * Each process counts a communicator's collectives from its own attach. Shift every process's
 * numbers onto a reference process's (on the reference node when it has one there): the
 * shift near the nearest ends' under which the ends agree best (a collective ends nearly at
 * once on every rank; a wrong shift pairs collectives whose gaps jitter). The agreed ends
 * then measure each node's clock against the reference node's: its offset is refined by the
 * median, within what the step ends allowed.
 */
static void align_seqs(struct merge *m)
{
	size_t a, b, p, q, i, rs, rn, np;
	int64_t *buf = calloc(m->nc ? m->nc : 1, sizeof(*buf)), *dd = NULL;
	struct coll *ends = NULL, *starts = NULL;
	bool r_end;
	int k;

	dd = calloc(m->nc ? m->nc : 1, sizeof(*dd));
	ends = calloc(m->nc ? m->nc : 1, sizeof(*ends));
	starts = calloc(m->nc ? m->nc : 1, sizeof(*starts));
	if (!buf || !dd || !ends || !starts)
		goto out;
	if (m->nc)
		qsort(m->c, m->nc, sizeof(*m->c), by_comm_proc_seq);
	for (a = 0; a < m->nc; a = b) {
		for (b = a; b < m->nc && m->c[b].comm == m->c[a].comm; b++)
			;
		/* the reference: the most collectives, on the reference node first */
		for (rs = a, rn = 0, p = a; p < b; p = q) {
			bool better;

			for (q = p; q < b && m->c[q].pid == m->c[p].pid; q++)
				;
			better = (m->c[p].node == m->ref) > (m->c[rs].node == m->ref) ||
				 ((m->c[p].node == m->ref) == (m->c[rs].node == m->ref) &&
				  q - p > rn);
			if (!rn || better) {
				rn = q - p;
				rs = p;
			}
		}
		memcpy(ends, &m->c[rs], rn * sizeof(*ends));
		qsort(ends, rn, sizeof(*ends), by_end);
		memcpy(starts, &m->c[rs], rn * sizeof(*starts));
		qsort(starts, rn, sizeof(*starts), by_start);
		r_end = ended(&m->c[rs], rn);
		for (p = a; p < b; p = q) {
			int64_t d0, d, best_d = 0, best = INT64_MAX, med, best_med = 0, sc;
			size_t nd = 0;
			bool end;

			for (q = p; q < b && m->c[q].pid == m->c[p].pid; q++)
				;
			if (p == rs)
				continue;
			np = q - p;
			/* ends where both were seen to return; else entries, which line the numbers
			 * up (arrivals are skewed, but by less than a collective's gap) and say
			 * nothing of clocks */
			end = r_end && ended(&m->c[p], np);
			for (i = p; i < q; i += np > SEQ_SAMPLE ? np / SEQ_SAMPLE : 1) {
				const struct coll *r = nearest(end ? ends : starts, rn, end,
							       m->c[i].op, tm(&m->c[i], end));

				if (r)
					dd[nd++] = r->seq - m->c[i].seq;
			}
			if (!nd)
				continue;
			qsort(dd, nd, sizeof(*dd), detect__cmp_i64);
			d0 = dd[nd / 2];
			for (d = d0 - SEQ_TRY; d <= d0 + SEQ_TRY; d++) {
				sc = score(&m->c[p], np, &m->c[rs], rn, d, end, buf, &med);
				if (sc < best || (sc == best && sc != INT64_MAX &&
						  llabs(d - d0) < llabs(best_d - d0))) {
					best = sc;
					best_d = d;
					best_med = med;
				}
			}
			if (best == INT64_MAX)
				best_d = d0;
			for (i = p; i < q; i++)
				m->c[i].seq += best_d;
			if (best == INT64_MAX || !end)
				continue;
			/* its ends against the reference's, for its node's clock */
			k = m->c[p].node;
			if (m->nd[k].n < HUBCAP_PROCS_KEPT) {
				m->nd[k].med[m->nd[k].n] = best_med;
				m->nd[k].mad[m->nd[k].n] = best;
				m->nd[k].ref_node[m->nd[k].n] = m->c[rs].node;
				m->nd[k].n++;
			}
		}
	}
	refine(m);
out:
	free(buf);
	free(dd);
	free(ends);
	free(starts);
}

/* Flows: one a collective, from the first rank into it to each other rank's slice. */
static void flows(struct merge *m)
{
	struct json *j = &m->o.j;
	int64_t *spread = NULL;
	size_t a, b, i, ns = 0;
	char name[48];

	if (m->nc)
		qsort(m->c, m->nc, sizeof(*m->c), by_comm_seq_start);
	spread = calloc(m->nc ? m->nc : 1, sizeof(*spread));
	for (a = 0; a < m->nc; a = b) {
		int64_t lo = INT64_MAX, hi = INT64_MIN;
		uint64_t id;
		bool across = false, all_ended = true;

		for (b = a; b < m->nc && m->c[b].comm == m->c[a].comm && m->c[b].seq == m->c[a].seq;
		     b++) {
			across |= m->c[b].node != m->c[a].node;
			all_ended &= m->c[b].ended;
			lo = m->c[b].end < lo ? m->c[b].end : lo;
			hi = m->c[b].end > hi ? m->c[b].end : hi;
		}
		if (b - a < 2)
			continue;
		id = (m->c[a].comm ^ ((uint64_t)m->c[a].seq * 0x9e3779b97f4a7c15ULL)) &
		     ((1ULL << 53) - 1);
		snprintf(name, sizeof(name), "collective seq %" PRId64, m->c[a].seq);
		for (i = a; i < b; i++) {
			json__obj_begin(j);
			json__kstr(j, "ph", i == a ? "s" : "f");
			json__kstr(j, "name", name);
			json__kstr(j, "cat", "collective");
			json__kuint(j, "pid", m->c[i].pid);
			json__kuint(j, "tid", m->c[i].tid);
			json__kuint(j, "id", id);
			if (i != a)
				json__kstr(j, "bp", "e");
			json__key(j, "ts");
			put_us(j, m->c[i].start);
			json__obj_end(j);
			trace__out_event(&m->o);
		}
		m->st.flows++;
		if (across) {
			m->st.flows_across++;
			if (spread && all_ended)
				spread[ns++] = hi - lo;
		}
	}
	if (ns) {
		qsort(spread, ns, sizeof(*spread), detect__cmp_i64);
		m->st.residual_ns = spread[ns / 2];
		m->st.residual_p90_ns = spread[ns * 9 / 10];
	}
	free(spread);
}

static void other_data(struct merge *m, const char *id)
{
	struct json *j = &m->o.j;
	uint64_t stated = 0;
	int k;

	for (k = 0; k < m->n; k++) {
		uint64_t e = m->nd[k].refined ? m->nd[k].err_ns : m->nodes[k].err_ns;

		if (m->nodes[k].lined_up && e > stated)
			stated = e;
	}
	json__obj_begin(j);
	json__kstr(j, "producer", "rankscope hub");
	json__kstr(j, "capture", id);
	json__kstr(j, "clock", "each node's CLOCK_MONOTONIC mapped onto the reference node's by "
		   "the offset the hub found from step ends, refined by the ends of the "
		   "collectives joined across nodes when they agree with it");
	json__kstr(j, "reference_node", m->nodes[m->ref].name);
	json__kuint(j, "clock_error_stated_ns", stated);
	json__kuint(j, "residual_ns", m->st.residual_ns);
	json__kuint(j, "residual_p90_ns", m->st.residual_p90_ns);
	json__kstr(j, "residual", "the spread of one collective's ends across nodes, median and "
		   "90th percentile over the collectives joined across nodes whose returns were "
		   "seen (0: none were)");
	json__kuint(j, "events", m->st.events);
	json__kuint(j, "bad_lines", m->st.bad_lines);
	json__kuint(j, "flows", m->st.flows);
	json__kuint(j, "flows_across_nodes", m->st.flows_across);
	json__key(j, "nodes");
	json__arr_begin(j);
	for (k = 0; k < m->n; k++) {
		const struct hubcap_node *nd = &m->nodes[k];

		json__obj_begin(j);
		json__kstr(j, "node", nd->name);
		json__kuint(j, "pid_base", (uint64_t)(k + 1) << HUBCAP_PID_BITS);
		json__kstr(j, "capture", nd->capture);
		json__key(j, "included");
		json__bool(j, nd->text && k < HUBCAP_NODES_MAX);
		if (k >= HUBCAP_NODES_MAX)
			json__kstr(j, "why", "over the nodes one merged trace holds");
		else if (!nd->text)
			json__kstr(j, "why", nd->why ? nd->why : "no capture came");
		json__key(j, "lined_up");
		json__bool(j, nd->lined_up);
		if (nd->lined_up) {
			const struct node_fit *f = &m->nd[k];

			json__kint(j, "clock_offset_ns", nd->offset_ns + f->refine_ns);
			json__kuint(j, "clock_error_ns", f->refined ? f->err_ns : nd->err_ns);
			json__kint(j, "clock_offset_steps_ns", nd->offset_ns);
			json__kuint(j, "clock_error_steps_ns", nd->err_ns);
			json__key(j, "refined_from_collectives");
			json__bool(j, f->refined);
			if (f->note[0])
				json__kstr(j, "note", f->note);
		} else if (nd->text) {
			json__kstr(j, "note", "not lined up with the reference node: its times are "
				   "its own clock's, not comparable");
		}
		json__obj_end(j);
	}
	json__arr_end(j);
	json__obj_end(j);
}

int hubcap__merge(const struct hubcap_node *nodes, int n, const char *id, int fd, bool gz,
		  struct hubcap_stats *st)
{
	struct merge m = { .nodes = nodes, .n = n };
	const char *hdr = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
	int k, err;

	m.shift_ns = calloc(n ? n : 1, sizeof(*m.shift_ns));
	m.nd = calloc(n ? n : 1, sizeof(*m.nd));
	err = -ENOMEM;
	if (!m.shift_ns || !m.nd)
		goto out;
	/* the reference: the hub's (lined up with no offset and no error), else the first */
	m.ref = 0;
	for (k = n - 1; k >= 0; k--)
		if (nodes[k].text && nodes[k].lined_up && !nodes[k].offset_ns && !nodes[k].err_ns)
			m.ref = k;
	for (k = 0; k < n; k++)
		m.shift_ns[k] = nodes[k].lined_up ? nodes[k].offset_ns : 0;
	/* the collectives first: the sequences lined up and the clocks refined */
	for (k = 0; k < n && k < HUBCAP_NODES_MAX; k++)
		if (nodes[k].text)
			node_events(&m, k, false);
	align_seqs(&m);
	err = trace__out_open(&m.o, fd, gz);
	if (err)
		goto out;
	trace__out_put(&m.o, hdr, strlen(hdr));
	for (k = 0; k < n && k < HUBCAP_NODES_MAX && !m.o.err; k++)
		if (nodes[k].text)
			node_events(&m, k, true);
	flows(&m);
	trace__out_put(&m.o, "\n],\n\"otherData\":", 16);
	other_data(&m, id);
	trace__out_put(&m.o, m.o.j.buf, m.o.j.len);
	json__reset(&m.o.j);
	trace__out_put(&m.o, "}\n", 2);
	err = trace__out_close(&m.o);
out:
	if (st)
		*st = m.st;
	free(m.c);
	free(m.shift_ns);
	free(m.nd);
	return err;
}
