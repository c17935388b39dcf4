// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Reading a replay's input: recordings (--json --events lines) and op traces (README "Op
 * traces"). A single recording with model lines feeds the model as it is read, the way the
 * live run did; everything else is kept for merge.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "decode.h"
#include "log.h"
#include "rline.h"
#include "rp.h"

/* Op trace ops that are not collectives; what the main thread does in them. */
enum { OT_COMPUTE = 1, OT_IO, OT_INPUT, OT_SCHED, OT_WAIT };


struct rp_file {
	const char *name;
	unsigned long line;
	int domain;
	char job[128];		/* an op trace's job (meta), else "trace" */
	int world;		/* from an op trace's meta; -1 */
	bool saw_model;
	bool saw_meta, saw_op;
};

/* Op traces merged: the first that names its job in a meta line, and the first with none
 * (its ranks form the job "trace"). Both: their ranks are two jobs, likely by mistake. */
struct trace_jobs {
	char named[128];
	const char *named_file, *bare_file;
};

static int bad(const struct rp_file *f, const char *what)
{
	pr_warn("replay: %s:%lu: %s", f->name, f->line, what);
	return -EINVAL;
}

static struct rp_pid *pid_slot(struct replay *rp, pid_t pid, bool add)
{
	uint32_t h = (uint32_t)pid * 2654435761u, k;

	for (k = 0; k < RP_PIDS; k++) {
		struct rp_pid *p = &rp->pids[(h + k) % RP_PIDS];

		if (p->pid == pid)
			return p;
		if (!p->pid) {
			if (!add)
				return NULL;
			memset(p, 0, sizeof(*p));
			p->pid = pid;
			p->col = p->job = -1;
			p->rank = p->world = -1;
			return p;
		}
	}
	return NULL;
}

/* Room for cap records. Millions of them: on huge pages where the kernel lends them, or a
 * replay spends a sixth of its time in page faults. */
void *rp__big(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 2UL << 20, bytes))
		return NULL;
	madvise(p, bytes, MADV_HUGEPAGE);	/* a hint: THP off or "never" is fine */
	return p;
}

static int grow(struct replay *rp, size_t cap)
{
	void *n = rp__big(cap * sizeof(struct rp_rec));

	if (!n)
		return -ENOMEM;
	if (rp->nrec)
		memcpy(n, rp->rec, rp->nrec * sizeof(struct rp_rec));
	free(rp->rec);
	rp->rec = n;
	rp->caprec = cap;
	return 0;
}

static int keep(struct replay *rp, const struct rp_rec *r)
{
	if (rp->nrec == rp->caprec && grow(rp, rp->caprec ? rp->caprec * 2 : 65536))
		return -ENOMEM;
	rp->rec[rp->nrec] = *r;
	rp->nrec++;
	return 0;
}

int rp__reserve(struct replay *rp, size_t more)
{
	return rp->nrec + more > rp->caprec ? grow(rp, rp->nrec + more) : 0;
}

void rp__free_records(struct replay *rp)
{
	free(rp->rec);
	free(rp->pids);
	rp->rec = NULL;
	rp->pids = NULL;
	rp->nrec = rp->caprec = 0;
}

