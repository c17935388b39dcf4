/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A slow link among links that do the same work, from the first step.
 *
 * A link slowed mid-run shows as a change (detect__comm_change); one slow from the start has
 * no earlier steps to be compared with. It has siblings, though: the TP groups of a TP+DP job
 * make the same calls with the same bytes, so do a stage's data-parallel groups, and the
 * sends and receives between a pipeline's neighbouring stages, replica by replica. A unit of
 * transfer is
 *   - a communicator's collectives in a step: the least time any member spent inside them
 *     (the last to come waits for nobody: what it spent is the transfer), less the most any
 *     member spent runnable and not running inside them (a starved member holds everyone);
 *   - a pair of ranks' sends and receives in a step: the time both ends were inside them,
 *     less either end's time runnable and not running (job.c's p2p_transfer).
 * Units alike (communicators with the same calls, bytes and members; pairs with as many
 * messages and bytes) are siblings. Each step, a unit's excess is its transfer less its
 * siblings' median; a unit late by the lateness rule of ranks (detect__late_column, the
 * units as columns) is a slow link, and the rank every such unit shares, where one does,
 * is named.
 */
#ifndef RS_LINKS_H
#define RS_LINKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "detect.h"

#define LINKS_SIBLINGS	3	/* units alike, at least, for a median that one slow unit does
				 * not move */

struct links;

/* For rows of ncols columns; keeps the newest rows steps (a judged window at most). */
struct links *links__new(int ncols, int rows);
void links__free(struct links *l);
void links__set_rank(struct links *l, int col, int rank);

/* Start step k's row (any row begun and not ended is dropped). */
void links__begin(struct links *l, uint64_t k);
/* Column col's collectives on communicator comm in the step: sig, a hash of their operations
 * and bytes in order (0: none), its time inside them, and its time runnable and not running
 * there. */
void links__coll(struct links *l, int col, uint64_t comm, uint64_t sig, uint64_t inside_ns,
		 uint64_t held_ns);
/* A message from column a to column b: its bytes and the time both ends were inside it, less
 * the time either was runnable and not running. */
void links__p2p(struct links *l, int a, int b, uint64_t bytes, uint64_t xfer_ns);
/* Column col's place in a pipeline (its stage; -1: none): pairs are siblings between the
 * same places only (a schedule keeps each pair of stages inside its messages differently,
 * the replicas of a pair alike). */
void links__place(struct links *l, int col, int place);
/* The row is complete. */
void links__end(struct links *l);

/* Over the newest m rows (step_ns: their median step): a unit slower than its siblings by
 * the lateness rule. Sets v->cls to V_COMMUNICATION, v->rank (the column every slow unit
 * shares, -1: none or several), v->skew_ns (its excess), v->threshold_ns and
 * v->post_arrival_ns (its transfer), writes why to detail and returns true. */
bool links__judge(const struct links *l, int m, uint64_t step_ns, struct verdict *v,
		  char *detail, size_t ndetail);

#endif /* RS_LINKS_H */
