// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* `rankscope daemon`: every training process on the node, as it comes and goes, over HTTP. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cmd.h"
#include "log.h"
#include "preflight.h"
#include "procfs.h"
#include "ranks.h"
#include "session.h"
#include "targets.h"

#define TRIED_MAX	1024	/* processes already judged, so a rescan does not retry them */
#define RETRY_NS	30000000000ULL	/* a refused one is tried again after this */
#define SHORT_LIVED_NS	5000000000ULL
#define EXEC_BUDGET	64		/* environ reads per 100 ms from exec records */

struct tried {
	pid_t pid;
	uint64_t starttime;
	uint64_t refused_ns;	/* 0: judged for good (attached, or gone) */
	uint64_t judged_ns;	/* when */
};

/* A live holder that gave its (job, rank) to a newcomer, having no collective library yet. If
 * a holder of that (job, rank) then turns out short-lived (`git`, `ldconfig` run by a rank
 * still starting up, with the rank variable inherited; or the next such child after it), the
 * holder was the rank after all: it is judged again. */
struct displaced {
	pid_t holder;
	uint64_t holder_start;	/* the same process, not a reuse of its PID */
	int rank;
	char job[sizeof(((struct rank_info *)0)->job)];
};

#define DISPLACED_MAX	64

static struct {
	struct tried tried[TRIED_MAX];
	unsigned int ntried;
	struct displaced displaced[DISPLACED_MAX];
	unsigned int ndisplaced;
	uint64_t my_start;	/* our own start time (ticks since boot): "started after us" */
	bool all;
} d;

static struct tried *find_tried(pid_t pid, uint64_t starttime)
{
	unsigned int i, n = d.ntried < TRIED_MAX ? d.ntried : TRIED_MAX;

	for (i = 0; i < n; i++)
		if (d.tried[i].pid == pid && d.tried[i].starttime == starttime)
			return &d.tried[i];
	return NULL;
}

/* Judged already: attached or gone for good, or refused less than RETRY_NS ago (a cap or a
 * duplicate may be gone by then). */
static bool was_tried(pid_t pid, uint64_t starttime)
{
	struct tried *t = find_tried(pid, starttime);

	return t && (!t->refused_ns || session__now() - t->refused_ns < RETRY_NS);
}

static void mark_tried(pid_t pid, uint64_t starttime, bool refused)
{
	struct tried *t = find_tried(pid, starttime);

	if (!t)
		t = &d.tried[d.ntried++ % TRIED_MAX];
	*t = (struct tried){ pid, starttime, refused ? session__now() : 0, session__now() };
}

/* Seconds since a process started (its starttime, in clock ticks since boot). */
static double age_s(uint64_t starttime)
{
	struct timespec up;

	clock_gettime(CLOCK_BOOTTIME, &up);
	return up.tv_sec + up.tv_nsec / 1e9 - (double)starttime / sysconf(_SC_CLK_TCK);
}

/* pid exec'd at t: a new program, judged afresh, unless it was judged after that exec (the
 * record of an exec already seen in /proc) */
static void forget_tried(pid_t pid, uint64_t t)
{
	unsigned int i;

	for (i = 0; i < TRIED_MAX; i++)
		if (d.tried[i].pid == pid && d.tried[i].judged_ns < t)
			memset(&d.tried[i], 0, sizeof(d.tried[i]));
}

static void note_displaced(pid_t holder, const struct rank_info *ri)
{
	struct displaced *x = &d.displaced[d.ndisplaced++ % DISPLACED_MAX];
	struct proc_stat st;

	if (procfs__stat(holder, &st))
		return;
	*x = (struct displaced){ .holder = holder, .holder_start = st.starttime,
				 .rank = ri->rank };
	snprintf(x->job, sizeof(x->job), "%s", ri->job);
}

