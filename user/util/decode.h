/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Ring-buffer record decoding and the names of the wire enums. */
#ifndef RS_DECODE_H
#define RS_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "rankscope.h"
#include "sched.h"
#include "io.h"
#include "net.h"
#include "collectives.h"

struct rs_event {
	enum rs_kind kind;
	union {
		struct rs_hdr h;
		struct rs_ev_offcpu offcpu;
		struct rs_ev_exit exit;
		struct rs_ev_fork fork;
		struct rs_ev_exec exec;
		struct rs_ev_io io;
		struct rs_ev_tcp tcp;
		struct rs_ev_coll coll;
		struct rs_ev_comm_init init;
	};
};

/* Decode one record of len bytes into ev. A record longer than this build knows (a newer ABI)
 * is accepted and its tail ignored. Returns 0; -EINVAL for a short or inconsistent record;
 * -ENOTSUP for an unknown kind. */
int decode__event(const void *data, size_t len, struct rs_event *ev);

/* The family that emits kind, or -1. */
int decode__family(unsigned int kind);

const char *decode__family_name(unsigned int fam);
const char *decode__op_name(unsigned int op);		/* "allreduce" ... ; "unknown" */
const char *decode__lib_name(unsigned int lib);		/* "nccl", "mpi", "gloo", "torch" */
const char *decode__fd_kind_name(unsigned int kind);	/* "file", "pipe", "socket", "other" */
const char *decode__io_op_name(unsigned int op);	/* syscall name */
const char *decode__tcp_state_name(unsigned int state);

/* The value below max whose name() is s (a name read back: a recording's "op", "lib"...), or
 * -1. */
int decode__by_name(const char *(*name)(unsigned int), unsigned int max, const char *s);

/* Element size of an ncclDataType_t, or 0 if unknown. */
unsigned int decode__nccl_dtype_size(uint64_t dtype);

/* Name of an x86-64 syscall number where rankscope knows it ("syscall" otherwise). */
const char *decode__syscall_name(long nr);

/* Format a 16-byte (v4-mapped or v6) address. Returns out. */
char *decode__addr(const uint8_t a[16], char *out, size_t n);

#endif /* RS_DECODE_H */
