// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Native stacks of a process's threads with libdwfl: see unwind.h. */
#include <dirent.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
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
static __thread pid_t elf_pid;	/* whose mappings find_elf opens (set before each use) */

/*
 * A module's file as the process mapped it: /proc/PID/map_files/START-END of one of its
 * mappings, not the path /proc/PID/maps names (in a container that path is another file on
 * this machine, or a link out of it). Without the privilege for map_files (CAP_SYS_ADMIN),
 * by its path as libdwfl opens it; a process that is gone gets none.
 */
/* elf_pid's executable file mappings (/proc/PID/maps), read once a look at a process. */
#define MAP_FILES_MAX	8192
static __thread struct {
	pid_t pid;
	int n, err;		/* err: errno of opening the directory */
	struct { unsigned long long lo, hi; } m[MAP_FILES_MAX];
} *mf;

static void map_files(void)
{
	char dir[48], *maps = NULL, *line, *save = NULL;
	struct proc_map pm;
	DIR *d;

	if (!mf && !(mf = calloc(1, sizeof(*mf))))
		return;
	if (mf->pid == elf_pid)
		return;
	mf->pid = elf_pid;
	mf->n = mf->err = 0;
	snprintf(dir, sizeof(dir), "/proc/%d/map_files", elf_pid);
	d = opendir(dir);
	if (!d) {
		mf->err = errno;
		return;
	}
	closedir(d);
	/* code only: a data file it maps (a dataset on a hung NFS mount, a FUSE file, a device)
	 * is never opened, so a look at a stuck job cannot block on it */
	if (procfs__read(elf_pid, "maps", &maps, PROC_MAPS_MAX) <= 0) {
		mf->err = ESRCH;
		free(maps);
		return;
	}
	for (line = strtok_r(maps, "\n", &save); line && mf->n < MAP_FILES_MAX;
	     line = strtok_r(NULL, "\n", &save))
		if (!procfs__parse_maps_line(line, &pm) && pm.perms[2] == 'x' && pm.path[0] == '/') {
			mf->m[mf->n].lo = pm.start;
			mf->m[mf->n++].hi = pm.end;
		}
	free(maps);
}

void unwind__thread_end(void)
{
	free(mf);
	mf = NULL;
}

static int find_elf_mapped(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
			   char **file_name, Elf **elfp)
{
	char path[96];
	Dwarf_Addr start, end;
	int fd = -1, i, oerr = 0;
	struct stat sb;

	if (!name || name[0] != '/')
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, NULL, NULL);
	map_files();
	if (!mf || elf_pid <= 0)
		return -1;
	if (mf->err == EPERM || mf->err == EACCES)
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	for (i = 0; fd < 0 && i < mf->n; i++)
		if (mf->m[i].lo >= start && mf->m[i].lo < end) {
			snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", elf_pid,
				 mf->m[i].lo, mf->m[i].hi);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			oerr = fd < 0 ? errno : 0;
		}
	if (fd < 0 && (oerr == EPERM || oerr == EACCES))
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	if (fd >= 0 && (fstat(fd, &sb) || !S_ISREG(sb.st_mode))) {
		close(fd);
		return -1;
	}
	if (fd >= 0) {
		*file_name = strdup(name);
		*elfp = NULL;
	}
	return fd;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = find_elf_mapped,
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
	struct py_target *py;	/* a CPython's, else NULL */
};

static void py_read(struct py_target *py, struct unwind_thread *t);
static void tracer(pid_t pid, pid_t tid, char *out, size_t n);

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
	/* the first frame: libdwfl holds the thread now, so its Python frames match */
	if (!t->nframes && w->py)
		py_read(w->py, t);
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
	struct py_target *py;
	pid_t gone;		/* a thread that exited while it was read: the walk stopped there */
};

/* Is thread tid of pid still there (not gone, not a zombie)? */
static bool thread_alive(pid_t pid, pid_t tid)
{
	char path[48], *buf = NULL, *p;
	bool alive;

	snprintf(path, sizeof(path), "task/%d/stat", tid);
	alive = procfs__read(pid, path, &buf, 1024) > 0 && (p = strrchr(buf, ')')) &&
		p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	free(buf);
	return alive;
}

