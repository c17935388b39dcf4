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
	assert_int_equal(ri.job_src, JOB_SRC_TORCH);
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
	assert_string_equal(ri.job, "mpi:prterun-host-1234@1");
	assert_int_equal(ri.job_src, JOB_SRC_MPI);
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
	assert_string_equal(ri.job, "slurm:123456");
	assert_int_equal(ri.job_src, JOB_SRC_SLURM);
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
	assert_string_equal(ri.job, "slurm:99");
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

static void from_environ__hostile_job__hashed(void **state)
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
	};
	char seen[sizeof(bad) / sizeof(bad[0])][128];
	struct rank_info ri;
	size_t i, k;

	/* the source is kept, as a hash: the value is the same on every rank of the job */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ranks__init(&ri);
		assert_int_equal(ranks__from_environ(bad[i].env, bad[i].len, &ri), 1);
		assert_int_equal(ri.job_src, JOB_SRC_TORCH);
		assert_int_equal(strlen(ri.job), strlen("torch:h-") + 16);
		assert_memory_equal(ri.job, "torch:h-", 8);
		strcpy(seen[i], ri.job);
		for (k = 0; k < i; k++)
			if (!strcmp(seen[k], seen[i]))
				fail_msg("'%s' for two different run ids", seen[i]);
	}
	/* the same value, the same id */
	ranks__init(&ri);
	ranks__from_environ(bad[3].env, bad[3].len, &ri);
	assert_string_equal(ri.job, seen[3]);
}

static void from_environ__empty_job__next_source(void **state)
{
	struct rank_info ri;

	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(ENV("TORCHELASTIC_RUN_ID=\0SLURM_JOB_ID=77\0"
						 "RANK=0\0"), &ri), 1);
	assert_string_equal(ri.job, "slurm:77");
}

static void from_environ__job_too_long__hashed(void **state)
{
	char env[512], first[128];
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
	assert_memory_equal(ri.job, "torch:h-", 8);
	strcpy(first, ri.job);
	len = (size_t)snprintf(env, sizeof(env), "RANK=0%cTORCHELASTIC_RUN_ID=%0128d%c", 0, 1, 0);
	ranks__init(&ri);
	assert_int_equal(ranks__from_environ(env, len, &ri), 1);
	assert_memory_equal(ri.job, "torch:h-", 8);
	assert_string_not_equal(ri.job, first);
}

/* The job id a process with this environ gets on node, with parent ppid started at start. */
static const char *job_on(const char *env, size_t len, const char *node, int ppid,
			  uint64_t start, const char *k8s, struct rank_info *ri)
{
	struct job_ctx ctx = { .node = node, .k8s_job = k8s, .ppid = ppid, .ppid_start = start };

	ranks__init(ri);
	ranks__job(env, len, &ctx, ri);
	return ri->job;
}

static void job__user_id__wins(void **state)
{
	struct rank_info ri;

	job_on(ENV("RANKSCOPE_JOB_ID=bert-7\0TORCHELASTIC_RUN_ID=te\0SLURM_JOB_ID=9\0"
		   "MASTER_ADDR=10.0.0.1\0MASTER_PORT=29500\0"), "a", 10, 1, "k8s:ns:Job:x", &ri);
	assert_string_equal(ri.job, "bert-7");
	assert_int_equal(ri.job_src, JOB_SRC_USER);
	assert_string_equal(ranks__job_source_name(ri.job_src), "user");
	/* empty: not set */
	job_on(ENV("RANKSCOPE_JOB_ID=\0TORCHELASTIC_RUN_ID=te\0"), "a", 10, 1, NULL, &ri);
	assert_string_equal(ri.job, "te");
	assert_int_equal(ri.job_src, JOB_SRC_TORCH);
	/* hostile: hashed, still the user's */
	job_on(ENV("RANKSCOPE_JOB_ID=my job\0"), "a", 10, 1, NULL, &ri);
	assert_memory_equal(ri.job, "user:h-", 7);
	assert_int_equal(ri.job_src, JOB_SRC_USER);
}

