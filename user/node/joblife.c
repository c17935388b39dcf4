// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The daemon's jobs across their restarts: see joblife.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "joblife.h"
#include "log.h"

static const double rec_bounds[JOBLIFE_REC_BUCKETS] = {
	1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
};

/* CLOCK_MONOTONIC ns as unix seconds, by the clocks' offset now. */
static double unix_of(uint64_t mono_ns)
{
	struct timespec rt, mt;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	return rt.tv_sec + rt.tv_nsec / 1e9 -
	       ((double)mt.tv_sec * 1e9 + mt.tv_nsec - (double)mono_ns) / 1e9;
}

void joblife__init(struct joblife *jl, uint64_t abandon_ns, uint64_t retain_ns,
		   uint64_t settle_ns)
{
	memset(jl, 0, sizeof(*jl));
	jl->abandon_ns = abandon_ns;
	jl->retain_ns = retain_ns;
	jl->settle_ns = settle_ns;
}

static void forget(struct joblife_job *e)
{
	free(e->l);
	memset(e, 0, sizeof(*e));
}

void joblife__free(struct joblife *jl)
{
	int i;

	for (i = 0; i < JOBLIFE_MAX; i++)
		if (jl->j[i].used)
			forget(&jl->j[i]);
}

struct joblife_job *joblife__get(struct joblife *jl, const char *id, bool create)
{
	struct joblife_job *free_e = NULL;
	int i;

	for (i = 0; i < JOBLIFE_MAX; i++) {
		if (!jl->j[i].used) {
			if (!free_e)
				free_e = &jl->j[i];
			continue;
		}
		if (!strcmp(jl->j[i].id, id))
			return &jl->j[i];
	}
	if (!create || !free_e)
		return NULL;
	free_e->l = malloc(sizeof(*free_e->l));
	if (!free_e->l)
		return NULL;
	life__init(free_e->l);
	free_e->used = true;
	snprintf(free_e->id, sizeof(free_e->id), "%s", id);
	return free_e;
}

static void event(struct joblife_job *e, enum joblife_ev kind, uint64_t t_ns, const char *fmt,
		  ...) __attribute__((format(printf, 4, 5)));

static void event(struct joblife_job *e, enum joblife_ev kind, uint64_t t_ns, const char *fmt,
		  ...)
{
	struct joblife_event *ev = &e->ev[e->nev++ % JOBLIFE_EVENTS];
	va_list ap;

	ev->kind = kind;
	ev->t_ns = t_ns;
	ev->t_unix = unix_of(t_ns);
	va_start(ap, fmt);
	vsnprintf(ev->detail, sizeof(ev->detail), fmt, ap);
	va_end(ap);
}

void joblife__generation(struct joblife_job *e)
{
	e->gen++;
	e->run_unix = 0;
}

bool joblife__needs_run(const struct joblife_job *e)
{
	return !e->run_unix;
}

static void cause_text(const struct life_cause *c, char *buf, size_t n)
{
	const char *ph = c->phase[0] ? c->phase : "unknown";

	switch (c->reason) {
	case LIFE_SIGNAL:
		snprintf(buf, n, "rank %d killed by signal %d (%s) in phase %s", c->rank, c->code,
			 sigabbrev_np(c->code) ? sigabbrev_np(c->code) : "?", ph);
		break;
	case LIFE_EXIT_CODE:
		snprintf(buf, n, "rank %d exited with status %d in phase %s", c->rank, c->code, ph);
		break;
	default:
		if (c->rank >= 0)
			snprintf(buf, n, "no step past the hang timeout; rank %d holds the others (%s)",
				 c->rank, ph);
		else
			snprintf(buf, n, "no step past the hang timeout (%s)", ph);
		break;
	}
}

/* Judge a held-back failure: the steps before it are in the life by now. */
static void commit(struct joblife_job *e)
{
	struct life *l = e->l;
	char why[128];

	if (!e->pend)
		return;
	e->pend = false;
	if (!life__fail(l, e->pend_run, e->pcause.at_ns, e->pcause.reason, e->pcause.rank,
			e->pcause.code, e->pcause.phase))
		return;
	cause_text(&l->cause, why, sizeof(why));
	event(e, JL_FAILED, l->cause.at_ns, "%s; %" PRIu64 " step(s) since the last checkpoint "
	      "lost (%.1f s of work); %s %.1f s before", why, l->lost_steps, l->lost_ns / 1e9,
	      l->ckpt_age_known ? "the checkpoint ended" : "no checkpoint seen: the job began",
	      l->ckpt_age_ns / 1e9);
	pr_info("daemon: job '%s' failed: %s", e->id, e->ev[(e->nev - 1) % JOBLIFE_EVENTS].detail);
}

