/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Checkpoints, seen from outside: a burst of large writes to regular files by a rank's family.
 *
 * The heuristic, sampled on every drain tick (100 ms) from the rank family's cumulative
 * regular-file write bytes (every write(2)/pwrite64/writev counts, however short):
 *   - a tick that adds at least active_bytes starts a burst, or extends the one in progress;
 *   - a burst ends once gap_ns pass with no such tick; smaller writes inside it still count;
 *   - a burst that wrote at least min_bytes in all was a checkpoint, from the start of its first
 *     active tick to its end. Smaller ones (logs, metrics files) are not.
 * Its end: when the last write or flush returned, in its last active tick or the tick after
 * (the fsync that follows the writes), where the probe says; else the last active tick's end.
 * Defaults: active 1 MiB per tick (10 MiB/s), gap 1 s, min 16 MiB (--ckpt-min-mb).
 */
#ifndef RS_CKPT_H
#define RS_CKPT_H

#include <stdbool.h>
#include <stdint.h>

struct ckpt_cfg {
	uint64_t active_bytes;	/* per tick, to count as writing a checkpoint */
	uint64_t gap_ns;	/* quiet this long ends a burst */
	uint64_t min_bytes;	/* a burst this big is a checkpoint */
};

#define CKPT_ACTIVE_BYTES	(1ULL << 20)
#define CKPT_GAP_NS		1000000000ULL
#define CKPT_MIN_BYTES		(16ULL << 20)
#define CKPT_SETTLED_NS		300000000ULL	/* writes stopped this long before a kill: the
						 * burst was a whole checkpoint */

struct ckpt {
	bool primed;		/* last_bytes/last_t hold a sample */
	uint64_t last_bytes;
	uint64_t last_t;
	bool in_burst;
	uint64_t start_ns, active_end_ns, bytes;
	uint64_t end_ns;	/* the burst's end: active_end_ns, or the last write's return */
	bool tail;		/* the tick after an active one: a flush may end the burst */
	uint64_t run_start_ns;	/* the latest run of consecutive active ticks began */
};

struct ckpt_done {
	uint64_t start_ns;
	uint64_t last_start_ns;	/* where its last run of consecutive active ticks began: two
				 * checkpoints less than the gap apart make one burst, and
				 * this is the later one's start */
	uint64_t end_ns;
	uint64_t bytes;
};

/* Feed the cumulative bytes at time t (CLOCK_MONOTONIC), and when the latest write or flush
 * returned (last_ns, 0: unknown). Returns true when a checkpoint just ended, with *out
 * filled. A counter that goes backwards (a reused slot) restarts the state. */
bool ckpt__sample(struct ckpt *c, const struct ckpt_cfg *cfg, uint64_t t, uint64_t cum_bytes,
		  uint64_t last_ns, struct ckpt_done *out);

#endif /* RS_CKPT_H */
