// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The capture writer: Chrome trace-event JSON, streamed event by event, optionally gzipped. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "collectives.h"
#include "decode.h"
#include "json.h"
#include "rs_cupti_wire.h"
#include "steps.h"
#include "trace.h"

#define FLOW_START	1
#define FLOW_END	2

void trace__out_put(struct trace_out *o, const char *s, size_t n)
{
	ssize_t w;

	if (o->err)
		return;
	if (o->gz) {
		if (gzwrite(o->gz, s, n) != (int)n) {
			int e;

			gzerror(o->gz, &e);
			o->err = e == Z_ERRNO && errno ? -errno : -EIO;
		}
		return;
	}
	while (n) {
		w = write(o->fd, s, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			o->err = -errno;
			return;
		}
		s += w;
		n -= w;
	}
}

void trace__out_event(struct trace_out *o)
{
	if (o->j.err) {
		o->err = o->j.err;
		return;
	}
	if (!o->first)
		trace__out_put(o, ",\n", 2);
	o->first = false;
	trace__out_put(o, o->j.buf, o->j.len);
	json__reset(&o->j);
}

/* CLOCK_MONOTONIC ns as trace microseconds, ns precision kept. */
static void kts(struct json *j, const char *k, uint64_t ns)
{
	char b[40];

	snprintf(b, sizeof(b), "%" PRIu64 ".%03u", ns / 1000, (unsigned int)(ns % 1000));
	json__key(j, k);
	json__raw(j, b);
}

static void head(struct json *j, const char *ph, const char *name, const char *cat, uint32_t pid,
		 uint32_t tid)
{
	json__obj_begin(j);
	json__kstr(j, "ph", ph);
	json__kstr(j, "name", name);
	if (cat)
		json__kstr(j, "cat", cat);
	json__kuint(j, "pid", pid);
	json__kuint(j, "tid", tid);
}

static const char *str(const struct trace_in *in, int32_t i)
{
	return i >= 0 && (size_t)i < in->nstr && in->str[i] ? in->str[i] : NULL;
}

static int by_track(const void *x, const void *y)
{
	const struct trace_ev *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->end != b->end)		/* the enclosing slice first */
		return a->end > b->end ? -1 : 1;
	return (int)a->kind - (int)b->kind;
}

static int by_collective(const void *x, const void *y)
{
	const struct trace_ev *const *a = x, *const *b = y;

	if ((*a)->comm != (*b)->comm)
		return (*a)->comm < (*b)->comm ? -1 : 1;
	if ((*a)->b != (*b)->b)
		return (*a)->b < (*b)->b ? -1 : 1;
	if ((*a)->start != (*b)->start)
		return (*a)->start < (*b)->start ? -1 : 1;
	return 0;
}

#define SEQ_MASK ((1ULL << 56) - 1)

/* Mark flows: the first rank into a (communicator, seq) starts one, the others end it. */
static void mark_flows(struct trace_in *in)
{
	struct trace_ev **c;
	size_t n = 0, i, k;

	for (i = 0; i < in->nev; i++)
		in->ev[i].pad = 0;
	c = calloc(in->nev ? in->nev : 1, sizeof(*c));
	if (!c)
		return;
	for (i = 0; i < in->nev; i++)
		if (in->ev[i].kind == TR_COLL && in->ev[i].comm && (in->ev[i].b & SEQ_MASK) != SEQ_MASK)
			c[n++] = &in->ev[i];
	qsort(c, n, sizeof(*c), by_collective);
	for (i = 0; i < n; i = k) {
		for (k = i + 1; k < n && c[k]->comm == c[i]->comm && c[k]->b == c[i]->b; k++)
			;
		if (k - i < 2)
			continue;	/* one rank only in the capture: nothing to join */
		c[i]->pad = FLOW_START;
		while (++i < k)
			c[i]->pad = FLOW_END;
	}
	free(c);
}

static uint64_t flow_id(const struct trace_ev *e)
{
	uint64_t h = e->comm ^ (e->b * 0x9e3779b97f4a7c15ULL);

	return h & ((1ULL << 53) - 1);	/* exact in a JSON number */
}

