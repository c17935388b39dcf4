// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* decode: validating ring-buffer record decoder and the wire enums' names. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "decode.h"

/* Room for the largest record plus a newer ABI's tail. */
static uint8_t rec[512] __attribute__((aligned(8)));

static void *mkrec(unsigned int kind, size_t size)
{
	struct rs_hdr h = {
		.size = size, .kind = kind, .tgid = 4242, .tid = 4243, .slot = 7,
		.ts_ns = 123456789,
	};

	memset(rec, 0xa5, sizeof(rec));
	memset(rec, 0, size);
	memcpy(rec, &h, sizeof(h));
	return rec;
}

static void check_hdr(const struct rs_event *ev, unsigned int kind)
{
	assert_int_equal(ev->kind, kind);
	assert_int_equal(ev->h.kind, kind);
	assert_int_equal(ev->h.tgid, 4242);
	assert_int_equal(ev->h.tid, 4243);
	assert_int_equal(ev->h.slot, 7);
	assert_true(ev->h.ts_ns == 123456789);
}

static void event__offcpu__decoded(void **state)
{
	struct rs_ev_offcpu *r = mkrec(RS_EV_OFFCPU, sizeof(*r));
	struct rs_event ev;

	r->start_ns = 100;
	r->end_ns = 300;
	r->runq_ns = 50;
	r->state = 2;
	assert_int_equal(decode__event(r, sizeof(*r), &ev), 0);
	check_hdr(&ev, RS_EV_OFFCPU);
	assert_true(ev.offcpu.start_ns == 100 && ev.offcpu.end_ns == 300);
	assert_true(ev.offcpu.runq_ns == 50 && ev.offcpu.state == 2);
}

static void event__exit__decoded(void **state)
{
	struct rs_ev_exit *r = mkrec(RS_EV_EXIT, sizeof(*r));
	struct rs_event ev;

	r->exit_code = 9;
	r->flags = RS_TRACK_ROOT;
	assert_int_equal(decode__event(r, sizeof(*r), &ev), 0);
	check_hdr(&ev, RS_EV_EXIT);
	assert_int_equal(ev.exit.exit_code, 9);
	assert_int_equal(ev.exit.flags, RS_TRACK_ROOT);
}

static void event__fork__decoded(void **state)
{
	struct rs_ev_fork *r = mkrec(RS_EV_FORK, sizeof(*r));
	struct rs_event ev;

	r->child_tgid = 5555;
	assert_int_equal(decode__event(r, sizeof(*r), &ev), 0);
	check_hdr(&ev, RS_EV_FORK);
	assert_int_equal(ev.fork.child_tgid, 5555);
}

static void event__io__decoded(void **state)
{
	struct rs_ev_io *r = mkrec(RS_EV_IO, sizeof(*r));
	struct rs_event ev;

	r->start_ns = 10;
	r->end_ns = 20;
	r->ret = -11;
	r->fd = 3;
	r->op = RS_IO_RECVMSG;
	r->fd_kind = RS_FD_SOCK;
	assert_int_equal(decode__event(r, sizeof(*r), &ev), 0);
	check_hdr(&ev, RS_EV_IO);
	assert_true(ev.io.start_ns == 10 && ev.io.end_ns == 20 && ev.io.ret == -11);
	assert_int_equal(ev.io.fd, 3);
	assert_int_equal(ev.io.op, RS_IO_RECVMSG);
	assert_int_equal(ev.io.fd_kind, RS_FD_SOCK);
}

