// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A node's JSON lines of its ranks and itself, and the terminal table. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cpuacct.h"
#include "decode.h"
#include "gpu.h"
#include "gpu_wire.h"
#include "report_rank.h"

static void libs_obj(struct json *j, const struct proc_libs *libs)
{
	static const char *const keys[RS_LIB_MAX] = { NULL, "nccl", "mpi", "gloo", "torch",
						       "cudart", "cuda" };
	int lib;

	json__key(j, "libs");
	json__obj_begin(j);
	for (lib = 1; lib < RS_LIB_MAX; lib++)
		json__kstr(j, keys[lib], libs->lib[lib].found ? libs->lib[lib].path : NULL);
	json__obj_end(j);
}

void report__rank(struct json *j, const struct rank_state *rs, const char *const *families,
		  int nfam)
{
	int i, lib;

	json__obj_begin(j);
	json__kstr(j, "type", "rank");
	json__kint(j, "rank", rs->info.rank);
	json__kint(j, "local_rank", rs->info.local_rank);
	json__kint(j, "world_size", rs->info.world_size);
	json__kint(j, "pid", rs->pid);
	json__kstr(j, "comm", rs->comm);
	json__kstr(j, "job", rs->info.job);
	/* why the job id is what it is (ranks.h), and where the rank runs */
	json__kstr(j, "job_src", ranks__job_source_name(rs->info.job_src));
	if (rs->node && rs->node[0])
		json__kstr(j, "node", rs->node);
	if (rs->info.k8s_pod[0]) {
		json__kstr(j, "namespace", rs->info.k8s_ns);
		json__kstr(j, "pod", rs->info.k8s_pod);
	}
	/* what the process is doing now, for the hub: a stopped rank on one node is what another
	 * node's ranks wait for */
	if (rs->pstate)
		json__kstr(j, "state", rs->exited || rs->pstate == '?' ? "gone" :
				       rs->pstate == 'T' || rs->pstate == 't' ? "stopped" :
				       rs->pstate == 'Z' ? "zombie" :
				       rs->pstate == 'R' ? "running" : "sleeping");
	/* the collective it is inside now: what ranks on other nodes wait in, for the hub */
	if (rs->pstate) {
		json__key(j, "inflight");
		if (rs->in_coll) {
			json__obj_begin(j);
			json__kstr(j, "op", decode__op_name(rs->in_op));
			json__kuint(j, "bytes", rs->in_bytes);
			json__kstr(j, "comm", rs->in_comm);
			json__kuint(j, "enter_ns", rs->in_enter_ns);
			json__kuint(j, "for_ns", rs->in_for_ns);
			json__obj_end(j);
		} else {
			json__null(j);
		}
	}
	json__kstr(j, "rank_source", ranks__source_name(rs->info.src));
	if (rs->info.src_var[0])
		json__kstr(j, "rank_var", rs->info.src_var);
	libs_obj(j, &rs->libs);
	json__key(j, "probes");
	json__arr_begin(j);
	for (i = 0; i < nfam; i++)
		json__str(j, families[i]);
	json__arr_end(j);
	json__key(j, "collective_probes");
	json__obj_begin(j);
	for (lib = 1; lib < RS_LIB_MAX; lib++) {
		if (!rs->libs.lib[lib].found)
			continue;
		json__key(j, decode__lib_name(lib));
		json__obj_begin(j);
		json__kint(j, "sites", rs->coll.nsites[lib]);
		json__kint(j, "after_endbr64", rs->coll.endbr[lib]);
		if (rs->coll.err[lib]) {
			json__kint(j, "error", rs->coll.err[lib]);
			json__kstr(j, "reason", libs__error_name(libs__error_kind(rs->coll.err[lib])));
		}
		json__kstr(j, "via", rs->coll.via[lib]);
		if (rs->coll.refused[lib] != LR_NONE)
			json__kstr(j, "path_refused", libs__refusal_name(rs->coll.refused[lib]));
		json__obj_end(j);
	}
	json__obj_end(j);
	/* each communicator it used: size from its init (-1: unknown: MPI's sub-communicators),
	 * ranks of this job seen on it, and its collectives */
	json__key(j, "communicators");
	json__arr_begin(j);
	for (i = 0; i < rs->ncomms; i++) {
		const struct comm_use *u = &rs->comms[i];

		json__obj_begin(j);
		json__kstr(j, "name", u->name);
		json__kstr(j, "lib", decode__lib_name(u->lib));
		json__kint(j, "size", u->size);
		json__kint(j, "members_seen", u->members);
		json__kuint(j, "ops", u->ops);
		json__kuint(j, "bytes", u->bytes);
		json__kuint(j, "inside_ns", u->inside_ns);
		json__obj_end(j);
	}
	json__arr_end(j);
	if (rs->comms_other)
		json__kuint(j, "communicators_other_ops", rs->comms_other);
	if (rs->gpu && rs->gpu->have_status) {
		json__key(j, "gpu");
		json__obj_begin(j);
		json__kstr(j, "state", gpu_wire__state_name(rs->gpu->state));
		json__kstr(j, "detail", rs->gpu->detail);
		json__obj_end(j);
	}
	json__key(j, "notes");
	json__arr_begin(j);
	if (!rs->coll_probes)
		json__str(j, "no collective library (NCCL, MPI, gloo) mapped: sched/io/net only");
	if (rs->mpi_late)
		json__str(j, "attached after MPI_Init: MPI sub-communicators are named by handle");
	json__arr_end(j);
	json__obj_end(j);
}