static void slice(struct trace_out *o, const struct trace_in *in, const struct trace_ev *e)
{
	static const char *const copy[RSC_COPY_MAX] = { "memcpy", "memcpy HtoD", "memcpy DtoH",
							"memcpy DtoD", "memcpy peer" };
	struct json *j = &o->j;
	const char *name = str(in, e->name);
	char buf[96];
	uint64_t runq;

	switch (e->kind) {
	case TR_STEP:
		snprintf(buf, sizeof(buf), "step %" PRIu64, e->a);
		head(j, "X", buf, "step", e->pid, e->tid);
		break;
	case TR_PHASE:
		head(j, "X", steps__phase_name(e->sub), "phase", e->pid, e->tid);
		break;
	case TR_COLL:
		head(j, "X", decode__op_name(e->sub), "collective", e->pid, e->tid);
		break;
	case TR_IO:
		head(j, "X", decode__io_op_name(e->b), "syscall", e->pid, e->tid);
		break;
	case TR_OFFCPU:
		/* blocked, then waiting for a CPU: two slices */
		runq = e->a < e->end - e->start ? e->a : e->end - e->start;
		if (e->end - runq > e->start) {
			snprintf(buf, sizeof(buf), "blocked%s%s", e->b ? " in " : "",
				 e->b ? decode__syscall_name((long)e->b - 1) : "");
			head(j, "X", buf, "offcpu", e->pid, e->tid);
			kts(j, "ts", e->start);
			kts(j, "dur", e->end - runq - e->start);
			json__obj_end(j);
			trace__out_event(o);
		}
		if (!runq)
			return;
		head(j, "X", "run queue", "sched", e->pid, e->tid);
		kts(j, "ts", e->end - runq);
		kts(j, "dur", runq);
		json__obj_end(j);
		trace__out_event(o);
		return;
	case TR_GPU:
		if (e->sub == RSC_REC_KERNEL)
			head(j, "X", name ? name : "kernel", "gpu", e->pid, e->tid);
		else if (e->sub == RSC_REC_MEMCPY)
			head(j, "X", e->a < RSC_COPY_MAX ? copy[e->a] : "memcpy", "gpu", e->pid,
			     e->tid);
		else
			head(j, "X", e->sub == RSC_REC_MEMSET ? "memset" : "sync", "gpu", e->pid,
			     e->tid);
		break;
	case TR_VERDICT:
	case TR_SAMPLE:
		head(j, "i", e->kind == TR_VERDICT ? "verdict" : "sample",
		     e->kind == TR_VERDICT ? "verdict" : "sample", e->pid, e->tid);
		json__kstr(j, "s", e->kind == TR_VERDICT ? "p" : "t");
		kts(j, "ts", e->start);
		json__key(j, "args");
		json__obj_begin(j);
		json__kstr(j, e->kind == TR_VERDICT ? "verdict" : "stack", name ? name : "");
		json__obj_end(j);
		json__obj_end(j);
		trace__out_event(o);
		return;
	default:
		return;
	}
	kts(j, "ts", e->start);
	kts(j, "dur", e->end > e->start ? e->end - e->start : 0);
	json__key(j, "args");
	json__obj_begin(j);
	switch (e->kind) {
	case TR_STEP:
		json__kuint(j, "step", e->a);
		break;
	case TR_COLL:
		json__kstr(j, "lib", decode__lib_name(e->b >> 56));
		json__kuint(j, "bytes", e->a);
		json__kstr(j, "comm", name ? name : "");
		if ((e->b & SEQ_MASK) != SEQ_MASK)
			json__kuint(j, "seq", (uint64_t)(e->b & SEQ_MASK));
		break;
	case TR_IO:
		json__kstr(j, "fd_kind", decode__fd_kind_name(e->sub));
		json__kuint(j, "bytes", e->a);
		break;
	case TR_GPU:
		json__kuint(j, "stream", e->tid - TR_GPU_TID_BASE);
		if (e->b)
			json__kuint(j, "bytes", e->b);
		break;
	default:
		break;
	}
	json__obj_end(j);
	json__obj_end(j);
	trace__out_event(o);
	if (e->kind == TR_COLL && e->pad) {
		snprintf(buf, sizeof(buf), "%s seq %" PRIu64, decode__op_name(e->sub),
			 (uint64_t)(e->b & SEQ_MASK));
		head(j, e->pad == FLOW_START ? "s" : "f", buf, "collective", e->pid, e->tid);
		json__kuint(j, "id", flow_id(e));
		if (e->pad == FLOW_END)
			json__kstr(j, "bp", "e");
		kts(j, "ts", e->start);
		json__obj_end(j);
		trace__out_event(o);
	}
}

