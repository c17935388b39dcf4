// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A job's failures and recoveries across nodes: see hublife.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hublife.h"
#include "jsonp.h"

#define HUBLIFE_MAX_VALUES	(1 << 18)	/* JSON values in one answer */

static const char *const reasons[3] = { "signal", "exit_code", "hang" };
static const double rec_bounds[HUBLIFE_REC_BUCKETS] = {
	1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
};

void hublife__free(struct hublife *hl)
{
	int k;

	for (k = 0; k < hl->nj; k++) {
		free(hl->jobs[k]->v);
		free(hl->jobs[k]);
	}
	memset(hl, 0, sizeof(*hl));
}

static struct hl_job *find(struct hublife *hl, const char *id, bool create)
{
	struct hl_job *j;
	int k;

	for (k = 0; k < hl->nj; k++)
		if (!strcmp(hl->jobs[k]->id, id))
			return hl->jobs[k];
	if (!create || hl->nj == HUBLIFE_JOBS || strlen(id) >= sizeof(j->id))
		return NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	snprintf(j->id, sizeof(j->id), "%s", id);
	hl->jobs[hl->nj++] = j;
	return j;
}

static struct hl_view *view(struct hl_job *j, int node)
{
	struct hl_view *v;
	int i;

	for (i = 0; i < j->nv; i++)
		if (j->v[i].node == node)
			return &j->v[i];
	if (j->nv == HUBLIFE_NODES)
		return NULL;
	v = realloc(j->v, (j->nv + 1) * sizeof(*v));
	if (!v)
		return NULL;
	j->v = v;
	memset(&v[j->nv], 0, sizeof(v[j->nv]));
	v[j->nv].node = node;
	return &v[j->nv++];
}

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static double num(const struct jsonp *d, const struct jsonp_val *o, const char *key)
{
	double x = 0;

	return jsonp__double(d, o, key, &x) && isfinite(x) ? x : 0;
}

static uint64_t count(const struct jsonp *d, const struct jsonp_val *o, const char *key)
{
	uint64_t x = 0;

	return jsonp__uint64(d, o, key, &x) ? x : 0;
}

static bool flag(const struct jsonp *d, const struct jsonp_val *o, const char *key)
{
	const struct jsonp_val *v = jsonp__get(d, o, key);

	return v && v->type == JSONP_BOOL && v->b;
}

static void read_view(struct hl_view *v, const struct jsonp *d, const struct jsonp_val *o)
{
	const struct jsonp_val *f = jsonp__get(d, o, "failures"), *lf, *lr, *tl, *e;
	int64_t x;
	int k;

	copy(v->state, sizeof(v->state), jsonp__str(d, o, "state"));
	v->run_id = num(d, o, "run_id");
	for (k = 0; k < 3; k++)
		v->failures[k] = count(d, f, reasons[k]);
	v->recoveries = count(d, o, "recoveries");
	v->lost_steps_total = count(d, o, "lost_steps_total");
	v->lost_s_total = num(d, o, "lost_step_seconds_total");
	lf = jsonp__get(d, o, "last_failure");
	v->fail = lf && lf->type == JSONP_OBJ;
	if (v->fail) {
		copy(v->reason, sizeof(v->reason), jsonp__str(d, lf, "reason"));
		copy(v->phase, sizeof(v->phase), jsonp__str(d, lf, "phase"));
		copy(v->detail, sizeof(v->detail), jsonp__str(d, lf, "detail"));
		v->rank = jsonp__int64(d, lf, "rank", &x) && x >= -1 && x < 1 << 30 ? (int)x : -1;
		v->code = (jsonp__int64(d, lf, "signal", &x) || jsonp__int64(d, lf, "exit_code", &x)) &&
			  x >= 0 && x < 256 ? (int)x : -1;
		v->at = num(d, lf, "at");
		v->ckpt_age = num(d, lf, "checkpoint_age_seconds");
		v->ckpt_seen = flag(d, lf, "checkpoint_seen");
		v->lost_steps = count(d, lf, "lost_steps");
		v->lost_s = num(d, lf, "lost_step_seconds");
	}
	lr = jsonp__get(d, o, "last_recovery");
	v->rec = lr && lr->type == JSONP_OBJ;
	if (v->rec) {
		v->rec_s = num(d, lr, "seconds");
		v->rec_at = num(d, lr, "at");
		v->in_place = flag(d, lr, "in_place");
	}
	v->nev = 0;
	tl = jsonp__get(d, o, "timeline");
	for (e = tl && tl->type == JSONP_ARR ? jsonp__first(d, tl) : NULL;
	     e && v->nev < HUBLIFE_EVENTS; e = jsonp__next(d, e)) {
		struct hl_event *ev = &v->ev[v->nev];

		if (!jsonp__str(d, e, "event") || !(ev->t = num(d, e, "t")))
			continue;
		copy(ev->event, sizeof(ev->event), jsonp__str(d, e, "event"));
		copy(ev->detail, sizeof(ev->detail), jsonp__str(d, e, "detail"));
		v->nev++;
	}
}