static void hdr(struct json *j, const char *type, const struct rank_state *rs,
		const struct rs_hdr *h)
{
	json__obj_begin(j);
	json__kstr(j, "type", type);
	json__kint(j, "rank", rs ? rs->info.rank : -1);
	json__kint(j, "pid", rs ? rs->pid : (int64_t)h->tgid);
	json__kint(j, "tgid", h->tgid);
	json__kint(j, "tid", h->tid);
}

void report__coll(struct json *j, const struct rank_state *rs, const struct rs_ev_coll *e,
		  const char *comm, uint64_t bytes)
{
	hdr(j, "collective", rs, &e->h);
	json__kstr(j, "lib", decode__lib_name(e->lib));
	json__kstr(j, "op", decode__op_name(e->op));
	json__kstr(j, "comm", comm);
	if (e->seq == RS_SEQ_NONE)
		json__kint(j, "seq", -1);
	else
		json__kuint(j, "seq", e->seq);
	json__kuint(j, "count", e->count);
	json__kuint(j, "bytes", bytes);
	/* NCCL's datatype and reduction are enums; MPI's are handles (pointers): no meaning
	 * outside the process, so left out */
	if (e->lib == RS_LIB_NCCL)
		json__kuint(j, "dtype", e->dtype);
	json__kuint(j, "comm_handle", e->comm);
	json__kuint(j, "stream", e->stream);
	json__kint(j, "peer", e->peer);
	json__kuint(j, "sendbuf", e->sendbuf);
	json__kuint(j, "recvbuf", e->recvbuf);
	if (e->lib == RS_LIB_NCCL)
		json__kint(j, "redop", e->redop);
	json__kint(j, "ret", e->ret);
	json__kint(j, "depth", e->depth);
	json__kuint(j, "enter_ns", e->enter_ns);
	/* entry-only probes (C++ APIs) have no return time */
	json__key(j, "exit_ns");
	if (e->exit_ns)
		json__uint(j, e->exit_ns);
	else
		json__null(j);
	json__obj_end(j);
}

void report__comm_init(struct json *j, const struct rank_state *rs,
		       const struct rs_ev_comm_init *e, const char *comm)
{
	hdr(j, "comm_init", rs, &e->h);
	json__kstr(j, "lib", decode__lib_name(e->lib));
	json__kstr(j, "comm", comm);
	json__kuint(j, "comm_handle", e->comm);
	if (e->lib == RS_LIB_MPI) {
		uint64_t parent;

		memcpy(&parent, e->unique_id, sizeof(parent));
		json__kuint(j, "parent_handle", parent);
		json__kint(j, "color", e->rank);
	} else {
		json__kint(j, "nranks", e->nranks);
		json__kint(j, "comm_rank", e->rank);
	}
	json__kint(j, "ret", e->ret);
	json__kuint(j, "enter_ns", e->enter_ns);
	json__kuint(j, "exit_ns", e->exit_ns);
	json__obj_end(j);
}