void joblife__step(struct joblife_job *e, double run_unix, uint64_t end_ns, uint64_t dur_ns)
{
	struct life *l = e->l;
	uint64_t run;
	int b;

	if (!e->run_unix)
		e->run_unix = run_unix > 0 ? run_unix : 1;
	run = (uint64_t)(e->run_unix * 1000);
	/* a held-back failure is judged before a step of another incarnation, and before a
	 * hung one's step past the hang: that step is its recovery */
	if (e->pend && (run != e->pend_run ||
			(e->pcause.reason == LIFE_HANG && end_ns > e->pcause.at_ns)))
		commit(e);
	if (l->run != run && l->state == LIFE_RUNNING)
		event(e, JL_STARTED, end_ns, "incarnation %.2f: its first step ended", e->run_unix);
	if (!life__step(l, run, end_ns, dur_ns))
		return;
	if (!l->in_place)
		event(e, JL_STARTED, end_ns, "incarnation %.2f: its first step ended", e->run_unix);
	event(e, JL_RECOVERED, end_ns, "%s %.1f s after the failure",
	      l->in_place ? "the hung job stepped again" : "the relaunched job completed a step",
	      l->recovery_ns / 1e9);
	pr_info("daemon: job '%s' recovered: %s", e->id,
		e->ev[(e->nev - 1) % JOBLIFE_EVENTS].detail);
	for (b = 0; b < JOBLIFE_REC_BUCKETS; b++)
		if (l->recovery_ns / 1e9 <= rec_bounds[b])
			break;
	if (b < JOBLIFE_REC_BUCKETS)
		e->rec_counts[b]++;
	e->rec_sum += l->recovery_ns / 1e9;
	e->rec_n++;
}

void joblife__ckpt(struct joblife_job *e, uint64_t start_ns, uint64_t end_ns)
{
	life__ckpt(e->l, start_ns, end_ns);
}

void joblife__fail(struct joblife *jl, struct joblife_job *e, const struct life_cause *cause,
		   uint64_t now_ns)
{
	struct life *l = e->l;

	if (l->state != LIFE_RUNNING || !l->run)
		return;		/* failed already, or no step of it seen: nothing to judge */
	if (e->pend && e->pcause.at_ns <= cause->at_ns)
		return;		/* a later one: the launcher's cleanup, most likely */
	e->pend = true;
	e->pend_run = l->run;
	e->pcause = *cause;
	e->pend_due_ns = now_ns + jl->settle_ns;
}

void joblife__flush(struct joblife_job *e)
{
	commit(e);
}

void joblife__set_live(struct joblife_job *e, bool live, uint64_t now_ns)
{
	if (live == e->live)
		return;
	e->live = live;
	e->idle_ns = live ? 0 : now_ns;
}

void joblife__tick(struct joblife *jl, uint64_t now_ns)
{
	int i;

	for (i = 0; i < JOBLIFE_MAX; i++) {
		struct joblife_job *e = &jl->j[i];

		if (!e->used)
			continue;
		if (e->pend && now_ns >= e->pend_due_ns)
			commit(e);
		if (life__tick(e->l, now_ns, jl->abandon_ns)) {
			event(e, JL_ABANDONED, now_ns, "not back %.0f s after the failure",
			      (now_ns - e->l->cause.at_ns) / 1e9);
			pr_info("daemon: job '%s' abandoned: %s", e->id,
				e->ev[(e->nev - 1) % JOBLIFE_EVENTS].detail);
		}
		/* a job that ended or was given up on, and has had no ranks for the retain
		 * time; a failed one waits to be abandoned first */
		if (!e->live && !e->idle_ns)
			e->idle_ns = now_ns;	/* never had ranks that we saw */
		if (!e->live && !e->pend && e->l->state != LIFE_FAILED &&
		    now_ns - e->idle_ns >= jl->retain_ns &&
		    (e->l->state == LIFE_RUNNING || now_ns - e->l->cause.at_ns >=
		     jl->abandon_ns + jl->retain_ns))
			forget(e);
	}
}

