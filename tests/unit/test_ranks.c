// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* ranks: rank/local rank/world size/job from each launcher's environment, and order fallback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "ranks.h"

#define ENV(lit) (lit), (sizeof(lit) - 1)

static void from_environ__torch__all_fields(void **state)
{
	struct rank_info ri;

	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("HOME=/root\0RANK=3\0LOCAL_RANK=1\0"
						 "WORLD_SIZE=8\0TORCHELASTIC_RUN_ID=job-42\0"), &ri), 1);
	assert_int_equal(ri.rank, 3);
	assert_int_equal(ri.local_rank, 1);
	assert_int_equal(ri.world_size, 8);
	assert_string_equal(ri.job, "job-42");
	assert_int_equal(ri.src, RANK_SRC_ENV);
	assert_string_equal(ri.src_var, "RANK");
}

static void from_environ__openmpi__all_fields(void **state)
{
	struct rank_info ri;

	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("OMPI_COMM_WORLD_SIZE=4\0"
						 "OMPI_COMM_WORLD_RANK=2\0"
						 "OMPI_COMM_WORLD_LOCAL_RANK=0\0"
						 "PMIX_NAMESPACE=prterun-host-1234@1\0"), &ri), 1);
	assert_int_equal(ri.rank, 2);
	assert_int_equal(ri.local_rank, 0);
	assert_int_equal(ri.world_size, 4);
	assert_string_equal(ri.job, "prterun-host-1234@1");
	assert_string_equal(ri.src_var, "OMPI_COMM_WORLD_RANK");
}

static void from_environ__pmi__rank_and_size(void **state)
{
	struct rank_info ri;

	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("PMI_RANK=5\0PMI_SIZE=6\0"), &ri), 1);
	assert_int_equal(ri.rank, 5);
	assert_int_equal(ri.world_size, 6);
	assert_int_equal(ri.local_rank, -1);
	assert_string_equal(ri.job, "");
	assert_string_equal(ri.src_var, "PMI_RANK");
}

static void from_environ__slurm__rank_and_job(void **state)
{
	struct rank_info ri;

	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("SLURM_JOB_ID=123456\0SLURM_PROCID=7\0"
						 "SLURM_NTASKS=8\0SLURM_LOCALID=3\0"), &ri), 1);
	assert_int_equal(ri.rank, 7);
	assert_int_equal(ri.local_rank, 3);
	assert_int_equal(ri.world_size, 8);
	assert_string_equal(ri.job, "123456");
	assert_string_equal(ri.src_var, "SLURM_PROCID");
}

static void from_environ__rank_and_ompi__rank_wins(void **state)
{
	struct rank_info ri;

	/* OpenMPI's variable comes first in the block: precedence is by name, not position */
	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("OMPI_COMM_WORLD_RANK=2\0SLURM_PROCID=6\0"
						 "RANK=1\0"), &ri), 1);
	assert_int_equal(ri.rank, 1);
	assert_string_equal(ri.src_var, "RANK");
	/* and TORCHELASTIC_RUN_ID over SLURM_JOB_ID */
	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("SLURM_JOB_ID=99\0RANK=0\0"
						 "TORCHELASTIC_RUN_ID=te\0"), &ri), 1);
	assert_string_equal(ri.job, "te");
	/* torchrun's default run id "none" is shared by every job: the next variable names it */
	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("SLURM_JOB_ID=99\0RANK=0\0"
						 "TORCHELASTIC_RUN_ID=none\0"), &ri), 1);
	assert_string_equal(ri.job, "99");
	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("RANK=0\0TORCHELASTIC_RUN_ID=none\0"), &ri), 1);
	assert_string_equal(ri.job, "");
}

static void from_environ__malformed_rank__ignored(void **state)
{
	static const struct {
		const char *env;
		size_t len;
	} bad[] = {
		{ ENV("RANK=abc\0") },
		{ ENV("RANK=-1\0") },
		{ ENV("RANK=99999999999\0") },
		{ ENV("RANK=\0") },
		{ ENV("RANK=1x\0") },
		{ ENV("RANK=1048576\0") },	/* RANK_MAX: one past the last valid rank */
	};
	struct rank_info ri;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ranks__init(&ri);
		if (ranks__from_environ(bad[i].env, bad[i].len, &ri) != 0)
			fail_msg("accepted '%s' as a rank", bad[i].env);
		assert_int_equal(ri.rank, -1);
		assert_int_equal(ri.src, RANK_SRC_NONE);
		assert_string_equal(ri.src_var, "");
	}
	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("RANK=1048575\0"), &ri), 1);
	assert_int_equal(ri.rank, RANK_MAX - 1);
}