void report__event(struct json *j, const struct rank_state *rs, const struct rs_event *ev)
{
	char a[64];

	switch (ev->kind) {
	case RS_EV_OFFCPU:
		hdr(j, "offcpu", rs, &ev->h);
		json__kuint(j, "start_ns", ev->offcpu.start_ns);
		json__kuint(j, "end_ns", ev->offcpu.end_ns);
		json__kuint(j, "runq_ns", ev->offcpu.runq_ns);
		json__kint(j, "state", ev->offcpu.state);
		json__kint(j, "syscall", ev->offcpu.syscall);
		break;
	case RS_EV_IO:
		hdr(j, "io", rs, &ev->h);
		json__kstr(j, "syscall", decode__io_op_name(ev->io.op));
		json__kstr(j, "fd_kind", decode__fd_kind_name(ev->io.fd_kind));
		json__kint(j, "fd", ev->io.fd);
		json__kint(j, "ret", ev->io.ret);
		json__kuint(j, "start_ns", ev->io.start_ns);
		json__kuint(j, "end_ns", ev->io.end_ns);
		json__kint(j, "worker", rs && (pid_t)ev->h.tgid != rs->pid);
		break;
	case RS_EV_FORK:
		hdr(j, "fork", rs, &ev->h);
		json__kint(j, "child", ev->fork.child_tgid);
		json__kuint(j, "t_ns", ev->h.ts_ns);
		break;
	case RS_EV_EXEC:
		hdr(j, "exec", rs, &ev->h);
		json__kint(j, "is_rank", !!(ev->exec.flags & RS_TRACK_ROOT));
		json__kuint(j, "t_ns", ev->h.ts_ns);
		break;
	case RS_EV_EXIT:
		hdr(j, "exit", rs, &ev->h);
		json__kint(j, "exit_code", ev->exit.exit_code);
		json__kint(j, "is_rank", !!(ev->exit.flags & RS_TRACK_ROOT));
		json__kuint(j, "t_ns", ev->h.ts_ns);
		break;
	case RS_EV_TCP_STATE:
	case RS_EV_TCP_RETRANS:
		hdr(j, "tcp", rs, &ev->h);
		json__kstr(j, "event", ev->kind == RS_EV_TCP_STATE ? "state" : "retransmit");
		json__kstr(j, "saddr", decode__addr(ev->tcp.saddr, a, sizeof(a)));
		json__kint(j, "sport", ev->tcp.sport);
		json__kstr(j, "daddr", decode__addr(ev->tcp.daddr, a, sizeof(a)));
		json__kint(j, "dport", ev->tcp.dport);
		json__kint(j, "family", ev->tcp.family);
		json__kstr(j, "old", decode__tcp_state_name(ev->tcp.oldstate));
		json__kstr(j, "new", decode__tcp_state_name(ev->tcp.newstate));
		json__kuint(j, "srtt_us", ev->tcp.srtt_us);
		json__kuint(j, "t_ns", ev->h.ts_ns);
		break;
	default:
		hdr(j, "unknown", rs, &ev->h);
		break;
	}
	json__obj_end(j);
}

void report__model(struct json *j, const char *job, uint64_t t_ns, const int *rank,
		   const pid_t *pid, int n, int world_size)
{
	int c;

	json__obj_begin(j);
	json__kstr(j, "type", "model");
	json__kstr(j, "job", job);
	json__kuint(j, "t_ns", t_ns);
	json__kint(j, "world_size", world_size);
	json__key(j, "cols");
	json__arr_begin(j);
	for (c = 0; c < n; c++) {
		json__obj_begin(j);
		json__kint(j, "rank", rank[c]);
		json__kint(j, "pid", pid[c]);
		json__obj_end(j);
	}
	json__arr_end(j);
	json__obj_end(j);
}

void report__tick(struct json *j, const char *job, uint64_t t_ns, bool final)
{
	json__obj_begin(j);
	json__kstr(j, "type", "tick");
	json__kstr(j, "job", job);
	json__kuint(j, "t_ns", t_ns);
	json__key(j, "final");
	json__bool(j, final);
	json__obj_end(j);
}

void report__feed(struct json *j, int rank, pid_t pid, const struct feed_rec *r)
{
	json__obj_begin(j);
	json__kstr(j, "type", r->kind == FEED_EXIT ? "rank_exit" : r->kind == FEED_GPU ? "gpu" :
			      "feed");
	json__kint(j, "rank", rank);
	json__kint(j, "pid", pid);
	json__kint(j, "tid", r->tid);
	if (r->kind == FEED_EXIT) {
		json__kint(j, "status", r->status);
		json__kuint(j, "t_ns", r->start);
	} else {
		json__key(j, "nccl");
		json__bool(j, r->nccl);
		json__kuint(j, "start_ns", r->start);
		json__kuint(j, "end_ns", r->end);
	}
	json__obj_end(j);
}