/* Drop the views of node not said in the latest feed (round), or all of them (round 0). */
static void drop_views(struct hublife *hl, int node, uint64_t round)
{
	int k, i, out;

	for (k = 0; k < hl->nj; k++) {
		struct hl_job *j = hl->jobs[k];

		for (i = 0, out = 0; i < j->nv; i++)
			if (j->v[i].node != node || (round && j->v[i].round == round))
				j->v[out++] = j->v[i];
		j->nv = out;
	}
	for (k = 0, out = 0; k < hl->nj; k++) {
		if (hl->jobs[k]->nv) {
			hl->jobs[out++] = hl->jobs[k];
		} else {
			free(hl->jobs[k]->v);
			free(hl->jobs[k]);
		}
	}
	hl->nj = out;
}

int hublife__feed(struct hublife *hl, int node, const char *text, size_t len, char *err,
		  size_t n)
{
	const struct jsonp_val *o;
	struct jsonp d = {};
	struct hl_view *v;
	struct hl_job *j;
	const char *id;
	int ret = 0;

	if (jsonp__parse(&d, text, len, HUBLIFE_MAX_VALUES) ||
	    jsonp__root(&d)->type != JSONP_ARR) {
		snprintf(err, n, "jobs: not a JSON array%s%s", d.err[0] ? ": " : "", d.err);
		ret = -EINVAL;
		goto out;
	}
	hl->round++;
	for (o = jsonp__first(&d, jsonp__root(&d)); o; o = jsonp__next(&d, o)) {
		id = jsonp__str(&d, o, "job");
		if (o->type != JSONP_OBJ || !id || !*id || !(j = find(hl, id, true)) ||
		    !(v = view(j, node)))
			continue;
		v->round = hl->round;
		read_view(v, &d, o);
	}
	drop_views(hl, node, hl->round);
out:
	jsonp__free(&d);
	return ret;
}

void hublife__node_gone(struct hublife *hl, int node)
{
	drop_views(hl, node, 0);
}

/* The job's life across its nodes, joined (see hublife.h). */
struct joined {
	const char *state;
	const struct hl_view *cause;	/* the earliest failure; NULL: none */
	const struct hl_view *counts;	/* the node that counts the most failures */
	const struct hl_view *work;	/* the freshest checkpoint's node, else the cause's */
	double run_id;
	uint64_t recoveries;
	bool rec;			/* every node recovered after the cause */
	double rec_s, rec_at;
	bool in_place;
};

static uint64_t total(const struct hl_view *v)
{
	return v->failures[0] + v->failures[1] + v->failures[2];
}

static void join(const struct hl_job *j, struct joined *o)
{
	int i, failed = 0, abandoned = 0;

	memset(o, 0, sizeof(*o));
	o->recoveries = UINT64_MAX;
	for (i = 0; i < j->nv; i++) {
		const struct hl_view *v = &j->v[i];

		failed += !strcmp(v->state, "failed");
		abandoned += !strcmp(v->state, "abandoned");
		if (v->run_id > o->run_id)
			o->run_id = v->run_id;
		if (v->recoveries < o->recoveries)
			o->recoveries = v->recoveries;
		if (v->fail && v->at > 0 && (!o->cause || v->at < o->cause->at))
			o->cause = v;
		if (v->fail && v->ckpt_seen && (!o->work || !o->work->ckpt_seen ||
						v->ckpt_age < o->work->ckpt_age))
			o->work = v;
	}
	if (o->recoveries == UINT64_MAX)
		o->recoveries = 0;
	/* the counts of the cause's node, unless another node saw more failures */
	o->counts = o->cause ? o->cause : &j->v[0];
	for (i = 0; i < j->nv; i++)
		if (total(&j->v[i]) > total(o->counts))
			o->counts = &j->v[i];
	o->state = abandoned == j->nv ? "abandoned" : failed || abandoned ? "failed" : "running";
	/* the work lost is judged at the cause: none (no failure with a time), none lost */
	if (!o->work || !o->cause)
		o->work = o->cause;
	/* back when the last node's ranks stepped again, from the cause */
	o->rec = o->cause && o->recoveries;
	for (i = 0; o->rec && i < j->nv; i++) {
		const struct hl_view *v = &j->v[i];

		if (!v->rec || v->rec_at < o->cause->at) {
			o->rec = false;
			break;
		}
		if (v->rec_at > o->rec_at)
			o->rec_at = v->rec_at;
		o->in_place = v->in_place;
	}
	if (o->rec)
		o->rec_s = o->rec_at - o->cause->at;
}

