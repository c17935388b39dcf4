/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Communicator and datatype identities: handles are per-process pointers; names are global. */
#ifndef RS_COMMS_H
#define RS_COMMS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "libs.h"

#define COMMS_MAX	4096	/* bounded: the oldest entries are dropped beyond this */
#define COMM_NAME_MAX	48

struct comm_entry {
	pid_t pid;
	uint64_t handle;
	uint32_t size;		/* datatype entries: element size */
	char name[COMM_NAME_MAX];
};

struct comms {
	struct comm_entry *e;
	size_t n;
	size_t next;		/* ring position once full */
	uint64_t evicted;
	uint64_t gen;		/* bumped by every change: callers' caches of names check it */
};

void comms__init(struct comms *c);
void comms__free(struct comms *c);

/* Name a communicator (or datatype when size > 0) handle of pid. Replaces an existing one. */
void comms__set(struct comms *c, pid_t pid, uint64_t handle, const char *name, uint32_t size);

/* NCCL: the unique id is the same on every rank of a communicator; name it "nccl:<hash>". */
void comms__set_nccl(struct comms *c, pid_t pid, uint64_t handle, const uint8_t *id, size_t n);

/* Name of a handle: a registered name, else "<lib>:0x<handle>", or "<lib>" for handle 0.
 * Returns buf. */
const char *comms__name(const struct comms *c, pid_t pid, unsigned int lib, uint64_t handle,
			char *buf, size_t n);

/* Element size of an MPI datatype handle registered for pid, or 0. */
uint32_t comms__dtype_size(const struct comms *c, pid_t pid, uint64_t handle);

/* Forget every handle of pid (exit or PID reuse). */
void comms__forget(struct comms *c, pid_t pid);

/* Register OpenMPI's predefined communicators and datatypes of pid from libmpi at host_path,
 * and set *state_addr (when not NULL) to the address of ompi_mpi_state in pid where the file
 * defines it (left alone otherwise). Returns the number registered or -errno. */
int comms__scan_mpi(struct comms *c, pid_t pid, const char *host_path, const struct proc_lib *pl,
		    uint64_t *state_addr);

uint64_t comms__fnv1a(const uint8_t *p, size_t n);

/* A communicator a rank used: its global name, size when its init was seen, and use. */
#define RANK_COMMS_MAX	8	/* per rank; more are counted in comms_other */
#define RANK_COMM_NAME	72

struct comm_use {
	char name[RANK_COMM_NAME];
	uint64_t hash;			/* of name: what the job model keys it by */
	uint8_t lib;
	int32_t size;			/* nranks from its init call; -1 unknown */
	int32_t members;		/* ranks of the job seen using it (set when published) */
	uint64_t ops, bytes, inside_ns;
};

#endif /* RS_COMMS_H */