void report__answer(struct json *j, const char *job, const struct job_answer *a)
{
	static const char *const q[] = { "inflight", "state", "where" };

	json__obj_begin(j);
	json__kstr(j, "type", "answer");
	json__kstr(j, "job", job);
	json__kstr(j, "q", q[a->q]);
	json__kint(j, "col", a->col);
	if (a->q != JOB_Q_STATE) {
		json__key(j, "in");
		json__bool(j, a->in);
	}
	if (a->q == JOB_Q_INFLIGHT) {
		json__kuint(j, "enter_ns", a->in ? a->call.enter_ns : 0);
		json__kuint(j, "seq", a->in ? a->call.seq : 0);
		if (a->in && a->call.op) {
			json__kstr(j, "op", decode__op_name(a->call.op));
			json__kuint(j, "bytes", a->call.bytes);
			json__kuint(j, "comm_hash", a->call.comm);
		}
	}
	if (a->q == JOB_Q_WHERE)
		json__kstr(j, "coll", a->coll);
	if (a->q != JOB_Q_INFLIGHT)
		json__kstr(j, "text", a->text);
	json__obj_end(j);
}

static void io_obj(struct json *j, const char *key, const struct rank_row *r, int w)
{
	int k;

	json__key(j, key);
	json__obj_begin(j);
	for (k = 0; k < RS_FD_MAX; k++) {
		uint64_t calls = w ? r->wr[k].calls : r->rd[k].calls;

		json__key(j, decode__fd_kind_name(k));
		json__obj_begin(j);
		json__kuint(j, "calls", calls);
		json__kuint(j, "bytes", w ? r->wr[k].bytes : r->rd[k].bytes);
		json__kuint(j, "blocked_ns", w ? r->wr[k].ns : r->rd[k].ns);
		json__kuint(j, "p50_ns", w ? r->wr[k].p50_ns : r->rd[k].p50_ns);
		json__kuint(j, "p99_ns", w ? r->wr[k].p99_ns : r->rd[k].p99_ns);
		json__obj_end(j);
	}
	json__obj_end(j);
}

void report__stats(struct json *j, const struct rank_row *r, uint64_t t_ns)
{
	int op;

	json__obj_begin(j);
	json__kstr(j, "type", "stats");
	json__kuint(j, "t_ns", t_ns);
	json__kint(j, "rank", r->rank);
	json__kint(j, "pid", r->pid);
	json__kdouble(j, "interval_s", r->dt_s);
	json__key(j, "collectives");
	json__obj_begin(j);
	for (op = 1; op < RS_OP_MAX; op++) {
		if (!r->ops[op].total)
			continue;
		json__key(j, decode__op_name(op));
		json__obj_begin(j);
		json__kuint(j, "calls", r->ops[op].calls);
		json__kuint(j, "total", r->ops[op].total);
		json__kdouble(j, "per_s", r->ops[op].per_s);
		json__kdouble(j, "mean_inside_ns", r->ops[op].mean_inside_ns);
		json__obj_end(j);
	}
	json__obj_end(j);
	io_obj(j, "io_read", r, 0);
	io_obj(j, "io_write", r, 1);
	json__kuint(j, "runq_p99_ns", r->runq_p99_ns);
	json__kdouble(j, "offcpu_share", r->offcpu_share);
	json__kuint(j, "tcp_retransmits", r->retrans);
	json__kuint(j, "tcp_retransmits_total", r->retrans_total);
	json__kdouble(j, "tcp_srtt_us", r->srtt_us);
	json__key(j, "exited");
	json__bool(j, r->exited);
	json__obj_end(j);
}