const char *joblife__event_name(enum joblife_ev k)
{
	switch (k) {
	case JL_STARTED: return "started";
	case JL_FAILED: return "failed";
	case JL_RECOVERED: return "recovered";
	case JL_ABANDONED: return "abandoned";
	}
	return "unknown";
}

/* Entries with an incarnation: a job id that never completed a step has no life to show. */
static bool shown(const struct joblife_job *e)
{
	return e->used && (e->l->run || e->l->state != LIFE_RUNNING || e->nev);
}

void joblife__metrics(const struct joblife *jl, struct prom *p)
{
	static const char *const states[] = { "running", "failed", "abandoned" };
	const struct joblife_job *e;
	int i, k;

	prom__family(p, "train_run_id", "gauge",
		     "The job's incarnation: the start of its newest rank (unix s) when its first "
		     "step ended; it changes on every restart, so changes() counts them.");
	for (i = 0; i < JOBLIFE_MAX; i++) {
		e = &jl->j[i];
		if (shown(e) && e->run_unix)
			prom__sample(p, "train_run_id", LABELS("job_id", e->id), e->run_unix);
	}
	prom__family(p, "rankscope_job_lifecycle_state", "gauge",
		     "1 for the job's state: running, failed (waiting for it to come back) or "
		     "abandoned (not back within --abandon-after).");
	for (i = 0; i < JOBLIFE_MAX; i++) {
		e = &jl->j[i];
		if (!shown(e))
			continue;
		for (k = 0; k < 3; k++)
			prom__sample(p, "rankscope_job_lifecycle_state",
				     LABELS("job_id", e->id, "state", states[k]),
				     (int)e->l->state == k);
	}
	prom__family(p, "rankscope_job_failures_total", "counter",
		     "Failures of the job: a rank killed by a signal, a rank's non-zero exit, or "
		     "no step past the hang timeout.");
	for (i = 0; i < JOBLIFE_MAX; i++) {
		e = &jl->j[i];
		if (!shown(e))
			continue;
		for (k = 0; k < LIFE_REASONS; k++)
			prom__sample(p, "rankscope_job_failures_total",
				     LABELS("job_id", e->id, "reason", life__reason_name(k)),
				     e->l->failures[k]);
	}
	prom__family(p, "rankscope_job_recoveries_total", "counter",
		     "Times the job completed a step again after a failure.");
	for (i = 0; i < JOBLIFE_MAX; i++) {
		e = &jl->j[i];
		if (shown(e))
			prom__sample(p, "rankscope_job_recoveries_total", LABELS("job_id", e->id),
				     e->l->recoveries);
	}
	prom__family(p, "job_recovery_seconds", "gauge",
		     "The last recovery: from the failure to the first completed step after it.");
	for (i = 0; i < JOBLIFE_MAX; i++) {
		e = &jl->j[i];
		if (shown(e) && e->l->recoveries)
			prom__sample(p, "job_recovery_seconds", LABELS("job_id", e->id),
				     e->l->recovery_ns / 1e9);
	}
	prom__family(p, "rankscope_job_recovery_seconds", "histogram",
		     "Every recovery: from the failure to the first completed step after it.");
	for (i = 0; i < JOBLIFE_MAX; i++) {
		e = &jl->j[i];
		if (shown(e))
			prom__histogram(p, "rankscope_job_recovery_seconds", LABELS("job_id", e->id),
					e->rec_counts, rec_bounds, JOBLIFE_REC_BUCKETS, e->rec_sum,
					e->rec_n);
	}
	prom__family(p, "job_checkpoint_age_at_failure_seconds", "gauge",
		     "At the last failure: the time since the last checkpoint ended (since the "
		     "job's first step when none was seen).");
	for (i = 0; i < JOBLIFE_MAX; i++) {
		e = &jl->j[i];
		if (shown(e) && (e->l->failures[0] + e->l->failures[1] + e->l->failures[2]))
			prom__sample(p, "job_checkpoint_age_at_failure_seconds",
				     LABELS("job_id", e->id), e->l->ckpt_age_ns / 1e9);
	}
	prom__family(p, "rankscope_job_lost_step_seconds_total", "counter",
		     "Work lost at failures: the steps completed after the last checkpoint ended, "
		     "times their duration (a hang's only once it ends in a restart or abandon).");
	for (i = 0; i < JOBLIFE_MAX; i++) {
		e = &jl->j[i];
		if (shown(e))
			prom__sample(p, "rankscope_job_lost_step_seconds_total",
				     LABELS("job_id", e->id), e->l->lost_ns_total / 1e9);
	}
	prom__family(p, "rankscope_job_lost_steps_total", "counter",
		     "Steps lost at failures (see rankscope_job_lost_step_seconds_total).");
	for (i = 0; i < JOBLIFE_MAX; i++) {
		e = &jl->j[i];
		if (shown(e))
			prom__sample(p, "rankscope_job_lost_steps_total", LABELS("job_id", e->id),
				     e->l->lost_steps_total);
	}
}