/* A recovery every node has seen, once: into the job's histogram. */
static void account(struct hl_job *j)
{
	struct joined o;
	int b;

	join(j, &o);
	if (!o.rec || o.recoveries <= j->rec_seen)
		return;
	j->rec_seen = o.recoveries;
	for (b = 0; b < HUBLIFE_REC_BUCKETS && o.rec_s > rec_bounds[b]; b++)
		;
	if (b < HUBLIFE_REC_BUCKETS)
		j->rec_counts[b]++;
	j->rec_sum += o.rec_s;
	j->rec_n++;
}

void hublife__round(struct hublife *hl)
{
	int k;

	for (k = 0; k < hl->nj; k++)
		account(hl->jobs[k]);
}

/* The checkpoint's age at the cause: the node that saw it may have failed later. */
static double ckpt_age(const struct joined *o)
{
	double a = o->work->ckpt_age - (o->work->at - o->cause->at);

	return a > 0 ? a : 0;
}

void hublife__metrics(const struct hublife *hl, struct prom *p)
{
	static const char *const states[] = { "running", "failed", "abandoned" };
	struct joined o;
	int k, r;

	prom__family(p, "train_run_id", "gauge",
		     "The job's incarnation, the newest of its nodes': it changes on every restart.");
	for (k = 0; k < hl->nj; k++) {
		join(hl->jobs[k], &o);
		if (o.run_id > 0)
			prom__sample(p, "train_run_id", LABELS("job_id", hl->jobs[k]->id), o.run_id);
	}
	prom__family(p, "rankscope_job_lifecycle_state", "gauge",
		     "1 for the job's state across its nodes: failed while any node's ranks have "
		     "not stepped again, abandoned when every node gave up.");
	for (k = 0; k < hl->nj; k++) {
		join(hl->jobs[k], &o);
		for (r = 0; r < 3; r++)
			prom__sample(p, "rankscope_job_lifecycle_state",
				     LABELS("job_id", hl->jobs[k]->id, "state", states[r]),
				     !strcmp(o.state, states[r]));
	}
	prom__family(p, "rankscope_job_failures_total", "counter",
		     "Failures of the job, as the node that counts the most saw them.");
	for (k = 0; k < hl->nj; k++) {
		join(hl->jobs[k], &o);
		for (r = 0; r < 3; r++)
			prom__sample(p, "rankscope_job_failures_total",
				     LABELS("job_id", hl->jobs[k]->id, "reason", reasons[r]),
				     o.counts->failures[r]);
	}
	prom__family(p, "rankscope_job_recoveries_total", "counter",
		     "Times every node of the job saw it step again after a failure.");
	for (k = 0; k < hl->nj; k++) {
		join(hl->jobs[k], &o);
		prom__sample(p, "rankscope_job_recoveries_total", LABELS("job_id", hl->jobs[k]->id),
			     o.recoveries);
	}
	prom__family(p, "job_recovery_seconds", "gauge",
		     "The last recovery: from the earliest failure on any node to the last node's "
		     "first step after it.");
	for (k = 0; k < hl->nj; k++) {
		join(hl->jobs[k], &o);
		if (o.rec)
			prom__sample(p, "job_recovery_seconds", LABELS("job_id", hl->jobs[k]->id),
				     o.rec_s);
	}
	prom__family(p, "job_checkpoint_age_at_failure_seconds", "gauge",
		     "At the last failure: the time since the last checkpoint ended, from the node "
		     "that saw it.");
	for (k = 0; k < hl->nj; k++) {
		join(hl->jobs[k], &o);
		if (o.work)
			prom__sample(p, "job_checkpoint_age_at_failure_seconds",
				     LABELS("job_id", hl->jobs[k]->id), ckpt_age(&o));
	}
	prom__family(p, "rankscope_job_recovery_seconds", "histogram",
		     "Every recovery the hub saw every node of the job make: from the earliest "
		     "failure to the last node's first step.");
	for (k = 0; k < hl->nj; k++)
		prom__histogram(p, "rankscope_job_recovery_seconds",
				LABELS("job_id", hl->jobs[k]->id), hl->jobs[k]->rec_counts,
				rec_bounds, HUBLIFE_REC_BUCKETS, hl->jobs[k]->rec_sum,
				hl->jobs[k]->rec_n);
	prom__family(p, "rankscope_job_lost_step_seconds_total", "counter",
		     "Work lost at failures, from the node that saw the last checkpoint.");
	for (k = 0; k < hl->nj; k++) {
		join(hl->jobs[k], &o);
		prom__sample(p, "rankscope_job_lost_step_seconds_total",
			     LABELS("job_id", hl->jobs[k]->id), o.work ? o.work->lost_s_total : 0);
	}
	prom__family(p, "rankscope_job_lost_steps_total", "counter",
		     "Steps lost at failures, from the node that saw the last checkpoint.");
	for (k = 0; k < hl->nj; k++) {
		join(hl->jobs[k], &o);
		prom__sample(p, "rankscope_job_lost_steps_total", LABELS("job_id", hl->jobs[k]->id),
			     o.work ? o.work->lost_steps_total : 0);
	}
}

