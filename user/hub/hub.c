// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Jobs across nodes, lined up without a shared clock and judged as one: see hub.h. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comms.h"
#include "detect.h"
#include "hub.h"
#include "hublife.h"
#include "json.h"
#include "jsonp.h"
#include "prom.h"
#include "report.h"

#define HUB_MAX_VALUES	(1 << 20)	/* JSON values in one answer */
#define HUB_PENDING	65536		/* step lines waiting for hub__drain_steps */
#define HUB_CHANGES	16		/* changes of a rank's sequence of collectives kept */
#define HUB_REALIGN	64		/* job steps between checks of a node's line-up */

enum hstate { HS_UNKNOWN, HS_RUNNING, HS_SLEEPING, HS_STOPPED, HS_ZOMBIE, HS_GONE };
static const char *const state_names[] = { NULL, "running", "sleeping", "stopped", "zombie",
					   "gone" };

struct hrank {
	int rank;
	int node;
	int64_t pid;
	int world;
	enum hstate state;	/* as its node's /api/v1/ranks last said */
	struct hub_step ring[HUB_STEPS];
	int n, head;		/* the ring's newest is at head - 1 */
	/* the text of the latest distinct sequences of collectives, to tell a divergence */
	struct {
		uint64_t sig;
		char ops[JOB_SIG_TEXT];
	} sigs[HUB_SIGS];
	int sig_next;
	/* the steps where its sequence of collectives changed (a step's differs from the one
	 * before): steps come faster than the ring keeps them, changes are rare */
	struct {
		uint64_t k;	/* the node's step number */
		uint64_t comm, sig;
	} chg[HUB_CHANGES];
	int nchg, chg_head;
	uint64_t last_sig, last_comm;
	/* the collective its main thread was inside, as its node's /api/v1/ranks last said */
	bool in_coll;
	char in_op[24];
	uint64_t in_bytes;
	uint64_t in_comm;	/* its communicator's name, hashed */
	uint64_t in_for_ns;	/* inside it for this long when the node said so */
	uint64_t in_at_ns;	/* when that was (the hub's clock) */
};

struct jnode {
	int node;
	bool aligned;
	int64_t shift;		/* the job's step = the node's + shift */
	int64_t offset_ns;	/* the node's clock - the reference node's */
	uint64_t err_ns;
	uint64_t phase_ns;	/* of which: a collective's share of the step (see align()) */
	bool by_polls;		/* its steps were lined up by the polls' clocks, not their lengths */
	bool clock_by_polls;	/* its offset is the polls' (tighter than the step starts') */
	uint64_t checked_k;	/* the node step it was last lined up at */
	uint64_t waited;	/* judgements held back for it to line up */
	uint64_t wait_from_ns;
};

struct hjob {
	char id[128];
	int world;
	struct hrank **r;	/* sorted by rank */
	int nr, cap;
	struct jnode *jn;
	int njn;
	int ref;		/* the reference node (the lowest rank's) */
	uint64_t judged_k;	/* the last job step judged */
	uint64_t div_k;		/* the last job step looked at for a divergence */
	uint64_t div_named_k;	/* the job step of the last divergence named */
	struct job_verdict last;
	int last_rank;
	bool emitted;
	uint64_t last_emit_k;
	enum vclass cand_cls;
	int cand_rank, cand_n;
	struct persist persist;
	struct comm_ref cref;	/* for collectives that got slower (detect__comm_change) */
	/* a node's own verdict of a kind only it can see (a hang, a divergence, an exit) */
	struct job_verdict node_v;
	int node_v_rank;
	bool have_node_v;
	uint64_t fed_ns;	/* when a step of it last came (the hub's clock) */
	struct cost cost;	/* what stragglers cost it across nodes (cost.h) */
	uint64_t cost_k;	/* the last job step accounted */
};

#define HUB_NTP	16	/* poll timings kept per node */

struct hnode {
	char name[96];
	bool up, gone, ever;
	uint64_t instance;	/* its daemon's, from its step answers (0: not said yet) */
	/* its clock against the hub's from the polls: the node's now at its answer against the
	 * middle of the request (error: half the round trip); the least error of the last few */
	uint64_t node_now_ns;	/* from the latest step answer, not yet paired with its timing */
	int64_t ntp_off[HUB_NTP];
	uint64_t ntp_err[HUB_NTP];
	int ntp_n, ntp_head;
	int fails;
	uint64_t last_ok_ns;
	char why[160];
	struct hub_node_stats st;
};

struct pending {
	char job[128];
	int rank;
	char *json;
	size_t len;
};

struct hub {
	int window;
	struct hnode *nodes;
	int nn;
	struct hjob *jobs[HUB_MAX_JOBS];
	int nj;
	struct pending *pend;
	int npend;
	int nranks;		/* of all jobs */
	uint64_t now;		/* the latest time the caller gave */
	uint64_t hang_ns;	/* no step for this long, with a rank stopped: a hang */
	struct hublife life;	/* the jobs' failures and recoveries, from the nodes' lives */
	double usd;		/* the straggler cost's price (hub__set_price); 0: none */
	int gpus;
};

struct hub *hub__new(int window)
{
	struct hub *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->window = window > 1 ? window : HUB_WINDOW;
	h->hang_ns = HUB_HANG_NS;
	h->gpus = 1;
	h->nodes = calloc(HUB_MAX_NODES, sizeof(*h->nodes));
	h->pend = calloc(HUB_PENDING, sizeof(*h->pend));
	if (!h->nodes || !h->pend) {
		hub__free(h);
		return NULL;
	}
	return h;
}

static void job_free(struct hjob *j)
{
	int i;

	if (!j)
		return;
	for (i = 0; i < j->nr; i++)
		free(j->r[i]);
	free(j->r);
	free(j->jn);
	free(j);
}

void hub__free(struct hub *h)
{
	int i;

	if (!h)
		return;
	for (i = 0; i < h->nj; i++)
		job_free(h->jobs[i]);
	for (i = 0; i < h->npend; i++)
		free(h->pend[i].json);
	free(h->pend);
	free(h->nodes);
	hublife__free(&h->life);
	free(h);
}

int hub__node(struct hub *h, const char *name)
{
	int i;

	for (i = 0; i < h->nn; i++)
		if (!strcmp(h->nodes[i].name, name)) {
			h->nodes[i].gone = false;
			return i;
		}
	if (h->nn == HUB_MAX_NODES)
		return -ENOSPC;
	snprintf(h->nodes[h->nn].name, sizeof(h->nodes[h->nn].name), "%s", name);
	return h->nn++;
}

static struct hjob *find_job(struct hub *h, const char *id, bool make)
{
	struct hjob *j;
	int i;

	for (i = 0; i < h->nj; i++)
		if (!strcmp(h->jobs[i]->id, id))
			return h->jobs[i];
	if (!make || h->nj == HUB_MAX_JOBS)
		return NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	snprintf(j->id, sizeof(j->id), "%s", id);
	j->fed_ns = h->now;
	j->world = -1;
	j->ref = -1;
	j->last_rank = -1;
	h->jobs[h->nj++] = j;
	return j;
}

static struct hrank *find_rank(struct hjob *j, int rank)
{
	int lo = 0, hi = j->nr - 1, m;

	while (lo <= hi) {
		m = (lo + hi) / 2;
		if (j->r[m]->rank == rank)
			return j->r[m];
		if (j->r[m]->rank < rank)
			lo = m + 1;
		else
			hi = m - 1;
	}
	return NULL;
}

static struct jnode *find_jnode(struct hjob *j, int node, bool make)
{
	struct jnode *n;
	int i;

	for (i = 0; i < j->njn; i++)
		if (j->jn[i].node == node)
			return &j->jn[i];
	if (!make)
		return NULL;
	n = realloc(j->jn, sizeof(*n) * (j->njn + 1));
	if (!n)
		return NULL;
	j->jn = n;
	n = &j->jn[j->njn++];
	memset(n, 0, sizeof(*n));
	n->node = node;
	return n;
}

/* The rank of a job, made on first sight; NULL when it is another node's (a duplicate). */
static struct hrank *add_rank(struct hub *h, struct hjob *j, int node, int rank, bool *dup)
{
	struct hrank *r = find_rank(j, rank), **nr;
	int i;

