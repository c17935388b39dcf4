// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* `rankscope attach`: attach to running ranks by PID and stream per-rank events and stats. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "cmd.h"
#include "comms.h"
#include "decode.h"
#include "elfsym.h"
#include "httpd.h"
#include "job.h"
#include "metrics.h"
#include "period.h"
#include "json.h"
#include "log.h"
#include "preflight.h"
#include "probes.h"
#include "procfs.h"
#include "ranks.h"
#include "report.h"
#include "stats.h"
#include "targets.h"

struct attach_opts {
	pid_t pids[TARGETS_MAX];
	int npids;
	bool all;
	bool json;
	bool events;
	double duration_s;	/* 0: until the ranks exit or a signal */
	double interval_s;
	uint32_t drain_ms;
	struct probes_cfg pcfg;
	struct job_cfg jcfg;
	bool report;		/* diagnose: a human report at the end, no table */
	/* --steps marker:SYM[@LIB] or usdt:PROVIDER:NAME[@LIB] */
	char marker_sym[256];
	char usdt_provider[64];
	char usdt_name[64];
	char marker_lib[128];	/* "" = the executable */
	const char *listen;	/* serve /metrics and /api/v1 here; NULL: no HTTP */
};

struct session {
	struct attach_opts o;
	struct probes probes;
	struct ring_buffer *rb;
	struct rank_state *ranks;
	int nranks;
	struct comms comms;
	struct self_stats self;
	struct json j;
	FILE *out;
	bool tty;
	int write_err;
	struct job *job;
	uint64_t steps_seen;
	struct job_step *last_steps;	/* per column, for the report */
	struct job_verdict worst;	/* the most serious verdict seen, for the report */
	bool have_worst;
	uint64_t start_ns;		/* when the probes went in */
	struct httpd *httpd;
	struct metrics_acc *macc;	/* per rank */
	char **rank_json;		/* each rank's latest rank line, for /api/v1/ranks */
	struct prom prom;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* One JSON line out; a closed stdout ends the session instead of killing it with SIGPIPE. */
static void emit(struct session *s)
{
	if (s->j.err || !s->j.len)
		goto out;
	if (fwrite(s->j.buf, 1, s->j.len, s->out) != s->j.len || fputc('\n', s->out) == EOF)
		s->write_err = -EPIPE;
out:
	json__reset(&s->j);
}

static struct rank_state *rank_of(struct session *s, uint32_t slot)
{
	return slot < (uint32_t)s->nranks ? &s->ranks[slot] : NULL;
}

static void emit_rank(struct session *s, struct rank_state *rs)
{
	const char *fams[RS_FAM_MAX];
	char safe[64];
	int f, n = 0;

	for (f = 0; f < RS_FAM_MAX; f++) {
		if (s->probes.fam_err[f])
			continue;
		if (f == RS_FAM_COLL && !rs->coll_probes)
			continue;
		fams[n++] = decode__family_name(f);
	}
	report__rank(&s->j, rs, fams, n);
	if (s->rank_json && !s->j.err) {
		free(s->rank_json[rs->slot]);
		s->rank_json[rs->slot] = strdup(s->j.buf);
	}
	if (s->o.json) {
		emit(s);
		fflush(s->out);
		return;
	}
	json__reset(&s->j);
	fprintf(stderr, "rankscope: rank %d pid %d (%s) job '%s' rank from %s; collective probes: %d%s\n",
		rs->info.rank, rs->pid, log__safe(rs->comm, safe, sizeof(safe)), rs->info.job,
		ranks__source_name(rs->info.src),
		rs->coll_probes, rs->coll_probes ? "" : " (no NCCL, MPI or gloo mapped: sched/io/net only)");
}

static void on_coll(struct session *s, struct rank_state *rs, const struct rs_ev_coll *e)
{
	char comm[COMM_NAME_MAX + 24];
	uint64_t esize = 0;

	stats__on_coll(rs, e->op, e->enter_ns, e->exit_ns);
	if (e->lib == RS_LIB_NCCL)
		esize = decode__nccl_dtype_size(e->dtype);
	else if (e->lib == RS_LIB_MPI)
		esize = comms__dtype_size(&s->comms, rs->pid, e->dtype);
	comms__name(&s->comms, rs->pid, e->lib, e->comm, comm, sizeof(comm));
	if (s->macc)
		metrics__on_coll(&s->macc[rs->slot], e->lib, e->op, esize * e->count,
				 e->exit_ns > e->enter_ns ? e->exit_ns - e->enter_ns : 0);
	/* the job model keys communicators by their global name */
	job__on_coll(s->job, rs->slot, e->h.tid, e->op, e->lib,
		     comms__fnv1a((const uint8_t *)comm, strlen(comm)), e->seq,
		     esize * e->count, e->enter_ns, e->exit_ns);
	if (!s->o.events)
		return;
	report__coll(&s->j, rs, e, comm, esize * e->count);
	emit(s);
}

static void on_init(struct session *s, struct rank_state *rs, const struct rs_ev_comm_init *e)
{
	char comm[COMM_NAME_MAX + 24];

	if (e->ret == 0 && e->comm)
		comms__set_nccl(&s->comms, rs->pid, e->comm, e->unique_id, sizeof(e->unique_id));
	/* The environ had no rank: the communicator knows it. Sub-communicators (tensor or
	 * pipeline groups) come later and are smaller: only the widest one names the rank. */
	if (e->ret == 0 && e->rank >= 0 && e->rank < RANK_MAX && e->nranks > e->rank &&
	    (rs->info.src == RANK_SRC_ORDER || rs->info.src == RANK_SRC_NONE ||
	     (rs->info.src == RANK_SRC_COMM_INIT && e->nranks > rs->info.world_size))) {
		rs->info.rank = e->rank;
		rs->info.world_size = e->nranks;
		rs->info.src = RANK_SRC_COMM_INIT;
		job__set_rank(s->job, rs->slot, rs->info.rank, rs->pid);
		emit_rank(s, rs);
	}
	if (!s->o.events)
		return;
	comms__name(&s->comms, rs->pid, e->lib, e->comm, comm, sizeof(comm));
	report__comm_init(&s->j, rs, e, comm);
	emit(s);
}

/* A rank's process is gone (exit record, or /proc). Once only; status in wait(2) encoding,
 * 0 if unknown. */
static void rank_gone(struct session *s, struct rank_state *rs, uint64_t t, int status)
{
	if (rs->exited)
		return;
	rs->exited = true;
	rs->exit_code = status;
	job__on_exit(s->job, rs->slot, t, status);
	/* the pid may be reused by anyone: nothing of it may stick to the newcomer */
	probes__untrack(&s->probes, rs->pid);
	comms__forget(&s->comms, rs->pid);
}

static int handle_event(void *ctx, void *data, size_t len)
{
	struct session *s = ctx;
	struct rank_state *rs;
	struct rs_event ev;
	int fam, err;

	err = decode__event(data, len, &ev);
	if (err) {
		s->self.invalid++;
		/* still account it to its family so attempted == received + dropped holds */
		if (len >= sizeof(struct rs_hdr)) {
			fam = decode__family(((const struct rs_hdr *)data)->kind);
			if (fam >= 0)
				s->self.received[fam]++;
		}
		return 0;
	}
	s->self.received[decode__family(ev.kind)]++;
	rs = rank_of(s, ev.h.slot);
	if (!rs)
		return 0;
	switch (ev.kind) {
	case RS_EV_COLL:
		on_coll(s, rs, &ev.coll);
		return 0;
	case RS_EV_COMM_INIT:
		on_init(s, rs, &ev.init);
		return 0;
	case RS_EV_FORK:
		rs->workers++;
		break;
	case RS_EV_OFFCPU:
		job__on_off(s->job, rs->slot, ev.h.tid, ev.offcpu.start_ns, ev.offcpu.end_ns,
			    ev.offcpu.runq_ns, ev.offcpu.syscall);
		break;
	case RS_EV_IO:
		job__on_io(s->job, rs->slot, ev.h.tid, (pid_t)ev.h.tgid != rs->pid, ev.io.fd_kind,
			   ev.io.start_ns, ev.io.end_ns, ev.io.ret > 0 ? ev.io.ret : 0);
		break;
	case RS_EV_EXIT:
		if ((pid_t)ev.h.tgid == rs->pid)
			rank_gone(s, rs, ev.h.ts_ns, ev.exit.exit_code);
		break;
	default:
		break;
	}
	if (s->o.events) {
		report__event(&s->j, rs, &ev);
		emit(s);
	}
	return 0;
}

static void read_self(struct session *s)
{
	struct rs_fam_stats fs[RS_FAM_MAX];
	int f;

	if (probes__fam_stats(&s->probes, fs))
		return;
	for (f = 0; f < RS_FAM_MAX; f++) {
		s->self.attempted[f] = fs[f].attempted;
		s->self.dropped[f] = fs[f].dropped;
	}
	s->self.probes_attached = probes__count(&s->probes);
}

/* A rank is gone when its pid is gone, is a zombie, or is another process (pid reuse). */
static void check_alive(struct session *s)
{
	struct proc_stat st;
	int i;

	for (i = 0; i < s->nranks; i++) {
		struct rank_state *rs = &s->ranks[i];

		if (rs->exited)
			continue;
		if (procfs__stat(rs->pid, &st) || st.starttime != rs->starttime ||
		    st.state == 'Z' || st.state == 'X')
			rank_gone(s, rs, now_ns(), 0);	/* the exit record was lost or is late */
	}
}

/* Render /metrics and /api/v1/ranks from the current state; the HTTP thread serves copies. */
static void publish(struct session *s, uint64_t t)
{
	const struct job_verdict *v = job__last_verdict(s->job);
	struct slot_snapshot *snaps;
	struct metrics_rank *mr;
	struct json j;
	int i;

	snaps = calloc(s->nranks, sizeof(*snaps));
	mr = calloc(s->nranks, sizeof(*mr));
	if (!snaps || !mr)
		goto out;
	for (i = 0; i < s->nranks; i++) {
		probes__read_slot(&s->probes, s->ranks[i].slot, s->ranks[i].pid, t, &snaps[i]);
		mr[i] = (struct metrics_rank){
			.rank = s->ranks[i].info.rank, .pid = s->ranks[i].pid,
			.job = s->ranks[i].info.job, .exited = s->ranks[i].exited,
			.hung = s->have_worst && v->cls == V_HANG && v->col == i,
			.snap = &snaps[i], .acc = &s->macc[i],
		};
	}
	prom__reset(&s->prom);
	metrics__render(&s->prom, mr, s->nranks, s->have_worst ? v : NULL, &s->self);
	if (!s->prom.err)
		httpd__publish(s->httpd, HTTPD_METRICS, s->prom.buf, s->prom.len);
	json__init(&j);
	json__arr_begin(&j);
	for (i = 0; i < s->nranks; i++) {
		if (!s->rank_json[i])
			continue;
		json__raw(&j, s->rank_json[i]);	/* already rendered by report__rank */
	}
	json__arr_end(&j);
	if (!j.err)
		httpd__publish(s->httpd, HTTPD_RANKS, j.buf, j.len);
	json__free(&j);
	if (!s->have_worst) {
		const char *none = "{\"type\":\"verdict\",\"class\":\"none\",\"detail\":"
				   "\"no verdict yet: too few steps\"}";

		httpd__publish(s->httpd, HTTPD_DIAGNOSIS, none, strlen(none));
	}
out:
	free(snaps);
	free(mr);
}

static void tick(struct session *s, bool final)
{
	struct rank_row *rows;
	struct slot_snapshot snap;
	uint64_t t = now_ns();
	int i;

	job__advance(s->job, t, final);
	read_self(s);
	if (s->httpd)
		publish(s, t);
	if (s->o.report) {
		fflush(s->out);	/* step and verdict lines, as they come */
		return;		/* diagnose prints one report at the end */
	}
	rows = calloc(s->nranks, sizeof(*rows));
	if (!rows)
		return;
	for (i = 0; i < s->nranks; i++) {
		probes__read_slot(&s->probes, s->ranks[i].slot, s->ranks[i].pid, t, &snap);
		stats__row(&s->ranks[i], &snap, t, &rows[i]);
		if (s->o.json) {
			report__stats(&s->j, &rows[i], t);
			emit(s);
		}
	}
	if (s->o.json) {
		report__self(&s->j, &s->self, t, final);
		emit(s);
	} else {
		report__table(s->out, rows, s->nranks, &s->self, s->tty && !final);
		if (s->have_worst) {
			const struct job_verdict *v = job__last_verdict(s->job);
			char line[512];

			report__verdict_text(s->out, v, v->col >= 0 ? s->ranks[v->col].info.rank : -1,
					     line, sizeof(line));
		}
	}
	fflush(s->out);
	free(rows);
}

/* ---- the job model's callbacks ---- */

static void job_on_step(void *ctx, const struct job_step *st, const char *rule)
{
	struct session *s = ctx;
	double conf;
	struct rank_state *rs = rank_of(s, st->col);

	if (!rs)
		return;
	s->steps_seen++;
	s->last_steps[st->col] = *st;
	if (s->macc)
		metrics__on_step(&s->macc[st->col], st);
	if (!s->o.json && !s->httpd)
		return;
	job__rule(s->job, &conf, NULL);
	report__step(&s->j, rs->info.rank, rs->pid, st, rule, conf);
	if (s->httpd && !s->j.err)
		httpd__add_step(s->httpd, rs->info.rank, s->j.buf, s->j.len);
	if (s->o.json)
		emit(s);
	else
		json__reset(&s->j);
}

static int severity(enum vclass c)
{
	switch (c) {
	case V_NONE: return 0;
	case V_HANG: case V_RANK_EXITED: case V_DIVERGENT: return 3;
	default: return 1;
	}
}

static void job_on_verdict(void *ctx, const struct job_verdict *v)
{
	struct session *s = ctx;
	struct rank_state *rs = v->col >= 0 ? rank_of(s, v->col) : NULL;

	/* the report keeps the most serious, and the latest among equals */
	if (!s->have_worst || severity(v->cls) >= severity(s->worst.cls)) {
		s->worst = *v;
		s->have_worst = true;
	}
	if (!s->o.json && !s->httpd)
		return;		/* the table shows the latest; diagnose reports at the end */
	report__verdict(&s->j, v, rs ? rs->info.rank : -1, rs ? rs->pid : 0);
	if (s->httpd && !s->j.err)
		httpd__publish(s->httpd, HTTPD_DIAGNOSIS, s->j.buf, s->j.len);
	if (s->o.json)
		emit(s);
	else
		json__reset(&s->j);
}

static bool job_inflight(void *ctx, int col, uint64_t *enter_ns, uint64_t *seq)
{
	struct session *s = ctx;
	struct rank_state *rs = rank_of(s, col);

	/* only calls entered while we watched: older frames may be left by a dead thread */
	return rs && !rs->exited &&
	       !probe_collectives__inflight(&s->probes, rs->pid, enter_ns, seq) &&
	       *enter_ns >= s->start_ns;
}

/* What a rank is doing, from /proc: the hang verdict reports it. */
static void job_state(void *ctx, int col, char *buf, size_t n)
{
	struct session *s = ctx;
	struct rank_state *rs = rank_of(s, col);
	struct proc_stat st;
	char *sc = NULL;
	long nr;

	if (!rs || procfs__stat(rs->pid, &st)) {
		snprintf(buf, n, "gone");
		return;
	}
	switch (st.state) {
	case 'R':
		snprintf(buf, n, "running (rank %d, pid %d)", rs->info.rank, rs->pid);
		return;
	case 'T': case 't':
		snprintf(buf, n, "stopped (rank %d, pid %d; SIGSTOP or a debugger)", rs->info.rank,
			 rs->pid);
		return;
	case 'Z':
		snprintf(buf, n, "a zombie (rank %d, pid %d)", rs->info.rank, rs->pid);
		return;
	default:
		break;
	}
	/* /proc/PID/syscall: the number of the syscall it sleeps in, first */
	if (procfs__read(rs->pid, "syscall", &sc, 256) > 0 && sscanf(sc, "%ld", &nr) == 1)
		snprintf(buf, n, "blocked in syscall %ld (%s) (rank %d, pid %d)", nr,
			 decode__syscall_name(nr), rs->info.rank, rs->pid);
	else
		snprintf(buf, n, "sleeping (rank %d, pid %d)", rs->info.rank, rs->pid);
	free(sc);
}

static bool all_exited(const struct session *s)
{
	int i;

	for (i = 0; i < s->nranks; i++)
		if (!s->ranks[i].exited)
			return false;
	return true;
}

static int make_timer(uint64_t period_ns)
{
	struct itimerspec its = {
		.it_interval = { period_ns / 1000000000ULL, period_ns % 1000000000ULL },
		.it_value = { period_ns / 1000000000ULL, period_ns % 1000000000ULL },
	};
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (timerfd_settime(fd, 0, &its, NULL)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int prepare_rank(struct session *s, int i, pid_t pid)
{
	struct rank_state *rs = &s->ranks[i];
	struct proc_stat st;
	char *env = NULL;
	ssize_t n;
	int err;

	rs->slot = i;
	rs->pid = pid;
	ranks__init(&rs->info);
	err = procfs__stat(pid, &st);
	if (err || st.state == 'Z' || st.state == 'X') {
		pr_warn("attach: no process with PID %d; is it still running? (check: ps -p %d)",
			pid, pid);
		return -ESRCH;
	}
	rs->starttime = st.starttime;
	snprintf(rs->comm, sizeof(rs->comm), "%s", st.comm);
	n = procfs__read(pid, "environ", &env, PROC_ENVIRON_MAX);
	if (n >= 0) {
		ranks__from_environ(env, n, &rs->info);
		free(env);
	} else {
		pr_warn("attach: failed to read environ of PID %d: %s; rank falls back to init/order",
			pid, strerror(-n));
	}
	if (!rs->info.job[0])
		snprintf(rs->info.job, sizeof(rs->info.job), "ppid-%d", st.ppid);
	err = libs__discover(pid, &rs->libs);
	if (err < 0)
		pr_warn("attach: failed to read maps of PID %d: %s", pid, strerror(-err));
	return 0;
}

/* Learn OpenMPI's predefined handles from the file pid mapped at pl. */
static void scan_mpi(struct session *s, pid_t pid, const struct proc_lib *pl)
{
	const char *via;
	char path[64];
	int fd;

	fd = libs__open_mapped(pid, pl, &via);
	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	comms__scan_mpi(&s->comms, pid, path, pl);
	close(fd);
}

/* --steps marker:/usdt: on one rank: find the file (a library by name, else the executable),
 * then the symbol or the USDT note in it. */
static void attach_marker(struct session *s, struct rank_state *rs)
{
	const struct attach_opts *o = &s->o;
	const char *via, *what = o->marker_sym[0] ? o->marker_sym : o->usdt_name;
	struct proc_lib pl;
	struct elfsym *e;
	uint64_t vaddr, off;
	char path[64], safe[PATH_MAX];
	bool endbr;
	int fd, err;

	err = o->marker_lib[0] ? libs__find_mapped(rs->pid, o->marker_lib, &pl) :
				 libs__exe(rs->pid, &pl);
	if (err) {
		pr_warn("steps: PID %d maps no file named %s*; check the name after @ "
			"(grep it in /proc/%d/maps)", rs->pid, o->marker_lib, rs->pid);
		return;
	}
	fd = libs__open_mapped(rs->pid, &pl, &via);
	if (fd < 0) {
		pr_warn("steps: failed to open %s of PID %d: %s", log__safe(pl.path, safe,
			sizeof(safe)), rs->pid, strerror(-fd));
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (o->marker_sym[0]) {
		err = elfsym__open(path, &e);
		if (!err) {
			err = elfsym__find(e, o->marker_sym, &vaddr, NULL);
			if (!err)
				err = elfsym__probe_offset(e, vaddr, &off, &endbr);
			elfsym__free(e);
		}
		if (!err)
			err = probe_collectives__attach_marker(&s->probes, rs->pid, path, off);
	} else {
		err = probe_collectives__attach_usdt(&s->probes, rs->pid, path, o->usdt_provider,
						     o->usdt_name);
	}
	close(fd);
	if (err)
		pr_warn("steps: failed to put the step marker %s on PID %d (%s): %s; is it defined "
			"there? (give the library with @LIB)", what, rs->pid,
			log__safe(pl.path, safe, sizeof(safe)), strerror(-err));
	else
		rs->markers++;
}

static bool is_target(const struct session *s, pid_t pid)
{
	int i;

	for (i = 0; i < s->nranks; i++)
		if (s->ranks[i].pid == pid)
			return true;
	return false;
}

/* Track a rank and its workers and put the collective probes on it. Returns 0 or -errno
 * when the rank cannot be tracked at all. */
static int attach_rank(struct session *s, struct rank_state *rs)
{
	pid_t kids[64];
	struct proc_stat st;
	char safe[PATH_MAX];
	const struct proc_lib *mpi = &rs->libs.lib[RS_LIB_MPI];
	int n, i, err, lib;

	err = probes__track(&s->probes, rs->pid, rs->slot, rs->pid, true);
	if (err) {
		pr_warn("attach: failed to track PID %d: %s; is the tracked-process map full?",
			rs->pid, strerror(-err));
		return err;
	}
	/* the main thread may be blocked since before we came: start its interval now */
	if (!procfs__stat(rs->pid, &st))
		probe_sched__seed(&s->probes, rs->pid, st.state == 'R', now_ns());
	/* workers forked before we came: the kernel only sees forks from now on */
	n = targets__children(rs->pid, kids, 64);
	for (i = 0; i < n; i++) {
		if (is_target(s, kids[i]))
			continue;	/* a rank launched by a rank is its own rank */
		probes__track(&s->probes, kids[i], rs->slot, rs->pid, false);
		rs->workers++;
	}
	if (!s->probes.coll)
		return 0;
	rs->coll_probes = probes__attach_coll(&s->probes, rs->pid, &rs->libs, &rs->coll);
	if (rs->coll_probes < 0) {
		pr_warn("attach: failed to attach collective probes to PID %d: %s", rs->pid,
			strerror(-rs->coll_probes));
		rs->coll_probes = 0;
	}
	for (lib = 1; lib < RS_LIB_MAX; lib++)
		if (rs->coll.err[lib])
			pr_warn("attach: failed to probe %s in PID %d (%s): %s; other families keep running",
				decode__lib_name(lib), rs->pid,
				log__safe(rs->libs.lib[lib].path, safe, sizeof(safe)),
				strerror(-rs->coll.err[lib]));
	if (s->o.jcfg.mode == STEPS_MARKER)
		attach_marker(s, rs);
	if (mpi->found) {
		struct proc_lib exe;

		scan_mpi(s, rs->pid, mpi);
		/* copy relocations move MPI_COMM_WORLD & co. into the executable */
		if (!libs__exe(rs->pid, &exe))
			scan_mpi(s, rs->pid, &exe);
	}
	return 0;
}

/* The signals the loop reads from a signalfd. Blocked before any thread starts (the HTTP
 * server's), so that none of them can take one with its default action. */
static void signal_mask(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
	sigprocmask(SIG_BLOCK, mask, NULL);
}

static int run_loop(struct session *s)
{
	struct epoll_event ev, evs[4];
	struct signalfd_siginfo si;
	uint64_t deadline = 0, exp;
	sigset_t mask;
	int ep, sfd, dfd, tfd, i, n, err = 0;
	bool stop = false;

	signal_mask(&mask);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	dfd = make_timer((uint64_t)s->o.drain_ms * 1000000ULL);
	tfd = make_timer((uint64_t)(s->o.interval_s * 1e9));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || dfd < 0 || tfd < 0 || ep < 0) {
		err = -errno;
		pr_warn("attach: failed to set up the event loop: %s", strerror(errno));
		goto out;
	}
	ev.events = EPOLLIN;
	ev.data.fd = sfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	ev.data.fd = dfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, dfd, &ev);
	ev.data.fd = tfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	if (s->o.duration_s > 0)
		deadline = now_ns() + (uint64_t)(s->o.duration_s * 1e9);
	while (!stop) {
		n = epoll_wait(ep, evs, 4, 1000);
		if (n < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		for (i = 0; i < n; i++) {
			if (evs[i].data.fd == sfd) {
				if (read(sfd, &si, sizeof(si)) == sizeof(si))
					pr_info("attach: got %s, detaching", strsignal(si.ssi_signo));
				stop = true;
			} else if (evs[i].data.fd == dfd) {
				if (read(dfd, &exp, sizeof(exp)) < 0)
					continue;
				ring_buffer__consume(s->rb);
				/* steps, hangs and exits are judged as records arrive, not per tick */
				job__advance(s->job, now_ns(), false);
				fflush(s->out);
				if (all_exited(s))
					stop = true;
			} else if (evs[i].data.fd == tfd) {
				if (read(tfd, &exp, sizeof(exp)) < 0)
					continue;
				ring_buffer__consume(s->rb);
				check_alive(s);
				if (all_exited(s))
					stop = true;
				else
					tick(s, false);
			}
		}
		if (s->write_err)
			stop = true;
		if (deadline && now_ns() >= deadline)
			stop = true;
	}
out:
	if (ep >= 0)
		close(ep);
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
	if (tfd >= 0)
		close(tfd);
	return err;
}

static void usage(FILE *f, bool diagnose)
{
	if (diagnose)
		fprintf(f,
"Usage: rankscope diagnose (-p PID[,PID...] | --all) [--duration S] [--json] [OPTIONS]\n"
"\n"
"Attach, split every rank's steps into phases, and report which rank holds the others\n"
"back, in which phase, by how much, and the experiment that could disprove it. Prints a\n"
"short report when the ranks exit or the duration ends, and exits 0.\n"
"\n");
	else
		fprintf(f,
"Usage: rankscope attach (-p PID[,PID...] | --all) [OPTIONS]\n"
"\n"
"Attach to running training ranks and show, per rank, collectives, blocking I/O,\n"
"run-queue delay, off-CPU time and TCP health, then per-step phases and straggler\n"
"verdicts. Exits once every rank has exited.\n"
"\n");
	fprintf(f,
"  -p, --pid PIDS         comma-separated rank PIDs (rank order = order given,\n"
"                         unless the environ or communicator init says otherwise)\n"
"  -a, --all              every process that maps NCCL/MPI/gloo or has a rank variable\n"
"  -d, --duration S       stop after S seconds (default: until the ranks exit)\n"
"  -j, --json             JSON lines on stdout instead of the table\n"
"  -e, --events           with --json: also one line per collective call and per\n"
"                         streamed event (io, offcpu, fork, exit, tcp)\n"
"  -i, --interval S       stats/table period in seconds (default 1)\n"
"      --io-min-us N      stream I/O syscalls of at least N us (default 100)\n"
"      --offcpu-min-us N  stream off-CPU intervals of at least N us (default 100)\n"
"      --ringbuf-kb N     ring buffer size, power of two >= 4 (default 8192)\n"
"      --drain-ms N       ring buffer drain period (default 100)\n"
"      --no-FAMILY        skip a probe family: --no-sched --no-io --no-net --no-collectives\n"
"      --steps MODE       auto (DDP marker, else the collective period; default),\n"
"                         every:N (every N-th collective on the main communicator),\n"
"                         marker:SYMBOL[@LIB] (a function, mangled names too, in the\n"
"                         executable or the library named LIB*) or\n"
"                         usdt:PROVIDER:NAME[@LIB]: one step per call\n"
"      --window N         steps per verdict window (default 8)\n"
"      --hang-timeout S   a rank is hung when a peer waited S seconds in a collective it\n"
"                         has not reached (default 60)\n"
"      --listen ADDR      serve /metrics (Prometheus), /healthz, /api/v1/ranks,\n"
"                         /api/v1/steps?rank=R&last=N and /api/v1/diagnosis on ADDR,\n"
"                         e.g. 127.0.0.1:9464 (loopback unless you say otherwise)\n"
"  -v, --verbose          more diagnostics (libbpf messages)\n"
"  -h, --help             this help\n"
"\n"
"Needs root (or CAP_BPF+CAP_PERFMON) and kernel BTF.\n");
}

enum {
	OPT_IO_MIN = 256, OPT_OFFCPU_MIN, OPT_RINGBUF, OPT_DRAIN,
	OPT_NO_SCHED, OPT_NO_IO, OPT_NO_NET, OPT_NO_COLL, OPT_STEPS, OPT_WINDOW, OPT_HANG,
	OPT_LISTEN,
};

static int parse_num(const char *opt, const char *arg, long lo, long hi, long *out)
{
	if (!parse_long(arg, lo, hi, out))
		return 0;
	pr_warn("attach: invalid %s '%s': expected a whole number from %ld to %ld", opt, arg, lo, hi);
	return -EINVAL;
}

static int parse_secs(const char *opt, const char *arg, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (!*arg || *end || errno || !(v >= lo && v <= hi)) {
		pr_warn("attach: invalid %s '%s': expected seconds from %g to %g", opt, arg, lo, hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* "marker:SYM[@LIB]" or "usdt:PROVIDER:NAME[@LIB]" into o. Returns 0 or -EINVAL. */
static int parse_marker(const char *arg, struct attach_opts *o)
{
	char buf[512], *at, *colon;
	bool usdt = !strncmp(arg, "usdt:", 5);

	if (!usdt && strncmp(arg, "marker:", 7))
		return -EINVAL;
	if (snprintf(buf, sizeof(buf), "%s", arg + (usdt ? 5 : 7)) >= (int)sizeof(buf))
		return -EINVAL;
	at = strchr(buf, '@');
	if (at) {
		*at++ = '\0';
		if (!*at || strchr(at, '/') || strlen(at) >= sizeof(o->marker_lib))
			return -EINVAL;
		snprintf(o->marker_lib, sizeof(o->marker_lib), "%s", at);
	}
	if (!usdt) {
		if (!buf[0] || strlen(buf) >= sizeof(o->marker_sym))
			return -EINVAL;
		snprintf(o->marker_sym, sizeof(o->marker_sym), "%s", buf);
		return 0;
	}
	colon = strchr(buf, ':');
	if (!colon || colon == buf || !colon[1] || strlen(buf) >= sizeof(o->usdt_provider) ||
	    strlen(colon + 1) >= sizeof(o->usdt_name))
		return -EINVAL;
	*colon = '\0';
	snprintf(o->usdt_provider, sizeof(o->usdt_provider), "%s", buf);
	snprintf(o->usdt_name, sizeof(o->usdt_name), "%s", colon + 1);
	return 0;
}

static int parse_opts(int argc, char **argv, struct attach_opts *o, bool diagnose)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "duration", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "events", no_argument, NULL, 'e' },
		{ "interval", required_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "io-min-us", required_argument, NULL, OPT_IO_MIN },
		{ "offcpu-min-us", required_argument, NULL, OPT_OFFCPU_MIN },
		{ "ringbuf-kb", required_argument, NULL, OPT_RINGBUF },
		{ "drain-ms", required_argument, NULL, OPT_DRAIN },
		{ "no-sched", no_argument, NULL, OPT_NO_SCHED },
		{ "no-io", no_argument, NULL, OPT_NO_IO },
		{ "no-net", no_argument, NULL, OPT_NO_NET },
		{ "no-collectives", no_argument, NULL, OPT_NO_COLL },
		{ "steps", required_argument, NULL, OPT_STEPS },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "hang-timeout", required_argument, NULL, OPT_HANG },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{},
	};
	const char *bad;
	long v;
	int c, n;

	memset(o, 0, sizeof(*o));
	o->report = diagnose;
	o->interval_s = 1;
	o->drain_ms = 100;
	o->pcfg.ringbuf_bytes = 8192 * 1024;
	o->pcfg.io_min_ns = 100000;
	o->pcfg.offcpu_min_ns = 100000;
	o->jcfg.mode = STEPS_AUTO;
	o->jcfg.window = 8;
	o->jcfg.hang_timeout_ns = 60ULL * 1000000000ULL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:ad:jei:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			n = targets__parse_pids(optarg, o->pids + o->npids, TARGETS_MAX - o->npids,
						&bad);
			if (n < 0) {
				pr_warn("attach: invalid PID list '%s' at '%s': expected PID[,PID...] of "
					"positive numbers (at most %d)", optarg, bad, TARGETS_MAX);
				return -EINVAL;
			}
			o->npids += n;
			break;
		case 'a': o->all = true; break;
		case 'j': o->json = true; break;
		case 'e': o->events = true; break;
		case 'v': log_verbosity = LOG_DEBUG; break;
		case 'd':
			if (parse_secs("--duration", optarg, 0.001, 1e7, &o->duration_s))
				return -EINVAL;
			break;
		case 'i':
			if (parse_secs("--interval", optarg, 0.05, 3600, &o->interval_s))
				return -EINVAL;
			break;
		case OPT_IO_MIN:
			if (parse_num("--io-min-us", optarg, 0, 60000000, &v))
				return -EINVAL;
			o->pcfg.io_min_ns = v * 1000ULL;
			break;
		case OPT_OFFCPU_MIN:
			if (parse_num("--offcpu-min-us", optarg, 0, 60000000, &v))
				return -EINVAL;
			o->pcfg.offcpu_min_ns = v * 1000ULL;
			break;
		case OPT_RINGBUF:
			if (parse_num("--ringbuf-kb", optarg, 4, 1 << 20, &v))
				return -EINVAL;
			if (v & (v - 1)) {
				pr_warn("attach: invalid --ringbuf-kb '%s': must be a power of two (4, 8, ... 1048576)",
					optarg);
				return -EINVAL;
			}
			o->pcfg.ringbuf_bytes = v * 1024;
			break;
		case OPT_DRAIN:
			if (parse_num("--drain-ms", optarg, 1, 10000, &v))
				return -EINVAL;
			o->drain_ms = v;
			break;
		case OPT_NO_SCHED: o->pcfg.disable[RS_FAM_SCHED] = true; break;
		case OPT_NO_IO: o->pcfg.disable[RS_FAM_IO] = true; break;
		case OPT_NO_NET: o->pcfg.disable[RS_FAM_NET] = true; break;
		case OPT_NO_COLL: o->pcfg.disable[RS_FAM_COLL] = true; break;
		case OPT_STEPS:
			if (!strcmp(optarg, "auto")) {
				o->jcfg.mode = STEPS_AUTO;
			} else if (!strncmp(optarg, "every:", 6) &&
				   !parse_long(optarg + 6, 1, PERIOD_MAX, &v)) {
				o->jcfg.mode = STEPS_EVERY;
				o->jcfg.every = v;
			} else if (!parse_marker(optarg, o)) {
				o->jcfg.mode = STEPS_MARKER;
			} else {
				pr_warn("attach: invalid --steps '%s': use auto, every:N (N from 1 to %d), "
					"marker:SYMBOL[@LIB] or usdt:PROVIDER:NAME[@LIB]", optarg, PERIOD_MAX);
				return -EINVAL;
			}
			break;
		case OPT_WINDOW:
			if (parse_num("--window", optarg, 2, JOB_ROWS, &v))
				return -EINVAL;
			o->jcfg.window = v;
			break;
		case OPT_LISTEN:
			o->listen = optarg;
			break;
		case OPT_HANG: {
			double secs;

			if (parse_secs("--hang-timeout", optarg, 0.1, 86400, &secs))
				return -EINVAL;
			o->jcfg.hang_timeout_ns = (uint64_t)(secs * 1e9);
			break;
		}
		case 'h':
			usage(stdout, o->report);
			return 1;
		default:
			fprintf(stderr, "Try 'rankscope %s --help'.\n", diagnose ? "diagnose" : "attach");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		pr_warn("attach: unexpected argument '%s'; PIDs go after -p, comma-separated",
			argv[optind]);
		return -EINVAL;
	}
	o->npids = targets__dedup(o->pids, o->npids);	/* -p 1 -p 1 is one target */
	if (!o->npids && !o->all) {
		pr_warn("attach: no target; give -p PID[,PID...] or --all");
		return -EINVAL;
	}
	if (o->events && !o->json) {
		pr_warn("attach: --events needs --json (events are JSON lines)");
		return -EINVAL;
	}
	return 0;
}

static int final_drain(struct session *s)
{
	int n, total = 0;

	/* everything the kernel committed before the detach */
	while ((n = ring_buffer__consume(s->rb)) > 0)
		total += n;
	return total;
}

static void print_report(struct session *s);

static int run(int argc, char **argv, bool diagnose)
{
	struct rank_info *infos = NULL;
	sigset_t sigs;
	struct session s = {};
	char msg[256];
	int err, i, running, f;

	err = parse_opts(argc, argv, &s.o, diagnose);
	if (err)
		return err > 0 ? 0 : 2;
	signal(SIGPIPE, SIG_IGN);
	signal_mask(&sigs);
	s.out = stdout;
	s.tty = isatty(STDOUT_FILENO);
	json__init(&s.j);
	comms__init(&s.comms);

	if (s.o.all) {
		i = targets__discover(s.o.pids + s.o.npids, TARGETS_MAX - s.o.npids, getpid());
		if (i < 0) {
			pr_warn("attach: failed to scan /proc: %s", strerror(-i));
			return 1;
		}
		s.o.npids = targets__dedup(s.o.pids, s.o.npids + i);
		if (!s.o.npids) {
			pr_warn("attach: --all found no training process (none maps NCCL, MPI or gloo "
				"or has RANK/OMPI_COMM_WORLD_RANK/PMI_RANK/SLURM_PROCID); start the job first");
			return 1;
		}
	}
	for (i = 0; i < s.o.npids; i++) {
		if (s.o.pids[i] == getpid()) {
			pr_warn("attach: PID %d is rankscope itself; give the training processes' PIDs",
				s.o.pids[i]);
			return 2;
		}
	}
	if (preflight__privileges(msg, sizeof(msg)) ||
	    preflight__btf(&preflight_default, msg, sizeof(msg)) ||
	    (access("/sys/bus/event_source/devices/uprobe/type", R_OK) &&
	     preflight__tracefs(&preflight_default, 1, msg, sizeof(msg)))) {
		pr_warn("attach: %s", msg);
		return 1;
	}
	s.ranks = calloc(s.o.npids, sizeof(*s.ranks));
	s.last_steps = calloc(s.o.npids, sizeof(*s.last_steps));
	infos = calloc(s.o.npids, sizeof(*infos));
	if (!s.ranks || !infos || !s.last_steps) {
		err = -ENOMEM;
		goto out;
	}
	s.nranks = s.o.npids;
	for (i = 0; i < s.nranks; i++) {
		err = prepare_rank(&s, i, s.o.pids[i]);
		if (err)
			goto out;
		infos[i] = s.ranks[i].info;
	}
	ranks__assign_by_order(infos, s.nranks);
	for (i = 0; i < s.nranks; i++) {
		s.ranks[i].info.rank = infos[i].rank;
		s.ranks[i].info.src = infos[i].src;
	}

	{
		struct job_probe_ops ops = {
			.inflight = job_inflight, .state = job_state, .on_step = job_on_step,
			.on_verdict = job_on_verdict, .ctx = &s,
		};

		s.job = job__new(&s.o.jcfg, s.nranks, &ops);
		if (!s.job) {
			err = -ENOMEM;
			goto out;
		}
		for (i = 0; i < s.nranks; i++)
			job__set_rank(s.job, i, s.ranks[i].info.rank, s.ranks[i].pid);
	}
	running = probes__open(&s.probes, &s.o.pcfg);
	if (running < 0) {
		err = running;
		pr_warn("attach: failed to create BPF maps: %s; is the memlock limit too low "
			"(ulimit -l) or BPF disabled?", strerror(-err));
		goto out;
	}
	for (f = 0; f < RS_FAM_MAX; f++)
		if (s.probes.fam_err[f] && s.probes.fam_err[f] != -ECANCELED)
			pr_warn("attach: probe family %s skipped: %s", decode__family_name(f),
				s.probes.fam_why[f]);
	if (!running) {
		err = -ENOENT;
		pr_warn("attach: no probe family could be loaded; run with -v for the verifier log");
		goto out;
	}
	s.rb = ring_buffer__new(s.probes.events_fd, handle_event, &s, NULL);
	if (!s.rb) {
		err = -errno;
		pr_warn("attach: failed to open the ring buffer: %s", strerror(errno));
		goto out;
	}
	if (s.o.listen) {
		s.macc = calloc(s.nranks, sizeof(*s.macc));
		s.rank_json = calloc(s.nranks, sizeof(*s.rank_json));
		if (!s.macc || !s.rank_json) {
			err = -ENOMEM;
			goto out;
		}
		prom__init(&s.prom);
		err = httpd__start(s.o.listen, &s.httpd, msg, sizeof(msg));
		if (err) {
			pr_warn("attach: %s", msg);
			goto out;
		}
		pr_info("attach: serving /metrics and /api/v1 on http://%s", s.o.listen);
	}
	s.start_ns = now_ns();
	for (i = 0, f = 0; i < s.nranks; i++) {
		if (attach_rank(&s, &s.ranks[i]))
			continue;
		emit_rank(&s, &s.ranks[i]);
		f++;
	}
	if (!f) {
		err = -ENOENT;
		goto out;
	}
	pr_info("attach: attached to %d rank%s, %u probes; Ctrl-C to detach", s.nranks,
		s.nranks == 1 ? "" : "s", probes__count(&s.probes));
	/* the first stats interval starts now */
	for (i = 0; i < s.nranks; i++) {
		struct slot_snapshot snap;
		struct rank_row row;

		uint64_t t = now_ns();

		probes__read_slot(&s.probes, s.ranks[i].slot, s.ranks[i].pid, t, &snap);
		stats__row(&s.ranks[i], &snap, t, &row);
	}
	err = run_loop(&s);
	/* detach first, so nothing is produced while we drain and the final counts balance */
	probes__detach(&s.probes);
	final_drain(&s);
	tick(&s, true);
	if (s.o.report && !s.o.json)
		print_report(&s);
	if (!err && s.write_err) {
		err = s.write_err;
		pr_warn("attach: failed to write output: %s; was the reader closed?", strerror(-err));
	}
out:
	httpd__stop(s.httpd);
	prom__free(&s.prom);
	for (i = 0; s.rank_json && i < s.nranks; i++)
		free(s.rank_json[i]);
	free(s.rank_json);
	free(s.macc);
	ring_buffer__free(s.rb);
	probes__close(&s.probes);
	comms__free(&s.comms);
	json__free(&s.j);
	free(infos);
	free(s.ranks);
	free(s.last_steps);
	job__free(s.job);
	return err ? 1 : 0;
}

int cmd_attach(int argc, char **argv)
{
	return run(argc, argv, false);
}

int cmd_diagnose(int argc, char **argv)
{
	return run(argc, argv, true);
}

/* diagnose's human report: the rule, each rank's last step, and the verdict. */
static void print_report(struct session *s)
{
	char a[16], line[512];
	double conf;
	int period, i, p;
	const char *rule = job__rule(s->job, &conf, &period);

	printf("rankscope diagnose: %d rank%s, %llu rank-steps", s->nranks, s->nranks == 1 ? "" : "s",
	       (unsigned long long)s->steps_seen);
	if (rule[0])
		printf("; steps by %s (period %d, confidence %.2f)\n", rule, period, conf);
	else
		printf("; no step boundary found (too few collectives?)\n");
	if (s->steps_seen) {
		printf("\nlast step per rank:\n  %-5s %-9s", "RANK", "STEP");
		for (p = 0; p < PH_MAX; p++)
			printf(" %-11s", steps__phase_name(p));
		printf("\n");
		for (i = 0; i < s->nranks; i++) {
			const struct job_step *st = &s->last_steps[i];

			if (!st->dur_ns)
				continue;
			printf("  %-5d %-9s", s->ranks[i].info.rank, report__dur(st->dur_ns, a, sizeof(a)));
			for (p = 0; p < PH_MAX; p++)
				printf(" %-11s", report__dur(st->ph.ns[p], a, sizeof(a)));
			printf("\n");
		}
	}
	printf("\n");
	if (!s->have_worst) {
		printf("verdict: none yet (fewer than %d steps seen on every rank)\n", s->o.jcfg.window);
		return;
	}
	report__verdict_text(stdout, &s->worst,
			     s->worst.col >= 0 ? s->ranks[s->worst.col].info.rank : -1, line,
			     sizeof(line));
	printf("experiment: %s\n", detect__experiment(s->worst.cls));
}
