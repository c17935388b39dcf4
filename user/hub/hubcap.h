/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The hub's capture across nodes: each node's step-aligned capture (a daemon's Chrome trace
 * JSON, one event a line) merged into one trace. Each node's clock is mapped onto the
 * reference node's by the offset the hub found from step ends; each node's processes get
 * tracks of their own; flows are made again across nodes, joining one collective's slices on
 * every rank.
 *
 * Sequence numbers are counted by each process from its own attach, so a process's numbers
 * are shifted onto a reference process's first: by the median difference between its
 * collectives and the reference's whose (mapped) ends are nearest, on the same communicator
 * and operation. The trace's otherData says, per node, the offset and its stated error, and
 * what the joined collectives measure: the spread of their ends across nodes (the residual).
 *
 * A node's text is hostile: each line is parsed on its own, bounded, and copied value by value;
 * a line that is not one JSON object is counted and left out.
 */
#ifndef RS_HUBCAP_H
#define RS_HUBCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HUBCAP_LINE_MAX		65536	/* an event line over this is left out */
#define HUBCAP_LINE_VALUES	512	/* JSON values an event may hold */
#define HUBCAP_COLL_MAX		(1u << 22)	/* collectives joined into flows, at most */
#define HUBCAP_PID_BITS		22	/* Linux pids are below 2^22: a node's tracks above it */
#define HUBCAP_NODES_MAX	511	/* nodes one merged trace holds (pids stay below 2^31) */

struct hubcap_node {
	const char *name;	/* its address */
	const char *capture;	/* the capture id it gave; NULL: it gave none */
	const char *text;	/* its trace; NULL when none came (why says so) */
	size_t len;
	const char *why;
	bool lined_up;		/* the hub knows its clock offset */
	int64_t offset_ns;	/* its clock - the reference node's */
	uint64_t err_ns;
};

struct hubcap_stats {
	uint64_t events;	/* copied */
	uint64_t bad_lines;	/* left out: not one JSON object, too long, a pid out of range */
	uint64_t flows;		/* collectives joined across ranks */
	uint64_t flows_across;	/* of which across nodes */
	uint64_t residual_ns;	/* the median spread of their ends across nodes */
	uint64_t residual_p90_ns;
};

/* Write the merged trace to fd (gzipped when gz). id: the hub's capture id. Nodes past
 * HUBCAP_NODES_MAX are listed, not included. Returns 0 or -errno; st (may be NULL) says what
 * went in. */
int hubcap__merge(const struct hubcap_node *nodes, int n, const char *id, int fd, bool gz,
		  struct hubcap_stats *st);

#endif /* RS_HUBCAP_H */
