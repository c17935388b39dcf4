// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Target selection from /proc. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "libs.h"
#include "log.h"
#include "procfs.h"
#include "ranks.h"
#include "targets.h"

int targets__parse_pids(const char *s, pid_t *pids, int max, const char **bad)
{
	char tok[32];
	const char *p = s, *comma;
	size_t len;
	long v;
	int n = 0, i;
	bool dup;

	*bad = s;
	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		comma = strchr(p, ',');
		len = comma ? (size_t)(comma - p) : strlen(p);
		*bad = p;
		if (!len || len >= sizeof(tok))
			return -EINVAL;
		memcpy(tok, p, len);
		tok[len] = '\0';
		if (parse_long(tok, 1, 4194304, &v))
			return -EINVAL;
		for (dup = false, i = 0; i < n; i++)
			dup |= pids[i] == (pid_t)v;
		if (!dup) {
			if (n >= max)
				return -E2BIG;
			pids[n++] = v;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return n;
}

int targets__dedup(pid_t *pids, int n)
{
	int i, j, out = 0;
	bool dup;

	for (i = 0; i < n; i++) {
		for (dup = false, j = 0; j < out; j++)
			dup |= pids[j] == pids[i];
		if (!dup)
			pids[out++] = pids[i];
	}
	return out;
}

struct cand {
	pid_t pid;
	pid_t ppid;
	bool has_rank;
	int rank;		/* -1 for a known one: a rank or worker of ours, or judged */
	bool known;		/* not returned; there for its parent's and children's sake */
};

/*
 * Processes already found not to be ranks, by pid slot. Their environ cannot change; their
 * maps can (a late dlopen of NCCL), but not without their address space growing: until vsize
 * moves, a rescan skips reading their environ and maps again (most of a daemon's rescan).
 */
#define NOT_RANK_SLOTS	4096
/* A kernel thread's pid is read again only every this many rescans: a node of 128 CPUs has
 * about a thousand of them, three syscalls each a look. A new process that takes such a pid
 * in between is found by its exec record, or by the rescan that reads the pid again. */
#define KTHREAD_RECHECK	10

static struct not_rank {
	pid_t pid;
	bool kthread;
	uint32_t scan;		/* the rescan that last read it */
	uint64_t starttime, vsize;
} not_rank[NOT_RANK_SLOTS];

static uint32_t scan_no;

static bool recent_kthread(pid_t pid)
{
	const struct not_rank *e = &not_rank[(unsigned int)pid % NOT_RANK_SLOTS];

	return e->pid == pid && e->kthread && scan_no - e->scan < KTHREAD_RECHECK;
}

static bool known_not_rank(const struct proc_stat *st)
{
	const struct not_rank *e = &not_rank[(unsigned int)st->pid % NOT_RANK_SLOTS];

	return st->vsize && e->pid == st->pid && e->starttime == st->starttime &&
	       e->vsize == st->vsize;
}

static void remember_not_rank(const struct proc_stat *st)
{
	not_rank[(unsigned int)st->pid % NOT_RANK_SLOTS] = (struct not_rank){
		.pid = st->pid, .starttime = st->starttime, .vsize = st->vsize,
		.kthread = st->flags & PROCFS_PF_KTHREAD, .scan = scan_no,
	};
}

static bool looks_like_rank(pid_t pid, struct cand *c,
			    bool (*known)(void *ctx, pid_t pid, uint64_t starttime, int *rank), void *ctx)
{
	struct rank_info ri;
	struct proc_libs libs;
	struct proc_stat st;
	char *env;
	ssize_t n;

	if (recent_kthread(pid))
		return false;
	if (procfs__stat(pid, &st) || st.state == 'Z')
		return false;
	c->pid = pid;
	c->ppid = st.ppid;
	c->known = known && known(ctx, pid, st.starttime, &c->rank);
	if (c->known) {
		/* ours already: no environ or maps to read again */
		c->has_rank = true;
		return true;
	}
	c->has_rank = false;
	if (st.flags & PROCFS_PF_KTHREAD) {	/* no environ, no maps: nothing to read */
		remember_not_rank(&st);
		return false;
	}
	if (known_not_rank(&st))
		return false;
	ranks__init(&ri);
	n = procfs__read(pid, "environ", &env, PROC_ENVIRON_MAX);
	if (n > 0) {
		c->has_rank = ranks__from_environ(env, n, &ri) == 1;
		c->rank = ri.rank;
	}
	if (n >= 0)
		free(env);
	if (c->has_rank)
		return true;
	n = libs__discover(pid, &libs);
	if (n > 0 && (libs.lib[RS_LIB_NCCL].found || libs.lib[RS_LIB_MPI].found ||
		      libs.lib[RS_LIB_GLOO].found))
		return true;
	if (n >= 0)	/* read, and not one: an error is tried again next time */
		remember_not_rank(&st);
	return false;
}

static bool is_pid_name(const char *s)
{
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Every pid under /proc now, in a malloc'd array. Returns the count or -errno. */
static int list_pids(pid_t **out)
{
	struct dirent *de;
	pid_t *pids = NULL, *np;
	size_t n = 0, cap = 0;
	DIR *d;
	long v;

	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!is_pid_name(de->d_name) || parse_long(de->d_name, 1, 4194304, &v))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			np = realloc(pids, cap * sizeof(*pids));
			if (!np) {
				closedir(d);
				free(pids);
				return -ENOMEM;
			}
			pids = np;
		}
		pids[n++] = v;
	}
	closedir(d);
	*out = pids;
	return n;
}