static void event__tcp_state_and_retrans__decoded(void **state)
{
	static const unsigned int kinds[] = { RS_EV_TCP_STATE, RS_EV_TCP_RETRANS };
	struct rs_ev_tcp *r;
	struct rs_event ev;
	size_t i;

	for (i = 0; i < 2; i++) {
		r = mkrec(kinds[i], sizeof(*r));
		r->saddr[15] = 1;
		r->daddr[15] = 2;
		r->sport = 29500;
		r->dport = 40000;
		r->family = 10;
		r->oldstate = 1;
		r->newstate = 8;
		r->srtt_us = 321;
		assert_int_equal(decode__event(r, sizeof(*r), &ev), 0);
		check_hdr(&ev, kinds[i]);
		assert_int_equal(ev.tcp.saddr[15], 1);
		assert_int_equal(ev.tcp.daddr[15], 2);
		assert_int_equal(ev.tcp.sport, 29500);
		assert_int_equal(ev.tcp.dport, 40000);
		assert_int_equal(ev.tcp.family, 10);
		assert_int_equal(ev.tcp.oldstate, 1);
		assert_int_equal(ev.tcp.newstate, 8);
		assert_int_equal(ev.tcp.srtt_us, 321);
	}
}

static void event__coll__decoded(void **state)
{
	struct rs_ev_coll *r = mkrec(RS_EV_COLL, sizeof(*r));
	struct rs_event ev;

	r->enter_ns = 1000;
	r->exit_ns = 5000;
	r->comm = 0xdeadbeef;
	r->seq = 17;
	r->count = 1 << 20;
	r->dtype = 7;
	r->stream = 0xabc;
	r->ret = 0;
	r->peer = -1;
	r->lib = RS_LIB_NCCL;
	r->op = RS_OP_ALLREDUCE;
	r->depth = 1;
	assert_int_equal(decode__event(r, sizeof(*r), &ev), 0);
	check_hdr(&ev, RS_EV_COLL);
	assert_true(ev.coll.enter_ns == 1000 && ev.coll.exit_ns == 5000);
	assert_true(ev.coll.comm == 0xdeadbeef && ev.coll.seq == 17);
	assert_true(ev.coll.count == 1 << 20 && ev.coll.dtype == 7 && ev.coll.stream == 0xabc);
	assert_int_equal(ev.coll.peer, -1);
	assert_int_equal(ev.coll.lib, RS_LIB_NCCL);
	assert_int_equal(ev.coll.op, RS_OP_ALLREDUCE);
	assert_int_equal(ev.coll.depth, 1);
	/* the last byte of the struct is copied too */
	((uint8_t *)r)[sizeof(*r) - 1] = 0x5a;
	assert_int_equal(decode__event(r, sizeof(*r), &ev), 0);
	assert_int_equal(((uint8_t *)&ev.coll)[sizeof(*r) - 1], 0x5a);
}

static void event__comm_init__decoded(void **state)
{
	struct rs_ev_comm_init *r = mkrec(RS_EV_COMM_INIT, sizeof(*r));
	struct rs_event ev;
	int i;

	r->comm = 0x1234;
	r->nranks = 8;
	r->rank = 5;
	r->ret = 0;
	r->lib = RS_LIB_NCCL;
	for (i = 0; i < RS_UNIQUE_ID_BYTES; i++)
		r->unique_id[i] = i;
	assert_int_equal(decode__event(r, sizeof(*r), &ev), 0);
	check_hdr(&ev, RS_EV_COMM_INIT);
	assert_true(ev.init.comm == 0x1234);
	assert_int_equal(ev.init.nranks, 8);
	assert_int_equal(ev.init.rank, 5);
	assert_memory_equal(ev.init.unique_id, r->unique_id, RS_UNIQUE_ID_BYTES);
}

static void event__short_buffer__einval(void **state)
{
	struct rs_event ev;
	size_t len;

	mkrec(RS_EV_FORK, sizeof(struct rs_ev_fork));
	for (len = 0; len < sizeof(struct rs_hdr); len++) {
		if (decode__event(rec, len, &ev) != -EINVAL)
			fail_msg("accepted a %zu-byte buffer", len);
	}
}

