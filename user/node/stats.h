/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Per-rank live numbers: collective counters from events, the rest from kernel map snapshots. */
#ifndef RS_STATS_H
#define RS_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "ckpt.h"
#include "comms.h"
#include "job.h"
#include "probes.h"
#include "ranks.h"

struct op_acc {
	uint64_t calls;
	uint64_t timed;		/* calls with a return time (entry-only probes have none) */
	uint64_t inside_ns;
};

/* Everything rankscope knows about one attached rank. Owned by the attach session. */
struct metrics_acc;
struct gpu_acc;

/* A communicator's name as on_coll made it last, for (lib, handle, dtype) at comms->gen. */
struct coll_name {
	uint64_t gen;			/* 0: empty */
	uint64_t comm, dtype;
	unsigned int lib;
	uint64_t hash;			/* comms__fnv1a of name */
	uint64_t esize;			/* bytes per element of dtype; 0 unknown */
	char name[COMM_NAME_MAX + 24];
};

#define RANK_NAME_CACHE	4		/* a power of two */

struct rank_state {
	bool used;			/* this slot holds a rank */
	int job;			/* index in the session's jobs */
	int col;			/* column in its job's model */
	struct metrics_acc *acc;	/* with HTTP: the exposition's counters */
	struct gpu_acc *gpu;		/* from its CUPTI library; NULL before any */
	char *json;			/* the latest rank line, for /api/v1/ranks */
	struct job_step last_step;	/* for diagnose's report */
	struct ckpt ck;			/* the checkpoint detector's state */
	uint64_t prep_ns;		/* when its /proc was first read: an exec before that made
					 * the program attached to */
	uint64_t join_ns;
	uint64_t exit_ns;		/* when it was seen gone */
	uint32_t slot;
	pid_t pid;
	uint64_t starttime;
	char comm[64];
	struct rank_info info;
	const char *node;		/* the node's name (the session's); "" or NULL: unknown */
	struct proc_libs libs;
	struct coll_report coll;
	int coll_probes;
	uint64_t libs_next_ns;		/* the daemon's next look at its maps (backing off) */
	uint32_t libs_wait_s;
	bool exited;
	char pstate;			/* /proc/PID/stat state at the last publish; 0: not read */
	/* the collective its main thread was inside at the last publish */
	bool in_coll;
	unsigned int in_op;
	uint64_t in_bytes;		/* 0: not known */
	uint64_t in_enter_ns;
	uint64_t in_for_ns;		/* inside it for this long, at the publish */
	char in_comm[RANK_COMM_NAME];
	/* the last snapshot of its stacks while its job is stuck, shared by /api/v1/stacks and
	 * the stuck-job judge (session.c, rank_snapshot) */
	uint64_t snap_ns;		/* 0: none */
	char *snap_json;		/* its {"type":"stacks"} object */
	char *snap_key;			/* its class (unwind__class_key) */
	bool snap_in;			/* inside a collective: snap_coll */
	char snap_coll[64];
	char snap_stack[384];		/* unwind__where's line */
	int exit_code;
	uint64_t workers;		/* forked processes seen */
	int markers;			/* --steps marker/usdt probes attached */
	struct comm_use comms[RANK_COMMS_MAX];
	int ncomms;
	struct coll_name names[RANK_NAME_CACHE];	/* on_coll's, by (comm, dtype) */
	uint64_t comms_other;		/* collectives on communicators past RANK_COMMS_MAX */
	uint32_t mpi_comms;		/* MPI sub-communicators it made since attach */
	bool mpi_late;			/* attached after MPI_Init: mpi_comms is not its count */
	struct op_acc ops[RS_OP_MAX];	/* cumulative, from collective events */
	struct op_acc prev_ops[RS_OP_MAX];
	struct slot_snapshot prev;
	uint64_t prev_t_ns;
};

/* One table row / stats line: rates over the last interval. */
struct rank_row {
	int rank;
	pid_t pid;
	double dt_s;
	struct {
		uint64_t calls;		/* in the interval */
		uint64_t total;		/* since attach */
		double per_s;
		double mean_inside_ns;	/* over the timed calls; 0 if none */
	} ops[RS_OP_MAX];
	struct {
		uint64_t calls;
		uint64_t p50_ns;
		uint64_t p99_ns;
		uint64_t bytes;
		uint64_t ns;
	} rd[RS_FD_MAX], wr[RS_FD_MAX];
	uint64_t runq_p99_ns;
	double offcpu_share;		/* main thread, 0..1; NaN when it never switched */
	uint64_t retrans;		/* in the interval */
	uint64_t retrans_total;
	double srtt_us;			/* mean over the interval's samples; last known if none */
	bool exited;
};

void stats__on_coll(struct rank_state *rs, unsigned int op, uint64_t enter_ns, uint64_t exit_ns);

/* Compute the row for the interval since the previous call and make now the new baseline. */
void stats__row(struct rank_state *rs, const struct slot_snapshot *now, uint64_t t_ns,
		struct rank_row *row);

#endif /* RS_STATS_H */