/* Is pid in the --cgroup scope? Its /proc/PID/cgroup is its own text: read bounded. */
static bool in_scope(pid_t pid, const char *cgroup)
{
	char *text;
	ssize_t n;
	bool in;

	n = procfs__read(pid, "cgroup", &text, PROC_CGROUP_MAX);
	if (n < 0)
		return false;
	in = procfs__cgroup_under(text, n, cgroup);
	free(text);
	return in;
}

/* Does the cgroup exist, in the unified hierarchy or in a v1 controller's? */
static bool cgroup_exists(const char *cgroup)
{
	static const char *const roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified",
					     "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/memory",
					     "/sys/fs/cgroup/systemd" };
	char path[PATH_MAX];
	struct stat sb;
	size_t i;

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", roots[i], cgroup);
		if (!stat(path, &sb) && S_ISDIR(sb.st_mode))
			return true;
	}
	return false;
}

/* Fds kept free for HTTP, /proc reads and captures: a rank's probes never take the last ones,
 * so a daemon at its open file limit still serves what it watches. */
#define FD_RESERVE	32

static uint64_t fd_limit(void)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_NOFILE, &rl) ? 1024 : rl.rlim_cur;
}

/* Fds that can still be opened: the limit less those open now (a walk of /proc/self/fd),
 * counting the link fds the closing threads have not closed yet as free: they soon are. */
static long fds_free(struct session *s)
{
	uint64_t lim = fd_limit();
	long open_now;

	if (lim == RLIM_INFINITY || lim > (1u << 30))
		return LONG_MAX;
	open_now = procfs__self_fds();
	if (open_now < 0)
		return 0;	/* even that failed: as good as none */
	return (long)lim - open_now + probes__links_closing(&s->probes);
}

/* Adopt pid as a rank if it is new to us. worker_of: pid is tracked as a worker of that rank
 * and exec'd with a rank variable of its own. Returns true when it was attached. */
static bool adopt(struct session *s, pid_t pid, bool started_before_ok, pid_t worker_of)
{
	struct proc_stat st;
	struct rs_track tr;
	enum attach_result r;
	bool again;
	int slot;

	if (pid == getpid() || session__has_pid(s, pid))
		return false;
	if (probes__tracked(&s->probes, pid, &tr) && (!worker_of || tr.root_tgid != (__u32)worker_of))
		return false;	/* a worker of a rank */
	if (procfs__stat(pid, &st) || st.state == 'Z' || st.state == 'X')
		return false;
	if (was_tried(pid, st.starttime))
		return false;
	if (!started_before_ok && st.starttime < d.my_start)
		return false;	/* there before us: --all adopts those */
	if (s->o.cgroup && !in_scope(pid, s->o.cgroup)) {
		/* refused, not judged: a process may be moved into the cgroup later */
		mark_tried(pid, st.starttime, true);
		pr_debug("daemon: PID %d is not under cgroup %s", pid, s->o.cgroup);
		return false;
	}
	again = find_tried(pid, st.starttime) != NULL;	/* refused before: say it once */
	if (fds_free(s) < FD_RESERVE) {
		mark_tried(pid, st.starttime, true);
		s->attach_results[AR_FD_LIMIT]++;
		if (!again)
			pr_warn("daemon: not attaching to PID %d: fewer than %d fds left under the "
				"open file limit (%llu); raise it (ulimit -n, LimitNOFILE=) to watch "
				"more ranks", pid, FD_RESERVE, (unsigned long long)fd_limit());
		return false;
	}
	slot = session__free_slot(s);
	if (slot < 0) {
		mark_tried(pid, st.starttime, true);
		s->attach_results[AR_CAP_RANKS]++;
		if (!again)
			pr_warn("daemon: not attaching to PID %d: %d ranks watched already "
				"(--max-ranks)", pid, s->o.max_ranks);
		return false;
	}
	if (session__prepare(s, slot, pid)) {
		mark_tried(pid, st.starttime, false);
		s->attach_results[AR_GONE]++;
		return false;
	}
	s->displaced_pid = 0;
	r = session__join(s, slot, true);	/* its job's model is made at the next drain */
	mark_tried(pid, st.starttime, r != AR_OK);
	if (r == AR_OK && s->displaced_pid)
		note_displaced(s->displaced_pid, &s->ranks[slot].info);
	if (worker_of && r == AR_DUP_RANK)
		return false;	/* a worker with its parent's rank (a spawned data loader) */
	s->attach_results[r]++;
	if (r == AR_OK)
		pr_info("daemon: attached to PID %d: rank %d of job '%s', %.2f s after it started",
			pid, s->ranks[slot].info.rank, s->ranks[slot].info.job, age_s(st.starttime));
	else if (!again)
		pr_warn("daemon: not attaching to PID %d: %s%s", pid, session__result_name(r),
			r == AR_CAP_JOBS ? " (--max-jobs)" : "");
	return r == AR_OK;
}

