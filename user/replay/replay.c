// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* diagnose --replay: recordings and op traces through the job model (replay.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "comms.h"
#include "decode.h"
#include "feed.h"
#include "json.h"
#include "log.h"
#include "replay.h"
#include "report.h"
#include "rline.h"
#include "rp.h"

/* What the model asks, answered: recorded answers in order (a recording), else what the op
 * trace says (a collective a rank never returned from). */
static bool rp_inflight(void *ctx, int col, struct job_inflight *in)
{
	struct rp_job *j = ctx;
	const struct rp_answer *a = rp__answer(j, JOB_Q_INFLIGHT, col);
	const struct rp_col *c = &j->cols[col];

	if (j->rp->exact) {
		if (!a)
			return false;
		*in = a->call;
		return a->in;
	}
	if ((c->open == RP_OPEN_COLL || c->open == RP_OPEN_WAIT) && !c->exited &&
	    c->open_call.enter_ns <= j->now) {
		*in = c->open_call;
		return true;
	}
	return rp__inside(j, col, in);
}

static void rp_state(void *ctx, int col, char *buf, size_t n)
{
	struct rp_job *j = ctx;
	const struct rp_answer *a = rp__answer(j, JOB_Q_STATE, col);
	const struct rp_col *c = &j->cols[col];

	if (j->rp->exact)
		snprintf(buf, n, "%s", a ? a->text : "unknown (not in the recording)");
	else if (c->exited)
		snprintf(buf, n, "gone");
	else
		snprintf(buf, n, "%s (rank %d)", c->open == RP_OPEN_RUNNING ? "running" :
			 c->open == RP_OPEN_BLOCKED ? "blocked in input or I/O" : "sleeping",
			 c->rank);
}

static bool rp_where(void *ctx, int col, char *coll, size_t ncoll, char *stack, size_t n)
{
	struct rp_job *j = ctx;
	const struct rp_answer *a = rp__answer(j, JOB_Q_WHERE, col);

	snprintf(coll, ncoll, "%s", a ? a->coll : "");
	snprintf(stack, n, "%s", a ? a->text : "");
	return a && a->in;
}

static void emit(struct replay *rp)
{
	if (!rp->j.err && rp->j.len) {
		fwrite(rp->j.buf, 1, rp->j.len, rp->o->out);
		fputc('\n', rp->o->out);
	}
	json__reset(&rp->j);
}

static void rp_on_step(void *ctx, const struct job_step *st, const char *rule)
{
	struct rp_job *j = ctx;
	struct rp_col *c = &j->cols[st->col];
	struct job_step own = *st;
	double conf;

	j->steps_seen++;
	/* on the rank's own clock, as its input was */
	own.start_ns = (uint64_t)((int64_t)st->start_ns + c->off_ns);
	c->last = own;
	if (!j->rp->o->json)
		return;
	job__rule(j->model, &conf, NULL);
	report__step(&j->rp->j, j->id, c->rank, c->pid, &own, rule, conf, j->rp->comms,
		     j->rp->ncomms);
	emit(j->rp);
}

static void rp_on_verdict(void *ctx, const struct job_verdict *v)
{
	struct rp_job *j = ctx;
	const struct rp_col *c = v->col >= 0 && v->col < j->ncols ? &j->cols[v->col] : NULL;

	if (!j->have_worst || detect__severity(v->cls) >= detect__severity(j->worst.cls)) {
		j->worst = *v;
		j->have_worst = true;
	}
	if (!j->rp->o->json)
		return;
	report__verdict(&j->rp->j, v, j->id, c ? c->rank : -1, c ? c->pid : 0);
	emit(j->rp);
}

static void rp_on_rule(void *ctx, const char *rule, int period, double confidence, bool changed,
		       const char *note)
{
	struct rp_job *j = ctx;

	if (!j->rp->o->json)
		return;
	report__rule(&j->rp->j, j->id, rule, period, confidence, changed, note);
	emit(j->rp);
}

static void rp_on_cost(void *ctx, uint64_t step, const struct cost_step *cs, int rank)
{
	struct rp_job *j = ctx;

	if (!j->rp->o->json)
		return;
	report__cost(&j->rp->j, j->id, step, cs, rank);
	emit(j->rp);
}

int rp__build(struct replay *rp, struct rp_job *j)
{
	struct job_probe_ops ops = {
		.inflight = rp_inflight, .state = rp_state, .where = rp_where,
		.on_step = rp_on_step, .on_verdict = rp_on_verdict, .on_rule = rp_on_rule,
		.on_cost = rp_on_cost, .ctx = j,
	};
	int c;

	job__free(j->model);
	j->model = job__new(&rp->o->jcfg, j->ncols, &ops);
	if (!j->model)
		return -ENOMEM;
	for (c = 0; c < j->ncols; c++)
		job__set_rank(j->model, c, j->cols[c].rank, j->cols[c].pid);
	job__set_world(j->model, j->world);
	return 0;
}

void rp__advance(struct rp_job *j, uint64_t t, bool final)
{
	j->now = t;
	job__advance(j->model, t, final);
	j->nans = j->next_ans = 0;	/* answers belong to the tick they were asked in */
}

