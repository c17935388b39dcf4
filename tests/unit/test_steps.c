// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* steps: the phase partition of a step, against hand-built cases and a per-instant reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "io.h"
#include "steps.h"

#define MAXI 6

/* Deterministic across libcs: xorshift64 with a fixed seed. */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? rng % n : 0;
}

static uint64_t sum(const struct phases *p)
{
	uint64_t s = 0;
	int i;

	for (i = 0; i < PH_MAX; i++)
		s += p->ns[i];
	return s;
}

/* Syscall numbers (x86-64) that off-CPU intervals are tagged with. */
#define NR_READ		0
#define NR_WRITE	1
#define NR_POLL		7
#define NR_NANOSLEEP	35
#define NR_RECVFROM	45
#define NR_WAIT4	61
#define NR_FUTEX	202
#define NR_EPOLL_WAIT	232
#define NR_UNKNOWN	(-1)

static bool ref_input_syscall(int32_t nr)
{
	static const int32_t input[] = { 7, 23, 202, 232, 270, 271, 281, 441, 449, 0, 45, 47 };
	unsigned int i;

	for (i = 0; i < sizeof(input) / sizeof(input[0]); i++)
		if (nr == input[i])
			return true;
	return false;
}

/* The header's rule, instant by instant: one phase for the instant t. */
static enum phase ref_phase(uint64_t t, const struct tl_coll *c, int nc, const struct tl_off *o,
			    int no, const struct tl_io *io, int nio, uint64_t comm_from)
{
	bool in_coll = false, in_file = false, in_input = false, runnable = false, blocked = false;
	bool in_wait = false, in_futex = false;
	uint64_t from;
	int i;

	for (i = 0; i < nc; i++)
		if (c[i].exit != 0 && c[i].enter <= t && t < c[i].exit)
			in_coll = true;
	for (i = 0; i < nio; i++) {
		if (io[i].worker || t < io[i].start || t >= io[i].end)
			continue;
		if (io[i].kind == RS_FD_REG)
			in_file = true;
		else if (io[i].kind == RS_FD_PIPE || io[i].kind == RS_FD_SOCK)
			in_input = true;
	}
	for (i = 0; i < no; i++) {
		if (t < o[i].start || t >= o[i].end)
			continue;
		blocked = true;
		from = o[i].runq >= o[i].end - o[i].start ? o[i].start : o[i].end - o[i].runq;
		if (t >= from)
			runnable = true;
		if (ref_input_syscall(o[i].syscall))
			in_wait = true;
		if (o[i].syscall == NR_FUTEX || o[i].syscall == 449 || o[i].syscall < 0)
			in_futex = true;
	}
	if (in_coll && runnable)
		return PH_SCHED_DELAY;	/* starved of CPU inside the call */
	if (in_coll)
		return PH_COMM;
	if (in_file)
		return PH_IO;
	if (in_input)
		return PH_INPUT_WAIT;
	if (runnable)
		return PH_SCHED_DELAY;
	if (blocked && comm_from && t >= comm_from && in_futex)
		return PH_COMM;
	if (blocked)
		return in_wait ? PH_INPUT_WAIT : PH_OTHER;
	return PH_COMPUTE;
}

static void expect(const struct phases *p, uint64_t compute, uint64_t sched, uint64_t comm,
		   uint64_t io, uint64_t input, uint64_t other)
{
	assert_int_equal(p->ns[PH_COMPUTE], compute);
	assert_int_equal(p->ns[PH_SCHED_DELAY], sched);
	assert_int_equal(p->ns[PH_COMM], comm);
	assert_int_equal(p->ns[PH_GPU_WAIT], 0);
	assert_int_equal(p->ns[PH_IO], io);
	assert_int_equal(p->ns[PH_INPUT_WAIT], input);
	assert_int_equal(p->ns[PH_OTHER], other);
	assert_int_equal(p->comm_wait, 0);
	assert_int_equal(p->comm_transfer, 0);
}