static void event__size_beyond_len__einval(void **state)
{
	struct rs_event ev;

	mkrec(RS_EV_FORK, sizeof(struct rs_ev_fork));
	assert_int_equal(decode__event(rec, sizeof(struct rs_ev_fork) - 1, &ev), -EINVAL);
	mkrec(RS_EV_COMM_INIT, sizeof(struct rs_ev_comm_init));
	assert_int_equal(decode__event(rec, sizeof(struct rs_hdr), &ev), -EINVAL);
}

static void event__size_below_header__einval(void **state)
{
	struct rs_event ev;
	struct rs_hdr *h;

	mkrec(RS_EV_FORK, sizeof(struct rs_ev_fork));
	h = (struct rs_hdr *)rec;
	h->size = 0;
	assert_int_equal(decode__event(rec, sizeof(struct rs_ev_fork), &ev), -EINVAL);
	h->size = sizeof(*h) - 1;
	assert_int_equal(decode__event(rec, sizeof(struct rs_ev_fork), &ev), -EINVAL);
}

static void event__size_below_kind_struct__einval(void **state)
{
	static const struct {
		unsigned int kind;
		size_t size;
	} k[] = {
		{ RS_EV_OFFCPU, sizeof(struct rs_ev_offcpu) },
		{ RS_EV_EXIT, sizeof(struct rs_ev_exit) },
		{ RS_EV_FORK, sizeof(struct rs_ev_fork) },
		{ RS_EV_IO, sizeof(struct rs_ev_io) },
		{ RS_EV_TCP_STATE, sizeof(struct rs_ev_tcp) },
		{ RS_EV_TCP_RETRANS, sizeof(struct rs_ev_tcp) },
		{ RS_EV_COLL, sizeof(struct rs_ev_coll) },
		{ RS_EV_COMM_INIT, sizeof(struct rs_ev_comm_init) },
		{ RS_EV_EXEC, sizeof(struct rs_ev_exec) },
	};
	struct rs_event ev;
	size_t i;

	assert_int_equal(sizeof(k) / sizeof(k[0]), RS_EV_KIND_MAX - 1);
	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		/* the buffer is large enough: only hdr.size is short */
		mkrec(k[i].kind, k[i].size - 1);
		if (decode__event(rec, sizeof(rec), &ev) != -EINVAL)
			fail_msg("kind %u: accepted size %zu < %zu", k[i].kind, k[i].size - 1,
				 k[i].size);
		mkrec(k[i].kind, sizeof(struct rs_hdr));
		if (decode__event(rec, sizeof(rec), &ev) != -EINVAL)
			fail_msg("kind %u: accepted a bare header", k[i].kind);
		mkrec(k[i].kind, k[i].size);
		if (decode__event(rec, k[i].size, &ev) != 0)
			fail_msg("kind %u: refused its exact size %zu", k[i].kind, k[i].size);
	}
}

static void event__unknown_kind__enotsup(void **state)
{
	static const unsigned int bad[] = { 0, RS_EV_KIND_MAX, RS_EV_KIND_MAX + 1, 0xffff };
	struct rs_event ev;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mkrec(bad[i], 64);
		if (decode__event(rec, 64, &ev) != -ENOTSUP)
			fail_msg("kind %u not refused with -ENOTSUP", bad[i]);
	}
}

static void event__newer_abi_tail__accepted_tail_ignored(void **state)
{
	struct rs_ev_fork *r = mkrec(RS_EV_FORK, sizeof(struct rs_ev_fork) + 24);
	struct rs_event ev;
	const uint8_t *p = (const uint8_t *)&ev.h;
	size_t i;

	r->child_tgid = 99;
	memset((uint8_t *)r + sizeof(*r), 0xee, 24);
	assert_int_equal(decode__event(r, sizeof(*r) + 24, &ev), 0);
	assert_int_equal(ev.kind, RS_EV_FORK);
	assert_int_equal(ev.fork.child_tgid, 99);
	assert_int_equal(ev.h.size, sizeof(*r) + 24);
	/* nothing beyond what this build knows was copied */
	for (i = sizeof(*r); i < sizeof(*r) + 24; i++)
		assert_int_equal(p[i], 0);
	/* a buffer longer than the record (ring-buffer padding) is fine too */
	assert_int_equal(decode__event(r, sizeof(rec), &ev), 0);
}

