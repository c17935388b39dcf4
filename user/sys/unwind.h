/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Native stacks of every thread of a process, unwound by elfutils' libdwfl from CFI
 * (.eh_frame / .debug_frame), so they work without frame pointers, symbolized from the
 * symbol tables (file:line where debug info exists). The process is attached with ptrace
 * for the unwind and let go at once; the time it was held is measured. A stopped or zombie
 * process is not attached (attaching could change its state): its threads get their /proc
 * state only.
 */
#ifndef RS_UNWIND_H
#define RS_UNWIND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define UNWIND_THREADS	256	/* threads a process is unwound for; the rest are counted */
#define UNWIND_FRAMES	64	/* frames a thread; deeper ones are counted */

struct unwind_frame {
	uint64_t pc;
	uint64_t at;		/* looked up: pc, or pc - 1 for a return address */
	char func[96];		/* "" when no symbol covers pc */
	char lib[64];		/* the module's file name, without its directory */
	char file[96];		/* source file, "" without debug info */
	int line;
};

struct unwind_thread {
	pid_t tid;
	char name[16];		/* /proc/TID/comm */
	char state;		/* /proc/TID/stat */
	char wchan[48];
	long syscall;		/* -1: running, none */
	struct unwind_frame *frames;
	int nframes;
	bool truncated;		/* deeper than UNWIND_FRAMES */
	char err[80];		/* why it has no frames */
	uint64_t held_ns;	/* how long it was stopped for its frames (ptrace) */
};

struct unwind_proc {
	pid_t pid;
	char state;		/* of the process */
	struct unwind_thread *threads;
	int nthreads;
	int threads_cut;	/* past UNWIND_THREADS */
	uint64_t held_ns;	/* from the first thread's attach to the last one's detach; each
				 * thread is held only for its own frames (its held_ns) */
	char err[160];		/* why nothing was unwound, "" when it was */
};

/* Unwind pid's threads into p (free it with unwind__free). Returns 0, or -errno with p->err
 * set (the process is gone, ptrace refused: another tracer, no privilege). */
int unwind__process(pid_t pid, struct unwind_proc *p);
void unwind__free(struct unwind_proc *p);

struct json;

/* p as one {"type":"stacks",...} object (rankscope stacks --json, /api/v1/stacks). */
void unwind__json(struct json *j, const struct unwind_proc *p, int rank, const char *job);

/* Is func a collective library's entry point (MPI, NCCL, gloo, c10d) or a CUDA wait? Below
 * one, a rank only spins while it waits. */
bool unwind__collective_frame(const char *func);

/* Where pid's main thread is: true with the outermost collective frame it is inside in coll,
 * or false with coll "" and its innermost frames outside the C library in frames ("a <- b <-
 * c"; "" when its stack could not be read: stopped, gone, refused). */
bool unwind__where(pid_t pid, char *coll, size_t ncoll, char *frames, size_t nframes);

#endif /* RS_UNWIND_H */