int targets__discover(pid_t *pids, int max, pid_t self)
{
	return targets__discover_new(pids, max, self, NULL, NULL);
}

int targets__discover_new(pid_t *pids, int max, pid_t self,
			  bool (*known)(void *ctx, pid_t pid, uint64_t starttime, int *rank), void *ctx)
{
	struct cand *c;
	pid_t *all = NULL;
	int n, nc = 0, i, k, out = 0;
	bool keep;

	n = list_pids(&all);
	if (n < 0)
		return n;
	scan_no++;
	c = calloc(n ? n : 1, sizeof(*c));
	if (!c) {
		free(all);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		if (all[i] != self && looks_like_rank(all[i], &c[nc], known, ctx))
			nc++;
	free(all);
	for (i = 0; i < nc; i++) {
		keep = true;
		for (k = 0; k < nc; k++) {
			/* a worker: forked by a rank, inherits its environ */
			if (c[k].pid == c[i].ppid && (!c[i].has_rank ||
			    (c[k].has_rank && c[k].rank == c[i].rank)))
				keep = false;
			/* a launcher: its children are the ranks */
			if (c[k].ppid == c[i].pid && c[k].has_rank && !c[i].has_rank)
				keep = false;
		}
		if (keep && !c[i].known && out < max)
			pids[out++] = c[i].pid;
	}
	free(c);
	return out;
}

/* Every pid's parent from /proc/PID/stat: the fallback without /proc/PID/task/TID/children. */
static int children_by_scan(pid_t root, pid_t *out, int max)
{
	struct proc_stat st;
	pid_t *all = NULL, *ppid;
	int n, i, j, nout = 0, changed;

	n = list_pids(&all);
	if (n < 0)
		return n;
	ppid = calloc(n ? n : 1, sizeof(*ppid));
	if (!ppid) {
		free(all);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		ppid[i] = procfs__stat(all[i], &st) ? 0 : st.ppid;
	/* transitive closure over parent links, bounded by max */
	do {
		changed = 0;
		for (i = 0; i < n; i++) {
			bool mine = ppid[i] == root, seen = false;

			for (j = 0; j < nout && !mine; j++)
				mine = ppid[i] == out[j];
			for (j = 0; j < nout; j++)
				seen |= out[j] == all[i];
			if (mine && !seen && nout < max) {
				out[nout++] = all[i];
				changed = 1;
			}
		}
	} while (changed);
	free(all);
	free(ppid);
	return nout;
}

/* Does this kernel have /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN)? Our own says. */
static bool have_children_files(void)
{
	static int have = -1;
	char path[64];

	if (have < 0) {
		snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)gettid());
		have = !access(path, R_OK);
	}
	return have;
}

/* Append pid's direct children (those of each of its threads) to out[*n..max), the ones not
 * there yet. */
#define THREADS_READ_MAX	1024

static void direct_children(pid_t pid, pid_t *out, int *n, int max)
{
	char path[320], *text, *p, *end;
	struct dirent *de;
	int k, threads = 0;
	long v;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;		/* gone: no children to find */
	/* a process of 100,000 threads must not hold the loop: the first THREADS_READ_MAX */
	while ((de = readdir(d)) && *n < max && threads < THREADS_READ_MAX) {
		if (!de->d_name[0] || !is_pid_name(de->d_name))
			continue;
		threads++;
		snprintf(path, sizeof(path), "task/%s/children", de->d_name);
		if (procfs__read(pid, path, &text, 65536) < 0)
			continue;
		for (p = text; *n < max; p = end) {
			v = strtol(p, &end, 10);
			if (end == p)
				break;
			for (k = 0; k < *n && out[k] != v; k++)
				;
			if (k == *n && v > 0 && v != pid)
				out[(*n)++] = v;
		}
		free(text);
	}
	closedir(d);
}

