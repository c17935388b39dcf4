/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Stack samples for captures: a 99 Hz cpu-clock perf event on each rank thread, on
 * CLOCK_MONOTONIC. Each sample carries the user registers and a copy of the top of the user
 * stack (perf's --call-graph dwarf), unwound from CFI with libdwfl when the capture is
 * written, so call chains are whole without frame pointers; and the frame-pointer chain, used
 * when the stack copy is left out (over the memory budget) or cannot be unwound.
 */
#ifndef RS_STACKS_H
#define RS_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "pysample.h"

#define STACKS_HZ		99
#define STACKS_THREADS_MAX	512	/* perf events at once, over all ranks */
#define STACKS_SAMPLES_MAX	100000	/* kept per capture; the rest is counted */
#define STACKS_FRAMES		16	/* frames kept per sample, leaf first */
#define STACKS_PIDS_MAX		256	/* processes whose mappings are kept for symbols */

#define STACKS_USER_BYTES	16384	/* user stack copied a sample, by default */
#define STACKS_STACK_BUDGET	(64u << 20)	/* stack bytes kept over a capture */
#define STACKS_RING_BUDGET	(64u << 20)	/* ring memory with stack copies, all threads */
#define STACKS_REGS		17	/* perf's x86-64 user registers kept (unwind.h) */

struct stack_sample {
	uint32_t pid, tid;
	uint64_t t_ns;
	uint8_t nframes;
	uint64_t ip[STACKS_FRAMES];	/* the frame-pointer chain */
	uint64_t regs[STACKS_REGS];	/* perf's order */
	uint8_t *stack;			/* the stack copy from regs' sp; NULL: none */
	uint32_t stack_len;
};

#define STACKS_PY_BYTES_MAX	(32u << 20)	/* Python frames kept a capture */

/* The Python frames a BPF program read at a sample (bpf/pysample.bpf.c). */
struct stacks_py {
	uint32_t tid;
	uint16_t n;
	bool truncated;
	uint64_t t_ns;
	struct pys_frame *f;
};

struct stacks {
	struct stacks_ev {
		int fd;
		uint32_t pid, tid;
		void *ring;
		size_t len;
		bool dwarf;	/* its samples carry registers and a stack copy */
	} ev[STACKS_THREADS_MAX];
	int nev;
	struct stack_sample *s;
	size_t ns;
	uint64_t dropped;
	uint64_t stack_bytes;	/* stack copies kept */
	uint64_t stack_cut;	/* samples whose copy was left out (over STACKS_STACK_BUDGET) */
	uint64_t dwarf_samples, fp_samples;	/* samples written, by how their chain was found */
	uint64_t rings;		/* ring memory with stack copies */
	uint8_t *rec;		/* one record, copied out of its ring */
	uint32_t stack_req;	/* stack bytes a sample copies (a multiple of 8); 0: none */
	struct stacks_py *py;	/* sorted by tid, then time, when the capture is written */
	size_t npy;
	uint64_t py_bytes, py_cut;	/* kept; left out over STACKS_PY_BYTES_MAX */
	bool py_sorted;
	uint64_t py_samples;	/* samples written with Python frames */
	int err;		/* the first perf_event_open failure, -errno */
	struct {
		uint32_t pid;
		char *maps;	/* /proc/PID/maps when sampling began */
	} snap[STACKS_PIDS_MAX];
	int nsnap;
};

/* Sample every thread of process pid (its /proc/PID/task, now). Returns threads started. */
int stacks__add(struct stacks *st, pid_t pid);
/* Keep a sample's Python frames (a pysample_fn: ctx is the struct stacks). */
void stacks__add_py(void *ctx, const struct pys_rec *r);
/* Read what the rings hold. */
void stacks__poll(struct stacks *st);
/* Stop sampling (the samples stay). */
void stacks__stop(struct stacks *st);
void stacks__free(struct stacks *st);

/* "f_root;...;f_leaf" for sample i (frames symbolized through pid's maps, cached), into buf.
 * Unknown frames read "module+0xoff" or "0xaddr". */
const char *stacks__text(struct stacks *st, size_t i, char *buf, size_t n);

#endif /* RS_STACKS_H */
