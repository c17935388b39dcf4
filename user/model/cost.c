// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* What a straggler costs: the rank-time its peers wait for it and the step without it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "hist.h"
#include "prom.h"

/* The phases a late rank's time can go to (comm is the waiting, not a cause). */
static const enum phase cause_phases[] = { PH_INPUT_WAIT, PH_IO, PH_COMPUTE, PH_SCHED_DELAY,
					   PH_GPU_WAIT, PH_OTHER };

static enum phase culprit_phase(const struct step_obs *row, int n, int cul, uint64_t *tmp)
{
	enum phase best = PH_COMPUTE;
	int64_t best_e = INT64_MIN;
	size_t i;
	int c, m;

	for (i = 0; i < sizeof(cause_phases) / sizeof(cause_phases[0]); i++) {
		enum phase ph = cause_phases[i];
		int64_t e;

		for (m = 0, c = 0; c < n; c++)
			if (c != cul && row[c].present)
				tmp[m++] = row[c].ph.ns[ph];
		e = (int64_t)row[cul].ph.ns[ph] - (int64_t)detect__median(tmp, m);
		if (e > best_e) {
			best_e = e;
			best = ph;
		}
	}
	return best;
}

/*
 * A rank's time waiting at the step's collectives: with GPU timing for every rank, the device's
 * wait for the last kernel to start (detect__split_comm); else its time inside them, as the
 * hub's node lines give it. Time inside, not the host's split: in tensor- and data-parallel
 * groups a peer waits for the late rank at another group's collective than the split joins.
 */
static uint64_t waited(const struct step_obs *row, int c, bool gpu)
{
	return gpu ? row[c].ph.comm_wait : steps__inside(&row[c].ph);
}

void cost__step(const struct step_obs *row, int n, struct cost_step *out)
{
	uint64_t *tmp, floor, med, least;
	int c, m = 0, cul = -1;
	bool gpu = true;

	memset(out, 0, sizeof(*out));
	out->culprit = -1;
	tmp = calloc(n > 0 ? n : 1, sizeof(*tmp));
	if (!tmp)
		return;
	for (c = 0; c < n; c++)
		if (row[c].present && !row[c].gpu_arrival_ns)
			gpu = false;
	for (c = 0; c < n; c++) {
		if (!row[c].present)
			continue;
		tmp[m++] = row[c].dur_ns;
		out->rank_ns += row[c].dur_ns;
		if (cul < 0 || waited(row, c, gpu) < waited(row, cul, gpu))
			cul = c;
	}
	if (!m)
		goto out;
	out->real_ns = out->whatif_ns = detect__median(tmp, m);
	/* a pipeline's stages wait for each other by schedule: not a straggler's cost */
	if (m < 2 || row[cul].stages > 1)
		goto out;
	for (m = 0, c = 0; c < n; c++)
		if (c != cul && row[c].present)
			tmp[m++] = waited(row, c, gpu) - waited(row, cul, gpu);
	med = detect__median(tmp, m);
	floor = out->real_ns * COST_NOISE_FRAC;
	if (floor < COST_NOISE_MIN_NS)
		floor = COST_NOISE_MIN_NS;
	if (med < floor)
		goto out;
	out->culprit = cul;
	/* without it the collectives would still wait for the last of its peers: the step
	 * saves what that one waited for it (the least a peer waited) */
	for (least = tmp[0], c = 0; c < m; c++) {
		out->wait_ns += tmp[c];
		least = tmp[c] < least ? tmp[c] : least;
	}
	out->whatif_ns = least < out->real_ns ? out->real_ns - least : 0;
	out->phase = culprit_phase(row, n, cul, tmp);
out:
	free(tmp);
}

static struct cost_culprit *culprit_slot(struct cost *c, int rank, enum phase ph)
{
	int i;

	for (i = 0; i < c->nc; i++)
		if (c->c[i].rank == rank && c->c[i].phase == ph)
			return &c->c[i];
	if (c->nc < COST_CULPRITS - 1) {
		c->c[c->nc] = (struct cost_culprit){ .rank = rank, .phase = ph };
		return &c->c[c->nc++];
	}
	/* the last slot: every other (rank, phase), so the totals stay whole */
	if (c->nc == COST_CULPRITS - 1)
		c->c[c->nc++] = (struct cost_culprit){ .rank = -1, .phase = PH_OTHER };
	return &c->c[COST_CULPRITS - 1];
}

/* Count entry e (a step of the window ring) as straggler wait. */
static void count(struct cost *c, struct cost_entry *e, uint64_t minute)
{
	__typeof__(c->m[0]) *m = &c->m[minute % COST_MINUTES];
	struct cost_culprit *k;

	e->counted = true;
	c->wait_ns += e->wait_ns;
	if (m->minute == minute)
		m->wait_ns += e->wait_ns;
	k = culprit_slot(c, e->rank, e->phase);
	k->wait_ns += e->wait_ns;
	k->steps++;
}