static void job__k8s_owner__over_env(void **state)
{
	struct rank_info ri;

	job_on(ENV("TORCHELASTIC_RUN_ID=te\0MASTER_ADDR=bert-master-0\0MASTER_PORT=23456\0"),
	       "a", 10, 1, "k8s:team-a:PyTorchJob:bert", &ri);
	assert_string_equal(ri.job, "k8s:team-a:PyTorchJob:bert");
	assert_int_equal(ri.job_src, JOB_SRC_K8S);
	/* the pod watch does not know the pod: the environ decides */
	job_on(ENV("TORCHELASTIC_RUN_ID=te\0"), "a", 10, 1, NULL, &ri);
	assert_string_equal(ri.job, "te");
	job_on(ENV("TORCHELASTIC_RUN_ID=te\0"), "a", 10, 1, "", &ri);
	assert_string_equal(ri.job, "te");
}

static void job__torch_none__rendezvous(void **state)
{
	struct rank_info ri;

	job_on(ENV("TORCHELASTIC_RUN_ID=none\0MASTER_ADDR=10.0.0.1\0MASTER_PORT=29500\0"
		   "WORLD_SIZE=16\0RANK=3\0"), "node-a", 10, 1, NULL, &ri);
	assert_string_equal(ri.job, "rdzv:10.0.0.1:29500+16");
	assert_int_equal(ri.job_src, JOB_SRC_RDZV);
	assert_string_equal(ranks__job_source_name(ri.job_src), "rendezvous");
	/* no world size: the address alone */
	job_on(ENV("MASTER_ADDR=Trainer-0.Svc\0MASTER_PORT=29500\0"), "node-a", 10, 1, NULL, &ri);
	assert_string_equal(ri.job, "rdzv:trainer-0.svc:29500");
	/* IPv6 in brackets: without them */
	job_on(ENV("MASTER_ADDR=[fd00::1]\0MASTER_PORT=29500\0WORLD_SIZE=2\0"), "node-a", 10, 1,
	       NULL, &ri);
	assert_string_equal(ri.job, "rdzv:fd00::1:29500+2");
	/* a zone id is no label character: hashed, still the rendezvous */
	job_on(ENV("MASTER_ADDR=fe80::1%eth0\0MASTER_PORT=29500\0"), "node-a", 10, 1, NULL, &ri);
	assert_memory_equal(ri.job, "rdzv:h-", 7);
	assert_int_equal(ri.job_src, JOB_SRC_RDZV);
	/* a bad port or no address: not a rendezvous */
	job_on(ENV("MASTER_ADDR=10.0.0.1\0MASTER_PORT=0\0"), "node-a", 10, 1, NULL, &ri);
	assert_int_equal(ri.job_src, JOB_SRC_PARENT);
	job_on(ENV("MASTER_ADDR=10.0.0.1\0MASTER_PORT=x\0"), "node-a", 10, 1, NULL, &ri);
	assert_int_equal(ri.job_src, JOB_SRC_PARENT);
	job_on(ENV("MASTER_ADDR=\0MASTER_PORT=29500\0"), "node-a", 10, 1, NULL, &ri);
	assert_int_equal(ri.job_src, JOB_SRC_PARENT);
}

/* two ranks of one torchrun job on two nodes: the same id */
static void job__one_job_two_nodes__merged(void **state)
{
	struct rank_info a, b;

	job_on(ENV("TORCHELASTIC_RUN_ID=none\0MASTER_ADDR=10.0.0.1\0MASTER_PORT=29500\0"
		   "WORLD_SIZE=4\0RANK=0\0"), "node-a", 4242, 100, NULL, &a);
	job_on(ENV("RANK=3\0WORLD_SIZE=4\0MASTER_PORT=29500\0MASTER_ADDR=10.0.0.1\0"
		   "TORCHELASTIC_RUN_ID=none\0"), "node-b", 777, 900, NULL, &b);
	assert_string_equal(a.job, b.job);
	/* and of one srun, of one mpirun */
	job_on(ENV("SLURM_JOB_ID=42\0SLURM_STEP_ID=0\0SLURM_PROCID=0\0"), "node-a", 1, 1, NULL,
	       &a);
	job_on(ENV("SLURM_JOB_ID=42\0SLURM_STEP_ID=0\0SLURM_PROCID=5\0"), "node-b", 2, 2, NULL,
	       &b);
	assert_string_equal(a.job, "slurm:42");
	assert_string_equal(a.job, b.job);
	job_on(ENV("PMIX_NAMESPACE=3177381889\0OMPI_COMM_WORLD_RANK=0\0"), "node-a", 1, 1, NULL,
	       &a);
	job_on(ENV("OMPI_MCA_orte_ess_jobid=3177381889\0PMIX_NAMESPACE=3177381889\0"), "node-b",
	       2, 2, NULL, &b);
	assert_string_equal(a.job, "mpi:3177381889");
	assert_string_equal(a.job, b.job);
}

