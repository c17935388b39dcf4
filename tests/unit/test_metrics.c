// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* metrics: the /metrics document of two jobs, its verdict and checkpoint series, the series
 * cap (the ranks' series go, rankscope's own stay), and the API's verdict and step JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "json.h"
#include "metrics.h"
#include "report.h"

struct fixture {
	struct metrics_acc acc[3];
	struct slot_snapshot snap[3];
	struct metrics_rank r[3];
	struct job_verdict v;
	struct metrics_job jobs[2];
	struct self_stats self;
	uint64_t attach[2];
};

static const char *const attach_names[2] = { "attached", "gone" };

static struct fixture *mk(void)
{
	struct fixture *f = calloc(1, sizeof(*f));
	int i;

	for (i = 0; i < 3; i++)
		f->r[i] = (struct metrics_rank){ .rank = i < 2 ? i : 0, .pid = 100 + i,
						 .job = i < 2 ? "mpi-1" : "ddp-2",
						 .snap = &f->snap[i], .acc = &f->acc[i] };
	f->acc[1].ckpt_count = 2;
	f->acc[1].ckpt_ns = 1500000000;
	f->acc[1].ckpt_bytes = 48 << 20;
	f->acc[1].ckpt_last_unix = 1795953870.5;
	f->v = (struct job_verdict){ .cls = V_COMPUTE, .col = 1, .persistent = true, .step = 9 };
	f->jobs[0] = (struct metrics_job){ .id = "mpi-1", .v = &f->v, .vrank = 1, .ranks_seen = 2,
					   .world_size = 4 };
	f->jobs[1] = (struct metrics_job){ .id = "ddp-2", .v = NULL, .vrank = -1, .ranks_seen = 1,
					   .world_size = -1 };
	f->attach[0] = 3;
	f->self = (struct self_stats){ .attach = f->attach, .attach_names = attach_names,
				       .nattach = 2, .ranks = 3, .jobs = 2 };
	return f;
}

static void render__two_jobs__a_verdict_each(void **state)
{
	struct fixture *f = mk();
	struct prom p;

	prom__init(&p);
	metrics__render(&p, f->r, 3, f->jobs, 2, &f->self, 0);
	assert_null(p.err ? "oom" : NULL);
	assert_non_null(strstr(p.buf, "rankscope_straggler_verdict{job_id=\"mpi-1\",class=\"compute\","
				      "rank=\"1\",persistent=\"true\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_straggler_verdict{job_id=\"ddp-2\",class=\"none\","
				      "rank=\"\",persistent=\"false\"} 1\n"));
	/* two ranks 0 in two jobs: told apart by job_id */
	assert_non_null(strstr(p.buf, "rankscope_rank_state{job_id=\"mpi-1\",rank=\"0\",state=\"running\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_rank_state{job_id=\"ddp-2\",rank=\"0\",state=\"running\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_attach_total{result=\"attached\"} 3\n"));
	assert_non_null(strstr(p.buf, "rankscope_jobs 2\n"));
	assert_null(strstr(p.buf, "rankscope_planned_steps"));
	assert_null(strstr(p.buf, "rankscope_bpf_run_seconds_total"));	/* bpf_stats off */
	/* no source given (the fixture's ranks): no info series */
	assert_null(strstr(p.buf, "rankscope_rank_info{"));
	prom__free(&p);
	free(f);
}

static void render__checkpoints__counters_and_timestamp_after_first(void **state)
{
	struct fixture *f = mk();
	struct prom p;

	prom__init(&p);
	metrics__render(&p, f->r, 3, f->jobs, 2, &f->self, 5000);
	assert_non_null(strstr(p.buf, "train_checkpoint_seconds_total{job_id=\"mpi-1\",rank=\"1\"} 1.5\n"));
	assert_non_null(strstr(p.buf, "checkpoint_bytes_written_total{job_id=\"mpi-1\",rank=\"1\"} 50331648\n"));
	assert_non_null(strstr(p.buf, "train_checkpoint_timestamp_seconds{job_id=\"mpi-1\",rank=\"1\"} 1795953870.5\n"));
	/* no checkpoint yet: no timestamp (absent() is what the no-checkpoint alert reads) */
	assert_null(strstr(p.buf, "train_checkpoint_timestamp_seconds{job_id=\"mpi-1\",rank=\"0\"}"));
	assert_non_null(strstr(p.buf, "rankscope_planned_steps{job_id=\"ddp-2\"} 5000\n"));
	/* a node's part of a job, and a job whose size nothing says */
	assert_non_null(strstr(p.buf, "rankscope_job_ranks_seen{job_id=\"mpi-1\"} 2\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_world_size{job_id=\"mpi-1\"} 4\n"));
	assert_non_null(strstr(p.buf, "rankscope_job_ranks_seen{job_id=\"ddp-2\"} 1\n"));
	assert_null(strstr(p.buf, "rankscope_job_world_size{job_id=\"ddp-2\"}"));
	prom__free(&p);
	free(f);
}