void cost__add(struct cost *c, const struct cost_step *s, int rank, uint64_t now_ns)
{
	uint64_t minute = now_ns / 60000000000ULL + 1;
	struct cost_entry *e = &c->w[c->nw % COST_WINDOW];
	__typeof__(c->m[0]) *m = &c->m[minute % COST_MINUTES];

	*e = (struct cost_entry){ .real_ns = s->real_ns, .whatif_ns = s->whatif_ns,
				  .wait_ns = s->wait_ns, .rank = s->culprit >= 0 ? rank : -1,
				  .phase = s->phase };
	/* a straggler charged at the step before: its step would be the what-if */
	hist__add(&c->whatif, e->rank >= 0 && e->rank == c->charged && c->charged_nw == c->nw + 1 ?
		e->whatif_ns : e->real_ns);
	c->nw++;
	c->steps++;
	c->rank_ns += s->rank_ns;
	if (m->minute != minute) {
		m->minute = minute;
		m->wait_ns = m->rank_ns = 0;
	}
	m->rank_ns += s->rank_ns;
}

void cost__charge(struct cost *c, int rank, uint64_t now_ns)
{
	uint64_t minute = now_ns / 60000000000ULL + 1, i;

	c->charged = rank;
	c->charged_nw = c->nw + 1;	/* 0: never */
	for (i = 1; rank >= 0 && i <= COST_RECENT && i <= c->nw; i++) {
		struct cost_entry *p = &c->w[(c->nw - i) % COST_WINDOW];

		if (p->rank == rank && !p->counted)
			count(c, p, minute);
	}
}

void cost__sum(const struct cost *c, uint64_t now_ns, double usd_per_gpu_h, int gpus_per_rank,
	       struct cost_sum *o)
{
	uint64_t real = 0, whatif = 0, r[COST_WINDOW], wi[COST_WINDOW], wait = 0, rank_ns = 0;
	uint64_t minute = now_ns / 60000000000ULL + 1;
	int n = c->nw < COST_WINDOW ? (int)c->nw : COST_WINDOW, i, k, best = 0, nd;
	int ph[PH_MAX] = {}, dr[COST_WINDOW], dn[COST_WINDOW];

	memset(o, 0, sizeof(*o));
	o->rank = -1;
	o->slowdown = 1;
	o->usd_per_gpu_h = usd_per_gpu_h;
	o->gpus_per_rank = gpus_per_rank > 0 ? gpus_per_rank : 1;
	o->steps = n;
	for (i = 0; i < n; i++) {
		real += r[i] = c->w[i].real_ns;
		whatif += wi[i] = c->w[i].counted ? c->w[i].whatif_ns : c->w[i].real_ns;
	}
	if (n) {
		o->real_ns = detect__median(r, n);
		o->whatif_ns = detect__median(wi, n);
	}
	if (whatif)
		o->slowdown = (double)real / whatif;
	/* the culprit of most steps with one, the first seen among equals: counted per distinct
	 * rank (a window names few), not each step against all (judged every step) */
	for (i = 0, nd = 0; i < n; i++) {
		if (!c->w[i].counted)
			continue;
		for (k = 0; k < nd && dr[k] != c->w[i].rank; k++)
			;
		if (k == nd) {
			dr[nd] = c->w[i].rank;
			dn[nd++] = 0;
		}
		dn[k]++;
	}
	for (k = 0; k < nd; k++)
		if (dn[k] > best) {
			best = dn[k];
			o->rank = dr[k];
		}
	o->late_steps = best;
	for (i = 0; i < n; i++)
		if (o->rank >= 0 && c->w[i].counted && c->w[i].rank == o->rank)
			ph[c->w[i].phase]++;
	for (i = 0, o->phase = PH_COMPUTE; i < PH_MAX; i++)
		if (ph[i] > ph[o->phase])
			o->phase = i;
	for (i = 0; i < COST_MINUTES; i++) {
		if (!c->m[i].minute || c->m[i].minute + COST_MINUTES <= minute ||
		    c->m[i].minute > minute)
			continue;
		wait += c->m[i].wait_ns;
		rank_ns += c->m[i].rank_ns;
	}
	o->hour_rank_s = wait / 1e9;
	o->hour_frac = rank_ns ? (double)wait / rank_ns : 0;
}

double cost__dollars(uint64_t rank_ns, double usd_per_gpu_h, int gpus_per_rank)
{
	return rank_ns / 3.6e12 * usd_per_gpu_h * (gpus_per_rank > 0 ? gpus_per_rank : 1);
}

static const char *ms(uint64_t ns, char *b, size_t n)
{
	snprintf(b, n, ns >= 10000000ULL ? "%.0fms" : "%.1fms", ns / 1e6);
	return b;
}

