// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* 99 Hz stack samples of rank threads (perf_event cpu-clock) and their symbolization. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "elfsym.h"
#include "libs.h"
#include "procfs.h"
#include "stacks.h"
#include "unwind.h"

#define RING_PAGES	8	/* data pages per thread: ~1000 samples of 16 frames */
#define RING_PAGES_DWARF 64	/* with stack copies: ~15 samples, 150 ms at 99 Hz */
#define REC_MAX		65536	/* a record's size is a u16 */
#define SYM_NAME_MAX	256	/* a symbol's name is cut here */
#define SYM_BYTES_MAX	(64u << 20)	/* names kept in all: a hostile ELF cannot exhaust us */
#define SYMTABS_MAX	512	/* files whose symbols are read (a PyTorch rank maps ~150) */
#define THREADS_PER_RANK 64	/* so one rank cannot take every sampling slot */

static int open_one(struct stacks *st, pid_t pid, pid_t tid)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t dwarf_len = (size_t)page * (1 + RING_PAGES_DWARF);
	bool dwarf = st->stack_req && st->rings + dwarf_len <= STACKS_RING_BUDGET;
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = STACKS_HZ,
		.freq = 1,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN,
		.exclude_callchain_kernel = 1,
		.exclude_hv = 1,
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,	/* the clock of every other rankscope record */
		.sample_max_stack = STACKS_FRAMES + 2,
	};
	struct stacks_ev *e;
	int fd = -1;

	if (st->nev >= STACKS_THREADS_MAX)
		return -E2BIG;
	if (dwarf) {	/* with the registers and a copy of the stack, where the kernel can */
		a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a.sample_regs_user = UNWIND_PERF_REGS_MASK;
		a.sample_stack_user = st->stack_req & ~7u;
		fd = syscall(__NR_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			dwarf = false;
			a.sample_type &= ~(uint64_t)(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
			a.sample_regs_user = a.sample_stack_user = 0;
		}
	}
	if (fd < 0)
		fd = syscall(__NR_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = &st->ev[st->nev];
	e->len = dwarf ? dwarf_len : (size_t)page * (1 + RING_PAGES);
	e->dwarf = dwarf;
	e->ring = mmap(NULL, e->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (e->ring == MAP_FAILED) {
		close(fd);
		return -errno;
	}
	e->fd = fd;
	e->pid = pid;
	e->tid = tid;
	st->nev++;
	if (dwarf)
		st->rings += e->len;
	return 0;
}

int stacks__add(struct stacks *st, pid_t pid)
{
	char path[64];
	struct dirent *de;
	long tid;
	int n = 0, err;
	DIR *d;

	/* the mappings as they are now: at write time the pid may be another process */
	if (st->nsnap < STACKS_PIDS_MAX) {
		char *maps = NULL;

		if (procfs__read(pid, "maps", &maps, 4 << 20) > 0) {
			st->snap[st->nsnap].pid = pid;
			st->snap[st->nsnap++].maps = maps;
		} else {
			free(maps);
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < THREADS_PER_RANK) {
		if (parse_long(de->d_name, 1, 4194304, &tid))
			continue;
		err = open_one(st, pid, tid);
		if (err && !st->err)
			st->err = err;
		n += !err;
	}
	closedir(d);
	return n;
}

/*
 * After the call chain: abi, the registers (when abi says the thread was in user space), the
 * stack's size, the copy and how much of it is the thread's (dyn_size). Kept while the
 * capture's budget lasts; a sample without a copy keeps its frame-pointer chain.
 */
static void keep_stack(struct stacks *st, struct stack_sample *s, const uint8_t *rec,
		       size_t len, size_t off)
{
	uint64_t abi, size, dyn;

	if (len < off + 8)
		return;
	memcpy(&abi, rec + off, 8);
	off += 8;
	if (abi == PERF_SAMPLE_REGS_ABI_NONE) {
		off += 0;
	} else {
		if (len < off + 8 * STACKS_REGS)
			return;
		memcpy(s->regs, rec + off, 8 * STACKS_REGS);
		off += 8 * STACKS_REGS;
	}
	if (len < off + 8)
		return;
	memcpy(&size, rec + off, 8);
	off += 8;
	if (!size || abi == PERF_SAMPLE_REGS_ABI_NONE || size > len - off || len - off - size < 8)
		return;
	memcpy(&dyn, rec + off + size, 8);
	if (dyn > size)
		dyn = size;
	if (!dyn)
		return;
	if (st->stack_bytes + dyn > STACKS_STACK_BUDGET) {
		st->stack_cut++;
		return;
	}
	s->stack = malloc(dyn);
	if (!s->stack) {
		st->stack_cut++;
		return;
	}
	memcpy(s->stack, rec + off, dyn);
	s->stack_len = (uint32_t)dyn;
	st->stack_bytes += dyn;
}

static void keep(struct stacks *st, const struct stacks_ev *e, const uint8_t *rec, size_t len)
{
	struct stack_sample *s, *ns;
	uint64_t nr, ip;
	uint32_t pid, tid;
	uint64_t t;
	size_t i, off = 8;	/* after the perf_event_header */

	if (len < off + 8 + 8 + 8)
		return;
	memcpy(&pid, rec + off, 4);
	memcpy(&tid, rec + off + 4, 4);
	memcpy(&t, rec + off + 8, 8);
	memcpy(&nr, rec + off + 16, 8);
	off += 24;
	if (nr > (len - off) / 8)
		return;
	if (st->ns >= STACKS_SAMPLES_MAX) {
		st->dropped++;
		return;
	}
	if (!(st->ns & 1023)) {
		ns = realloc(st->s, (st->ns + 1024) * sizeof(*ns));
		if (!ns) {
			st->dropped++;
			return;
		}
		st->s = ns;
	}
	s = &st->s[st->ns];
	memset(s, 0, sizeof(*s));
	s->pid = e->pid;	/* the rank's pid: its track, whatever the record says */
	s->tid = tid;
	s->t_ns = t;
	for (i = 0; i < nr && s->nframes < STACKS_FRAMES; i++) {
		memcpy(&ip, rec + off + i * 8, 8);
		if (ip >= (uint64_t)-4095)	/* PERF_CONTEXT_USER and friends */
			continue;
		s->ip[s->nframes++] = ip;
	}
	off += nr * 8;
	if (e->dwarf)
		keep_stack(st, s, rec, len, off);
	if (s->nframes || s->stack)
		st->ns++;
	else
		free(s->stack);
	(void)pid;
}

void stacks__poll(struct stacks *st)
{
	struct perf_event_mmap_page *m;
	struct perf_event_header h;
	uint64_t head, tail, size;
	uint8_t *data;
	uint8_t *rec;
	int k;

	if (!st->rec)
		st->rec = malloc(REC_MAX);
	rec = st->rec;
	for (k = 0; rec && k < st->nev; k++) {
		struct stacks_ev *e = &st->ev[k];

		m = e->ring;
		data = (uint8_t *)e->ring + m->data_offset;
		size = m->data_size;
		head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
		tail = m->data_tail;
		while (tail + sizeof(h) <= head) {
			size_t i, n;

			for (i = 0; i < sizeof(h); i++)
				((uint8_t *)&h)[i] = data[(tail + i) % size];
			if (!h.size || tail + h.size > head)
				break;
			n = h.size;	/* a u16: within REC_MAX; the ring may wrap inside it */
			i = tail % size;
			if (i + n <= size) {
				memcpy(rec, data + i, n);
			} else {
				memcpy(rec, data + i, size - i);
				memcpy(rec + size - i, data, n - (size - i));
			}
			if (h.type == PERF_RECORD_SAMPLE)
				keep(st, e, rec, n);
			else if (h.type == PERF_RECORD_LOST && n >= 8 + 16) {
				uint64_t lost;	/* after the header: id, then lost */

				memcpy(&lost, rec + 8 + 8, sizeof(lost));
				st->dropped += lost;
			}
			tail += h.size;
		}
		__atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
	}
}

void stacks__stop(struct stacks *st)
{
	int k;

	stacks__poll(st);
	for (k = 0; k < st->nev; k++) {
		munmap(st->ev[k].ring, st->ev[k].len);
		close(st->ev[k].fd);
	}
	st->nev = 0;
}

void stacks__add_py(void *ctx, const struct pys_rec *r)
{
	struct stacks *st = ctx;
	struct stacks_py *np, *y;
	uint32_t n = r->nframes < PYS_FRAMES ? r->nframes : PYS_FRAMES;
	size_t bytes = n * sizeof(*r->f);

	if (!n)
		return;
	if (st->py_bytes + bytes > STACKS_PY_BYTES_MAX || st->npy >= STACKS_SAMPLES_MAX) {
		st->py_cut++;
		return;
	}
	if (!(st->npy & 1023)) {
		np = realloc(st->py, (st->npy + 1024) * sizeof(*np));
		if (!np) {
			st->py_cut++;
			return;
		}
		st->py = np;
	}
	y = &st->py[st->npy];
	y->f = malloc(bytes);
	if (!y->f) {
		st->py_cut++;
		return;
	}
	memcpy(y->f, r->f, bytes);
	y->tid = r->tid;
	y->n = (uint16_t)n;
	y->truncated = r->truncated;
	y->t_ns = r->t_ns;
	st->py_bytes += bytes;
	st->npy++;
}

/* ---- symbolization, once, when the capture is written ---- */

struct sym {
	uint64_t addr, size;
	char *name;
};

struct symtab {
	uint64_t dev, ino;
	struct sym *s;
	size_t n;
	char *file;		/* the basename, for frames without a symbol */
	struct elfsym *e;	/* kept open: each mapping's load bias comes from it */
};

struct smap {
	uint64_t start, end, pgoff, bias;
	bool bias_ok;
	struct symtab *tab;	/* NULL: not a file ([vdso]) */
	char name[16];
};

struct pmaps {
	uint32_t pid;
	struct smap *m;
	size_t n;
};

static struct {
	struct symtab **tabs;	/* each its own allocation: mappings point at them */
	size_t ntabs;
	size_t bytes;		/* symbol names kept, in all */
	struct pmaps *procs;
	size_t nprocs;
	struct {
		uint32_t pid;
		struct unwind_space *sp;
		struct py_target py;	/* its interpreter's symbols */
		bool python;
	} spaces[STACKS_PIDS_MAX];
	size_t nspaces;
	struct pyname {	/* Python frames named, direct-mapped by (pid, code, position) */
		uint32_t pid;
		uint64_t code, prev;
		char name[256];
	} *pyc;
} cache;

#define PYNAME_SLOTS	4096

static int add_sym(const char *name, uint64_t vaddr, uint64_t size, bool is_func, void *ctx)
{
	struct symtab *t = ctx;
	struct sym *ns;

	size_t len = strnlen(name, SYM_NAME_MAX);

	if (!is_func || !vaddr || t->n >= 2000000 || cache.bytes + len + 1 > SYM_BYTES_MAX)
		return 0;
	if (!(t->n & 4095)) {
		ns = realloc(t->s, (t->n + 4096) * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		t->s = ns;
	}
	t->s[t->n].name = strndup(name, len);
	if (!t->s[t->n].name)
		return -ENOMEM;
	cache.bytes += len + 1;
	t->s[t->n].addr = vaddr;
	t->s[t->n].size = size;
	t->n++;
	return 0;
}

static int by_addr(const void *x, const void *y)
{
	const struct sym *a = x, *b = y;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The symbols of the file pid mapped (dev, ino at path), loaded once for every process. */
static struct symtab *symtab_of(pid_t pid, const struct proc_lib *pl)
{
	struct symtab *t, **nt;
	struct elfsym *e = NULL;
	const char *via, *base;
	char path[64];
	size_t i;
	int fd;

	for (i = 0; i < cache.ntabs; i++)
		if (cache.tabs[i]->dev == pl->dev && cache.tabs[i]->ino == pl->inode)
			return cache.tabs[i];
	if (cache.ntabs >= SYMTABS_MAX)
		return NULL;
	nt = realloc(cache.tabs, (cache.ntabs + 1) * sizeof(*nt));
	if (!nt)
		return NULL;
	cache.tabs = nt;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	cache.tabs[cache.ntabs++] = t;
	t->dev = pl->dev;
	t->ino = pl->inode;
	base = strrchr(pl->path, '/');
	t->file = strdup(base ? base + 1 : pl->path);
	fd = libs__open_mapped(pid, pl, &via, NULL);	/* the file the process really mapped */
	if (fd < 0)
		return t;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!elfsym__open(path, &e)) {
		elfsym__foreach(e, add_sym, t);
		if (t->n)
			qsort(t->s, t->n, sizeof(*t->s), by_addr);
		t->e = e;
	}
	close(fd);
	return t;
}

static struct pmaps *maps_of(const struct stacks *st, pid_t pid)
{
	struct pmaps *p, *np;
	struct proc_lib pl;
	char *maps = NULL, *line, *save = NULL, perms[8], dev[16], file[4096];
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	size_t i;

	for (i = 0; i < cache.nprocs; i++)
		if (cache.procs[i].pid == (uint32_t)pid)
			return &cache.procs[i];
	np = realloc(cache.procs, (cache.nprocs + 1) * sizeof(*np));
	if (!np)
		return NULL;
	cache.procs = np;
	p = &cache.procs[cache.nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	for (i = 0; i < (size_t)st->nsnap && !maps; i++)
		if (st->snap[i].pid == (uint32_t)pid)
			maps = strdup(st->snap[i].maps);
	if (!maps)
		return p;	/* no snapshot: no symbols rather than another process's */
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct smap *nm;

		file[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %4095s", &start, &end, perms, &off,
			   dev, &ino, file) < 6 || perms[2] != 'x' ||
		    (file[0] != '/' && file[0] != '[') || sscanf(dev, "%x:%x", &maj, &min) != 2)
			continue;
		nm = realloc(p->m, (p->n + 1) * sizeof(*nm));
		if (!nm)
			break;
		p->m = nm;
		if (file[0] == '[') {	/* [vdso] and the like: named, no symbols */
			p->m[p->n] = (struct smap){ .start = start, .end = end };
			snprintf(p->m[p->n].name, sizeof(p->m[p->n].name), "%.15s", file);
			p->n++;
			continue;
		}
		memset(&pl, 0, sizeof(pl));
		pl.found = true;
		snprintf(pl.path, sizeof(pl.path), "%s", file);
		pl.dev = makedev(maj, min);
		pl.inode = ino;
		pl.start = start;
		pl.end = end;
		pl.pgoff = off;
		p->m[p->n] = (struct smap){ .start = start, .end = end, .pgoff = off,
					    .tab = symtab_of(pid, &pl) };
		if (p->m[p->n].tab && p->m[p->n].tab->e)
			p->m[p->n].bias_ok = !elfsym__load_bias(p->m[p->n].tab->e, start, off,
								&p->m[p->n].bias);
		p->n++;
	}
	free(maps);
	return p;
}

static const struct smap *map_at(const struct pmaps *p, uint64_t ip)
{
	size_t i;

	for (i = 0; p && i < p->n; i++)
		if (ip >= p->m[i].start && ip < p->m[i].end)
			return &p->m[i];
	return NULL;
}

static void frame(struct pmaps *p, uint64_t ip, char *buf, size_t n)
{
	const struct sym *s;
	size_t i, lo, hi, mid;
	uint64_t v;

	for (i = 0; p && i < p->n; i++) {
		const struct smap *m = &p->m[i];

		if (ip < m->start || ip >= m->end)
			continue;
		if (!m->tab) {
			snprintf(buf, n, "%s+0x%" PRIx64, m->name, ip - m->start);
			return;
		}
		if (m->bias_ok && m->tab->n) {
			v = ip - m->bias;
			lo = 0;
			hi = m->tab->n;
			while (hi - lo > 1) {	/* the last symbol at or below v */
				mid = (lo + hi) / 2;
				if (m->tab->s[mid].addr <= v)
					lo = mid;
				else
					hi = mid;
			}
			s = &m->tab->s[lo];
			if (s->addr <= v && (v < s->addr + s->size ||
					     (!s->size && (lo + 1 == m->tab->n || v < m->tab->s[lo + 1].addr)))) {
				snprintf(buf, n, "%s", s->name);
				return;
			}
		}
		snprintf(buf, n, "%s+0x%" PRIx64, m->tab->file ? m->tab->file : "?",
			 ip - m->start + m->pgoff);
		return;
	}
	snprintf(buf, n, "0x%" PRIx64, ip);
}

/* The unwinding space of pid's modules as they were mapped when sampling began. */
static struct unwind_space *space_of(const struct stacks *st, pid_t pid)
{
	const char *maps = NULL;
	size_t i;

	for (i = 0; i < cache.nspaces; i++)
		if (cache.spaces[i].pid == (uint32_t)pid)
			return cache.spaces[i].sp;
	if (cache.nspaces == STACKS_PIDS_MAX)
		return NULL;
	for (i = 0; i < (size_t)st->nsnap && !maps; i++)
		if (st->snap[i].pid == (uint32_t)pid)
			maps = st->snap[i].maps;
	if (!maps)
		return NULL;	/* no snapshot: no frames rather than another process's */
	cache.spaces[cache.nspaces].pid = pid;
	cache.spaces[cache.nspaces].sp = unwind__space(pid, maps);
	cache.spaces[cache.nspaces].python = unwind__space_python(cache.spaces[cache.nspaces].sp,
								  &cache.spaces[cache.nspaces].py);
	return cache.spaces[cache.nspaces++].sp;
}

/* The interpreter of pid, for naming its Python frames; NULL: not a CPython. */
static struct py_target *python_of(const struct stacks *st, pid_t pid)
{
	size_t i;

	space_of(st, pid);
	for (i = 0; i < cache.nspaces; i++)
		if (cache.spaces[i].pid == (uint32_t)pid)
			return cache.spaces[i].python ? &cache.spaces[i].py : NULL;
	return NULL;
}

static int by_tid_time(const void *x, const void *y)
{
	const struct stacks_py *a = x, *b = y;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->t_ns < b->t_ns ? -1 : a->t_ns > b->t_ns;
}

#define PY_MATCH_NS	1000000ULL	/* a sample and its Python frames: within 1 ms */

/* The Python frames read at sample s: the same thread's record nearest in time. */
static const struct stacks_py *py_of(struct stacks *st, const struct stack_sample *s)
{
	const struct stacks_py *best = NULL;
	size_t lo = 0, hi = st->npy, mid;
	uint64_t d, bd = PY_MATCH_NS + 1;

	if (!st->npy)
		return NULL;
	if (!st->py_sorted) {
		qsort(st->py, st->npy, sizeof(*st->py), by_tid_time);
		st->py_sorted = true;
	}
	while (lo < hi) {	/* the first record at or after (tid, t) */
		mid = (lo + hi) / 2;
		if (st->py[mid].tid < s->tid || (st->py[mid].tid == s->tid && st->py[mid].t_ns < s->t_ns))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (mid = lo ? lo - 1 : 0; mid <= lo && mid < st->npy; mid++) {
		if (st->py[mid].tid != s->tid)
			continue;
		d = st->py[mid].t_ns > s->t_ns ? st->py[mid].t_ns - s->t_ns : s->t_ns - st->py[mid].t_ns;
		if (d < bd) {
			bd = d;
			best = &st->py[mid];
		}
	}
	return best;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* A Python frame a sample read: "func (file.py:line)", from its code object; each (code,
 * position) is read once, however many samples have it (its line table may be 64 KiB). */
static void py_name(struct py_target *pt, const struct pys_frame *pyf, char *buf, size_t n)
{
	uint64_t h = (pyf->code ^ pyf->prev_instr * 0x9e3779b97f4a7c15ULL ^ (uint64_t)pt->pid) %
		     PYNAME_SLOTS;
	struct pyname *c;
	struct py_frame pf;

	if (!cache.pyc)
		cache.pyc = calloc(PYNAME_SLOTS, sizeof(*cache.pyc));
	c = cache.pyc ? &cache.pyc[h] : NULL;
	if (c && c->name[0] && c->pid == (uint32_t)pt->pid && c->code == pyf->code &&
	    c->prev == pyf->prev_instr) {
		snprintf(buf, n, "%s", c->name);
		return;
	}
	if (pyframes__code(pt, pyf->code, pyf->prev_instr, pyf->entry, &pf))
		snprintf(buf, n, "? (python)");
	else if (pf.line > 0)
		snprintf(buf, n, "%s (%s:%d)", pf.func, base_name(pf.file), pf.line);
	else	/* no line there (a generator being made, or an unreadable table) */
		snprintf(buf, n, "%s (%s)", pf.func, base_name(pf.file));
	if (c) {
		c->pid = (uint32_t)pt->pid;
		c->code = pyf->code;
		c->prev = pyf->prev_instr;
		snprintf(c->name, sizeof(c->name), "%s", buf);
	}
}

/* The sample's chain unwound from CFI over its stack copy, root first; 0: none. */
static int dwarf_text(struct stacks *st, const struct stack_sample *s, char *buf, size_t n)
{
	static __thread struct unwind_frame fr[UNWIND_FRAMES];
	static __thread char names[UNWIND_FRAMES + PYS_FRAMES][256];
	uint64_t regs[UNWIND_SAMPLE_REGS];
	const struct stacks_py *y;
	struct py_target *pt;
	struct pmaps *p;
	size_t len = 0;
	int k, nf, nn = 0, yi = 0;

	if (!s->stack)
		return 0;
	unwind__perf_regs(s->regs, regs);
	nf = unwind__sample(space_of(st, s->pid), s->tid, regs, s->stack, s->stack_len, fr,
			    UNWIND_FRAMES);
	/* frame pointers went further (CFI missing somewhere): theirs is the better chain */
	if (nf < 2 || nf < s->nframes)
		return 0;
	buf[0] = '\0';
	p = maps_of(st, s->pid);
	y = py_of(st, s);
	pt = y ? python_of(st, s->pid) : NULL;
	for (k = 0; k < nf; k++) {	/* innermost first, Python frames where they run */
		const struct unwind_frame *f = &fr[k];
		const struct smap *m = map_at(p, f->pc);

		if (pt && !strcmp(f->func, "_PyEval_EvalFrameDefault"))
			while (yi < y->n) {
				const struct pys_frame *pyf = &y->f[yi++];

				py_name(pt, pyf, names[nn++], sizeof(names[0]));
				if (pyf->entry)
					break;
			}
		/* libdwfl's name, but [vdso] and the like it cannot read: the snapshot's */
		if (m && !m->tab && m->name[0] == '[')
			frame(p, f->at, names[nn++], sizeof(names[0]));
		else if (f->func[0])
			snprintf(names[nn++], sizeof(names[0]), "%s", f->func);
		else if (m && f->lib[0])
			snprintf(names[nn++], sizeof(names[0]), "%s+0x%" PRIx64, f->lib,
				 f->at - m->start + m->pgoff);
		else
			frame(p, f->at, names[nn++], sizeof(names[0]));
	}
	/* outer Python frames past the copied stack's end (or every one, when no native frame
	 * is the evaluation loop's): outermost, where they are */
	while (pt && yi < y->n) {
		const struct pys_frame *pyf = &y->f[yi++];

		py_name(pt, pyf, names[nn++], sizeof(names[0]));
	}
	st->py_samples += yi > 0 && pt;
	for (k = nn - 1; k >= 0 && len + 2 < n; k--)	/* root first */
		len += snprintf(buf + len, n - len, "%s%s", len ? ";" : "", names[k]);
	return nf;
}

const char *stacks__text(struct stacks *st, size_t i, char *buf, size_t n)
{
	const struct stack_sample *s = &st->s[i];
	struct pmaps *p;
	char f[256];
	size_t len = 0;
	int k;

	buf[0] = '\0';
	if (dwarf_text(st, s, buf, n)) {
		st->dwarf_samples++;
		return buf;
	}
	st->fp_samples++;
	p = maps_of(st, s->pid);
	for (k = s->nframes - 1; k >= 0 && len + 2 < n; k--) {	/* root first */
		/* a return address points after the call: look up the call itself */
		frame(p, k == 0 ? s->ip[k] : s->ip[k] - 1, f, sizeof(f));
		len += snprintf(buf + len, n - len, "%s%s", len ? ";" : "", f);
	}
	return buf;
}

void stacks__free(struct stacks *st)
{
	size_t i, k;

	stacks__stop(st);
	for (i = 0; i < st->ns; i++)
		free(st->s[i].stack);
	free(st->s);
	st->s = NULL;
	st->ns = 0;
	free(st->rec);
	st->rec = NULL;
	for (i = 0; i < st->npy; i++)
		free(st->py[i].f);
	free(st->py);
	st->py = NULL;
	st->npy = 0;
	for (i = 0; i < (size_t)st->nsnap; i++)
		free(st->snap[i].maps);
	st->nsnap = 0;
	for (i = 0; i < cache.ntabs; i++) {
		for (k = 0; k < cache.tabs[i]->n; k++)
			free(cache.tabs[i]->s[k].name);
		free(cache.tabs[i]->s);
		free(cache.tabs[i]->file);
		elfsym__free(cache.tabs[i]->e);
		free(cache.tabs[i]);
	}
	for (i = 0; i < cache.nprocs; i++)
		free(cache.procs[i].m);
	for (i = 0; i < cache.nspaces; i++) {
		unwind__space_free(cache.spaces[i].sp);
		pyframes__close(&cache.spaces[i].py);
	}
	free(cache.pyc);
	free(cache.tabs);
	free(cache.procs);
	memset(&cache, 0, sizeof(cache));
}