static int each_thread(Dwfl_Thread *thread, void *arg)
{
	struct walk_all *a = arg;
	struct unwind_thread *t = new_thread(a->p, dwfl_thread_tid(thread));
	struct walk w = { .dwfl = a->dwfl, .t = t, .py = a->p->python ? a->py : NULL };
	uint64_t t0;

	if (!t)
		return DWARF_CB_ABORT;	/* past UNWIND_THREADS: the rest are counted, not held */
	t->frames = calloc(UNWIND_FRAMES, sizeof(*t->frames));
	if (!t->frames) {
		snprintf(t->err, sizeof(t->err), "out of memory");
		return DWARF_CB_OK;
	}
	t0 = mono_ns();
	if (dwfl_thread_getframes(thread, frame_cb, &w) && !t->nframes) {
		char who[64];

		const char *why = dwfl_errmsg(-1);

		tracer(a->p->pid, t->tid, who, sizeof(who));
		if (!why || !strcmp(why, "Success") || !strcmp(why, "no error"))
			why = "its frames could not be read (did it exit?)";
		snprintf(t->err, sizeof(t->err), "%s%s", why, who);
		/* a thread that died between libdwfl's attach and its read of the registers stays
		 * "attached" inside libdwfl (0.188), which then asserts at the next thread: stop
		 * here, and say so */
		if (!thread_alive(a->p->pid, t->tid)) {
			t->held_ns = mono_ns() - t0;
			a->gone = t->tid;
			return DWARF_CB_ABORT;
		}
	}
	t->held_ns = mono_ns() - t0;
	if (w.py && !t->py)
		py_read(w.py, t);	/* no native frame came: read as it runs */
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

/* " (traced by PID N, comm)" when another tracer holds thread tid of pid, else "". */
static void tracer(pid_t pid, pid_t tid, char *out, size_t n)
{
	char *buf = NULL, *at, *comm = NULL, path[48];
	long tp = 0;

	out[0] = 0;
	snprintf(path, sizeof(path), "task/%d/status", tid);
	if (procfs__read(pid, path, &buf, 4096) > 0 && (at = strstr(buf, "\nTracerPid:")))
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


/* The interpreter's symbols, from a module named python3.* or libpython3.*: a CPython. */
static int py_module(Dwfl_Module *m, void **ud, const char *name, Dwarf_Addr start, void *arg)
{
	struct py_target *py = arg;
	const char *b = base(name);
	int i, n;

	if (strncmp(b, "python3", 7) && strncmp(b, "libpython3", 10))
		return DWARF_CB_OK;
	n = dwfl_module_getsymtab(m);
	for (i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dwfl_module_getsym_info(m, i, &sym, &addr, NULL, NULL, NULL);

		if (!s || sym.st_shndx == SHN_UNDEF || !addr)
			continue;
		if (!strcmp(s, "_PyRuntime"))
			py->runtime = addr;
		else if (!strcmp(s, "Py_Version"))
			py->version_at = addr;
		else if (!strcmp(s, "PyCode_Type"))
			py->code_type = addr;
		else if (!strcmp(s, "PyUnicode_Type"))
			py->unicode_type = addr;
		else if (!strcmp(s, "PyBytes_Type"))
			py->bytes_type = addr;
	}
	return py->runtime ? DWARF_CB_ABORT : DWARF_CB_OK;
}

/* The last number of a status text's "NSpid:" line (the id in the innermost pid namespace),
 * and how many it has; 0 without one. */
static long ns_id(pid_t pid, const char *status, int *levels)
{
	long ids[PROCFS_NS_LEVELS];

	*levels = procfs__status_field(pid, status, "NSpid", ids, PROCFS_NS_LEVELS);
	if (*levels <= 0 || *levels > PROCFS_NS_LEVELS)
		return *levels = 0;
	return ids[*levels - 1];
}

/*
 * A thread state names its thread by its id in the process's own pid namespace; in a
 * container that is not the id we see. Each thread's NSpid line maps one to the other.
 */
static void tids_to_host(struct py_target *py)
{
	char path[64];
	struct dirent *de;
	int levels, i;
	DIR *d;

	for (i = 0; i < py->ntstates; i++)	/* an id no kernel gives: hostile */
		if (py->tstates[i].tid == 0 || py->tstates[i].tid > 0x3fffffff)
			py->tstates[i].tid = 0;
	ns_id(py->pid, "status", &levels);
	if (levels < 2)
		return;		/* the same namespace: the ids are ours */
	snprintf(path, sizeof(path), "/proc/%d/task", py->pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10), ns;

		if (*end || tid <= 0)
			continue;
		snprintf(path, sizeof(path), "task/%ld/status", tid);
		ns = ns_id(py->pid, path, &levels);
		for (i = 0; ns > 0 && i < py->ntstates; i++)
			if (py->tstates[i].tid == (uint64_t)ns && !(py->tstates[i].tid >> 32)) {
				py->tstates[i].tid = (uint64_t)tid | 1ULL << 32;	/* mapped */
				break;
			}
	}
	if (d)
		closedir(d);
	for (i = 0; i < py->ntstates; i++)
		py->tstates[i].tid = py->tstates[i].tid >> 32 ? py->tstates[i].tid & 0xffffffff : 0;
}

/* The interpreter's symbols in dwfl's modules, for process pid; false: not a CPython. */
static bool py_syms(Dwfl *dwfl, pid_t pid, struct py_target *py)
{
	memset(py, 0, sizeof(*py));
	py->pid = pid;
	if (dwfl)
		dwfl_getmodules(dwfl, py_module, py, 0);
	return py->runtime && py->code_type;
}

/* Is p a CPython whose frames can be read? Sets p->python, or p->py_note with why not. */
static void py_open(Dwfl *dwfl, struct unwind_proc *p, struct py_target *py)
{
	if (!py_syms(dwfl, p->pid, py))
		return;		/* not a CPython */
	if (pyframes__open(py)) {
		snprintf(p->py_note, sizeof(p->py_note), "%s", py->note);
		pyframes__close(py);
		return;
	}
	tids_to_host(py);
	p->python = true;
}

int unwind__python_threads(pid_t pid, uint64_t *tids, uint64_t *tstates, int max)
{
	struct py_target py = {};
	Dwfl *dwfl = dwfl_begin(&callbacks);
	int n = 0, i;

	if (!dwfl)
		return 0;
	elf_pid = pid;
	if (mf)
		mf->pid = 0;
	if (!dwfl_linux_proc_report(dwfl, pid) && !dwfl_report_end(dwfl, NULL, NULL) &&
	    py_syms(dwfl, pid, &py) && !pyframes__open(&py)) {
		tids_to_host(&py);
		for (i = 0; i < py.ntstates && n < max; i++) {
			char task[48];

			/* a thread of this process: another's id from hostile memory is not let in */
			snprintf(task, sizeof(task), "/proc/%d/task/%llu", pid,
				 (unsigned long long)py.tstates[i].tid);
			if (py.tstates[i].tid && !access(task, F_OK)) {
				tids[n] = py.tstates[i].tid;
				tstates[n++] = py.tstates[i].tstate;
			}
		}
	}
	pyframes__close(&py);
	dwfl_end(dwfl);
	return n;
}

/* t's Python frames, kept to be merged after its native frames are named. */
static void py_read(struct py_target *py, struct unwind_thread *t)
{
	int i;

	for (i = 0; i < py->ntstates && py->tstates[i].tid != (uint64_t)t->tid; i++)
		;
	if (i == py->ntstates)
		return;
	t->py = calloc(PY_FRAMES_MAX, sizeof(*t->py));
	if (t->py)
		t->npy = pyframes__thread(py, t->tid, t->py, PY_FRAMES_MAX, &t->py_truncated,
					  t->py_err, sizeof(t->py_err));
}

static void py_frame_to(struct unwind_frame *f, const struct py_frame *y)
{
	memset(f, 0, sizeof(*f));
	f->python = true;
	snprintf(f->func, sizeof(f->func), "%s", y->func);
	snprintf(f->file, sizeof(f->file), "%s", y->file);
	f->line = y->line;
}

/*
 * Python frames go inside the native frame that runs them: each _PyEval_EvalFrameDefault
 * call evaluates the Python frames up to one marked as its entry. What is left (no native
 * frames: a stopped process) goes outermost.
 */
static void py_merge(struct unwind_thread *t)
{
	struct unwind_frame *out;
	int i, k = 0, n = 0;

	if (!t->npy)
		goto out;
	out = calloc(t->nframes + t->npy, sizeof(*out));
	if (!out)
		goto out;
	for (i = 0; i < t->nframes; i++) {
		if (!strcmp(t->frames[i].func, "_PyEval_EvalFrameDefault"))
			while (k < t->npy) {
				py_frame_to(&out[n++], &t->py[k]);
				if (t->py[k++].entry)
					break;
			}
		out[n++] = t->frames[i];
	}
	while (k < t->npy)
		py_frame_to(&out[n++], &t->py[k++]);
	free(t->frames);
	t->frames = out;
	t->nframes = n;
	t->truncated |= t->py_truncated;
out:
	free(t->py);
	t->py = NULL;
	t->npy = 0;
}

static int load_elf(Dwfl_Module *m, void **ud, const char *name, Dwarf_Addr start, void *arg)
{
	Dwarf_Addr bias;

	if (dwfl_module_getelf(m, &bias))
		dwfl_module_eh_cfi(m, &bias);	/* and its .eh_frame, parsed */
	return DWARF_CB_OK;
}

/* Threads of a process we do not attach: their /proc state, and their Python frames. */
static void unattached(struct unwind_proc *p, struct py_target *py, const char *why)
{
	int i;

	proc_threads(p, why);
	for (i = 0; p->python && i < p->nthreads; i++) {
		py_read(py, &p->threads[i]);
		py_merge(&p->threads[i]);
	}
}

int unwind__process(pid_t pid, struct unwind_proc *p)
{
	struct py_target py = {};
	struct proc_stat st;
	struct walk_all a;
	uint64_t t0;
	Dwfl *dwfl;
	int err, i, k, nice_was;
	bool stopped;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	elf_pid = pid;
	if (mf)
		mf->pid = 0;	/* its mappings now, not a past look's */
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
	stopped = st.state == 'T' || st.state == 't' || st.state == 'Z' || st.state == 'X';
	dwfl = dwfl_begin(&callbacks);
	if (!dwfl) {
		snprintf(p->err, sizeof(p->err), "libdwfl: %s", dwfl_errmsg(-1));
		return -ENOMEM;
	}
	err = dwfl_linux_proc_report(dwfl, pid);
	if (dwfl_report_end(dwfl, NULL, NULL) && !err)
		err = -1;
	if (err && !stopped) {
		snprintf(p->err, sizeof(p->err), "cannot read the maps of %d: %s", pid,
			 err > 0 ? strerror(err) : dwfl_errmsg(-1));
		dwfl_end(dwfl);
		return err > 0 ? -err : -EINVAL;
	}
	py_open(dwfl, p, &py);
	if (stopped) {
		snprintf(p->err, sizeof(p->err), "%s: not attached, to leave it as it is",
			 st.state == 'Z' || st.state == 'X' ? "a zombie" : "stopped");
		unattached(p, &py, p->err);
		err = 0;
		goto out;
	}
	/* open every module's file now: not while a thread is held */
	dwfl_getmodules(dwfl, load_elf, NULL, 0);
	t0 = mono_ns();
	err = dwfl_linux_proc_attach(dwfl, pid, false);
	if (err) {
		char who[64] = "";

		tracer(pid, pid, who, sizeof(who));
		snprintf(p->err, sizeof(p->err), "cannot attach to %d: %s%s", pid,
			 err > 0 ? strerror(err) : dwfl_errmsg(-1), who[0] ? who : err == EPERM ?
			 " (another tracer, or no CAP_SYS_PTRACE)" : "");
		unattached(p, &py, p->err);
		err = err > 0 ? -err : -EINVAL;
		goto out;
	}
	a = (struct walk_all){ .dwfl = dwfl, .p = p, .py = &py };
	/* each thread is stopped while its own frames are read, and let go after; meanwhile
	 * this thread runs at the highest nice it may, so that the ranks it holds wait on it
	 * as little as a busy machine allows (without CAP_SYS_NICE it stays as it is) */
	nice_was = getpriority(PRIO_PROCESS, (id_t)gettid());
	setpriority(PRIO_PROCESS, (id_t)gettid(), -20);
	dwfl_getthreads(dwfl, each_thread, &a);
	setpriority(PRIO_PROCESS, (id_t)gettid(), nice_was);
	p->held_ns = mono_ns() - t0;
	if (procfs__stat(pid, &st) || st.state == 'Z' || st.state == 'X') {
		for (i = 0, k = 0; i < p->nthreads; i++)
			k += p->threads[i].nframes > 0;
		snprintf(p->err, sizeof(p->err), "the process exited while it was read: %d of "
			 "%d thread(s) have frames", k, p->nthreads);
	} else if (a.gone) {
		k = count_threads(pid) - p->nthreads;
		snprintf(p->err, sizeof(p->err), "thread %d exited while it was read: the %d "
			 "thread(s) after it were not read", a.gone, k > 0 ? k : 0);
	}
	if (p->threads_cut) {	/* how many there are now; at least one was left out */
		k = count_threads(pid) - p->nthreads;
		p->threads_cut = k > 0 ? k : 1;
	}
	for (i = 0; i < p->nthreads; i++) {
		for (k = 0; k < p->threads[i].nframes; k++)
			if (!p->threads[i].frames[k].python)
				symbolize(dwfl, &p->threads[i].frames[k]);
		py_merge(&p->threads[i]);
	}
out:
	pyframes__close(&py);
	dwfl_end(dwfl);
	return err;
}

void unwind__free(struct unwind_proc *p)
{
	int i;

	for (i = 0; p->threads && i < p->nthreads; i++) {
		free(p->threads[i].frames);
		free(p->threads[i].py);
	}
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
	return !f->python && (!strncmp(f->lib, "libc.so", 7) || !strncmp(f->lib, "ld-linux", 8) ||
			      !strncmp(f->lib, "libpthread", 10) || !f->func[0]);
}

/* The interpreter's own frames: between Python frames they only say "a call was made". */
static bool interp_frame(const struct unwind_frame *f)
{
	return !f->python && (!strncmp(f->lib, "python3", 7) || !strncmp(f->lib, "libpython3", 10));
}

/*
 * t's stack in a line, innermost first: from the outermost collective frame it is inside
 * (or the call it blocks in), out through its own frames; in a Python thread through its
 * Python frames ("run_step (train.py:685)") once they begin. At most 8 frames.
 */
static void summary(const struct unwind_thread *t, int from, char *out, size_t n)
{
	size_t len = 0;
	int i, k = 0;
	bool py = false, has_py = false;

	out[0] = 0;
	for (i = 0; i < t->nframes; i++)
		has_py |= t->frames[i].python;
	for (i = from; i < t->nframes && k < 8 && len + 8 < n; i++) {
		const struct unwind_frame *f = &t->frames[i];
		const char *sep = k ? " <- " : "";

		if (i > from && (libc_frame(f) || interp_frame(f) || (py && !f->python) ||
				 (has_py && !f->python && !py)))
			continue;
		py |= f->python;
		if (f->python && f->line > 0)
			len += snprintf(out + len, n - len, "%s%s (%s:%d)", sep, f->func,
					base(f->file), f->line);
		else if (f->python)	/* no line there: not "file:0" */
			len += snprintf(out + len, n - len, "%s%s (%s)", sep, f->func,
					base(f->file));
		else
			len += snprintf(out + len, n - len, "%s%.*s", sep,
					(int)strcspn(f->func[0] ? f->func : "??", "@"),
					f->func[0] ? f->func : "??");
		k++;
	}
	if (len >= n)
		memcpy(out + n - 4, "...", 4);
}

bool unwind__where_of(const struct unwind_proc *p, char *coll, size_t ncoll, char *stack,
		      size_t nstack)
{
	const struct unwind_thread *t = NULL;
	int i, from = 0;

	coll[0] = stack[0] = 0;
	for (i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == p->pid)
			t = &p->threads[i];
	for (i = t ? t->nframes - 1 : -1; i >= 0; i--)
		if (unwind__collective_frame(t->frames[i].func)) {
			snprintf(coll, ncoll, "%s", t->frames[i].func);
			from = i;
			break;
		}
	if (t)
		summary(t, from, stack, nstack);
	return coll[0] != 0;
}

bool unwind__where(pid_t pid, char *coll, size_t ncoll, char *stack, size_t nstack)
{
	struct unwind_proc p;
	bool in;

	unwind__process(pid, &p);
	in = unwind__where_of(&p, coll, ncoll, stack, nstack);
	unwind__free(&p);
	return in;
}

const struct unwind_thread *unwind__main_thread(const struct unwind_proc *p)
{
	int i;

	for (i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == p->pid)
			return &p->threads[i];
	return p->nthreads ? &p->threads[0] : NULL;
}

void unwind__class_key(const struct unwind_proc *p, char *key, size_t n)
{
	const struct unwind_thread *t = unwind__main_thread(p);
	size_t len = 0;
	int i;

	key[0] = 0;
	if (!t || !t->nframes) {
		snprintf(key, n, "(%s)", p->err[0] ? p->err : "no frames");
		return;
	}
	for (i = t->nframes - 1; i >= 0 && len + 2 < n; i--) {
		const char *f = t->frames[i].func[0] ? t->frames[i].func : "??";

		len += snprintf(key + len, n - len, "%s%s", len ? ";" : "", f);
		if (unwind__collective_frame(f))
			break;
	}
}

static void frames_json(struct json *j, const struct unwind_thread *t)
{
	int i;

	json__key(j, "frames");
	json__arr_begin(j);
	for (i = 0; i < t->nframes; i++) {
		const struct unwind_frame *f = &t->frames[i];

		json__obj_begin(j);
		json__kstr(j, "kind", f->python ? "python" : "native");
		json__kstr(j, "func", f->func[0] ? f->func : NULL);
		json__kstr(j, "file", f->file[0] ? f->file : NULL);
		if (f->line)
			json__kint(j, "line", f->line);
		json__kstr(j, "lib", f->lib[0] ? f->lib : NULL);
		if (!f->python)
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
	if (p->python)
		json__kstr(j, "python", pyframes__built_version());
	if (p->py_note[0])
		json__kstr(j, "python_note", p->py_note);
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
		if (t->py_err[0])
			json__kstr(j, "python_note", t->py_err);
		frames_json(j, t);
		json__obj_end(j);
	}
	json__arr_end(j);
	json__obj_end(j);
}


/* ---- samples: perf's registers and stack copy, unwound from CFI (perf --call-graph dwarf) ---- */

struct unwind_space {
	Dwfl *dwfl;
	pid_t pid;
	bool ok;
	/* the sample being unwound */
	pid_t tid;
	const uint64_t *regs;
	const uint8_t *stack;
	size_t len;
};

static pid_t s_next_thread(Dwfl *dwfl, void *arg, void **targ)
{
	struct unwind_space *sp = arg;

	if (*targ)
		return 0;
	*targ = sp;
	return sp->tid;
}

static bool s_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **targ)
{
	*targ = arg;
	return true;
}