static const int32_t syscalls[] = { NR_UNKNOWN, NR_READ, NR_WRITE, NR_POLL, NR_NANOSLEEP,
				    NR_RECVFROM, NR_WAIT4, NR_FUTEX, NR_EPOLL_WAIT, 449, 47 };
#define NSYSCALLS (sizeof(syscalls) / sizeof(syscalls[0]))

#define MAXS 40

struct rcase {
	struct tl_coll c[MAXS];
	struct tl_off o[MAXS];
	struct tl_io io[MAXS];
	int nc, no, nio;
	uint64_t start, end, comm_from;
};

/* A step in [1000, 1600) and up to max intervals a list. Unsorted: starts anywhere in
 * [900, 1700). Sorted (as the model keeps its lists): starts ascend from 900 by small steps,
 * ties too, with lengths that let a long entry stay open past later ones. */
static void random_case(struct rcase *r, int max, bool sorted, int k)
{
	uint64_t at;
	int i;

	memset(r, 0, sizeof(*r));
	r->start = 1000 + rnd(100);
	r->end = r->start + 1 + rnd(400);
	r->nc = rnd(max + 1);
	r->no = rnd(max + 1);
	r->nio = rnd(max + 1);
	for (at = 900, i = 0; i < r->nc; i++) {
		r->c[i].enter = sorted ? (at += rnd(25)) : 900 + rnd(800);
		r->c[i].exit = rnd(5) ? r->c[i].enter + rnd(sorted && k % 2 ? 40 : 200) : 0;
	}
	for (at = 900, i = 0; i < r->no; i++) {
		r->o[i].start = sorted ? (at += rnd(25)) : 900 + rnd(800);
		r->o[i].end = r->o[i].start + rnd(sorted && k % 3 ? 30 : 300);
		r->o[i].runq = rnd(3) ? rnd(r->o[i].end - r->o[i].start + 100) : 0;
		r->o[i].syscall = syscalls[rnd(NSYSCALLS)];
	}
	for (at = 900, i = 0; i < r->nio; i++) {
		r->io[i].start = sorted ? (at += rnd(25)) : 900 + rnd(800);
		r->io[i].end = r->io[i].start + rnd(sorted && k % 4 ? 30 : 250);
		r->io[i].kind = rnd(RS_FD_MAX);
		r->io[i].worker = rnd(4) == 0;
	}
	r->comm_from = rnd(2) ? 900 + rnd(800) : 0;
}

/* The partition sums to the step and equals the reference at every instant. */
static void match_reference(const struct rcase *r)
{
	struct phases p, ref;
	uint64_t t;
	int i;

	memset(&p, 0xa5, sizeof(p));
	steps__partition(r->start, r->end, r->c, r->nc, r->o, r->no, r->io, r->nio, r->comm_from,
			 &p);
	assert_int_equal(sum(&p), r->end - r->start);
	memset(&ref, 0, sizeof(ref));
	for (t = r->start; t < r->end; t++)
		ref.ns[ref_phase(t, r->c, r->nc, r->o, r->no, r->io, r->nio, r->comm_from)]++;
	for (i = 0; i < PH_MAX; i++)
		assert_int_equal(p.ns[i], ref.ns[i]);
	assert_int_equal(p.comm_wait, 0);
	assert_int_equal(p.comm_transfer, 0);
}

static void partition__random_overlaps__sum_to_step_and_match_reference(void **state)
{
	static struct rcase r;
	int k;

	rng = 0x9e3779b97f4a7c15ULL;
	for (k = 0; k < 5000; k++) {
		random_case(&r, MAXI, false, k);
		match_reference(&r);
	}
}

/* Lists in start order: the partition skips what ended before a point and what starts after
 * it, and must still match the reference at every instant. */
static void partition__sorted_lists__match_reference(void **state)
{
	static struct rcase r;
	int k;

	rng = 0x6a09e667f3bcc909ULL;
	for (k = 0; k < 3000; k++) {
		random_case(&r, MAXS, true, k);
		match_reference(&r);
	}
}