static void family__each_kind__its_family(void **state)
{
	assert_int_equal(decode__family(RS_EV_OFFCPU), RS_FAM_SCHED);
	assert_int_equal(decode__family(RS_EV_EXIT), RS_FAM_SCHED);
	assert_int_equal(decode__family(RS_EV_FORK), RS_FAM_SCHED);
	assert_int_equal(decode__family(RS_EV_EXEC), RS_FAM_SCHED);
	assert_int_equal(decode__family(RS_EV_IO), RS_FAM_IO);
	assert_int_equal(decode__family(RS_EV_TCP_STATE), RS_FAM_NET);
	assert_int_equal(decode__family(RS_EV_TCP_RETRANS), RS_FAM_NET);
	assert_int_equal(decode__family(RS_EV_COLL), RS_FAM_COLL);
	assert_int_equal(decode__family(RS_EV_COMM_INIT), RS_FAM_COLL);
	assert_int_equal(decode__family(0), -1);
	assert_int_equal(decode__family(RS_EV_KIND_MAX), -1);
	assert_int_equal(decode__family(~0u), -1);
}

static void names__in_range__known(void **state)
{
	unsigned int i;

	assert_string_equal(decode__family_name(RS_FAM_SCHED), "sched");
	assert_string_equal(decode__family_name(RS_FAM_COLL), "collectives");
	assert_string_equal(decode__op_name(RS_OP_ALLREDUCE), "allreduce");
	assert_string_equal(decode__op_name(RS_OP_REDUCE_SCATTER), "reduce_scatter");
	assert_string_equal(decode__op_name(RS_OP_STEP_BACKWARD), "ddp_finalize_backward");
	assert_string_equal(decode__lib_name(RS_LIB_NCCL), "nccl");
	assert_string_equal(decode__lib_name(RS_LIB_TORCH), "torch");
	assert_string_equal(decode__fd_kind_name(RS_FD_SOCK), "socket");
	assert_string_equal(decode__io_op_name(RS_IO_READ), "read");
	assert_string_equal(decode__io_op_name(RS_IO_FIRST_WRITE), "write");
	assert_string_equal(decode__io_op_name(RS_IO_SENDMSG), "sendmsg");
	assert_string_equal(decode__tcp_state_name(1), "ESTABLISHED");
	assert_string_equal(decode__tcp_state_name(10), "LISTEN");
	assert_string_equal(decode__tcp_state_name(13), "BOUND_INACTIVE");
	/* no hole in any table: every value below MAX has a real name */
	for (i = 0; i < RS_FAM_MAX; i++)
		assert_string_not_equal(decode__family_name(i), "unknown");
	for (i = 0; i < RS_OP_MAX; i++)
		assert_string_not_equal(decode__op_name(i), "unknown");
	for (i = 0; i < RS_LIB_MAX; i++)
		assert_string_not_equal(decode__lib_name(i), "unknown");
	for (i = 0; i < RS_FD_MAX; i++)
		assert_string_not_equal(decode__fd_kind_name(i), "unknown");
	for (i = 0; i < RS_IO_OP_MAX; i++)
		assert_string_not_equal(decode__io_op_name(i), "unknown");
}

