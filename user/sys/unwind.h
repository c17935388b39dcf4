/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Stacks of every thread of a process. Native frames are unwound by elfutils' libdwfl from
 * CFI (.eh_frame / .debug_frame), so they work without frame pointers, symbolized from the
 * symbol tables (file:line where debug info exists). In a CPython 3.11 process the Python
 * frames are read from the interpreter (pyframes.h) and put in where they run: inside the
 * _PyEval_EvalFrameDefault call that evaluates them. The process is attached with ptrace
 * for the unwind and let go at once; the time it was held is measured. A stopped or zombie
 * process, or one another tracer holds, is not attached (attaching could change its state):
 * its threads get their /proc state and their Python frames only.
 */
#ifndef RS_UNWIND_H
#define RS_UNWIND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "pyframes.h"

#define UNWIND_THREADS	256	/* threads a process is unwound for; the rest are counted */
#define UNWIND_FRAMES	64	/* frames a thread; deeper ones are counted */

struct unwind_frame {
	uint64_t pc;		/* 0 for a Python frame */
	uint64_t at;		/* looked up: pc, or pc - 1 for a return address */
	char func[96];		/* "" when no symbol covers pc; a Python frame's qualified name */
	char lib[64];		/* the module's file name, without its directory */
	char file[128];		/* source file, "" without debug info; a Python frame's file */
	int line;
	bool python;		/* read from the interpreter's frame chain (pyframes.h) */
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
	char err[160];		/* why it has no frames */
	char py_err[96];	/* why its Python frames stop short ("corrupt frame chain ...") */
	struct py_frame *py;	/* its Python frames while they wait to be merged in */
	int npy;
	bool py_truncated;
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
	char py_note[160];	/* a CPython process whose Python frames are left out: why */
	bool python;		/* a CPython whose frames were read */
};

/* Unwind pid's threads into p (free it with unwind__free). Returns 0, or -errno with p->err
 * set (the process is gone, ptrace refused: another tracer, no privilege). */
int unwind__process(pid_t pid, struct unwind_proc *p);
void unwind__free(struct unwind_proc *p);

/* Its main thread (the one whose tid is its pid), else its first; NULL: none. */
const struct unwind_thread *unwind__main_thread(const struct unwind_proc *p);

/* The key ranks are classed by (STAT's way): the main thread's functions from the outermost
 * in, down to the collective it is inside if any, ";"-separated; or "(why)" without frames. */
void unwind__class_key(const struct unwind_proc *p, char *key, size_t n);

struct json;

/* p as one {"type":"stacks",...} object (rankscope stacks --json, /api/v1/stacks). */
void unwind__json(struct json *j, const struct unwind_proc *p, int rank, const char *job);

/* Is func a collective library's entry point (MPI, NCCL, gloo, c10d) or a CUDA wait? Below
 * one, a rank only spins while it waits. */
bool unwind__collective_frame(const char *func);

/* Where pid's main thread is: true with the outermost collective frame it is inside in coll,
 * or false with coll "". Either way its stack in a line in stack, innermost first, from that
 * collective frame or the call it blocks in, through its own frames (Python ones as "func
 * (file.py:line)"): "clock_nanosleep <- run_step (train.py:685) <- main (train.py:756)";
 * "" when nothing of it could be read (gone; stopped and not a CPython). */
bool unwind__where(pid_t pid, char *coll, size_t ncoll, char *stack, size_t nstack);

/* The same, of a snapshot unwind__process took. */
bool unwind__where_of(const struct unwind_proc *p, char *coll, size_t ncoll, char *stack,
		      size_t nstack);

/*
 * Samples (perf's --call-graph dwarf): the user registers and a copy of the user stack a perf
 * sample took (PERF_SAMPLE_REGS_USER with UNWIND_PERF_REGS_MASK, PERF_SAMPLE_STACK_USER),
 * unwound from CFI later, off the process: only the copied stack is read.
 */
#define UNWIND_SAMPLE_REGS	17	/* x86-64 DWARF registers 0-16: rax .. r15, rip */
#define UNWIND_PERF_REGS_MASK	(0x1ffULL | (0xffULL << 16))	/* ax..ip, r8..r15 */

/* perf's register order (ascending bits of the mask) to DWARF's. */
void unwind__perf_regs(const uint64_t perf[UNWIND_SAMPLE_REGS], uint64_t dwarf[UNWIND_SAMPLE_REGS]);

struct unwind_space;

/* Free what this thread keeps between looks (a capture writer's, at its end). */
void unwind__thread_end(void);

/* pid's modules, from maps (its /proc/PID/maps text when it was sampled), or from
 * /proc/PID/maps now when maps is NULL. NULL only without memory; unusable ones unwind
 * nothing. */
struct unwind_space *unwind__space(pid_t pid, const char *maps);
void unwind__space_free(struct unwind_space *sp);

/* A sample of thread tid: regs in DWARF order, stack the len bytes copied from regs' rsp up.
 * Its frames, innermost first and symbolized, into out[max]; returns how many. */
int unwind__sample(struct unwind_space *sp, pid_t tid, const uint64_t regs[UNWIND_SAMPLE_REGS],
		   const uint8_t *stack, size_t len, struct unwind_frame *out, int max);

/* pid's threads that run Python (CPython 3.11) and their thread states, ids as we see them
 * (mapped from a container's pid namespace); at most max. Returns how many (0: none, not a
 * CPython, another version). */
int unwind__python_threads(pid_t pid, uint64_t *tids, uint64_t *tstates, int max);

/* The interpreter's symbols among sp's modules, into py (for pyframes__code); false: sp is
 * not a CPython. */
bool unwind__space_python(struct unwind_space *sp, struct py_target *py);

#endif /* RS_UNWIND_H */