/* {"type":"op",...} */
static int op_line(struct replay *rp, struct rp_file *f, const struct rline *l)
{
	struct rp_rec r = { .f.peer = -1, .f.syscall = -1, .trace = true, .comm_idx = -1 };
	char op[32], comm[COMM_NAME_MAX], msg[256];
	struct rp_job *j;
	int64_t rank, peer;
	uint64_t start, dur = 0, bytes = 0;
	bool has_dur, async = false;
	int kind = 0, v, err;

	if (!rline__i64(l, "rank", &rank) || rank < 0 || rank >= (1 << 20))
		return bad(f, "op line without a rank (an integer from 0); see README \"Op traces\"");
	if (rline__str(l, "op", op, sizeof(op)) < 0)
		return bad(f, "op line without an op name; see README \"Op traces\"");
	if (!rline__u64(l, "start_ns", &start))
		return bad(f, "op line without start_ns (integer nanoseconds on the rank's clock)");
	has_dur = rline__u64(l, "dur_ns", &dur);
	if (!has_dur && !rline__null(l, "dur_ns") && rline__i64(l, "dur_ns", &peer))
		return bad(f, "dur_ns must not be negative; leave it out for an op that never ends");
	if (has_dur && start > UINT64_MAX - dur)
		return bad(f, "start_ns + dur_ns overflows");
	rline__u64(l, "bytes", &bytes);
	rline__bool(l, "async", &async);
	if (!strcmp(op, "compute"))
		kind = OT_COMPUTE;
	else if (!strcmp(op, "io"))
		kind = OT_IO;
	else if (!strcmp(op, "input_wait"))
		kind = OT_INPUT;
	else if (!strcmp(op, "sched_delay"))
		kind = OT_SCHED;
	else if (!strcmp(op, "wait"))
		kind = OT_WAIT;
	v = kind ? -1 : decode__by_name(decode__op_name, RS_OP_GROUP_START, op);
	if (!kind && v <= RS_OP_NONE) {
		snprintf(msg, sizeof(msg), "unknown op '%s'; use allreduce, allgather, reduce_scatter, "
			 "alltoall, broadcast, reduce, barrier, send, recv, compute, io, input_wait, "
			 "sched_delay or wait", op);
		return bad(f, msg);
	}
	j = rp__job(rp, f->job);
	if (!j)
		return bad(f, "more than 64 jobs in one replay");
	if (f->world > j->world)
		j->world = f->world;
	r.job = j - rp->jobs;
	r.key = (int)rank;
	r.f.start = start;
	r.f.end = has_dur ? start + dur : 0;
	if (r.f.end > rp->last_ns)
		rp->last_ns = r.f.end;
	if (!kind) {
		if (rline__str(l, "comm", comm, sizeof(comm)) < 0)
			snprintf(comm, sizeof(comm), "world");
		r.f.kind = FEED_COLL;
		r.f.op = v;
		r.f.lib = RS_LIB_MPI;
		if (rline__str(l, "lib", op, sizeof(op)) >= 0 &&
		    (v = decode__by_name(decode__lib_name, RS_LIB_MAX, op)) > 0)
			r.f.lib = v;
		r.comm_idx = rp__comm(rp, comm, strlen(comm), &r.f.comm);
		r.f.bytes = bytes;
		if (rline__i64(l, "peer", &peer) && peer >= 0 && peer < INT16_MAX)
			r.f.peer = (int32_t)peer;
		r.sync = !async && r.f.op != RS_OP_SEND && r.f.op != RS_OP_RECV;
		r.open = has_dur ? RP_OPEN_NONE : RP_OPEN_COLL;
		return keep(rp, &r);
	}
	/* a wait is marked where it begins, as DDP's finalize_backward marks its wait live:
	 * also one that never ends (its collectives never complete) */
	if (kind == OT_WAIT) {
		err = keep(rp, &(struct rp_rec){
			.f = { .kind = FEED_COLL, .op = RS_OP_STEP_BACKWARD, .start = start,
			       .seq = RS_SEQ_NONE, .peer = -1, .syscall = -1 },
			.job = r.job, .key = r.key, .trace = true, .comm_idx = -1,
		});
		if (err)
			return err;
	}
	if (!has_dur) {
		r.open = kind == OT_COMPUTE ? RP_OPEN_RUNNING :
			 kind == OT_WAIT ? RP_OPEN_WAIT : RP_OPEN_BLOCKED;
		return keep(rp, &r);
	}
	switch (kind) {
	case OT_COMPUTE:	/* on CPU: the model assumes it of time nothing else claims, and
				 * learns only that the rank was seen running */
		r.f.kind = FEED_RUN;
		break;
	case OT_IO:
	case OT_INPUT:	/* blocked in a file read; in a pipe read from the input pipeline */
		r.f.kind = FEED_IO;
		r.f.fd_kind = kind == OT_IO ? RS_FD_REG : RS_FD_PIPE;
		r.f.bytes = bytes;
		rline__bool(l, "write", &r.f.write);	/* a checkpoint's writes and flushes */
		break;
	case OT_SCHED:	/* runnable all along, not running */
		r.f.kind = FEED_OFF;
		r.f.runq = dur;
		break;
	case OT_WAIT:	/* blocked in a futex until a collective in flight completes */
		r.f.kind = FEED_OFF;
		r.f.syscall = 202;
		r.wait = true;
		r.comm_idx = RP_WAIT_COMM;
		break;
	}
	return keep(rp, &r);
}

