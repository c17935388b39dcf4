// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ptrace injection: the target's main thread calls dlopen() for us.
 *
 * The thread is stopped (PTRACE_SEIZE + PTRACE_INTERRUPT, no options: threads it creates are
 * not traced) where it holds no lock dlopen() needs, its registers are saved, and each call is
 * made by pointing rip at the function with a return address of 0 on its stack: the return
 * faults at rip 0, a SIGSEGV we take in its signal-delivery-stop and never deliver. Before the
 * detach the saved registers go back, so an interrupted syscall restarts as after any signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include "elfsym.h"
#include "libs.h"
#include "procfs.h"
#include "log.h"
#include "ptrace_inject.h"

#if defined(__x86_64__)
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#endif

#define RED_ZONE	128
#define CAP_PTRACE_BIT	19	/* CAP_SYS_PTRACE */
/* the futex command, without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME */
#define FUTEX_CMD(op)	((op) & ~(128 | 256))
/* condition variables, joins, semaphores: never a libc lock */
#define FUTEX_WAIT_BITSET_OP 9

/* Kernel-internal errnos a blocked syscall returns when a stop interrupts it (linux/errno.h). */
#define ERESTARTSYS		512
#define ERESTARTNOINTR		513
#define ERESTARTNOHAND		514
#define ERESTART_RESTARTBLOCK	516

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* Walk a maps text line by line; cb returns true to stop. */
static bool maps_any(const char *maps, bool (*cb)(const struct proc_map *m, const void *arg),
		     const void *arg)
{
	char line[PATH_MAX + 256];
	const char *p, *nl;
	struct proc_map m;
	size_t len;

	for (p = maps; *p; p = nl ? nl + 1 : p + len) {
		nl = strchr(p, '\n');
		len = nl ? (size_t)(nl - p) : strlen(p);
		if (len >= sizeof(line))
			continue;
		memcpy(line, p, len);
		line[len] = '\0';
		if (!procfs__parse_maps_line(line, &m) && cb(&m, arg))
			return true;
	}
	return false;
}

static bool has_cb(const struct proc_map *m, const void *arg)
{
	const char *want = arg, *del = " (deleted)";
	char path[PATH_MAX];
	size_t n = strlen(m->path), dl = strlen(del);

	if (m->path[0] != '/' || n >= sizeof(path))
		return false;
	memcpy(path, m->path, n + 1);
	if (n > dl && !strcmp(path + n - dl, del))
		path[n - dl] = '\0';
	return !strcmp(path, want) || !strcmp(base_name(path), base_name(want));
}

bool ptrace_inject__maps_has(const char *maps, const char *path)
{
	return maps_any(maps, has_cb, path);
}

static bool loader_cb(const struct proc_map *m, const void *arg)
{
	/* the loader, libc, the unwinder, and the allocators a training job preloads: stopped in
	 * one with its lock held, our dlopen() would malloc() into that lock on the same thread */
	static const char *const locked[] = {
		"libc.so", "libc-", "ld-linux", "ld-musl", "libc.musl", "libgcc_s", "libpthread",
		"libdl", "libjemalloc", "libtcmalloc", "libmimalloc", "libhoard", "libtbbmalloc",
		NULL,
	};
	uint64_t pc = *(const uint64_t *)arg;
	const char *const *l;

	if (pc < m->start || pc >= m->end || m->perms[2] != 'x' || m->path[0] != '/')
		return false;
	for (l = locked; *l; l++)
		if (starts(base_name(m->path), *l))
			return true;
	return false;
}

bool ptrace_inject__pc_in_loader(const char *maps, uint64_t pc)
{
	return maps_any(maps, loader_cb, &pc);
}