static void partition__random_realistic_clock__phases_sum_to_step(void **state)
{
	const uint64_t base = 1700000000000000000ULL, ms = 1000000;
	struct tl_coll c[MAXI];
	struct tl_off o[MAXI];
	struct tl_io io[MAXI];
	struct phases p;
	uint64_t start, end;
	int k, i;

	rng = 0x2545f4914f6cdd1dULL;
	for (k = 0; k < 2000; k++) {
		start = base + rnd(1000 * ms);
		end = start + 1 + rnd(2000 * ms);
		for (i = 0; i < MAXI; i++) {
			c[i].enter = start - 500 * ms + rnd(3000 * ms);
			c[i].exit = rnd(4) ? c[i].enter + rnd(800 * ms) : 0;
			o[i].start = start - 500 * ms + rnd(3000 * ms);
			o[i].end = o[i].start + rnd(900 * ms);
			o[i].runq = rnd(o[i].end - o[i].start + 1 + 50 * ms);
			o[i].syscall = syscalls[rnd(NSYSCALLS)];
			io[i].start = start - 500 * ms + rnd(3000 * ms);
			io[i].end = io[i].start + rnd(700 * ms);
			io[i].kind = rnd(RS_FD_MAX);
			io[i].worker = rnd(3) == 0;
		}
		steps__partition(start, end, c, MAXI, o, MAXI, io, MAXI,
				 rnd(2) ? start + rnd(2000 * ms) : 0, &p);
		assert_true(sum(&p) == end - start);
	}
}

static void partition__nothing_recorded__all_compute(void **state)
{
	struct phases p;

	memset(&p, 0xa5, sizeof(p));
	steps__partition(1000, 1300, NULL, 0, NULL, 0, NULL, 0, 0, &p);
	expect(&p, 300, 0, 0, 0, 0, 0);
}

static void partition__empty_or_inverted_step__all_zero(void **state)
{
	struct tl_coll c = { .enter = 0, .exit = 5000 };
	struct phases p;

	memset(&p, 0xa5, sizeof(p));
	steps__partition(1000, 1000, &c, 1, NULL, 0, NULL, 0, 0, &p);
	expect(&p, 0, 0, 0, 0, 0, 0);
	memset(&p, 0xa5, sizeof(p));
	steps__partition(2000, 1000, &c, 1, NULL, 0, NULL, 0, 0, &p);
	expect(&p, 0, 0, 0, 0, 0, 0);
}

static void partition__comm_over_io__exact_ns(void **state)
{
	struct tl_coll c = { .enter = 1100, .exit = 1200 };
	struct tl_io io = { .start = 1150, .end = 1250, .kind = RS_FD_REG };
	struct tl_off o = { .start = 1150, .end = 1250, .runq = 100, .syscall = NR_UNKNOWN };
	struct phases p;

	steps__partition(1000, 1300, &c, 1, &o, 1, &io, 1, 1000, &p);
	/* [1000,1100) compute, [1100,1150) comm, [1150,1200) runnable inside the collective:
	 * sched_delay, [1200,1250) io (over its runnable time), [1250,1300) compute */
	expect(&p, 150, 50, 50, 50, 0, 0);
}

static void partition__io_over_input_wait__exact_ns(void **state)
{
	struct tl_io io[2] = {
		{ .start = 1100, .end = 1200, .kind = RS_FD_REG },
		{ .start = 1050, .end = 1150, .kind = RS_FD_PIPE },
	};
	struct phases p;

	steps__partition(1000, 1300, NULL, 0, NULL, 0, io, 2, 0, &p);
	/* [1000,1050) compute, [1050,1100) input, [1100,1200) io, [1200,1300) compute */
	expect(&p, 150, 0, 0, 100, 50, 0);
}

static void partition__input_wait_over_sched_delay__exact_ns(void **state)
{
	struct tl_io io = { .start = 1100, .end = 1200, .kind = RS_FD_SOCK };
	/* off CPU [1100, 1300), runnable for its last 150 ns: [1150, 1300) */
	struct tl_off o = { .start = 1100, .end = 1300, .runq = 150, .syscall = NR_READ };
	struct phases p;

	steps__partition(1000, 1400, NULL, 0, &o, 1, &io, 1, 0, &p);
	/* [1000,1100) compute, [1100,1200) input, [1200,1300) sched, [1300,1400) compute */
	expect(&p, 200, 100, 0, 0, 100, 0);
}

