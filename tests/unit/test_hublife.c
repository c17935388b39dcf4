// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* user/hub/hublife.c: two nodes' /api/v1/jobs joined into one life per job, on answers whose
 * truth is known: rank 1 (node b) killed first, rank 0 (node a, the checkpoint writer) exiting
 * after it; both relaunched. And hostile or partial answers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "hublife.h"

/* node a: rank 0 wrote the checkpoint; its rank exited 1 half a second after rank 1 died */
static const char node_a[] =
	"[{\"type\":\"job\",\"job\":\"j1\",\"state\":\"running\",\"ranks_here\":true,"
	"\"run_id\":1700000100.500,\"failures\":{\"signal\":0,\"exit_code\":1,\"hang\":0},"
	"\"recoveries\":1,\"lost_steps_total\":3,\"lost_step_seconds_total\":0.9,"
	"\"last_failure\":{\"reason\":\"exit_code\",\"rank\":0,\"exit_code\":1,\"phase\":\"comm\","
	"\"at\":1700000050.500,\"checkpoint_age_seconds\":1.2,\"checkpoint_seen\":true,"
	"\"lost_steps\":3,\"lost_step_seconds\":0.9,\"detail\":\"rank 0 exited with status 1\"},"
	"\"last_recovery\":{\"seconds\":8.1,\"at\":1700000058.600,\"in_place\":false},"
	"\"timeline\":[{\"t\":1700000040,\"event\":\"started\",\"detail\":\"a\"},"
	"{\"t\":1700000050.5,\"event\":\"failed\",\"detail\":\"a\"}]}]";
/* node b: rank 1 killed by signal 9; it saw no checkpoint; back a little later than node a */
static const char node_b[] =
	"[{\"type\":\"job\",\"job\":\"j1\",\"state\":\"running\",\"ranks_here\":true,"
	"\"run_id\":1700000100.700,\"failures\":{\"signal\":1,\"exit_code\":0,\"hang\":0},"
	"\"recoveries\":1,\"lost_steps_total\":40,\"lost_step_seconds_total\":12,"
	"\"last_failure\":{\"reason\":\"signal\",\"rank\":1,\"signal\":9,\"phase\":\"compute\","
	"\"at\":1700000050.000,\"checkpoint_age_seconds\":12,\"checkpoint_seen\":false,"
	"\"lost_steps\":40,\"lost_step_seconds\":12,\"detail\":\"rank 1 killed by signal 9\"},"
	"\"last_recovery\":{\"seconds\":9.0,\"at\":1700000059.000,\"in_place\":false},"
	"\"timeline\":[{\"t\":1700000040,\"event\":\"started\",\"detail\":\"b\"},"
	"{\"t\":1700000050,\"event\":\"failed\",\"detail\":\"b<script>\"},"
	"{\"t\":1700000058,\"event\":\"started\",\"detail\":\"b\"},"
	"{\"t\":1700000059,\"event\":\"recovered\",\"detail\":\"b\"}]}]";

static const char *name(int node, void *ctx)
{
	return node == 0 ? "node-a:9464" : "node-b:9464";
}

