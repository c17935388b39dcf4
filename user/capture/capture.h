/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* On-demand captures: a request from HTTP (any thread), recording in the session's loop,
 * a trace file under the capture directory with a name the server makes, and the directory
 * kept within its count and byte limits. */
#ifndef RS_CAPTURE_H
#define RS_CAPTURE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "trace.h"

#define CAPTURE_SECONDS_DEFAULT	10
#define CAPTURE_SECONDS_MAX	120
#define CAPTURE_RANKS_MAX	64
#define CAPTURE_EVENTS_MAX	(1u << 20)	/* 56 MiB of events at most; the rest is counted */
#define CAPTURE_STRINGS_MAX	65536
#define CAPTURE_THREADS_MAX	4096
#define CAPTURE_HISTORY		32		/* captures the server remembers for GET */
#define CAPTURE_ID_MAX		40

struct capture_req {
	int seconds;
	bool align;		/* start at the next step boundary */
	bool gz;
	int ranks[CAPTURE_RANKS_MAX];	/* rank numbers; none: every rank */
	int nranks;
	bool automatic;		/* --auto-capture, on a new verdict */
};

enum capture_state {
	CAPTURE_IDLE,
	CAPTURE_PENDING,	/* asked for, the loop has not seen it yet */
	CAPTURE_ARMED,		/* waits for a step boundary */
	CAPTURE_RUNNING,
	CAPTURE_WRITING,	/* its writer thread has it */
	CAPTURE_DONE,		/* for history entries */
	CAPTURE_FAILED,
};

struct capture_entry {
	char id[CAPTURE_ID_MAX];
	enum capture_state state;
	char file[CAPTURE_ID_MAX + 16];
	char err[160];
	uint64_t bytes;
};

struct capture {
	pthread_mutex_t lock;	/* guards state, req, id and the history */
	int dirfd;
	char dir[4096];
	size_t max_count;
	uint64_t max_bytes;
	int efd;		/* eventfd: a request is waiting for the loop */
	enum capture_state state;
	struct capture_req req;
	char id[CAPTURE_ID_MAX];
	struct capture_entry hist[CAPTURE_HISTORY];
	unsigned int nhist;
	bool cancel;		/* DELETE asked the capture in progress to stop */
	/* the loop's alone */
	uint64_t t_start, t_end;
	struct trace_ev *ev;
	size_t nev, cap;
	uint64_t dropped;
	struct trace_samples samples;	/* how the stack samples were unwound */
	bool has_samples;
	char **str;
	size_t nstr;
	int32_t *str_hash;	/* open addressing over CAPTURE_STRINGS_MAX * 2: index + 1 */
	struct trace_thread *thr;
	size_t nthr;
	size_t last_thr;	/* the last thread named: events come in runs of one thread */
	uint64_t armed_ns;	/* when an align=step capture began waiting */
	uint64_t last_auto_ns;
};

#define CAPTURE_SETTLE_NS	2500000000ULL	/* after the window: steps and GPU records
						 * of its end still come in */
#define CAPTURE_ARMED_MAX_NS	30000000000ULL	/* align=step waits this long for a step */

/* Create (0700) and open the directory. Returns 0, or -errno with err filled. */
int capture__open(struct capture *c, const char *dir, size_t max_count, uint64_t max_bytes,
		  char *err, size_t n);
void capture__close(struct capture *c);

/* Parse the query of POST /api/v1/capture: seconds (1..120, default 10), ranks=R[,R...],
 * align=step, format=json|gz. Returns 0, or -EINVAL with err naming the bad value. */
int capture__parse(const char *seconds, const char *ranks, const char *align, const char *format,
		   struct capture_req *req, char *err, size_t n);

/* Ask for a capture (any thread). Returns 0 with the new id, -EBUSY when one runs. */
int capture__request(struct capture *c, const struct capture_req *req, char *id, size_t n);

/* Is id one of ours, in what state; for a finished one, an open fd on its file (the caller
 * closes it), its size and whether it is gzipped. Returns 0, -EINVAL for a malformed id,
 * -ENOENT for an unknown one. Any thread. */
int capture__lookup(struct capture *c, const char *id, struct capture_entry *e, int *fd,
		    bool *gz);

/* DELETE /api/v1/captures/ID (any thread): a capture not yet written is cancelled (its
 * loop drops it at the next drain: 0), a written or failed one is deleted, file and all (1).
 * -EINVAL for a malformed id, -ENOENT for an unknown one, -EBUSY while it is being written
 * (delete it when it is done). */
int capture__cancel(struct capture *c, const char *id);
/* The loop's side: was the capture in progress cancelled? Each request is answered once. */
bool capture__cancelled(struct capture *c);

/* The loop's side: a request to start (true, and the session turns detail on). */
bool capture__take(struct capture *c, uint64_t now);
/* A step ended at step_end: an armed capture starts there. Returns true when it did. */
bool capture__step(struct capture *c, uint64_t step_end);
/* The recording is over; a writer takes the buffers (requests still get 409). */
void capture__writing(struct capture *c);
/* Give up on the capture with why, and go idle. */
void capture__fail(struct capture *c, const char *why);
/* The session ends: a capture not yet recording fails ("the session ended"). */
void capture__abandon(struct capture *c);
/* Recording now, for this rank number? */
bool capture__wants(const struct capture *c, int rank);
bool capture__running(const struct capture *c);
/* Due to be written at now: its window ended CAPTURE_SETTLE_NS ago. */
bool capture__due(const struct capture *c, uint64_t now);

/* Keep an event; a string for it (copied; -1 when none or full). */
void capture__add(struct capture *c, const struct trace_ev *e);
int32_t capture__str(struct capture *c, const char *s);
/* Name a thread track once (main, a worker, a thread). */
void capture__thread(struct capture *c, uint32_t pid, uint32_t tid, const char *name);

/* Write the trace (procs: the ranks), trim the directory, and go idle. Returns 0 or -errno
 * (the partial file is removed; the entry says why). */
int capture__finish(struct capture *c, const struct trace_proc *procs, int nprocs);
/* The same with the file written by write(ctx, fd, gz) (the hub's merge). */
int capture__finish_with(struct capture *c, int (*write)(void *ctx, int fd, bool gz), void *ctx);

/* Write a capture to a path the user chose (rankscope capture -p ... -o FILE). */
int capture__write_file(struct capture *c, const char *path, const struct trace_proc *procs,
			int nprocs, char *err, size_t n);

#endif /* RS_CAPTURE_H */
