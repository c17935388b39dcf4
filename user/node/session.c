// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The session every verb runs: ranks in slots, slots in jobs, one loop over the ring buffer. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "cpuacct.h"
#include "decode.h"
#include "elfsym.h"
#include "feed.h"
#include "k8s.h"
#include "log.h"
#include "probe_pysample.h"
#include "preflight.h"
#include "procfs.h"
#include "ranks.h"
#include "session.h"
#include "unwind.h"

static const char *const result_names[AR_MAX] = {
	[AR_OK] = "attached",
	[AR_GONE] = "gone",
	[AR_CAP_RANKS] = "rank_cap",
	[AR_CAP_JOBS] = "job_cap",
	[AR_DUP_RANK] = "duplicate_rank",
	[AR_TRACK_FAILED] = "track_failed",
	[AR_FD_LIMIT] = "fd_limit",
};

const char *session__result_name(enum attach_result r)
{
	return r < AR_MAX ? result_names[r] : "unknown";
}

uint64_t session__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static const char *verb(const struct session *s)
{
	return s->o.daemon ? "daemon" : "attach";
}

/* One JSON line out; a closed stdout ends the session instead of killing it with SIGPIPE. */
static void emit(struct session *s)
{
	if (s->j.err || !s->j.len)
		goto out;
	/* one call for the line and its newline: a message logged meanwhile (log_msg flushes
	 * stdout under its lock first) comes before or after the line, never inside it */
	flockfile(s->out);
	if (fwrite(s->j.buf, 1, s->j.len, s->out) != s->j.len || fputc('\n', s->out) == EOF)
		s->write_err = -EPIPE;
	funlockfile(s->out);
out:
	json__reset(&s->j);
}

static struct rank_state *rank_of(struct session *s, uint32_t slot)
{
	return slot < (uint32_t)s->nranks && s->ranks[slot].used ? &s->ranks[slot] : NULL;
}

static struct sjob *job_of(struct session *s, const struct rank_state *rs)
{
	return &s->jobs[rs->job];
}

/* A record for rs's job model, also written out with --events (a recording replays it). */
static void feed_rank(struct session *s, struct rank_state *rs, const struct feed_rec *r)
{
	feed__apply(job_of(s, rs)->model, r);
	if (!s->o.events)
		return;
	report__feed(&s->j, rs->info.rank, rs->pid, r);
	emit(s);
}

/* Time passes for job j's model; with --events the tick is written after what the model
 * asked during it (answer lines), for a replay to do the same with the same answers. */
static void advance_job(struct session *s, struct sjob *j, uint64_t t, bool final)
{
	job__advance(j->model, t, final);
	if (s->o.events && j->model) {
		report__tick(&s->j, j->id, t, final);
		emit(s);
	}
}

/* The rank in column col of job j (the model's callbacks speak in columns). */
static struct rank_state *col_rank(struct sjob *j, int col)
{
	if (col < 0 || col >= j->ncols)
		return NULL;
	return rank_of(j->s, j->slots[col]);
}

/* The job's size as its ranks know it (environ, or the widest communicator), -1: unknown. The
 * model tells a node's part of a job from the whole by it. */
static int job_size(struct sjob *j)
{
	int c, w = -1;

	for (c = 0; c < j->ncols; c++) {
		const struct rank_state *rs = col_rank(j, c);

		if (rs && rs->info.world_size > w)
			w = rs->info.world_size;
	}
	return w;
}

static bool rank_uses(const struct rank_state *rs, uint64_t hash)
{
	int k;

	for (k = 0; k < rs->ncomms; k++)
		if (rs->comms[k].hash == hash)
			return true;
	return false;
}

/* Render rs's rank line into s->j. */
static void rank_line(struct session *s, const struct rank_state *rs)
{
	const char *fams[RS_FAM_MAX];
	int f, n = 0;

	for (f = 0; f < RS_FAM_MAX; f++) {
		if (s->probes.fam_err[f])
			continue;
		if (f == RS_FAM_COLL && !rs->coll_probes)
			continue;
		fams[n++] = decode__family_name(f);
	}
	report__rank(&s->j, rs, fams, n);
}

/* How many ranks of each rank's job use each of its communicators (same global name). */
static void comm_members(struct session *s)
{
	struct rank_state *a, *b;
	int i, k, o, m;

	for (i = 0; i < s->nranks; i++) {
		a = &s->ranks[i];
		if (!a->used)
			continue;
		for (k = 0; k < a->ncomms; k++) {
			for (m = 0, o = 0; o < s->nranks; o++) {
				b = &s->ranks[o];
				if (b->used && b->job == a->job && rank_uses(b, a->comms[k].hash))
					m++;
			}
			a->comms[k].members = m;
		}
	}
}

/* What a rank's slot holds on the heap. */
static void rank_free(struct rank_state *rs)
{
	free(rs->acc);
	free(rs->json);
	free(rs->gpu);
	free(rs->snap_json);
	free(rs->snap_key);
}

