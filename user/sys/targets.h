/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Choosing which processes are ranks: -p lists, --all discovery, a rank's existing workers. */
#ifndef RS_TARGETS_H
#define RS_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TARGETS_MAX 256

/* Parse "PID[,PID...]" into pids (deduplicated, order kept). Returns the count, or -EINVAL
 * with bad pointing at the offending token, -E2BIG beyond max. */
int targets__parse_pids(const char *s, pid_t *pids, int max, const char **bad);

/* Remove repeated pids, keeping the first of each. Returns the new count. */
int targets__dedup(pid_t *pids, int n);

/* Every process on the host that looks like a training rank: has a rank variable in its
 * environ or maps NCCL/MPI/gloo. Workers (whose parent is a candidate) and launchers (whose
 * children carry rank variables and which have none themselves) are left out.
 * Returns the count or -errno. */
int targets__discover(pid_t *pids, int max, pid_t self);

/* The same, leaving out at once (before reading its environ or maps) a process for which
 * known(ctx, pid, starttime, &rank) is true: a rank of ours or its worker, rank set to its
 * number (-1 if none). It still makes its parent a launcher, and its children with no rank
 * or with its rank workers. */
int targets__discover_new(pid_t *pids, int max, pid_t self,
			  bool (*known)(void *ctx, pid_t pid, uint64_t starttime, int *rank),
			  void *ctx);

/* Descendant processes of root that exist now (forked before attach). Returns the count. */
int targets__children(pid_t root, pid_t *out, int max);

/* Is pid, given by the user, a process to attach to? 0: yes; 1: yes, but msg warns (a
 * launcher: its descendants are the ranks, msg lists them); -errno: no, msg says why (none
 * such, a kernel thread, a thread of another process, or a container's id for a training
 * process: msg names the host PID from NSpid). */
int targets__check_given(pid_t pid, char *msg, size_t n);

#endif /* RS_TARGETS_H */
