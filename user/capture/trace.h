/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Captures as Chrome trace-event JSON (Perfetto UI and chrome://tracing open it), plain or
 * gzipped: one process track per rank, thread tracks per thread, GPU streams as their own
 * tracks, complete ("X") slices, flow events joining one collective across ranks, verdicts as
 * instant events. Kernel-free: unit-tested. */
#ifndef RS_TRACE_H
#define RS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <zlib.h>
#include "json.h"

enum trace_kind {
	TR_STEP,	/* a: step index */
	TR_PHASE,	/* sub: enum phase */
	TR_COLL,	/* sub: op, lib in b >> 56; a: bytes; b: seq (low 56 bits); comm: hash; name: comm */
	TR_IO,		/* sub: fd kind; a: bytes; b: io op */
	TR_OFFCPU,	/* a: run-queue ns at its end; b: syscall + 1 (0: none) */
	TR_GPU,		/* sub: rsc_rec kind; a: stream; b: bytes or 0; name: kernel name */
	TR_VERDICT,	/* instant at start; name: its text */
	TR_SAMPLE,	/* instant at start: a stack sample; name: the frames, ';'-joined */
	TR_KIND_MAX,
};

#define TR_GPU_TID_BASE	1000000000u	/* GPU stream tracks: tid = base + stream */
#define TR_STEP_TID	999999999u	/* the steps and phases track of a rank */

struct trace_ev {
	uint8_t kind;
	uint8_t sub;
	uint16_t pad;
	uint32_t pid;		/* the rank's pid: its process track */
	uint32_t tid;		/* its thread track */
	int32_t name;		/* index in the string table, -1: none */
	uint64_t start, end;	/* CLOCK_MONOTONIC ns; end == start for instants */
	uint64_t a, b;
	uint64_t comm;
};

struct trace_proc {
	uint32_t pid;
	int rank;
	const char *job;
};

struct trace_thread {
	uint32_t pid, tid;
	const char *name;	/* "main", "worker 1234", "thread 1236" */
};

/* How the stack samples' call chains were found, for the metadata. */
struct trace_samples {
	uint64_t dwarf;		/* unwound from CFI over the stack copy */
	uint64_t frame_pointer;	/* the frame-pointer chain (no copy, or CFI found less) */
	uint64_t stack_cut;	/* samples whose copy was over the budget */
	uint64_t stack_bytes;	/* stack copies kept */
};

struct trace_in {
	const struct trace_proc *procs;
	int nprocs;
	const struct trace_thread *threads;
	int nthreads;
	struct trace_ev *ev;	/* sorted in place */
	size_t nev;
	const char *const *str;	/* the string table */
	size_t nstr;
	uint64_t dropped;	/* events the capture could not keep */
	const char *id;		/* the capture's id, for the metadata */
	const struct trace_samples *samples;	/* NULL: no stack samples */
};

/* A trace streamed to fd, gzipped or not: the capture writer's, and the hub's merge. */
struct trace_out {
	int fd;
	gzFile gz;
	int err;		/* the first error; later writes do nothing */
	struct json j;		/* the event being built */
	bool first;
};

int trace__out_open(struct trace_out *o, int fd, bool gz);
void trace__out_put(struct trace_out *o, const char *s, size_t n);
/* o->j as the next element of traceEvents (",\n" between elements), then emptied. */
void trace__out_event(struct trace_out *o);
/* Flush and close (fd stays open). Returns the first error, 0 or -errno. */
int trace__out_close(struct trace_out *o);

/* Write the trace to fd, gzipped when gz. Returns 0 or -errno (the caller removes the file). */
int trace__write(int fd, bool gz, struct trace_in *in);

#endif /* RS_TRACE_H */