/* two unrelated jobs on two nodes whose parents have the same PID: different ids */
static void job__same_ppid_two_nodes__split(void **state)
{
	struct rank_info a, b, c;

	job_on(ENV("RANK=0\0"), "node-a", 4242, 1000, NULL, &a);
	job_on(ENV("RANK=0\0"), "node-b", 4242, 1000, NULL, &b);
	assert_string_equal(a.job, "ppid:4242.1000@node-a");
	assert_int_equal(a.job_src, JOB_SRC_PARENT);
	assert_string_not_equal(a.job, b.job);
	/* and on one node, a reuse of the parent's PID by a later launcher */
	job_on(ENV("RANK=0\0"), "node-a", 4242, 5000, NULL, &c);
	assert_string_not_equal(a.job, c.job);
	/* torchrun's "none" is no name: two such jobs stay apart too */
	job_on(ENV("TORCHELASTIC_RUN_ID=none\0RANK=0\0"), "node-a", 4242, 1000, NULL, &a);
	job_on(ENV("TORCHELASTIC_RUN_ID=none\0RANK=0\0"), "node-b", 4242, 1000, NULL, &b);
	assert_string_not_equal(a.job, b.job);
	/* no node name known: the parent alone, no start time: the PID alone */
	job_on(ENV("RANK=0\0"), NULL, 4242, 0, NULL, &a);
	assert_string_equal(a.job, "ppid:4242");
	/* nothing at all */
	job_on(ENV("RANK=0\0"), "node-a", 0, 0, NULL, &a);
	assert_string_equal(a.job, "");
	assert_int_equal(a.job_src, JOB_SRC_NONE);
}

/* single-node jobs with a loopback rendezvous on two nodes, same port: different ids */
static void job__loopback_rendezvous_two_nodes__split(void **state)
{
	static const char *const lo[] = { "127.0.0.1", "localhost", "LOCALHOST", "::1", "[::1]",
					  "127.0.1.1", "0.0.0.0" };
	char env[128];
	struct rank_info a, b;
	size_t i, len;

	for (i = 0; i < sizeof(lo) / sizeof(lo[0]); i++) {
		len = (size_t)snprintf(env, sizeof(env), "MASTER_ADDR=%s%cMASTER_PORT=29500%c"
				       "WORLD_SIZE=2%c", lo[i], 0, 0, 0);
		job_on(env, len, "node-a", 10, 1, NULL, &a);
		job_on(env, len, "node-b", 10, 1, NULL, &b);
		assert_int_equal(a.job_src, JOB_SRC_RDZV);
		assert_non_null(strstr(a.job, "@node-a"));
		assert_string_not_equal(a.job, b.job);
	}
	len = (size_t)snprintf(env, sizeof(env), "MASTER_ADDR=127.0.0.1%cMASTER_PORT=29500%c"
			       "WORLD_SIZE=2%c", 0, 0, 0);
	job_on(env, len, "node-a", 10, 1, NULL, &a);
	assert_string_equal(a.job, "rdzv:127.0.0.1:29500+2@node-a");
	/* the node unknown, loopback names nothing: the parent does (from_environ: nothing) */
	job_on(env, len, NULL, 10, 1, NULL, &a);
	assert_int_equal(a.job_src, JOB_SRC_PARENT);
	ranks__init(&a);
	ranks__from_environ(env, len, &a);
	assert_string_equal(a.job, "");
}

