// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* `rankscope daemon`: every training process on the node, as it comes and goes, over HTTP. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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
#define SHORT_LIVED_NS	5000000000ULL

struct tried {
	pid_t pid;
	uint64_t starttime;
};

static struct {
	struct tried tried[TRIED_MAX];
	unsigned int ntried;
	uint64_t my_start;	/* our own start time (ticks since boot): "started after us" */
	bool all;
} d;

static bool was_tried(pid_t pid, uint64_t starttime)
{
	unsigned int i, n = d.ntried < TRIED_MAX ? d.ntried : TRIED_MAX;

	for (i = 0; i < n; i++)
		if (d.tried[i].pid == pid && d.tried[i].starttime == starttime)
			return true;
	return false;
}

static void mark_tried(pid_t pid, uint64_t starttime)
{
	d.tried[d.ntried++ % TRIED_MAX] = (struct tried){ pid, starttime };
}

/* Seconds since a process started (its starttime, in clock ticks since boot). */
static double age_s(uint64_t starttime)
{
	struct timespec up;

	clock_gettime(CLOCK_BOOTTIME, &up);
	return up.tv_sec + up.tv_nsec / 1e9 - (double)starttime / sysconf(_SC_CLK_TCK);
}

/* pid exec'd: a new program, judged afresh. */
static void forget_tried(pid_t pid)
{
	unsigned int i;

	for (i = 0; i < TRIED_MAX; i++)
		if (d.tried[i].pid == pid)
			d.tried[i] = (struct tried){ 0, 0 };
}

/* Adopt pid as a rank if it is new to us. */
static void adopt(struct session *s, pid_t pid, bool started_before_ok)
{
	struct proc_stat st;
	struct rs_track tr;
	enum attach_result r;
	int slot;

	if (pid == getpid() || session__has_pid(s, pid) || probes__tracked(&s->probes, pid, &tr))
		return;		/* ours already, or a worker of a rank */
	if (procfs__stat(pid, &st) || st.state == 'Z' || st.state == 'X')
		return;
	if (was_tried(pid, st.starttime))
		return;
	if (!started_before_ok && st.starttime < d.my_start)
		return;		/* there before us: --all adopts those */
	mark_tried(pid, st.starttime);
	slot = session__free_slot(s);
	if (slot < 0) {
		s->attach_results[AR_CAP_RANKS]++;
		pr_warn("daemon: not attaching to PID %d: %d ranks watched already (--max-ranks)",
			pid, s->o.max_ranks);
		return;
	}
	if (session__prepare(s, slot, pid)) {
		s->attach_results[AR_GONE]++;
		return;
	}
	r = session__join(s, slot, false);
	s->attach_results[r]++;
	if (r == AR_OK)
		pr_info("daemon: attached to PID %d: rank %d of job '%s', %.2f s after it started",
			pid, s->ranks[slot].info.rank, s->ranks[slot].info.job, age_s(st.starttime));
	else
		pr_warn("daemon: not attaching to PID %d: %s%s", pid, session__result_name(r),
			r == AR_CAP_JOBS ? " (--max-jobs)" : "");
}

/* A process exec'd: a rank variable makes it a rank now; its libraries come later. */
static void on_exec(struct session *s, pid_t pid)
{
	struct rank_info ri;
	char *env = NULL;
	ssize_t n;

	forget_tried(pid);
	n = procfs__read(pid, "environ", &env, PROC_ENVIRON_MAX);
	if (n <= 0) {
		free(env);
		return;
	}
	ranks__init(&ri);
	if (ranks__from_environ(env, n, &ri) == 1)
		adopt(s, pid, false);
	free(env);
}

/* Every rescan: what the exec records missed (dropped, or a process that only maps NCCL,
 * MPI or gloo and has no rank variable). */
static void rescan(struct session *s)
{
	pid_t pids[TARGETS_MAX];
	int n, i;

	n = targets__discover(pids, TARGETS_MAX, getpid());
	for (i = 0; i < n; i++)
		adopt(s, pids[i], d.all);
}

/* Forget finished jobs after --retain, and processes that were never ranks: a short-lived
 * command that inherited a rank variable and exited without a collective library. */
static void tick(struct session *s, uint64_t now)
{
	int i, k;

	for (i = 0; i < s->nranks; i++) {
		struct rank_state *rs = &s->ranks[i];

		if (rs->used && rs->exited && !rs->coll_probes && now - rs->join_ns < SHORT_LIVED_NS)
			session__drop_rank(s, i);
	}
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

/* One daemon per node: an exclusive flock on the lock file, held until we exit. Returns the
 * fd or -errno with the reason printed. */
static int take_lock(const char *path)
{
	char dir[PATH_MAX], buf[32];
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
	char msg[256];
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
	lock = take_lock(s.o.lock_file);
	if (lock < 0)
		return 1;
	if (procfs__stat(getpid(), &me)) {
		pr_warn("daemon: failed to read /proc/self/stat; is /proc mounted?");
		err = -ENOENT;
		goto out;
	}
	d.my_start = me.starttime;
	d.all = s.o.all;
	err = session__open(&s);
	if (err)
		goto out;
	pr_info("daemon: watching for training processes (%s); %u probes", s.o.all ?
		"running ones too" : "new ones; --all adopts running ones", probes__count(&s.probes));
	for (i = 0; i < s.o.npids; i++)
		adopt(&s, s.o.pids[i], true);
	rescan(&s);
	err = session__loop(&s, &hooks);
	session__finish(&s);
	pr_info("daemon: detached from %u rank%s", s.self.ranks, s.self.ranks == 1 ? "" : "s");
out:
	session__close(&s);
	close(lock);
	return err ? 1 : 0;
}
