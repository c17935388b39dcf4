// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * cupti/records.c: CUPTI activity records to wire records (every kind kept, and the older record
 * layouts a different CUPTI hands over), the clock calibration, the timeline of calibrations
 * (clock steps, another client's TSC), the buffer pool lent to CUPTI, the kernel-name table and
 * the bounded queue. Records are the real structs of the CUDA toolkit's CUPTI headers; no CUPTI
 * library and no GPU are involved.
 */
#ifdef RSC_TEST_NO_CUPTI
#include <stdio.h>

int main(void)
{
	printf("SKIP: no CUPTI headers (cupti.h): cupti/records.c cannot be built\n");
	return 77;
}
#else
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include <cupti_activity.h>
#include <cupti_activity_deprecated.h>
#include "rs_cupti.h"

/* CUPTI's clock 1000 s ahead of CLOCK_MONOTONIC, as the CUPTI test double has it */
#define AHEAD_NS	1000000000000LL
#define CUPTI_T(mono)	((uint64_t)((mono) + AHEAD_NS))

static const struct rsc_clock clk = { .offset_ns = -AHEAD_NS, .err_ns = 7, .valid = true };

/* A record of any layout at the start of a CUPTI buffer: what follows it is more buffer. */
union any_rec {
	CUpti_Activity a;
	CUpti_ActivityKernel10 k10;
	CUpti_ActivityKernel9 k9;
	CUpti_ActivityKernel8 k8;
	CUpti_ActivityKernel7 k7;
	CUpti_ActivityKernel6 k6;
	CUpti_ActivityKernel5 k5;
	CUpti_ActivityKernel4 k4;
	CUpti_ActivityMemcpy6 m6;
	CUpti_ActivityMemcpy5 m5;
	CUpti_ActivityMemcpy m1;
	CUpti_ActivityMemcpyPtoP4 p4;
	CUpti_ActivityMemcpyPtoP2 p2;
	CUpti_ActivityMemcpyPtoP p1;
	CUpti_ActivityMemset4 s4;
	CUpti_ActivityMemset3 s3;
	CUpti_ActivityMemset s1;
	CUpti_ActivitySynchronization2 y2;
	CUpti_ActivitySynchronization y1;
	CUpti_ActivityAPI api;
	uint8_t raw[512];
};

static void expect_times(const struct rsc_rec *r, int64_t start_mono, int64_t end_mono)
{
	assert_int_equal(r->start_ns, start_mono);
	assert_int_equal(r->end_ns, end_mono);
}

/* ---- rsc_convert ---- */

#define FILL_KERNEL(k, kd)				\
	do {						\
		(k).kind = (kd);			\
		(k).start = CUPTI_T(5000000000LL);	\
		(k).end = CUPTI_T(5000300000LL);	\
		(k).deviceId = 3;			\
		(k).contextId = 1;			\
		(k).streamId = 13;			\
		(k).correlationId = 77;			\
		(k).name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"; \
	} while (0)

static void check_kernel(const union any_rec *u)
{
	struct rsc_rec r;
	const char *name = (const char *)1;

	memset(&r, 0xa5, sizeof(r));
	assert_int_equal(rsc_convert(u, &clk, &r, &name), 1);
	assert_int_equal(r.kind, RSC_REC_KERNEL);
	assert_int_equal(r.sub, 0);
	assert_int_equal(r.device, 3);
	assert_int_equal(r.stream, 13);
	assert_int_equal(r.correlation, 77);
	assert_int_equal(r.value, 0);	/* the name id: the caller's job */
	assert_int_equal(r.pad, 0);
	expect_times(&r, 5000000000LL, 5000300000LL);
	assert_string_equal(name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
}

static void convert__kernel10_concurrent__all_fields(void **state)
{
	union any_rec u = {};

	FILL_KERNEL(u.k10, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	check_kernel(&u);
}

static void convert__kernel_kind_serial__read_as_kernel(void **state)
{
	union any_rec u = {};

	FILL_KERNEL(u.k10, CUPTI_ACTIVITY_KIND_KERNEL);
	check_kernel(&u);
}

/* A CUPTI older than the headers writes Kernel4..Kernel9: the same fields at the same offsets. */
static void convert__kernel4_to_9_layouts__same_fields(void **state)
{
	union any_rec u;

#define OLD(f)								\
	do {								\
		memset(&u, 0, sizeof(u));				\
		FILL_KERNEL(u.f, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); \
		check_kernel(&u);					\
	} while (0)
	OLD(k4);
	OLD(k5);
	OLD(k6);
	OLD(k7);
	OLD(k8);
	OLD(k9);
#undef OLD
	/* everything read lies inside the oldest layout kept */
	assert_true(offsetof(CUpti_ActivityKernel10, name) + sizeof(char *) <=
		    sizeof(CUpti_ActivityKernel4));
}

static void convert__kernel_without_name__null_name(void **state)
{
	union any_rec u = {};
	struct rsc_rec r;
	const char *name;

	FILL_KERNEL(u.k10, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	u.k10.name = NULL;
	assert_int_equal(rsc_convert(&u, &clk, &r, &name), 1);
	assert_null(name);
}

static void convert__memcpy6__bytes_and_direction(void **state)
{
	static const struct {
		uint8_t cupti, wire;
	} dirs[] = {
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, RSC_COPY_HTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, RSC_COPY_HTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, RSC_COPY_DTOH },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, RSC_COPY_DTOH },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, RSC_COPY_DTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, RSC_COPY_DTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, RSC_COPY_DTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, RSC_COPY_DTOD },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, RSC_COPY_PEER },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, RSC_COPY_OTHER },
		{ CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, RSC_COPY_OTHER },
		{ 200, RSC_COPY_OTHER },
	};
	union any_rec u;
	struct rsc_rec r;
	const char *name;
	size_t i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		memset(&u, 0, sizeof(u));
		u.m6.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
		u.m6.copyKind = dirs[i].cupti;
		u.m6.bytes = (4ULL << 30) + i;	/* over 32 bits */
		u.m6.start = CUPTI_T(7000000000LL);
		u.m6.end = CUPTI_T(7000100000LL);
		u.m6.deviceId = 1;
		u.m6.streamId = 7;
		u.m6.correlationId = 100 + i;
		assert_int_equal(rsc_convert(&u, &clk, &r, &name), 1);
		assert_int_equal(r.kind, RSC_REC_MEMCPY);
		assert_int_equal(r.sub, dirs[i].wire);
		assert_int_equal(r.value, (4ULL << 30) + i);
		assert_int_equal(r.device, 1);
		assert_int_equal(r.stream, 7);
		assert_int_equal(r.correlation, 100 + i);
		expect_times(&r, 7000000000LL, 7000100000LL);
		assert_null(name);
	}
}

