/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Which rank a process is: from its environ, its communicator init, or the order given. */
#ifndef RS_RANKS_H
#define RS_RANKS_H

#include <stdbool.h>
#include <stddef.h>

enum rank_source {
	RANK_SRC_NONE,
	RANK_SRC_ENV,
	RANK_SRC_COMM_INIT,
	RANK_SRC_ORDER,
};

struct rank_info {
	int rank;		/* -1 if unknown */
	int local_rank;		/* -1 if unknown */
	int world_size;		/* -1 if unknown */
	char job[128];		/* "" if unknown */
	enum rank_source src;
	char src_var[32];	/* the environment variable the rank came from */
};

#define RANK_MAX (1 << 20)

void ranks__init(struct rank_info *ri);

/* Fill ri from a NUL-separated environ block. Malformed values are ignored.
 * Returns 1 if the rank was found, 0 if not. */
int ranks__from_environ(const char *env, size_t len, struct rank_info *ri);

/* Give every rank still unknown (src NONE) the lowest rank number not taken, in order.
 * Returns how many were assigned. */
int ranks__assign_by_order(struct rank_info *ris, int n);

const char *ranks__source_name(enum rank_source src);

#endif /* RS_RANKS_H */
