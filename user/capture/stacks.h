/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Stack samples for captures: a 99 Hz cpu-clock perf event on each rank thread, user call
 * chains on CLOCK_MONOTONIC, symbolized with libelf when the capture is written. */
#ifndef RS_STACKS_H
#define RS_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STACKS_HZ		99
#define STACKS_THREADS_MAX	512	/* perf events at once, over all ranks */
#define STACKS_SAMPLES_MAX	100000	/* kept per capture; the rest is counted */
#define STACKS_FRAMES		16	/* frames kept per sample, leaf first */
#define STACKS_PIDS_MAX		256	/* processes whose mappings are kept for symbols */

struct stack_sample {
	uint32_t pid, tid;
	uint64_t t_ns;
	uint8_t nframes;
	uint64_t ip[STACKS_FRAMES];
};

struct stacks {
	struct stacks_ev {
		int fd;
		uint32_t pid, tid;
		void *ring;
		size_t len;
	} ev[STACKS_THREADS_MAX];
	int nev;
	struct stack_sample *s;
	size_t ns;
	uint64_t dropped;
	int err;		/* the first perf_event_open failure, -errno */
	struct {
		uint32_t pid;
		char *maps;	/* /proc/PID/maps when sampling began */
	} snap[STACKS_PIDS_MAX];
	int nsnap;
};

/* Sample every thread of process pid (its /proc/PID/task, now). Returns threads started. */
int stacks__add(struct stacks *st, pid_t pid);
/* Read what the rings hold. */
void stacks__poll(struct stacks *st);
/* Stop sampling (the samples stay). */
void stacks__stop(struct stacks *st);
void stacks__free(struct stacks *st);

/* "f_root;...;f_leaf" for sample i (frames symbolized through pid's maps, cached), into buf.
 * Unknown frames read "module+0xoff" or "0xaddr". */
const char *stacks__text(struct stacks *st, size_t i, char *buf, size_t n);

#endif /* RS_STACKS_H */
