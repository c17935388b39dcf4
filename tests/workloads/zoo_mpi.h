/* zoo_mpi.h - what zoo_mpi.c and zoo_shapes.c share: the options and run time (z), a step */
/*
 * zoo_mpi.c parses the options, sets up (files, communicators, cgroups, the loader), prints the
 * lines and runs the loop; zoo_shapes.c is what one step does (its compute, its structure's MPI
 * calls, its per-step faults). One program, two files: z is the one global state of the rank.
 */
#ifndef RANKSCOPE_ZOO_MPI_H
#define RANKSCOPE_ZOO_MPI_H

#include <mpi.h>
#include <stdbool.h>

#include "../fixtures/fixture_common.h"

#define MAX_FAULTS	16
#define DIRECT_CHUNKS	4
#define DIV_COUNT	16		/* floats in the divergent broadcast; rank R posts 2x */

enum fkind { F_COMPUTE, F_SLEEP, F_PIPE, F_STORAGE, F_QUOTA, F_WQUOTA, F_SEQSKEW,
	     F_SIGSTOP, F_KILL, F_DIVERGENT, F_DIVHANG, F_ROTATE, F_NKINDS };

struct fault {
	enum fkind kind;
	long rank, arg;
};

struct cgroup {
	char dir[512], orig[512];
	bool v2, in;
	pid_t pid;
	long period_us, quota_us;
};

enum { A_INPUT, A_IO, A_COMPUTE, A_SLEEP, A_COMM, A_STOP, A_LOG, A_N };

struct acct {			/* one step's ground truth */
	long step;
	int64_t start, t;	/* t: the end of the last lap */
	int64_t ns[A_N], preempt, busy, bubble;
	int64_t tp;		/* --tp: in the TP all-reduces (part of ns[A_COMM]) */
	int coll, p2p;
};

struct zoo {
	double checksum;	/* the all-reduces' results, summed (the done line says it) */
	/* options */
	long steps, warmup, compute_us, opt_us, input_kb, buckets, bucket_bytes, last_bytes;
	long fsdp, tp, pp, moe, act_bytes, accum, eval_every, barrier_every, change_at, loader_us,
	     fault_from;
	bool loss;
	long fault_every;
	long stages;		/* --pp: pipeline stages */
	long ckpt_every, ckpt_mb;
	bool overlap, len_skew, loader, resume, fsdp_interleave, ckpt_shards, pp_comm_own;
	const char *go_file, *init_file, *data_dir, *ckpt_dir;
	struct fault faults[MAX_FAULTS];
	int nfaults;
	/* run time */
	int rank, size, stage, pid;
	bool loud;		/* this process reports option errors */
	MPI_Comm tp_comm, dp_comm, pp_comm;
	int dp_size;
	float *sbuf, *rbuf;
	char *inbuf, *dbuf, *ckbuf;
	int in_fd, direct_fd, req_fd, data_fd;
	pid_t loader_pid;
	long in_reads, direct_reads;
	struct cgroup cg_rank, cg_loader;
};

extern struct zoo z;

/* zoo_mpi.c */
const struct fault *fault_on(enum fkind kind);
const struct fault *fault_any(enum fkind kind);
long fault_arg(enum fkind kind, long k);
bool fault_at(enum fkind kind, long k, bool this_rank);
void read_all(int fd, char *buf, long n, off_t off, const char *what);
void input(struct acct *a);
void checkpoint(long k);

/* zoo_shapes.c */
void lap(struct acct *a, int what);
int64_t burn_ns(int64_t ns);
long zoo_train_step(long k);
void step(struct acct *a, long k);

#endif /* RANKSCOPE_ZOO_MPI_H */