	*dup = false;
	if (r) {
		/* the same (job, rank) from two nodes: the first keeps it while it answers */
		if (r->node != node) {
			if (h->nodes[r->node].up && !h->nodes[r->node].gone) {
				*dup = true;
				return NULL;
			}
			r->node = node;
			r->n = r->head = 0;
		}
		return r;
	}
	if (j->nr == HUB_JOB_RANKS || h->nranks == HUB_MAX_RANKS || !find_jnode(j, node, true)) {
		h->nodes[node].st.bad++;
		return NULL;
	}
	if (j->nr == j->cap) {
		nr = realloc(j->r, sizeof(*nr) * (j->cap ? j->cap * 2 : 8));
		if (!nr)
			return NULL;
		j->r = nr;
		j->cap = j->cap ? j->cap * 2 : 8;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->rank = rank;
	r->node = node;
	r->world = -1;
	for (i = j->nr; i > 0 && j->r[i - 1]->rank > rank; i--)
		j->r[i] = j->r[i - 1];
	j->r[i] = r;
	j->nr++;
	h->nranks++;
	return r;
}

static int bad(char *err, size_t n, const char *what, const struct jsonp *d)
{
	snprintf(err, n, "%s%s%s", what, d && d->err[0] ? ": " : "", d ? d->err : "");
	return -EINVAL;
}

/* A communicator's name as a key (never 0: 0 means none said). */
static uint64_t name_key(const char *name)
{
	uint64_t h = comms__fnv1a((const uint8_t *)name, strlen(name));

	return h ? h : 1;
}

/* What collective the rank is inside now, if its node says (null: none). */
static void rank_inflight(struct hub *h, const struct jsonp *d, const struct jsonp_val *in,
			  struct hrank *r)
{
	const char *op = jsonp__str(d, in, "op"), *comm = jsonp__str(d, in, "comm");
	uint64_t bytes = 0, for_ns = 0;