void cost__text(const struct cost_sum *s, char *buf, size_t n)
{
	char a[24], b[24], usd[96] = "", amount[32];
	double h = s->hour_rank_s / 3600;

	buf[0] = '\0';
	if (s->rank < 0 || !s->late_steps || !n)
		return;
	if (h >= 10)
		snprintf(amount, sizeof(amount), "%.1f rank-hours", h);
	else if (h >= 0.1)
		snprintf(amount, sizeof(amount), "%.2f rank-hours", h);
	else
		snprintf(amount, sizeof(amount), "%.0f rank-seconds", s->hour_rank_s);
	if (s->usd_per_gpu_h > 0) {
		double d = cost__dollars(s->hour_rank_s * 1e9, s->usd_per_gpu_h, s->gpus_per_rank);

		snprintf(usd, sizeof(usd), " (%s%.2f at $%.2f/GPU-h%s)", d < 0.01 ? "<$" : "~$",
			 d < 0.01 ? 0.01 : d, s->usd_per_gpu_h,
			 s->gpus_per_rank > 1 ? ", several GPUs a rank" : "");
	}
	snprintf(buf, n, "rank %d (%s) slows %s by %.0f%%; %s lost in the last hour, %.1f%% of "
		 "the rank-time%s; fixing it would bring steps from %s to %s", s->rank,
		 steps__phase_name(s->phase),
		 s->late_steps * 4 >= s->steps * 3 ? "every step" : "its steps",
		 (s->slowdown - 1) * 100, amount, s->hour_frac * 100, usd,
		 ms(s->real_ns, a, sizeof(a)), ms(s->whatif_ns, b, sizeof(b)));
}

static void rank_label(int rank, char *b, size_t n)
{
	if (rank >= 0)
		snprintf(b, n, "%d", rank);
	else
		snprintf(b, n, "other");
}

void cost__series(struct prom *p, const char *const *ids, const struct cost *const *c, int n,
		  double usd_per_gpu_h, int gpus_per_rank)
{
	char rank[16];
	int i, k, q;

	prom__family(p, "rankscope_straggler_wait_seconds_total", "counter",
		     "Rank-seconds the peers of a late rank waited for it at collectives, by the "
		     "late rank and the phase its lateness went to.");
	for (i = 0; i < n; i++)
		for (k = 0; c[i] && k < c[i]->nc; k++) {
			rank_label(c[i]->c[k].rank, rank, sizeof(rank));
			prom__sample(p, "rankscope_straggler_wait_seconds_total",
				     LABELS("job_id", ids[i], "culprit_rank", rank, "phase",
					    c[i]->c[k].rank >= 0 ?
					    steps__phase_name(c[i]->c[k].phase) : "other"),
				     c[i]->c[k].wait_ns / 1e9);
		}
	prom__family(p, "rankscope_step_rank_seconds_total", "counter",
		     "Rank-seconds in steps: every rank's step durations summed (the straggler "
		     "wait's denominator).");
	for (i = 0; i < n; i++)
		if (c[i])
			prom__sample(p, "rankscope_step_rank_seconds_total", LABELS("job_id", ids[i]),
				     c[i]->rank_ns / 1e9);
	prom__family(p, "rankscope_straggler_slowdown_ratio", "gauge",
		     "The job's step time over its what-if step time (its late ranks arriving with "
		     "their peers), over its last 64 steps; 1: no straggler cost.");
	for (i = 0; i < n; i++) {
		struct cost_sum s;

		if (!c[i] || !c[i]->nw)
			continue;
		cost__sum(c[i], 0, 0, 1, &s);
		prom__sample(p, "rankscope_straggler_slowdown_ratio", LABELS("job_id", ids[i]),
			     s.slowdown);
	}
	prom__family(p, "rankscope_whatif_step_seconds", "histogram",
		     "The job's step as it would be had its late rank arrived with its peers "
		     "(next to train_step_seconds).");
	for (i = 0; i < n; i++)
		if (c[i])
			prom__log2_hist(p, "rankscope_whatif_step_seconds", LABELS("job_id", ids[i]),
					&c[i]->whatif);
	if (usd_per_gpu_h <= 0)
		return;
	prom__family(p, "rankscope_straggler_cost_dollars_total", "counter",
		     "Dollars of GPU time the peers of a late rank spent waiting for it, at "
		     "--gpu-hour-cost and --gpus-per-rank.");
	for (i = 0; i < n; i++) {
		if (!c[i])
			continue;
		/* one series per culprit rank: its phases summed */
		for (k = 0; k < c[i]->nc; k++) {
			uint64_t ns = 0;

			for (q = 0; q < k; q++)
				if (c[i]->c[q].rank == c[i]->c[k].rank)
					break;
			if (q < k)
				continue;
			for (q = k; q < c[i]->nc; q++)
				if (c[i]->c[q].rank == c[i]->c[k].rank)
					ns += c[i]->c[q].wait_ns;
			rank_label(c[i]->c[k].rank, rank, sizeof(rank));
			prom__sample(p, "rankscope_straggler_cost_dollars_total",
				     LABELS("job_id", ids[i], "culprit_rank", rank),
				     cost__dollars(ns, usd_per_gpu_h, gpus_per_rank));
		}
	}
}