static void job__slurm_and_mpi__forms(void **state)
{
	struct rank_info ri;

	/* the job, not the step: the batch shell (no step id, SLURM_PROCID=0) and the step's
	 * rank 0 must meet in one job for the shell to give its number up */
	job_on(ENV("SLURM_JOB_ID=42\0SLURM_STEP_ID=1\0"), "a", 1, 1, NULL, &ri);
	assert_string_equal(ri.job, "slurm:42");
	job_on(ENV("SLURM_JOB_ID=42\0SLURM_PROCID=0\0"), "b", 2, 2, NULL, &ri);
	assert_string_equal(ri.job, "slurm:42");
	assert_string_equal(ranks__job_source_name(ri.job_src), "slurm");
	/* Slurm over PMIx (srun --mpi=pmix sets both) and over a rendezvous */
	job_on(ENV("PMIX_NAMESPACE=slurm.pmix.42.0\0SLURM_JOB_ID=42\0SLURM_STEP_ID=0\0"
		   "MASTER_ADDR=n1\0MASTER_PORT=1\0"), "a", 1, 1, NULL, &ri);
	assert_string_equal(ri.job, "slurm:42");
	/* OpenMPI 4 without PMIx's variable */
	job_on(ENV("OMPI_MCA_orte_ess_jobid=12345\0"), "a", 1, 1, NULL, &ri);
	assert_string_equal(ri.job, "mpi:12345");
	assert_int_equal(ri.job_src, JOB_SRC_MPI);
	assert_string_equal(ranks__job_source_name(ri.job_src), "mpi");
	/* MPI over a rendezvous (mpirun python with MASTER_ADDR) */
	job_on(ENV("MASTER_ADDR=n1\0MASTER_PORT=1\0PMIX_NAMESPACE=77\0"), "a", 1, 1, NULL, &ri);
	assert_string_equal(ri.job, "mpi:77");
	/* a hostile job id: hashed */
	job_on(ENV("SLURM_JOB_ID=42 1\0SLURM_STEP_ID=0\0"), "a", 1, 1, NULL, &ri);
	assert_memory_equal(ri.job, "slurm:h-", 8);
	assert_string_equal(ranks__job_source_name(JOB_SRC_K8S), "k8s");
	assert_string_equal(ranks__job_source_name(JOB_SRC_TORCH), "torchelastic");
	assert_string_equal(ranks__job_source_name(JOB_SRC_PARENT), "parent");
	assert_string_equal(ranks__job_source_name(JOB_SRC_NONE), "none");
	assert_string_equal(ranks__job_source_name((enum job_source)42), "none");
}

/* every id is within the label character set and fits, whatever the input */
static void job__any_input__safe_and_bounded(void **state)
{
	static const char *const vars[] = { "RANKSCOPE_JOB_ID", "TORCHELASTIC_RUN_ID",
					    "SLURM_JOB_ID", "PMIX_NAMESPACE", "MASTER_ADDR" };
	char env[2048], val[600], node[300];
	struct rank_info ri;
	size_t i, k, len;
	const char *p;

	memset(node, 'n', sizeof(node) - 1);
	node[sizeof(node) - 1] = '\0';
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		for (k = 1; k < sizeof(val); k += 37) {
			memset(val, "a:\"\n/x"[k % 6], k);
			val[k] = '\0';
			len = (size_t)snprintf(env, sizeof(env), "%s=%s%cMASTER_PORT=1%c", vars[i],
					       val, 0, 0);
			job_on(env, len, k % 2 ? node : "a", 1, 1, NULL, &ri);
			assert_true(strlen(ri.job) < sizeof(ri.job));
			assert_int_not_equal(ri.job_src, JOB_SRC_NONE);
			for (p = ri.job; *p; p++)
				if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					    "0123456789-_.:@+", *p))
					fail_msg("'%s' from %s", ri.job, vars[i]);
		}
	}
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
		cmocka_unit_test(from_environ__hostile_job__hashed),
		cmocka_unit_test(from_environ__empty_job__next_source),
		cmocka_unit_test(from_environ__job_too_long__hashed),
		cmocka_unit_test(job__user_id__wins),
		cmocka_unit_test(job__k8s_owner__over_env),
		cmocka_unit_test(job__torch_none__rendezvous),
		cmocka_unit_test(job__one_job_two_nodes__merged),
		cmocka_unit_test(job__same_ppid_two_nodes__split),
		cmocka_unit_test(job__loopback_rendezvous_two_nodes__split),
		cmocka_unit_test(job__slurm_and_mpi__forms),
		cmocka_unit_test(job__any_input__safe_and_bounded),
		cmocka_unit_test(assign_by_order__gaps__lowest_free),
		cmocka_unit_test(assign_by_order__taken_later__skipped),
		cmocka_unit_test(assign_by_order__all_known__none_assigned),
		cmocka_unit_test(assign_by_order__all_unknown__in_order),
		cmocka_unit_test(source_name__each__name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