static void from_environ__malformed_rank__next_variable_used(void **state)
{
	struct rank_info ri;

	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("RANK=abc\0OMPI_COMM_WORLD_RANK=2\0"), &ri), 1);
	assert_int_equal(ri.rank, 2);
	assert_string_equal(ri.src_var, "OMPI_COMM_WORLD_RANK");
}

static void from_environ__malformed_size__ignored(void **state)
{
	struct rank_info ri;

	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("RANK=0\0WORLD_SIZE=0\0LOCAL_RANK=-1\0"), &ri), 1);
	assert_int_equal(ri.world_size, -1);
	assert_int_equal(ri.local_rank, -1);
	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("RANK=0\0WORLD_SIZE=99999999999\0"), &ri), 1);
	assert_int_equal(ri.world_size, -1);
}

static void from_environ__rank_not_below_world_size__not_found(void **state)
{
	struct rank_info ri;

	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("RANK=4\0WORLD_SIZE=4\0"), &ri), 0);
	assert_int_equal(ri.rank, -1);
	assert_int_equal(ri.src, RANK_SRC_NONE);
	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("RANK=3\0WORLD_SIZE=4\0"), &ri), 1);
	assert_int_equal(ri.rank, 3);
}

static void from_environ__no_rank__not_found(void **state)
{
	struct rank_info ri;

	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("HOME=/root\0RANKX=3\0MY_RANK=1\0"), &ri), 0);
	assert_int_equal(ri.rank, -1);
	assert_int_equal(ranks__from_environ("", 0, &ri), 0);
}

static void from_environ__hostile_job__rejected(void **state)
{
	static const struct {
		const char *env;
		size_t len;
	} bad[] = {
		{ ENV("RANK=0\0TORCHELASTIC_RUN_ID=a\"b\0") },
		{ ENV("RANK=0\0TORCHELASTIC_RUN_ID=a\nb\0") },
		{ ENV("RANK=0\0TORCHELASTIC_RUN_ID=a\\b\0") },
		{ ENV("RANK=0\0TORCHELASTIC_RUN_ID=a b\0") },
		{ ENV("RANK=0\0TORCHELASTIC_RUN_ID={x}\0") },
		{ ENV("RANK=0\0TORCHELASTIC_RUN_ID=\xc3\xa9\0") },
		{ ENV("RANK=0\0TORCHELASTIC_RUN_ID=\0") },
	};
	struct rank_info ri;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ranks__init(&ri);
		assert_int_equal(ranks__from_environ(bad[i].env, bad[i].len, &ri), 1);
		if (ri.job[0])
			fail_msg("accepted hostile job id '%s'", ri.job);
	}
}

static void from_environ__hostile_job__falls_back_to_next(void **state)
{
	struct rank_info ri;

	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("TORCHELASTIC_RUN_ID=x'y\0SLURM_JOB_ID=77\0"
						 "RANK=0\0"), &ri), 1);
	assert_string_equal(ri.job, "77");
}

static void from_environ__job_too_long__rejected(void **state)
{
	char env[512];
	size_t len;
	struct rank_info ri;

	/* 127 characters fit job[128]; 128 do not, and truncating would merge two jobs */
	len = (size_t)snprintf(env, sizeof(env), "RANK=0%cTORCHELASTIC_RUN_ID=%0127d%c", 0, 0, 0);
	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(env, len, &ri), 1);
	assert_int_equal(strlen(ri.job), 127);
	len = (size_t)snprintf(env, sizeof(env), "RANK=0%cTORCHELASTIC_RUN_ID=%0128d%c", 0, 0, 0);
	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(env, len, &ri), 1);
	assert_string_equal(ri.job, "");
}