#define FILL_MEMCPY(m)						\
	do {							\
		(m).kind = CUPTI_ACTIVITY_KIND_MEMCPY;		\
		(m).copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;	\
		(m).bytes = 1 << 20;				\
		(m).start = CUPTI_T(10);			\
		(m).end = CUPTI_T(20);				\
		(m).deviceId = 2;				\
		(m).streamId = 9;				\
		(m).correlationId = 5;				\
	} while (0)

static void convert__memcpy5_and_memcpy1_layouts__same_fields(void **state)
{
	union any_rec u;
	struct rsc_rec r;
	const char *name;
	int v;

	for (v = 0; v < 2; v++) {
		memset(&u, 0, sizeof(u));
		if (v == 0)
			FILL_MEMCPY(u.m5);
		else
			FILL_MEMCPY(u.m1);
		assert_int_equal(rsc_convert(&u, &clk, &r, &name), 1);
		assert_int_equal(r.sub, RSC_COPY_DTOH);
		assert_int_equal(r.value, 1 << 20);
		assert_int_equal(r.device, 2);
		assert_int_equal(r.stream, 9);
		assert_int_equal(r.correlation, 5);
		expect_times(&r, 10, 20);
	}
}

static void convert__memcpy2_peer__ptop4_ptop2_ptop1(void **state)
{
	union any_rec u;
	struct rsc_rec r;
	const char *name;
	int v;

	for (v = 0; v < 3; v++) {
		memset(&u, 0, sizeof(u));
		if (v == 0) {
			u.p4.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
			u.p4.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;	/* not what sub says */
			u.p4.bytes = 3 << 20;
			u.p4.start = CUPTI_T(1000);
			u.p4.end = CUPTI_T(3000);
			u.p4.deviceId = 4;
			u.p4.srcDeviceId = 4;
			u.p4.dstDeviceId = 5;
			u.p4.streamId = 21;
			u.p4.correlationId = 9;
		} else if (v == 1) {
			u.p2.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
			u.p2.bytes = 3 << 20;
			u.p2.start = CUPTI_T(1000);
			u.p2.end = CUPTI_T(3000);
			u.p2.deviceId = 4;
			u.p2.streamId = 21;
			u.p2.correlationId = 9;
		} else {
			u.p1.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
			u.p1.bytes = 3 << 20;
			u.p1.start = CUPTI_T(1000);
			u.p1.end = CUPTI_T(3000);
			u.p1.deviceId = 4;
			u.p1.streamId = 21;
			u.p1.correlationId = 9;
		}
		assert_int_equal(rsc_convert(&u, &clk, &r, &name), 1);
		assert_int_equal(r.kind, RSC_REC_MEMCPY);
		assert_int_equal(r.sub, RSC_COPY_PEER);
		assert_int_equal(r.value, 3 << 20);
		assert_int_equal(r.device, 4);
		assert_int_equal(r.stream, 21);
		assert_int_equal(r.correlation, 9);
		expect_times(&r, 1000, 3000);
	}
}

static void convert__memset4_memset3_memset1__bytes(void **state)
{
	union any_rec u;
	struct rsc_rec r;
	const char *name;
	int v;

	for (v = 0; v < 3; v++) {
		memset(&u, 0, sizeof(u));
		if (v == 0) {
			u.s4.kind = CUPTI_ACTIVITY_KIND_MEMSET;
			u.s4.value = 0xff;
			u.s4.bytes = 65536;
			u.s4.start = CUPTI_T(40);
			u.s4.end = CUPTI_T(45);
			u.s4.deviceId = 1;
			u.s4.streamId = 7;
			u.s4.correlationId = 11;
		} else if (v == 1) {
			u.s3.kind = CUPTI_ACTIVITY_KIND_MEMSET;
			u.s3.value = 0xff;
			u.s3.bytes = 65536;
			u.s3.start = CUPTI_T(40);
			u.s3.end = CUPTI_T(45);
			u.s3.deviceId = 1;
			u.s3.streamId = 7;
			u.s3.correlationId = 11;
		} else {
			u.s1.kind = CUPTI_ACTIVITY_KIND_MEMSET;
			u.s1.value = 0xff;
			u.s1.bytes = 65536;
			u.s1.start = CUPTI_T(40);
			u.s1.end = CUPTI_T(45);
			u.s1.deviceId = 1;
			u.s1.streamId = 7;
			u.s1.correlationId = 11;
		}
		assert_int_equal(rsc_convert(&u, &clk, &r, &name), 1);
		assert_int_equal(r.kind, RSC_REC_MEMSET);
		assert_int_equal(r.value, 65536);	/* bytes, not the byte value set */
		assert_int_equal(r.device, 1);
		assert_int_equal(r.stream, 7);
		assert_int_equal(r.correlation, 11);
		expect_times(&r, 40, 45);
	}
}

