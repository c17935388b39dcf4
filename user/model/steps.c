// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Phase partition of a step: a sweep over the boundaries of every interval that touches it. */
#include <stdlib.h>
#include <string.h>
#include "collectives.h"
#include "detect.h"
#include "io.h"
#include "steps.h"

const char *steps__phase_name(enum phase ph)
{
	static const char *const n[PH_MAX] = {
		"compute", "sched_delay", "comm", "gpu_wait", "io", "input_wait", "other",
	};

	return ph < PH_MAX ? n[ph] : "unknown";
}

static void add_point(uint64_t *pts, int *n, uint64_t v, uint64_t start, uint64_t end)
{
	if (v > start && v < end)
		pts[(*n)++] = v;
}

bool steps__input_syscall(int32_t nr)
{
	switch (nr) {
	case 7:		/* poll */
	case 23:	/* select */
	case 202:	/* futex */
	case 232:	/* epoll_wait */
	case 270:	/* pselect6 */
	case 271:	/* ppoll */
	case 281:	/* epoll_pwait */
	case 441:	/* epoll_pwait2 */
	case 449:	/* futex_waitv */
	case 0:		/* read, recvfrom, recvmsg: pipe/socket reads too short to be streamed */
	case 45:
	case 47:
		return true;
	default:
		return false;
	}
}

/* classify's syscall for sched_delay inside a collective (no syscall is negative but -1) */
#define NR_IN_COLL	INT32_MIN
#define NR_IO_WRITE	(INT32_MIN + 1)	/* io: in a write-side call */

uint64_t steps__inside(const struct phases *ph)
{
	return ph->ns[PH_COMM] + ph->comm_sched;
}

/* Was the thread runnable at t of its off-CPU interval o (its last runq ns)? */
static bool in_runq(const struct tl_off *o, uint64_t t)
{
	return t >= o->end - (o->runq < o->end - o->start ? o->runq : o->end - o->start);
}

static enum phase classify(uint64_t t, const struct tl_coll *c, int nc, const struct tl_off *o,
			   int no, const struct tl_io *io, int nio, uint64_t comm_from, int32_t *nr)
{
	bool input = false, off = false, runq = false, waits = false, futex = false, gpu = false;
	bool comm = false, fwait = false;
	int i;

	*nr = -1;

	for (i = 0; i < nc; i++) {
		if (!c[i].exit || t < c[i].enter || t >= c[i].exit)
			continue;
		if (c[i].op != RS_OP_GPU_SYNC)
			comm = true;
		else
			gpu = true;
	}
	/* inside a collective (or a CUDA synchronize), runnable but not running (preempted, or
	 * its cgroup throttled by a CPU quota) is CPU contention: a busy-polling rank starved
	 * inside its all-reduce is not waiting for the network (DESIGN.md §4) */
	for (i = 0; (comm || gpu) && i < no; i++)
		if (t >= o[i].start && t < o[i].end && in_runq(&o[i], t)) {
			*nr = comm ? NR_IN_COLL : o[i].syscall;
			return PH_SCHED_DELAY;
		}
	if (comm)
		return PH_COMM;
	if (gpu)
		return PH_GPU_WAIT;
	for (i = 0; i < nio; i++) {
		if (io[i].worker || t < io[i].start || t >= io[i].end)
			continue;
		if (io[i].kind == RS_FD_REG) {
			*nr = io[i].write ? NR_IO_WRITE : -1;
			return PH_IO;
		}
		if (io[i].kind == RS_FD_PIPE || io[i].kind == RS_FD_SOCK)
			input = true;
	}
	if (input)
		return PH_INPUT_WAIT;
	for (i = 0; i < no; i++) {
		if (t < o[i].start || t >= o[i].end)
			continue;
		off = true;
		*nr = o[i].syscall;
		if (in_runq(&o[i], t))
			runq = true;
		else if (steps__input_syscall(o[i].syscall))
			waits = true;
		futex |= o[i].syscall == 202 || o[i].syscall == 449 || o[i].syscall < 0;
		fwait |= o[i].syscall == 202 || o[i].syscall == 449;
	}
	/* runnable and not running in the wait for its asynchronous collectives (a futex wait
	 * after the step's first wait mark): starved inside them, as inside a blocking one */
	if (runq) {
		if (comm_from && t >= comm_from && fwait)
			*nr = NR_IN_COLL;
		return PH_SCHED_DELAY;
	}
	/* after DDP's finalize_backward, a futex wait is the wait for the bucket all-reduces;
	 * a poll on the loader's queue is still input */
	if (off && comm_from && t >= comm_from && futex)
		return PH_COMM;
	if (off)
		return waits ? PH_INPUT_WAIT : PH_OTHER;
	return PH_COMPUTE;
}

/* Time in `other` by syscall: a few kinds a step (the first OTHER_NRS seen). */
#define OTHER_NRS 4

struct other_acc {
	int32_t nr;
	uint64_t ns;
};

static void add_other(struct other_acc *a, int *n, int32_t nr, uint64_t ns)
{
	int i;

	for (i = 0; i < *n; i++)
		if (a[i].nr == nr) {
			a[i].ns += ns;
			return;
		}
	if (*n < OTHER_NRS)
		a[(*n)++] = (struct other_acc){ .nr = nr, .ns = ns };
}