bool ptrace_inject__syscall_safe(long nr, uint64_t arg1, long ret)
{
	/* one the stop interrupted: a call that completed may be a step of malloc or dlopen */
	if (ret != -EINTR && ret != -ERESTARTSYS && ret != -ERESTARTNOINTR &&
	    ret != -ERESTARTNOHAND && ret != -ERESTART_RESTARTBLOCK)
		return false;
	switch (nr) {
#ifdef SYS_futex
	case SYS_futex:
		return FUTEX_CMD((int)arg1) == FUTEX_WAIT_BITSET_OP;
#endif
	case SYS_read: case SYS_readv: case SYS_pread64: case SYS_preadv: case SYS_preadv2:
	case SYS_write: case SYS_writev: case SYS_pwrite64:
	case SYS_ppoll: case SYS_pselect6: case SYS_epoll_pwait:
#ifdef SYS_poll
	case SYS_poll: case SYS_select: case SYS_epoll_wait: case SYS_pause:
#endif
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	case SYS_nanosleep: case SYS_clock_nanosleep:
	case SYS_wait4: case SYS_waitid:
	case SYS_accept: case SYS_accept4: case SYS_connect:
	case SYS_recvfrom: case SYS_recvmsg: case SYS_recvmmsg:
	case SYS_sendto: case SYS_sendmsg: case SYS_sendmmsg:
	case SYS_rt_sigsuspend: case SYS_rt_sigtimedwait:
	case SYS_ioctl: case SYS_flock: case SYS_msgrcv: case SYS_semtimedop:
	case SYS_io_getevents: case SYS_sched_yield:
		return true;
	default:
		return false;
	}
}

uint64_t ptrace_inject__frame(uint64_t rsp, size_t data_len, uint64_t *data_at)
{
	uint64_t top = (rsp - RED_ZONE) & ~15ULL;

	*data_at = (top - data_len) & ~15ULL;
	return *data_at - 8;
}

static uint64_t parse_sigmask(const char *v)
{
	return strtoull(v, NULL, 16);
}

int ptrace_inject__parse_status(const char *text, struct inject_status *st)
{
	const char *p, *nl, *v;
	bool uid = false, blk = false;
	char line[512];
	size_t len;

	memset(st, 0, sizeof(*st));
	for (p = text; *p; p = nl ? nl + 1 : p + len) {
		nl = strchr(p, '\n');
		len = nl ? (size_t)(nl - p) : strlen(p);
		if (len >= sizeof(line))
			continue;
		memcpy(line, p, len);
		line[len] = '\0';
		v = strchr(line, ':');
		if (!v)
			continue;
		v++;
		if (starts(line, "TracerPid:")) {
			st->tracer = strtol(v, NULL, 10);
		} else if (starts(line, "Uid:")) {
			uid = sscanf(v, "%u %u %u %u", &st->uid[0], &st->uid[1], &st->uid[2],
				     &st->uid[3]) == 4;
		} else if (starts(line, "Gid:")) {
			sscanf(v, "%u %u %u %u", &st->gid[0], &st->gid[1], &st->gid[2],
			       &st->gid[3]);
		} else if (starts(line, "SigBlk:")) {
			st->sig_blk = parse_sigmask(v);
			blk = true;
		} else if (starts(line, "SigIgn:")) {
			st->sig_ign = parse_sigmask(v);
		} else if (starts(line, "x86_Thread_features:")) {
			st->shstk = strstr(v, "shstk") != NULL;
		}
	}
	return uid && blk ? 0 : -EINVAL;
}

int ptrace_inject__status(pid_t pid, struct inject_status *st)
{
	ssize_t n;
	char *buf;
	int err;

	n = procfs__read(pid, "status", &buf, 64 << 10);
	if (n < 0)
		return n;
	err = ptrace_inject__parse_status(buf, st);
	free(buf);
	return err;
}

static bool have_cap_sys_ptrace(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_PTRACE_BIT / 32].effective & (1u << (CAP_PTRACE_BIT % 32));
}