int targets__children(pid_t root, pid_t *out, int max)
{
	int n = 0, i;

	/* from the root down, each process' own children files: what a process started costs
	 * its descendants, not a read of every process on the node (the daemon looks for each
	 * rank it adopts) */
	if (!have_children_files())
		return children_by_scan(root, out, max);
	direct_children(root, out, &n, max);
	for (i = 0; i < n && n < max; i++)
		direct_children(out[i], out, &n, max);
	return n;
}

/* The first and last ids of pid's "NSpid:" line and how many it has (0: none). */
static int nspid(pid_t pid, long *outer, long *inner)
{
	long ids[PROCFS_NS_LEVELS];
	int n = procfs__status_field(pid, "status", "NSpid", ids, PROCFS_NS_LEVELS);

	if (n <= 0 || n > PROCFS_NS_LEVELS)
		return 0;
	*outer = ids[0];
	*inner = ids[n - 1];
	return n;
}

/* A rank-like process in a nested PID namespace whose id there is pid; 0 if none. */
static pid_t in_container(pid_t pid)
{
	pid_t *all = NULL, found = 0;
	long outer, inner;
	struct cand c;
	int n, i;

	n = list_pids(&all);
	for (i = 0; i < n && !found; i++) {
		if (nspid(all[i], &outer, &inner) < 2 || inner != pid || outer == pid)
			continue;
		if (looks_like_rank(all[i], &c, NULL, NULL))
			found = all[i];
	}
	free(all);
	return found;
}

/* pid's name, printable: a process names itself (PR_SET_NAME), escapes and all */
static const char *comm_of(pid_t pid, struct proc_stat *st)
{
	static char safe[4][80];
	static unsigned int k;

	if (procfs__stat(pid, st))
		return "?";
	return log__safe(st->comm, safe[k++ % 4], sizeof(safe[0]));
}

int targets__check_given(pid_t pid, char *msg, size_t n)
{
	struct proc_stat st, cst;
	pid_t kids[16], ctr;
	bool gone, kthread;
	long tgid = 0;
	size_t len = 0;
	struct cand c;
	int nk, i, k;

	gone = procfs__stat(pid, &st) != 0;
	kthread = !gone && (st.flags & PROCFS_PF_KTHREAD);
	if (!gone && !kthread)
		procfs__status_field(pid, "status", "Tgid", &tgid, 1);
	if (!gone && !kthread && (tgid <= 0 || tgid == pid) && looks_like_rank(pid, &c, NULL, NULL))
		return 0;
	/* a PID read inside a container: the host knows the process by another */
	ctr = in_container(pid);
	if (ctr) {
		snprintf(msg, n, "PID %d is %s on this host; the training process with PID %d in a "
			 "container (PID namespace) is host PID %d (%s): give -p %d", pid,
			 gone ? "no process" : "not a training process", pid, ctr,
			 comm_of(ctr, &cst), ctr);
		return -EINVAL;
	}
	if (gone) {
		snprintf(msg, n, "no process with PID %d; is it still running? (check: ps -p %d)",
			 pid, pid);
		return -ESRCH;
	}
	if (kthread) {
		snprintf(msg, n, "PID %d (%s) is a kernel thread, not a training process", pid,
			 comm_of(pid, &cst));
		return -EINVAL;
	}
	if (tgid > 0 && tgid != pid) {
		snprintf(msg, n, "PID %d is a thread of process %ld (%s), not a process: give -p %ld",
			 pid, tgid, comm_of(tgid, &cst), tgid);
		return -EINVAL;
	}
	/* a launcher (mpirun, torchrun, srun): its descendants are the ranks */
	nk = targets__children(pid, kids, 16);
	for (i = 0, k = 0; i < nk; i++) {
		if (!looks_like_rank(kids[i], &c, NULL, NULL))
			continue;
		if (!k++)
			len = snprintf(msg, n, "PID %d (%s) maps no collective library and has no "
				       "rank variable, but processes it started do: give their PIDs "
				       "(-p %d", pid, comm_of(pid, &cst), kids[i]);
		else if (len < n)
			len += snprintf(msg + len, n - len, ",%d", kids[i]);
	}
	if (k && len < n)
		snprintf(msg + len, n - len, ")");
	return k ? 1 : 0;
}
