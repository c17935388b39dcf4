// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Rank resolution. Launchers disagree on names; the first variable present wins. */
#include <stdbool.h>
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
/* OpenMPI names the job by its PMIx namespace (one per mpirun). */
static const char *const job_vars[] = {
	"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid", NULL,
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
static bool job_id_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= sizeof(((struct rank_info *)0)->job))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("-_.:@+", *s)))
			return false;
	return true;
}

int ranks__from_environ(const char *env, size_t len, struct rank_info *ri)
{
	const char *var, *v, *const *jv;
	long x;

	if ((var = first_int(env, len, local_vars, 0, RANK_MAX - 1, &x)))
		ri->local_rank = x;
	if ((var = first_int(env, len, size_vars, 1, RANK_MAX, &x)))
		ri->world_size = x;
	for (jv = job_vars; *jv; jv++) {
		v = procfs__environ_get(env, len, *jv);
		/* torchrun's default run id is "none" in every job: it names none */
		if (v && job_id_ok(v) && strcmp(v, "none")) {
			snprintf(ri->job, sizeof(ri->job), "%s", v);
			break;
		}
	}
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