const struct rp_answer *rp__answer(struct rp_job *j, enum job_q q, int col)
{
	const struct rp_answer *a;

	if (!j->rp->exact || j->next_ans >= j->nans)
		return NULL;
	a = &j->ans[j->next_ans];
	if (a->q != q || a->col != col) {
		j->rp->answers_off++;	/* the replay asked otherwise than the live run */
		return NULL;
	}
	j->next_ans++;
	return a;
}

int rp__comm(struct replay *rp, const char *name, size_t len, uint64_t *hash)
{
	struct comm_use *u;
	int k;

	*hash = comms__fnv1a((const uint8_t *)name, len);
	if (rp->ncomms && rp->comms[rp->last_comm].hash == *hash)
		return rp->last_comm;
	for (k = 0; k < rp->ncomms; k++)
		if (rp->comms[k].hash == *hash)
			return rp->last_comm = k;
	if (rp->ncomms == RP_COMMS_MAX)
		return -1;	/* named by hash only in step lines */
	u = &rp->comms[rp->ncomms];
	snprintf(u->name, sizeof(u->name), "%.*s", (int)len, name);
	u->hash = *hash;
	u->size = -1;
	return rp->last_comm = rp->ncomms++;
}

struct rp_job *rp__job(struct replay *rp, const char *id)
{
	struct rp_job *j;
	int k;

	for (k = 0; k < rp->njobs; k++)
		if (!strcmp(rp->jobs[k].id, id))
			return &rp->jobs[k];
	if (rp->njobs == RP_JOBS_MAX)
		return NULL;
	j = &rp->jobs[rp->njobs++];
	memset(j, 0, sizeof(*j));
	snprintf(j->id, sizeof(j->id), "%s", id);
	j->world = -1;
	j->rp = rp;
	return j;
}

/* diagnose's report for the job with the most ranks. */
static void human(struct replay *rp)
{
	struct rp_job *j = NULL;
	const struct job_step **last;
	struct report_diag d = {};
	int k, *rank;

	for (k = 0; k < rp->njobs; k++)
		if (!j || rp->jobs[k].ncols > j->ncols)
			j = &rp->jobs[k];
	if (!j) {
		fprintf(rp->o->out, "rankscope diagnose: no ranks in the replay\n");
		return;
	}
	rank = calloc(j->ncols + 1, sizeof(*rank));
	last = calloc(j->ncols + 1, sizeof(*last));
	if (!rank || !last)
		goto out;
	for (k = 0; k < j->ncols; k++) {
		rank[k] = j->cols[k].rank;
		last[k] = &j->cols[k].last;
	}
	d.ncols = j->ncols;
	d.world = j->world;
	d.steps_seen = j->steps_seen;
	d.rule = j->model ? job__rule(j->model, &d.conf, &d.period) : "";
	d.rank = rank;
	d.last = last;
	d.window = rp->o->jcfg.window;
	d.worst = j->have_worst ? &j->worst : NULL;
	d.worst_rank = j->have_worst && j->worst.col >= 0 && j->worst.col < j->ncols ?
		       j->cols[j->worst.col].rank : -1;
	d.cost = j->model ? job__cost(j->model) : NULL;
	d.usd = rp->o->jcfg.gpu_hour_usd;
	d.gpus = rp->o->jcfg.gpus_per_rank;
	report__diagnose(rp->o->out, &d);
out:
	free(rank);
	free(last);
}

int replay__run(char *const *files, int n, const struct replay_opts *o)
{
	struct replay *rp = calloc(1, sizeof(*rp));
	int err = 0, i, k;

	if (!rp)
		return -ENOMEM;
	rp->o = o;
	json__init(&rp->j);
	/* a recording with model lines is replayed as it ran; anything else is merged */
	err = rp__load(rp, files, n);
	if (err)
		goto out;
	if (rp->exact)
		err = 0;	/* run while reading */
	else
		err = rp__run_merged(rp);
	if (err)
		goto out;
	if (rp->answers_off)
		pr_warn("replay: the model asked %" PRIu64 " questions the recording did not "
			"answer in that order (hang verdicts may differ from the live run's)",
			rp->answers_off);
	for (k = 0; o->json && k < rp->njobs; k++) {
		if (!rp->jobs[k].model)
			continue;
		report__cost_total(&rp->j, rp->jobs[k].id, job__cost(rp->jobs[k].model),
				   o->jcfg.gpu_hour_usd, o->jcfg.gpus_per_rank);
		emit(rp);
	}
	if (!o->json)
		human(rp);
	fflush(o->out);
out:
	for (i = 0; i < rp->njobs; i++) {
		job__free(rp->jobs[i].model);
		for (k = 0; k < rp->jobs[i].ncols; k++)
			free(rp->jobs[i].cols[k].calls);
		free(rp->jobs[i].cols);
		for (k = 0; k < rp->jobs[i].cap_ans; k++) {
			free(rp->jobs[i].ans[k].coll);
			free(rp->jobs[i].ans[k].text);
		}
		free(rp->jobs[i].ans);
	}
	rp__free_records(rp);
	json__free(&rp->j);
	free(rp);
	return err;
}