static void names__out_of_range__unknown(void **state)
{
	assert_string_equal(decode__family_name(RS_FAM_MAX), "unknown");
	assert_string_equal(decode__family_name(~0u), "unknown");
	assert_string_equal(decode__op_name(RS_OP_MAX), "unknown");
	assert_string_equal(decode__op_name(255), "unknown");
	assert_string_equal(decode__lib_name(RS_LIB_MAX), "unknown");
	assert_string_equal(decode__fd_kind_name(RS_FD_MAX), "unknown");
	assert_string_equal(decode__io_op_name(RS_IO_OP_MAX), "unknown");
	assert_string_equal(decode__tcp_state_name(0), "UNKNOWN");
	assert_string_equal(decode__tcp_state_name(14), "UNKNOWN");
	assert_string_equal(decode__tcp_state_name(255), "UNKNOWN");
	assert_string_equal(decode__tcp_state_name(~0u), "UNKNOWN");
}

static void nccl_dtype_size__each__element_size(void **state)
{
	/* ncclDataType_t values from nccl.h 2.28 */
	assert_int_equal(decode__nccl_dtype_size(0), 1);	/* ncclInt8 */
	assert_int_equal(decode__nccl_dtype_size(2), 4);	/* ncclInt32 */
	assert_int_equal(decode__nccl_dtype_size(5), 8);	/* ncclUint64 */
	assert_int_equal(decode__nccl_dtype_size(6), 2);	/* ncclFloat16 */
	assert_int_equal(decode__nccl_dtype_size(7), 4);	/* ncclFloat32 */
	assert_int_equal(decode__nccl_dtype_size(8), 8);	/* ncclFloat64 */
	assert_int_equal(decode__nccl_dtype_size(9), 2);	/* ncclBfloat16 */
	assert_int_equal(decode__nccl_dtype_size(11), 1);	/* ncclFloat8e5m2 */
	assert_int_equal(decode__nccl_dtype_size(12), 0);	/* ncclNumTypes */
	assert_int_equal(decode__nccl_dtype_size(99), 0);
	assert_int_equal(decode__nccl_dtype_size(UINT64_MAX), 0);
	assert_int_equal(decode__nccl_dtype_size(1ULL << 32 | 7), 0);
}

static void addr__v4_mapped__dotted_quad(void **state)
{
	const uint8_t a[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3 };
	char out[64];

	assert_ptr_equal(decode__addr(a, out, sizeof(out)), out);
	assert_string_equal(out, "10.1.2.3");
}

static void addr__v6__compressed_form(void **state)
{
	const uint8_t a[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	const uint8_t v4compat_like[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe, 1, 2, 3, 4 };
	const uint8_t any[16] = { 0 };
	char out[64];

	assert_string_equal(decode__addr(a, out, sizeof(out)), "2001:db8::1");
	/* one byte off the v4-mapped prefix is a v6 address */
	assert_string_equal(decode__addr(v4compat_like, out, sizeof(out)), "::fffe:102:304");
	assert_string_equal(decode__addr(any, out, sizeof(out)), "::");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(event__offcpu__decoded),
		cmocka_unit_test(event__exit__decoded),
		cmocka_unit_test(event__fork__decoded),
		cmocka_unit_test(event__io__decoded),
		cmocka_unit_test(event__tcp_state_and_retrans__decoded),
		cmocka_unit_test(event__coll__decoded),
		cmocka_unit_test(event__comm_init__decoded),
		cmocka_unit_test(event__short_buffer__einval),
		cmocka_unit_test(event__size_beyond_len__einval),
		cmocka_unit_test(event__size_below_header__einval),
		cmocka_unit_test(event__size_below_kind_struct__einval),
		cmocka_unit_test(event__unknown_kind__enotsup),
		cmocka_unit_test(event__newer_abi_tail__accepted_tail_ignored),
		cmocka_unit_test(family__each_kind__its_family),
		cmocka_unit_test(names__in_range__known),
		cmocka_unit_test(names__out_of_range__unknown),
		cmocka_unit_test(nccl_dtype_size__each__element_size),
		cmocka_unit_test(addr__v4_mapped__dotted_quad),
		cmocka_unit_test(addr__v6__compressed_form),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