static void partition__sched_delay_over_comm_from__exact_ns(void **state)
{
	struct tl_off o = { .start = 1100, .end = 1300, .runq = 50, .syscall = NR_UNKNOWN };
	struct phases p;

	steps__partition(1000, 1400, NULL, 0, &o, 1, NULL, 0, 1150, &p);
	/* [1100,1150) blocked before comm_from: other; [1150,1250) blocked after it: comm;
	 * [1250,1300) runnable: sched */
	expect(&p, 200, 50, 100, 0, 0, 50);
}

static void partition__blocked__other_over_compute(void **state)
{
	struct tl_off o[2] = {
		{ .start = 1100, .end = 1200, .runq = 0, .syscall = NR_NANOSLEEP },
		{ .start = 1250, .end = 1280, .runq = 10, .syscall = NR_WAIT4 },
	};
	struct phases p;

	steps__partition(1000, 1300, NULL, 0, o, 2, NULL, 0, 0, &p);
	/* other: [1100,1200) + [1250,1270); sched: [1270,1280) */
	expect(&p, 170, 10, 0, 0, 0, 120);
}

static void partition__futex_around_comm_from__input_then_comm(void **state)
{
	struct tl_off o = { .start = 1100, .end = 1300, .syscall = NR_FUTEX };
	struct phases p;

	/* before comm_from a futex wait is the loader's handoff, after it the all-reduces' */
	steps__partition(1000, 1400, NULL, 0, &o, 1, NULL, 0, 1200, &p);
	expect(&p, 200, 0, 100, 0, 100, 0);
	o.syscall = 449;	/* futex_waitv */
	steps__partition(1000, 1400, NULL, 0, &o, 1, NULL, 0, 1200, &p);
	expect(&p, 200, 0, 100, 0, 100, 0);
	/* no comm_from: all of it is input */
	o.syscall = NR_FUTEX;
	steps__partition(1000, 1400, NULL, 0, &o, 1, NULL, 0, 0, &p);
	expect(&p, 200, 0, 0, 0, 200, 0);
}

/* Runnable and not running at the end of the wait for its asynchronous collectives (after
 * the step's first wait mark): starved inside its collectives (comm_sched), as inside a
 * blocking one. The same futex wait with no wait mark is the loader's handoff, and a sleep
 * after the mark is no wait for collectives: their runnable time is no collective's. */
static void partition__runnable_in_the_wait_for_collectives__starved_inside_them(void **state)
{
	struct tl_off o = { .start = 1200, .end = 1400, .runq = 50, .syscall = NR_FUTEX };
	struct phases p;

	steps__partition(1000, 1500, NULL, 0, &o, 1, NULL, 0, 1200, &p);
	expect(&p, 300, 50, 150, 0, 0, 0);
	assert_int_equal(p.comm_sched, 50);
	steps__partition(1000, 1500, NULL, 0, &o, 1, NULL, 0, 0, &p);
	expect(&p, 300, 50, 0, 0, 150, 0);
	assert_int_equal(p.comm_sched, 0);
	o.syscall = NR_NANOSLEEP;
	steps__partition(1000, 1500, NULL, 0, &o, 1, NULL, 0, 1200, &p);
	expect(&p, 300, 50, 0, 0, 0, 150);
	assert_int_equal(p.comm_sched, 0);
}

static void partition__poll_or_read_after_comm_from__still_input(void **state)
{
	struct tl_off o = { .start = 1100, .end = 1300, .syscall = NR_POLL };
	struct phases p;

	steps__partition(1000, 1400, NULL, 0, &o, 1, NULL, 0, 1050, &p);
	expect(&p, 200, 0, 0, 0, 200, 0);
	o.syscall = NR_EPOLL_WAIT;
	steps__partition(1000, 1400, NULL, 0, &o, 1, NULL, 0, 1050, &p);
	expect(&p, 200, 0, 0, 0, 200, 0);
	o.syscall = NR_RECVFROM;
	steps__partition(1000, 1400, NULL, 0, &o, 1, NULL, 0, 1050, &p);
	expect(&p, 200, 0, 0, 0, 200, 0);
}