static void render__series_cap__histograms_cut_alerts_and_self_kept(void **state)
{
	struct fixture *f = mk();
	struct prom p;

	prom__init(&p);
	p.max_series = 11;	/* 2 verdict lines and 9 rank states: what the alerts read */
	f->self.series_overflow = 7;
	f->acc[0].step_hist.count = 1;
	f->acc[0].step_hist.slots[20] = 1;
	metrics__render(&p, f->r, 3, f->jobs, 2, &f->self, 0);
	assert_true(p.over > 0);
	assert_non_null(strstr(p.buf, "rankscope_straggler_verdict{job_id=\"mpi-1\""));
	assert_non_null(strstr(p.buf, "rankscope_rank_state{job_id=\"ddp-2\",rank=\"0\",state=\"hung\"} 0\n"));
	assert_null(strstr(p.buf, "train_step_seconds_bucket{"));	/* cut */
	assert_non_null(strstr(p.buf, "rankscope_series_overflow_total 7\n"));	/* kept */
	assert_non_null(strstr(p.buf, "rankscope_events_dropped_total{family=\"sched\"} 0\n"));
	assert_int_equal(p.max_series, 0);	/* left uncapped for the self series */
	prom__free(&p);
	free(f);
}

static void api__verdict_and_step__carry_the_job(void **state)
{
	struct fixture *f = mk();
	struct job_step st = { .col = 1, .index = 4, .dur_ns = 5000000 };
	struct json j;

	json__init(&j);
	report__verdict(&j, &f->v, "mpi-1", 1, 101);
	assert_non_null(strstr(j.buf, "{\"type\":\"verdict\",\"job\":\"mpi-1\","));
	assert_non_null(strstr(j.buf, "\"class\":\"compute\",\"rank\":1,\"pid\":101,\"persistent\":true"));
	json__reset(&j);
	report__step(&j, "ddp \"2\"", 0, 102, &st, "ddp_marker", 1.0, NULL, 0);
	assert_non_null(strstr(j.buf, "{\"type\":\"step\",\"job\":\"ddp \\\"2\\\"\",\"rank\":0,"
				      "\"pid\":102,\"step\":4,"));
	assert_non_null(strstr(j.buf, "\"communicators\":[],"));
	/* the step's collectives by communicator, named as the rank's communicators are */
	{
		struct comm_use cu[2] = { { .name = "MPI_COMM_WORLD", .hash = 7 },
					  { .name = "mpi:sub:1f", .hash = 9 } };

		st.ncomm = 2;
		st.comm[0] = (struct job_step_comm){ .comm = 9, .ops = 6, .bytes = 6 << 14,
						     .inside_ns = 1200 };
		st.comm[1] = (struct job_step_comm){ .comm = 8, .ops = 1, .bytes = 64,
						     .inside_ns = 30 };
		st.comm_other_ops = 2;
		json__reset(&j);
		report__step(&j, "j", 0, 102, &st, "period", 1.0, cu, 2);
		assert_non_null(strstr(j.buf, "\"communicators\":[{\"name\":\"mpi:sub:1f\",\"ops\":6,"
					      "\"bytes\":98304,\"inside_ns\":1200},{\"name\":null,"
					      "\"ops\":1,\"bytes\":64,\"inside_ns\":30}],"
					      "\"communicators_other_ops\":2,"));
	}
	json__free(&j);
	free(f);
}

/* rankscope_rank_info: one series a rank with its node, pod and job source; the per-rank
 * series keep their label sets (the info series is joined on (job_id, rank)) */
static void render__rank_info__node_pod_and_source(void **state)
{
	struct fixture *f = mk();
	struct prom p;

	f->r[0].job_src = "k8s";
	f->r[0].node = "gpu-node-7";
	f->r[0].ns = "team-a";
	f->r[0].pod = "bert-worker-0";
	f->r[1].job_src = "rendezvous";
	f->r[1].node = "gpu-node-7";
	f->r[1].ns = "";
	f->r[1].pod = "";
	f->r[2].job_src = "parent";
	prom__init(&p);
	metrics__render(&p, f->r, 3, f->jobs, 2, &f->self, 0);
	assert_null(p.err ? "oom" : NULL);
	assert_non_null(strstr(p.buf, "# TYPE rankscope_rank_info gauge\n"));
	assert_non_null(strstr(p.buf, "rankscope_rank_info{job_id=\"mpi-1\",rank=\"0\",job_src=\"k8s\","
				      "node=\"gpu-node-7\",namespace=\"team-a\",pod=\"bert-worker-0\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_rank_info{job_id=\"mpi-1\",rank=\"1\","
				      "job_src=\"rendezvous\",node=\"gpu-node-7\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_rank_info{job_id=\"ddp-2\",rank=\"0\","
				      "job_src=\"parent\"} 1\n"));
	assert_non_null(strstr(p.buf, "rankscope_rank_state{job_id=\"mpi-1\",rank=\"0\",state=\"running\"} 1\n"));
	prom__free(&p);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(render__rank_info__node_pod_and_source),
		cmocka_unit_test(render__two_jobs__a_verdict_each),
		cmocka_unit_test(render__checkpoints__counters_and_timestamp_after_first),
		cmocka_unit_test(render__series_cap__histograms_cut_alerts_and_self_kept),
		cmocka_unit_test(api__verdict_and_step__carry_the_job),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