/* One of pid's descendants is a rank, or was displaced from one: pid is a launcher, whose
 * short-lived child (a port probe, a hostname) is no reason to take it back. */
static bool launched_ranks(struct session *s, pid_t pid)
{
	pid_t kids[256];
	int n, k;
	unsigned int i;

	n = targets__children(pid, kids, 256);
	for (k = 0; k < n; k++) {
		if (session__has_pid(s, kids[k]))
			return true;
		for (i = 0; i < DISPLACED_MAX; i++)
			if (d.displaced[i].holder == kids[k])
				return true;
	}
	return false;
}

/* newcomer, holder of (job, rank), dropped as short-lived: whoever gave that rank up is
 * judged again now (not left to the rescan) */
static void restore_displaced(struct session *s, pid_t newcomer, const char *job, int rank)
{
	struct proc_stat st;
	unsigned int i;

	for (i = 0; i < DISPLACED_MAX; i++) {
		struct displaced x = d.displaced[i];

		if (!x.holder || x.rank != rank || strcmp(x.job, job))
			continue;
		memset(&d.displaced[i], 0, sizeof(d.displaced[i]));
		if (procfs__stat(x.holder, &st) || st.starttime != x.holder_start ||
		    session__has_pid(s, x.holder) || launched_ranks(s, x.holder))
			continue;
		pr_info("daemon: PID %d was short-lived; PID %d, whose rank it took, is judged "
			"again", newcomer, x.holder);
		forget_tried(x.holder, session__now());
		adopt(s, x.holder, true, 0);
	}
}

/* A rank launched a rank: it was a launcher (torchrun, or a batch script with a rank
 * variable of its own), not a rank. */
static void demote(struct session *s, pid_t launcher, pid_t child)
{
	int i;

	for (i = 0; i < s->nranks; i++) {
		struct rank_state *rs = &s->ranks[i];

		if (!rs->used || rs->pid != launcher)
			continue;
		pr_info("daemon: PID %d launched rank PID %d: a launcher, not a rank; detached",
			launcher, child);
		session__drop_rank(s, i);
		return;
	}
}

/* A process exec'd: a rank variable makes it a rank now; its libraries come later. */
static void on_exec(struct session *s, pid_t pid, uint64_t t, pid_t parent, bool was_rank)
{
	static uint64_t window;
	static int used;
	struct rs_track tr;
	struct rank_info ri;
	char *env = NULL;
	uint64_t now = session__now();
	ssize_t n;

	/* its attach was just undone: judged afresh even if that attach ended after the exec */
	forget_tried(pid, was_rank ? UINT64_MAX : t);
	/* forked before its parent was tracked, then found by the parent's attach: a worker */
	if (!parent && !was_rank && probes__tracked(&s->probes, pid, &tr) &&
	    !(tr.flags & RS_TRACK_ROOT))
		parent = tr.root_tgid;
	/* an exec storm must not starve the drain: past the budget, the rescan finds them */
	if (now - window > 100000000ULL) {
		window = now;
		used = 0;
	}
	if (used++ >= EXEC_BUDGET)
		return;
	n = procfs__read(pid, "environ", &env, PROC_ENVIRON_MAX);
	if (n <= 0) {
		free(env);
		return;
	}
	ranks__init(&ri);
	if (ranks__from_environ(env, n, &ri) == 1 &&
	    adopt(s, pid, true, parent) && parent)	/* an exec starts a program: a new one */
		demote(s, parent, pid);
	free(env);
}