	r->in_coll = false;
	if (!in || in->type != JSONP_OBJ || !op || !comm || !*comm ||
	    !jsonp__uint64(d, in, "for_ns", &for_ns))
		return;
	jsonp__uint64(d, in, "bytes", &bytes);
	r->in_coll = true;
	snprintf(r->in_op, sizeof(r->in_op), "%s", op);
	r->in_bytes = bytes;
	r->in_comm = name_key(comm);
	r->in_for_ns = for_ns;
	r->in_at_ns = h->now;
}

int hub__feed_ranks(struct hub *h, int node, const char *text, size_t len, char *err, size_t n)
{
	struct jsonp d = {};
	const struct jsonp_val *v;
	int err_ = 0;

	if (jsonp__parse(&d, text, len, HUB_MAX_VALUES) || jsonp__root(&d)->type != JSONP_ARR) {
		err_ = bad(err, n, "ranks: not a JSON array", &d);
		goto out;
	}
	for (v = jsonp__first(&d, jsonp__root(&d)); v; v = jsonp__next(&d, v)) {
		const char *job = jsonp__str(&d, v, "job"), *st;
		int64_t rank, pid = 0, world = -1;
		struct hrank *r;
		struct hjob *j;
		bool dup;

		if (!job || !jsonp__int64(&d, v, "rank", &rank) || rank < 0 || rank >= (1 << 24))
			continue;	/* a process with no rank yet */
		jsonp__int64(&d, v, "pid", &pid);
		jsonp__int64(&d, v, "world_size", &world);
		j = find_job(h, job, true);
		if (!j)
			continue;
		r = add_rank(h, j, node, (int)rank, &dup);
		if (dup) {
			h->nodes[node].st.dups++;
			continue;
		}
		if (!r)
			continue;
		r->pid = pid;
		st = jsonp__str(&d, v, "state");
		r->state = !st ? HS_UNKNOWN : !strcmp(st, "running") ? HS_RUNNING :
			   !strcmp(st, "sleeping") ? HS_SLEEPING : !strcmp(st, "stopped") ?
			   HS_STOPPED : !strcmp(st, "zombie") ? HS_ZOMBIE : !strcmp(st, "gone") ?
			   HS_GONE : HS_UNKNOWN;
		r->world = world > 0 && world < (1 << 24) ? (int)world : -1;
		if (r->world > j->world)
			j->world = r->world;
		rank_inflight(h, &d, jsonp__get(&d, v, "inflight"), r);
	}
out:
	jsonp__free(&d);
	return err_;
}

static void push_step(struct hrank *r, const struct hub_step *s)
{
	/* steps come oldest first; a number not past the newest is a repeat or a restart */
	if (r->n && s->k <= r->ring[(r->head + HUB_STEPS - 1) % HUB_STEPS].k) {
		if (s->k + HUB_STEPS > r->ring[(r->head + HUB_STEPS - 1) % HUB_STEPS].k)
			return;
		r->n = r->head = 0;
	}
	r->ring[r->head] = *s;
	r->head = (r->head + 1) % HUB_STEPS;
	if (r->n < HUB_STEPS)
		r->n++;
}

static void keep_line(struct hub *h, struct hjob *jb, int rank, int node,
		      const struct hub_step *s)
{
	const struct jnode *jn = find_jnode(jb, node, false);
	const char *job = jb->id;
	struct pending *p;
	struct json j;
	int ph;

	if (h->npend == HUB_PENDING)
		return;
	json__init(&j);
	json__obj_begin(&j);
	json__kstr(&j, "type", "step");
	json__kstr(&j, "job", job);
	json__kint(&j, "rank", rank);
	json__kstr(&j, "node", h->nodes[node].name);
	/* the job's step number once the node is lined up with the reference node */
	if (jn && jn->aligned && (int64_t)s->k + jn->shift >= 0)
		json__kuint(&j, "step", s->k + jn->shift);
	json__kuint(&j, "node_step", s->k);
	json__kuint(&j, "start_ns", s->start_ns);
	json__kuint(&j, "dur_ns", s->dur_ns);
	json__key(&j, "phases");
	json__obj_begin(&j);
	for (ph = 0; ph < PH_MAX; ph++)
		json__kuint(&j, steps__phase_name(ph), s->ph[ph]);
	json__obj_end(&j);
	json__obj_end(&j);
	if (j.err) {
		json__free(&j);
		return;
	}
	p = &h->pend[h->npend++];
	snprintf(p->job, sizeof(p->job), "%s", job);
	p->rank = rank;
	p->json = j.buf;
	p->len = j.len;
}

/* The step line's first named communicator with a sequence of collectives: its name's hash
 * and the sequence's into s, and the sequence's text returned (NULL: none said). */
static const char *step_sig(const struct jsonp *d, const struct jsonp_val *v, struct hub_step *s)
{
	const struct jsonp_val *cs = jsonp__get(d, v, "communicators"), *c;

	if (!cs || cs->type != JSONP_ARR)
		return NULL;
	for (c = jsonp__first(d, cs); c; c = jsonp__next(d, c)) {
		const char *name = jsonp__str(d, c, "name"), *sig = jsonp__str(d, c, "sig"), *ops;
		char *end;

		if (!name || !sig || !*name)
			continue;
		errno = 0;
		s->sig = strtoull(sig, &end, 16);
		if (errno || *end || end == sig || !s->sig) {
			s->sig = 0;
			continue;
		}
		s->sig_comm = name_key(name);
		ops = jsonp__str(d, c, "sig_ops");
		return ops ? ops : "";
	}
	return NULL;
}

/* Keep the text of a sequence the rank has not shown lately. */
static void keep_sig(struct hrank *r, uint64_t sig, const char *ops)
{
	int i;

	for (i = 0; i < HUB_SIGS; i++)
		if (r->sigs[i].sig == sig)
			return;
	r->sigs[r->sig_next].sig = sig;
	snprintf(r->sigs[r->sig_next].ops, sizeof(r->sigs[r->sig_next].ops), "%s", ops);
	r->sig_next = (r->sig_next + 1) % HUB_SIGS;
}

static const char *sig_text(const struct hrank *r, uint64_t sig)
{
	int i;

	for (i = 0; i < HUB_SIGS; i++)
		if (r->sigs[i].sig == sig && r->sigs[i].ops[0])
			return r->sigs[i].ops;
	return "a sequence not kept";
}

/* A node's daemon started again: its ranks' steps are renumbered, so line them up anew. */
static void node_restarted(struct hub *h, int node)
{
	struct jnode *jn;
	int i, k;

	for (i = 0; i < h->nj; i++) {
		for (k = 0; k < h->jobs[i]->nr; k++)
			if (h->jobs[i]->r[k]->node == node) {
				struct hrank *r = h->jobs[i]->r[k];

				r->n = r->head = r->nchg = r->chg_head = 0;
				r->last_sig = r->last_comm = 0;
			}
		jn = find_jnode(h->jobs[i], node, false);
		if (jn)
			jn->aligned = false;
		/* the job's step numbers were the reference node's: they start again too */
		if (h->jobs[i]->ref == node) {
			h->jobs[i]->ref = -1;
			h->jobs[i]->judged_k = h->jobs[i]->div_k = 0;
		}
	}
}

int hub__feed_steps(struct hub *h, int node, const char *text, size_t len, uint64_t *cursor,
		    bool *more, char *err, size_t n)
{
	struct jsonp d = {};
	const struct jsonp_val *root, *steps, *v, *phs;
	uint64_t cur, lost = 0, x;
	const char *inst;
	bool restarted;
	int err_ = 0, ph;

	*more = false;
	if (jsonp__parse(&d, text, len, HUB_MAX_VALUES)) {
		err_ = bad(err, n, "steps: not JSON", &d);
		goto out;
	}
	root = jsonp__root(&d);
	steps = jsonp__get(&d, root, "steps");
	if (!jsonp__uint64(&d, root, "cursor", &cur) || !steps || steps->type != JSONP_ARR) {
		err_ = bad(err, n, "steps: no cursor and steps (is it a rankscope daemon?)", NULL);
		goto out;
	}
	jsonp__uint64(&d, root, "lost", &lost);
	h->nodes[node].st.lost += lost;
	v = jsonp__get(&d, root, "more");
	*more = v && v->type == JSONP_BOOL && v->b;
	inst = jsonp__str(&d, root, "instance");
	x = inst ? strtoull(inst, NULL, 16) : 0;
	restarted = x && h->nodes[node].instance && x != h->nodes[node].instance;
	if (x)
		h->nodes[node].instance = x;
	/* the daemon restarted: its lines, and its steps, count from 1 again */
	if (cur < *cursor || restarted) {
		node_restarted(h, node);
		*cursor = 0;
		*more = true;
		goto out;
	}
	*cursor = cur;
	jsonp__uint64(&d, root, "now_ns", &h->nodes[node].node_now_ns);
	for (v = jsonp__first(&d, steps); v; v = jsonp__next(&d, v)) {
		const char *job = jsonp__str(&d, v, "job"), *ops;
		struct hub_step s = {};
		struct hrank *r;
		struct hjob *j;
		int64_t rank;
		uint64_t x;
		bool dup;

		phs = jsonp__get(&d, v, "phases");
		if (!job || !jsonp__int64(&d, v, "rank", &rank) || rank < 0 || rank >= (1 << 24) ||
		    !jsonp__uint64(&d, v, "step", &s.k) ||
		    !jsonp__uint64(&d, v, "start_ns", &s.start_ns) ||
		    !jsonp__uint64(&d, v, "dur_ns", &s.dur_ns) || !phs ||
		    phs->type != JSONP_OBJ) {
			h->nodes[node].st.bad++;
			continue;
		}
		for (ph = 0; ph < PH_MAX; ph++)
			jsonp__uint64(&d, phs, steps__phase_name(ph), &s.ph[ph]);
		if (jsonp__uint64(&d, v, "comm_sched_ns", &x) && x <= s.ph[PH_SCHED_DELAY])
			s.comm_sched = x;
		if (jsonp__uint64(&d, v, "io_write_ns", &x) && x <= s.ph[PH_IO])
			s.io_write = x;
		if (jsonp__uint64(&d, v, "collectives", &x) && x < (1u << 30))
			s.collectives = (uint32_t)x;
		ops = step_sig(&d, v, &s);
		j = find_job(h, job, true);
		if (!j)
			continue;
		r = add_rank(h, j, node, (int)rank, &dup);
		if (dup) {
			h->nodes[node].st.dups++;
			continue;
		}
		if (!r)
			continue;
		push_step(r, &s);
		if (ops)
			keep_sig(r, s.sig, ops);
		if (s.sig && (s.sig != r->last_sig || s.sig_comm != r->last_comm)) {
			r->chg[r->chg_head].k = s.k;
			r->chg[r->chg_head].comm = s.sig_comm;
			r->chg[r->chg_head].sig = s.sig;
			r->chg_head = (r->chg_head + 1) % HUB_CHANGES;
			if (r->nchg < HUB_CHANGES)
				r->nchg++;
			r->last_sig = s.sig;
			r->last_comm = s.sig_comm;
		}
		j->fed_ns = h->now;
		h->nodes[node].st.steps++;
		keep_line(h, j, r->rank, node, &s);
	}
out:
	jsonp__free(&d);
	return err_;
}

int hub__feed_diagnosis(struct hub *h, int node, const char *text, size_t len, char *err,
			size_t n)
{
	struct jsonp d = {};
	const struct jsonp_val *v, *ev;
	int err_ = 0;

	if (jsonp__parse(&d, text, len, HUB_MAX_VALUES) || jsonp__root(&d)->type != JSONP_ARR) {
		err_ = bad(err, n, "diagnosis: not a JSON array", &d);
		goto out;
	}
	for (v = jsonp__first(&d, jsonp__root(&d)); v; v = jsonp__next(&d, v)) {
		const char *job = jsonp__str(&d, v, "job"), *cls = jsonp__str(&d, v, "class");
		const char *detail;
		struct job_verdict jv = {};
		struct hjob *j;
		int64_t rank = -1, x;

		if (!job || !cls || !(j = find_job(h, job, false)))
			continue;
		jsonp__int64(&d, v, "rank", &rank);
		if (strcmp(cls, "hang") && strcmp(cls, "divergent") && strcmp(cls, "rank_exited")) {
			/* the node no longer says so: the hub's own judgement stands again */
			if (j->have_node_v && j->node_v.col == node)
				j->have_node_v = false;
			continue;
		}
		jv.cls = !strcmp(cls, "hang") ? V_HANG : !strcmp(cls, "divergent") ? V_DIVERGENT :
			 V_RANK_EXITED;
		jv.v.cls = jv.cls;
		jv.col = node;		/* which node said it */
		if (jsonp__int64(&d, v, "step", &x) && x >= 0)
			jv.step = x;
		if (jsonp__int64(&d, v, "t_ns", &x) && x >= 0)
			jv.t_ns = x;
		ev = jsonp__get(&d, v, "evidence");
		detail = jsonp__str(&d, ev, "detail");
		snprintf(jv.detail, sizeof(jv.detail), "%s (seen by node %s)", detail ? detail : cls,
			 h->nodes[node].name);
		j->node_v = jv;
		j->node_v_rank = (int)rank;
		j->have_node_v = true;
	}
out:
	jsonp__free(&d);
	return err_;
}

void hub__tick(struct hub *h, uint64_t now_ns)
{
	h->now = now_ns;
}

void hub__set_hang_timeout(struct hub *h, uint64_t ns)
{
	h->hang_ns = ns;
}

void hub__set_price(struct hub *h, double usd_per_gpu_h, int gpus_per_rank)
{
	h->usd = usd_per_gpu_h;
	h->gpus = gpus_per_rank > 0 ? gpus_per_rank : 1;
}

void hub__node_failed(struct hub *h, int node, const char *why, uint64_t now_ns)
{
	struct hnode *n = &h->nodes[node];

	n->st.fails++;
	snprintf(n->why, sizeof(n->why), "%s", why);
	if (++n->fails >= HUB_DOWN_POLLS)
		n->up = false;
}

void hub__node_ok(struct hub *h, int node, uint64_t now_ns)
{
	struct hnode *n = &h->nodes[node];

	h->now = now_ns;
	n->st.polls++;
	n->fails = 0;
	n->up = n->ever = true;
	n->gone = false;
	n->last_ok_ns = now_ns;
	n->why[0] = 0;
}

void hub__node_timing(struct hub *h, int node, uint64_t sent_ns, uint64_t recv_ns)
{
	struct hnode *n = &h->nodes[node];

	if (!n->node_now_ns || recv_ns < sent_ns)
		return;
	n->ntp_off[n->ntp_head] = (int64_t)(n->node_now_ns - (sent_ns + (recv_ns - sent_ns) / 2));
	n->ntp_err[n->ntp_head] = (recv_ns - sent_ns) / 2 + 1;
	n->ntp_head = (n->ntp_head + 1) % HUB_NTP;
	if (n->ntp_n < HUB_NTP)
		n->ntp_n++;
	n->node_now_ns = 0;
}

/* The node's clock - the hub's, from the poll with the shortest round trip lately. */
static bool node_ntp(const struct hnode *n, int64_t *off, uint64_t *err)
{
	int i, best = -1;

	for (i = 0; i < n->ntp_n; i++)
		if (best < 0 || n->ntp_err[i] < n->ntp_err[best])
			best = i;
	if (best < 0)
		return false;
	*off = n->ntp_off[best];
	*err = n->ntp_err[best];
	return true;
}

void hub__node_bad(struct hub *h, int node)
{
	h->nodes[node].st.bad++;
}

int hub__feed_jobs(struct hub *h, int node, const char *text, size_t len, char *err, size_t n)
{
	return hublife__feed(&h->life, node, text, len, err, n);
}

static const char *node_name(int node, void *ctx)
{
	const struct hub *h = ctx;

	return node >= 0 && node < h->nn ? h->nodes[node].name : "";
}

void hub__node_gone(struct hub *h, int node)
{
	hublife__node_gone(&h->life, node);
	h->nodes[node].gone = true;
	h->nodes[node].up = false;
	snprintf(h->nodes[node].why, sizeof(h->nodes[node].why), "no longer among the peers");
}

static bool observed(const struct hub *h, const struct hrank *r)
{
	return h->nodes[r->node].up && !h->nodes[r->node].gone;
}

/* The rank's step with the node's number k, or NULL. */
static const struct hub_step *step_at(const struct hrank *r, uint64_t k)
{
	const struct hub_step *newest;
	uint64_t back;

	if (!r->n)
		return NULL;
	newest = &r->ring[(r->head + HUB_STEPS - 1) % HUB_STEPS];
	if (k > newest->k)
		return NULL;
	back = newest->k - k;
	/* steps are numbered without gaps on a node, but lines can be lost: search near */
	if (back < (uint64_t)r->n) {
		const struct hub_step *s = &r->ring[(r->head + HUB_STEPS - 1 - back) % HUB_STEPS];

		if (s->k == k)
			return s;
	}
	for (back = 0; back < (uint64_t)r->n; back++) {
		const struct hub_step *s = &r->ring[(r->head + HUB_STEPS - 1 - back) % HUB_STEPS];

		if (s->k == k)
			return s;
		if (s->k < k)
			break;
	}
	return NULL;
}

/* The first rank of the node among the job's, or NULL. */
static const struct hrank *node_rank(const struct hjob *j, int node)
{
	int i;

	for (i = 0; i < j->nr; i++)
		if (j->r[i]->node == node && j->r[i]->n)
			return j->r[i];
	return NULL;
}

/*
 * Line node b's steps up with the reference rank a's: the shift under which matched steps'
 * lengths differ least (median), when that is clearly less than under any other shift. The
 * clock offset: the median of the matched starts' differences; its error, the 90th percentile
 * of the differences' distance from it.
 */
static void align(const struct hrank *a, const struct hrank *b, struct jnode *jn, bool guess,
		  int64_t guess_ns, uint64_t guess_err)
{
	uint64_t diff[HUB_STEPS], best = UINT64_MAX, second = UINT64_MAX, m, dist[HUB_STEPS];
	uint64_t best_dist = UINT64_MAX, step;
	int64_t d, lo, hi, best_d = 0, off[HUB_STEPS], dist_d = 0;
	const struct hub_step *sa, *sb;
	int i, k, nm;

	int use = b->n < HUB_ALIGN_USE ? b->n : HUB_ALIGN_USE;

	if (a->n < HUB_ALIGN_MIN || b->n < HUB_ALIGN_MIN)
		return;
	/* shifts that overlap by HUB_ALIGN_MIN steps at least */
	sa = &a->ring[(a->head + HUB_STEPS - a->n) % HUB_STEPS];
	sb = &b->ring[(b->head + HUB_STEPS - use) % HUB_STEPS];
	lo = (int64_t)sa->k - (int64_t)(sb->k + use);
	hi = (int64_t)(sa->k + a->n) - (int64_t)sb->k;
	for (d = lo; d <= hi; d++) {
		for (nm = 0, i = 0; i < use; i++) {
			const struct hub_step *x = &b->ring[(b->head + HUB_STEPS - use + i) % HUB_STEPS];
			const struct hub_step *y;

			if ((int64_t)x->k + d < 0 || !(y = step_at(a, x->k + d)))
				continue;
			dist[nm] = (uint64_t)llabs((int64_t)(x->start_ns - y->start_ns) - guess_ns);
			diff[nm++] = x->dur_ns > y->dur_ns ? x->dur_ns - y->dur_ns :
				     y->dur_ns - x->dur_ns;
		}
		if (nm < HUB_ALIGN_MIN)
			continue;
		if (guess) {
			qsort(dist, nm, sizeof(*dist), detect__cmp_u64);
			if (dist[nm / 2] < best_dist) {
				best_dist = dist[nm / 2];
				dist_d = d;
			}
		}
		qsort(diff, nm, sizeof(*diff), detect__cmp_u64);
		m = diff[nm / 2];
		if (m < best) {
			second = best;
			best = m;
			best_d = d;
		} else if (m < second) {
			second = m;
		}
	}
	/* sharp: the best shift's lengths agree 4x better than any other's (steps that do not
	 * jitter cannot be told apart; wait for more). Once lined up, a check that still finds
	 * the same shift best keeps it: the nodes cut some steps at other collectives of the
	 * cycle now and then, which blurs the lengths but does not move the steps */
	if (best == UINT64_MAX)
		return;
	jn->by_polls = false;
	if (second != UINT64_MAX && best * 4 >= second && !(jn->aligned && best_d == jn->shift)) {
		/* steps too alike to tell apart by length: the polls' clocks pick the shift when
		 * they are sure to within a quarter of a step, and the starts then agree to
		 * within half of one (the next shift is a whole step off) */
		for (nm = 0, i = 0; i < use; i++)
			diff[nm++] = b->ring[(b->head + HUB_STEPS - use + i) % HUB_STEPS].dur_ns;
		qsort(diff, nm, sizeof(*diff), detect__cmp_u64);
		step = diff[nm / 2];
		if (!guess || guess_err * 4 > step || best_dist * 2 > step) {
			jn->checked_k = b->ring[(b->head + HUB_STEPS - 1) % HUB_STEPS].k;
			return;
		}
		best_d = dist_d;
		jn->by_polls = true;
	}
	for (nm = 0, i = 0; i < use; i++) {
		const struct hub_step *x = &b->ring[(b->head + HUB_STEPS - use + i) % HUB_STEPS];
		const struct hub_step *y;

		if ((int64_t)x->k + best_d < 0 || !(y = step_at(a, x->k + best_d)))
			continue;
		off[nm++] = (int64_t)(x->start_ns - y->start_ns);
	}
	qsort(off, nm, sizeof(*off), detect__cmp_i64);
	jn->offset_ns = off[nm / 2];
	for (k = 0; k < nm; k++)
		diff[k] = off[k] > jn->offset_ns ? off[k] - jn->offset_ns : jn->offset_ns - off[k];
	qsort(diff, nm, sizeof(*diff), detect__cmp_u64);
	jn->err_ns = diff[(nm * 9) / 10 < nm ? (nm * 9) / 10 : nm - 1];
	/* and the offset holds the nodes' ranks' own skew at the step's end: two ranks leave one
	 * collective microseconds apart on one host, tens of them across a network */
	if (jn->err_ns < HUB_CLOCK_ERR_MIN_NS)
		jn->err_ns = HUB_CLOCK_ERR_MIN_NS;
	/* steps of several collectives: two daemons may end their steps at different ones of
	 * the cycle (each learns the step on its own ranks), which moves every start alike and
	 * hides from the spread; a collective's share of the step bounds it */
	for (nm = 0, i = 0; i < use; i++) {
		const struct hub_step *x = &b->ring[(b->head + HUB_STEPS - use + i) % HUB_STEPS];

		if (x->collectives > 1)
			diff[nm++] = x->dur_ns / x->collectives;
	}
	jn->phase_ns = 0;
	if (nm * 2 > use) {
		qsort(diff, nm, sizeof(*diff), detect__cmp_u64);
		jn->phase_ns = diff[nm / 2];
		jn->err_ns += jn->phase_ns;
	}
	/* the polls' round trips bound the offset more tightly than step starts that scatter:
	 * the tighter of the two is stated */
	jn->clock_by_polls = guess && guess_err < jn->err_ns;
	if (jn->clock_by_polls) {
		jn->offset_ns = guess_ns;
		jn->err_ns = guess_err;
		jn->phase_ns = 0;
	}
	jn->shift = best_d;
	jn->aligned = true;
	jn->checked_k = b->ring[(b->head + HUB_STEPS - 1) % HUB_STEPS].k;
}

static void align_job(struct hub *h, struct hjob *j)
{
	const struct hrank *a, *b;
	int64_t ga = 0, gb = 0, shift;
	uint64_t ea = 0, eb = 0;
	bool guess, was;
	int i;

	/* the reference: the node of the lowest observed rank */
	for (i = 0; i < j->nr && !(observed(h, j->r[i]) && j->r[i]->n); i++)
		;
	if (i == j->nr)
		return;
	if (j->ref != j->r[i]->node) {
		/* job steps are numbered as the reference node numbers them: anew */
		j->ref = j->r[i]->node;
		j->judged_k = j->div_k = j->div_named_k = 0;
		for (i = 0; i < j->njn; i++)
			j->jn[i].aligned = false;
	}
	a = node_rank(j, j->ref);
	for (i = 0; i < j->njn; i++) {
		struct jnode *jn = &j->jn[i];

		if (jn->aligned)
			jn->waited = 0;
		if (jn->node == j->ref) {
			jn->aligned = true;
			jn->shift = jn->offset_ns = 0;
			jn->err_ns = 0;
			continue;
		}
		b = node_rank(j, jn->node);
		if (!b || !h->nodes[jn->node].up)
			continue;
		if (jn->aligned &&
		    b->ring[(b->head + HUB_STEPS - 1) % HUB_STEPS].k < jn->checked_k + HUB_REALIGN)
			continue;
		/* again now and then: lines were lost, or a node's steps were cut anew */
		guess = node_ntp(&h->nodes[jn->node], &gb, &eb) &&
			node_ntp(&h->nodes[j->ref], &ga, &ea);
		was = jn->aligned;
		shift = jn->shift;
		align(a, b, jn, guess, gb - ga, eb + ea);
		/* the node's ranks now line up elsewhere, or at all: the steps looked at for a
		 * divergence without them (or at the wrong step) are looked at again, from the
		 * changes still kept, but not a divergence already named */
		if (jn->aligned && (!was || jn->shift != shift) && j->div_k > j->div_named_k)
			j->div_k = j->div_named_k;
	}
}

/* The median of sorted v[0..n-1] without one element equal to x (n >= 2). */
static int64_t peers_median(const int64_t *v, int n, int64_t x)
{
	int lo = 0, hi = n - 1, at, m = n - 1;

	/* where x sits: any index holding it will do, equal values being alike */
	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	at = lo;
#define WITHOUT(i) v[(i) < at ? (i) : (i) + 1]
	if (m % 2)
		return WITHOUT(m / 2);
	return WITHOUT(m / 2 - 1) + (WITHOUT(m / 2) - WITHOUT(m / 2 - 1)) / 2;
#undef WITHOUT
}

/*
 * The window's rows over the observed, lined-up ranks, in the detector's terms. No clock is
 * shared, so every rank's step ends at the same made-up instant; a rank arrives its time in
 * collectives before it; its lateness is its own work (the step less its collectives) over
 * its peers' median.
 */
static int build_rows(struct hub *h, struct hjob *j, uint64_t kend, int w, struct step_obs *obs,
		      int *cols, int ncols)
{
	int64_t *work = NULL, *tmp = NULL;
	int s, c, rows = 0;

	work = calloc(ncols, sizeof(*work));
	tmp = calloc(ncols, sizeof(*tmp));
	if (!work || !tmp)
		goto out;
	for (s = 0; s < w; s++) {
		uint64_t k = kend - (w - 1 - s), done = (k + 1) * 1000000000ULL;
		struct step_obs *row = &obs[s * ncols];

		for (c = 0; c < ncols; c++) {
			const struct hrank *r = j->r[cols[c]];
			const struct jnode *jn = find_jnode(j, r->node, false);
			const struct hub_step *st;
			uint64_t comm;

			if ((int64_t)k - jn->shift < 0 || !(st = step_at(r, k - jn->shift)))
				break;
			row[c].present = true;
			row[c].dur_ns = st->dur_ns;
			memcpy(row[c].ph.ns, st->ph, sizeof(row[c].ph.ns));
			row[c].ph.comm_sched = st->comm_sched;
			row[c].ph.io_write = st->io_write;
			comm = steps__inside(&row[c].ph);	/* the time inside collectives */
			comm = comm < st->dur_ns ? comm : st->dur_ns;
			row[c].ph.other_nr = -1;
			row[c].done_ns = done;
			row[c].arrival_ns = done - comm;
			work[c] = (int64_t)(st->dur_ns - comm);
		}
		if (c < ncols) {
			rows = -ENOENT;
			goto out;
		}
		/* each rank's peers' median from one sort: without the rank's own value the
		 * median moves by at most one place (thousands of ranks: n log n, not n^2) */
		memcpy(tmp, work, sizeof(*tmp) * ncols);
		qsort(tmp, ncols, sizeof(*tmp), detect__cmp_i64);
		for (c = 0; c < ncols; c++) {
			row[c].has_late = true;
			row[c].late_ns = work[c] - peers_median(tmp, ncols, work[c]);
			row[c].wait_ns = done - row[c].arrival_ns;
		}
		detect__split_comm(row, ncols);
		rows++;
	}
out:
	free(work);
	free(tmp);
	return rows;
}

struct sigc {
	uint64_t comm, sig;
	int c;
};

static int cmp_sigc(const void *a, const void *b)
{
	const struct sigc *x = a, *y = b;

	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	if (x->sig != y->sig)
		return x->sig < y->sig ? -1 : 1;
	return x->c - y->c;
}

/*
 * Ranks sharing a communicator entered different sequences of collectives in one step of the
 * window: the odd one out against a strict majority of that communicator's ranks (two ranks
 * alone name none). Returns its column, the detail in jv, or -1.
 */
/* The rank's sequence at its node's step k (comm and sig), from its changes; false when
 * its changes kept do not reach back to k. */
static bool sig_at(const struct hrank *r, uint64_t k, uint64_t *comm, uint64_t *sig)
{
	int i, best = -1;

	for (i = 0; i < r->nchg; i++)
		if (r->chg[i].k <= k && (best < 0 || r->chg[i].k > r->chg[best].k))
			best = i;
	if (best < 0)
		return false;
	*comm = r->chg[best].comm;
	*sig = r->chg[best].sig;
	return true;
}

/*
 * Ranks sharing a communicator entered different sequences of collectives in one step: the
 * odd one out against a strict majority of that communicator's ranks (two ranks alone name
 * none). Steps come faster than the hub keeps them, so the steps looked at are those where
 * some rank's sequence changed since the last look (the others' sequences there follow from
 * their own changes). Returns the odd rank's column, the detail in jv, or -1.
 */
static int divergence(struct hjob *j, const int *cols, int ncols, uint64_t kend,
		      struct job_verdict *jv)
{
	struct sigc *v = calloc(ncols ? ncols : 1, sizeof(*v));
	uint64_t *cand = calloc((size_t)(ncols ? ncols : 1) * HUB_CHANGES, sizeof(*cand));
	int c, n, a, b, m, best, bn, odd = -1, nc = 0, i;
	uint64_t k, comm, sig;