/* {"type":"exit",...} of an op trace: rank R's process ended at t_ns (code or signal). */
static int op_exit(struct replay *rp, struct rp_file *f, const struct rline *l)
{
	struct rp_rec r = { .f.kind = FEED_EXIT, .trace = true };
	int64_t rank, code = 0, sig = 0;
	struct rp_job *j;

	if (!rline__i64(l, "rank", &rank) || rank < 0 || rank >= (1 << 20) ||
	    !rline__u64(l, "t_ns", &r.f.start))
		return bad(f, "exit line needs rank and t_ns; see README \"Op traces\"");
	rline__i64(l, "code", &code);
	rline__i64(l, "signal", &sig);
	r.f.status = sig ? (int32_t)(sig & 0x7f) : (int32_t)((code & 0xff) << 8);
	j = rp__job(rp, f->job);
	if (!j)
		return bad(f, "more than 64 jobs in one replay");
	r.job = j - rp->jobs;
	r.key = (int)rank;
	if (r.f.start > rp->last_ns)
		rp->last_ns = r.f.start;
	return keep(rp, &r);
}

/* A recording's record line into r (its pid in r->key); 1: not a record. */
static int rec_line(struct replay *rp, struct rp_file *f, const char *type, const struct rline *l,
		    struct rp_rec *r)
{
	char s[COMM_NAME_MAX];
	int64_t pid = 0, tid = 0, v;

	memset(r, 0, sizeof(*r));
	r->f.peer = -1;
	r->f.syscall = -1;
	if (!rline__i64(l, "pid", &pid) || pid <= 0 || pid > INT32_MAX)
		return 1;
	rline__i64(l, "tid", &tid);
	r->key = (int)pid;
	r->f.tid = (uint32_t)tid;
	if (!strcmp(type, "collective")) {
		r->f.kind = FEED_COLL;
		if (rline__str(l, "op", s, sizeof(s)) < 0 ||
		    (v = decode__by_name(decode__op_name, RS_OP_MAX, s)) < 0)
			return bad(f, "collective line with an unknown op; was it written by a newer "
				   "rankscope?");
		r->f.op = v;
		/* the model keys communicators by the hash of their global name, as live */
		r->comm_idx = -1;
		if ((v = rline__str(l, "comm", s, sizeof(s))) >= 0)
			r->comm_idx = rp__comm(rp, s, v, &r->f.comm);
		if (rline__str(l, "lib", s, sizeof(s)) >= 0 &&
		    (v = decode__by_name(decode__lib_name, RS_LIB_MAX, s)) >= 0)
			r->f.lib = v;
		if (rline__i64(l, "seq", &v))
			r->f.seq = v < 0 ? RS_SEQ_NONE : (uint64_t)v;
		rline__u64(l, "bytes", &r->f.bytes);
		if (rline__i64(l, "peer", &v))
			r->f.peer = (int32_t)v;
		rline__u64(l, "enter_ns", &r->f.start);
		rline__u64(l, "exit_ns", &r->f.end);	/* null: entry only */
		r->sync = true;
		return 0;
	}
	if (!strcmp(type, "offcpu")) {
		r->f.kind = FEED_OFF;
		rline__u64(l, "start_ns", &r->f.start);
		rline__u64(l, "end_ns", &r->f.end);
		rline__u64(l, "runq_ns", &r->f.runq);
		if (rline__i64(l, "syscall", &v))
			r->f.syscall = (int32_t)v;
		return 0;
	}
	if (!strcmp(type, "io")) {
		r->f.kind = FEED_IO;
		rline__u64(l, "start_ns", &r->f.start);
		rline__u64(l, "end_ns", &r->f.end);
		if (rline__i64(l, "ret", &v) && v > 0)
			r->f.bytes = v;
		if (rline__str(l, "fd_kind", s, sizeof(s)) >= 0 &&
		    (v = decode__by_name(decode__fd_kind_name, RS_FD_MAX, s)) >= 0)
			r->f.fd_kind = v;
		r->f.worker = rline__i64(l, "worker", &v) && v;
		r->f.write = rline__str(l, "syscall", s, sizeof(s)) >= 0 &&
			     decode__by_name(decode__io_op_name, RS_IO_OP_MAX, s) >= RS_IO_FIRST_WRITE;
		return 0;
	}
	if (!strcmp(type, "rank_exit")) {
		r->f.kind = FEED_EXIT;
		rline__u64(l, "t_ns", &r->f.start);
		if (rline__i64(l, "status", &v))
			r->f.status = (int32_t)v;
		return 0;
	}
	if (!strcmp(type, "gpu")) {
		r->f.kind = FEED_GPU;
		rline__u64(l, "start_ns", &r->f.start);
		rline__u64(l, "end_ns", &r->f.end);
		rline__bool(l, "nccl", &r->f.nccl);
		return 0;
	}
	return 1;
}