/* A rank of ours, or a rank's worker: adopt() would say no without reading anything. *rank:
 * its rank's number, for telling its children apart. One judged otherwise (refused, say) is
 * read again: its rank variable decides whether its children are workers. */
static bool known(void *ctx, pid_t pid, uint64_t starttime, int *rank)
{
	struct session *s = ctx;
	struct rs_track tr;
	pid_t root = pid;
	int i;

	if (!session__has_pid(s, pid)) {
		if (!probes__tracked(&s->probes, pid, &tr))
			return false;
		root = tr.root_tgid;
	}
	*rank = -1;
	for (i = 0; i < s->nranks; i++)
		if (s->ranks[i].used && s->ranks[i].pid == root)
			*rank = s->ranks[i].info.rank;
	(void)starttime;
	return true;
}

/* Every rescan: what the exec records missed (dropped, or a process that only maps NCCL,
 * MPI or gloo and has no rank variable). */
static void rescan(struct session *s)
{
	pid_t pids[TARGETS_MAX];
	int n, i;

	n = targets__discover_new(pids, TARGETS_MAX, getpid(), known, s);
	for (i = 0; i < n; i++)
		adopt(s, pids[i], d.all, 0);
}

/* Forget finished jobs after --retain, and processes that were never ranks: a short-lived
 * command that inherited a rank variable and exited without a collective library. */
static void tick(struct session *s, uint64_t now)
{
	static struct { pid_t pid; struct rank_info ri; } gone[16];
	int i, k, ngone = 0;

	for (i = 0; i < s->nranks; i++) {
		struct rank_state *rs = &s->ranks[i];

		if (rs->used && rs->exited && !rs->coll_probes &&
		    rs->exit_ns - rs->join_ns < SHORT_LIVED_NS) {
			if (ngone < 16) {
				gone[ngone].pid = rs->pid;
				gone[ngone++].ri = rs->info;
			}
			session__drop_rank(s, i);
		}
	}
	/* after every drop: a holder taken back must not find its job "ended" by a helper's exit
	 * and start it afresh, dropping the helpers not yet looked at */
	for (i = 0; i < ngone; i++)
		restore_displaced(s, gone[i].pid, gone[i].ri.job, gone[i].ri.rank);
	for (k = 0; k < SESSION_JOBS_MAX; k++) {
		struct sjob *j = &s->jobs[k];

		if (!j->used || !j->done_ns || now - j->done_ns < (uint64_t)(s->o.retain_s * 1e9))
			continue;
		pr_info("daemon: job '%s' ended %.0f s ago; dropping its series", j->id,
			(now - j->done_ns) / 1e9);
		while (j->used && j->ncols)
			session__drop_rank(s, j->slots[j->ncols - 1]);
	}
}

/* Every probe site can hold an fd (perf-event uprobes before Linux 6.6): lift the soft limit
 * on open files to the hard one, so a busy node does not run out. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* One daemon per node: an exclusive flock on the lock file, held until we exit. Returns the
 * fd or -errno with the reason printed. */