static void partition__unknown_syscall__other_then_comm_after_comm_from(void **state)
{
	struct tl_off o = { .start = 1100, .end = 1300, .syscall = NR_UNKNOWN };
	struct phases p;

	steps__partition(1000, 1400, NULL, 0, &o, 1, NULL, 0, 1250, &p);
	expect(&p, 200, 0, 50, 0, 0, 150);
}

static void partition__sleep_after_comm_from__other(void **state)
{
	struct tl_off o = { .start = 1100, .end = 1300, .syscall = NR_NANOSLEEP };
	struct phases p;

	steps__partition(1000, 1400, NULL, 0, &o, 1, NULL, 0, 1050, &p);
	expect(&p, 200, 0, 0, 0, 0, 200);
	o.syscall = NR_WRITE;
	steps__partition(1000, 1400, NULL, 0, &o, 1, NULL, 0, 1050, &p);
	expect(&p, 200, 0, 0, 0, 0, 200);
}

static void partition__comm_from_without_off_cpu__compute(void **state)
{
	struct phases p;

	/* comm_from only names why the thread is blocked; on CPU it is still compute */
	steps__partition(1000, 1300, NULL, 0, NULL, 0, NULL, 0, 1100, &p);
	expect(&p, 300, 0, 0, 0, 0, 0);
}

static void partition__collective_over_everything__all_comm(void **state)
{
	struct tl_coll c = { .enter = 900, .exit = 1400 };
	struct tl_off o = { .start = 1000, .end = 1300, .runq = 300, .syscall = NR_FUTEX };
	struct tl_io io[2] = {
		{ .start = 1000, .end = 1300, .kind = RS_FD_REG },
		{ .start = 1000, .end = 1300, .kind = RS_FD_SOCK },
	};
	struct phases p;

	/* blocked (not runnable) inside the collective: comm over io, input and the wait */
	o.runq = 0;
	steps__partition(1000, 1300, &c, 1, &o, 1, io, 2, 0, &p);
	expect(&p, 0, 0, 300, 0, 0, 0);
	/* runnable for its last 100 ns inside the collective: starved of CPU there */
	o.runq = 100;
	steps__partition(1000, 1300, &c, 1, &o, 1, io, 2, 0, &p);
	expect(&p, 0, 100, 200, 0, 0, 0);
}

static void partition__intervals_stick_out__clipped_to_step(void **state)
{
	struct tl_coll c = { .enter = 500, .exit = 1100 };
	struct tl_io io = { .start = 1250, .end = 9000, .kind = RS_FD_REG };
	struct tl_off o = { .start = 100, .end = 5000, .runq = 4000, .syscall = NR_UNKNOWN };
	struct phases p;

	/* off-CPU [100, 5000) runnable from 1000 on: the whole step, inside the collective too,
	 * but not under the file read */
	steps__partition(1000, 1300, &c, 1, &o, 1, &io, 1, 0, &p);
	expect(&p, 0, 250, 0, 50, 0, 0);
}

static void partition__runq_longer_than_interval__all_sched_delay(void **state)
{
	struct tl_off o = { .start = 1100, .end = 1200, .runq = 500, .syscall = NR_POLL };
	struct tl_off o2 = { .start = 1100, .end = 1200, .runq = 5000, .syscall = NR_POLL };
	struct phases p;

	steps__partition(1000, 1300, NULL, 0, &o, 1, NULL, 0, 0, &p);
	expect(&p, 200, 100, 0, 0, 0, 0);
	/* runq past the clock's zero */
	steps__partition(1000, 1300, NULL, 0, &o2, 1, NULL, 0, 0, &p);
	expect(&p, 200, 100, 0, 0, 0, 0);
}