static void assign_by_order__gaps__lowest_free(void **state)
{
	struct rank_info ris[5];
	int i;

	for (i = 0; i < 5; i++)
		ranks__init(&ris[i]);
	ris[0].rank = 0;
	ris[0].src = RANK_SRC_ENV;
	ris[2].rank = 2;
	ris[2].src = RANK_SRC_COMM_INIT;
	ris[4].rank = 3;
	ris[4].src = RANK_SRC_ENV;
	assert_int_equal(ranks__assign_by_order(ris, 5), 2);
	assert_int_equal(ris[1].rank, 1);
	assert_int_equal(ris[1].src, RANK_SRC_ORDER);
	assert_int_equal(ris[3].rank, 4);
	assert_int_equal(ris[3].src, RANK_SRC_ORDER);
	/* known ranks are untouched */
	assert_int_equal(ris[0].rank, 0);
	assert_int_equal(ris[2].rank, 2);
	assert_int_equal(ris[4].rank, 3);
	assert_int_equal(ris[4].src, RANK_SRC_ENV);
}

static void assign_by_order__taken_later__skipped(void **state)
{
	struct rank_info ris[3];
	int i;

	/* the rank taken belongs to a process after the unknown ones */
	for (i = 0; i < 3; i++)
		ranks__init(&ris[i]);
	ris[2].rank = 0;
	ris[2].src = RANK_SRC_ENV;
	assert_int_equal(ranks__assign_by_order(ris, 3), 2);
	assert_int_equal(ris[0].rank, 1);
	assert_int_equal(ris[1].rank, 2);
}

static void assign_by_order__all_known__none_assigned(void **state)
{
	struct rank_info ris[2];

	ranks__init(&ris[0]);
	ranks__init(&ris[1]);
	ris[0].rank = 1;
	ris[0].src = RANK_SRC_ENV;
	ris[1].rank = 0;
	ris[1].src = RANK_SRC_ENV;
	assert_int_equal(ranks__assign_by_order(ris, 2), 0);
	assert_int_equal(ris[0].rank, 1);
	assert_int_equal(ris[1].rank, 0);
	assert_int_equal(ranks__assign_by_order(ris, 0), 0);
}

static void assign_by_order__all_unknown__in_order(void **state)
{
	struct rank_info ris[4];
	int i;

	for (i = 0; i < 4; i++)
		ranks__init(&ris[i]);
	assert_int_equal(ranks__assign_by_order(ris, 4), 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(ris[i].rank, i);
		assert_int_equal(ris[i].src, RANK_SRC_ORDER);
	}
}

static void source_name__each__name(void **state)
{
	assert_string_equal(ranks__source_name(RANK_SRC_ENV), "environ");
	assert_string_equal(ranks__source_name(RANK_SRC_COMM_INIT), "comm_init");
	assert_string_equal(ranks__source_name(RANK_SRC_ORDER), "order");
	assert_string_equal(ranks__source_name(RANK_SRC_NONE), "none");
	assert_string_equal(ranks__source_name((enum rank_source)42), "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(from_environ__torch__all_fields),
		cmocka_unit_test(from_environ__openmpi__all_fields),
		cmocka_unit_test(from_environ__pmi__rank_and_size),
		cmocka_unit_test(from_environ__slurm__rank_and_job),
		cmocka_unit_test(from_environ__rank_and_ompi__rank_wins),
		cmocka_unit_test(from_environ__malformed_rank__ignored),
		cmocka_unit_test(from_environ__malformed_rank__next_variable_used),
		cmocka_unit_test(from_environ__malformed_size__ignored),
		cmocka_unit_test(from_environ__rank_not_below_world_size__not_found),
		cmocka_unit_test(from_environ__no_rank__not_found),
		cmocka_unit_test(from_environ__hostile_job__rejected),
		cmocka_unit_test(from_environ__hostile_job__falls_back_to_next),
		cmocka_unit_test(from_environ__job_too_long__rejected),
		cmocka_unit_test(assign_by_order__gaps__lowest_free),
		cmocka_unit_test(assign_by_order__taken_later__skipped),
		cmocka_unit_test(assign_by_order__all_known__none_assigned),
		cmocka_unit_test(assign_by_order__all_unknown__in_order),
		cmocka_unit_test(source_name__each__name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
