// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Step, rule and verdict lines, in JSON and for people: the daemon's and the hub's. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "report.h"

const char *report__dur(double ns, char *buf, size_t n)
{
	if (!(ns > 0))
		snprintf(buf, n, "-");
	else if (ns < 1e3)
		snprintf(buf, n, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, n, "%.1fus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, n, "%.1fms", ns / 1e6);
	else
		snprintf(buf, n, "%.2fs", ns / 1e9);
	return buf;
}

static void phases_obj(struct json *j, const struct phases *ph)
{
	int p;

	json__key(j, "phases");
	json__obj_begin(j);
	for (p = 0; p < PH_MAX; p++) {
		json__kuint(j, steps__phase_name(p), ph->ns[p]);
		if (p == PH_COMM) {
			json__kuint(j, "comm_wait", ph->comm_wait);
			json__kuint(j, "comm_transfer", ph->comm_transfer);
		}
	}
	json__obj_end(j);
}

void report__step(struct json *j, const char *job, int rank, pid_t pid, const struct job_step *st,
		  const char *rule, double confidence, const struct comm_use *comms, int ncomms)
{
	int i, k;

	json__obj_begin(j);
	json__kstr(j, "type", "step");
	json__kstr(j, "job", job);
	json__kint(j, "rank", rank);
	json__kint(j, "pid", pid);
	json__kuint(j, "step", st->index);
	json__kuint(j, "start_ns", st->start_ns);
	json__kuint(j, "dur_ns", st->dur_ns);
	phases_obj(j, &st->ph);
	/* of sched_delay, the part inside collectives: with comm, the time inside them */
	json__kuint(j, "comm_sched_ns", st->ph.comm_sched);
	/* of io, the part in writes and flushes (a checkpoint's) */
	json__kuint(j, "io_write_ns", st->ph.io_write);
	json__kuint(j, "worker_io_ns", st->worker_io_ns);
	json__kuint(j, "worker_io_bytes", st->worker_io_bytes);
	json__kuint(j, "collectives", st->collectives);
	json__kuint(j, "inside_ns", st->inside_ns);
	/* the step's collectives by communicator, named as in /api/v1/ranks */
	json__key(j, "communicators");
	json__arr_begin(j);
	for (i = 0; i < st->ncomm; i++) {
		for (k = 0; k < ncomms && comms[k].hash != st->comm[i].comm; k++)
			;
		json__obj_begin(j);
		json__kstr(j, "name", k < ncomms ? comms[k].name : NULL);
		json__kuint(j, "ops", st->comm[i].ops);
		json__kuint(j, "bytes", st->comm[i].bytes);
		json__kuint(j, "inside_ns", st->comm[i].inside_ns);
		if (st->comm[i].sig) {
			char hex[17];

			snprintf(hex, sizeof(hex), "%016" PRIx64, st->comm[i].sig);
			json__kstr(j, "sig", hex);
			json__kstr(j, "sig_ops", st->comm[i].sig_ops);
		}
		json__obj_end(j);
	}
	json__arr_end(j);
	if (st->comm_other_ops)
		json__kuint(j, "communicators_other_ops", st->comm_other_ops);
	if (st->has_gpu) {
		json__kuint(j, "gpu_busy_ns", st->gpu_busy_ns);
		json__kuint(j, "gpu_idle_ns", st->dur_ns > st->gpu_busy_ns ?
					       st->dur_ns - st->gpu_busy_ns : 0);
		json__kuint(j, "gpu_nccl_ns", st->gpu_nccl_ns);
	}
	if (st->stages) {
		json__kint(j, "stage", st->stage);
		json__kint(j, "stages", st->stages);
		json__kint(j, "micro_batches", st->micro);
		json__kuint(j, "p2p_ns", st->p2p_ns);
	}
	json__kstr(j, "rule", rule);
	json__kdouble(j, "rule_confidence", confidence);
	json__obj_end(j);
}

void report__rule(struct json *j, const char *job, const char *rule, int period,
		  double confidence, bool changed, const char *note)
{
	json__obj_begin(j);
	json__kstr(j, "type", "rule");
	json__kstr(j, "job", job);
	json__kstr(j, "rule", rule);
	json__kint(j, "period", period);
	json__kdouble(j, "confidence", confidence);
	json__key(j, "changed");
	json__bool(j, changed);
	json__kstr(j, "note", note);
	json__obj_end(j);
}

void report__cost(struct json *j, const char *job, uint64_t step, const struct cost_step *cs,
		  int rank)
{
	json__obj_begin(j);
	json__kstr(j, "type", "cost");
	json__kstr(j, "job", job);
	json__kuint(j, "step", step);
	json__key(j, "culprit_rank");
	if (cs->culprit >= 0)
		json__int(j, rank);
	else
		json__null(j);
	json__kstr(j, "phase", cs->culprit >= 0 ? steps__phase_name(cs->phase) : NULL);
	json__kuint(j, "wait_ns", cs->wait_ns);
	json__kuint(j, "step_ns", cs->real_ns);
	json__kuint(j, "whatif_step_ns", cs->whatif_ns);
	json__kuint(j, "rank_ns", cs->rank_ns);
	json__obj_end(j);
}

void report__cost_total(struct json *j, const char *job, const struct cost *c,
			double usd_per_gpu_h, int gpus_per_rank)
{
	struct cost_sum sum;
	int i;

	cost__sum(c, 0, usd_per_gpu_h, gpus_per_rank, &sum);
	json__obj_begin(j);
	json__kstr(j, "type", "cost_total");
	json__kstr(j, "job", job);
	json__kuint(j, "steps", c->steps);
	json__kuint(j, "rank_ns", c->rank_ns);
	json__kuint(j, "wait_ns", c->wait_ns);
	json__kdouble(j, "slowdown_ratio", sum.slowdown);	/* the last COST_WINDOW steps */
	json__key(j, "culprits");
	json__arr_begin(j);
	for (i = 0; i < c->nc; i++) {
		json__obj_begin(j);
		json__key(j, "rank");
		if (c->c[i].rank >= 0)
			json__int(j, c->c[i].rank);
		else
			json__null(j);	/* the overflow slot */
		json__kstr(j, "phase", c->c[i].rank >= 0 ? steps__phase_name(c->c[i].phase) : NULL);
		json__kuint(j, "wait_ns", c->c[i].wait_ns);
		json__kuint(j, "steps", c->c[i].steps);
		json__key(j, "dollars");
		if (usd_per_gpu_h > 0)
			json__double(j, cost__dollars(c->c[i].wait_ns, usd_per_gpu_h, gpus_per_rank));
		else
			json__null(j);
		json__obj_end(j);
	}
	json__arr_end(j);
	json__obj_end(j);
}

/* "cost": what stragglers cost the job over the verdict's last steps and hour (cost.h). */
static void verdict_cost(struct json *j, const struct cost_sum *c)
{
	char text[320];

	json__key(j, "cost");
	json__obj_begin(j);
	bool cul = c->rank >= 0 && c->late_steps;	/* zeroed: none */

	json__key(j, "culprit_rank");
	if (cul)
		json__int(j, c->rank);
	else
		json__null(j);
	json__kstr(j, "phase", cul ? steps__phase_name(c->phase) : NULL);
	json__kint(j, "steps", c->steps);
	json__kint(j, "culprit_steps", c->late_steps);
	json__kdouble(j, "slowdown_ratio", c->slowdown);
	json__kuint(j, "median_step_ns", c->real_ns);
	json__kuint(j, "whatif_step_ns", c->whatif_ns);
	json__kdouble(j, "lost_rank_seconds_last_hour", c->hour_rank_s);
	json__kdouble(j, "lost_fraction_last_hour", c->hour_frac);
	json__key(j, "dollars_last_hour");
	if (c->usd_per_gpu_h > 0)
		json__double(j, cost__dollars(c->hour_rank_s * 1e9, c->usd_per_gpu_h,
					      c->gpus_per_rank));
	else
		json__null(j);
	cost__text(c, text, sizeof(text));
	json__kstr(j, "text", text);
	json__obj_end(j);
}

void report__verdict(struct json *j, const struct job_verdict *v, const char *job, int rank,
		     pid_t pid)
{
	int i;

	json__obj_begin(j);
	json__kstr(j, "type", "verdict");
	json__kstr(j, "job", job);
	json__kuint(j, "t_ns", v->t_ns);
	json__kuint(j, "step", v->step);
	json__key(j, "window");
	json__arr_begin(j);
	json__uint(j, v->first);
	json__uint(j, v->last);
	json__arr_end(j);
	json__kstr(j, "class", detect__class_name(v->cls));
	json__kint(j, "rank", rank);
	if (pid)
		json__kint(j, "pid", pid);
	json__key(j, "persistent");
	json__bool(j, v->persistent);
	/* late by a lot in a few steps only (a long batch every k-th step): evidence says how
	 * many of the window's steps */
	json__key(j, "intermittent");
	json__bool(j, v->v.intermittent);
	/* a different rank late each step, in the same phase: no rank (-1) */
	json__key(j, "imbalance");
	json__bool(j, v->v.imbalance);
	json__kint(j, "skew_ns", v->v.skew_ns);
	json__kstr(j, "phase", (v->col >= 0 || v->v.imbalance) &&
				(v->cls <= V_CPU_CONTENTION || v->cls == V_CHECKPOINT) ?
				steps__phase_name(v->v.phase) : NULL);
	json__kint(j, "phase_excess_ns", v->v.phase_excess_ns);
	json__kuint(j, "post_arrival_ns", v->v.post_arrival_ns);
	json__kint(j, "ranks_seen", v->ranks_seen);
	json__key(j, "world_size");
	if (v->world_size > 0)
		json__int(j, v->world_size);
	else
		json__null(j);
	/* judged against its own tensor- or pipeline-parallel group, not the whole job */
	json__key(j, "groups");
	if (v->ngroup) {
		json__arr_begin(j);
		json__arr_begin(j);
		for (i = 0; i < v->ngroup; i++) {
			if (v->group[i] >= 0) {
				json__int(j, v->group[i]);
			} else if (i + 1 < v->ngroup) {
				json__arr_end(j);
				json__arr_begin(j);
			}
		}
		json__arr_end(j);
		json__arr_end(j);
	} else {
		json__null(j);
	}
	json__key(j, "pipeline");
	if (v->pp.stages) {
		int i;

		json__obj_begin(j);
		json__kint(j, "stages", v->pp.stages);
		json__key(j, "micro_batches");
		if (v->pp.micro)
			json__int(j, v->pp.micro);
		else
			json__null(j);
		json__key(j, "theoretical_bubble");
		if (v->pp.micro)
			json__double(j, v->pp.theory);
		else
			json__null(j);
		json__key(j, "stage_bubble");
		json__arr_begin(j);
		for (i = 0; i < v->pp.stages && i < JOB_PP_SHOW; i++)
			json__double(j, v->pp.bubble[i]);
		json__arr_end(j);
		json__key(j, "stage_busy_ns");
		json__arr_begin(j);
		for (i = 0; i < v->pp.stages && i < JOB_PP_SHOW; i++)
			json__uint(j, v->pp.busy_ns[i]);
		json__arr_end(j);
		json__key(j, "excess");
		json__bool(j, v->pp.excess);
		json__key(j, "balanced");
		json__bool(j, v->pp.balanced);
		json__obj_end(j);
	} else {
		json__null(j);
	}
	json__key(j, "evidence");
	json__obj_begin(j);
	json__kuint(j, "late_phase_ns", v->v.late_phase_ns);
	json__kuint(j, "peer_median_phase_ns", v->v.peer_phase_ns);
	json__kuint(j, "median_step_ns", v->v.step_ns);
	json__kint(j, "steps", v->v.nsteps);
	if (v->v.intermittent || v->v.imbalance) {
		json__kint(j, "steps_hit", v->v.hits);
		json__kdouble(j, "late_share", v->v.nsteps ? (double)v->v.hits / v->v.nsteps : 0);
	}
	json__kstr(j, "detail", v->detail);	/* stable: "" when there is nothing to add */
	if (v->stacks[0].text[0] || v->stacks[1].text[0]) {
		json__key(j, "stacks");
		json__arr_begin(j);
		for (i = 0; i < 2; i++) {
			if (!v->stacks[i].text[0])
				continue;
			json__obj_begin(j);
			json__kint(j, "rank", v->stacks[i].rank);
			json__kstr(j, "role", i ? "peer" : "rank");
			json__kstr(j, "stack", v->stacks[i].text);
			json__obj_end(j);
		}
		json__arr_end(j);
	}
	json__obj_end(j);
	json__kstr(j, "experiment", detect__experiment(v->cls));
	verdict_cost(j, &v->cost);
	json__obj_end(j);
}

void report__verdict_text(FILE *f, const struct job_verdict *v, int rank, char *buf, size_t n)
{
	char a[16], b[16], c[16], d[16], e[16], im[48] = "";
	size_t len;

	switch (v->cls) {
	case V_NONE:
		snprintf(buf, n, "verdict: none, the job is healthy (steps %llu-%llu; median step %s, "
			 "largest arrival skew %s)", (unsigned long long)v->first,
			 (unsigned long long)v->last, report__dur(v->v.step_ns, a, sizeof(a)),
			 report__dur(v->v.skew_ns, b, sizeof(b)));
		break;
	case V_COMMUNICATION:
		snprintf(buf, n, "verdict: communication: arrivals are aligned but collectives take %s "
			 "after the last arrival (median step %s)%s%s",
			 report__dur(v->v.post_arrival_ns, a, sizeof(a)),
			 report__dur(v->v.step_ns, b, sizeof(b)), v->detail[0] ? "; " : "",
			 v->detail);
		break;
	case V_DIVERGENT:
	case V_HANG:
	case V_RANK_EXITED:
		snprintf(buf, n, "verdict: %s on rank %d: %s", detect__class_name(v->cls), rank,
			 v->detail);
		break;
	case V_REMOTE_WAIT:
		snprintf(buf, n, "verdict: remote_wait: %s", v->detail);
		break;
	case V_BUBBLE:
		snprintf(buf, n, "verdict: pipeline_bubble: %s (median step %s)", v->detail,
			 report__dur(v->v.step_ns, a, sizeof(a)));
		break;
	default:
		if (v->v.imbalance) {
			snprintf(buf, n, "verdict: %s imbalance, no one rank: in %d of %d steps the "
				 "latest rank (a different one from step to step) arrives %s after its "
				 "peers' median, its %s %s over theirs (work that varies by rank, such as "
				 "sequence lengths)", detect__class_name(v->cls), v->v.hits,
				 v->v.nsteps, report__dur(v->v.skew_ns, a, sizeof(a)),
				 steps__phase_name(v->v.phase),
				 report__dur(v->v.phase_excess_ns, b, sizeof(b)));
			break;
		}
		if (v->v.intermittent)
			snprintf(im, sizeof(im), ", intermittent: in %d of %d steps", v->v.hits,
				 v->v.nsteps);
		snprintf(buf, n, "verdict: %s on rank %d%s%s: it arrives %s after its peers' median; "
			 "its %s is %s vs the peers' %s (+%s); collectives take %s after the last "
			 "arrival%s%s", detect__class_name(v->cls), rank,
			 v->persistent ? " (persistent)" : "", im,
			 report__dur(v->v.skew_ns, a, sizeof(a)), steps__phase_name(v->v.phase),
			 v->v.late_phase_ns ? report__dur(v->v.late_phase_ns, b, sizeof(b)) : "0",
			 v->v.peer_phase_ns ? report__dur(v->v.peer_phase_ns, c, sizeof(c)) : "0",
			 report__dur(v->v.phase_excess_ns, d, sizeof(d)),
			 report__dur(v->v.post_arrival_ns, e, sizeof(e)), v->detail[0] ? "; " : "",
			 v->detail);
		break;
	}
	len = strlen(buf);
	if (v->ngroup && len < n) {
		const char *sep = " ranks ";
		int i;

		len += snprintf(buf + len, n - len, " [judged in its groups:");
		for (i = 0; i < v->ngroup && len < n; i++) {
			if (v->group[i] < 0) {
				sep = "; ranks ";
				continue;
			}
			len += snprintf(buf + len, n - len, "%s%d", sep, v->group[i]);
			sep = ",";
		}
		if (len < n)
			len += snprintf(buf + len, n - len, "]");
		if (len > n - 1)
			len = n - 1;
	}
	/* a node's view of a job that runs on others too says how much of it it saw */
	if (v->world_size > v->ranks_seen && v->cls != V_REMOTE_WAIT && len < n)
		snprintf(buf + len, n - len, " [%d of %d ranks seen here]", v->ranks_seen,
			 v->world_size);
	fprintf(f, "%s\n", buf);
	for (int i = 0; i < 2; i++)
		if (v->stacks[i].text[0])
			fprintf(f, "  stack of rank %d%s: %s\n", v->stacks[i].rank,
				i ? " (a peer)" : "", v->stacks[i].text);
	cost__text(&v->cost, buf, n);
	if (buf[0])
		fprintf(f, "  cost: %s\n", buf);
}


char *report__phase_bar(const struct phases *ph, uint64_t dur, char *buf, int width)
{
	static const char letter[PH_MAX] = {
		[PH_COMPUTE] = 'c', [PH_SCHED_DELAY] = 's', [PH_COMM] = 'm', [PH_GPU_WAIT] = 'g',
		[PH_IO] = 'i', [PH_INPUT_WAIT] = 'n', [PH_OTHER] = 'o',
	};
	int cells[PH_MAX], p, k, used = 0, big = 0;

	if (width < 1 || !dur) {
		buf[0] = '\0';
		return buf;
	}
	for (p = 0; p < PH_MAX; p++) {
		cells[p] = (int)((double)ph->ns[p] / dur * width + 0.5);
		if (!cells[p] && ph->ns[p] * 50 >= dur)	/* 2% or more: visible */
			cells[p] = 1;
		used += cells[p];
		if (cells[p] > cells[big])
			big = p;
	}
	cells[big] += width - used;	/* rounding goes to the largest */
	if (cells[big] < 0)
		cells[big] = 0;
	for (p = 0, k = 0; p < PH_MAX; p++)
		while (cells[p]-- > 0 && k < width)
			buf[k++] = letter[p];
	buf[k] = '\0';
	return buf;
}

void report__steps_text(FILE *f, const int *rank, const struct job_step *const *last, int n,
			uint64_t steps, const char *rule, int period, double confidence,
			double attached_s)
{
	char bar[41], d[16];
	int i;

	for (i = 0; i < n; i++) {
		if (!last[i] || !last[i]->dur_ns)
			continue;
		fprintf(f, "rank %-4d step %-8llu %9s [%s]\n", rank[i],
			(unsigned long long)last[i]->index, report__dur(last[i]->dur_ns, d, sizeof(d)),
			report__phase_bar(&last[i]->ph, last[i]->dur_ns, bar, 40));
	}
	if (rule && rule[0])
		fprintf(f, "progress: %llu rank-steps, steps by %s (period %d, confidence %.2f); "
			"%.0f s attached; c compute s sched m comm g gpu_wait i io n input o other\n",
			(unsigned long long)steps, rule, period, confidence, attached_s);
	else
		fprintf(f, "progress: %.0f s attached; looking for step boundaries\n", attached_s);
}

/* What stragglers cost over the whole run: each culprit's rank-time waited, with dollars. */
static void diag_cost(FILE *f, const struct cost *c, double usd, int gpus)
{
	char a[16], b[16];
	struct cost_sum sum;
	int i;

	cost__sum(c, 0, usd, gpus, &sum);
	if (!c->steps)
		return;
	fprintf(f, "straggler cost: %.1f rank-seconds waited of %.1f in %llu steps (%.1f%%)",
		c->wait_ns / 1e9, c->rank_ns / 1e9, (unsigned long long)c->steps,
		c->rank_ns ? 100.0 * c->wait_ns / c->rank_ns : 0.0);
	if (sum.slowdown > 1.005)
		fprintf(f, "; the last steps took %s, %s without their straggler",
			report__dur(sum.real_ns, a, sizeof(a)),
			report__dur(sum.whatif_ns, b, sizeof(b)));
	fprintf(f, "\n");
	for (i = 0; i < c->nc; i++) {
		if (c->c[i].rank >= 0)
			fprintf(f, "  rank %d (%s): %.1f rank-seconds over %llu steps", c->c[i].rank,
				steps__phase_name(c->c[i].phase), c->c[i].wait_ns / 1e9,
				(unsigned long long)c->c[i].steps);
		else
			fprintf(f, "  other ranks: %.1f rank-seconds", c->c[i].wait_ns / 1e9);
		if (usd > 0)
			fprintf(f, ", ~$%.2f at $%.2f/GPU-h", cost__dollars(c->c[i].wait_ns, usd, gpus),
				usd);
		fprintf(f, "\n");
	}
}

void report__diagnose(FILE *f, const struct report_diag *d)
{
	char a[16], line[512];
	int i, p;

	fprintf(f, "rankscope diagnose: %d rank%s", d->ncols, d->ncols == 1 ? "" : "s");
	/* a node's part of a job on several says how much of it it sees */
	if (d->world > d->ncols)
		fprintf(f, " of %d in the job (the others are not observed here)", d->world);
	fprintf(f, ", %llu rank-steps", (unsigned long long)d->steps_seen);
	if (d->rule && d->rule[0])
		fprintf(f, "; steps by %s (period %d, confidence %.2f)\n", d->rule, d->period,
			d->conf);
	else
		fprintf(f, "; no step boundary found (too few collectives?)\n");
	if (d->steps_seen) {
		fprintf(f, "\nlast step per rank:\n  %-5s %-9s", "RANK", "DURATION");
		for (p = 0; p < PH_MAX; p++)
			fprintf(f, " %-11s", steps__phase_name(p));
		fprintf(f, "\n");
		for (i = 0; i < d->ncols; i++) {
			const struct job_step *st = d->last[i];

			if (!st || !st->dur_ns)
				continue;
			fprintf(f, "  %-5d %-9s", d->rank[i], report__dur(st->dur_ns, a, sizeof(a)));
			for (p = 0; p < PH_MAX; p++)
				fprintf(f, " %-11s", report__dur(st->ph.ns[p], a, sizeof(a)));
			fprintf(f, "\n");
		}
	}
	fprintf(f, "\n");
	/* what was lost makes every line below less sure: said before them */
	if (d->dropped)
		fprintf(f, "events lost: %llu of %llu (%.1f%%; the ring buffer was full: raise "
			"--ringbuf-kb or lower --drain-ms); steps and the verdict below are built "
			"from what remained and may miss or merge steps\n\n",
			(unsigned long long)d->dropped, (unsigned long long)d->attempted,
			d->attempted ? 100.0 * d->dropped / d->attempted : 0.0);
	if (!d->worst) {
		fprintf(f, "verdict: none yet (fewer than %d steps seen on every rank)\n", d->window);
		return;
	}
	report__verdict_text(f, d->worst, d->worst_rank, line, sizeof(line));
	fprintf(f, "experiment: %s\n", detect__experiment(d->worst->cls));
	if (d->cost)
		diag_cost(f, d->cost, d->usd, d->gpus);
}