	for (c = 0; v && cand && c < ncols; c++) {
		const struct hrank *r = j->r[cols[c]];
		const struct jnode *jn = find_jnode(j, r->node, false);

		for (i = 0; i < r->nchg; i++) {
			k = r->chg[i].k + jn->shift;
			if ((int64_t)r->chg[i].k + jn->shift >= 0 && k > j->div_k && k <= kend)
				cand[nc++] = k;
		}
	}
	if (cand)
		qsort(cand, nc, sizeof(*cand), detect__cmp_u64);
	for (i = 0; v && cand && i < nc && odd < 0; i++) {
		if (i && cand[i] == cand[i - 1])
			continue;
		k = cand[i];
		for (n = 0, c = 0; c < ncols; c++) {
			const struct hrank *r = j->r[cols[c]];
			const struct jnode *jn = find_jnode(j, r->node, false);

			if ((int64_t)k - jn->shift >= 0 && sig_at(r, k - jn->shift, &comm, &sig))
				v[n++] = (struct sigc){ comm, sig, c };
		}
		qsort(v, n, sizeof(*v), cmp_sigc);
		for (a = 0; a < n && odd < 0; a = b) {
			for (b = a; b < n && v[b].comm == v[a].comm; b++)
				;
			/* the sequence most of the communicator's ranks entered */
			for (best = a, bn = 0, m = a; m < b; ) {
				int e = m;

				while (e < b && v[e].sig == v[m].sig)
					e++;
				if (e - m > bn) {
					bn = e - m;
					best = m;
				}
				m = e;
			}
			if (b - a < 3 || bn == b - a || bn * 2 <= b - a)
				continue;
			/* the lowest rank outside it (columns are in rank order) */
			for (odd = -1, m = a; m < b; m++)
				if (v[m].sig != v[best].sig && (odd < 0 || v[m].c < odd)) {
					odd = v[m].c;
					sig = v[m].sig;
				}
			snprintf(jv->detail, sizeof(jv->detail), "in step %" PRIu64 " this rank "
				 "entered [%.70s]; %d other rank(s) on its communicator entered "
				 "[%.70s]", k, sig_text(j->r[cols[odd]], sig), bn,
				 sig_text(j->r[cols[v[best].c]], v[best].sig));
			jv->step = k;
		}
	}
	j->div_k = odd >= 0 ? k : kend;
	if (odd >= 0)
		j->div_named_k = k;
	free(v);
	free(cand);
	return odd;
}

/* The newest job step every observed, lined-up rank has. */
static bool newest_common(struct hub *h, struct hjob *j, int *cols, int ncols, uint64_t *k)
{
	uint64_t best = UINT64_MAX, mine;
	int c;

	for (c = 0; c < ncols; c++) {
		const struct hrank *r = j->r[cols[c]];
		const struct jnode *jn = find_jnode(j, r->node, false);

		if (!r->n)
			return false;
		mine = r->ring[(r->head + HUB_STEPS - 1) % HUB_STEPS].k + jn->shift;
		best = mine < best ? mine : best;
	}
	*k = best;
	return best != UINT64_MAX;
}

typedef void (*verdict_fn)(void *ctx, const char *job, const struct job_verdict *v, int rank);

/* The last verdict a persistent straggler's on a rank: its waits are a straggler's cost. Each
 * judgement charges, also one that emits nothing new, so steps since the last are counted
 * (cost__charge counts a step once, so a judgement that charges twice costs nothing more). */
static void charge_last(struct hjob *j, uint64_t now_ns)
{
	if (j->emitted && j->last_rank >= 0 && detect__straggler(j->last.cls, j->last.persistent))
		cost__charge(&j->cost, j->last_rank, now_ns);
}

/* The job's story is now v, on rank (-1: none): kept, and told. */
static void emit(struct hub *h, struct hjob *j, const struct job_verdict *v, int rank,
		 verdict_fn on_verdict, void *ctx)
{
	j->last = *v;
	j->last_rank = rank;
	j->emitted = true;
	charge_last(j, h->now);
	cost__sum(&j->cost, h->now, h->usd, h->gpus, &j->last.cost);
	if (on_verdict)
		on_verdict(ctx, j->id, &j->last, rank);
}

/* A verdict of what no step shows (a node's own, a stopped rank): the job's counts now. */
static void emit_now(struct hub *h, struct hjob *j, struct job_verdict *v, int rank,
		     uint64_t now_ns, verdict_fn on_verdict, void *ctx)
{
	int i;

	v->ranks_seen = 0;
	for (i = 0; i < j->nr; i++)
		v->ranks_seen += observed(h, j->r[i]);
	v->world_size = j->world > j->nr ? j->world : j->nr;
	v->t_ns = now_ns;
	emit(h, j, v, rank, on_verdict, ctx);
}

struct inw {
	uint64_t comm;
	const char *op;
	uint64_t bytes;
	int i;		/* in j->r */
};

static int cmp_inw(const void *a, const void *b)
{
	const struct inw *x = a, *y = b;
	int c;

	if (x->comm != y->comm)
		return x->comm < y->comm ? -1 : 1;
	c = strcmp(x->op, y->op);
	if (c)
		return c;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return x->i - y->i;
}

/*
 * No step for the hang timeout and every observed rank waits in a collective past it, but
 * ranks sharing a communicator wait in different ones (mismatched collectives: they wait for
 * each other forever): the odd one out against a strict majority. Its index in j->r, or -1.
 */
static int inflight_divergence(struct hub *h, struct hjob *j, uint64_t now_ns,
			       struct job_verdict *v)
{
	struct inw *w;
	int i, n = 0, a, b, m, best = 0, bn, odd = -1;