void steps__partition(uint64_t start, uint64_t end, const struct tl_coll *c, int nc,
		      const struct tl_off *o, int no, const struct tl_io *io, int nio,
		      uint64_t comm_from, struct phases *out)
{
	steps__partition_cb(start, end, c, nc, o, no, io, nio, comm_from, out, NULL, NULL);
}

/*
 * The part of an interval list that can hold a point t, for ascending t: entries before lo
 * ended by t (they cannot hold a later point either); with the list in start order, entries
 * from hi on start after t. classify scans [lo, hi) in the list's own order, so it finds
 * what a scan of the whole list finds, in the same order.
 */
struct span {
	int lo, hi;
	bool sorted;		/* by start: hi moves; else it stays at the end */
};

#define SPAN_INIT(sp, arr, n, startf)						\
	do {									\
		int _i;								\
		(sp).lo = 0;							\
		(sp).sorted = true;						\
		for (_i = 1; _i < (n) && (sp).sorted; _i++)			\
			(sp).sorted = (arr)[_i - 1].startf <= (arr)[_i].startf;	\
		(sp).hi = (sp).sorted ? 0 : (n);				\
	} while (0)

/* dead(i): entry i can hold no point (an entry-only call, a worker's I/O) */
#define SPAN_MOVE(sp, arr, n, t, startf, endf, dead)				\
	do {									\
		while ((sp).lo < (n) && ((dead) || (arr)[(sp).lo].endf <= (t)))	\
			(sp).lo++;						\
		while ((sp).sorted && (sp).hi < (n) && (arr)[(sp).hi].startf <= (t))	\
			(sp).hi++;						\
	} while (0)

#define SPAN_LEN(sp)	((sp).hi > (sp).lo ? (sp).hi - (sp).lo : 0)

void steps__partition_cb(uint64_t start, uint64_t end, const struct tl_coll *c, int nc,
			 const struct tl_off *o, int no, const struct tl_io *io, int nio,
			 uint64_t comm_from, struct phases *out,
			 void (*run)(void *ctx, enum phase ph, uint64_t s, uint64_t e), void *ctx)
{
	enum phase ph, cur = PH_MAX;
	uint64_t from = start, t;
	uint64_t *pts;
	struct other_acc other[OTHER_NRS];
	struct span sc, so, si;
	int n = 0, i, nother = 0;
	int32_t nr;

	memset(out, 0, sizeof(*out));
	out->other_nr = -1;
	if (end <= start)
		return;
	pts = malloc(sizeof(*pts) * (2 + 2 * nc + 3 * no + 2 * nio + 1));
	if (!pts) {
		out->ns[PH_COMPUTE] = end - start;	/* nothing to split with */
		return;
	}
	pts[n++] = start;
	for (i = 0; i < nc; i++) {
		add_point(pts, &n, c[i].enter, start, end);
		add_point(pts, &n, c[i].exit, start, end);
	}
	for (i = 0; i < no; i++) {
		add_point(pts, &n, o[i].start, start, end);
		add_point(pts, &n, o[i].end, start, end);
		add_point(pts, &n, o[i].end > o[i].runq ? o[i].end - o[i].runq : 0, start, end);
	}
	for (i = 0; i < nio; i++) {
		add_point(pts, &n, io[i].start, start, end);
		add_point(pts, &n, io[i].end, start, end);
	}
	add_point(pts, &n, comm_from, start, end);
	detect__sort_u64(pts + 1, n - 1);
	pts[n++] = end;
	SPAN_INIT(sc, c, nc, enter);
	SPAN_INIT(so, o, no, start);
	SPAN_INIT(si, io, nio, start);
	for (i = 0; i + 1 < n; i++) {
		if (pts[i + 1] <= pts[i])
			continue;
		t = pts[i];
		SPAN_MOVE(sc, c, nc, t, enter, exit, !c[sc.lo].exit);
		SPAN_MOVE(so, o, no, t, start, end, false);
		SPAN_MOVE(si, io, nio, t, start, end, io[si.lo].worker);
		ph = classify(t, c + sc.lo, SPAN_LEN(sc), o + so.lo, SPAN_LEN(so), io + si.lo,
			      SPAN_LEN(si), comm_from, &nr);
		out->ns[ph] += pts[i + 1] - pts[i];
		if (ph == PH_SCHED_DELAY && nr == NR_IN_COLL)
			out->comm_sched += pts[i + 1] - pts[i];
		if (ph == PH_IO && nr == NR_IO_WRITE)
			out->io_write += pts[i + 1] - pts[i];
		if (ph == PH_OTHER)
			add_other(other, &nother, nr, pts[i + 1] - pts[i]);
		if (run && ph != cur) {	/* a run of one phase ends where another begins */
			if (cur != PH_MAX)
				run(ctx, cur, from, pts[i]);
			cur = ph;
			from = pts[i];
		}
	}
	if (run && cur != PH_MAX)
		run(ctx, cur, from, end);
	for (i = 0; i < nother; i++)
		if (other[i].ns > out->other_nr_ns) {
			out->other_nr = other[i].nr;
			out->other_nr_ns = other[i].ns;
		}
	free(pts);
}
