// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Native stacks of a process's threads with libdwfl: see unwind.h. */
#include <dirent.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "json.h"
#include "procfs.h"
#include "unwind.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

/* A thread's name, state, wait channel and syscall, from /proc (hostile text: bounded). */
static void thread_proc(pid_t pid, struct unwind_thread *t)
{
	char path[64], *buf = NULL;
	const char *p;

	t->syscall = -1;
	snprintf(path, sizeof(path), "task/%d/comm", t->tid);
	if (procfs__read(pid, path, &buf, sizeof(t->name)) > 0) {
		snprintf(t->name, sizeof(t->name), "%.*s", (int)strcspn(buf, "\n"), buf);
		for (char *c = t->name; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
	}
	free(buf);
	buf = NULL;
	snprintf(path, sizeof(path), "task/%d/stat", t->tid);
	if (procfs__read(pid, path, &buf, 1024) > 0 && (p = strrchr(buf, ')')) && p[1] == ' ')
		t->state = p[2];
	free(buf);
	buf = NULL;
	snprintf(path, sizeof(path), "task/%d/wchan", t->tid);
	if (procfs__read(pid, path, &buf, sizeof(t->wchan)) > 0 && strcmp(buf, "0"))
		snprintf(t->wchan, sizeof(t->wchan), "%.*s", (int)strspn(buf,
			 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+"), buf);
	free(buf);
	buf = NULL;
	snprintf(path, sizeof(path), "task/%d/syscall", t->tid);
	if (procfs__read(pid, path, &buf, 256) > 0 && buf[0] >= '0' && buf[0] <= '9')
		t->syscall = strtol(buf, NULL, 10);
	free(buf);
}

static struct unwind_thread *new_thread(struct unwind_proc *p, pid_t tid)
{
	struct unwind_thread *t;

	if (p->nthreads == UNWIND_THREADS) {
		p->threads_cut++;
		return NULL;
	}
	t = &p->threads[p->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	thread_proc(p->pid, t);
	return t;
}

static const char *base(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "";
}

struct walk {
	Dwfl *dwfl;
	struct unwind_thread *t;
};

/* Only the pc while the thread is held: naming it can wait until every thread is let go. */
static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	struct unwind_thread *t = w->t;
	struct unwind_frame *f;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (t->nframes == UNWIND_FRAMES) {
		t->truncated = true;
		return DWARF_CB_ABORT;
	}
	f = &t->frames[t->nframes++];
	memset(f, 0, sizeof(*f));
	/* a return address points past its call: look the call up */
	f->pc = pc;
	f->at = activation ? pc : pc - 1;
	return DWARF_CB_OK;
}

static void symbolize(Dwfl *dwfl, struct unwind_frame *f)
{
	const char *name, *mod, *src;
	Dwfl_Module *m = dwfl_addrmodule(dwfl, f->at);
	Dwfl_Line *l;
	int line = 0;

	if (!m)
		return;
	name = dwfl_module_addrname(m, f->at);
	mod = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	snprintf(f->func, sizeof(f->func), "%s", name ? name : "");
	snprintf(f->lib, sizeof(f->lib), "%s", base(mod));
	l = dwfl_module_getsrc(m, f->at);
	src = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
	if (src) {
		snprintf(f->file, sizeof(f->file), "%s", base(src));
		f->line = line;
	}
}

struct walk_all {
	Dwfl *dwfl;
	struct unwind_proc *p;
};

static int each_thread(Dwfl_Thread *thread, void *arg)
{
	struct walk_all *a = arg;
	struct unwind_thread *t = new_thread(a->p, dwfl_thread_tid(thread));
	struct walk w = { .dwfl = a->dwfl, .t = t };
	uint64_t t0;

	if (!t)
		return DWARF_CB_ABORT;	/* past UNWIND_THREADS: the rest are counted, not held */
	t->frames = calloc(UNWIND_FRAMES, sizeof(*t->frames));
	if (!t->frames) {
		snprintf(t->err, sizeof(t->err), "out of memory");
		return DWARF_CB_OK;
	}
	t0 = mono_ns();
	if (dwfl_thread_getframes(thread, frame_cb, &w) && !t->nframes)
		snprintf(t->err, sizeof(t->err), "%s", dwfl_errmsg(-1));
	t->held_ns = mono_ns() - t0;
	return DWARF_CB_OK;
}

/* Threads of a process we do not attach: their /proc state only. */
static void proc_threads(struct unwind_proc *p, const char *why)
{
	char path[48];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", p->pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		struct unwind_thread *t;
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0)
			continue;
		t = new_thread(p, (pid_t)tid);
		if (t)
			snprintf(t->err, sizeof(t->err), "%s", why);
	}
	if (d)
		closedir(d);
}

/* "Threads:" of /proc/PID/status. */
static int count_threads(pid_t pid)
{
	char *buf = NULL, *at;
	int n = 0;

	if (procfs__read(pid, "status", &buf, 4096) > 0 && (at = strstr(buf, "\nThreads:")))
		n = atoi(at + 9);
	free(buf);
	return n;
}

/* " (traced by PID N, comm)" when another tracer holds pid, else "". */
static void tracer(pid_t pid, char *out, size_t n)
{
	char *buf = NULL, *at, *comm = NULL;
	long tp = 0;

	out[0] = 0;
	if (procfs__read(pid, "status", &buf, 4096) > 0 && (at = strstr(buf, "\nTracerPid:")))
		tp = strtol(at + 11, NULL, 10);
	free(buf);
	if (tp <= 0 || tp > (1 << 22))
		return;
	if (procfs__read((pid_t)tp, "comm", &comm, 16) > 0)
		comm[strcspn(comm, "\n")] = 0;
	snprintf(out, n, " (traced by PID %ld, %s)", tp, comm ? comm : "?");
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	free(comm);
}

int unwind__process(pid_t pid, struct unwind_proc *p)
{
	struct proc_stat st;
	struct walk_all a;
	uint64_t t0;
	Dwfl *dwfl;
	int err, i, k;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->threads = calloc(UNWIND_THREADS, sizeof(*p->threads));
	if (!p->threads) {
		snprintf(p->err, sizeof(p->err), "out of memory");
		return -ENOMEM;
	}
	if (procfs__stat(pid, &st)) {
		snprintf(p->err, sizeof(p->err), "process %d is gone", pid);
		return -ESRCH;
	}
	p->state = st.state;
	/* attaching would stop a stopped process anew, or wait on a zombie: leave them be */
	if (st.state == 'T' || st.state == 't' || st.state == 'Z' || st.state == 'X') {
		snprintf(p->err, sizeof(p->err), "%s: not attached, to leave it as it is",
			 st.state == 'Z' || st.state == 'X' ? "a zombie" : "stopped");
		proc_threads(p, p->err);
		return 0;
	}
	dwfl = dwfl_begin(&callbacks);
	if (!dwfl) {
		snprintf(p->err, sizeof(p->err), "libdwfl: %s", dwfl_errmsg(-1));
		return -ENOMEM;
	}
	err = dwfl_linux_proc_report(dwfl, pid);
	if (err || dwfl_report_end(dwfl, NULL, NULL)) {
		snprintf(p->err, sizeof(p->err), "cannot read the maps of %d: %s", pid,
			 err > 0 ? strerror(err) : dwfl_errmsg(-1));
		dwfl_end(dwfl);
		return err > 0 ? -err : -EINVAL;
	}
	t0 = mono_ns();
	err = dwfl_linux_proc_attach(dwfl, pid, false);
	if (err) {
		char who[64] = "";

		tracer(pid, who, sizeof(who));
		snprintf(p->err, sizeof(p->err), "cannot attach to %d: %s%s", pid,
			 err > 0 ? strerror(err) : dwfl_errmsg(-1), who[0] ? who : err == EPERM ?
			 " (another tracer, or no CAP_SYS_PTRACE)" : "");
		dwfl_end(dwfl);
		proc_threads(p, p->err);
		return err > 0 ? -err : -EINVAL;
	}
	a = (struct walk_all){ .dwfl = dwfl, .p = p };
	/* each thread is stopped while its own frames are read, and let go after */
	dwfl_getthreads(dwfl, each_thread, &a);
	p->held_ns = mono_ns() - t0;
	if (p->threads_cut)
		p->threads_cut = count_threads(pid) - p->nthreads;
	for (i = 0; i < p->nthreads; i++)
		for (k = 0; k < p->threads[i].nframes; k++)
			symbolize(dwfl, &p->threads[i].frames[k]);
	dwfl_end(dwfl);
	return 0;
}

void unwind__free(struct unwind_proc *p)
{
	int i;

	for (i = 0; p->threads && i < p->nthreads; i++)
		free(p->threads[i].frames);
	free(p->threads);
	p->threads = NULL;
	p->nthreads = 0;
}

bool unwind__collective_frame(const char *f)
{
	static const char *const prefix[] = { "PMPI_", "MPI_", "nccl", "pnccl", "_ZN4gloo",
					      "_ZN4c10d", "cudaStreamSynchronize",
					      "cudaDeviceSynchronize", "cudaEventSynchronize" };
	size_t i;

	for (i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (!strncmp(f, prefix[i], strlen(prefix[i])))
			return true;
	return false;
}

static bool libc_frame(const struct unwind_frame *f)
{
	return !strncmp(f->lib, "libc.so", 7) || !strncmp(f->lib, "ld-linux", 8) ||
	       !strncmp(f->lib, "libpthread", 10) || !f->func[0];
}

bool unwind__where(pid_t pid, char *coll, size_t ncoll, char *frames, size_t nframes)
{
	const struct unwind_thread *t = NULL;
	struct unwind_proc p;
	size_t len = 0;
	int i, k;

	coll[0] = frames[0] = 0;
	if (unwind__process(pid, &p)) {
		unwind__free(&p);
		return false;
	}
	for (i = 0; i < p.nthreads; i++)
		if (p.threads[i].tid == pid)
			t = &p.threads[i];
	for (i = t ? t->nframes - 1 : -1; i >= 0; i--)
		if (unwind__collective_frame(t->frames[i].func)) {
			snprintf(coll, ncoll, "%s", t->frames[i].func);
			break;
		}
	/* the innermost frame (the call it blocks in), then its own frames */
	for (i = 0, k = 0; t && !coll[0] && i < t->nframes && k < 4 && len + 8 < nframes; i++) {
		if (i && libc_frame(&t->frames[i]))
			continue;
		len += snprintf(frames + len, nframes - len, "%s%s", k++ ? " <- " : "",
				t->frames[i].func);
	}
	unwind__free(&p);
	return coll[0] != 0;
}

static void frames_json(struct json *j, const struct unwind_thread *t)
{
	int i;

	json__key(j, "frames");
	json__arr_begin(j);
	for (i = 0; i < t->nframes; i++) {
		const struct unwind_frame *f = &t->frames[i];

		json__obj_begin(j);
		json__kstr(j, "kind", "native");
		json__kstr(j, "func", f->func[0] ? f->func : NULL);
		json__kstr(j, "file", f->file[0] ? f->file : NULL);
		if (f->line)
			json__kint(j, "line", f->line);
		json__kstr(j, "lib", f->lib[0] ? f->lib : NULL);
		json__kuint(j, "pc", f->pc);
		json__obj_end(j);
	}
	json__arr_end(j);
}

void unwind__json(struct json *j, const struct unwind_proc *p, int rank, const char *job)
{
	char st[2] = { p->state ? p->state : '?', 0 };
	int i;

	json__obj_begin(j);
	json__kstr(j, "type", "stacks");
	json__kint(j, "rank", rank);
	json__kstr(j, "job", job && job[0] ? job : NULL);
	json__kint(j, "pid", p->pid);
	json__kstr(j, "state", st);
	json__kuint(j, "held_ns", p->held_ns);
	if (p->err[0])
		json__kstr(j, "note", p->err);
	if (p->threads_cut)
		json__kint(j, "threads_cut", p->threads_cut);
	json__key(j, "threads");
	json__arr_begin(j);
	for (i = 0; i < p->nthreads; i++) {
		const struct unwind_thread *t = &p->threads[i];
		char ts[2] = { t->state ? t->state : '?', 0 };

		json__obj_begin(j);
		json__kint(j, "tid", t->tid);
		json__kstr(j, "name", t->name);
		json__kstr(j, "state", ts);
		json__kstr(j, "wchan", t->wchan[0] ? t->wchan : NULL);
		json__kint(j, "syscall", t->syscall);
		json__kuint(j, "held_ns", t->held_ns);
		if (t->truncated)
			json__key(j, "truncated"), json__bool(j, true);
		if (t->err[0])
			json__kstr(j, "note", t->err);
		frames_json(j, t);
		json__obj_end(j);
	}
	json__arr_end(j);
	json__obj_end(j);
}

