// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* gpu and gpu_wire: NCCL kernel classification, the daemon's decoder for the CUPTI library's
 * messages (bounds, versions, hostile lengths), per-rank accounting and the idle fraction. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gpu.h"
#include "gpu_wire.h"

#define C(s) gpu__classify((s), strlen(s))

static void classify__nccl_kernels__mangled_or_not(void **state)
{
	assert_int_equal(C("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), GPU_K_NCCL);
	assert_int_equal(C("ncclKernel_AllReduce_RING_LL_Sum_float"), GPU_K_NCCL);
	assert_int_equal(C("_Z29ncclDevKernel_AllReduce_Sum_f32_RING_LLP24ncclDevKernelArgsStorageILm4096EE"),
			 GPU_K_NCCL);
	assert_int_equal(C("_Z38ncclKernel_AllGather_RING_LL_Sum_int8_tP11ncclDevComm"), GPU_K_NCCL);
	assert_int_equal(C("void ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
			 GPU_K_NCCL);
	assert_int_equal(C("_ZN5cutlass6KernelINS_4gemm6kernel4GemmEEEvNT_6ParamsE"), GPU_K_COMPUTE);
	assert_int_equal(C("void at::native::vectorized_elementwise_kernel<4>"), GPU_K_COMPUTE);
	assert_int_equal(C("gemm_kernel_nccl"), GPU_K_COMPUTE);	/* not a prefix */
	assert_int_equal(C("nccl"), GPU_K_COMPUTE);
	assert_int_equal(C(""), GPU_K_COMPUTE);
	assert_int_equal(gpu__classify("ncclKernel_", 5), GPU_K_COMPUTE);	/* cut short */
}

static void names__ids__bounded(void **state)
{
	struct gpu_names *t = calloc(1, sizeof(*t));

	gpu_names__set(t, 7, "ncclDevKernel_X", 15);
	gpu_names__set(t, 0, "ncclDevKernel_X", 15);		/* no id 0 */
	gpu_names__set(t, RSC_NAMES_MAX_WIRE + 1, "ncclDevKernel_X", 15);
	assert_int_equal(gpu_names__class(t, 7), GPU_K_NCCL);
	assert_int_equal(gpu_names__class(t, 8), GPU_K_COMPUTE);	/* never named */
	assert_int_equal(gpu_names__class(t, RSC_NAMES_MAX_WIRE + 1), GPU_K_COMPUTE);
	assert_int_equal(gpu_names__class(NULL, 7), GPU_K_COMPUTE);
	assert_string_equal(gpu_names__text(t, 7), "ncclDevKernel_X");
	assert_null(gpu_names__text(t, 8));
	gpu_names__free(t);
}

static size_t mk_batch(char *buf, uint32_t nrec, const struct rsc_rec *r)
{
	struct rsc_batch b = {
		.h = { .magic = RSC_MAGIC, .version = RSC_VERSION, .type = RSC_BATCH },
		.nrec = nrec, .calib_err_ns = 250,
	};
	size_t len = sizeof(b) + nrec * sizeof(*r);

	b.h.len = len;
	memcpy(buf, &b, sizeof(b));
	memcpy(buf + sizeof(b), r, nrec * sizeof(*r));
	return len;
}

static void rec__longer_than_an_hour__refused(void **state)
{
	static char buf[RSC_MSG_MAX];
	struct rsc_rec r[3] = {
		{ .kind = RSC_REC_KERNEL, .start_ns = 1000, .end_ns = 1000 + GPU_WIRE_REC_MAX_NS },
		{ .kind = RSC_REC_KERNEL, .start_ns = 1000, .end_ns = 1001 + GPU_WIRE_REC_MAX_NS },
		{ .kind = RSC_REC_KERNEL, .start_ns = 1, .end_ns = UINT64_MAX },
	};
	struct gpu_msg m;
	struct rsc_rec out;
	size_t len = mk_batch(buf, 3, r);

	assert_int_equal(gpu_wire__decode(buf, len, &m), 0);
	assert_int_equal(gpu_wire__rec(&m, 0, &out), 0);	/* an hour exactly */
	assert_int_equal(gpu_wire__rec(&m, 1, &out), -EINVAL);
	assert_int_equal(gpu_wire__rec(&m, 2, &out), -EINVAL);	/* would overflow the sums */
}

static void decode__batch__records_checked(void **state)
{
	static char buf[RSC_MSG_MAX];
	struct rsc_rec r[3] = {
		{ .kind = RSC_REC_KERNEL, .start_ns = 100, .end_ns = 200, .value = 7 },
		{ .kind = RSC_REC_MEMCPY, .sub = RSC_COPY_MAX, .start_ns = 1, .end_ns = 2 },
		{ .kind = RSC_REC_SYNC, .start_ns = 300, .end_ns = 299 },
	};
	struct gpu_msg m;
	struct rsc_rec out;
	size_t len = mk_batch(buf, 3, r);

	assert_int_equal(gpu_wire__decode(buf, len, &m), 0);
	assert_int_equal(m.type, RSC_BATCH);
	assert_int_equal(m.batch.nrec, 3);
	assert_int_equal(m.batch.calib_err_ns, 250);
	assert_int_equal(gpu_wire__rec(&m, 0, &out), 0);
	assert_int_equal(out.value, 7);
	assert_int_equal(gpu_wire__rec(&m, 1, &out), -EINVAL);	/* no such direction */
	assert_int_equal(gpu_wire__rec(&m, 2, &out), -EINVAL);	/* ends before it starts */
	assert_int_equal(gpu_wire__rec(&m, 3, &out), -EINVAL);	/* past the count */
	/* the count must match the length exactly, both ways */
	assert_int_equal(gpu_wire__decode(buf, len - 1, &m), -EINVAL);
	((struct rsc_batch *)buf)->nrec = 2;
	assert_int_equal(gpu_wire__decode(buf, len, &m), -EINVAL);
	((struct rsc_batch *)buf)->nrec = UINT32_MAX;
	assert_int_equal(gpu_wire__decode(buf, len, &m), -EINVAL);
}

static void decode__header__magic_version_len_type(void **state)
{
	struct rsc_status st = {
		.h = { .magic = RSC_MAGIC, .version = RSC_VERSION, .type = RSC_STATUS,
		       .len = sizeof(st) },
		.state = RSC_ST_NO_DRIVER,
	};
	struct gpu_msg m;

	memset(st.detail, 'x', sizeof(st.detail));	/* no NUL: the decoder adds one */
	assert_int_equal(gpu_wire__decode(&st, sizeof(st), &m), 0);
	assert_int_equal(strlen(m.status.detail), sizeof(st.detail) - 1);
	assert_int_equal(gpu_wire__decode(&st, sizeof(st) - 1, &m), -EINVAL);	/* len mismatch */
	assert_int_equal(gpu_wire__decode(&st, 4, &m), -EINVAL);
	assert_int_equal(gpu_wire__decode(NULL, 0, &m), -EINVAL);
	st.state = RSC_ST_MAX;
	assert_int_equal(gpu_wire__decode(&st, sizeof(st), &m), -EINVAL);
	st.state = RSC_ST_READY;
	st.h.version = RSC_VERSION + 1;
	assert_int_equal(gpu_wire__decode(&st, sizeof(st), &m), -EPROTO);
	st.h.version = RSC_VERSION;
	st.h.magic = 0;
	assert_int_equal(gpu_wire__decode(&st, sizeof(st), &m), -EINVAL);
	st.h.magic = RSC_MAGIC;
	st.h.type = RSC_ENABLE;		/* only the daemon sends that */
	assert_int_equal(gpu_wire__decode(&st, sizeof(st), &m), -ENOTSUP);
	st.h.type = 200;
	assert_int_equal(gpu_wire__decode(&st, sizeof(st), &m), -EINVAL);
}

static void decode__name__length_bounds(void **state)
{
	char buf[sizeof(struct rsc_name) + RSC_NAME_MAX + 1];
	struct rsc_name *n = (struct rsc_name *)buf;
	struct gpu_msg m;

	*n = (struct rsc_name){ .h = { .magic = RSC_MAGIC, .version = RSC_VERSION, .type = RSC_NAME,
				       .len = sizeof(*n) + 4 }, .id = 3, .len = 4 };
	memcpy(buf + sizeof(*n), "ncclX", 5);
	assert_int_equal(gpu_wire__decode(buf, sizeof(*n) + 4, &m), 0);
	assert_int_equal(m.name.len, 4);
	assert_memory_equal(m.name.text, "nccl", 4);
	n->len = 5;		/* says more than the message holds */
	assert_int_equal(gpu_wire__decode(buf, sizeof(*n) + 4, &m), -EINVAL);
	n->len = RSC_NAME_MAX + 1;
	n->h.len = sizeof(*n) + RSC_NAME_MAX + 1;
	assert_int_equal(gpu_wire__decode(buf, n->h.len, &m), -EINVAL);
	n->len = 4;
	n->h.len = sizeof(*n) + 4;
	n->id = 0;
	assert_int_equal(gpu_wire__decode(buf, sizeof(*n) + 4, &m), -EINVAL);
}

static void acc__records__by_class_and_direction(void **state)
{
	struct gpu_names *t = calloc(1, sizeof(*t));
	struct gpu_acc a = {};
	struct rsc_rec k = { .kind = RSC_REC_KERNEL, .start_ns = 1000, .end_ns = 1500, .value = 2 };
	struct rsc_rec c = { .kind = RSC_REC_MEMCPY, .sub = RSC_COPY_HTOD, .start_ns = 10,
			     .end_ns = 30, .value = 4096 };

	gpu_names__set(t, 2, "ncclDevKernel_AllReduce", 23);
	assert_int_equal(gpu__on_rec(&a, t, &k), GPU_K_NCCL);
	k.value = 3;
	assert_int_equal(gpu__on_rec(&a, t, &k), GPU_K_COMPUTE);
	assert_int_equal(gpu__on_rec(&a, t, &c), GPU_K_MAX);
	assert_int_equal(a.kernel_ns[GPU_K_NCCL], 500);
	assert_int_equal(a.kernel_ns[GPU_K_COMPUTE], 500);
	assert_int_equal(a.copy_bytes[RSC_COPY_HTOD], 4096);
	assert_int_equal(a.copy_ns[RSC_COPY_HTOD], 20);
	assert_int_equal(a.received, 3);
	gpu_names__free(t);	/* and t */
}

static void idle__last_8_steps(void **state)
{
	struct gpu_acc a = {};
	int i;

	assert_true(isnan(gpu__idle_fraction(&a)));
	for (i = 0; i < 20; i++)
		gpu__on_step(&a, 900, 1000);	/* old steps: 10% idle */
	for (i = 0; i < 8; i++)
		gpu__on_step(&a, 250, 1000);	/* the last 8: 75% idle */
	assert_float_equal(gpu__idle_fraction(&a), 0.75, 1e-9);
	gpu__on_step(&a, 5000, 1000);		/* busy over wall (overlap): capped */
	assert_true(gpu__idle_fraction(&a) >= 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(classify__nccl_kernels__mangled_or_not),
		cmocka_unit_test(names__ids__bounded),
		cmocka_unit_test(rec__longer_than_an_hour__refused),
		cmocka_unit_test(decode__batch__records_checked),
		cmocka_unit_test(decode__header__magic_version_len_type),
		cmocka_unit_test(decode__name__length_bounds),
		cmocka_unit_test(acc__records__by_class_and_direction),
		cmocka_unit_test(idle__last_8_steps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