	if (!j->fed_ns || now_ns < j->fed_ns + h->hang_ns)
		return -1;
	w = calloc(j->nr ? j->nr : 1, sizeof(*w));
	if (!w)
		return -1;
	for (i = 0; i < j->nr; i++) {
		const struct hrank *r = j->r[i];

		if (!observed(h, r))
			continue;
		if (!r->in_coll || r->in_for_ns + (now_ns - r->in_at_ns) < h->hang_ns)
			goto out;	/* a rank not waiting: not this */
		w[n++] = (struct inw){ r->in_comm, r->in_op, r->in_bytes, i };
	}
	qsort(w, n, sizeof(*w), cmp_inw);
	for (a = 0; a < n && odd < 0; a = b) {
		for (b = a; b < n && w[b].comm == w[a].comm; b++)
			;
		for (bn = 0, m = a; m < b; ) {
			int e = m;

			while (e < b && !strcmp(w[e].op, w[m].op) && w[e].bytes == w[m].bytes)
				e++;
			if (e - m > bn) {
				bn = e - m;
				best = m;
			}
			m = e;
		}
		if (bn == b - a || bn * 2 <= b - a)
			continue;
		for (m = a; m < b; m++)
			if ((strcmp(w[m].op, w[best].op) || w[m].bytes != w[best].bytes) &&
			    (odd < 0 || w[m].i < odd))
				odd = w[m].i;
		snprintf(v->detail, sizeof(v->detail), "rank %d (node %.40s) waits %.0f s in "
			 "%.20s of %" PRIu64 " bytes; %d other rank(s) on its communicator wait in "
			 "%.20s of %" PRIu64 " bytes: mismatched collectives", j->r[odd]->rank, h->nodes[j->r[odd]->node].name,
			 (j->r[odd]->in_for_ns + (now_ns - j->r[odd]->in_at_ns)) / 1e9,
			 j->r[odd]->in_op, j->r[odd]->in_bytes, bn, w[best].op, w[best].bytes);
	}
out:
	free(w);
	return odd;
}

/* A rank its node says is stopped or a zombie, or NULL. */
static const struct hrank *stopped_rank(struct hub *h, const struct hjob *j)
{
	int i;

	for (i = 0; i < j->nr; i++)
		if (observed(h, j->r[i]) &&
		    (j->r[i]->state == HS_STOPPED || j->r[i]->state == HS_ZOMBIE))
			return j->r[i];
	return NULL;
}

/* Each step of the window's rows not yet accounted: what its straggler cost (cost.h). */
static void account_cost(struct hjob *j, const struct step_obs *obs, int w, uint64_t k,
			 const int *cols, int ncols, uint64_t now_ns)
{
	struct cost_step cs;
	int s;

	for (s = 0; s < w; s++) {
		uint64_t ks = k - (w - 1 - s);

		if (j->cost_k && ks <= j->cost_k)
			continue;
		cost__step(&obs[(size_t)s * ncols], ncols, &cs);
		cost__add(&j->cost, &cs, cs.culprit >= 0 ? j->r[cols[cs.culprit]]->rank : -1, now_ns);
		j->cost_k = ks;
	}
}

static void judge_job(struct hub *h, struct hjob *j, uint64_t now_ns, verdict_fn on_verdict,
		      void *ctx)
{
	struct step_obs *obs = NULL;
	struct job_verdict jv = {}, dv = {};
	int *cols = NULL, ncols = 0, i, w = h->window, unseen = 0, unaligned = 0, odd;
	bool weak;
	const struct hrank *sr;
	uint64_t k;

	align_job(h, j);
	/* ranks that wait for each other in different collectives: before any node's own
	 * story, as a node sees only its part of the mismatch (a wait, a hang) */
	odd = inflight_divergence(h, j, now_ns, &dv);
	if (odd >= 0) {
		if (!(j->emitted && j->last.cls == V_DIVERGENT && j->last_rank == j->r[odd]->rank)) {
			dv.cls = dv.v.cls = V_DIVERGENT;
			dv.col = -1;
			dv.v.phase = PH_COMM;
			dv.step = j->judged_k;
			emit_now(h, j, &dv, j->r[odd]->rank, now_ns, on_verdict, ctx);
		}
		return;
	}
	/* a node's own verdict of what only it can see (no step completes in a hang) */
	if (j->have_node_v) {
		if (!j->emitted || j->last.cls != j->node_v.cls || j->last_rank != j->node_v_rank)
			emit_now(h, j, &j->node_v, j->node_v_rank, now_ns, on_verdict, ctx);
		return;
	}
	/* no rank of the job has finished a step for the hang timeout, and one is stopped (its
	 * node says so): that rank holds every other, on whatever node they wait */
	sr = j->fed_ns && now_ns >= j->fed_ns + h->hang_ns ? stopped_rank(h, j) : NULL;
	if (sr) {
		if (!(j->emitted && j->last.cls == V_HANG && j->last_rank == sr->rank)) {
			struct job_verdict hv = { .cls = V_HANG, .v.cls = V_HANG, .col = -1,
						  .step = j->judged_k };

			snprintf(hv.detail, sizeof(hv.detail), "rank %d (pid %lld on node %s) is %s, "
				 "and no rank of the job has finished a step for %.0f s", sr->rank,
				 (long long)sr->pid, h->nodes[sr->node].name,
				 sr->state == HS_STOPPED ? "stopped (SIGSTOP or a debugger)" :
				 "a zombie", (now_ns - j->fed_ns) / 1e9);
			emit_now(h, j, &hv, sr->rank, now_ns, on_verdict, ctx);
		}
		return;
	}
	cols = calloc(j->nr ? j->nr : 1, sizeof(*cols));
	if (!cols)
		return;
	for (i = 0; i < j->nr; i++) {
		struct jnode *jn = find_jnode(j, j->r[i]->node, false);

		if (observed(h, j->r[i]) && jn && jn->aligned && j->r[i]->n) {
			cols[ncols++] = i;
			continue;
		}
		unseen++;
		unaligned += observed(h, j->r[i]);
		/* a node that answers but is not lined up yet: wait for it a while rather than
		 * judge without its ranks (and call their absence remote_wait) */
		if (observed(h, j->r[i]) && jn && !jn->aligned && j->r[i]->n) {
			if (!jn->waited++)
				jn->wait_from_ns = now_ns;
			if (now_ns - jn->wait_from_ns < HUB_ALIGN_WAIT_NS)
				goto out;
		}
	}
	if (ncols < 2 || !newest_common(h, j, cols, ncols, &k) || k < (uint64_t)w ||
	    k <= j->judged_k)
		goto out;
	obs = calloc((size_t)w * ncols, sizeof(*obs));
	if (!obs || build_rows(h, j, k, w, obs, cols, ncols) != w)
		goto out;
	j->judged_k = k;
	account_cost(j, obs, w, k, cols, ncols, now_ns);
	jv.world_size = j->world > j->nr ? j->world : j->nr;
	if (detect__window_seen(obs, w, ncols, !unseen && jv.world_size <= ncols, &jv.v))
		goto out;
	jv.cls = jv.v.cls;
	jv.col = jv.v.rank;
	jv.step = k;
	jv.first = k + 1 - w;
	jv.last = k;
	jv.t_ns = now_ns;
	jv.ranks_seen = ncols;
	if (jv.col >= 0 && jv.v.phase == PH_OTHER)
		snprintf(jv.detail, sizeof(jv.detail), "off CPU, not waiting for input, storage, a "
			 "collective or a CPU (the node's step lines say what it was blocked in)");
	/* no rank late, every rank of the job judged: the collectives against its earlier ones */
	if (jv.cls == V_NONE && !unseen && jv.world_size <= ncols &&
	    detect__comm_change(&j->cref, obs, w, ncols, w, 0, k, &jv.v, jv.detail,
				sizeof(jv.detail)))
		jv.cls = jv.v.cls;
	/* late among the ranks judged, but they wait longer still for ranks not judged */
	if ((unseen || jv.world_size > ncols) &&
	    detect__held_elsewhere(&jv.v, jv.col >= 0 ? j->r[cols[jv.col]]->rank : -1, ncols,
				   jv.world_size, "judged", jv.detail, sizeof(jv.detail))) {
		jv.cls = jv.v.cls;
		jv.col = jv.v.rank;
	}
	/* aligned and waiting, with ranks of the job not observed: one of those is what the
	 * others wait for, not the network */
	if (jv.cls == V_COMMUNICATION && (unseen || jv.world_size > ncols)) {
		jv.cls = jv.v.cls = V_REMOTE_WAIT;
		if (unaligned)
			snprintf(jv.detail, sizeof(jv.detail), "the %d ranks judged (of %d) arrive "
				 "together and wait %.1f ms after the last of them; %d rank(s) on "
				 "nodes whose steps are not lined up yet are not judged, and one of "
				 "those (or of ranks without a daemon) holds them", ncols,
				 jv.world_size, jv.v.post_arrival_ns / 1e6, unaligned);
		else
			snprintf(jv.detail, sizeof(jv.detail), "the %d ranks observed (of %d) "
				 "arrive together and wait %.1f ms after the last of them; ranks not "
				 "observed (a node not answering, or without a daemon) hold them",
				 ncols, jv.world_size, jv.v.post_arrival_ns / 1e6);
	}
	/* ranks that should do the same entered different collectives: a fact, not a trend */
	odd = divergence(j, cols, ncols, k, &jv);
	if (odd >= 0) {
		jv.cls = jv.v.cls = V_DIVERGENT;
		jv.col = jv.v.rank = odd;
		jv.v.phase = PH_COMM;
	}
	/* a new story near the threshold must hold for two judgements in a row; one told by two
	 * steps of a window (intermittent) until a window with none of its steps tells it too,
	 * as a node's does */
	weak = jv.v.intermittent && jv.v.hits <= DETECT_HITS_MIN;
	if (odd < 0 && jv.cls != V_NONE &&
	    (weak || jv.v.skew_ns < 2 * (int64_t)detect__threshold_of(&jv.v)) &&
	    !(j->emitted && jv.cls == j->last.cls && jv.col >= 0 &&
	      j->r[cols[jv.col]]->rank == j->last_rank)) {
		int rank = jv.col >= 0 ? j->r[cols[jv.col]]->rank : -1;

		if (jv.cls == j->cand_cls && rank == j->cand_rank) {
			j->cand_n++;
		} else {
			j->cand_cls = jv.cls;
			j->cand_rank = rank;
			j->cand_n = 1;
		}
		if (j->cand_n < (weak ? w + 1 : 2))
			goto out;
	}
	j->cand_n = 0;
	i = jv.col >= 0 ? j->r[cols[jv.col]]->rank : -1;
	jv.persistent = detect__persistent(&j->persist, i);
	if (j->emitted && jv.cls == j->last.cls && i == j->last_rank &&
	    k - j->last_emit_k < (uint64_t)w && !(jv.persistent && !j->last.persistent)) {
		j->last = jv;
		charge_last(j, now_ns);
		cost__sum(&j->cost, now_ns, h->usd, h->gpus, &j->last.cost);
		goto out;
	}
	j->last_emit_k = k;
	emit(h, j, &jv, i, on_verdict, ctx);
out:
	charge_last(j, now_ns);
	free(obs);
	free(cols);
}

void hub__judge(struct hub *h, uint64_t now_ns, verdict_fn on_verdict, void *ctx)
{
	int i, k;

	hublife__round(&h->life);	/* every node has answered this round, or not */
	h->now = now_ns;
	for (i = 0; i < h->nj; i++)
		judge_job(h, h->jobs[i], now_ns, on_verdict, ctx);
	/* a job no node has sent a step of for HUB_RETAIN_NS is over: its slot is freed */
	for (i = 0, k = 0; i < h->nj; i++) {
		struct hjob *j = h->jobs[i];

		if (now_ns > j->fed_ns + HUB_RETAIN_NS) {
			h->nranks -= j->nr;
			job_free(j);
			continue;
		}
		h->jobs[k++] = j;
	}
	h->nj = k;
}

static char *finish(struct json *j, size_t *len)
{
	if (j->err) {
		json__free(j);
		return NULL;
	}
	*len = j->len;
	return j->buf;
}

char *hub__jobs(struct hub *h, size_t *len)
{
	struct json j;

	json__init(&j);
	hublife__json(&h->life, &j, node_name, h);
	return finish(&j, len);
}

char *hub__diagnosis(struct hub *h, size_t *len)
{
	struct json j;
	int i;

	json__init(&j);
	json__arr_begin(&j);
	for (i = 0; i < h->nj; i++) {
		const struct hjob *jb = h->jobs[i];
		const struct hrank *r = NULL;
		int k;

		if (!jb->emitted) {
			json__obj_begin(&j);
			json__kstr(&j, "type", "verdict");
			json__kstr(&j, "job", jb->id);
			json__kstr(&j, "class", "none");
			json__kstr(&j, "detail", "no verdict yet: too few steps lined up across nodes");
			json__obj_end(&j);
			continue;
		}
		for (k = 0; k < jb->nr && jb->last_rank >= 0; k++)
			if (jb->r[k]->rank == jb->last_rank)
				r = jb->r[k];
		report__verdict(&j, &jb->last, jb->id, jb->last_rank, r ? (pid_t)r->pid : 0);
	}
	json__arr_end(&j);
	return finish(&j, len);
}

char *hub__ranks(struct hub *h, size_t *len)
{
	struct json j;
	int i, k;

	json__init(&j);
	json__arr_begin(&j);
	for (i = 0; i < h->nj; i++) {
		const struct hjob *jb = h->jobs[i];

		for (k = 0; k < jb->nr; k++) {
			const struct hrank *r = jb->r[k];

			json__obj_begin(&j);
			json__kstr(&j, "type", "rank");
			json__kstr(&j, "job", jb->id);
			json__kint(&j, "rank", r->rank);
			json__kint(&j, "world_size", r->world);
			json__kint(&j, "pid", r->pid);
			json__kstr(&j, "node", h->nodes[r->node].name);
			json__key(&j, "observed");
			json__bool(&j, observed(h, r));
			json__kstr(&j, "state", state_names[r->state]);
			json__kuint(&j, "steps", r->n);
			json__obj_end(&j);
		}
	}
	json__arr_end(&j);
	return finish(&j, len);
}

char *hub__nodes(struct hub *h, size_t *len)
{
	struct json j;
	int i, k;

	json__init(&j);
	json__arr_begin(&j);
	for (i = 0; i < h->nn; i++) {
		const struct hnode *n = &h->nodes[i];
		int64_t po;
		uint64_t pe;

		json__obj_begin(&j);
		json__kstr(&j, "node", n->name);
		json__key(&j, "up");
		json__bool(&j, n->up);
		json__kstr(&j, "why", n->why[0] ? n->why : NULL);
		json__kuint(&j, "polls", n->st.polls);
		json__kuint(&j, "failed_polls", n->st.fails);
		json__kuint(&j, "bad_answers", n->st.bad);
		json__kuint(&j, "duplicate_ranks", n->st.dups);
		json__kuint(&j, "lost_steps", n->st.lost);
		if (n->instance) {
			char hex[17];

			snprintf(hex, sizeof(hex), "%016" PRIx64, n->instance);
			json__kstr(&j, "daemon_instance", hex);
		}
		if (node_ntp(n, &po, &pe)) {
			/* the node's clock against the hub's, from the polls' round trips */
			json__kint(&j, "poll_clock_offset_ns", po);
			json__kuint(&j, "poll_clock_error_ns", pe);
		}
		json__key(&j, "jobs");
		json__arr_begin(&j);
		for (k = 0; k < h->nj; k++) {
			const struct jnode *jn = find_jnode(h->jobs[k], i, false);

			if (!jn)
				continue;
			json__obj_begin(&j);
			json__kstr(&j, "job", h->jobs[k]->id);
			json__key(&j, "lined_up");
			json__bool(&j, jn->aligned);
			json__key(&j, "reference");
			json__bool(&j, h->jobs[k]->ref == i);
			if (jn->aligned) {
				json__kint(&j, "step_shift", jn->shift);
				json__kint(&j, "clock_offset_ns", jn->offset_ns);
				json__kuint(&j, "clock_error_ns", jn->err_ns);
				json__kuint(&j, "clock_error_phase_ns", jn->phase_ns);
				json__kstr(&j, "lined_up_by", jn->by_polls ? "poll clocks" :
					   "step lengths");
				json__kstr(&j, "clock_from", jn->clock_by_polls ?
					   "poll round trips" : "step starts");
			}
			json__obj_end(&j);
		}
		json__arr_end(&j);
		json__obj_end(&j);
	}
	json__arr_end(&j);
	return finish(&j, len);
}

/* A counter family with one sample per node, from the field at off of its stats. */
static void node_counter(struct prom *p, const struct hub *h, const char *name,
			 const char *help, size_t off)
{
	int i;

	prom__family(p, name, "counter", help);
	for (i = 0; i < h->nn; i++)
		prom__sample(p, name, LABELS("node", h->nodes[i].name),
			     *(const uint64_t *)((const char *)&h->nodes[i].st + off));
}

char *hub__metrics(struct hub *h, size_t *len)
{
	struct prom p;
	char rank[16];
	int i, k, up = 0;
	char *out;

	prom__init(&p);
	for (i = 0; i < h->nn; i++)
		up += h->nodes[i].up;
	prom__family(&p, "rankscope_hub_nodes", "gauge", "Node daemons the hub polls.");
	prom__sample(&p, "rankscope_hub_nodes", NULL, h->nn);
	prom__family(&p, "rankscope_hub_nodes_up", "gauge", "Node daemons that answer.");
	prom__sample(&p, "rankscope_hub_nodes_up", NULL, up);
	prom__family(&p, "rankscope_hub_node_up", "gauge",
		     "1 while the node's daemon answers; 0 after 3 failed polls in a row.");
	for (i = 0; i < h->nn; i++)
		prom__sample(&p, "rankscope_hub_node_up", LABELS("node", h->nodes[i].name),
			     h->nodes[i].up);
	node_counter(&p, h, "rankscope_hub_poll_failures_total",
		     "Polls of a node that failed (no answer, an error status, a timeout).",
		     offsetof(struct hub_node_stats, fails));
	node_counter(&p, h, "rankscope_hub_bad_answers_total",
		     "Answers from a node that were not what a daemon serves (not JSON, too big).",
		     offsetof(struct hub_node_stats, bad));
	node_counter(&p, h, "rankscope_hub_duplicate_ranks_total",
		     "Step or rank lines for a (job, rank) that another node already serves.",
		     offsetof(struct hub_node_stats, dups));
	node_counter(&p, h, "rankscope_hub_lost_steps_total",
		     "Step lines a node dropped before the hub asked for them.",
		     offsetof(struct hub_node_stats, lost));
	prom__family(&p, "rankscope_hub_clock_offset_seconds", "gauge",
		     "A node's CLOCK_MONOTONIC minus the job's reference node's, from matched steps.");
	for (k = 0; k < h->nj; k++)
		for (i = 0; i < h->jobs[k]->njn; i++)
			if (h->jobs[k]->jn[i].aligned)
				prom__sample(&p, "rankscope_hub_clock_offset_seconds",
					     LABELS("job_id", h->jobs[k]->id, "node",
						    h->nodes[h->jobs[k]->jn[i].node].name),
					     h->jobs[k]->jn[i].offset_ns / 1e9);
	prom__family(&p, "rankscope_hub_clock_error_seconds", "gauge",
		     "The error of that offset: 90% of matched steps are within it.");
	for (k = 0; k < h->nj; k++)
		for (i = 0; i < h->jobs[k]->njn; i++)
			if (h->jobs[k]->jn[i].aligned)
				prom__sample(&p, "rankscope_hub_clock_error_seconds",
					     LABELS("job_id", h->jobs[k]->id, "node",
						    h->nodes[h->jobs[k]->jn[i].node].name),
					     h->jobs[k]->jn[i].err_ns / 1e9);
	prom__family(&p, "rankscope_job_ranks_seen", "gauge",
		     "Ranks of the job the hub observes (on nodes that answer, lined up).");
	prom__family(&p, "rankscope_job_world_size", "gauge", "Ranks in the job.");
	for (k = 0; k < h->nj; k++) {
		const struct hjob *jb = h->jobs[k];

		if (!jb->emitted)
			continue;
		prom__sample(&p, "rankscope_job_ranks_seen", LABELS("job_id", jb->id),
			     jb->last.ranks_seen);
		prom__sample(&p, "rankscope_job_world_size", LABELS("job_id", jb->id),
			     jb->last.world_size);
	}
	prom__family(&p, "rankscope_straggler_verdict", "gauge",
		     "The job's current verdict across nodes: 1 on the series of its class and "
		     "rank.");
	for (k = 0; k < h->nj; k++) {
		const struct hjob *jb = h->jobs[k];

		if (!jb->emitted)
			continue;
		snprintf(rank, sizeof(rank), "%d", jb->last_rank);
		prom__sample(&p, "rankscope_straggler_verdict",
			     LABELS("job_id", jb->id, "class", detect__class_name(jb->last.cls),
				    "rank", rank, "persistent",
				    jb->last.persistent ? "true" : "false"), 1);
	}
	prom__family(&p, "rankscope_straggler_skew_seconds", "gauge",
		     "The late rank's lateness over its peers' median (0 without a late rank).");
	for (k = 0; k < h->nj; k++)
		if (h->jobs[k]->emitted)
			prom__sample(&p, "rankscope_straggler_skew_seconds",
				     LABELS("job_id", h->jobs[k]->id),
				     h->jobs[k]->last_rank >= 0 ?
				     h->jobs[k]->last.v.skew_ns / 1e9 : 0);
	if (h->nj) {
		const char *ids[HUB_MAX_JOBS];
		const struct cost *costs[HUB_MAX_JOBS];

		for (k = 0; k < h->nj; k++) {
			ids[k] = h->jobs[k]->id;
			costs[k] = h->jobs[k]->emitted ? &h->jobs[k]->cost : NULL;
		}
		cost__series(&p, ids, costs, h->nj, h->usd, h->gpus);
	}
	hublife__metrics(&h->life, &p);
	if (p.err) {
		prom__free(&p);
		return NULL;
	}
	out = p.buf;
	*len = p.len;
	return out;
}

void hub__drain_steps(struct hub *h, void (*fn)(void *ctx, const char *job, int rank,
						 const char *json, size_t len), void *ctx)
{
	int i;

	for (i = 0; i < h->npend; i++) {
		if (fn)
			fn(ctx, h->pend[i].job, h->pend[i].rank, h->pend[i].json, h->pend[i].len);
		free(h->pend[i].json);
	}
	h->npend = 0;
}

void hub__main_job(struct hub *h, char *job, size_t n)
{
	int i, best = -1;

	for (i = 0; i < h->nj; i++)
		if (best < 0 || h->jobs[i]->nr > h->jobs[best]->nr)
			best = i;
	snprintf(job, n, "%s", best >= 0 ? h->jobs[best]->id : "");
}

int hub__node_clock(struct hub *h, const char *job, int node, int64_t *offset_ns,
		    uint64_t *err_ns)
{
	struct hjob *j = find_job(h, job, false);
	const struct jnode *jn = j ? find_jnode(j, node, false) : NULL;

	if (node < 0 || node >= h->nn || !h->nodes[node].up || h->nodes[node].gone)
		return -1;
	if (!jn || !jn->aligned)
		return 0;
	*offset_ns = jn->offset_ns;
	*err_ns = jn->err_ns;
	return 1;
}

bool hub__offset(struct hub *h, const char *job, int node, int64_t *shift, int64_t *offset_ns,
		 uint64_t *err_ns)
{
	struct hjob *j = find_job(h, job, false);
	const struct jnode *jn = j ? find_jnode(j, node, false) : NULL;

	if (!jn || !jn->aligned)
		return false;
	*shift = jn->shift;
	*offset_ns = jn->offset_ns;
	*err_ns = jn->err_ns;
	return true;
}
