// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Rank and job resolution. Launchers disagree on names; the first variable present wins. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "procfs.h"
#include "ranks.h"

static const char *const rank_vars[] = {
	"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", NULL,
};
static const char *const local_vars[] = {
	"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", NULL,
};
static const char *const size_vars[] = {
	"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL,
};

void ranks__init(struct rank_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->rank = ri->local_rank = ri->world_size = -1;
}

static const char *first_int(const char *env, size_t len, const char *const *vars, long lo,
			     long hi, long *out)
{
	const char *v;

	for (; *vars; vars++) {
		v = procfs__environ_get(env, len, *vars);
		if (v && !parse_long(v, lo, hi, out))
			return *vars;
	}
	return NULL;
}

/* Job ids become metric labels and JSON: keep a conservative character set. */
static bool job_chars_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("-_.:@+", *s)))
			return false;
	return true;
}

/* FNV-1a: a value that cannot be a label as it is still names its job, by its hash. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* ri->job = "PREFIX:VAL" (VAL alone when prefix is NULL), or "HPREFIX:h-HASH" when VAL has
 * other characters or does not fit: truncating would merge two jobs. */
static void set_job(struct rank_info *ri, enum job_source src, const char *prefix,
		    const char *hprefix, const char *val)
{
	int w = -1;

	if (job_chars_ok(val))
		w = prefix ? snprintf(ri->job, sizeof(ri->job), "%s:%s", prefix, val) :
			     snprintf(ri->job, sizeof(ri->job), "%s", val);
	if (w < 0 || (size_t)w >= sizeof(ri->job))
		snprintf(ri->job, sizeof(ri->job), "%s:h-%016llx", hprefix,
			 (unsigned long long)fnv1a(val));
	ri->job_src = src;
}

/* A variable's value, NULL when absent or empty. */
static const char *env_val(const char *env, size_t len, const char *key)
{
	const char *v = procfs__environ_get(env, len, key);

	return v && *v ? v : NULL;
}

/* An address that means "this machine": the same text on every node names different
 * rendezvous. a is lowercase, without brackets. */
static bool loopback(const char *a)
{
	static const char *const names[] = {
		"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "0.0.0.0",
		"::", "::1", "0:0:0:0:0:0:0:1", NULL,
	};
	const char *const *n;

	for (n = names; *n; n++)
		if (!strcmp(a, *n))
			return true;
	return !strncmp(a, "127.", 4) || !strncmp(a, "::ffff:127.", 11);
}

/*
 * torch's rendezvous, MASTER_ADDR:MASTER_PORT with WORLD_SIZE: every rank of a launch has the
 * same, and two launches cannot listen on one address and port at once. A loopback address
 * is the same text on every node, so the node's name is added (none known: no id).
 */
static bool rdzv_id(const char *env, size_t len, const struct job_ctx *ctx, char *out,
		    size_t n)
{
	const char *a = env_val(env, len, "MASTER_ADDR"), *p = env_val(env, len, "MASTER_PORT");
	const char *ws = env_val(env, len, "WORLD_SIZE");
	const char *node = ctx && ctx->node && *ctx->node ? ctx->node : NULL;
	char addr[256], world[16] = "";
	long port, w;
	size_t al, i;

	if (!a || !p || parse_long(p, 1, 65535, &port))
		return false;
	al = strlen(a);
	if (al >= 2 && a[0] == '[' && a[al - 1] == ']') {	/* [fd00::1] is fd00::1 */
		a++;
		al -= 2;
	}
	if (!al || al >= sizeof(addr))
		return false;	/* no host name is that long */
	for (i = 0; i < al; i++)
		addr[i] = a[i] >= 'A' && a[i] <= 'Z' ? a[i] - 'A' + 'a' : a[i];
	addr[al] = '\0';
	if (ws && !parse_long(ws, 1, RANK_MAX, &w))
		snprintf(world, sizeof(world), "+%ld", w);
	if (loopback(addr) && !node)
		return false;
	snprintf(out, n, "%s:%ld%s%s%s", addr, port, world, loopback(addr) ? "@" : "",
		 loopback(addr) ? node : "");
	return true;
}

enum job_source ranks__job(const char *env, size_t len, const struct job_ctx *ctx,
			   struct rank_info *ri)
{
	const char *v, *node = ctx && ctx->node && *ctx->node ? ctx->node : NULL;
	char val[512];