void report__self(struct json *j, const struct self_stats *s, uint64_t t_ns, bool final)
{
	double cpu[CPUACCT_KINDS];
	uint64_t a = 0, r = 0, d = 0;
	int f;

	for (f = 0; f < RS_FAM_MAX; f++) {
		a += s->attempted[f];
		r += s->received[f];
		d += s->dropped[f];
	}
	json__obj_begin(j);
	json__kstr(j, "type", "self");
	json__kuint(j, "t_ns", t_ns);
	json__kuint(j, "events_attempted", a);
	json__kuint(j, "events_received", r);
	json__kuint(j, "events_dropped", d);
	json__kuint(j, "events_invalid", s->invalid);
	json__kuint(j, "probes_attached", s->probes_attached);
	json__key(j, "families");
	json__obj_begin(j);
	for (f = 0; f < RS_FAM_MAX; f++) {
		json__key(j, decode__family_name(f));
		json__obj_begin(j);
		json__kuint(j, "attempted", s->attempted[f]);
		json__kuint(j, "received", s->received[f]);
		json__kuint(j, "dropped", s->dropped[f]);
		json__obj_end(j);
	}
	json__obj_end(j);
	/* LRU maps: how full, and how many entries they pushed out (a lower bound) */
	json__key(j, "lru_maps");
	json__obj_begin(j);
	for (f = 0; f < RS_LRU_MAX; f++) {
		if (!s->lru[f].capacity)
			continue;
		json__key(j, probes__lru_name(f));
		json__obj_begin(j);
		json__kuint(j, "entries", s->lru[f].entries);
		json__kuint(j, "capacity", s->lru[f].capacity);
		json__kuint(j, "evicted", s->lru[f].evicted);
		json__obj_end(j);
	}
	json__obj_end(j);
	if (s->drain_period_ns)
		json__kuint(j, "drain_period_ns", s->drain_period_ns);
	if (!cpuacct__read(cpu)) {
		json__key(j, "cpu_s");
		json__obj_begin(j);
		for (f = 0; f < CPUACCT_KINDS; f++)
			json__kdouble(j, cpuacct__name(f), cpu[f]);
		json__obj_end(j);
	}
	json__key(j, "final");
	json__bool(j, final);
	json__obj_end(j);
}

void report__table(FILE *f, const struct rank_row *rows, int n, const struct self_stats *s,
		   bool ansi)
{
	char b1[16], b2[16], b3[16], coll[96], io[96];
	uint64_t a = 0, r = 0, dr = 0;
	int i, op, k, len;

	if (ansi)
		fputs("\033[H\033[2J", f);
	fprintf(f, "%-5s %-8s %-34s %-40s %-8s %-6s %-5s %-8s\n", "RANK", "PID",
		"COLLECTIVES/s (mean inside)", "READ p50/p99 file pipe sock", "RUNQ99", "OFFCPU",
		"RETX", "SRTT");
	for (i = 0; i < n; i++) {
		const struct rank_row *rw = &rows[i];

		coll[0] = '\0';
		for (op = 1, len = 0; op < RS_OP_MAX && len < (int)sizeof(coll) - 1; op++) {
			if (!rw->ops[op].total)
				continue;
			len += snprintf(coll + len, sizeof(coll) - len, "%s%s %.0f (%s)",
					len ? " " : "", decode__op_name(op), rw->ops[op].per_s,
					report__dur(rw->ops[op].mean_inside_ns, b1, sizeof(b1)));
		}
		if (!len)
			snprintf(coll, sizeof(coll), "-");
		io[0] = '\0';
		for (k = 0, len = 0; k < RS_FD_SOCK + 1 && len < (int)sizeof(io) - 1; k++)
			len += snprintf(io + len, sizeof(io) - len, "%s%s/%s", k ? " " : "",
					report__dur(rw->rd[k].p50_ns, b1, sizeof(b1)),
					report__dur(rw->rd[k].p99_ns, b2, sizeof(b2)));
		fprintf(f, "%-5d %-8d %-34s %-40s %-8s %5.1f%% %-5llu %-8s%s\n", rw->rank, rw->pid,
			coll, io, report__dur(rw->runq_p99_ns, b1, sizeof(b1)),
			isnan(rw->offcpu_share) ? 0.0 : rw->offcpu_share * 100,
			(unsigned long long)rw->retrans_total,
			report__dur(rw->srtt_us * 1e3, b3, sizeof(b3)), rw->exited ? "  exited" : "");
	}
	for (k = 0; k < RS_FAM_MAX; k++) {
		a += s->attempted[k];
		r += s->received[k];
		dr += s->dropped[k];
	}
	fprintf(f, "events: %llu attempted, %llu received, %llu dropped; %u probes attached\n",
		(unsigned long long)a, (unsigned long long)r, (unsigned long long)dr,
		s->probes_attached);
	fflush(f);
}