static int read_small(const char *path, char *buf, size_t n)
{
	ssize_t got;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = read(fd, buf, n - 1);
	close(fd);
	if (got < 0)
		return -EIO;
	buf[got] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int ptrace_inject__facts(pid_t pid, struct ptrace_facts *f)
{
	struct inject_status st;
	char path[64], buf[32];
	struct stat sb;
	uid_t me = getuid();
	gid_t mg = getgid();
	int err;

	memset(f, 0, sizeof(*f));
	err = ptrace_inject__status(pid, &st);
	if (err)
		return err;
	f->tracer = st.tracer;
	if (f->tracer > 0) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)f->tracer);
		if (read_small(path, f->tracer_comm, sizeof(f->tracer_comm)))
			f->tracer_comm[0] = '\0';
	}
	f->yama_scope = -1;
	if (!read_small("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)))
		f->yama_scope = atoi(buf);
	f->cap_sys_ptrace = have_cap_sys_ptrace();
	f->same_uid = st.uid[0] == me && st.uid[1] == me && st.uid[2] == me &&
		      st.gid[0] == mg && st.gid[1] == mg && st.gid[2] == mg;
	/* a process that is not dumpable has its /proc/PID owned by root */
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	f->dumpable = stat(path, &sb) || sb.st_uid != 0 || st.uid[1] == 0;
	return 0;
}

void ptrace_inject__why_eperm(const struct ptrace_facts *f, char *msg, size_t n)
{
	char comm[sizeof(f->tracer_comm)];
	size_t i;

	if (f->tracer > 0) {
		for (i = 0; f->tracer_comm[i] && i + 1 < sizeof(comm); i++)
			comm[i] = f->tracer_comm[i] >= 0x20 && f->tracer_comm[i] < 0x7f ?
				  f->tracer_comm[i] : '?';
		comm[i] = '\0';
		snprintf(msg, n, "it is already traced by PID %d (%s); detach that debugger or "
			 "tracer first", (int)f->tracer, comm[0] ? comm : "?");
	} else if (f->yama_scope >= 3) {
		snprintf(msg, n, "kernel.yama.ptrace_scope is %d: no process may ptrace another "
			 "until the next boot", f->yama_scope);
	} else if (!f->cap_sys_ptrace && !f->same_uid) {
		snprintf(msg, n, "it runs as another user; run as root or grant CAP_SYS_PTRACE");
	} else if (!f->cap_sys_ptrace && f->yama_scope == 2) {
		snprintf(msg, n, "kernel.yama.ptrace_scope is 2: only CAP_SYS_PTRACE may ptrace; "
			 "run as root or grant CAP_SYS_PTRACE");
	} else if (!f->cap_sys_ptrace && f->yama_scope == 1) {
		snprintf(msg, n, "kernel.yama.ptrace_scope is 1: only a parent may ptrace its "
			 "children; run as root, grant CAP_SYS_PTRACE, or set "
			 "sysctl kernel.yama.ptrace_scope=0");
	} else if (!f->cap_sys_ptrace && !f->dumpable) {
		snprintf(msg, n, "it is not dumpable (set-uid, or prctl(PR_SET_DUMPABLE, 0)); run "
			 "as root or grant CAP_SYS_PTRACE");
	} else {
		snprintf(msg, n, "the kernel refused (a seccomp filter on rankscope, an LSM such "
			 "as AppArmor or SELinux, or a user namespace of its own?); check the "
			 "audit log");
	}
}

struct exec_arg {
	uint64_t addr;
	uint64_t inode;
};

static bool exec_cb(const struct proc_map *m, const void *arg)
{
	const struct exec_arg *a = arg;

	return a->addr >= m->start && a->addr < m->end && m->perms[2] == 'x' &&
	       m->inode == a->inode;
}

/* Look the API up in one mapped file; 0 and s filled, or -ENOENT / -errno. */
static int resolve_in(pid_t pid, const struct proc_lib *pl, const char *maps,
		      struct inject_syms *s)
{
	struct { const char *name; uint64_t *addr; bool need; } want[] = {
		{ "dlopen", &s->dlopen, true },
		{ "dlsym", &s->dlsym, true },
		{ "dlclose", &s->dlclose, false },
		{ "dlerror", &s->dlerror, false },
	};
	struct exec_arg a = { .inode = pl->inode };
	uint64_t bias, vaddr;
	struct elfsym *e;
	const char *via;
	char path[64];
	size_t i;
	int fd, err;

	fd = libs__open_mapped(pid, pl, &via, NULL);
	if (fd < 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = elfsym__open(path, &e);
	close(fd);
	if (err)
		return err;
	err = elfsym__load_bias(e, pl->start, pl->pgoff, &bias);
	for (i = 0; !err && i < sizeof(want) / sizeof(want[0]); i++) {
		*want[i].addr = 0;
		if (elfsym__find(e, want[i].name, &vaddr, NULL)) {
			if (want[i].need)
				err = -ENOENT;
			continue;
		}
		/* a wrong bias must not send the thread into data: it must be code it mapped */
		a.addr = vaddr + bias;
		if (!maps_any(maps, exec_cb, &a)) {
			if (want[i].need)
				err = -ENOENT;
			continue;
		}
		*want[i].addr = a.addr;
	}
	elfsym__free(e);
	return err;
}

int ptrace_inject__resolve(pid_t pid, struct inject_syms *s)
{
	static const char *const stems[] = {
		"libc.so.6", "libc-2.", "libdl.so.2", "libdl-2.", "ld-musl-", "libc.musl-", NULL,
	};
	const char *const *stem;
	struct proc_lib pl;
	char *maps;
	ssize_t n;
	int err = -ENOENT;

	memset(s, 0, sizeof(*s));
	n = procfs__read(pid, "maps", &maps, PROC_MAPS_MAX);
	if (n < 0)
		return n;
	for (stem = stems; *stem; stem++) {
		if (libs__find_mapped(pid, *stem, &pl))
			continue;
		snprintf(s->lib, sizeof(s->lib), "%s", pl.path);
		err = resolve_in(pid, &pl, maps, s);
		if (!err)
			break;
		if (err != -ENOENT)
			break;
	}
	free(maps);
	return err;
}

#if defined(__x86_64__)

#define XSTATE_MAX	(32 << 10)	/* the XSAVE area: ~1 KiB with AVX, ~11 KiB with AMX */
#define PEND_MAX	16
#define EFLAGS_TF	0x100
#define EFLAGS_DF	0x400

struct tracee {
	pid_t pid;
	int status;				/* of the stop it is in */
	bool saved;				/* regs hold the thread's own state */
	struct user_regs_struct regs;
	struct user_fpregs_struct fp;
	void *xstate;
	size_t xlen;				/* 0: no XSAVE regset, fp alone */
	siginfo_t pend[PEND_MAX];		/* the thread's signals, held back */
	int npend;
	uint64_t data_at, frame_sp;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Wait for the next stop, polling (no alarm, no signal of ours). timeout_ms < 0: no limit.
 * Returns 0 (t->status), -ESRCH when the process is gone, or -ETIMEDOUT. */
static int wait_stop(struct tracee *t, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	pid_t got;
	int st;

	for (;;) {
		got = waitpid(t->pid, &st, __WALL | WNOHANG);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return errno == ECHILD ? -ESRCH : -errno;
		if (got == t->pid) {
			if (WIFEXITED(st) || WIFSIGNALED(st))
				return -ESRCH;
			if (WIFSTOPPED(st)) {
				t->status = st;
				return 0;
			}
			continue;
		}
		if (timeout_ms >= 0 && now_ms() >= end)
			return -ETIMEDOUT;
		sleep_ms(1);
	}
}

enum stop_kind { STOP_TRAP, STOP_GROUP, STOP_SIGNAL };

/* What the stop in t->status is; a signal-delivery-stop fills *si. */
static enum stop_kind stop_kind(struct tracee *t, siginfo_t *si)
{
	if ((t->status >> 16) == PTRACE_EVENT_STOP) {
		/* group-stop and PTRACE_INTERRUPT both report EVENT_STOP; only the trap has
		 * siginfo */
		if (ptrace(PTRACE_GETSIGINFO, t->pid, 0, si) && errno == EINVAL)
			return STOP_GROUP;
		return STOP_TRAP;
	}
	if (ptrace(PTRACE_GETSIGINFO, t->pid, 0, si)) {
		memset(si, 0, sizeof(*si));
		si->si_signo = WSTOPSIG(t->status);
	}
	return STOP_SIGNAL;
}

/* Hold a signal for the thread back until the detach. False when there is no room. */
static bool defer_sig(struct tracee *t, const siginfo_t *si)
{
	int i;

	/* a standard signal already pending coalesces, as in the kernel's own queue */
	if (si->si_signo < SIGRTMIN)
		for (i = 0; i < t->npend; i++)
			if (t->pend[i].si_signo == si->si_signo)
				return true;
	if (t->npend >= PEND_MAX)
		return false;
	t->pend[t->npend++] = *si;
	return true;
}

static int save_regs(struct tracee *t)
{
	struct iovec iov = { .iov_base = t->xstate, .iov_len = XSTATE_MAX };

	if (ptrace(PTRACE_GETREGS, t->pid, 0, &t->regs) ||
	    ptrace(PTRACE_GETFPREGS, t->pid, 0, &t->fp))
		return -errno;
	/* AVX and later state is not in the FXSAVE image GETFPREGS gives */
	t->xlen = 0;
	if (t->xstate && !ptrace(PTRACE_GETREGSET, t->pid, (void *)NT_X86_XSTATE, &iov))
		t->xlen = iov.iov_len;
	t->saved = true;
	return 0;
}

/* Each part on its own: the general registers back matter most (rip, rsp, orig_rax). */
static int restore_regs(struct tracee *t)
{
	struct iovec iov = { .iov_base = t->xstate, .iov_len = t->xlen };
	int err = 0;

	if (ptrace(PTRACE_SETREGS, t->pid, 0, &t->regs))
		err = -errno;
	if (ptrace(PTRACE_SETFPREGS, t->pid, 0, &t->fp) && !err)
		err = -errno;
	if (t->xlen && ptrace(PTRACE_SETREGSET, t->pid, (void *)NT_X86_XSTATE, &iov) && !err)
		err = -errno;
	return err;
}

/* Detach from the stop it is in: registers back, held signals delivered, the first one with
 * its own siginfo when the stop is a signal-delivery-stop (the others queued to the thread). */
static int detach(struct tracee *t, bool at_signal, int *deferred)
{
	long data = 0;
	int err = 0, i, first = 0;

	if (t->saved)
		err = restore_regs(t);
	*deferred = t->npend;
	if (t->npend && at_signal &&
	    !ptrace(PTRACE_SETSIGINFO, t->pid, 0, &t->pend[0])) {
		data = t->pend[0].si_signo;
		first = 1;
	}
	for (i = first; i < t->npend; i++) {
		/* the kernel lets only the sender's own process forge a positive si_code */
		if (syscall(SYS_rt_tgsigqueueinfo, t->pid, t->pid, t->pend[i].si_signo,
			    &t->pend[i]))
			syscall(SYS_tgkill, t->pid, t->pid, t->pend[i].si_signo);
	}
	if (ptrace(PTRACE_DETACH, t->pid, 0, (void *)data) && !err)
		err = -errno;
	return err;
}

static int write_mem(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { .iov_base = (void *)buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)addr, .iov_len = len };
	const unsigned char *b = buf;
	ssize_t n;
	long word;
	size_t i;

	n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	/* len is a multiple of 8 here: whole words of our own frame */
	for (i = 0; i < len; i += sizeof(word)) {
		memcpy(&word, b + i, sizeof(word));
		if (ptrace(PTRACE_POKEDATA, pid, (void *)(addr + i), (void *)word))
			return -errno;
	}
	return 0;
}

static void read_str(pid_t pid, uint64_t addr, char *out, size_t n)
{
	struct iovec local, remote;
	size_t got = 0, chunk;
	ssize_t r;

	/* a page at a time: the one after the string's end may not be mapped */
	while (got + 1 < n) {
		chunk = 4096 - ((addr + got) & 4095);
		if (chunk > n - 1 - got)
			chunk = n - 1 - got;
		local = (struct iovec){ .iov_base = out + got, .iov_len = chunk };
		remote = (struct iovec){ .iov_base = (void *)(addr + got), .iov_len = chunk };
		r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (r <= 0)
			break;
		if (memchr(out + got, '\0', r)) {
			got += r;
			break;
		}
		got += r;
	}
	out[got] = '\0';
}

/* Run fn(a0, a1) on the thread. Returns 0 and *ret (rax), -ETIMEDOUT (stopped again, not
 * returned), -EFAULT (a fault in the call: r->sig, r->sig_pc), -ESRCH or -errno. On every
 * return but -ESRCH the thread is in a ptrace-stop; *at_signal says if a signal-delivery one. */
static int call(struct tracee *t, uint64_t fn, uint64_t a0, uint64_t a1, int timeout_ms,
		uint64_t *ret, bool *at_signal, struct inject_report *r)
{
	struct user_regs_struct regs = t->regs, cur;
	int64_t end = now_ms() + timeout_ms;
	bool timed_out = false;
	uint64_t zero = 0;
	int warned = 0;
	siginfo_t si;
	long sig;
	int err;

	*at_signal = false;
	err = write_mem(t->pid, t->frame_sp, &zero, sizeof(zero));
	if (err)
		return err;
	regs.rip = fn;
	regs.rsp = t->frame_sp;
	regs.rdi = a0;
	regs.rsi = a1;
	regs.rax = 0;
	/* no syscall restart into our call: the kernel rewinds rip only for orig_rax >= 0 */
	regs.orig_rax = -1;
	regs.eflags &= ~(EFLAGS_TF | EFLAGS_DF);
	if (ptrace(PTRACE_SETREGS, t->pid, 0, &regs))
		return -errno;
	if (ptrace(PTRACE_CONT, t->pid, 0, 0))
		return -errno;
	for (;;) {
		err = wait_stop(t, timed_out ? 5000 : (int)(end - now_ms() > 0 ? end - now_ms() : 0));
		if (err == -ETIMEDOUT && timed_out) {
			/* interrupted, yet not stopped: in uninterruptible sleep (a hung NFS mount
			 * under dlopen, say). Leaving now would let it return into address 0 */
			if (!warned++)
				pr_warn("inject: PID %d does not stop (uninterruptible sleep inside our "
					"call?); waiting for it: stopping rankscope now would crash it",
					t->pid);
			continue;
		}
		if (err == -ETIMEDOUT) {
			/* stop it wherever it is: the registers still go back */
			timed_out = true;
			if (ptrace(PTRACE_INTERRUPT, t->pid, 0, 0))
				return -errno;
			continue;
		}
		if (err)
			return err;
		sig = 0;
		switch (stop_kind(t, &si)) {
		case STOP_TRAP:
		case STOP_GROUP:	/* the kernel stops it again at the detach */
			break;
		case STOP_SIGNAL:
			*at_signal = true;
			if (ptrace(PTRACE_GETREGS, t->pid, 0, &cur))
				return -errno;
			/* our return: ret popped the 0 we pushed (a call through a NULL pointer
			 * inside would have pushed one more) */
			if (si.si_signo == SIGSEGV && si.si_code > 0 && cur.rip == 0 &&
			    cur.rsp == t->frame_sp + 8) {
				*ret = cur.rax;
				return 0;
			}
			if (si.si_code > 0 && (si.si_signo == SIGSEGV || si.si_signo == SIGBUS ||
			    si.si_signo == SIGILL || si.si_signo == SIGFPE ||
			    si.si_signo == SIGTRAP || si.si_signo == SIGSYS)) {
				r->sig = si.si_signo;
				r->sig_pc = cur.rip;
				return -EFAULT;
			}
			/* the target's own signal: after our call, in the context it
			 * interrupted */
			if (!defer_sig(t, &si))
				sig = si.si_signo;
			break;
		}
		if (timed_out)
			return -ETIMEDOUT;
		*at_signal = false;
		if (ptrace(PTRACE_CONT, t->pid, 0, (void *)sig))
			return -errno;
	}
}

/* Stop the attached thread once and save its registers. Returns 0 at a safe point (it holds
 * no lock dlopen() takes), -EAGAIN at another stop, -EBUSY (job-control stop: r->sig),
 * -ETIMEDOUT (no stop: *running), or -errno. */
static int stop_once(struct tracee *t, int timeout_ms, bool *at_signal, bool *running,
		     struct inject_report *r)
{
	char *maps = NULL;
	siginfo_t si;
	ssize_t n;
	bool safe;
	int err;

	*running = true;
	*at_signal = false;
	if (ptrace(PTRACE_INTERRUPT, t->pid, 0, 0))
		return -errno;
	err = wait_stop(t, timeout_ms);
	if (err)
		return err;
	*running = false;
	r->stops++;
	switch (stop_kind(t, &si)) {
	case STOP_GROUP:
		r->sig = WSTOPSIG(t->status);
		return -EBUSY;
	case STOP_SIGNAL:
		/* this stop will do: its signal is delivered at the detach */
		*at_signal = true;
		defer_sig(t, &si);
		break;
	case STOP_TRAP:
		break;
	}
	err = save_regs(t);
	if (err)
		return err;
	r->syscall_nr = (long)t->regs.orig_rax;
	if (r->syscall_nr >= 0)
		return ptrace_inject__syscall_safe(r->syscall_nr, t->regs.rsi, (long)t->regs.rax) ?
		       0 : -EAGAIN;
	n = procfs__read(t->pid, "maps", &maps, PROC_MAPS_MAX);
	if (n < 0)
		return n;
	safe = !ptrace_inject__pc_in_loader(maps, t->regs.rip);
	free(maps);
	return safe ? 0 : -EAGAIN;
}

int ptrace_inject__run(pid_t pid, const struct inject_syms *s, const struct inject_opts *o,
		       struct inject_report *r)
{
	struct tracee t = { .pid = pid };
	size_t plen = strlen(o->lib) + 1, slen = o->init_sym ? strlen(o->init_sym) + 1 : 0;
	size_t alen = o->init_sym && o->init_arg ? strlen(o->init_arg) + 1 : 0;
	size_t dlen = (plen + slen + alen + 7) & ~(size_t)7;
	bool at_signal = false, running = false;
	uint64_t ret = 0, fn = 0, sym_at, arg_at;
	int64_t end, left;
	int err, derr, backoff = 1;
	char *data = NULL;

	memset(r, 0, sizeof(*r));
	r->syscall_nr = -1;
	r->stage = INJ_ATTACH;
	t.xstate = aligned_alloc(64, XSTATE_MAX);
	data = calloc(1, dlen);
	if (!data || !t.xstate) {
		err = -ENOMEM;
		goto out_free;
	}
	memcpy(data, o->lib, plen);
	if (slen)
		memcpy(data + plen, o->init_sym, slen);
	if (alen)
		memcpy(data + plen + slen, o->init_arg, alen);
	end = now_ms() + o->timeout_ms;
	for (;;) {
		if (ptrace(PTRACE_SEIZE, pid, 0, 0)) {
			err = -errno;
			goto out_free;
		}
		r->stage = INJ_STOP;
		left = end - now_ms();
		err = stop_once(&t, left > 0 ? (int)left : 0, &at_signal, &running, r);
		if (err != -EAGAIN)
			break;
		if (now_ms() >= end) {
			err = -ETIMEDOUT;
			goto out;
		}
		/* not there: let it run on, untraced (a traced thread stops at each of its signals,
		 * and one that arrives faster than we handle them would hold it where it is) */
		derr = detach(&t, at_signal, &r->deferred);
		if (derr) {
			err = derr;
			goto out_free;
		}
		t.saved = false;
		t.npend = 0;
		sleep_ms(backoff);
		backoff = backoff < 32 ? backoff * 2 : 32;
	}
	if (err)
		goto out;

	t.frame_sp = ptrace_inject__frame(t.regs.rsp, dlen, &t.data_at);
	sym_at = t.data_at + plen;
	arg_at = alen ? sym_at + slen : 0;
	err = write_mem(pid, t.data_at, data, dlen);
	if (err)
		goto out;

	r->stage = INJ_DLOPEN;
	err = call(&t, s->dlopen, t.data_at, 2 /* RTLD_NOW | RTLD_LOCAL */, o->timeout_ms, &ret,
		   &at_signal, r);
	if (err)
		goto out;
	r->handle = ret;
	if (!r->handle) {
		err = -ELIBACC;
		if (s->dlerror && !call(&t, s->dlerror, 0, 0, o->timeout_ms, &ret, &at_signal, r) &&
		    ret)
			read_str(pid, ret, r->dlerror, sizeof(r->dlerror));
		goto out;
	}
	if (!o->init_sym) {
		r->stage = INJ_DONE;
		goto out;
	}
	r->stage = INJ_DLSYM;
	err = call(&t, s->dlsym, r->handle, sym_at, o->timeout_ms, &fn, &at_signal, r);
	if (err)
		goto out;
	if (!fn) {
		err = -ENOENT;
		if (s->dlclose)
			call(&t, s->dlclose, r->handle, 0, o->timeout_ms, &ret, &at_signal, r);
		goto out;
	}
	r->stage = INJ_INIT;
	err = call(&t, fn, arg_at, 0, o->timeout_ms, &ret, &at_signal, r);
	if (err)
		goto out;
	r->init_ret = (int)(uint32_t)ret;
	r->stage = INJ_DONE;
out:
	if (err == -ESRCH || running)
		goto out_free;	/* gone; or never stopped: the kernel detaches at our exit */
	derr = detach(&t, at_signal, &r->deferred);
	if (derr == -ESRCH) {
		err = err ? err : -ESRCH;
		goto out_free;
	}
	r->restored = !derr;
	if (derr && !err)
		err = derr;
out_free:
	free(data);
	free(t.xstate);
	return err;
}

#else /* !__x86_64__ */

int ptrace_inject__run(pid_t pid, const struct inject_syms *s, const struct inject_opts *o,
		       struct inject_report *r)
{
	memset(r, 0, sizeof(*r));
	return -ENOTSUP;
}

#endif