static int take_lock(const char *path)
{
	char dir[PATH_MAX], buf[32];
	struct stat st;
	char *slash;
	ssize_t n;
	long other = 0;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST) {
			pr_warn("daemon: failed to create %s for the lock file: %s; give --lock-file "
				"in a writable directory", dir, strerror(errno));
			return -errno;
		}
	}
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		pr_warn("daemon: failed to open the lock file %s: %s; give --lock-file in a "
			"writable directory", path, strerror(errno));
		return -errno;
	}
	/* a file someone else made (a shared directory) is not our lock: refuse, do not follow */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1) {
		pr_warn("daemon: %s is not a regular file of ours with one link; remove it, or give "
			"--lock-file in a directory only root can write", path);
		close(fd);
		return -EPERM;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno;

		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			parse_long(buf, 1, 4194304, &other);
		}
		close(fd);
		if (err == EWOULDBLOCK) {
			if (other)
				pr_warn("daemon: another rankscope daemon (PID %ld) is running on this "
					"node (it holds %s); stop it first, one daemon serves every job",
					other, path);
			else
				pr_warn("daemon: another rankscope daemon is running on this node (it "
					"holds %s); stop it first, one daemon serves every job", path);
			return -EBUSY;
		}
		pr_warn("daemon: failed to lock %s: %s", path, strerror(err));
		return -err;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", getpid());
	if (ftruncate(fd, 0) || pwrite(fd, buf, n, 0) != n)
		pr_warn("daemon: failed to write our PID to %s: %s (the lock holds anyway)", path,
			strerror(errno));
	return fd;
}

int cmd_daemon(int argc, char **argv)
{
	static const struct session_hooks hooks = {
		.on_exec = on_exec, .rescan = rescan, .tick = tick,
	};
	struct session s = {};
	struct proc_stat me;
	char msg[512];
	int err, lock, i;

	err = cmd__parse_opts(argc, argv, &s.o, VERB_DAEMON);
	if (err)
		return err > 0 ? 0 : 2;
	signal(SIGPIPE, SIG_IGN);
	session__block_signals();
	s.out = stdout;
	if (preflight__privileges(msg, sizeof(msg)) ||
	    preflight__btf(&preflight_default, msg, sizeof(msg)) ||
	    (access("/sys/bus/event_source/devices/uprobe/type", R_OK) &&
	     preflight__tracefs(&preflight_default, 1, msg, sizeof(msg)))) {
		pr_warn("daemon: %s", msg);
		return 1;
	}
	/* a warning: mainline kernels treat 3 as 2, and tp_btf probes need no perf event */
	if (preflight__perf_events(&preflight_default, msg, sizeof(msg)))
		pr_warn("daemon: %s", msg);
	lock = take_lock(s.o.lock_file);
	if (lock < 0)
		return 1;
	if (procfs__stat(getpid(), &me)) {
		pr_warn("daemon: failed to read /proc/self/stat; is /proc mounted?");
		err = -ENOENT;
		goto out;
	}
	d.my_start = me.starttime;
	raise_nofile();
	d.all = s.o.all;
	err = session__open(&s);
	if (!err)
		err = cmd__serve_api(&s, "daemon");
	if (err)
		goto out;
	pr_info("daemon: watching for training processes (%s%s%s); %u probes", s.o.all ?
		"running ones too" : "new ones; --all adopts running ones",
		s.o.cgroup ? ", under cgroup " : "", s.o.cgroup ? s.o.cgroup : "",
		probes__count(&s.probes));
	if (s.o.cgroup && !cgroup_exists(s.o.cgroup))
		pr_warn("daemon: cgroup %s does not exist (yet) under /sys/fs/cgroup: nothing is "
			"watched until processes run in it; check the path in /proc/PID/cgroup",
			s.o.cgroup);
	for (i = 0; i < s.o.npids; i++)
		adopt(&s, s.o.pids[i], true, 0);
	rescan(&s);
	err = session__loop(&s, &hooks);
	session__finish(&s);
	pr_info("daemon: detached from %u rank%s", s.self.ranks, s.self.ranks == 1 ? "" : "s");
out:
	session__close(&s);
	close(lock);
	return err ? 1 : 0;
}
