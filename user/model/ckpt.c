// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The checkpoint burst detector (see ckpt.h for the heuristic). */
#include <string.h>
#include "ckpt.h"

bool ckpt__sample(struct ckpt *c, const struct ckpt_cfg *cfg, uint64_t t, uint64_t cum_bytes,
		  uint64_t last_ns, struct ckpt_done *out)
{
	bool within = last_ns > c->last_t && last_ns <= t;	/* returned in this tick */
	uint64_t delta, prev_t = c->last_t;
	bool done = false;

	if (!c->primed || cum_bytes < c->last_bytes || t < c->last_t) {
		memset(c, 0, sizeof(*c));
		c->primed = true;
		c->last_bytes = cum_bytes;
		c->last_t = t;
		return false;
	}
	delta = cum_bytes - c->last_bytes;
	c->last_bytes = cum_bytes;
	c->last_t = t;
	if (delta >= cfg->active_bytes) {
		if (!c->in_burst) {
			c->in_burst = true;
			c->start_ns = prev_t;	/* the writes happened since the last sample */
			c->bytes = 0;
		}
		if (c->active_end_ns != prev_t)
			c->run_start_ns = prev_t;	/* a run of active ticks begins */
		c->bytes += delta;
		c->active_end_ns = t;
		c->end_ns = within ? last_ns : t;
		c->tail = true;
		return false;
	}
	if (!c->in_burst)
		return false;
	if (c->tail && within)
		c->end_ns = last_ns;	/* the flush after the writes */
	c->tail = false;
	c->bytes += delta;
	if (t - c->active_end_ns < cfg->gap_ns)
		return false;
	if (c->bytes >= cfg->min_bytes) {
		out->start_ns = c->start_ns;
		out->last_start_ns = c->run_start_ns;
		out->end_ns = c->end_ns;
		out->bytes = c->bytes;
		done = true;
	}
	c->in_burst = false;
	c->bytes = 0;
	return done;
}