static void convert__sync2_and_sync1__type_stream(void **state)
{
	union any_rec u;
	struct rsc_rec r;
	const char *name;
	int v;

	for (v = 0; v < 2; v++) {
		memset(&u, 0, sizeof(u));
		if (v == 0) {
			u.y2.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
			u.y2.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
			u.y2.start = CUPTI_T(500);
			u.y2.end = CUPTI_T(900);
			u.y2.correlationId = 31;
			u.y2.contextId = 1;
			u.y2.streamId = 7;
		} else {
			u.y1.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
			u.y1.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
			u.y1.start = CUPTI_T(500);
			u.y1.end = CUPTI_T(900);
			u.y1.correlationId = 31;
			u.y1.contextId = 1;
			u.y1.streamId = 7;
		}
		assert_int_equal(rsc_convert(&u, &clk, &r, &name), 1);
		assert_int_equal(r.kind, RSC_REC_SYNC);
		assert_int_equal(r.sub, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
		assert_int_equal(r.stream, 7);
		assert_int_equal(r.correlation, 31);
		expect_times(&r, 500, 900);
	}
}

static void convert__api_runtime_and_driver__sub_and_cbid(void **state)
{
	union any_rec u = {};
	struct rsc_rec r;
	const char *name;

	u.api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	u.api.cbid = 211;
	u.api.start = CUPTI_T(60);
	u.api.end = CUPTI_T(70);
	u.api.correlationId = 8;
	assert_int_equal(rsc_convert(&u, &clk, &r, &name), 1);
	assert_int_equal(r.kind, RSC_REC_API);
	assert_int_equal(r.sub, 1);
	assert_int_equal(r.value, 211);
	assert_int_equal(r.correlation, 8);
	expect_times(&r, 60, 70);
	u.api.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	assert_int_equal(rsc_convert(&u, &clk, &r, &name), 1);
	assert_int_equal(r.sub, 2);
}

static void convert__kind_not_kept__zero(void **state)
{
	static const CUpti_ActivityKind others[] = {
		CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_DEVICE,
		CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_NAME, CUPTI_ACTIVITY_KIND_INVALID,
	};
	union any_rec u;
	struct rsc_rec r;
	const char *name = (const char *)1;
	size_t i;

	for (i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		memset(&u, 0x5a, sizeof(u));
		u.a.kind = others[i];
		assert_int_equal(rsc_convert(&u, &clk, &r, &name), 0);
		assert_null(name);
	}
}

static void convert__zero_or_reversed_timestamps__clock_drop(void **state)
{
	union any_rec u = {};
	struct rsc_rec r;
	const char *name;

	FILL_KERNEL(u.k10, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	u.k10.start = 0;
	u.k10.end = 0;	/* CUPTI had no device memory to time it */
	assert_int_equal(rsc_convert(&u, &clk, &r, &name), -1);
	u.k10.start = CUPTI_T(100);
	u.k10.end = 0;
	assert_int_equal(rsc_convert(&u, &clk, &r, &name), -1);
	u.k10.start = 0;
	u.k10.end = CUPTI_T(100);
	assert_int_equal(rsc_convert(&u, &clk, &r, &name), -1);
	u.k10.start = CUPTI_T(100);
	u.k10.end = CUPTI_T(99);
	assert_int_equal(rsc_convert(&u, &clk, &r, &name), -1);
	u.k10.end = CUPTI_T(100);	/* zero length is a time, not an error */
	assert_int_equal(rsc_convert(&u, &clk, &r, &name), 1);
	expect_times(&r, 100, 100);
}

static void convert__clock_not_valid_or_before_zero__clock_drop(void **state)
{
	struct rsc_clock bad = clk;
	union any_rec u = {};
	struct rsc_rec r;
	const char *name;

	FILL_KERNEL(u.k10, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	bad.valid = false;
	assert_int_equal(rsc_convert(&u, &bad, &r, &name), -1);
	/* a timestamp from before the offset's epoch cannot be CLOCK_MONOTONIC */
	u.k10.start = 10;
	u.k10.end = 20;
	assert_int_equal(rsc_convert(&u, &clk, &r, &name), -1);
	/* CUPTI behind the monotonic clock: a positive offset */
	bad = (struct rsc_clock){ .offset_ns = 2000, .err_ns = 1, .valid = true };
	assert_int_equal(rsc_convert(&u, &bad, &r, &name), 1);
	expect_times(&r, 2010, 2020);
}

/* ---- rsc_clock_calibrate ---- */

static struct {
	const uint64_t *mono;	/* every mono_now() in order */
	const uint64_t *cupti;	/* every cupti_now(); 0 with fail set means a failed read */
	const int *fail;
	int mi, ci, nmono, ncupti;
} fk;

static uint64_t fake_mono(void)
{
	assert_true(fk.mi < fk.nmono);
	return fk.mono[fk.mi++];
}

static int fake_cupti(uint64_t *ts)
{
	int i = fk.ci++;

	assert_true(i < fk.ncupti);
	if (fk.fail && fk.fail[i])
		return -1;
	*ts = fk.cupti[i];
	return 0;
}

#define FAKE(m, c, f)								\
	do {									\
		fk.mono = (m);							\
		fk.nmono = sizeof(m) / sizeof((m)[0]);				\
		fk.cupti = (c);							\
		fk.ncupti = sizeof(c) / sizeof((c)[0]);				\
		fk.fail = (f);							\
		fk.mi = fk.ci = 0;						\
	} while (0)

static void calibrate__tightest_bracket__its_midpoint(void **state)
{
	/* (before, after) brackets 40, 10 and 30 ns wide */
	static const uint64_t mono[] = { 100, 140, 200, 210, 300, 330 };
	static const uint64_t cupti[] = { 1000, 2000, 3000 };
	struct rsc_clock c = {};

	FAKE(mono, cupti, NULL);
	assert_int_equal(rsc_clock_calibrate(&c, 3, fake_cupti, fake_mono), 0);
	assert_true(c.valid);
	assert_int_equal(c.offset_ns, 205 - 2000);
	assert_int_equal(c.err_ns, 5);
	assert_int_equal(fk.mi, 6);
}

static void calibrate__equal_widths__first_kept(void **state)
{
	static const uint64_t mono[] = { 100, 110, 200, 210 };
	static const uint64_t cupti[] = { 1000, 5000 };
	struct rsc_clock c = {};

	FAKE(mono, cupti, NULL);
	assert_int_equal(rsc_clock_calibrate(&c, 2, fake_cupti, fake_mono), 0);
	assert_int_equal(c.offset_ns, 105 - 1000);
}

static void calibrate__failed_zero_or_backwards_reads__skipped(void **state)
{
	/* read 0 fails (no "after"), read 1 is 0, read 2 goes backwards, read 3 is the only one */
	static const uint64_t mono[] = { 10, 20, 21, 40, 30, 50, 90 };
	static const uint64_t cupti[] = { 0, 0, 7000, 9000 };
	static const int fail[] = { 1, 0, 0, 0 };
	struct rsc_clock c = {};

	FAKE(mono, cupti, fail);
	assert_int_equal(rsc_clock_calibrate(&c, 4, fake_cupti, fake_mono), 0);
	assert_int_equal(c.offset_ns, 70 - 9000);
	assert_int_equal(c.err_ns, 20);
}

static void calibrate__nothing_read__minus_one_clock_kept(void **state)
{
	static const uint64_t mono[] = { 10, 20 };
	static const uint64_t cupti[] = { 0, 0 };
	static const int fail[] = { 1, 1 };
	struct rsc_clock c = { .offset_ns = 5, .err_ns = 6, .valid = true };

	FAKE(mono, cupti, fail);
	assert_int_equal(rsc_clock_calibrate(&c, 2, fake_cupti, fake_mono), -1);
	assert_int_equal(c.offset_ns, 5);
	assert_int_equal(c.err_ns, 6);
	assert_true(c.valid);
	assert_int_equal(rsc_clock_calibrate(&c, 0, fake_cupti, fake_mono), -1);
}

static void calibrate__then_convert__round_trip_within_err(void **state)
{
	/* CUPTI 1000 s ahead; the tight read brackets its timestamp with 3 ns either side */
	static const uint64_t mono[] = { 5000000000ULL, 5000000006ULL };
	static const uint64_t cupti[] = { 1005000000003ULL };
	struct rsc_clock c = {};
	union any_rec u = {};
	struct rsc_rec r;
	const char *name;

	FAKE(mono, cupti, NULL);
	assert_int_equal(rsc_clock_calibrate(&c, 1, fake_cupti, fake_mono), 0);
	assert_int_equal(c.offset_ns, -AHEAD_NS);
	assert_int_equal(c.err_ns, 3);
	u.s4.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	u.s4.start = 1005000000003ULL;
	u.s4.end = 1005000001003ULL;
	assert_int_equal(rsc_convert(&u, &c, &r, &name), 1);
	expect_times(&r, 5000000003LL, 5000001003LL);
}

/* ---- rsc_timeline ---- */

#define MS	1000000ULL
#define SEC	1000000000ULL
#define BASE	(5000 * SEC)		/* CLOCK_MONOTONIC at the first point */
#define REAL(m)	((m) + 1700000000 * SEC)	/* a CLOCK_REALTIME-like CUPTI clock */

static struct rsc_timeline tl;

static uint64_t map_ok(uint64_t t)
{
	uint64_t m = 0;

	assert_int_equal(rsc_timeline_map(&tl, t, &m), 0);
	return m;
}

static int map_rc(uint64_t t)
{
	uint64_t m;

	return rsc_timeline_map(&tl, t, &m);
}

/* points every 100 ms from mono a to b (inclusive) of clock f */
#define POINTS(a, b, f)								\
	do {									\
		uint64_t _m;							\
		for (_m = (a); _m <= (b); _m += 100 * MS)			\
			assert_true(rsc_timeline_add(&tl, f(_m), _m, 500) >= 0);	\
	} while (0)

static void timeline__one_clock__interpolated_wait_past_newest(void **state)
{
	rsc_timeline_reset(&tl);
	assert_int_equal(map_rc(REAL(BASE)), -EAGAIN);		/* no point yet */
	POINTS(BASE, BASE + 2 * SEC, REAL);
	assert_int_equal(tl.epochs, 0);
	assert_int_equal(map_ok(REAL(BASE)), BASE);
	assert_int_equal(map_ok(REAL(BASE + 1234567)), BASE + 1234567);
	assert_int_equal(map_ok(REAL(BASE + 2 * SEC)), BASE + 2 * SEC);
	/* made after the newest point: wait for the next calibration */
	assert_int_equal(map_rc(REAL(BASE + 2 * SEC + 50 * MS)), -EAGAIN);
	/* from the future, or from before the first point: no line to trust */
	assert_int_equal(map_rc(REAL(BASE + 5 * SEC)), -ERANGE);
	assert_int_equal(map_rc(REAL(BASE - 2 * MS)), -ERANGE);
	assert_int_equal(map_ok(REAL(BASE - MS / 2)), BASE - MS / 2);	/* within the 1 ms edge */
}

static uint64_t stepped;	/* the CUPTI clock's step, applied from mono `stepped_at` on */
static uint64_t stepped_at;

static uint64_t step_clock(uint64_t m)
{
	return REAL(m) + (m >= stepped_at ? stepped : 0);
}

static void timeline__clock_steps_an_hour__each_side_by_its_own_points(void **state)
{
	uint64_t at = BASE + 1 * SEC + 30 * MS;	/* between two points */

	rsc_timeline_reset(&tl);
	stepped = 3600 * SEC;
	stepped_at = at;
	POINTS(BASE, BASE + 1 * SEC, step_clock);
	assert_int_equal(rsc_timeline_add(&tl, step_clock(BASE + 1100 * MS), BASE + 1100 * MS, 500),
			 1);	/* the step starts an epoch */
	POINTS(BASE + 1200 * MS, BASE + 2 * SEC, step_clock);
	assert_int_equal(tl.epochs, 1);
	/* before the step, in the old epoch's points and in the gap after them */
	assert_int_equal(map_ok(step_clock(BASE + 500 * MS)), BASE + 500 * MS);
	assert_int_equal(map_ok(step_clock(BASE + 1 * SEC + 20 * MS)), BASE + 1 * SEC + 20 * MS);
	/* after the step: in the gap before the new epoch's first point, and in its points */
	assert_int_equal(map_ok(step_clock(BASE + 1 * SEC + 40 * MS)), BASE + 1 * SEC + 40 * MS);
	assert_int_equal(map_ok(step_clock(BASE + 1500 * MS)), BASE + 1500 * MS);
	/* an hour ahead of the old clock but before the step in host time: no epoch made it */
	assert_int_equal(map_rc(REAL(BASE + 500 * MS) + stepped), -ERANGE);
}

static uint64_t tsc(uint64_t m)
{
	return 777000000000000ULL + m * 2 + m / 10;
}

static uint64_t to_tsc_at;

static uint64_t switch_clock(uint64_t m)
{
	return m >= to_tsc_at ? tsc(m) : m;	/* our CLOCK_MONOTONIC callback, then a TSC */
}

static void timeline__another_clients_tsc__new_epoch_needs_two_points(void **state)
{
	uint64_t m;

	rsc_timeline_reset(&tl);
	to_tsc_at = BASE + 1050 * MS;
	POINTS(BASE, BASE + 1 * SEC, switch_clock);
	assert_int_equal(rsc_timeline_add(&tl, tsc(BASE + 1100 * MS), BASE + 1100 * MS, 500), 1);
	/* one TSC point: no rate yet, so its records wait */
	assert_int_equal(map_rc(tsc(BASE + 1080 * MS)), -EAGAIN);
	assert_int_equal(map_rc(tsc(BASE + 1120 * MS)), -EAGAIN);
	assert_int_equal(rsc_timeline_add(&tl, tsc(BASE + 1200 * MS), BASE + 1200 * MS, 500), 0);
	m = map_ok(tsc(BASE + 1080 * MS));	/* in the gap, extrapolated back */
	assert_true(m >= BASE + 1080 * MS - 2 && m <= BASE + 1080 * MS + 2);
	m = map_ok(tsc(BASE + 1150 * MS));
	assert_true(m >= BASE + 1150 * MS - 2 && m <= BASE + 1150 * MS + 2);
	/* the monotonic epoch still converts its own records, up to the switch */
	assert_int_equal(map_ok(BASE + 700 * MS), BASE + 700 * MS);
	assert_int_equal(map_ok(BASE + 1040 * MS), BASE + 1040 * MS);
}

static uint64_t slew(uint64_t m)
{
	return REAL(m) + (m - BASE) / 2000;	/* 500 ppm fast: NTP slewing at its limit */
}

static void timeline__slewing_clock__one_epoch_exact_at_points(void **state)
{
	uint64_t m;

	rsc_timeline_reset(&tl);
	POINTS(BASE, BASE + 20 * SEC, slew);
	assert_int_equal(tl.epochs, 0);
	for (m = BASE; m <= BASE + 20 * SEC; m += 333 * MS + 7) {
		uint64_t got = map_ok(slew(m));

		assert_true(got + 1 >= m && got <= m + 1);
	}
}

static void timeline__ring_wraps__old_records_of_the_epoch_bounded(void **state)
{
	rsc_timeline_reset(&tl);
	POINTS(BASE, BASE + (RSC_CAL_POINTS + 100) * 100 * MS, REAL);
	assert_int_equal(tl.n, RSC_CAL_POINTS);
	assert_true(tl.truncated);
	/* made before the oldest point kept: the epoch's line, up to RSC_CAL_KEEP_NS back */
	assert_int_equal(map_ok(REAL(BASE + 5 * SEC)), BASE + 5 * SEC);
	assert_int_equal(map_rc(REAL(BASE + 100 * 100 * MS - RSC_CAL_KEEP_NS - SEC)), -ERANGE);
}

static void timeline__bad_points__refused(void **state)
{
	rsc_timeline_reset(&tl);
	assert_int_equal(rsc_timeline_add(&tl, 0, BASE, 1), -EINVAL);
	assert_int_equal(rsc_timeline_add(&tl, REAL(BASE), 0, 1), -EINVAL);
	assert_int_equal(rsc_timeline_add(&tl, REAL(BASE), BASE, 1), 0);
	assert_int_equal(rsc_timeline_add(&tl, REAL(BASE + SEC), BASE - SEC, 1), -EINVAL);
	assert_int_equal(tl.n, 1);
	/* a clock that went back starts an epoch */
	assert_int_equal(rsc_timeline_add(&tl, REAL(BASE) - SEC, BASE + 100 * MS, 1), 1);
	assert_int_equal(map_rc(0), -ERANGE);
}

/* ---- rsc_pool ---- */

static struct rsc_pool pool;

static bool zeroed(const uint8_t *b, size_t n)
{
	while (n--)
		if (*b++)
			return false;
	return true;
}

static void pool__lend_all__then_none_or_the_spare(void **state)
{
	uint8_t *got[RSC_POOL_BUFS];
	int i, j;

	assert_int_equal(rsc_pool_init(&pool, 4096, false), 0);
	for (i = 0; i < RSC_POOL_BUFS; i++) {
		got[i] = rsc_pool_get(&pool);
		assert_non_null(got[i]);
		assert_true(zeroed(got[i], 4096));
		for (j = 0; j < i; j++)
			assert_ptr_not_equal(got[i], got[j]);
	}
	assert_null(rsc_pool_get(&pool));
	assert_int_equal(rsc_pool_count(&pool, RSC_BUF_OUT), RSC_POOL_BUFS);
	rsc_pool_free(&pool);

	/* CUPTI < 27: never NULL, the spare (shared) when every buffer is out */
	assert_int_equal(rsc_pool_init(&pool, 4096, true), 0);
	for (i = 0; i < RSC_POOL_BUFS; i++)
		assert_non_null(rsc_pool_get(&pool));
	assert_ptr_equal(rsc_pool_get(&pool), pool.spare);
	assert_ptr_equal(rsc_pool_get(&pool), pool.spare);
	assert_int_equal(atomic_load(&pool.spare_out), 2);
	assert_int_equal(rsc_pool_put(&pool, pool.spare, &j), RSC_PUT_SPARE);
	assert_int_equal(atomic_load(&pool.spare_out), 1);
	rsc_pool_free(&pool);
}

static void pool__back_dirty__zeroed_by_scrub_or_inline(void **state)
{
	uint8_t *a, *b, other[64];
	int slot, i;

	assert_int_equal(rsc_pool_init(&pool, 4096, false), 0);
	a = rsc_pool_get(&pool);
	memset(a, 0xab, 4096);			/* CUPTI wrote records */
	assert_int_equal(rsc_pool_put(&pool, a, &slot), RSC_PUT_OURS);
	/* held while the callback reads it: not lent, not zeroed */
	assert_int_equal(rsc_pool_count(&pool, RSC_BUF_SCRUB), 1);
	assert_int_equal(rsc_pool_scrub(&pool), 0);
	assert_int_equal(a[100], 0xab);
	rsc_pool_release(&pool, slot);
	assert_int_equal(rsc_pool_count(&pool, RSC_BUF_DIRTY), 1);
	assert_int_equal(rsc_pool_scrub(&pool), 1);
	assert_true(zeroed(a, 4096));
	assert_int_equal(rsc_pool_count(&pool, RSC_BUF_CLEAN), RSC_POOL_BUFS);
	/* twice back: the second is not ours any more */
	assert_int_equal(rsc_pool_put(&pool, a, &slot), RSC_PUT_NOT_OURS);
	assert_int_equal(rsc_pool_put(&pool, other, &slot), RSC_PUT_NOT_OURS);
	assert_int_equal(rsc_pool_put(&pool, NULL, &slot), RSC_PUT_NOT_OURS);

	/* every one out and back dirty, our thread behind: zeroed on the asking thread */
	for (i = 0; i < RSC_POOL_BUFS; i++) {
		b = rsc_pool_get(&pool);
		memset(b, 0xcd, 4096);
		assert_int_equal(rsc_pool_put(&pool, b, &slot), RSC_PUT_OURS);
		rsc_pool_release(&pool, slot);
	}
	b = rsc_pool_get(&pool);
	assert_non_null(b);
	assert_true(zeroed(b, 4096));
	assert_int_equal(atomic_load(&pool.zeroed_inline), 1);
	rsc_pool_free(&pool);
}

static void pool__taken_over__lost_renewed_ghost_freed(void **state)
{
	uint8_t *a, *b, *c;
	int slot;

	assert_int_equal(rsc_pool_init(&pool, 4096, false), 0);
	a = rsc_pool_get(&pool);
	b = rsc_pool_get(&pool);
	assert_int_equal(rsc_pool_abandon(&pool), 2);
	assert_int_equal(rsc_pool_count(&pool, RSC_BUF_LOST), 2);
	/* a lost one coming back before the renewal is ours again */
	assert_int_equal(rsc_pool_put(&pool, b, &slot), RSC_PUT_OURS);
	rsc_pool_release(&pool, slot);
	assert_int_equal(rsc_pool_renew(&pool), 1);
	assert_int_equal(rsc_pool_count(&pool, RSC_BUF_LOST), 0);
	assert_int_equal(rsc_pool_count(&pool, RSC_BUF_CLEAN), RSC_POOL_BUFS - 1);
	/* the renewed slot has new memory; the old buffer, back at last, is freed (ASan: no
	 * leak, no double free) */
	c = rsc_pool_get(&pool);
	assert_ptr_not_equal(c, a);
	assert_int_equal(rsc_pool_put(&pool, a, &slot), RSC_PUT_GHOST);
	assert_int_equal(rsc_pool_put(&pool, a, &slot), RSC_PUT_NOT_OURS);
	rsc_pool_free(&pool);
}

/* ---- rsc_names ---- */

static void names__same_name__same_id_fresh_once(void **state)
{
	struct rsc_names t = {};
	uint32_t len = 0;
	bool fresh;

	assert_null(rsc_names_get(&t, 1, &len));
	assert_int_equal(rsc_names_intern(&t, "gemm", &fresh), 1);
	assert_true(fresh);
	assert_int_equal(rsc_names_intern(&t, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", &fresh), 2);
	assert_true(fresh);
	assert_int_equal(rsc_names_intern(&t, "gemm", &fresh), 1);
	assert_false(fresh);
	assert_int_equal(rsc_names_intern(&t, "", &fresh), 3);	/* empty is a name too */
	assert_string_equal(rsc_names_get(&t, 2, &len), "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	assert_int_equal(len, strlen("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
	assert_null(rsc_names_get(&t, 4, &len));
	assert_null(rsc_names_get(&t, 0, &len));
	rsc_names_free(&t);
}

static void names__longer_than_max__cut_and_merged(void **state)
{
	struct rsc_names t = {};
	char a[RSC_NAME_MAX + 200], b[RSC_NAME_MAX + 200];
	const char *got;
	uint32_t len;
	bool fresh;

	memset(a, 'x', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(b, a, sizeof(b));
	b[RSC_NAME_MAX + 10] = 'y';	/* differs only past the cut */
	assert_int_equal(rsc_names_intern(&t, a, &fresh), 1);
	assert_int_equal(rsc_names_intern(&t, b, &fresh), 1);
	assert_false(fresh);
	got = rsc_names_get(&t, 1, &len);
	assert_int_equal(len, RSC_NAME_MAX);
	assert_memory_equal(got, a, RSC_NAME_MAX);
	b[RSC_NAME_MAX - 1] = 'y';	/* differs inside it */
	assert_int_equal(rsc_names_intern(&t, b, &fresh), 2);
	rsc_names_free(&t);
}

static void names__table_full__zero_for_new_known_still_found(void **state)
{
	struct rsc_names t = {};
	char name[32];
	uint32_t i, len;
	bool fresh;

	for (i = 0; i < RSC_NAMES_MAX; i++) {
		snprintf(name, sizeof(name), "kernel_%u", i);
		assert_int_equal(rsc_names_intern(&t, name, &fresh), i + 1);
	}
	assert_int_equal(rsc_names_intern(&t, "one_too_many", &fresh), 0);
	assert_false(fresh);
	assert_int_equal(rsc_names_intern(&t, "kernel_0", &fresh), 1);
	snprintf(name, sizeof(name), "kernel_%u", RSC_NAMES_MAX - 1);
	assert_int_equal(rsc_names_intern(&t, name, &fresh), RSC_NAMES_MAX);
	assert_string_equal(rsc_names_get(&t, RSC_NAMES_MAX, &len), name);
	assert_int_equal(t.n, RSC_NAMES_MAX);
	rsc_names_free(&t);
}

static void names__text_bound__zero_past_name_bytes_max(void **state)
{
	struct rsc_names t = {};
	char name[RSC_NAME_MAX + 1];
	uint32_t i, fit = RSC_NAME_BYTES_MAX / RSC_NAME_MAX;
	bool fresh;

	assert_true(fit < RSC_NAMES_MAX);	/* else the count bound comes first */
	memset(name, 'n', RSC_NAME_MAX);
	name[RSC_NAME_MAX] = '\0';
	for (i = 0; i < fit; i++) {
		snprintf(name, sizeof(name), "%08u", i);
		name[8] = 'n';
		assert_int_equal(rsc_names_intern(&t, name, &fresh), i + 1);
	}
	assert_int_equal(t.bytes, (size_t)fit * RSC_NAME_MAX);
	snprintf(name, sizeof(name), "%08u", i);
	name[8] = 'n';
	assert_int_equal(rsc_names_intern(&t, name, &fresh), 0);
	assert_int_equal(rsc_names_intern(&t, "s", &fresh), 0);
	rsc_names_free(&t);
}

static void names__free__empty_and_reusable(void **state)
{
	struct rsc_names t = {};
	uint32_t len;
	bool fresh;

	rsc_names_free(&t);	/* never used: a no-op */
	assert_int_equal(rsc_names_intern(&t, "a", &fresh), 1);
	rsc_names_free(&t);
	assert_null(t.ent);
	assert_int_equal(t.n, 0);
	assert_int_equal(t.bytes, 0);
	assert_null(rsc_names_get(&t, 1, &len));
	assert_int_equal(rsc_names_intern(&t, "b", &fresh), 1);
	rsc_names_free(&t);
}

/* ---- rsc_queue ---- */

static void recs(struct rsc_rec *r, size_t n, uint32_t first)
{
	size_t i;

	memset(r, 0, n * sizeof(*r));
	for (i = 0; i < n; i++) {
		r[i].kind = RSC_REC_KERNEL;
		r[i].correlation = first + i;
	}
}

static int q_setup(void **state)
{
	struct rsc_queue *q = calloc(1, sizeof(*q));

	if (!q || rsc_queue_init(q))
		return -1;
	*state = q;
	return 0;
}

static int q_teardown(void **state)
{
	struct rsc_queue *q = *state;

	rsc_queue_free(q);
	rsc_queue_free(q);	/* twice: a no-op */
	free(q);
	return 0;
}

static void queue__put_take__fifo(void **state)
{
	struct rsc_queue *q = *state;
	struct rsc_rec in[3], out[8];

	recs(in, 3, 1);
	rsc_queue_put(q, in, 3);
	assert_int_equal(rsc_queue_take(q, out, 2), 2);
	assert_int_equal(out[0].correlation, 1);
	assert_int_equal(out[1].correlation, 2);
	assert_int_equal(rsc_queue_take(q, out, 8), 1);
	assert_int_equal(out[0].correlation, 3);
	assert_int_equal(rsc_queue_take(q, out, 8), 0);
	assert_int_equal(q->dropped, 0);
}

static void queue__across_the_ring_end__order_kept(void **state)
{
	struct rsc_queue *q = *state;
	struct rsc_rec *buf = calloc(RSC_QUEUE_RECS, sizeof(*buf));
	size_t i;

	assert_non_null(buf);
	recs(buf, RSC_QUEUE_RECS - 10, 1);
	rsc_queue_put(q, buf, RSC_QUEUE_RECS - 10);
	assert_int_equal(rsc_queue_take(q, buf, RSC_QUEUE_RECS), RSC_QUEUE_RECS - 10);
	recs(buf, 100, 1000000);	/* 10 before the end, 90 after */
	rsc_queue_put(q, buf, 100);
	memset(buf, 0, 100 * sizeof(*buf));
	assert_int_equal(rsc_queue_take(q, buf, RSC_QUEUE_RECS), 100);
	for (i = 0; i < 100; i++)
		assert_int_equal(buf[i].correlation, 1000000 + i);
	assert_int_equal(q->dropped, 0);
	free(buf);
}

static void queue__full__newest_dropped_and_counted(void **state)
{
	struct rsc_queue *q = *state;
	struct rsc_rec *buf = calloc(RSC_QUEUE_RECS + 5, sizeof(*buf));
	size_t i;

	assert_non_null(buf);
	recs(buf, RSC_QUEUE_RECS + 5, 1);
	rsc_queue_put(q, buf, RSC_QUEUE_RECS + 5);
	assert_int_equal(q->len, RSC_QUEUE_RECS);
	assert_int_equal(q->dropped, 5);
	rsc_queue_put(q, buf, 3);
	assert_int_equal(q->dropped, 8);
	memset(buf, 0, RSC_QUEUE_RECS * sizeof(*buf));
	assert_int_equal(rsc_queue_take(q, buf, RSC_QUEUE_RECS + 5), RSC_QUEUE_RECS);
	for (i = 0; i < RSC_QUEUE_RECS; i++)
		assert_int_equal(buf[i].correlation, 1 + i);
	free(buf);
}

static void queue__unget__back_at_the_front_in_order(void **state)
{
	struct rsc_queue *q = *state;
	struct rsc_rec in[5], out[5];
	size_t i;

	recs(in, 5, 1);
	rsc_queue_put(q, in, 5);
	assert_int_equal(rsc_queue_take(q, out, 3), 3);
	rsc_queue_unget(q, out, 3);
	memset(out, 0, sizeof(out));
	assert_int_equal(rsc_queue_take(q, out, 5), 5);
	for (i = 0; i < 5; i++)
		assert_int_equal(out[i].correlation, 1 + i);
	assert_int_equal(q->dropped, 0);
}

/* Records arrive between a take and its unget (CUPTI's thread) and fill the queue. */
static void queue__unget_into_full__counted_order_kept(void **state)
{
	struct rsc_queue *q = *state;
	struct rsc_rec *buf = calloc(RSC_QUEUE_RECS, sizeof(*buf));
	struct rsc_rec taken[3];
	size_t i;

	assert_non_null(buf);
	recs(buf, RSC_QUEUE_RECS, 1);
	rsc_queue_put(q, buf, RSC_QUEUE_RECS);
	assert_int_equal(rsc_queue_take(q, taken, 3), 3);
	recs(buf, 2, RSC_QUEUE_RECS + 1);
	rsc_queue_put(q, buf, 2);
	rsc_queue_unget(q, taken, 3);	/* room for one */
	assert_int_equal(q->len, RSC_QUEUE_RECS);
	assert_int_equal(q->dropped, 2);
	assert_int_equal(rsc_queue_take(q, buf, RSC_QUEUE_RECS), RSC_QUEUE_RECS);
	for (i = 1; i < RSC_QUEUE_RECS; i++)
		assert_true(buf[i].correlation > buf[i - 1].correlation);
	assert_int_equal(buf[RSC_QUEUE_RECS - 1].correlation, RSC_QUEUE_RECS + 2);
	free(buf);
}

#define PRODUCED	(1u << 21)
#define CHUNK		256	/* what the buffer callback puts at once */

static void *producer(void *arg)
{
	struct rsc_queue *q = arg;
	struct rsc_rec r[CHUNK];
	uint32_t n;

	for (n = 0; n < PRODUCED; n += CHUNK) {
		recs(r, CHUNK, n + 1);
		rsc_queue_put(q, r, CHUNK);
	}
	return NULL;
}

/* CUPTI's thread puts while the sender takes and ungets: nothing lost uncounted, no reordering. */
static void queue__concurrent_put_take_unget__all_accounted(void **state)
{
	struct rsc_queue *q = *state;
	static struct rsc_rec out[RSC_BATCH_MAX];
	uint64_t got = 0, last = 0;
	bool done = false;
	pthread_t t;
	size_t n, i;
	int round = 0;

	assert_int_equal(pthread_create(&t, NULL, producer, q), 0);
	while (!done) {
		done = !pthread_tryjoin_np(t, NULL);
		while ((n = rsc_queue_take(q, out, RSC_BATCH_MAX))) {
			if (++round % 3 == 0) {	/* "the socket was full" */
				rsc_queue_unget(q, out, n);
				break;
			}
			for (i = 0; i < n; i++) {
				assert_true(out[i].correlation > last);
				last = out[i].correlation;
			}
			got += n;
		}
	}
	while ((n = rsc_queue_take(q, out, RSC_BATCH_MAX))) {
		for (i = 0; i < n; i++) {
			assert_true(out[i].correlation > last);
			last = out[i].correlation;
		}
		got += n;
	}
	print_message("queue: %llu taken, %llu dropped of %u\n", (unsigned long long)got,
		      (unsigned long long)q->dropped, PRODUCED);
	assert_int_equal(got + q->dropped, PRODUCED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(convert__kernel10_concurrent__all_fields),
		cmocka_unit_test(convert__kernel_kind_serial__read_as_kernel),
		cmocka_unit_test(convert__kernel4_to_9_layouts__same_fields),
		cmocka_unit_test(convert__kernel_without_name__null_name),
		cmocka_unit_test(convert__memcpy6__bytes_and_direction),
		cmocka_unit_test(convert__memcpy5_and_memcpy1_layouts__same_fields),
		cmocka_unit_test(convert__memcpy2_peer__ptop4_ptop2_ptop1),
		cmocka_unit_test(convert__memset4_memset3_memset1__bytes),
		cmocka_unit_test(convert__sync2_and_sync1__type_stream),
		cmocka_unit_test(convert__api_runtime_and_driver__sub_and_cbid),
		cmocka_unit_test(convert__kind_not_kept__zero),
		cmocka_unit_test(convert__zero_or_reversed_timestamps__clock_drop),
		cmocka_unit_test(convert__clock_not_valid_or_before_zero__clock_drop),
		cmocka_unit_test(calibrate__tightest_bracket__its_midpoint),
		cmocka_unit_test(calibrate__equal_widths__first_kept),
		cmocka_unit_test(calibrate__failed_zero_or_backwards_reads__skipped),
		cmocka_unit_test(calibrate__nothing_read__minus_one_clock_kept),
		cmocka_unit_test(calibrate__then_convert__round_trip_within_err),
		cmocka_unit_test(timeline__one_clock__interpolated_wait_past_newest),
		cmocka_unit_test(timeline__clock_steps_an_hour__each_side_by_its_own_points),
		cmocka_unit_test(timeline__another_clients_tsc__new_epoch_needs_two_points),
		cmocka_unit_test(timeline__slewing_clock__one_epoch_exact_at_points),
		cmocka_unit_test(timeline__ring_wraps__old_records_of_the_epoch_bounded),
		cmocka_unit_test(timeline__bad_points__refused),
		cmocka_unit_test(pool__lend_all__then_none_or_the_spare),
		cmocka_unit_test(pool__back_dirty__zeroed_by_scrub_or_inline),
		cmocka_unit_test(pool__taken_over__lost_renewed_ghost_freed),
		cmocka_unit_test(names__same_name__same_id_fresh_once),
		cmocka_unit_test(names__longer_than_max__cut_and_merged),
		cmocka_unit_test(names__table_full__zero_for_new_known_still_found),
		cmocka_unit_test(names__text_bound__zero_past_name_bytes_max),
		cmocka_unit_test(names__free__empty_and_reusable),
		cmocka_unit_test_setup_teardown(queue__put_take__fifo, q_setup, q_teardown),
		cmocka_unit_test_setup_teardown(queue__across_the_ring_end__order_kept, q_setup,
						q_teardown),
		cmocka_unit_test_setup_teardown(queue__full__newest_dropped_and_counted, q_setup,
						q_teardown),
		cmocka_unit_test_setup_teardown(queue__unget__back_at_the_front_in_order, q_setup,
						q_teardown),
		cmocka_unit_test_setup_teardown(queue__unget_into_full__counted_order_kept, q_setup,
						q_teardown),
		cmocka_unit_test_setup_teardown(queue__concurrent_put_take_unget__all_accounted,
						q_setup, q_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif /* RSC_TEST_NO_CUPTI */