/* Only the copied stack: what the sample did not copy is not guessed from the live process. */
static bool s_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwind_space *sp = arg;
	uint64_t base = sp->regs[7];	/* rsp */

	if (addr < base || addr - base > sp->len || sp->len - (addr - base) < sizeof(*result))
		return false;
	memcpy(result, sp->stack + (addr - base), sizeof(*result));
	return true;
}

static bool s_set_regs(Dwfl_Thread *thread, void *targ)
{
	struct unwind_space *sp = targ;
	Dwarf_Word r[UNWIND_SAMPLE_REGS];
	int i;

	for (i = 0; i < UNWIND_SAMPLE_REGS; i++)
		r[i] = sp->regs[i];
	return dwfl_thread_state_registers(thread, 0, UNWIND_SAMPLE_REGS, r);
}

static const Dwfl_Thread_Callbacks sample_callbacks = {
	.next_thread = s_next_thread,
	.get_thread = s_get_thread,
	.memory_read = s_memory_read,
	.set_initial_registers = s_set_regs,
};

struct unwind_space *unwind__space(pid_t pid, const char *maps)
{
	struct unwind_space *sp = calloc(1, sizeof(*sp));
	FILE *f;
	int err;

	if (!sp)
		return NULL;
	sp->pid = pid;
	elf_pid = pid;
	if (mf)
		mf->pid = 0;
	sp->dwfl = dwfl_begin(&callbacks);
	if (!sp->dwfl)
		return sp;
	if (maps) {
		f = fmemopen((void *)maps, strlen(maps), "r");
		err = f ? dwfl_linux_proc_maps_report(sp->dwfl, f) : -1;
		if (f)
			fclose(f);
	} else {
		err = dwfl_linux_proc_report(sp->dwfl, pid);
	}
	if (dwfl_report_end(sp->dwfl, NULL, NULL) || err)
		return sp;
	sp->ok = dwfl_attach_state(sp->dwfl, NULL, pid, &sample_callbacks, sp);
	return sp;
}

