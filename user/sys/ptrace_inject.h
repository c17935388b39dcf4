/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Load a shared library into a running process: its main thread, stopped with ptrace, calls
 * dlopen() (and the library's init function) and gets every register back. x86-64 only. */
#ifndef RS_PTRACE_INJECT_H
#define RS_PTRACE_INJECT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The dynamic-loading API in the target's address space. */
struct inject_syms {
	char lib[PATH_MAX];	/* the file that defines them, as the target mapped it */
	uint64_t dlopen;
	uint64_t dlsym;
	uint64_t dlclose;	/* 0: not found (then a library without init_sym stays loaded) */
	uint64_t dlerror;	/* 0: not found (then no reason when dlopen fails) */
};

struct inject_opts {
	const char *lib;	/* absolute path as the target sees it (its mount namespace) */
	const char *init_sym;	/* called as int (*)(void) after dlopen; NULL: none */
	const char *init_arg;	/* non-NULL: init_sym is int (*)(const char *), given this */
	int timeout_ms;		/* to stop the thread at a safe point, and for each call */
};

enum inject_stage {
	INJ_ATTACH,
	INJ_STOP,		/* waiting for a stop where the thread holds no loader lock */
	INJ_DLOPEN,
	INJ_DLSYM,
	INJ_INIT,
	INJ_DONE,
};

struct inject_report {
	enum inject_stage stage;	/* the last one begun: where an error happened */
	uint64_t handle;
	int init_ret;
	int sig;		/* the fault that ended a call early, or the job-control stop */
	uint64_t sig_pc;
	int stops;		/* stops taken; all but the last were not at a safe point */
	int deferred;		/* the target's signals held back during the calls */
	long syscall_nr;	/* the syscall the thread was stopped in, -1: in user code */
	bool restored;		/* registers put back and detached */
	char dlerror[256];
};

/* What PTRACE_SEIZE's EPERM may come from, gathered from /proc before the reason is named. */
struct ptrace_facts {
	pid_t tracer;		/* TracerPid of the target, 0: none */
	char tracer_comm[32];
	int yama_scope;		/* kernel.yama.ptrace_scope, -1: no Yama */
	bool cap_sys_ptrace;	/* ours, effective */
	bool same_uid;		/* our uid and gid are its real, effective and saved ones */
	bool dumpable;
};

/* The fields of /proc/PID/status that decide whether injection is safe. */
struct inject_status {
	pid_t tracer;
	unsigned int uid[4];	/* real, effective, saved, fs */
	unsigned int gid[4];
	uint64_t sig_blk;	/* the main thread's blocked mask (bit n-1: signal n) */
	uint64_t sig_ign;
	bool shstk;		/* x86 user shadow stack: the return address we forge traps */
};

/* Find dlopen, dlsym, dlclose and dlerror in the library pid mapped that defines them:
 * libc.so.6 (glibc 2.34 and later), libdl.so.2 (older glibc, when loaded) or musl's loader,
 * read through /proc/PID/root. Returns 0; -ENOENT when no mapped candidate defines dlopen and
 * dlsym (s->lib names the last one read, "" if none was mapped); or -errno. */
int ptrace_inject__resolve(pid_t pid, struct inject_syms *s);

/* Stop pid's main thread (tid == pid) with PTRACE_SEIZE + PTRACE_INTERRUPT at a point where it
 * holds no C library or loader lock, make it call dlopen(o->lib, RTLD_NOW | RTLD_LOCAL), then
 * dlsym(handle, o->init_sym) and that function, and detach. Every register (general, x87/SSE,
 * AVX) is restored before the detach on every path; an interrupted syscall restarts as it
 * would have; signals that arrive for the thread meanwhile are held back and delivered at the
 * detach. Only the main thread stops; other threads keep running. A stop that is not at a
 * safe point is let go (detached, so that the thread's signals do not stop it again) and
 * another is tried, backing off up to 32 ms, until o->timeout_ms.
 * Returns 0 (r->handle, r->init_ret), or: -EPERM (ptrace refused: see ptrace_inject__facts),
 * -ESRCH (gone), -EBUSY (stopped by job control: r->sig), -ETIMEDOUT (r->stage: no safe stop
 * in time, or a call that did not return; the registers are restored either way, but a call
 * abandoned may leave the library half loaded), -ELIBACC (dlopen returned NULL: r->dlerror),
 * -ENOENT (no o->init_sym in the library, which is closed again), -EFAULT (a call ended by a
 * fault other than its return: r->sig at r->sig_pc), -ENOTSUP (not x86-64), or -errno.
 * If the thread never stops (-ETIMEDOUT at INJ_STOP), it stays attached, running, until this
 * process exits, when the kernel detaches it. Block SIGINT and SIGTERM around the call: dying
 * inside it would leave the thread to return to address 0. */
int ptrace_inject__run(pid_t pid, const struct inject_syms *s, const struct inject_opts *o,
		       struct inject_report *r);

/* Read /proc/PID/status. Returns 0 or -errno. */
int ptrace_inject__status(pid_t pid, struct inject_status *st);

/* Parse a /proc/PID/status text. Returns 0, or -EINVAL without the Uid and SigBlk lines. */
int ptrace_inject__parse_status(const char *text, struct inject_status *st);

/* Gather what PTRACE_SEIZE's EPERM may come from. Returns 0 or -errno. */
int ptrace_inject__facts(pid_t pid, struct ptrace_facts *f);

/* Why ptrace was refused, into msg: one line about the target ("it is already traced by PID
 * 12 (gdb); ...") that ends with the fix. */
void ptrace_inject__why_eperm(const struct ptrace_facts *f, char *msg, size_t n);

/* The stack of an injected call, below the thread's rsp: the 128-byte red zone untouched,
 * data_len bytes at *data_at (16-aligned), and the return address slot, which is returned:
 * rsp % 16 == 8 at the callee's entry, as after a call instruction. */
uint64_t ptrace_inject__frame(uint64_t rsp, size_t data_len, uint64_t *data_at);

/* Whether a /proc/PID/maps text maps a file named path, or one with path's base name. */
bool ptrace_inject__maps_has(const char *maps, const char *path);

/* Whether pc is in an executable mapping of the C library, the dynamic loader or libgcc_s:
 * code that may hold a lock dlopen() takes (malloc's, the loader's). */
bool ptrace_inject__pc_in_loader(const char *maps, uint64_t pc);

/* Whether a thread stopped in syscall nr (arg1: its second argument; ret: rax at the stop) was
 * blocked in a plain wait that holds no C library lock (read, poll, nanosleep, a condition
 * variable...) and interrupted by the stop, rather than in a call malloc or the loader make
 * while holding theirs (mmap, a futex lock wait, a read that completed...). */
bool ptrace_inject__syscall_safe(long nr, uint64_t arg1, long ret);

#endif /* RS_PTRACE_INJECT_H */
