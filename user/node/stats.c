// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Interval math over cumulative counters; pure, so unit-testable without a kernel. */
#include <math.h>
#include <string.h>
#include "hist.h"
#include "stats.h"

void stats__on_coll(struct rank_state *rs, unsigned int op, uint64_t enter_ns, uint64_t exit_ns)
{
	if (op >= RS_OP_MAX)
		return;
	rs->ops[op].calls++;
	if (exit_ns && exit_ns >= enter_ns) {
		rs->ops[op].timed++;
		rs->ops[op].inside_ns += exit_ns - enter_ns;
	}
}

static uint64_t d(uint64_t now, uint64_t prev)
{
	return now > prev ? now - prev : 0;
}

void stats__row(struct rank_state *rs, const struct slot_snapshot *now, uint64_t t_ns,
		struct rank_row *row)
{
	const struct slot_snapshot *pv = &rs->prev;
	struct rs_hist h;
	uint64_t on, off, calls, timed, ns, samples;
	int op, k, w;

	memset(row, 0, sizeof(*row));
	row->rank = rs->info.rank;
	row->pid = rs->pid;
	row->exited = rs->exited;
	row->dt_s = rs->prev_t_ns && t_ns > rs->prev_t_ns ? (t_ns - rs->prev_t_ns) / 1e9 : 0;
	for (op = 0; op < RS_OP_MAX; op++) {
		calls = d(rs->ops[op].calls, rs->prev_ops[op].calls);
		timed = d(rs->ops[op].timed, rs->prev_ops[op].timed);
		ns = d(rs->ops[op].inside_ns, rs->prev_ops[op].inside_ns);
		row->ops[op].calls = calls;
		row->ops[op].total = rs->ops[op].calls;
		row->ops[op].per_s = row->dt_s > 0 ? calls / row->dt_s : 0;
		row->ops[op].mean_inside_ns = timed ? (double)ns / timed : 0;
	}
	for (k = 0; k < RS_FD_MAX; k++) {
		for (w = 0; w < 2; w++) {
			hist__diff(&now->io[k][w].lat, &pv->io[k][w].lat, &h);
			if (w) {
				row->wr[k].calls = h.count;
				row->wr[k].ns = h.sum_ns;
				row->wr[k].p50_ns = hist__quantile(&h, 0.5);
				row->wr[k].p99_ns = hist__quantile(&h, 0.99);
				row->wr[k].bytes = d(now->io[k][w].bytes, pv->io[k][w].bytes);
			} else {
				row->rd[k].calls = h.count;
				row->rd[k].ns = h.sum_ns;
				row->rd[k].p50_ns = hist__quantile(&h, 0.5);
				row->rd[k].p99_ns = hist__quantile(&h, 0.99);
				row->rd[k].bytes = d(now->io[k][w].bytes, pv->io[k][w].bytes);
			}
		}
	}
	hist__diff(&now->runq, &pv->runq, &h);
	row->runq_p99_ns = hist__quantile(&h, 0.99);
	/* completed intervals plus the one in progress: exact across ticks, since an interval
	 * that ends moves from the open part into the counter whole */
	on = d(now->sched.main_on_ns + now->main_open_on_ns,
	       pv->sched.main_on_ns + pv->main_open_on_ns);
	off = d(now->sched.main_off_ns + now->main_open_off_ns,
		pv->sched.main_off_ns + pv->main_open_off_ns);
	row->offcpu_share = on + off ? (double)off / (on + off) : NAN;
	row->retrans = d(now->net.retransmits, pv->net.retransmits);
	row->retrans_total = now->net.retransmits;
	samples = d(now->net.srtt_samples, pv->net.srtt_samples);
	row->srtt_us = samples ? (double)d(now->net.srtt_sum_us, pv->net.srtt_sum_us) / samples :
				 (double)now->net.srtt_last_us;
	rs->prev = *now;
	memcpy(rs->prev_ops, rs->ops, sizeof(rs->ops));
	rs->prev_t_ns = t_ns;
}