void unwind__space_free(struct unwind_space *sp)
{
	if (!sp)
		return;
	if (sp->dwfl)
		dwfl_end(sp->dwfl);
	free(sp);
}

struct sample_walk {
	struct unwind_frame *out;
	int max, n;
};

static int sample_frame(Dwfl_Frame *state, void *arg)
{
	struct sample_walk *w = arg;
	struct unwind_frame *f;
	Dwarf_Addr pc;
	bool activation;

	if (w->n == w->max || !dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	f = &w->out[w->n++];
	memset(f, 0, sizeof(*f));
	f->pc = pc;
	f->at = activation ? pc : pc - 1;
	return DWARF_CB_OK;
}

int unwind__sample(struct unwind_space *sp, pid_t tid, const uint64_t regs[UNWIND_SAMPLE_REGS],
		   const uint8_t *stack, size_t len, struct unwind_frame *out, int max)
{
	struct sample_walk w = { .out = out, .max = max };
	int i;

	if (!sp || !sp->ok || max <= 0)
		return 0;
	elf_pid = sp->pid;
	sp->tid = tid;
	sp->regs = regs;
	sp->stack = stack;
	sp->len = len;
	dwfl_getthread_frames(sp->dwfl, tid, sample_frame, &w);
	for (i = 0; i < w.n; i++)
		symbolize(sp->dwfl, &out[i]);
	return w.n;
}

void unwind__perf_regs(const uint64_t perf[UNWIND_SAMPLE_REGS], uint64_t dwarf[UNWIND_SAMPLE_REGS])
{
	/* perf's x86-64 order (the bits of UNWIND_PERF_REGS_MASK): ax bx cx dx si di bp sp ip
	 * r8..r15; DWARF's: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip */
	static const int to_dwarf[UNWIND_SAMPLE_REGS] = { 0, 3, 2, 1, 4, 5, 6, 7, 16,
							   8, 9, 10, 11, 12, 13, 14, 15 };
	int i;

	for (i = 0; i < UNWIND_SAMPLE_REGS; i++)
		dwarf[to_dwarf[i]] = perf[i];
}

bool unwind__space_python(struct unwind_space *sp, struct py_target *py)
{
	return sp && sp->dwfl && py_syms(sp->dwfl, sp->pid, py);
}