static void partition__entry_only_collective__not_comm(void **state)
{
	struct tl_coll c[2] = {
		{ .enter = 1100, .exit = 0 },
		{ .enter = 1150, .exit = 0 },
	};
	struct tl_off o = { .start = 1150, .end = 1250, .syscall = NR_UNKNOWN };
	struct phases p;

	steps__partition(1000, 1300, c, 2, &o, 1, NULL, 0, 0, &p);
	expect(&p, 200, 0, 0, 0, 0, 100);
}

static void partition__worker_io__not_main_thread(void **state)
{
	struct tl_io io[3] = {
		{ .start = 1000, .end = 1300, .kind = RS_FD_REG, .worker = true },
		{ .start = 1000, .end = 1300, .kind = RS_FD_PIPE, .worker = true },
		{ .start = 1000, .end = 1300, .kind = RS_FD_SOCK, .worker = true },
	};
	struct tl_off o = { .start = 1100, .end = 1200, .runq = 20, .syscall = NR_NANOSLEEP };
	struct phases p;

	steps__partition(1000, 1300, NULL, 0, NULL, 0, io, 3, 0, &p);
	expect(&p, 300, 0, 0, 0, 0, 0);
	steps__partition(1000, 1300, NULL, 0, &o, 1, io, 3, 0, &p);
	expect(&p, 200, 20, 0, 0, 0, 80);
}

static void partition__each_fd_kind__own_phase(void **state)
{
	struct tl_io io = { .start = 1100, .end = 1200 };
	struct tl_off o = { .start = 1100, .end = 1200, .syscall = NR_WRITE };
	struct phases p;

	io.kind = RS_FD_REG;
	steps__partition(1000, 1300, NULL, 0, &o, 1, &io, 1, 0, &p);
	expect(&p, 200, 0, 0, 100, 0, 0);
	io.kind = RS_FD_PIPE;
	steps__partition(1000, 1300, NULL, 0, &o, 1, &io, 1, 0, &p);
	expect(&p, 200, 0, 0, 0, 100, 0);
	io.kind = RS_FD_SOCK;
	steps__partition(1000, 1300, NULL, 0, &o, 1, &io, 1, 0, &p);
	expect(&p, 200, 0, 0, 0, 100, 0);
	/* an fd of another kind (eventfd, tty) is neither storage nor input */
	io.kind = RS_FD_OTHER;
	steps__partition(1000, 1300, NULL, 0, &o, 1, &io, 1, 0, &p);
	expect(&p, 200, 0, 0, 0, 0, 100);
	steps__partition(1000, 1300, NULL, 0, NULL, 0, &io, 1, 0, &p);
	expect(&p, 300, 0, 0, 0, 0, 0);
}

static void partition__ddp_step__exact_ns(void **state)
{
	/* a step of 100 ms: 19 ms in a pipe read from the loader then 1 ms runnable, 50 ms of
	 * forward/backward, two 5 ms bucket allreduces with 2 ms runnable between them,
	 * finalize_backward blocked 8 ms in a futex on the background collectives (comm_from)
	 * around an entry-only barrier, 10 ms of optimizer; a loader worker's file read overlaps
	 * it all */
	const uint64_t ms = 1000000, t0 = 5000 * ms;
	struct tl_coll c[3] = {
		{ .enter = t0 + 70 * ms, .exit = t0 + 75 * ms },
		{ .enter = t0 + 77 * ms, .exit = t0 + 82 * ms },
		{ .enter = t0 + 86 * ms },
	};
	struct tl_off o[3] = {
		{ .start = t0, .end = t0 + 20 * ms, .runq = 1 * ms, .syscall = NR_READ },
		{ .start = t0 + 75 * ms, .end = t0 + 77 * ms, .runq = 2 * ms, .syscall = NR_FUTEX },
		{ .start = t0 + 82 * ms, .end = t0 + 90 * ms, .runq = 0, .syscall = NR_FUTEX },
	};
	struct tl_io io[2] = {
		{ .start = t0, .end = t0 + 19 * ms, .kind = RS_FD_PIPE },
		{ .start = t0 + 10 * ms, .end = t0 + 60 * ms, .kind = RS_FD_REG, .worker = true },
	};
	struct phases p;

	steps__partition(t0, t0 + 100 * ms, c, 3, o, 3, io, 2, t0 + 82 * ms, &p);
	/* input [0,19); sched [19,20) + [75,77); compute [20,70) + [90,100);
	 * comm [70,75) + [77,82) + blocked after comm_from [82,90) */
	expect(&p, 60 * ms, 3 * ms, 18 * ms, 0, 19 * ms, 0);
	assert_int_equal(sum(&p), 100 * ms);
}