static void metadata(struct trace_out *o, const struct trace_in *in)
{
	struct json *j = &o->j;
	char name[160];
	int i;

	for (i = 0; i < in->nprocs; i++) {
		const struct trace_proc *p = &in->procs[i];

		snprintf(name, sizeof(name), "rank %d (pid %u)", p->rank, p->pid);
		head(j, "M", "process_name", NULL, p->pid, 0);
		json__key(j, "args");
		json__obj_begin(j);
		json__kstr(j, "name", name);
		json__obj_end(j);
		json__obj_end(j);
		trace__out_event(o);
		head(j, "M", "process_labels", NULL, p->pid, 0);
		json__key(j, "args");
		json__obj_begin(j);
		json__kstr(j, "labels", p->job);
		json__obj_end(j);
		json__obj_end(j);
		trace__out_event(o);
		head(j, "M", "process_sort_index", NULL, p->pid, 0);
		json__key(j, "args");
		json__obj_begin(j);
		json__kint(j, "sort_index", p->rank);
		json__obj_end(j);
		json__obj_end(j);
		trace__out_event(o);
		head(j, "M", "thread_name", NULL, p->pid, TR_STEP_TID);
		json__key(j, "args");
		json__obj_begin(j);
		json__kstr(j, "name", "steps and phases");
		json__obj_end(j);
		json__obj_end(j);
		trace__out_event(o);
	}
	for (i = 0; i < in->nthreads; i++) {
		head(j, "M", "thread_name", NULL, in->threads[i].pid, in->threads[i].tid);
		json__key(j, "args");
		json__obj_begin(j);
		json__kstr(j, "name", in->threads[i].name);
		json__obj_end(j);
		json__obj_end(j);
		trace__out_event(o);
	}
}

/* GPU stream tracks get a name once each. */
static void gpu_tracks(struct trace_out *o, const struct trace_in *in)
{
	char name[48];
	size_t i;

	for (i = 0; i < in->nev; i++) {
		const struct trace_ev *e = &in->ev[i];

		if (e->kind != TR_GPU || (i && in->ev[i - 1].pid == e->pid &&
					  in->ev[i - 1].tid == e->tid))
			continue;
		snprintf(name, sizeof(name), "GPU stream %u", e->tid - TR_GPU_TID_BASE);
		head(&o->j, "M", "thread_name", NULL, e->pid, e->tid);
		json__key(&o->j, "args");
		json__obj_begin(&o->j);
		json__kstr(&o->j, "name", name);
		json__obj_end(&o->j);
		json__obj_end(&o->j);
		trace__out_event(o);
	}
}

int trace__out_open(struct trace_out *o, int fd, bool gz)
{
	memset(o, 0, sizeof(*o));
	o->fd = fd;
	o->first = true;
	json__init(&o->j);
	if (gz) {
		int dfd = dup(fd);

		o->gz = dfd >= 0 ? gzdopen(dfd, "wb6") : NULL;
		if (!o->gz) {
			if (dfd >= 0)
				close(dfd);
			json__free(&o->j);
			return -ENOMEM;
		}
	}
	return 0;
}

int trace__out_close(struct trace_out *o)
{
	int err = o->err;

	if (o->gz) {
		int r = gzclose(o->gz);

		if (!err && r != Z_OK)
			err = -EIO;
	}
	json__free(&o->j);
	return err;
}

int trace__write(int fd, bool gz, struct trace_in *in)
{
	struct trace_out o;
	const struct trace_samples *sm = in->samples;
	char hdr[512], smp[200] = "";
	size_t i;

	if (trace__out_open(&o, fd, gz))
		return -ENOMEM;
	mark_flows(in);
	if (in->nev)	/* none: ev may be NULL */
		qsort(in->ev, in->nev, sizeof(*in->ev), by_track);
	if (sm)
		snprintf(smp, sizeof(smp), ",\"samples\":{\"dwarf\":%" PRIu64 ",\"frame_pointer\":%"
			 PRIu64 ",\"stack_cut\":%" PRIu64 ",\"stack_bytes\":%" PRIu64 "}",
			 sm->dwarf, sm->frame_pointer, sm->stack_cut, sm->stack_bytes);
	snprintf(hdr, sizeof(hdr), "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":"
		 "\"rankscope\",\"capture\":\"%s\",\"dropped_events\":%" PRIu64 "%s},\n"
		 "\"traceEvents\":[\n", in->id ? in->id : "", in->dropped, smp);
	trace__out_put(&o, hdr, strlen(hdr));
	metadata(&o, in);
	gpu_tracks(&o, in);
	for (i = 0; i < in->nev && !o.err; i++)
		slice(&o, in, &in->ev[i]);
	trace__out_put(&o, "\n]}\n", 4);
	return trace__out_close(&o);
}