void joblife__json(const struct joblife *jl, struct json *j, uint64_t now_ns)
{
	const struct joblife_job *e;
	const struct life *l;
	unsigned int k, first;
	int i;

	json__arr_begin(j);
	for (i = 0; i < JOBLIFE_MAX; i++) {
		e = &jl->j[i];
		if (!shown(e))
			continue;
		l = e->l;
		json__obj_begin(j);
		json__kstr(j, "type", "job");
		json__kstr(j, "job", e->id);
		json__kstr(j, "state", life__state_name(l->state));
		json__key(j, "ranks_here");
		json__bool(j, e->live);
		if (e->run_unix)
			json__kunix(j, "run_id", e->run_unix);
		json__key(j, "failures");
		json__obj_begin(j);
		for (k = 0; k < LIFE_REASONS; k++)
			json__kuint(j, life__reason_name(k), l->failures[k]);
		json__obj_end(j);
		json__kuint(j, "recoveries", l->recoveries);
		json__kuint(j, "lost_steps_total", l->lost_steps_total);
		json__kdouble(j, "lost_step_seconds_total", l->lost_ns_total / 1e9);
		if (l->failures[0] + l->failures[1] + l->failures[2]) {
			char why[128];

			cause_text(&l->cause, why, sizeof(why));
			json__key(j, "last_failure");
			json__obj_begin(j);
			json__kstr(j, "reason", life__reason_name(l->cause.reason));
			json__kint(j, "rank", l->cause.rank);
			if (l->cause.reason == LIFE_SIGNAL)
				json__kint(j, "signal", l->cause.code);
			else if (l->cause.reason == LIFE_EXIT_CODE)
				json__kint(j, "exit_code", l->cause.code);
			json__kstr(j, "phase", l->cause.phase);
			json__kunix(j, "at", unix_of(l->cause.at_ns));
			json__kdouble(j, "ago_seconds", now_ns > l->cause.at_ns ?
				      (now_ns - l->cause.at_ns) / 1e9 : 0);
			json__kdouble(j, "checkpoint_age_seconds", l->ckpt_age_ns / 1e9);
			json__key(j, "checkpoint_seen");
			json__bool(j, l->ckpt_age_known);
			json__kuint(j, "lost_steps", l->lost_steps);
			json__kdouble(j, "lost_step_seconds", l->lost_ns / 1e9);
			json__kstr(j, "detail", why);
			json__obj_end(j);
		}
		if (l->recoveries) {
			json__key(j, "last_recovery");
			json__obj_begin(j);
			json__kdouble(j, "seconds", l->recovery_ns / 1e9);
			json__kunix(j, "at", unix_of(l->recovered_at_ns));
			json__key(j, "in_place");
			json__bool(j, l->in_place);
			json__obj_end(j);
		}
		if (e->pend)
			json__kstr(j, "pending", "a failure is being judged (its last steps settle)");
		json__key(j, "timeline");
		json__arr_begin(j);
		first = e->nev > JOBLIFE_EVENTS ? e->nev - JOBLIFE_EVENTS : 0;
		for (k = first; k < e->nev; k++) {
			const struct joblife_event *ev = &e->ev[k % JOBLIFE_EVENTS];

			json__obj_begin(j);
			json__kunix(j, "t", ev->t_unix);
			json__kstr(j, "event", joblife__event_name(ev->kind));
			json__kstr(j, "detail", ev->detail);
			json__obj_end(j);
		}
		json__arr_end(j);
		json__obj_end(j);
	}
	json__arr_end(j);
}