void hublife__json(const struct hublife *hl, struct json *j,
		   const char *(*name)(int node, void *ctx), void *ctx)
{
	const struct hl_view *c, *w;
	struct joined o;
	int k, i, r;

	json__arr_begin(j);
	for (k = 0; k < hl->nj; k++) {
		const struct hl_job *jb = hl->jobs[k];

		join(jb, &o);
		c = o.cause;
		w = o.work;
		json__obj_begin(j);
		json__kstr(j, "type", "job");
		json__kstr(j, "job", jb->id);
		json__kstr(j, "state", o.state);
		if (o.run_id > 0)
			json__kunix(j, "run_id", o.run_id);
		json__key(j, "failures");
		json__obj_begin(j);
		for (r = 0; r < 3; r++)
			json__kuint(j, reasons[r], o.counts->failures[r]);
		json__obj_end(j);
		json__kuint(j, "recoveries", o.recoveries);
		json__kuint(j, "lost_steps_total", w ? w->lost_steps_total : 0);
		json__kdouble(j, "lost_step_seconds_total", w ? w->lost_s_total : 0);
		if (c) {
			json__key(j, "last_failure");
			json__obj_begin(j);
			json__kstr(j, "reason", c->reason);
			json__kint(j, "rank", c->rank);
			if (c->code >= 0)
				json__kint(j, !strcmp(c->reason, "signal") ? "signal" : "exit_code",
					   c->code);
			json__kstr(j, "phase", c->phase);
			json__kstr(j, "node", name(c->node, ctx));
			json__kunix(j, "at", c->at);
			json__kdouble(j, "checkpoint_age_seconds", ckpt_age(&o));
			json__key(j, "checkpoint_seen");
			json__bool(j, w->ckpt_seen);
			json__kuint(j, "lost_steps", w->lost_steps);
			json__kdouble(j, "lost_step_seconds", w->lost_s);
			json__kstr(j, "detail", c->detail);
			json__obj_end(j);
		}
		if (o.rec) {
			json__key(j, "last_recovery");
			json__obj_begin(j);
			json__kdouble(j, "seconds", o.rec_s);
			json__kunix(j, "at", o.rec_at);
			json__key(j, "in_place");
			json__bool(j, o.in_place);
			json__obj_end(j);
		}
		/* the timeline as the cause's node (else the first) tells it */
		json__key(j, "timeline");
		json__arr_begin(j);
		for (i = 0; i < (c ? c : &jb->v[0])->nev; i++) {
			const struct hl_event *ev = &(c ? c : &jb->v[0])->ev[i];

			json__obj_begin(j);
			json__kunix(j, "t", ev->t);
			json__kstr(j, "event", ev->event);
			json__kstr(j, "detail", ev->detail);
			json__obj_end(j);
		}
		json__arr_end(j);
		json__key(j, "nodes");
		json__arr_begin(j);
		for (i = 0; i < jb->nv; i++) {
			json__obj_begin(j);
			json__kstr(j, "node", name(jb->v[i].node, ctx));
			json__kstr(j, "state", jb->v[i].state);
			json__obj_end(j);
		}
		json__arr_end(j);
		json__obj_end(j);
	}
	json__arr_end(j);
}