static void input_syscall__waits_and_short_reads__true(void **state)
{
	static const int32_t yes[] = { 0, 7, 23, 45, 47, 202, 232, 270, 271, 281, 441, 449 };
	unsigned int i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(steps__input_syscall(yes[i]));
}

static void input_syscall__others__false(void **state)
{
	/* write, pread64, nanosleep, wait4, clock_nanosleep, unknown, out of range */
	static const int32_t no[] = { 1, 17, 35, 61, 230, -1, 100000, INT32_MIN };
	unsigned int i;

	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(steps__input_syscall(no[i]));
}

static void phase_name__every_phase__its_name(void **state)
{
	assert_string_equal(steps__phase_name(PH_COMPUTE), "compute");
	assert_string_equal(steps__phase_name(PH_SCHED_DELAY), "sched_delay");
	assert_string_equal(steps__phase_name(PH_COMM), "comm");
	assert_string_equal(steps__phase_name(PH_GPU_WAIT), "gpu_wait");
	assert_string_equal(steps__phase_name(PH_IO), "io");
	assert_string_equal(steps__phase_name(PH_INPUT_WAIT), "input_wait");
	assert_string_equal(steps__phase_name(PH_OTHER), "other");
}

static void phase_name__out_of_range__unknown(void **state)
{
	assert_string_equal(steps__phase_name(PH_MAX), "unknown");
	assert_string_equal(steps__phase_name((enum phase)1000), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(partition__random_overlaps__sum_to_step_and_match_reference),
		cmocka_unit_test(partition__sorted_lists__match_reference),
		cmocka_unit_test(partition__random_realistic_clock__phases_sum_to_step),
		cmocka_unit_test(partition__nothing_recorded__all_compute),
		cmocka_unit_test(partition__empty_or_inverted_step__all_zero),
		cmocka_unit_test(partition__comm_over_io__exact_ns),
		cmocka_unit_test(partition__io_over_input_wait__exact_ns),
		cmocka_unit_test(partition__input_wait_over_sched_delay__exact_ns),
		cmocka_unit_test(partition__sched_delay_over_comm_from__exact_ns),
		cmocka_unit_test(partition__blocked__other_over_compute),
		cmocka_unit_test(partition__futex_around_comm_from__input_then_comm),
		cmocka_unit_test(partition__poll_or_read_after_comm_from__still_input),
		cmocka_unit_test(partition__runnable_in_the_wait_for_collectives__starved_inside_them),
		cmocka_unit_test(partition__unknown_syscall__other_then_comm_after_comm_from),
		cmocka_unit_test(partition__sleep_after_comm_from__other),
		cmocka_unit_test(partition__comm_from_without_off_cpu__compute),
		cmocka_unit_test(partition__collective_over_everything__all_comm),
		cmocka_unit_test(partition__intervals_stick_out__clipped_to_step),
		cmocka_unit_test(partition__runq_longer_than_interval__all_sched_delay),
		cmocka_unit_test(partition__entry_only_collective__not_comm),
		cmocka_unit_test(partition__worker_io__not_main_thread),
		cmocka_unit_test(partition__each_fd_kind__own_phase),
		cmocka_unit_test(partition__ddp_step__exact_ns),
		cmocka_unit_test(input_syscall__waits_and_short_reads__true),
		cmocka_unit_test(input_syscall__others__false),
		cmocka_unit_test(phase_name__every_phase__its_name),
		cmocka_unit_test(phase_name__out_of_range__unknown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
