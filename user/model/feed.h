/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The records the job model takes, wherever they come from: live from the ring buffers and
 * CUPTI (node/session.c), or from a recording or an op trace (diagnose --replay). Both build a
 * feed_rec and hand it to feed__apply(), so a replay runs the model exactly as a live run did.
 */
#ifndef RS_FEED_H
#define RS_FEED_H

#include <stdbool.h>
#include <stdint.h>
#include "job.h"

struct job;

enum feed_kind {
	FEED_COLL,	/* a collective, send/receive or marker returned (or entry-only: end 0) */
	FEED_OFF,	/* the thread was off CPU over [start, end) */
	FEED_IO,	/* a read, write or flush syscall */
	FEED_EXIT,	/* the rank's process ended at start */
	FEED_GPU,	/* a GPU kernel or copy (CUPTI) */
	FEED_RUN,	/* the thread ran over [start, end): an op trace's compute (live has none:
			 * running is what no other record claims) */
};

struct feed_rec {
	enum feed_kind kind;
	int col;		/* the rank's column in its job */
	uint32_t tid;
	uint64_t start, end;	/* CLOCK_MONOTONIC ns: a collective's entry and return */
	uint64_t comm;		/* COLL: the hash of the communicator's global name */
	uint64_t seq;		/* COLL: per (process, communicator), at entry */
	uint64_t bytes;		/* COLL: payload; IO: bytes moved */
	uint64_t runq;		/* OFF: the last runq ns of it were runnable */
	int32_t syscall;	/* OFF: what it blocked in (x86-64 number), -1 unknown */
	int32_t status;		/* EXIT: wait status */
	int32_t peer;		/* COLL send/receive: the peer's rank in the communicator; -1 */
	uint8_t op, lib;	/* COLL: enum rs_coll_op, enum rs_lib */
	uint8_t fd_kind;	/* IO: enum rs_fd_kind */
	bool worker;		/* IO: made by a data-loader worker, not the rank's own process */
	bool write;		/* IO: a write-side call (write, send, fsync...), not a read */
	bool nccl;		/* GPU: an NCCL kernel (the device-side collective) */
};

/* The model's questions about a rank (struct job_probe_ops) and one answer, as a recording
 * keeps it: a replay gives the model the recorded answers in the order it asked. */
enum job_q {
	JOB_Q_INFLIGHT,	/* in: inside the collective call */
	JOB_Q_STATE,	/* text: what it is doing */
	JOB_Q_WHERE,	/* in: inside the collective coll; text: its stack */
};

struct job_answer {
	enum job_q q;
	int col;
	bool in;
	struct job_inflight call;
	const char *coll, *text;
};

/* When a record was made complete (a collective's return, the end of an interval): live, the
 * order records arrive in; a replay that merges traces sorts by it. */
uint64_t feed__done_ns(const struct feed_rec *r);

/* Hand r to the model (NULL j: no model yet, as live before a job's first build). */
void feed__apply(struct job *j, const struct feed_rec *r);

#endif /* RS_FEED_H */
