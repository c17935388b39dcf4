/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Python frames of a CPython 3.11 process, read from the interpreter's own frame chain
 * (_PyRuntime -> interpreters -> thread states -> _PyCFrame -> _PyInterpreterFrame) with
 * process_vm_readv: no ptrace, so a stopped process or one another tracer holds is read as
 * it is. The struct offsets come from python3.11-dev's internal headers at build time
 * (user/sys/gen/pyoffsets.c) and are used only when the running interpreter says it is 3.11
 * (its Py_Version). Everything read is hostile: every pointer is checked by reading it, code
 * objects and strings by their type, and the walk is bounded.
 */
#ifndef RS_PYFRAMES_H
#define RS_PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PY_FRAMES_MAX	64	/* Python frames a thread; deeper ones are counted */
#define PY_TSTATES_MAX	1024	/* thread states a process */

struct py_frame {
	char func[96];		/* co_qualname */
	char file[128];		/* co_filename, its end when longer */
	int line;		/* 0: unknown */
	bool entry;		/* the outermost frame of one _PyEval_EvalFrameDefault call */
};

/* Reads n bytes at addr of the target: 0, or -1 when any of them cannot be read. */
typedef int (*py_read_fn)(void *ctx, uint64_t addr, void *buf, size_t n);

struct py_target {
	/* set by the caller: the addresses of the interpreter's symbols in the target */
	uint64_t runtime;	/* _PyRuntime */
	uint64_t version_at;	/* Py_Version (0: an interpreter before 3.11) */
	uint64_t code_type;	/* PyCode_Type */
	uint64_t unicode_type;	/* PyUnicode_Type */
	uint64_t bytes_type;	/* PyBytes_Type */
	py_read_fn read;	/* NULL: process_vm_readv on pid */
	void *ctx;
	pid_t pid;
	/* set by pyframes__open */
	uint64_t version;	/* the running interpreter's PY_VERSION_HEX, 0 unknown */
	bool usable;		/* its version is the one the offsets were built for */
	char note[160];		/* why not, "" when usable */
	struct { uint64_t tid, tstate; } *tstates;
	int ntstates;
};

/* The interpreter's version and its thread states. Returns 0 when py->usable, else -1 with
 * py->note saying why (another version, no thread state, memory unreadable). Either way
 * pyframes__close frees what it took. */
int pyframes__open(struct py_target *py);
void pyframes__close(struct py_target *py);

/* Thread tid's Python frames, innermost first, into out[max]. Returns how many (0: tid runs
 * no Python), with *truncated when the chain went on, and err set when the walk stopped at
 * something that is not a frame ("corrupt frame chain at depth N: ..."). */
int pyframes__thread(struct py_target *py, pid_t tid, struct py_frame *out, int max,
		     bool *truncated, char *err, size_t nerr);

/* One frame from its code object and position, as read elsewhere (a BPF program at a stack
 * sample): named from the code object, which is checked to be one. Needs only py's types
 * (code_type, unicode_type, bytes_type) and read. Returns 0, or -1 when code is not a code
 * object (any more). */
int pyframes__code(struct py_target *py, uint64_t code, uint64_t prev_instr, bool entry,
		   struct py_frame *out);

/* The line a code object's location table (3.11 format, len bytes) gives byte offset addr
 * of its code, counted from firstlineno; 0 when it gives none. Exposed for tests. */
int pyframes__addr2line(const uint8_t *table, size_t len, int firstlineno, int64_t addr);

/* The version the offsets were built for, as "3.11". */
const char *pyframes__built_version(void);

#endif /* RS_PYFRAMES_H */