static void two_nodes__one_life_the_earliest_cause_the_writer_s_checkpoint(void **state)
{
	struct hublife hl = {};
	struct prom p;
	struct json j;
	char err[128];

	assert_int_equal(hublife__feed(&hl, 0, node_a, strlen(node_a), err, sizeof(err)), 0);
	assert_int_equal(hublife__feed(&hl, 1, node_b, strlen(node_b), err, sizeof(err)), 0);
	assert_int_equal(hl.nj, 1);
	prom__init(&p);
	hublife__metrics(&hl, &p);
	assert_false(p.err);
	assert_non_null(strstr(p.buf, "rankscope_job_failures_total{job_id=\"j1\",reason=\"signal\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_failures_total{job_id=\"j1\",reason=\"exit_code\"} 0\n"));
	/* from the cause (node b, 50.0) to the last node back (node b, 59.0) */
	assert_non_null(strstr(p.buf, "job_recovery_seconds{job_id=\"j1\"} 9\n"));
	/* the checkpoint writer's node: its age and its lost steps */
	/* as of the cause (node b, 0.5 s before node a's own failure) */
	assert_non_null(strstr(p.buf, "job_checkpoint_age_at_failure_seconds{job_id=\"j1\"} 0.7\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_recovery_seconds_count{job_id=\"j1\"} 0\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_lost_steps_total{job_id=\"j1\"} 3\n"));
	assert_non_null(strstr(p.buf, "train_run_id{job_id=\"j1\"} 1700000100.7\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_lifecycle_state{job_id=\"j1\",state=\"running\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_recoveries_total{job_id=\"j1\"} 1\n"));
	prom__free(&p);
	/* the round is over: the recovery both nodes saw goes into the histogram, once */
	hublife__round(&hl);
	hublife__round(&hl);
	prom__init(&p);
	hublife__metrics(&hl, &p);
	assert_non_null(strstr(p.buf, "rankscope_job_recovery_seconds_count{job_id=\"j1\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_recovery_seconds_bucket{job_id=\"j1\",le=\"10\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_recovery_seconds_bucket{job_id=\"j1\",le=\"5\"} 0\n"));
	prom__free(&p);
	json__init(&j);
	hublife__json(&hl, &j, name, NULL);
	assert_false(j.err);
	assert_non_null(strstr(j.buf, "\"reason\":\"signal\",\"rank\":1,\"signal\":9,"
				      "\"phase\":\"compute\",\"node\":\"node-b:9464\""));
	assert_non_null(strstr(j.buf, "\"checkpoint_age_seconds\":0.7,\"checkpoint_seen\":true,"
				      "\"lost_steps\":3"));
	assert_non_null(strstr(j.buf, "\"event\":\"recovered\""));
	assert_non_null(strstr(j.buf, "b<script>"));	/* text, escaped by the writer if need be */
	json__free(&j);

	/* node b fails again and is not back: the job is failed until it is */
	{
		char again[sizeof(node_b) + 64];

		snprintf(again, sizeof(again), "%s", node_b);
		memcpy(strstr(again, "\"running\""), "\"failed\" ", 9);
		assert_int_equal(hublife__feed(&hl, 1, again, strlen(again), err, sizeof(err)), 0);
	}
	prom__init(&p);
	hublife__metrics(&hl, &p);
	assert_non_null(strstr(p.buf, "rankscope_job_lifecycle_state{job_id=\"j1\",state=\"failed\"} 1\n"));
	prom__free(&p);

	/* node a no longer lists the job, node b is gone: nothing is left */
	assert_int_equal(hublife__feed(&hl, 0, "[]", 2, err, sizeof(err)), 0);
	assert_int_equal(hl.nj, 1);
	hublife__node_gone(&hl, 1);
	assert_int_equal(hl.nj, 0);
	hublife__free(&hl);
}

static void hostile_answers__refused_or_bounded(void **state)
{
	static const char *const bad[] = { "", "{}", "[", "nope", "[1,2]" };
	struct hublife hl = {};
	char err[128], big[4096];
	struct prom p;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		hublife__feed(&hl, 0, bad[i], strlen(bad[i]), err, sizeof(err));
	assert_int_equal(hl.nj, 0);
	assert_int_equal(hublife__feed(&hl, 0, "{}", 2, err, sizeof(err)), -EINVAL);
	/* a job id too long, missing or empty is left out; wrong types read as nothing */
	memset(big, 'x', sizeof(big));
	memcpy(big, "[{\"job\":\"", 9);
	memcpy(big + sizeof(big) - 5, "\"}]  ", 5);
	assert_int_equal(hublife__feed(&hl, 0, big, sizeof(big) - 2, err, sizeof(err)), 0);
	assert_int_equal(hublife__feed(&hl, 0, "[{\"job\":\"\"},{\"state\":1},"
				       "{\"job\":\"k\",\"failures\":7,\"last_failure\":[],\"timeline\":{},"
				       "\"recoveries\":-3,\"run_id\":\"x\"}]", 110, err, sizeof(err)), 0);
	assert_int_equal(hl.nj, 1);
	/* a failure without a time but with a checkpoint: no cause, so no age (the fuzzer's find) */
	static const char notime[] = "[{\"job\":\"k\",\"last_failure\":{\"checkpoint_seen\":true,"
				     "\"checkpoint_age_seconds\":5}}]";
	assert_int_equal(hublife__feed(&hl, 0, notime, strlen(notime), err, sizeof(err)), 0);
	prom__init(&p);
	hublife__metrics(&hl, &p);
	assert_false(p.err);
	assert_null(strstr(p.buf, "job_checkpoint_age_at_failure_seconds{"));
	assert_non_null(strstr(p.buf, "rankscope_job_lifecycle_state{job_id=\"k\",state=\"running\"} 1\n"));
	assert_null(strstr(p.buf, "job_recovery_seconds{"));
	prom__free(&p);
	hublife__free(&hl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_nodes__one_life_the_earliest_cause_the_writer_s_checkpoint),
		cmocka_unit_test(hostile_answers__refused_or_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