	ri->job[0] = '\0';
	ri->job_src = JOB_SRC_NONE;
	if ((v = env_val(env, len, "RANKSCOPE_JOB_ID"))) {
		set_job(ri, JOB_SRC_USER, NULL, "user", v);
	} else if (ctx && ctx->k8s_job && *ctx->k8s_job) {
		set_job(ri, JOB_SRC_K8S, NULL, "k8s", ctx->k8s_job);
	} else if ((v = env_val(env, len, "TORCHELASTIC_RUN_ID")) && strcmp(v, "none")) {
		/* torchrun's default run id is "none" in every job: it names none */
		set_job(ri, JOB_SRC_TORCH, NULL, "torch", v);
	} else if ((v = env_val(env, len, "SLURM_JOB_ID"))) {
		/* the job, not the step: the batch shell (no step id) carries SLURM_PROCID too,
		 * and must meet the step's rank 0 in one job to give its number up */
		set_job(ri, JOB_SRC_SLURM, "slurm", "slurm", v);
	} else if ((v = env_val(env, len, "PMIX_NAMESPACE")) ||
		   (v = env_val(env, len, "OMPI_MCA_orte_ess_jobid"))) {
		/* OpenMPI names the job by its PMIx namespace (one per mpirun) */
		set_job(ri, JOB_SRC_MPI, "mpi", "mpi", v);
	} else if (rdzv_id(env, len, ctx, val, sizeof(val))) {
		set_job(ri, JOB_SRC_RDZV, "rdzv", "rdzv", val);
	} else if (ctx && ctx->ppid > 0) {
		/* one launcher's children on this node: the node keeps two nodes' apart, the
		 * parent's start time a reuse of its PID */
		snprintf(val, sizeof(val), "%d", ctx->ppid);
		if (ctx->ppid_start)
			snprintf(val + strlen(val), sizeof(val) - strlen(val), ".%llu",
				 (unsigned long long)ctx->ppid_start);
		if (node)
			snprintf(val + strlen(val), sizeof(val) - strlen(val), "@%s", node);
		set_job(ri, JOB_SRC_PARENT, "ppid", "ppid", val);
	}
	return ri->job_src;
}

const char *ranks__job_source_name(enum job_source src)
{
	switch (src) {
	case JOB_SRC_USER: return "user";
	case JOB_SRC_K8S: return "k8s";
	case JOB_SRC_TORCH: return "torchelastic";
	case JOB_SRC_SLURM: return "slurm";
	case JOB_SRC_MPI: return "mpi";
	case JOB_SRC_RDZV: return "rendezvous";
	case JOB_SRC_PARENT: return "parent";
	default: return "none";
	}
}

int ranks__from_environ(const char *env, size_t len, struct rank_info *ri)
{
	const char *var;
	long x;

	if ((var = first_int(env, len, local_vars, 0, RANK_MAX - 1, &x)))
		ri->local_rank = x;
	if ((var = first_int(env, len, size_vars, 1, RANK_MAX, &x)))
		ri->world_size = x;
	ranks__job(env, len, NULL, ri);
	var = first_int(env, len, rank_vars, 0, RANK_MAX - 1, &x);
	if (!var)
		return 0;
	if (ri->world_size > 0 && x >= ri->world_size) {
		ri->world_size = -1;	/* inconsistent: trust neither */
		return 0;
	}
	ri->rank = x;
	ri->src = RANK_SRC_ENV;
	snprintf(ri->src_var, sizeof(ri->src_var), "%s", var);
	return 1;
}

int ranks__assign_by_order(struct rank_info *ris, int n)
{
	int i, j, next = 0, assigned = 0;
	bool taken;

	for (i = 0; i < n; i++) {
		if (ris[i].src != RANK_SRC_NONE)
			continue;
		for (;; next++) {
			taken = false;
			for (j = 0; j < n; j++)
				if (ris[j].src != RANK_SRC_NONE && ris[j].rank == next)
					taken = true;
			if (!taken)
				break;
		}
		ris[i].rank = next++;
		ris[i].src = RANK_SRC_ORDER;
		assigned++;
	}
	return assigned;
}

const char *ranks__source_name(enum rank_source src)
{
	switch (src) {
	case RANK_SRC_ENV: return "environ";
	case RANK_SRC_COMM_INIT: return "comm_init";
	case RANK_SRC_ORDER: return "order";
	default: return "none";
	}
}