/* {"type":"model",...}: the job's model is built again with these columns. */
static int model_line(struct replay *rp, struct rp_file *f, const struct rline *l)
{
	char id[128];
	const char *raw, *p, *e;
	struct rp_job *j;
	struct rline col;
	int64_t world = -1, rank, pid;
	size_t len;
	int c;

	if (rline__str(l, "job", id, sizeof(id)) < 0 || !(raw = rline__raw(l, "cols", &len)))
		return bad(f, "model line without job or cols");
	j = rp__job(rp, id);
	if (!j)
		return bad(f, "more than 64 jobs in one replay");
	rline__i64(l, "world_size", &world);
	for (c = 0; c < j->ncols; c++) {	/* the old columns leave the model */
		struct rp_pid *pp = pid_slot(rp, j->cols[c].pid, false);

		if (pp)
			pp->col = -1;
	}
	j->ncols = 0;
	j->world = world > 0 ? (int)world : -1;
	for (p = raw + 1, e = raw + len - 1; p < e;) {
		const char *o = memchr(p, '{', e - p), *q;
		struct rp_pid *pp;

		if (!o)
			break;
		q = memchr(o, '}', e - o);
		if (!q || rline__parse(o, q - o + 1, &col) || !rline__i64(&col, "rank", &rank) ||
		    !rline__i64(&col, "pid", &pid) || pid <= 0 || pid > INT32_MAX)
			return bad(f, "model line with a bad column");
		if (j->ncols == j->cap) {
			int cap = j->cap ? j->cap * 2 : 16;
			struct rp_col *n = realloc(j->cols, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			j->cols = n;
			j->cap = cap;
		}
		memset(&j->cols[j->ncols], 0, sizeof(j->cols[0]));
		j->cols[j->ncols].rank = (int)rank;
		j->cols[j->ncols].pid = (pid_t)pid;
		pp = pid_slot(rp, (pid_t)pid, true);
		if (!pp)
			return bad(f, "more than 16384 processes in one recording");
		pp->job = j - rp->jobs;
		pp->col = j->ncols++;
		p = q + 1;
	}
	if (!rline__u64(l, "t_ns", &rp->last_ns))
		return bad(f, "model line without t_ns");
	return rp__build(rp, j);
}

static int answer_line(struct replay *rp, struct rp_file *f, const struct rline *l)
{
	static const char *const qs[] = { "inflight", "state", "where" };
	char id[128], buf[JOB_STACK_TEXT];
	struct rp_answer *a;
	struct rp_job *j;
	int64_t col;
	int q, v;

	if (rline__str(l, "job", id, sizeof(id)) < 0 || !(j = rp__job(rp, id)) ||
	    !rline__i64(l, "col", &col))
		return bad(f, "answer line without job or col");
	for (q = 0; q < 3 && !rline__is(l, "q", qs[q]); q++)
		;
	if (q == 3)
		return bad(f, "answer line with an unknown question");
	if (j->nans == j->cap_ans) {
		int cap = j->cap_ans ? j->cap_ans * 2 : 16;
		struct rp_answer *n = realloc(j->ans, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		memset(n + j->cap_ans, 0, (cap - j->cap_ans) * sizeof(*n));
		j->ans = n;
		j->cap_ans = cap;
	}
	a = &j->ans[j->nans++];
	free(a->coll);
	free(a->text);
	a->coll = a->text = NULL;
	a->q = q;
	a->col = (int)col;
	a->in = false;
	rline__bool(l, "in", &a->in);
	a->call = (struct job_inflight){};
	rline__u64(l, "enter_ns", &a->call.enter_ns);
	rline__u64(l, "seq", &a->call.seq);
	rline__u64(l, "comm_hash", &a->call.comm);
	rline__u64(l, "bytes", &a->call.bytes);
	if (rline__str(l, "op", buf, sizeof(buf)) > 0 &&
	    (v = decode__by_name(decode__op_name, RS_OP_MAX, buf)) > 0)
		a->call.op = (unsigned int)v;
	a->coll = strdup(rline__str(l, "coll", buf, sizeof(buf)) >= 0 ? buf : "");
	a->text = strdup(rline__str(l, "text", buf, sizeof(buf)) >= 0 ? buf : "");
	return a->coll && a->text ? 0 : -ENOMEM;
}

/* {"type":"rank",...}: who a pid is; a rank number learned later is set in the model. */
static int rank_line(struct replay *rp, struct rp_file *f, const struct rline *l)
{
	struct rp_pid *p;
	int64_t pid, rank = -1, world = -1;
	int c;

	if (!rline__i64(l, "pid", &pid) || pid <= 0 || pid > INT32_MAX)
		return bad(f, "rank line without a pid");
	p = pid_slot(rp, (pid_t)pid, true);
	if (!p)
		return bad(f, "more than 16384 processes in one recording");
	rline__i64(l, "rank", &rank);
	rline__i64(l, "world_size", &world);
	p->rank = (int)rank;
	p->world = (int)world;
	if (rline__str(l, "job", p->job_id, sizeof(p->job_id)) < 0)
		snprintf(p->job_id, sizeof(p->job_id), "unknown");
	if (p->col >= 0 && p->job >= 0) {
		struct rp_job *j = &rp->jobs[p->job];

		j->cols[p->col].rank = p->rank;
		job__set_rank(j->model, p->col, p->rank, p->pid);
		for (c = 0; c < j->ncols; c++) {	/* the job's size as its ranks know it */
			struct rp_pid *o = pid_slot(rp, j->cols[c].pid, false);

			if (o && o->world > j->world)
				j->world = o->world;
		}
		job__set_world(j->model, j->world);
	}
	return 0;
}

static int line(struct replay *rp, struct rp_file *f, bool exact_ok, const char *text,
		size_t len)
{
	char type[24], id[128];
	struct rline l;
	struct rp_rec r;
	struct rp_pid *p;
	int err;

	if (rline__parse(text, len, &l) || rline__str(&l, "type", type, sizeof(type)) < 0)
		return 1;	/* not ours: counted, said once */
	if (!strcmp(type, "op")) {
		f->saw_op = true;
		return op_line(rp, f, &l);
	}
	if (!strcmp(type, "meta")) {
		int64_t w;

		f->saw_meta = true;
		if (rline__str(&l, "job", f->job, sizeof(f->job)) < 0)
			snprintf(f->job, sizeof(f->job), "trace");
		if (rline__i64(&l, "world_size", &w) && w > 0 && w < (1 << 20))
			f->world = (int)w;
		return 0;
	}
	if (!strcmp(type, "exit"))	/* a recording's exit lines are every process': skip */
		return rline__i64(&l, "pid", &(int64_t){ 0 }) ? 0 : op_exit(rp, f, &l);
	if (!strcmp(type, "rank"))
		return rank_line(rp, f, &l);
	if (exact_ok && !strcmp(type, "model")) {
		if (!f->saw_model) {	/* live, records before a model fed nothing */
			f->saw_model = rp->exact = true;
			rp->nrec = 0;
		}
		return model_line(rp, f, &l);
	}
	if (!rp->exact || !exact_ok) {
		err = rec_line(rp, f, type, &l, &r);
		if (err)
			return err < 0 ? err : 0;
		p = pid_slot(rp, r.key, true);
		if (!p)
			return bad(f, "more than 16384 processes in one recording");
		r.job = -1;
		r.f.col = -1;
		r.key = p->pid;
		if (feed__done_ns(&r.f) > rp->last_ns)
			rp->last_ns = feed__done_ns(&r.f);
		return keep(rp, &r);
	}
	if (!strcmp(type, "answer"))
		return answer_line(rp, f, &l);
	if (!strcmp(type, "tick")) {
		struct rp_job *j;
		bool final = false;
		uint64_t t;

		if (rline__str(&l, "job", id, sizeof(id)) < 0 || !rline__u64(&l, "t_ns", &t))
			return bad(f, "tick line without job or t_ns");
		rline__bool(&l, "final", &final);
		j = rp__job(rp, id);
		if (j && j->model) {
			rp__advance(j, t, final);
			j->ended = final;
		}
		if (t > rp->last_ns)
			rp->last_ns = t;
		return 0;
	}
	err = rec_line(rp, f, type, &l, &r);
	if (err)
		return err < 0 ? err : 0;
	p = pid_slot(rp, r.key, false);
	if (!p || p->job < 0 || p->col < 0)
		return 0;	/* no model holds it: live it went nowhere either */
	r.f.col = p->col;
	feed__apply(rp->jobs[p->job].model, &r.f);
	return 0;
}

static int load_file(struct replay *rp, const char *name, int domain, bool exact_ok,
		     struct trace_jobs *tj)
{
	struct rp_file f = { .name = name, .domain = domain, .world = -1 };
	struct stat st;
	FILE *in = strcmp(name, "-") ? fopen(name, "r") : stdin;
	unsigned long skipped = 0, first_skip = 0;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	int err = 0;

	snprintf(f.job, sizeof(f.job), "trace");
	if (!in) {
		err = -errno;
		pr_warn("replay: failed to open '%s': %s; give a recording (--json --events) or an "
			"op trace", name, strerror(-err));
		return err;
	}
	/* room for a record every ~80 bytes at once: no copy per doubling of a large trace */
	if (!fstat(fileno(in), &st) && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    rp->nrec + st.st_size / 80 > rp->caprec && (size_t)st.st_size / 80 < (1UL << 28))
		grow(rp, rp->nrec + st.st_size / 80);	/* else it grows as it reads */
	while ((n = getline(&buf, &cap, in)) > 0) {
		size_t from = rp->nrec;

		f.line++;
		while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			n--;
		if (!n)
			continue;
		err = line(rp, &f, exact_ok, buf, n);
		if (err < 0)
			break;
		if (err > 0 && !skipped++)
			first_skip = f.line;
		for (; from < rp->nrec; from++)
			rp->rec[from].domain = domain;
		err = 0;
	}
	if (!err && ferror(in)) {
		err = -EIO;
		pr_warn("replay: failed to read '%s'", name);
	}
	if (skipped)
		pr_warn("replay: %s: %lu line%s not JSON objects with a type, skipped (the first: "
			"line %lu)", name, skipped, skipped == 1 ? "" : "s", first_skip);
	if (f.saw_op && !f.saw_meta && !tj->bare_file)
		tj->bare_file = name;
	if (f.saw_op && f.saw_meta && strcmp(f.job, "trace") && !tj->named_file) {
		snprintf(tj->named, sizeof(tj->named), "%s", f.job);
		tj->named_file = name;
	}
	free(buf);
	if (in != stdin)
		fclose(in);
	return err;
}

int rp__load(struct replay *rp, char *const *files, int n)
{
	struct trace_jobs tj = {};
	int i, err, k;

	rp->pids = calloc(RP_PIDS, sizeof(*rp->pids));
	if (!rp->pids)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		/* one recording replays as it ran; several are merged on their clocks */
		err = load_file(rp, files[i], i, n == 1, &tj);
		if (err)
			return err;
	}
	if (tj.named_file && tj.bare_file)
		pr_warn("replay: %s has no meta line, so its ranks form job 'trace', apart from job "
			"'%s' of %s; if they are one job, make {\"type\":\"meta\",\"job\":\"%s\"} "
			"its first line", tj.bare_file, tj.named, tj.named_file, tj.named);
	if (!rp->exact)
		return 0;
	for (k = 0; k < rp->njobs; k++)	/* a recording cut short: end where it ends */
		if (rp->jobs[k].model && !rp->jobs[k].ended)
			rp__advance(&rp->jobs[k], rp->last_ns, true);
	return 0;
}
