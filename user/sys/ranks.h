/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Which rank a process is: from its environ, its communicator init, or the order given. */
#ifndef RS_RANKS_H
#define RS_RANKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rank_source {
	RANK_SRC_NONE,
	RANK_SRC_ENV,
	RANK_SRC_COMM_INIT,
	RANK_SRC_ORDER,
};

/* Where a job id came from, strongest first: each names one launch on every node of it. */
enum job_source {
	JOB_SRC_NONE,
	JOB_SRC_USER,		/* RANKSCOPE_JOB_ID, as given */
	JOB_SRC_K8S,		/* the pod's owner, from the pod watch: "k8s:NS:KIND:NAME" */
	JOB_SRC_TORCH,		/* TORCHELASTIC_RUN_ID other than "none", as given */
	JOB_SRC_SLURM,		/* SLURM_JOB_ID: "slurm:JOB" */
	JOB_SRC_MPI,		/* PMIX_NAMESPACE or OMPI_MCA_orte_ess_jobid: "mpi:NS" */
	JOB_SRC_RDZV,		/* torch's rendezvous: "rdzv:ADDR:PORT+WORLD", "@NODE" if loopback */
	JOB_SRC_PARENT,		/* the parent process on this node: "ppid:PID.START@NODE" */
};

struct rank_info {
	int rank;		/* -1 if unknown */
	int local_rank;		/* -1 if unknown */
	int world_size;		/* -1 if unknown */
	char job[128];		/* "" if unknown */
	enum rank_source src;
	char src_var[32];	/* the environment variable the rank came from */
	enum job_source job_src;
	char k8s_ns[64];	/* the pod's namespace and name, from the pod watch; "" if unknown */
	char k8s_pod[256];
};

/* What a job id may use besides the environ: all of it optional. */
struct job_ctx {
	const char *node;	/* this node's name (NODE_NAME, else the hostname); NULL: unknown */
	const char *k8s_job;	/* the pod owner's id (k8s.h) when the pod watch knows the pod */
	int ppid;		/* the parent; 0: unknown */
	uint64_t ppid_start;	/* its start time, clock ticks since boot; 0: unknown */
};

#define RANK_MAX (1 << 20)

void ranks__init(struct rank_info *ri);

/* Fill ri from a NUL-separated environ block, the job id as ranks__job() with no ctx.
 * Malformed values are ignored. Returns 1 if the rank was found, 0 if not. */
int ranks__from_environ(const char *env, size_t len, struct rank_info *ri);

/*
 * Set ri->job and ri->job_src from the first source that names the job, in the order of enum
 * job_source; ctx (or NULL) adds the pod's owner, the node for a loopback rendezvous and the
 * parent. An id is the same on every node of a launch and differs between launches; a value
 * outside [A-Za-z0-9-_.:@+] or too long becomes "SRC:h-" and 16 hex digits of its hash, so
 * the source is kept and two values never merge by truncation. Returns the source, NONE
 * (ri->job "") when nothing names it.
 */
enum job_source ranks__job(const char *env, size_t len, const struct job_ctx *ctx,
			   struct rank_info *ri);

/* "user", "k8s", "torchelastic", "slurm", "mpi", "rendezvous", "parent" or "none". */
const char *ranks__job_source_name(enum job_source src);

/* Give every rank still unknown (src NONE) the lowest rank number not taken, in order.
 * Returns how many were assigned. */
int ranks__assign_by_order(struct rank_info *ris, int n);

const char *ranks__source_name(enum rank_source src);

#endif /* RS_RANKS_H */