static void emit_rank(struct session *s, struct rank_state *rs)
{
	char safe[64];

	rank_line(s, rs);
	if (s->httpd && !s->j.err) {
		free(rs->json);
		rs->json = strdup(s->j.buf);
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

/* ---- captures ---- */

static bool recording(const struct session *s, const struct rank_state *rs)
{
	return s->cap_active && rs && capture__wants(&s->cap, rs->info.rank);
}

/* Name the track of thread tid (of process tgid) of rank rs, once. */
static void cap_thread(struct session *s, const struct rank_state *rs, uint32_t tgid,
		       uint32_t tid)
{
	char name[64];

	if (tid == (uint32_t)rs->pid)
		snprintf(name, sizeof(name), "main");
	else if (tgid != (uint32_t)rs->pid)
		snprintf(name, sizeof(name), "worker %u%s", tgid, tid == tgid ? "" : " (a thread)");
	else
		snprintf(name, sizeof(name), "thread %u", tid);
	capture__thread(&s->cap, rs->pid, tid, name);
}

static void cap_add(struct session *s, const struct rank_state *rs, struct trace_ev e)
{
	e.pid = rs->pid;
	capture__add(&s->cap, &e);
}

/* The entry of communicator name in rs's table, added when new; NULL when the table is full.
 * /api/v1/ranks shows the table as it is at each publish. */
static struct comm_use *comm_use(struct rank_state *rs, const char *name, uint64_t hash,
				 unsigned int lib)
{
	struct comm_use *u;
	size_t n;
	int i;

	for (i = 0; i < rs->ncomms; i++)
		if (rs->comms[i].hash == hash)
			return &rs->comms[i];
	if (rs->ncomms >= RANK_COMMS_MAX)
		return NULL;
	u = &rs->comms[rs->ncomms++];
	n = strnlen(name, sizeof(u->name) - 1);	/* name is rs's cache, never u's */
	memcpy(u->name, name, n);
	u->name[n] = '\0';
	u->hash = hash;
	u->lib = lib;
	u->size = -1;
	return u;
}

/* The name, its hash and the element size of a collective's communicator and datatype: made
 * once per (communicator, datatype) while the table of names stays the same, not per call. */
static const struct coll_name *coll_name(struct session *s, struct rank_state *rs,
					 const struct rs_ev_coll *e)
{
	struct coll_name *cn = &rs->names[(e->comm ^ e->dtype ^ e->lib) & (RANK_NAME_CACHE - 1)];

	if (cn->gen == s->comms.gen + 1 && cn->comm == e->comm && cn->dtype == e->dtype &&
	    cn->lib == e->lib)
		return cn;
	cn->gen = s->comms.gen + 1;	/* never 0 */
	cn->comm = e->comm;
	cn->dtype = e->dtype;
	cn->lib = e->lib;
	cn->esize = 0;
	if (e->lib == RS_LIB_NCCL)
		cn->esize = decode__nccl_dtype_size(e->dtype);
	else if (e->lib == RS_LIB_MPI)
		cn->esize = comms__dtype_size(&s->comms, rs->pid, e->dtype);
	comms__name(&s->comms, rs->pid, e->lib, e->comm, cn->name, sizeof(cn->name));
	cn->hash = comms__fnv1a((const uint8_t *)cn->name, strlen(cn->name));
	return cn;
}

/* The collective the rank's main thread is inside now, for /api/v1/ranks (the hub compares
 * what ranks on different nodes wait in). */
static void inflight_now(struct session *s, struct rank_state *rs)
{
	struct coll_inflight in;
	const struct coll_name *cn;

	rs->in_coll = false;
	if (rs->exited || probe_collectives__inflight(&s->probes, rs->pid, &in) ||
	    in.enter_ns < rs->join_ns || in.op >= RS_OP_GROUP_START)
		return;
	cn = coll_name(s, rs, &(struct rs_ev_coll){ .comm = in.comm, .dtype = in.dtype,
						   .lib = in.lib });
	snprintf(rs->in_comm, sizeof(rs->in_comm), "%s", cn->name);
	rs->in_coll = true;
	rs->in_op = in.op;
	rs->in_bytes = cn->esize * in.count;
	rs->in_enter_ns = in.enter_ns;
	rs->in_for_ns = session__now() - in.enter_ns;
}

static void on_coll(struct session *s, struct rank_state *rs, const struct rs_ev_coll *e)
{
	const struct coll_name *cn = coll_name(s, rs, e);
	const char *comm = cn->name;
	uint64_t hash = cn->hash, esize = cn->esize;
	struct comm_use *u;

	stats__on_coll(rs, e->op, e->enter_ns, e->exit_ns);
	if (e->op < RS_OP_GROUP_START) {
		u = comm_use(rs, comm, hash, e->lib);
		if (u) {
			u->ops++;
			u->bytes += esize * e->count;
			u->inside_ns += e->exit_ns > e->enter_ns ? e->exit_ns - e->enter_ns : 0;
		} else {
			rs->comms_other++;
		}
	}
	if (rs->acc)
		metrics__on_coll(rs->acc, e->lib, e->op, esize * e->count,
				 e->exit_ns > e->enter_ns ? e->exit_ns - e->enter_ns : 0);
	/* the job model keys communicators by their global name */
	feed__apply(job_of(s, rs)->model, &(struct feed_rec){
		.kind = FEED_COLL, .col = rs->col, .tid = e->h.tid, .op = e->op, .lib = e->lib,
		.comm = hash, .seq = e->seq, .bytes = esize * e->count, .start = e->enter_ns,
		.end = e->exit_ns, .peer = e->peer,
	});
	if (recording(s, rs)) {
		cap_thread(s, rs, e->h.tgid, e->h.tid);
		cap_add(s, rs, (struct trace_ev){
			.kind = TR_COLL, .sub = e->op, .tid = e->h.tid, .start = e->enter_ns,
			.end = e->exit_ns > e->enter_ns ? e->exit_ns : e->enter_ns,
			.a = esize * e->count,
			.b = ((uint64_t)e->lib << 56) | (e->seq & ((1ULL << 56) - 1)),
			.comm = hash,
			.name = capture__str(&s->cap, comm),
		});
	}
	if (!s->o.events)
		return;
	report__coll(&s->j, rs, e, comm, esize * e->count);
	emit(s);
}

/* A rank number no live rank of job j has: the lowest free. */
static int free_rank_number(struct session *s, struct sjob *j, const struct rank_state *self)
{
	struct rank_state *o;
	int r, c;
	bool taken;

	for (r = 0; r < RANK_MAX; r++) {
		for (taken = false, c = 0; c < j->ncols && !taken; c++) {
			o = col_rank(j, c);
			taken = o && o != self && !o->exited && o->info.rank == r;
		}
		if (!taken)
			return r;
	}
	return -1;
}

/*
 * An MPI sub-communicator's name: its handle is a pointer in each process, but its parent's
 * name, the color and how many this rank made before are the same on every member (creating
 * communicators is collective), so "mpi:sub:<hash>" is one name for the whole group.
 */
static void name_mpi_comm(struct session *s, struct rank_state *rs,
			  const struct rs_ev_comm_init *e)
{
	char parent[COMM_NAME_MAX + 24], key[COMM_NAME_MAX + 64], name[COMM_NAME_MAX];
	uint64_t ph;

	if (rs->mpi_late)
		return;	/* it may have made some before the attach: the count names nothing */
	memcpy(&ph, e->unique_id, sizeof(ph));
	comms__name(&s->comms, rs->pid, RS_LIB_MPI, ph, parent, sizeof(parent));
	snprintf(key, sizeof(key), "%s|%d|%u", parent, e->rank, rs->mpi_comms++);
	snprintf(name, sizeof(name), "mpi:sub:%016llx",
		 (unsigned long long)comms__fnv1a((const uint8_t *)key, strlen(key)));
	comms__set(&s->comms, rs->pid, e->comm, name, 0);
}

static void on_init(struct session *s, struct rank_state *rs, const struct rs_ev_comm_init *e)
{
	char comm[COMM_NAME_MAX + 24];

	if (e->lib == RS_LIB_MPI) {
		if (e->ret == 0 && e->comm)
			name_mpi_comm(s, rs, e);
		goto events;
	}
	if (e->ret == 0 && e->comm) {
		struct comm_use *u;

		comms__set_nccl(&s->comms, rs->pid, e->comm, e->unique_id, sizeof(e->unique_id));
		comms__name(&s->comms, rs->pid, e->lib, e->comm, comm, sizeof(comm));
		u = comm_use(rs, comm, comms__fnv1a((const uint8_t *)comm, strlen(comm)), e->lib);
		if (u && e->nranks > 0)
			u->size = e->nranks;
	}
	/* The environ had no rank: the communicator knows it. Sub-communicators (tensor or
	 * pipeline groups) come later and are smaller: only the widest one names the rank. */
	if (e->ret == 0 && e->rank >= 0 && e->rank < RANK_MAX && e->nranks > e->rank &&
	    (rs->info.src == RANK_SRC_ORDER || rs->info.src == RANK_SRC_NONE ||
	     (rs->info.src == RANK_SRC_COMM_INIT && e->nranks > rs->info.world_size))) {
		struct sjob *j = job_of(s, rs);
		struct rank_state *o = NULL;
		int c;

		/* one process per (job, rank): a holder numbered by order, or by a narrower
		 * communicator (a tensor-parallel group), gives the number up and takes the lowest
		 * free one; a holder whose number is its own keeps it */
		for (c = 0; c < j->ncols && !o; c++) {
			o = col_rank(j, c);
			if (o && (o == rs || o->exited || o->info.rank != e->rank))
				o = NULL;
		}
		if (o && o->info.src != RANK_SRC_ORDER && o->info.src != RANK_SRC_NONE &&
		    !(o->info.src == RANK_SRC_COMM_INIT && o->info.world_size < e->nranks)) {
			pr_debug("%s: PID %d says rank %d, which PID %d holds; kept as %d", verb(s),
				 rs->pid, e->rank, o->pid, rs->info.rank);
		} else {
			rs->info.rank = e->rank;
			rs->info.world_size = e->nranks;
			rs->info.src = RANK_SRC_COMM_INIT;
			job__set_rank(j->model, rs->col, rs->info.rank, rs->pid);
			job__set_world(j->model, job_size(j));
			emit_rank(s, rs);
			if (o) {
				o->info.rank = free_rank_number(s, j, o);
				job__set_rank(j->model, o->col, o->info.rank, o->pid);
				emit_rank(s, o);
			}
		}
	}
events:
	if (!s->o.events)
		return;
	comms__name(&s->comms, rs->pid, e->lib, e->comm, comm, sizeof(comm));
	report__comm_init(&s->j, rs, e, comm);
	emit(s);
}

/* One checkpoint sample of rs at t. last: the rank exits cleanly, so a burst in progress ends
 * now (it wrote its checkpoint, then exited: the common last act of a job). */
static void ckpt_sample(struct session *s, struct rank_state *rs, uint64_t t, bool last)
{
	uint64_t last_ns, bytes = probe_io__write_bytes(&s->probes, rs->slot, RS_FD_REG, &last_ns);
	struct ckpt_done d;
	struct timespec rt;

	if (!rs->acc)
		return;
	if (t < rs->ck.last_t)
		t = rs->ck.last_t;	/* an exit record stamped before the last tick's sample */
	if (!ckpt__sample(&rs->ck, &s->o.ckpt, t, bytes, last_ns, &d) &&
	    !(last && rs->ck.in_burst &&
	      ckpt__sample(&rs->ck, &s->o.ckpt, t + s->o.ckpt.gap_ns + 1, bytes, last_ns, &d)))
		return;
	if (s->life) {
		struct joblife_job *e = joblife__get(s->life, job_of(s, rs)->id, true);

		if (e)	/* the work it holds: up to where its last writes began */
			joblife__ckpt(e, d.last_start_ns, d.end_ns);
	}
	rs->acc->ckpt_count++;
	rs->acc->ckpt_ns += d.end_ns - d.start_ns;
	rs->acc->ckpt_bytes += d.bytes;
	clock_gettime(CLOCK_REALTIME, &rt);
	rs->acc->ckpt_last_unix = rt.tv_sec + rt.tv_nsec / 1e9 - (t - d.end_ns) / 1e9;
	pr_debug("%s: rank %d pid %d wrote a checkpoint: %" PRIu64 " bytes in %.3f s", verb(s),
		 rs->info.rank, rs->pid, d.bytes, (d.end_ns - d.start_ns) / 1e9);
}

/* A rank died by a signal or exited non-zero: its job failed (joblife judges it once the
 * steps before settle). The phase it was in: inside a collective, or its last step's largest. */
static void life_exit(struct session *s, struct sjob *j, struct rank_state *rs, uint64_t t,
		      int status)
{
	struct life_cause c = { .rank = rs->info.rank, .at_ns = t };
	struct joblife_job *e;
	uint64_t most = 0;
	int ph;

	if (!s->life || !(status & 0x7f || status >> 8 & 0xff))
		return;
	e = joblife__get(s->life, j->id, false);
	if (!e)
		return;
	c.reason = status & 0x7f ? LIFE_SIGNAL : LIFE_EXIT_CODE;
	c.code = status & 0x7f ? status & 0x7f : status >> 8 & 0xff;
	inflight_now(s, rs);
	if (rs->in_coll)
		snprintf(c.phase, sizeof(c.phase), "%s", steps__phase_name(PH_COMM));
	for (ph = 0; !rs->in_coll && ph < PH_MAX; ph++)
		if (rs->last_step.ph.ns[ph] > most) {
			most = rs->last_step.ph.ns[ph];
			snprintf(c.phase, sizeof(c.phase), "%s", steps__phase_name(ph));
		}
	joblife__fail(s->life, e, &c, session__now());
}

void session__rank_gone(struct session *s, struct rank_state *rs, uint64_t t, int status)
{
	struct sjob *j = job_of(s, rs);
	int c;

	if (rs->exited)
		return;
	/* before the probes let go of its counters; a burst is a checkpoint only if the rank
	 * exited cleanly, or its writes had stopped a while before it was killed (one killed
	 * mid-save wrote no checkpoint) */
	ckpt_sample(s, rs, t, status == 0 ||
		    (rs->ck.in_burst && t > rs->ck.active_end_ns + CKPT_SETTLED_NS));
	life_exit(s, j, rs, t, status);
	rs->exited = true;
	rs->exit_code = status;
	rs->exit_ns = t;
	feed_rank(s, rs, &(struct feed_rec){
		.kind = FEED_EXIT, .col = rs->col, .tid = rs->pid, .start = t, .status = status,
	});
	/* the pid may be reused by anyone: nothing of it may stick to the newcomer */
	probes__untrack(&s->probes, rs->pid);
	probes__detach_pid(&s->probes, rs->pid, true);
	comms__forget(&s->comms, rs->pid);
	for (c = 0; c < j->ncols; c++) {
		struct rank_state *o = col_rank(j, c);

		if (o && !o->exited)
			return;
	}
	j->done_ns = session__now();
}

void session__drop_rank(struct session *s, int slot)
{
	struct rank_state *rs = rank_of(s, slot);
	struct sjob *j;
	int c, out;

	if (!rs)
		return;
	if (!rs->exited) {
		probes__untrack(&s->probes, rs->pid);
		probes__detach_pid(&s->probes, rs->pid, false);
		comms__forget(&s->comms, rs->pid);
	}
	probes__release_slot(&s->probes, slot);
	s->dropped_since_trim = true;
	j = job_of(s, rs);
	for (c = 0, out = 0; c < j->ncols; c++)
		if (j->slots[c] != slot)
			j->slots[out++] = j->slots[c];
	j->ncols = out;
	j->dirty = true;
	if (rs->gpu) {	/* the counters are totals: what a dropped rank counted stays */
		s->gpu_gone[0] += rs->gpu->received;
		s->gpu_gone[2] += rs->gpu->dropped_queue;
		s->gpu_gone[3] += rs->gpu->dropped_cupti;
		s->gpu_gone[4] += rs->gpu->dropped_clock;
	}
	rank_free(rs);
	memset(rs, 0, sizeof(*rs));
	while (s->nranks && !s->ranks[s->nranks - 1].used)
		s->nranks--;
	if (!j->ncols) {	/* the job is gone with its last rank */
		job__free(j->model);
		free(j->stacks);
		memset(j, 0, sizeof(*j));
		return;
	}
	/* the model's columns no longer match the slots: nothing may reach it again. The next
	 * drain makes it anew, once for every rank that came or went meanwhile (a model is
	 * ~1 MiB a rank: one per change would cost a churning node most of its loop). */
	job__free(j->model);
	j->model = NULL;
	j->dirty = true;
}

bool session__has_pid(const struct session *s, pid_t pid)
{
	int i;

	for (i = 0; i < s->nranks; i++)
		if (s->ranks[i].used && !s->ranks[i].exited && s->ranks[i].pid == pid)
			return true;
	return false;
}

/*
 * A rank that runs CPython 3.11: its threads' thread states go to the pysample program, which
 * runs at each of its samples (perf events first.. of the capture's) and reads their Python
 * frames. Loaded with the first such rank; a failure costs the Python frames only.
 */
static void capture_python(struct session *s, pid_t pid, int first)
{
	uint64_t tids[256], tstates[256];
	const char *why = "";
	int n, i, err;

	if (!s->stacks.stack_req || s->pys_failed)
		return;		/* frame pointers only: there is no native chain to put them in */
	n = unwind__python_threads(pid, tids, tstates, 256);
	if (n <= 0)
		return;
	if (!s->pys && (err = pysample__open(&s->pys, &why))) {
		s->pys_failed = true;
		pr_warn("%s: capture %s: no Python frames in the samples: pysample %s: %s", verb(s),
			s->cap.id, why, strerror(-err));
		return;
	}
	for (i = 0; i < n; i++)
		pysample__thread(s->pys, (uint32_t)tids[i], tstates[i]);
	for (i = first; i < s->stacks.nev; i++)
		if ((err = pysample__attach(s->pys, s->stacks.ev[i].fd))) {
			pr_warn("%s: capture %s: Python frames of PID %d: attach: %s", verb(s),
				s->cap.id, pid, strerror(-err));
			break;
		}
}

/* A capture starts recording: every syscall and off-CPU interval, and phase runs. */
static void capture_started(struct session *s)
{
	int k;

	s->cap_active = true;
	probes__set_detail(&s->probes, true);
	/* stack samples of every rank thread, 99 Hz, for the capture only */
	memset(&s->stacks, 0, sizeof(s->stacks));
	s->stacks.stack_req = s->o.sample_stack_bytes;
	s->pys_failed = false;
	for (k = 0; k < s->nranks; k++)
		if (s->ranks[k].used && !s->ranks[k].exited &&
		    capture__wants(&s->cap, s->ranks[k].info.rank)) {
			int first = s->stacks.nev;

			stacks__add(&s->stacks, s->ranks[k].pid);
			capture_python(s, s->ranks[k].pid, first);
		}
	if (s->stacks.err)
		pr_warn("%s: capture %s: some stack samples are off: perf_event_open: %s", verb(s),
			s->cap.id, strerror(-s->stacks.err));
	for (k = 0; k < SESSION_JOBS_MAX; k++)
		if (s->jobs[k].used)
			job__set_detail(s->jobs[k].model, true);
	pr_info("%s: capture %s: recording for %d s", verb(s), s->cap.id, s->cap.req.seconds);
}

/* The capture's time is up: back to steady state, and write it. */
/* What a capture's writer needs, owned by it: the loop goes on meanwhile. */
struct cap_writer {
	struct capture *cap;
	struct stacks stacks;
	struct trace_proc *procs;
	int nprocs;
	const char *out;	/* rankscope capture -o FILE; NULL: the capture directory */
	bool *done;		/* set when it is over: the loop joins it then */
	int err;
	char msg[256];
};

/* Symbolize the samples, write the trace, go idle: minutes of work on a big capture, never on
 * the loop's thread (the ring buffers of every job would overflow meanwhile). */
static void *cap_write(void *arg)
{
	struct cap_writer *w = arg;
	char text[2048], id[CAPTURE_ID_MAX];
	size_t i;
	int k;

	for (i = 0; i < w->stacks.ns; i++) {
		const struct stack_sample *ss = &w->stacks.s[i];

		if (ss->t_ns < w->cap->t_start || ss->t_ns > w->cap->t_end)
			continue;
		capture__add(w->cap, &(struct trace_ev){
			.kind = TR_SAMPLE, .pid = ss->pid, .tid = ss->tid, .start = ss->t_ns,
			.end = ss->t_ns,
			.name = capture__str(w->cap, stacks__text(&w->stacks, i, text, sizeof(text))),
		});
	}
	w->cap->dropped += w->stacks.dropped;
	w->cap->samples = (struct trace_samples){
		.dwarf = w->stacks.dwarf_samples, .frame_pointer = w->stacks.fp_samples,
		.stack_cut = w->stacks.stack_cut, .stack_bytes = w->stacks.stack_bytes,
	};
	w->cap->has_samples = true;
	stacks__free(&w->stacks);
	unwind__thread_end();
	snprintf(id, sizeof(id), "%s", w->cap->id);
	if (w->out) {
		w->err = capture__write_file(w->cap, w->out, w->procs, w->nprocs, w->msg,
					     sizeof(w->msg));
		if (!w->err)
			snprintf(w->msg, sizeof(w->msg), "capture written to %s", w->out);
	} else {
		w->err = capture__finish(w->cap, w->procs, w->nprocs);
		if (w->err)
			snprintf(w->msg, sizeof(w->msg), "capture %s failed: %s; the daemon carries on",
				 id, strerror(-w->err));
		else
			snprintf(w->msg, sizeof(w->msg), "capture %s written to %.128s", id,
				 w->cap->dir);
	}
	for (k = 0; k < w->nprocs; k++)
		free((char *)w->procs[k].job);
	free(w->procs);
	return w;
}

/* Collect a finished writer: its line, and for rankscope capture -o, the verdict. */
static void capture_reap(struct session *s, bool wait)
{
	struct cap_writer *w;

	if (!s->cap_writer_on || (!wait && !__atomic_load_n(&s->cap_writer_done, __ATOMIC_ACQUIRE)))
		return;
	pthread_join(s->cap_writer, (void **)&w);
	s->cap_writer_on = false;
	if (!w)
		return;
	if (w->err)
		pr_warn("%s: %s", verb(s), w->msg);
	else
		pr_info("%s: %s", verb(s), w->msg);
	if (w->out)
		s->cap_written = !w->err;
	free(w);
}

static void *cap_writer_main(void *arg)
{
	struct cap_writer *w = arg;
	sigset_t all;

	sigfillset(&all);	/* the loop's signalfd takes every signal */
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_setname_np(pthread_self(), CPUACCT_CAPTURE_NAME);
	cap_write(w);
	cpuacct__thread_exit(CPUACCT_CAPTURE);
	__atomic_store_n(w->done, true, __ATOMIC_RELEASE);
	return w;
}

/* Recording stops: the probes, stack samplers and job models back to steady state. */
static void capture_quiesce(struct session *s)
{
	int k;

	s->cap_active = false;
	probes__set_detail(&s->probes, false);
	stacks__stop(&s->stacks);
	if (s->pys) {	/* what the ring still holds, then the program goes */
		pysample__poll(s->pys, stacks__add_py, &s->stacks);
		s->stacks.py_cut += pysample__drops(s->pys);
		pysample__close(s->pys);
		s->pys = NULL;
	}
	for (k = 0; k < SESSION_JOBS_MAX; k++)
		if (s->jobs[k].used)
			job__set_detail(s->jobs[k].model, false);
}

/* DELETE /api/v1/captures/ID while it waited or recorded: nothing is written. */
static void capture_cancel(struct session *s)
{
	if (s->cap_active)
		capture_quiesce(s);
	stacks__free(&s->stacks);
	pr_info("%s: capture %s cancelled (DELETE); nothing written", verb(s), s->cap.id);
	capture__fail(&s->cap, "cancelled by DELETE before it was written");
}

/* The capture's window and its settling time are over: back to steady state, and hand the
 * buffers to a writer thread. */
static void capture_done(struct session *s)
{
	struct cap_writer *w;
	int i;

	capture_reap(s, true);	/* the writer before: done already (the capture was idle) */
	capture_quiesce(s);
	w = calloc(1, sizeof(*w));
	if (w)
		w->procs = calloc(s->nranks ? s->nranks : 1, sizeof(*w->procs));
	if (!w || !w->procs) {
		pr_warn("%s: capture %s: out of memory; dropped", verb(s), s->cap.id);
		stacks__free(&s->stacks);
		free(w);
		capture__fail(&s->cap, "out of memory");
		return;
	}
	w->cap = &s->cap;
	w->stacks = s->stacks;	/* the samples go with it */
	memset(&s->stacks, 0, sizeof(s->stacks));
	w->out = s->o.capture_out;
	for (i = 0; i < s->nranks; i++)
		if (s->ranks[i].used && capture__wants(&s->cap, s->ranks[i].info.rank))
			w->procs[w->nprocs++] = (struct trace_proc){
				.pid = s->ranks[i].pid, .rank = s->ranks[i].info.rank,
				.job = strdup(s->ranks[i].info.job),
			};
	capture__writing(&s->cap);
	s->cap_writer_done = false;
	w->done = &s->cap_writer_done;
	if (pthread_create(&s->cap_writer, NULL, cap_writer_main, w) == 0) {
		s->cap_writer_on = true;
		return;
	}
	cap_write(w);		/* no thread: write here, late rather than never */
	s->cap_writer_on = false;
	if (w->err)
		pr_warn("%s: %s", verb(s), w->msg);
	else
		pr_info("%s: %s", verb(s), w->msg);
	if (w->out)
		s->cap_written = !w->err;
	free(w);
}

/* Every drain: a request to start, or a capture to end. */
static void capture_tick(struct session *s, uint64_t now)
{
	if (!s->cap_open)
		return;
	capture_reap(s, false);
	if (capture__cancelled(&s->cap))
		capture_cancel(s);
	if (capture__take(&s->cap, now))
		capture_started(s);
	if (s->cap_active) {
		stacks__poll(&s->stacks);
		if (s->pys)
			pysample__poll(s->pys, stacks__add_py, &s->stacks);
	}
	if (capture__due(&s->cap, now))
		capture_done(s);
}

/* ---- GPU timing from the CUPTI libraries ---- */

/* The rank whose process (or data-loader worker) pid is. */
static struct rank_state *rank_by_pid(struct session *s, pid_t pid)
{
	struct rs_track tr;
	int i;

	if (probes__tracked(&s->probes, pid, &tr))
		pid = tr.root_tgid;
	for (i = 0; i < s->nranks; i++)
		if (s->ranks[i].used && !s->ranks[i].exited && s->ranks[i].pid == pid)
			return &s->ranks[i];
	return NULL;
}

static struct gpu_acc *gpu_of(struct rank_state *rs)
{
	if (!rs->gpu)
		rs->gpu = calloc(1, sizeof(*rs->gpu));
	return rs->gpu;
}

static bool gpu_wanted(void *ctx, pid_t pid)
{
	return rank_by_pid(ctx, pid) != NULL;
}

static void gpu_rec(void *ctx, pid_t pid, const struct gpu_names *names, const struct rsc_rec *r)
{
	struct session *s = ctx;
	struct rank_state *rs = rank_by_pid(s, pid);
	enum gpu_kclass c;

	if (!rs || !gpu_of(rs) || r->start_ns < rs->join_ns)
		return;
	c = gpu__on_rec(rs->gpu, names, r);
	if (recording(s, rs))
		cap_add(s, rs, (struct trace_ev){
			.kind = TR_GPU, .sub = r->kind, .tid = TR_GPU_TID_BASE + r->stream,
			.start = r->start_ns, .end = r->end_ns,
			.a = r->kind == RSC_REC_MEMCPY ? r->sub : 0,
			.b = r->kind == RSC_REC_MEMCPY || r->kind == RSC_REC_MEMSET ? r->value : 0,
			.name = r->kind == RSC_REC_KERNEL ?
				capture__str(&s->cap, gpu_names__text(names, (uint32_t)r->value)) : -1,
		});
	/* kernels and copies make the GPU busy; NCCL kernels also time the collective */
	if (r->kind == RSC_REC_KERNEL || r->kind == RSC_REC_MEMCPY || r->kind == RSC_REC_MEMSET)
		feed_rank(s, rs, &(struct feed_rec){
			.kind = FEED_GPU, .col = rs->col, .tid = rs->pid, .nccl = c == GPU_K_NCCL,
			.start = r->start_ns, .end = r->end_ns,
		});
}

static void gpu_status(void *ctx, pid_t pid, const struct rsc_status *st, bool conn_changed)
{
	struct session *s = ctx;
	struct rank_state *rs = rank_by_pid(s, pid);
	struct gpu_acc *g;
	char safe[128];
	bool changed;

	if (!rs) {
		if (conn_changed)
			pr_info("%s: PID %d (not a rank): GPU timing: %s", verb(s), pid,
				log__safe(st->detail, safe, sizeof(safe)));
		return;
	}
	g = gpu_of(rs);
	if (!g)
		return;
	changed = !g->have_status || g->state != st->state;
	g->have_status = true;
	g->state = st->state;
	snprintf(g->detail, sizeof(g->detail), "%s", st->detail);
	g->lib_records = st->records;
	g->dropped_queue = st->dropped_queue;
	g->dropped_cupti = st->dropped_cupti;
	g->dropped_clock = st->dropped_clock;
	if (!changed)
		return;
	pr_info("%s: PID %d (rank %d of job '%s'): GPU timing: %s", verb(s), rs->pid,
		rs->info.rank, rs->info.job, log__safe(st->detail, safe, sizeof(safe)));
	emit_rank(s, rs);
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
	/* records of a slot's previous occupant (drained after a drop and a new join); exec
	 * records count whenever they were made: discovery needs every one */
	if (rs && ev.h.ts_ns < rs->join_ns && ev.kind != RS_EV_EXEC)
		return 0;
	if (ev.kind == RS_EV_EXEC) {
		bool was_rank = rs && (pid_t)ev.h.tgid == rs->pid && ev.h.ts_ns >= rs->prep_ns;
		pid_t parent = rs && (pid_t)ev.h.tgid != rs->pid ? rs->pid : 0;

		/* a rank that execs is another program now: the old one is gone, the new one
		 * may be a rank again (a wrapper script exec'ing python). An exec from before
		 * its /proc was read (the record of an exec during its previous program's
		 * attach, drained after the attach that followed) made what is attached */
		if (was_rank) {
			pr_info("%s: PID %d (rank %d of job '%s') exec'd another program; detached",
				verb(s), rs->pid, rs->info.rank, rs->info.job);
			/* alive: its links would match its new program until closed */
			probes__detach_pid(&s->probes, rs->pid, false);
			session__rank_gone(s, rs, ev.h.ts_ns, 0);
			if (s->o.daemon)
				session__drop_rank(s, rs->slot);
			rs = NULL;
		}
		/* untracked, our rank's new program, or a worker that may be a rank launched by
		 * what we took for one (a launcher): the verb decides */
		if (s->hooks && s->hooks->on_exec)
			s->hooks->on_exec(s, ev.h.tgid, ev.h.ts_ns, parent, was_rank);
		rs = rank_of(s, ev.h.slot);	/* the verb may have dropped or replaced it */
		if (!rs || rs->pid != parent)
			return 0;
	}
	if (!rs)
		return 0;
	switch (ev.kind) {
	case RS_EV_COLL:
		/* entered after observation stopped (session__finish), while the probes came off:
		 * not counted in the last frame, nor in a step (those end by then) */
		if (s->stop_ns && ev.coll.enter_ns > s->stop_ns)
			return 0;
		/* the probes' traps are time inside the call, as the program lives it; the
		 * stamps leave them out (probe_collectives__calibrate) */
		if (ev.coll.enter_ns > s->probes.coll_trap_ns) {
			ev.coll.enter_ns -= s->probes.coll_trap_ns / 2;
			if (ev.coll.exit_ns)
				ev.coll.exit_ns += s->probes.coll_trap_ns - s->probes.coll_trap_ns / 2;
		}
		on_coll(s, rs, &ev.coll);
		return 0;
	case RS_EV_COMM_INIT:
		on_init(s, rs, &ev.init);
		return 0;
	case RS_EV_FORK:
		rs->workers++;
		break;
	case RS_EV_OFFCPU:
		feed__apply(job_of(s, rs)->model, &(struct feed_rec){
			.kind = FEED_OFF, .col = rs->col, .tid = ev.h.tid,
			.start = ev.offcpu.start_ns, .end = ev.offcpu.end_ns,
			.runq = ev.offcpu.runq_ns, .syscall = ev.offcpu.syscall,
		});
		if (recording(s, rs)) {
			cap_thread(s, rs, ev.h.tgid, ev.h.tid);
			cap_add(s, rs, (struct trace_ev){
				.kind = TR_OFFCPU, .tid = ev.h.tid, .start = ev.offcpu.start_ns,
				.end = ev.offcpu.end_ns, .a = ev.offcpu.runq_ns,
				.b = ev.offcpu.syscall >= 0 ? (uint64_t)ev.offcpu.syscall + 1 : 0,
				.name = -1,
			});
		}
		break;
	case RS_EV_IO:
		feed__apply(job_of(s, rs)->model, &(struct feed_rec){
			.kind = FEED_IO, .col = rs->col, .tid = ev.h.tid,
			.worker = (pid_t)ev.h.tgid != rs->pid, .fd_kind = ev.io.fd_kind,
			.write = ev.io.op >= RS_IO_FIRST_WRITE,
			.start = ev.io.start_ns, .end = ev.io.end_ns,
			.bytes = ev.io.ret > 0 ? ev.io.ret : 0,
		});
		if (recording(s, rs)) {
			cap_thread(s, rs, ev.h.tgid, ev.h.tid);
			cap_add(s, rs, (struct trace_ev){
				.kind = TR_IO, .sub = ev.io.fd_kind, .tid = ev.h.tid,
				.start = ev.io.start_ns, .end = ev.io.end_ns,
				.a = ev.io.ret > 0 ? (uint64_t)ev.io.ret : 0, .b = ev.io.op, .name = -1,
			});
		}
		break;
	case RS_EV_EXIT:
		if ((pid_t)ev.h.tgid == rs->pid)
			session__rank_gone(s, rs, ev.h.ts_ns, ev.exit.exit_code);
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

/* The LRU maps are walked to count what they evicted: at most this often (a walk of a full
 * rs_threads is 65,536 system calls), and at the end. */
#define LRU_COUNT_NS	(10 * 1000000000ULL)

static void read_self(struct session *s, bool final)
{
	struct rs_fam_stats fs[RS_FAM_MAX];
	uint64_t t = session__now();
	int f;

	if (final || !s->self.lru_ns || t - s->self.lru_ns >= LRU_COUNT_NS) {
		probes__lru_evictions(&s->probes, s->self.lru);
		s->self.lru_ns = t;
	}
	if (probes__fam_stats(&s->probes, fs))
		return;
	for (f = 0; f < RS_FAM_MAX; f++) {
		s->self.attempted[f] = fs[f].attempted;
		s->self.dropped[f] = fs[f].dropped;
		s->self.map_full[f] = fs[f].map_full;
	}
	s->self.probes_attached = probes__count(&s->probes);
	s->self.coll_trap_ns = s->probes.coll_trap_ns;
}

/* The loop did not run for gap_ns (SIGSTOP, or no CPU for it): said once, when it runs again.
 * The probes never waited for it; what the ring could not hold is counted. */
static void stalled(struct session *s, uint64_t gap_ns)
{
	uint64_t dropped = 0;
	int f;

	read_self(s, false);
	for (f = 0; f < RS_FAM_MAX; f++)
		dropped += s->self.dropped[f];
	pr_warn("%s: the loop did not run for %.1f s (stopped, or starved of CPU); the traced "
		"processes were not held up; %llu records dropped so far "
		"(rankscope_events_dropped_total)", verb(s), gap_ns / 1e9,
		(unsigned long long)dropped);
}

/* A rank is gone when its pid is gone, is a zombie, or is another process (pid reuse). */
static void check_alive(struct session *s)
{
	struct proc_stat st;
	int i, err;

	for (i = 0; i < s->nranks; i++) {
		struct rank_state *rs = &s->ranks[i];

		if (!rs->used || rs->exited)
			continue;
		err = procfs__stat(rs->pid, &st);
		if (err && err != -ENOENT && err != -ESRCH)
			continue;	/* out of fds or memory: not a sign of exit */
		if (err || st.starttime != rs->starttime || st.state == 'Z' || st.state == 'X')
			session__rank_gone(s, rs, session__now(), 0);	/* the exit record was lost */
	}
}

/* Checkpoints: every drain tick, each live rank's cumulative regular-file write bytes. */
static void sample_checkpoints(struct session *s, uint64_t t)
{
	int i;

	for (i = 0; i < s->nranks; i++) {
		struct rank_state *rs = &s->ranks[i];

		if (!rs->used || rs->exited || !rs->acc)
			continue;
		ckpt_sample(s, rs, t, false);
	}
}

/*
 * One snapshot of a stuck rank's stacks, shared by /api/v1/stacks and the stuck-job judge
 * (which reads where each rank is, then the stacks of the verdict's evidence): each is
 * taken at most once a second, so a hang costs one unwind a rank per look, not three.
 */
#define SNAP_FRESH_NS	1000000000ULL

static void rank_snapshot(struct rank_state *rs, const char *job)
{
	char key[1024];
	struct unwind_proc up;
	struct json j;
	uint64_t now = session__now();

	if (rs->snap_ns && now < rs->snap_ns + SNAP_FRESH_NS)
		return;
	free(rs->snap_json);
	free(rs->snap_key);
	rs->snap_json = rs->snap_key = NULL;
	unwind__process(rs->pid, &up);
	unwind__class_key(&up, key, sizeof(key));
	rs->snap_key = strdup(key);
	rs->snap_in = unwind__where_of(&up, rs->snap_coll, sizeof(rs->snap_coll),
				       rs->snap_stack, sizeof(rs->snap_stack));
	json__init(&j);
	unwind__json(&j, &up, rs->info.rank, job);
	if (!j.err)
		rs->snap_json = strdup(j.buf);
	json__free(&j);
	unwind__free(&up);
	rs->snap_ns = now;
}

/* Render /metrics, /api/v1/ranks and /api/v1/diagnosis; the HTTP thread serves copies. */
/*
 * The stacks of every rank of each job that has made no progress for the hang timeout, read
 * again at most once a hang timeout while it lasts: /api/v1/stacks (one object a line).
 */
/* Append one object and ",\n" to the job's stacks document (left as it was without memory). */
static void stacks_add(char **doc, size_t *len, const char *obj)
{
	size_t n = strlen(obj);
	char *grow = realloc(*doc, *len + n + 3);

	if (!grow)
		return;
	*doc = grow;
	memcpy(grow + *len, obj, n);
	memcpy(grow + *len + n, ",\n", 3);
	*len += n + 2;
}

/*
 * The job's ranks merged as `rankscope stacks` merges them: ranks whose main threads share a
 * stack (unwind__class_key) form a class; a class smaller than the rest is the outlier. One
 * {"type":"stack_classes","job":J,...} object for the live view.
 */
static void stack_classes(struct sjob *sj, char **doc, size_t *len)
{
	int c, d, n = 0, size, *cls = calloc(sj->ncols ? sj->ncols : 1, sizeof(*cls));
	struct rank_state *rs, *rd;
	struct json j;

	if (!cls)
		return;
	for (c = 0; c < sj->ncols; c++) {
		rs = col_rank(sj, c);
		cls[c] = rs && !rs->exited && rs->snap_key ? 0 : -1;
		n += cls[c] == 0;
	}
	json__init(&j);
	json__obj_begin(&j);
	json__kstr(&j, "type", "stack_classes");
	json__kstr(&j, "job", sj->id);
	json__key(&j, "classes");
	json__arr_begin(&j);
	for (c = 0; c < sj->ncols; c++) {
		if (cls[c])
			continue;
		rs = col_rank(sj, c);
		for (d = c, size = 0; d < sj->ncols; d++) {
			rd = col_rank(sj, d);
			if (!cls[d] && !strcmp(rd->snap_key, rs->snap_key)) {
				cls[d] = 1;
				size++;
			}
		}
		json__obj_begin(&j);
		json__key(&j, "ranks");
		json__arr_begin(&j);
		for (d = c; d < sj->ncols; d++)
			if (cls[d] == 1) {
				json__int(&j, col_rank(sj, d)->info.rank);
				cls[d] = 2;
			}
		json__arr_end(&j);
		json__kstr(&j, "main_stack", rs->snap_key);
		json__kstr(&j, "stack", rs->snap_stack);
		json__key(&j, "outlier");
		json__bool(&j, size < n - size);
		json__obj_end(&j);
	}
	json__arr_end(&j);
	json__obj_end(&j);
	if (!j.err)
		stacks_add(doc, len, j.buf);
	json__free(&j);
	free(cls);
}

static void publish_stacks(struct session *s, uint64_t t)
{
	uint64_t hang = s->o.jcfg.hang_timeout_ns, progress;
	bool changed = false;
	size_t len, cap;
	char *all;
	int k, c;

	for (k = 0; k < SESSION_JOBS_MAX; k++) {
		struct sjob *sj = &s->jobs[k];

		progress = sj->used && sj->model ? job__progress_ns(sj->model) : 0;
		if (!progress || t < progress + hang) {
			changed |= sj->stacks != NULL;
			free(sj->stacks);
			sj->stacks = NULL;
			for (c = 0; sj->used && c < sj->ncols; c++) {
				struct rank_state *rs = col_rank(sj, c);

				if (rs && rs->snap_ns) {	/* moving again: let it go */
					free(rs->snap_json);
					free(rs->snap_key);
					rs->snap_json = rs->snap_key = NULL;
					rs->snap_ns = 0;
				}
			}
			continue;
		}
		if (sj->stacks && t < sj->stacks_ns + hang)
			continue;
		free(sj->stacks);
		sj->stacks = NULL;
		for (c = 0, len = 0; c < sj->ncols; c++) {
			struct rank_state *rs = col_rank(sj, c);

			if (!rs || rs->exited)
				continue;
			rank_snapshot(rs, sj->id);
			if (rs->snap_json)
				stacks_add(&sj->stacks, &len, rs->snap_json);
		}
		stack_classes(sj, &sj->stacks, &len);
		sj->stacks_ns = t;
		changed = true;
	}
	if (!changed)
		return;
	for (k = 0, cap = 4; k < SESSION_JOBS_MAX; k++)
		cap += s->jobs[k].stacks ? strlen(s->jobs[k].stacks) : 0;
	all = malloc(cap);
	if (!all)
		return;
	len = 0;
	all[len++] = '[';
	all[len++] = '\n';
	for (k = 0; k < SESSION_JOBS_MAX; k++)
		if (s->jobs[k].stacks) {
			memcpy(all + len, s->jobs[k].stacks, strlen(s->jobs[k].stacks));
			len += strlen(s->jobs[k].stacks);
		}
	all[len++] = ']';
	httpd__publish(s->httpd, HTTPD_STACKS, all, len);
	free(all);
}

/* /metrics, for a scrape waiting for it (httpd__wanted): every rank's and job's series. */
static void publish_metrics(struct session *s, uint64_t t)
{
	struct metrics_job mj[SESSION_JOBS_MAX];
	struct slot_snapshot *snaps;
	struct metrics_rank *mr;
	struct fam_run run[RS_FAM_MAX];
	int i, n = 0, nj = 0, f;

	snaps = calloc(s->nranks ? s->nranks : 1, sizeof(*snaps));
	mr = calloc(s->nranks ? s->nranks : 1, sizeof(*mr));
	if (!snaps || !mr)
		goto out;
	for (i = 0; i < s->nranks; i++) {
		struct rank_state *rs = &s->ranks[i];
		struct sjob *sj;

		if (!rs->used || !rs->acc)
			continue;
		sj = job_of(s, rs);
		probes__read_slot(&s->probes, rs->slot, rs->pid, t, &snaps[n]);
		mr[n] = (struct metrics_rank){
			.rank = rs->info.rank, .pid = rs->pid, .job = rs->info.job,
			.job_src = ranks__job_source_name(rs->info.job_src), .node = s->node,
			.ns = rs->info.k8s_ns, .pod = rs->info.k8s_pod,
			.exited = rs->exited,
			.hung = sj->have_last && sj->last.cls == V_HANG && sj->last.col == rs->col,
			.snap = &snaps[n], .acc = rs->acc, .gpu = rs->gpu,
		};
		n++;
	}
	for (i = 0; i < SESSION_JOBS_MAX; i++) {
		struct sjob *sj = &s->jobs[i];
		struct rank_state *vr;

		if (!sj->used)
			continue;
		vr = sj->have_last ? col_rank(sj, sj->last.col) : NULL;
		mj[nj++] = (struct metrics_job){
			.id = sj->id, .v = sj->have_last ? &sj->last : NULL,
			.vrank = vr ? vr->info.rank : -1,
			.ranks_seen = sj->ncols, .world_size = job_size(sj),
			.cost = sj->model ? job__cost(sj->model) : NULL,
			.gpu_hour_usd = s->o.jcfg.gpu_hour_usd, .gpus_per_rank = s->o.jcfg.gpus_per_rank,
		};
	}
	s->self.attach = s->attach_results;
	s->self.attach_names = result_names;
	s->self.nattach = AR_MAX;
	s->self.lib_refused = s->lib_refused;
	s->self.lib_errors = s->lib_errors;
	s->self.have_run = !probes__run_stats(&s->probes, run);
	for (f = 0; f < RS_FAM_MAX; f++) {
		s->self.run_ns[f] = run[f].run_ns;
		s->self.run_cnt[f] = run[f].run_cnt;
	}
	s->self.ranks = n;
	s->self.jobs = nj;
	s->self.cupti = s->rx != NULL;
	if (s->rx) {
		struct cupti_rx_stats cs;

		cupti_rx__stats(s->rx, &cs);
		memcpy(s->self.cupti_conns, cs.by_state, sizeof(s->self.cupti_conns));
		s->self.cupti_records[1] = cs.invalid;
		/* the ranks' counts: the dropped ones as their libraries last reported them */
		s->self.cupti_records[0] = s->gpu_gone[0];
		for (f = 2; f < 5; f++)
			s->self.cupti_records[f] = s->gpu_gone[f];
		for (i = 0; i < s->nranks; i++) {
			const struct gpu_acc *g = s->ranks[i].used ? s->ranks[i].gpu : NULL;

			if (!g)
				continue;
			s->self.cupti_records[0] += g->received;
			s->self.cupti_records[2] += g->dropped_queue;
			s->self.cupti_records[3] += g->dropped_cupti;
			s->self.cupti_records[4] += g->dropped_clock;
		}
	}
	s->self.series_overflow = s->series_overflow;
	prom__reset(&s->prom);
	s->prom.max_series = s->o.max_series;
	metrics__render(&s->prom, mr, n, mj, nj, &s->self, s->o.planned_steps);
	if (s->prom.over) {
		/* the counter must include what this very scrape leaves out: once more with it */
		s->series_overflow += s->prom.over;
		s->self.series_overflow = s->series_overflow;
		prom__reset(&s->prom);
		s->prom.max_series = s->o.max_series;
		metrics__render(&s->prom, mr, n, mj, nj, &s->self, s->o.planned_steps);
	}
	if (s->life)
		joblife__metrics(s->life, &s->prom);
	if (!s->prom.err)
		httpd__publish(s->httpd, HTTPD_METRICS, s->prom.buf, s->prom.len);
out:
	free(snaps);
	free(mr);
}

/* The API's documents, each tick: ranks, the latest verdicts, the stuck jobs' stacks. */
static void publish(struct session *s, uint64_t t)
{
	struct json j;
	int i;

	json__init(&j);
	json__arr_begin(&j);
	comm_members(s);
	for (i = 0; i < s->nranks; i++) {
		struct proc_stat ps;

		if (!s->ranks[i].used || !s->ranks[i].json)
			continue;
		s->ranks[i].pstate = procfs__stat(s->ranks[i].pid, &ps) ? '?' : ps.state;
		inflight_now(s, &s->ranks[i]);
		/* again, for the communicators' current counts, and its state */
		rank_line(s, &s->ranks[i]);
		json__raw(&j, s->j.err ? s->ranks[i].json : s->j.buf);
		json__reset(&s->j);
	}
	json__arr_end(&j);
	if (!j.err)
		httpd__publish(s->httpd, HTTPD_RANKS, j.buf, j.len);
	json__reset(&j);
	json__arr_begin(&j);
	for (i = 0; i < SESSION_JOBS_MAX; i++) {
		struct sjob *sj = &s->jobs[i];
		struct rank_state *vr;

		if (!sj->used)
			continue;
		if (!sj->have_last) {
			json__obj_begin(&j);
			json__kstr(&j, "type", "verdict");
			json__kstr(&j, "job", sj->id);
			json__kstr(&j, "class", "none");
			json__kstr(&j, "detail", "no verdict yet: too few steps");
			json__obj_end(&j);
			continue;
		}
		vr = col_rank(sj, sj->last.col);
		report__verdict(&j, &sj->last, sj->id, vr ? vr->info.rank : -1, vr ? vr->pid : 0);
	}
	json__arr_end(&j);
	if (!j.err)
		httpd__publish(s->httpd, HTTPD_DIAGNOSIS, j.buf, j.len);
	if (s->life) {
		json__reset(&j);
		joblife__json(s->life, &j, t);
		if (!j.err)
			httpd__publish(s->httpd, HTTPD_JOBS, j.buf, j.len);
	}
	publish_stacks(s, t);
	json__free(&j);
}

/* On a TTY: the last step of each rank as a phase bar, and how far along the session is. */
static void steps_text(struct session *s, uint64_t t)
{
	const struct sjob *j = &s->jobs[0];
	const struct job_step **last;
	double conf = 0;
	int *rank, period = 0, c;
	const char *rule = j->model ? job__rule(j->model, &conf, &period) : "";

	rank = calloc(j->ncols ? j->ncols : 1, sizeof(*rank));
	last = calloc(j->ncols ? j->ncols : 1, sizeof(*last));
	for (c = 0; rank && last && c < j->ncols; c++) {
		rank[c] = s->ranks[j->slots[c]].info.rank;
		last[c] = &s->ranks[j->slots[c]].last_step;
	}
	if (rank && last)
		report__steps_text(s->out, rank, last, j->ncols, j->steps_seen, rule, period, conf,
				   (t - s->start_ns) / 1e9);
	free(rank);
	free(last);
}

/* Which job ids the session has now, then time passes for their lives. */
static void life_tick(struct session *s, uint64_t t)
{
	bool live[JOBLIFE_MAX] = {};
	struct joblife_job *e;
	int k;

	if (!s->life)
		return;
	for (k = 0; k < SESSION_JOBS_MAX; k++)
		if (s->jobs[k].used && (e = joblife__get(s->life, s->jobs[k].id, false)))
			live[e - s->life->j] = true;
	for (k = 0; k < JOBLIFE_MAX; k++)
		if (s->life->j[k].used)
			joblife__set_live(&s->life->j[k], live[k], t);
	joblife__tick(s->life, t);
}

void session__tick(struct session *s, bool final)
{
	struct rank_row *rows;
	struct slot_snapshot snap;
	uint64_t t = final && s->stop_ns ? s->stop_ns : session__now();
	int i, n = 0, k;

	for (k = 0; k < SESSION_JOBS_MAX; k++)
		if (s->jobs[k].used)
			advance_job(s, &s->jobs[k], t, final);
	life_tick(s, t);
	/* ranks dropped since the last tick: give their memory back to the node, not only to
	 * the heap (a daemon's RSS falls again when jobs end) */
	if (s->dropped_since_trim) {
		s->dropped_since_trim = false;
		malloc_trim(0);
	}
	read_self(s, final);
	if (s->httpd)
		publish(s, t);
	if (s->o.report || s->o.daemon) {
		fflush(s->out);	/* step and verdict lines, as they come */
		return;		/* diagnose prints one report at the end; the daemon serves HTTP */
	}
	rows = calloc(s->nranks ? s->nranks : 1, sizeof(*rows));
	if (!rows)
		return;
	for (i = 0; i < s->nranks; i++) {
		struct rank_state *rs = &s->ranks[i];

		if (!rs->used)
			continue;
		probes__read_slot(&s->probes, rs->slot, rs->pid, t, &snap);
		stats__row(rs, &snap, t, &rows[n]);
		if (s->o.json) {
			report__stats(&s->j, &rows[n], t);
			emit(s);
		}
		n++;
	}
	if (s->o.json) {
		report__self(&s->j, &s->self, t, final);
		emit(s);
	} else {
		report__table(s->out, rows, n, &s->self, s->tty && !final);
		if (s->tty)
			steps_text(s, t);
		if (s->jobs[0].have_last) {
			const struct job_verdict *v = &s->jobs[0].last;
			struct rank_state *vr = col_rank(&s->jobs[0], v->col);
			char line[512];

			report__verdict_text(s->out, v, vr ? vr->info.rank : -1, line, sizeof(line));
		}
	}
	fflush(s->out);
	free(rows);
}

/* ---- the job model's callbacks; ctx is the job ---- */

/* The incarnation: the start of the newest live rank, unix seconds to 10 ms. */
static double newest_start_unix(struct sjob *j)
{
	struct timespec rt, bt;
	uint64_t newest = 0;
	double v;
	int c;

	for (c = 0; c < j->ncols; c++) {
		const struct rank_state *rs = col_rank(j, c);

		if (rs && !rs->exited && rs->starttime > newest)
			newest = rs->starttime;
	}
	if (!newest || clock_gettime(CLOCK_REALTIME, &rt) || clock_gettime(CLOCK_BOOTTIME, &bt))
		return 0;
	v = rt.tv_sec - bt.tv_sec + (rt.tv_nsec - bt.tv_nsec) / 1e9 +
	    (double)newest / sysconf(_SC_CLK_TCK);
	return round(v * 100) / 100;
}

/* Once a step (the first column's call of each step index of each model): to joblife. */
static void life_step(struct session *s, struct sjob *j, const struct job_step *st)
{
	struct joblife_job *e;

	if (!s->life)
		return;
	if (j->life_build != j->builds) {
		j->life_build = j->builds;
		j->life_k = 0;
	}
	if (st->index < j->life_k)
		return;
	j->life_k = st->index + 1;
	e = joblife__get(s->life, j->id, true);
	if (e)
		joblife__step(e, joblife__needs_run(e) ? newest_start_unix(j) : 0,
			      st->start_ns + st->dur_ns, st->dur_ns);
}

static void job_on_step(void *ctx, const struct job_step *st, const char *rule)
{
	struct sjob *j = ctx;
	struct session *s = j->s;
	struct rank_state *rs = col_rank(j, st->col);
	double conf;

	if (!rs)
		return;
	j->steps_seen++;
	rs->last_step = *st;
	life_step(s, j, st);
	if (s->cap_open && !s->finishing && capture__step(&s->cap, st->start_ns + st->dur_ns))
		capture_started(s);
	if (recording(s, rs))
		cap_add(s, rs, (struct trace_ev){
			.kind = TR_STEP, .tid = TR_STEP_TID, .start = st->start_ns,
			.end = st->start_ns + st->dur_ns, .a = st->index, .name = -1,
		});
	if (rs->acc)
		metrics__on_step(rs->acc, st);
	if (st->has_gpu && rs->gpu)
		gpu__on_step(rs->gpu, st->gpu_busy_ns, st->dur_ns);
	if (!s->o.json && !s->httpd)
		return;
	job__rule(j->model, &conf, NULL);
	if (!s->o.json) {
		/* no line on stdout: /api/v1/steps makes one if it is ever asked for */
		httpd__add_step_rec(s->httpd, j->id, rs->info.rank, rs->pid, st, rule, conf,
				    rs->comms, rs->ncomms);
		return;
	}
	report__step(&s->j, j->id, rs->info.rank, rs->pid, st, rule, conf, rs->comms, rs->ncomms);
	if (s->httpd && !s->j.err)
		httpd__add_step(s->httpd, j->id, rs->info.rank, s->j.buf, s->j.len);
	emit(s);
}

static void job_on_cost(void *ctx, uint64_t step, const struct cost_step *cs, int rank)
{
	struct sjob *j = ctx;
	struct session *s = j->s;

	if (!s->o.json)
		return;
	report__cost(&s->j, j->id, step, cs, rank);
	emit(s);
}

static void job_on_rule(void *ctx, const char *rule, int period, double confidence,
			bool changed, const char *note)
{
	struct sjob *j = ctx;
	struct session *s = j->s;

	if (changed)
		pr_info("%s: job '%s': %s", verb(s), j->id, note);
	if (!s->o.json)
		return;
	report__rule(&s->j, j->id, rule, period, confidence, changed, note);
	emit(s);
}

static void job_on_phase(void *ctx, int col, enum phase ph, uint64_t start, uint64_t end)
{
	struct sjob *j = ctx;
	struct rank_state *rs = col_rank(j, col);

	if (recording(j->s, rs))
		cap_add(j->s, rs, (struct trace_ev){
			.kind = TR_PHASE, .sub = ph, .tid = TR_STEP_TID, .start = start, .end = end,
			.name = -1,
		});
}

/* --auto-capture: a verdict appears where there was none; one capture per 10 minutes. */
static void auto_capture(struct session *s, const struct sjob *j, const struct job_verdict *v)
{
	struct capture_req req = { .seconds = CAPTURE_SECONDS_DEFAULT, .automatic = true };
	uint64_t now = session__now();
	char id[CAPTURE_ID_MAX];

	if (!s->o.auto_capture || !s->cap_open || v->cls == V_NONE ||
	    (j->have_last && j->last.cls != V_NONE))
		return;
	if (s->cap.last_auto_ns && now - s->cap.last_auto_ns < 600ULL * 1000000000ULL)
		return;
	if (capture__request(&s->cap, &req, id, sizeof(id)))
		return;		/* one runs already: its evidence will do */
	s->cap.last_auto_ns = now;
	pr_info("%s: %s verdict in job '%s': capture %s (%d s) started by --auto-capture", verb(s),
		detect__class_name(v->cls), j->id, id, req.seconds);
}

static void job_on_verdict(void *ctx, const struct job_verdict *v)
{
	struct sjob *j = ctx;
	struct session *s = j->s;
	struct rank_state *rs = col_rank(j, v->col);

	auto_capture(s, j, v);
	if (s->cap_active) {
		struct rank_state *at = rs ? rs : col_rank(j, 0);
		char text[192];

		snprintf(text, sizeof(text), "%s%s, rank %d, phase %s, skew %.2f ms",
			 detect__class_name(v->cls), v->persistent ? " (persistent)" : "",
			 rs ? rs->info.rank : -1,
			 v->col >= 0 && v->cls <= V_CPU_CONTENTION ? steps__phase_name(v->v.phase) : "-",
			 v->v.skew_ns / 1e6);
		if (at && capture__wants(&s->cap, at->info.rank))
			cap_add(s, at, (struct trace_ev){
				.kind = TR_VERDICT, .tid = TR_STEP_TID, .start = v->t_ns, .end = v->t_ns,
				.name = capture__str(&s->cap, text),
			});
	}

	if (v->stuck && s->life) {
		struct joblife_job *e = joblife__get(s->life, j->id, false);
		struct life_cause c = {
			.rank = rs ? rs->info.rank : -1, .reason = LIFE_HANG, .at_ns = v->since_ns,
		};

		snprintf(c.phase, sizeof(c.phase), "%s", detect__class_name(v->cls));
		if (e)
			joblife__fail(s->life, e, &c, session__now());
	}
	j->last = *v;
	j->have_last = true;
	/* the report keeps the most serious, and the latest among equals */
	if (!j->have_worst || detect__severity(v->cls) >= detect__severity(j->worst.cls)) {
		j->worst = *v;
		j->have_worst = true;
	}
	if (!s->o.json)
		return;		/* the table shows the latest; diagnose reports at the end */
	report__verdict(&s->j, v, j->id, rs ? rs->info.rank : -1, rs ? rs->pid : 0);
	emit(s);
}

static bool col_inflight_now(void *ctx, int col, struct job_inflight *call)
{
	struct sjob *j = ctx;
	struct rank_state *rs = col_rank(j, col);
	struct coll_inflight in;
	const struct coll_name *cn;

	/* only calls entered while we watched: older frames may be left by a dead thread */
	if (!rs || rs->exited || probe_collectives__inflight(&j->s->probes, rs->pid, &in) ||
	    in.enter_ns < rs->join_ns)
		return false;
	/* its communicator and payload as the call's record will carry them */
	cn = coll_name(j->s, rs, &(struct rs_ev_coll){ .comm = in.comm, .dtype = in.dtype,
						      .lib = in.lib });
	*call = (struct job_inflight){
		.enter_ns = in.enter_ns, .seq = in.seq, .comm = cn->hash,
		.bytes = cn->esize * in.count, .op = in.op,
	};
	return true;
}

/* What a rank is doing, from /proc: the hang verdict reports it. */
static void state_now(void *ctx, int col, char *buf, size_t n)
{
	struct rank_state *rs = col_rank(ctx, col);
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
	case 'D': {
		char *wchan = NULL;

		/* waiting on the kernel (a disk, a hung mount): where, when it is said */
		procfs__read(rs->pid, "wchan", &wchan, 64);
		snprintf(buf, n, "in uninterruptible sleep (D) in %s (rank %d, pid %d)",
			 wchan && *wchan && strcmp(wchan, "0") ? wchan : "the kernel", rs->info.rank,
			 rs->pid);
		free(wchan);
		return;
	}
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

/* Where a rank of a stuck job is, from its main thread's stack. */
static bool where_now(void *ctx, int col, char *coll, size_t ncoll, char *stack, size_t n)
{
	struct sjob *sj = ctx;
	struct rank_state *rs = col_rank(sj, col);

	coll[0] = stack[0] = 0;
	if (!rs || rs->exited)
		return false;
	rank_snapshot(rs, sj->id);
	snprintf(coll, ncoll, "%s", rs->snap_coll);
	snprintf(stack, n, "%s", rs->snap_stack);
	return rs->snap_in;
}

/* With --events: job j's model was (re)built at t with these columns (a replay does so too). */
static void model_line(struct session *s, struct sjob *j, uint64_t t)
{
	int rank[RS_MAX_SLOTS];
	pid_t pid[RS_MAX_SLOTS];
	int c, n = 0;

	for (c = 0; c < j->ncols && n < RS_MAX_SLOTS; c++, n++) {
		const struct rank_state *rs = col_rank(j, c);

		rank[n] = rs ? rs->info.rank : -1;
		pid[n] = rs ? rs->pid : 0;
	}
	report__model(&s->j, j->id, t, rank, pid, n, job_size(j));
	emit(s);
}

/* The model's questions about a rank, answered now; with --events each answer is written
 * too (a recording replays the same answers in the same order). */
static bool job_inflight(void *ctx, int col, struct job_inflight *in)
{
	struct sjob *j = ctx;
	struct session *s = j->s;
	struct job_answer a = { .q = JOB_Q_INFLIGHT, .col = col };

	a.in = col_inflight_now(ctx, col, &a.call);
	if (s->o.events) {
		report__answer(&s->j, j->id, &a);
		emit(s);
	}
	*in = a.call;
	return a.in;
}

static void job_state(void *ctx, int col, char *buf, size_t n)
{
	struct sjob *j = ctx;
	struct session *s = j->s;

	state_now(ctx, col, buf, n);
	if (s->o.events) {
		report__answer(&s->j, j->id, &(struct job_answer){
			.q = JOB_Q_STATE, .col = col, .text = buf,
		});
		emit(s);
	}
}

static bool job_where(void *ctx, int col, char *coll, size_t ncoll, char *stack, size_t n)
{
	struct sjob *j = ctx;
	struct session *s = j->s;
	bool in = where_now(ctx, col, coll, ncoll, stack, n);

	if (s->o.events) {
		report__answer(&s->j, j->id, &(struct job_answer){
			.q = JOB_Q_WHERE, .col = col, .in = in, .coll = coll, .text = stack,
		});
		emit(s);
	}
	return in;
}

int session__build_jobs(struct session *s)
{
	struct job_probe_ops ops = {
		.inflight = job_inflight, .state = job_state, .where = job_where,
		.on_step = job_on_step, .on_cost = job_on_cost,
		.on_verdict = job_on_verdict, .on_phase = job_on_phase, .on_rule = job_on_rule,
	};
	uint64_t t;
	int k, c;

	for (k = 0; k < SESSION_JOBS_MAX; k++) {
		struct sjob *j = &s->jobs[k];

		if (!j->used || !j->dirty)
			continue;
		/* a new member restarts the model: steps need every rank from the same point */
		job__free(j->model);
		ops.ctx = j;
		j->model = job__new(&s->o.jcfg, j->ncols, &ops);
		if (!j->model)
			return -ENOMEM;
		j->builds++;
		j->dirty = false;
		j->have_last = false;
		job__set_detail(j->model, s->cap_active);
		t = session__now();
		for (c = 0; c < j->ncols; c++) {
			struct rank_state *rs = col_rank(j, c);

			rs->col = c;
			job__set_rank(j->model, c, rs->info.rank, rs->pid);
		}
		job__set_world(j->model, job_size(j));
		if (s->o.events)
			model_line(s, j, t);
		for (c = 0; c < j->ncols; c++) {
			struct rank_state *rs = col_rank(j, c);

			if (rs->exited)
				feed_rank(s, rs, &(struct feed_rec){
					.kind = FEED_EXIT, .col = c, .tid = rs->pid, .start = t,
					.status = rs->exit_code,
				});
		}
	}
	return 0;
}

static int make_timer(uint64_t period_ns);

/*
 * The ring buffer is drained on a timer, never woken by the probes (a wakeup per record costs
 * the traced thread a microsecond). It is read DRAIN_SPLIT times per --drain-ms (a read of an
 * empty ring is a few microseconds), so a storm that starts right after a read has a quarter
 * of a period to fill it, not a whole one. When a read found the ring over a quarter full, the
 * next comes twice as soon, four times over half (down to DRAIN_MIN_NS); once a read finds it
 * under 1/16 full, the period doubles back. Steps, verdicts and captures run once per
 * --drain-ms; the reads between only empty the ring.
 */
#define DRAIN_MIN_NS	2000000ULL
#define DRAIN_SPLIT	4
#define DRAIN_REC_BYTES	72	/* a typical record with its ring header, to estimate the fill */

static uint64_t drain_base_ns(const struct session *s)
{
	uint64_t full = (uint64_t)s->o.drain_ms * 1000000ULL, b = full / DRAIN_SPLIT;

	b = b < DRAIN_MIN_NS ? DRAIN_MIN_NS : b;
	return b < full ? b : full;
}

static void drain_adapt(struct session *s, int dfd, int consumed, uint64_t *period_ns)
{
	uint64_t bytes = consumed > 0 ? (uint64_t)consumed * DRAIN_REC_BYTES : 0;
	uint64_t ring = s->probes.cfg.ringbuf_bytes, base = drain_base_ns(s);
	uint64_t next = *period_ns;
	struct itimerspec its;

	if (bytes > ring / 4)
		next /= bytes > ring / 2 ? 4 : 2;
	else if (bytes < ring / 16)
		next *= 2;
	next = next < DRAIN_MIN_NS ? DRAIN_MIN_NS : next > base ? base : next;
	if (next == *period_ns)
		return;
	*period_ns = next;
	s->self.drain_period_ns = next;
	its.it_interval = (struct timespec){ next / 1000000000ULL, next % 1000000000ULL };
	its.it_value = its.it_interval;
	timerfd_settime(dfd, 0, &its, NULL);
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

int session__free_slot(const struct session *s)
{
	int i;

	for (i = 0; i < s->o.max_ranks; i++)
		if (!s->ranks[i].used)
			return i;
	return -ENOSPC;
}

/* Wait at most this long for the pod watch's next list when a rank's pod is not in the last
 * one (a pod that just started): the job id must not depend on which poll came first. A busy
 * API server (or the stand-in under a loaded make check) can take over 0.5 s to list; the
 * wait holds only this attach, never the training process, and only once every 5 s. */
#define K8S_WAIT_MS	2000

/*
 * The job id of rs from its environ (len bytes, or none), its pod when the pod watch knows
 * it, this node and its parent (ranks.h). The pod's namespace and name go with it.
 */
static void job_of_process(struct session *s, struct rank_state *rs, int ppid, const char *env,
			   size_t len)
{
	struct job_ctx ctx = { .node = s->node, .ppid = ppid };
	char uid[K8S_UID_LEN + 1], *text = NULL;
	struct proc_stat pst;
	struct k8s_pod pod;
	ssize_t n;

	if (ppid > 0 && !procfs__stat(ppid, &pst))
		ctx.ppid_start = pst.starttime;
	n = procfs__read(rs->pid, "cgroup", &text, PROC_CGROUP_MAX);
	if (n > 0 && !k8s__cgroup_pod(text, n, uid, NULL, 0) && s->k8s &&
	    k8s_watch__pod(s->k8s, uid, K8S_WAIT_MS, &pod)) {
		ctx.k8s_job = pod.job;
		snprintf(rs->info.k8s_ns, sizeof(rs->info.k8s_ns), "%s", pod.ns);
		snprintf(rs->info.k8s_pod, sizeof(rs->info.k8s_pod), "%s", pod.name);
	}
	free(text);
	ranks__job(env ? env : "", env ? len : 0, &ctx, &rs->info);
}

int session__prepare(struct session *s, int i, pid_t pid)
{
	struct rank_state *rs = &s->ranks[i];
	struct proc_stat st;
	char *env = NULL;
	ssize_t n;
	int err;

	memset(rs, 0, sizeof(*rs));
	rs->slot = i;
	rs->pid = pid;
	rs->prep_ns = session__now();
	ranks__init(&rs->info);
	err = procfs__stat(pid, &st);
	if (err || st.state == 'Z' || st.state == 'X') {
		if (!s->o.daemon)
			pr_warn("attach: no process with PID %d; is it still running? (check: ps -p %d)",
				pid, pid);
		return -ESRCH;
	}
	rs->starttime = st.starttime;
	rs->node = s->node;
	snprintf(rs->comm, sizeof(rs->comm), "%s", st.comm);
	n = procfs__read(pid, "environ", &env, PROC_ENVIRON_MAX);
	if (n >= 0) {
		ranks__from_environ(env, n, &rs->info);
	} else {
		pr_warn("%s: failed to read environ of PID %d: %s; rank falls back to init/order",
			verb(s), pid, strerror(-n));
	}
	job_of_process(s, rs, st.ppid, env, n > 0 ? n : 0);
	free(env);
	err = libs__discover(pid, &rs->libs);
	if (err < 0)
		pr_warn("%s: failed to read maps of PID %d: %s", verb(s), pid, strerror(-err));
	return 0;
}

/* Learn OpenMPI's predefined handles from the file pid mapped at pl, and where it keeps
 * ompi_mpi_state (*state, when that file defines it). */
static void scan_mpi(struct session *s, pid_t pid, const struct proc_lib *pl, uint64_t *state)
{
	const char *via;
	char path[64];
	int fd;

	fd = libs__open_mapped(pid, pl, &via, NULL);
	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	comms__scan_mpi(&s->comms, pid, path, pl, state);
	close(fd);
}

/* OpenMPI's ompi_mpi_state: 0 not initialized, 1 MPI_Init running, 2 and up initialized (no
 * communicator can be made before 2). */
#define OMPI_STATE_INIT_COMPLETED	2

/*
 * Sub-communicator names count the ones the rank made (see name_mpi_comm), so they hold only
 * if the probes were on before the first. MPI_Comm_split & co. need MPI initialized: read
 * ompi_mpi_state now that the probes are on. A rank past MPI_Init may have made some already,
 * so its sub-communicators keep their handles as names (the job model groups them by who is
 * inside a collective together). Without the symbol (not OpenMPI) nothing is known.
 */
static void check_mpi_state(struct session *s, struct rank_state *rs, uint64_t addr)
{
	int32_t state = -1;

	if (!addr)
		return;
	if (procfs__read_mem(rs->pid, addr, &state, sizeof(state)))
		state = -1;	/* unreadable: assume the worst */
	if (state >= 0 && state < OMPI_STATE_INIT_COMPLETED)
		return;
	rs->mpi_late = true;
	pr_info("%s: PID %d was attached after MPI_Init (ompi_mpi_state %d): its MPI "
		"sub-communicators are named by their handles", verb(s), rs->pid, state);
}

/* --steps marker:/usdt: on one rank: find the file (a library by name, else the executable),
 * then the symbol or the USDT note in it. */
static void attach_marker(struct session *s, struct rank_state *rs)
{
	const struct session_opts *o = &s->o;
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
	fd = libs__open_mapped(rs->pid, &pl, &via, NULL);
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

/* Does pid run under a seccomp filter ("Seccomp: 2")? */
static bool seccomp_filtered(pid_t pid)
{
	long mode = 0;

	return procfs__status_field(pid, "status", "Seccomp", &mode, 1) > 0 && mode == 2;
}

/* Put the collective probes on the libraries of rs not probed yet: all of them on join, the
 * ones mapped since on a later call (a rank found at exec maps its libraries after). */
static void attach_coll(struct session *s, struct rank_state *rs)
{
	const struct proc_lib *mpi = &rs->libs.lib[RS_LIB_MPI];
	struct proc_libs todo = rs->libs;
	struct coll_report rep;
	enum lib_error kind;
	char safe[PATH_MAX], hint[192];
	int lib, n;
	bool had_mpi = rs->coll.nsites[RS_LIB_MPI] > 0;

	if (!s->probes.coll)
		return;
	for (lib = 1; lib < RS_LIB_MAX; lib++)
		if (rs->coll.nsites[lib] || rs->coll.err[lib])
			todo.lib[lib].found = false;	/* done, or failed for good */
	if (seccomp_filtered(rs->pid) && preflight__uretprobe_seccomp_risk(NULL)) {
		/* never the cause of a rank's death: no probe that returns through a syscall */
		for (lib = 1; lib < RS_LIB_MAX; lib++) {
			if (!todo.lib[lib].found)
				continue;
			rs->coll.err[lib] = -ENOTSUP;
			s->lib_errors[LE_SECCOMP]++;
		}
		pr_warn("%s: PID %d runs under a seccomp filter, and on this kernel (6.11 to 6.13) "
			"a uretprobe returns through a system call such a filter may kill it for; "
			"no collective probes on it, sched/io/net only", verb(s), rs->pid);
		return;
	}
	n = probes__attach_coll(&s->probes, rs->pid, &todo, &rep);
	if (n < 0) {
		pr_warn("%s: failed to attach collective probes to PID %d: %s", verb(s), rs->pid,
			strerror(-n));
		return;
	}
	rs->coll_probes += n;
	for (lib = 1; lib < RS_LIB_MAX; lib++) {
		if (!todo.lib[lib].found)
			continue;
		rs->coll.nsites[lib] = rep.nsites[lib];
		rs->coll.endbr[lib] = rep.endbr[lib];
		rs->coll.err[lib] = rep.err[lib];
		rs->coll.via[lib] = rep.via[lib];
		rs->coll.refused[lib] = rep.refused[lib];
		if (rep.refused[lib] != LR_NONE)
			s->lib_refused[rep.refused[lib]]++;
		/* a CUDA library without the synchronize calls (a stub) is not worth a warning */
		if (!rep.err[lib] || (rep.err[lib] == -ENOENT &&
				      (lib == RS_LIB_CUDART || lib == RS_LIB_CUDA)))
			continue;
		kind = libs__error_kind(rep.err[lib]);
		s->lib_errors[kind]++;
		hint[0] = '\0';
		if (rep.err[lib] == -EACCES || rep.err[lib] == -EPERM)
			preflight__paranoid_hint(hint, sizeof(hint));
		pr_warn("%s: failed to probe %s in PID %d (%s): %s (%s)%s%s", verb(s),
			decode__lib_name(lib), rs->pid,
			log__safe(rs->libs.lib[lib].path, safe, sizeof(safe)),
			strerror(-rep.err[lib]), libs__error_name(kind), hint,
			kind == LE_FD_LIMIT ? "; raise the open file limit (ulimit -n)" :
					      "; other families keep running");
	}
	if (mpi->found && !had_mpi && rs->coll.nsites[RS_LIB_MPI]) {
		struct proc_lib exe;
		uint64_t state = 0;

		scan_mpi(s, rs->pid, mpi, &state);
		/* copy relocations move MPI_COMM_WORLD & co. into the executable */
		if (!libs__exe(rs->pid, &exe))
			scan_mpi(s, rs->pid, &exe, NULL);
		check_mpi_state(s, rs, state);
	}
}

/* The job of job id (daemon) or the one job of attach; created when new. */
static struct sjob *find_job(struct session *s, const char *id, bool create)
{
	int k, free_k = -1;

	for (k = 0; k < SESSION_JOBS_MAX; k++) {
		if (!s->jobs[k].used) {
			if (free_k < 0 && k < s->o.max_jobs)
				free_k = k;
			continue;
		}
		if (!s->o.daemon || !strcmp(s->jobs[k].id, id))
			return &s->jobs[k];
	}
	if (!create || free_k < 0)
		return NULL;
	memset(&s->jobs[free_k], 0, sizeof(s->jobs[free_k]));
	s->jobs[free_k].used = true;
	s->jobs[free_k].s = s;
	snprintf(s->jobs[free_k].id, sizeof(s->jobs[free_k].id), "%s", id);
	return &s->jobs[free_k];
}

enum attach_result session__join(struct session *s, int slot, bool defer)
{
	struct rank_state *rs = &s->ranks[slot], *o;
	struct joblife_job *e;
	struct proc_stat st;
	pid_t kids[64];
	struct sjob *j;
	int n, i, c, err;

	j = find_job(s, rs->info.job, true);
	if (!j)
		return AR_CAP_JOBS;
	if (j->done_ns && s->o.daemon) {
		/* every rank of this job id is gone: a new member starts a new run of it. The
		 * old run's last steps first: its failure is judged on them */
		advance_job(s, j, session__now(), true);
		if (s->life && (e = joblife__get(s->life, j->id, false)))
			joblife__flush(e);
		while (j->used && j->ncols)
			session__drop_rank(s, j->slots[j->ncols - 1]);
		return session__join(s, slot, defer);
	}
	if (!j->ncols && s->life && (e = joblife__get(s->life, j->id, true)))
		joblife__generation(e);		/* the first rank of a (re)start */
	if (rs->info.src == RANK_SRC_NONE) {
		rs->info.rank = free_rank_number(s, j, rs);
		rs->info.src = RANK_SRC_ORDER;
	}
	/* attach takes the PIDs it is given as they are; the daemon keeps one process per
	 * (job, rank) */
	for (c = 0; s->o.daemon && c < j->ncols; c++) {
		o = col_rank(j, c);
		if (!o || o->info.rank != rs->info.rank)
			continue;
		/* a live holder keeps its number unless it has no collective library: a batch
		 * shell or a wrapper with the rank variable yields to the process that is the
		 * rank; a restarted rank replaces the one that exited */
		if (!o->exited && o->coll_probes)
			return AR_DUP_RANK;
		if (!o->exited) {
			pr_info("%s: PID %d gives rank %d of job '%s' to PID %d: it maps no collective "
				"library", verb(s), o->pid, o->info.rank, j->id, rs->pid);
			s->displaced_pid = o->pid;
		}
		if (o->exited && s->life && (e = joblife__get(s->life, j->id, true)))
			joblife__generation(e);	/* a rank relaunched in place */
		session__drop_rank(s, o->slot);
		if (!j->used)	/* that was the job's last rank */
			return session__join(s, slot, defer);
		c = -1;
	}
	err = probes__track(&s->probes, rs->pid, rs->slot, rs->pid, true);
	if (err) {
		pr_warn("%s: failed to track PID %d: %s; is the tracked-process map full?", verb(s),
			rs->pid, strerror(-err));
		if (!j->ncols)
			memset(j, 0, sizeof(*j));
		return AR_TRACK_FAILED;
	}
	rs->used = true;
	rs->job = j - s->jobs;
	rs->col = j->ncols;
	rs->join_ns = session__now();
	j->slots[j->ncols++] = slot;
	j->dirty = true;
	j->done_ns = 0;
	if (slot >= s->nranks)
		s->nranks = slot + 1;
	if (s->o.listen && !rs->acc)
		rs->acc = calloc(1, sizeof(*rs->acc));	/* NULL: no series for it, nothing worse */
	/* the main thread may be blocked since before we came: start its interval now */
	if (!procfs__stat(rs->pid, &st)) {
		probe_sched__seed(&s->probes, rs->pid, st.state == 'R', session__now());
		/* exiting meanwhile: its exit record may have gone by before the seed, and then
		 * nothing deletes it */
		if (procfs__stat(rs->pid, &st) || st.state == 'Z' || st.state == 'X' ||
		    (st.flags & PROCFS_PF_EXITING))
			probe_sched__forget(&s->probes, rs->pid);
	}
	/* workers forked before we came: the kernel only sees forks from now on */
	n = targets__children(rs->pid, kids, 64);
	for (i = 0; i < n; i++) {
		if (session__has_pid(s, kids[i]))
			continue;	/* a rank launched by a rank is its own rank */
		probes__track(&s->probes, kids[i], rs->slot, rs->pid, false);
		rs->workers++;
	}
	attach_coll(s, rs);
	if (s->probes.coll && s->o.jcfg.mode == STEPS_MARKER)
		attach_marker(s, rs);
	if (!defer && session__build_jobs(s))
		pr_warn("%s: out of memory building the model of job '%s'", verb(s), j->id);
	emit_rank(s, rs);
	return AR_OK;
}

/* A rank found at exec maps its libraries a few ms later (the loader) or seconds later (an
 * import), and may be in its first collective soon after: one that has none yet is looked at
 * on every drain for this long, else the steps before its first look are lost to the whole
 * job (they start at every rank's first collective), and a relaunch's recovery is measured a
 * step late. */
#define LIBS_YOUNG_NS	10000000000ULL

/* Libraries mapped since the last look (the daemon's ranks, found at exec). Every second for
 * the first 30 s of a rank (imports load them); after that, a rank that maps nothing new is
 * looked at less often, up to every 32 s: a rank of one library never maps the others, and
 * its maps are long. young: only the ranks of LIBS_YOUNG_NS with no collective library yet,
 * whatever their back-off (a young process's maps are short). */
static void recheck_libs(struct session *s, bool young)
{
	uint64_t now = session__now();
	int i, lib;

	for (i = 0; i < s->nranks; i++) {
		struct rank_state *rs = &s->ranks[i];
		int before = rs->coll_probes;
		bool missing = false;

		if (!rs->used || rs->exited)
			continue;
		if (young ? rs->coll_probes || now - rs->join_ns > LIBS_YOUNG_NS :
			    now < rs->libs_next_ns)
			continue;
		for (lib = RS_LIB_NCCL; lib < RS_LIB_MAX; lib++)
			missing |= !rs->coll.nsites[lib] && !rs->coll.err[lib];
		if (!missing)
			continue;
		if (!young) {
			rs->libs_wait_s = rs->libs_wait_s && now - rs->join_ns > 30000000000ULL ?
					  rs->libs_wait_s * 2 : 1;
			if (rs->libs_wait_s > 32)
				rs->libs_wait_s = 32;
			rs->libs_next_ns = now + rs->libs_wait_s * 1000000000ULL - 50000000ULL;
		}
		if (libs__discover(rs->pid, &rs->libs) <= 0)
			continue;
		attach_coll(s, rs);
		if (rs->coll_probes != before) {
			emit_rank(s, rs);
			rs->libs_wait_s = 0;	/* loading libraries now: look again soon */
		}
	}
}

void session__block_signals(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
}

static bool all_exited(const struct session *s)
{
	int i;

	for (i = 0; i < s->nranks; i++)
		if (s->ranks[i].used && !s->ranks[i].exited)
			return false;
	return true;
}

int session__loop(struct session *s, const struct session_hooks *hooks)
{
	struct epoll_event ev, evs[8];
	struct signalfd_siginfo si;
	uint64_t deadline = 0, exp, t, last_drain = 0, drain_ns = drain_base_ns(s);
	sigset_t mask;
	int ep, sfd, dfd, tfd, rfd = -1, rbfd, xfd = -1, cfd = -1, i, n, k, err = 0;
	bool stop = false;

	s->hooks = hooks;
	s->self.drain_period_ns = drain_ns;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	dfd = make_timer(drain_ns);
	tfd = make_timer((uint64_t)(s->o.interval_s * 1e9));
	if (s->o.rescan_s > 0)
		rfd = make_timer((uint64_t)(s->o.rescan_s * 1e9));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || dfd < 0 || tfd < 0 || ep < 0 || (s->o.rescan_s > 0 && rfd < 0)) {
		err = -errno;
		pr_warn("%s: failed to set up the event loop: %s", verb(s), strerror(errno));
		goto out;
	}
	ev.events = EPOLLIN;
	ev.data.fd = sfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	ev.data.fd = dfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, dfd, &ev);
	ev.data.fd = tfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	if (rfd >= 0) {
		ev.data.fd = rfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, rfd, &ev);
	}
	/* the ring buffer's fd is in the set for completeness, but records are submitted
	 * without wakeups: the drain timer is what reads them */
	rbfd = ring_buffer__epoll_fd(s->rb);
	if (rbfd >= 0) {
		ev.data.fd = rbfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, rbfd, &ev);
	}
	if (s->rx) {
		xfd = cupti_rx__fd(s->rx);
		ev.data.fd = xfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, xfd, &ev);
	}
	if (s->cap_open) {
		cfd = s->cap.efd;
		ev.data.fd = cfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev);
	}
	if (s->o.duration_s > 0)
		deadline = session__now() + (uint64_t)(s->o.duration_s * 1e9);
	while (!stop) {
		n = epoll_wait(ep, evs, 8, 1000);
		if (n < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		for (i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == sfd) {
				if (read(sfd, &si, sizeof(si)) == sizeof(si))
					pr_info("%s: got %s, detaching", verb(s), strsignal(si.ssi_signo));
				stop = true;
			} else if (fd == rbfd) {
				ring_buffer__consume(s->rb);
			} else if (xfd >= 0 && fd == xfd) {
				cupti_rx__poll(s->rx);
			} else if (cfd >= 0 && fd == cfd) {
				capture_tick(s, session__now());
			} else if (fd == dfd) {
				if (read(dfd, &exp, sizeof(exp)) < 0)
					continue;
				drain_adapt(s, dfd, ring_buffer__consume(s->rb), &drain_ns);
				t = session__now();
				/* a quick drain between the regular ones only empties the ring */
				if (t < last_drain + (uint64_t)s->o.drain_ms * 1000000ULL)
					continue;
				if (last_drain && t - last_drain > SESSION_STALL_NS)
					stalled(s, t - last_drain);
				last_drain = t;
				if (s->o.daemon)
					recheck_libs(s, true);
				if (s->httpd && httpd__wanted(s->httpd, HTTPD_METRICS)) {
					read_self(s, false);
					publish_metrics(s, t);
				}
				if (session__build_jobs(s))
					pr_warn("%s: out of memory building a job model", verb(s));
				/* steps, hangs and exits are judged as records arrive, not per tick */
				t = session__now();
				for (k = 0; k < SESSION_JOBS_MAX; k++)
					if (s->jobs[k].used)
						advance_job(s, &s->jobs[k], t, false);
				if (s->o.listen)
					sample_checkpoints(s, t);
				capture_tick(s, t);
				if (s->o.capture_out && s->cap_written)
					stop = true;	/* rankscope capture -p: done */
				fflush(s->out);
				if (!s->o.daemon && all_exited(s))
					stop = true;
			} else if (fd == tfd) {
				if (read(tfd, &exp, sizeof(exp)) < 0)
					continue;
				ring_buffer__consume(s->rb);
				check_alive(s);
				if (s->rx)
					cupti_rx__refresh(s->rx);
				if (hooks && hooks->tick)
					hooks->tick(s, session__now());
				if (!s->o.daemon && all_exited(s))
					stop = true;
				else
					session__tick(s, false);
			} else if (fd == rfd) {
				if (read(rfd, &exp, sizeof(exp)) < 0)
					continue;
				recheck_libs(s, false);
				if (hooks && hooks->rescan)
					hooks->rescan(s);
			}
		}
		if (s->write_err)
			stop = true;
		if (deadline && session__now() >= deadline)
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
	if (rfd >= 0)
		close(rfd);
	return err;
}

void session__finish(struct session *s)
{
	/* what the probes saw ends here: the last frame's rates and the main thread's open
	 * on/off-CPU interval stop at it, not at the end of the detach */
	s->stop_ns = session__now();
	s->hooks = NULL;	/* nothing new is adopted while the last records drain */
	s->finishing = true;	/* nor does a capture start */
	if (s->cap_open)
		capture__abandon(&s->cap);
	if (s->cap_active) {	/* what was recorded is kept */
		uint64_t now = session__now();

		/* a shorter file than asked for is said, with why */
		if (now < s->cap.t_end)
			pr_warn("%s: capture %s: %.1f s recorded of the %d s asked: %s", verb(s),
				s->cap.id, (now - s->cap.t_start) / 1e9, s->cap.req.seconds,
				all_exited(s) ? "every rank exited" :
						"stopped early (--duration, or a signal)");
		probes__detach(&s->probes);
		while (ring_buffer__consume(s->rb) > 0)
			;
		capture_done(s);
	}
	capture_reap(s, true);
	/* detach first, so nothing is produced while we drain and the final counts balance */
	probes__detach(&s->probes);
	while (ring_buffer__consume(s->rb) > 0)
		;
	session__tick(s, true);
	for (int k = 0; s->o.json && k < SESSION_JOBS_MAX; k++) {
		if (!s->jobs[k].used || !s->jobs[k].model)
			continue;
		report__cost_total(&s->j, s->jobs[k].id, job__cost(s->jobs[k].model),
				   s->o.jcfg.gpu_hour_usd, s->o.jcfg.gpus_per_rank);
		emit(s);
	}
}

/* The node's name for job ids and the node label: NODE_NAME (the DaemonSet sets it from
 * spec.nodeName), else the hostname. */
static void node_name(char *out, size_t n)
{
	const char *e = getenv("NODE_NAME"), *p;
	struct utsname u;

	if (e && *e && strlen(e) < n) {
		for (p = e; *p && ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
				   (*p >= 'A' && *p <= 'Z') || *p == '-' || *p == '.'); p++)
			;
		if (!*p) {
			snprintf(out, n, "%s", e);
			return;
		}
		pr_warn("rankscope: NODE_NAME is not a node name; the hostname is used instead");
	}
	if (uname(&u))
		out[0] = '\0';
	else
		snprintf(out, n, "%s", u.nodename);
}

int session__open(struct session *s)
{
	char msg[256];
	int running, f;

	json__init(&s->j);
	comms__init(&s->comms);
	prom__init(&s->prom);
	if (!s->out)
		s->out = stdout;
	if (s->o.max_ranks <= 0 || s->o.max_ranks > RS_MAX_SLOTS)
		s->o.max_ranks = RS_MAX_SLOTS;
	if (s->o.max_jobs <= 0 || s->o.max_jobs > SESSION_JOBS_MAX)
		s->o.max_jobs = SESSION_JOBS_MAX;
	s->ranks = calloc(s->o.max_ranks, sizeof(*s->ranks));
	if (!s->ranks)
		return -ENOMEM;
	running = probes__open(&s->probes, &s->o.pcfg);
	if (running == -ENOMEM && s->probes.mem_limit != UINT64_MAX) {
		pr_warn("%s: the memory limit of %.1f MiB (%s) is too low for the probes (said "
			"above); exiting rather than meeting the OOM killer", verb(s),
			s->probes.mem_limit / 1048576.0, s->probes.mem_where);
		return running;
	}
	if (running < 0) {
		pr_warn("%s: failed to create BPF maps: %s; is the memlock limit too low "
			"(ulimit -l) or BPF disabled?", verb(s), strerror(-running));
		return running;
	}
	for (f = 0; f < RS_FAM_MAX; f++)
		if (s->probes.fam_err[f] && s->probes.fam_err[f] != -ECANCELED)
			pr_warn("%s: probe family %s skipped: %s", verb(s), decode__family_name(f),
				s->probes.fam_why[f]);
	if (!running) {
		for (f = 0; f < RS_FAM_MAX && s->probes.fam_err[f] == -ECANCELED; f++)
			;
		if (f == RS_FAM_MAX)
			pr_warn("%s: every probe family was turned off (--no-sched, --no-io, --no-net, "
				"--no-collectives); leave at least one on", verb(s));
		else
			pr_warn("%s: no probe family could be loaded; run with -v for the verifier log",
				verb(s));
		return -ENOENT;
	}
	s->rb = ring_buffer__new(s->probes.events_fd, handle_event, s, NULL);
	if (!s->rb) {
		f = -errno;
		pr_warn("%s: failed to open the ring buffer: %s", verb(s), strerror(-f));
		return f;
	}
	if (s->o.listen) {
		f = httpd__start(s->o.listen, s->o.token, &s->httpd, msg, sizeof(msg));
		if (f) {
			pr_warn("%s: %s", verb(s), msg);
			return f;
		}
		/* beyond loopback without a token, --listen serves no API (captures included) */
		pr_info("%s: serving /metrics and %s on http://%s", verb(s),
			httpd__api_on_listen(s->httpd) ? "/api/v1" : "/healthz", s->o.listen);
		/* published every interval: three missed, and at least 30 s, is a stuck loop */
		httpd__set_stale(s->httpd, s->o.interval_s * 3e9 > 30e9 ? s->o.interval_s * 3e9 : 30e9);
		httpd__set_lazy(s->httpd, HTTPD_METRICS);	/* made per scrape, not per tick */
	}
	if (s->o.capture_dir && (s->o.listen || s->o.capture_out)) {
		f = capture__open(&s->cap, s->o.capture_out ? NULL : s->o.capture_dir,
				  s->o.capture_max_count, s->o.capture_max_bytes, msg, sizeof(msg));
		if (f && s->o.capture_out) {
			pr_warn("%s: %s", verb(s), msg);
			return f;
		}
		if (f) {	/* no capture directory (a read-only root): the rest still runs */
			pr_warn("%s: captures are off: %s", verb(s), msg);
			capture__close(&s->cap);
		} else {
			s->cap_open = true;
			httpd__set_capture(s->httpd, &s->cap);
		}
		if (s->cap_open && s->o.capture_out) {
			char id[CAPTURE_ID_MAX];

			capture__request(&s->cap, &s->o.capture_now, id, sizeof(id));
		}
	}
	if (s->o.cupti_socket) {
		struct cupti_rx_ops ops = {
			.wanted = gpu_wanted, .on_rec = gpu_rec, .on_status = gpu_status, .ctx = s,
		};

		f = cupti_rx__open(s->o.cupti_socket, &ops, &s->rx, msg, sizeof(msg));
		if (f) {
			pr_warn("%s: %s", verb(s), msg);
			return f;
		}
		pr_info("%s: GPU timing from librankscope_cupti.so on %s", verb(s), s->o.cupti_socket);
	}
	node_name(s->node, sizeof(s->node));
	if (s->o.daemon) {
		s->life = malloc(sizeof(*s->life));
		if (!s->life)
			return -ENOMEM;
		/* a failure waits for the steps before it: their events, then GPU records */
		joblife__init(s->life, s->o.abandon_s * 1e9, s->o.retain_s * 1e9,
			      JOB_SETTLE_NS + JOB_GPU_SETTLE_NS + 300000000ULL);
	}
	if (s->o.k8s_pods) {
		f = k8s_watch__start(&s->k8s, s->o.k8s_pods, s->node, msg, sizeof(msg));
		if (f) {
			pr_warn("%s: invalid --k8s-pods: %s", verb(s), msg);
			return f;
		}
		pr_info("%s: job ids from the owners of this node's pods, polled every %d s",
			verb(s), K8S_POLL_S);
	}
	s->start_ns = session__now();
	return 0;
}

void session__close(struct session *s)
{
	int i, k;

	k8s_watch__stop(s->k8s);
	s->k8s = NULL;
	if (s->life)
		joblife__free(s->life);
	free(s->life);
	s->life = NULL;

	httpd__stop(s->httpd);
	s->httpd = NULL;
	prom__free(&s->prom);
	for (i = 0; s->ranks && i < s->o.max_ranks; i++)
		rank_free(&s->ranks[i]);
	cupti_rx__close(s->rx);
	s->rx = NULL;
	httpd__set_capture(s->httpd, NULL);
	capture_reap(s, true);
	if (s->cap_open)
		capture__close(&s->cap);
	s->cap_open = false;
	for (k = 0; k < SESSION_JOBS_MAX; k++) {
		job__free(s->jobs[k].model);
		free(s->jobs[k].stacks);
	}
	memset(s->jobs, 0, sizeof(s->jobs));
	ring_buffer__free(s->rb);
	s->rb = NULL;
	probes__close(&s->probes);
	comms__free(&s->comms);
	json__free(&s->j);
	free(s->ranks);
	s->ranks = NULL;
}
