/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* collectives family wire format: one record per collective API call, and communicator init. */
#ifndef RS_COLLECTIVES_H
#define RS_COLLECTIVES_H

#include "rankscope.h"

enum rs_lib {
	RS_LIB_NONE,
	RS_LIB_NCCL,
	RS_LIB_MPI,
	RS_LIB_GLOO,
	RS_LIB_TORCH,
	RS_LIB_CUDART,		/* the CUDA runtime: its synchronize calls are gpu_wait */
	RS_LIB_CUDA,		/* the CUDA driver, the same */
	RS_LIB_MAX,
};

enum rs_op {
	RS_OP_NONE,
	RS_OP_ALLREDUCE,
	RS_OP_ALLGATHER,
	RS_OP_REDUCE_SCATTER,
	RS_OP_BROADCAST,
	RS_OP_REDUCE,
	RS_OP_ALLTOALL,
	RS_OP_BARRIER,
	RS_OP_GATHER,
	RS_OP_SCATTER,
	RS_OP_SEND,
	RS_OP_RECV,
	RS_OP_GROUP_START,
	RS_OP_GROUP_END,
	RS_OP_COMM_INIT,
	RS_OP_STEP_FORWARD,	/* c10d::Reducer::prepare_for_forward: one per DDP step */
	RS_OP_STEP_BACKWARD,	/* c10d::Reducer::finalize_backward */
	RS_OP_GPU_SYNC,		/* cudaStreamSynchronize & co.: the host waits for the GPU */
	RS_OP_MAX,
};

/*
 * The attach cookie tells the one generic enter/exit program pair where an API keeps its
 * arguments, so adding an API is a table row in user space, not a BPF program. Argument
 * numbers are 1-based SysV positions; 0 means absent; 7 and up are read from the user stack.
 */
#define RS_CK_OP(ck)		((ck) & 0xff)
#define RS_CK_LIB(ck)		(((ck) >> 8) & 0xf)
#define RS_CK_COUNT(ck)		(((ck) >> 12) & 0xf)
#define RS_CK_DTYPE(ck)		(((ck) >> 16) & 0xf)
#define RS_CK_COMM(ck)		(((ck) >> 20) & 0xf)
#define RS_CK_STREAM(ck)	(((ck) >> 24) & 0xf)
#define RS_CK_PEER(ck)		(((ck) >> 28) & 0xf)
#define RS_CK_FLAGS(ck)		(((ck) >> 32) & 0xff)
#define RS_CK_REDOP(ck)		(((ck) >> 40) & 0xf)
#define RS_CK_SENDBUF(ck)	(((ck) >> 44) & 0xf)
#define RS_CK_RECVBUF(ck)	(((ck) >> 48) & 0xf)
/* The rank's slot, set at attach (the probes serve one process, tracked before they attach):
 * the programs then need no rs_tracked lookup. Without RS_CK_HAS_SLOT they look it up. */
#define RS_CK_SLOT(ck)		(((ck) >> 52) & 0xff)
#define RS_CK_HAS_SLOT(ck)	(((ck) >> 60) & 1)
#define RS_CK_WITH_SLOT(ck, slot)	\
	((ck) | ((__u64)((slot) & 0xff) << 52) | (1ULL << 60))
_Static_assert(RS_MAX_SLOTS <= 256, "RS_CK_SLOT holds 8 bits");

#define RS_CKF_SEQ	0x1	/* a real collective: takes the next sequence number of its comm */
#define RS_CKF_INIT	0x2	/* communicator init: arg1 is ncclComm_t*, the unique id is on the stack;
				 * MPI (split, split_type, dup): the stream slot is the MPI_Comm* out,
				 * the count slot the color, and the parent goes in unique_id[0..8) */
#define RS_CKF_ENTRY	0x4	/* entry only: a uretprobe would turn a C++ exception thrown through
				 * the function into std::terminate (the unwinder cannot pass the
				 * return trampoline); recorded at entry with exit_ns 0 */
#define RS_CKF_COUNT32	0x8	/* count is a C int: the upper register half is undefined */
#define RS_CKF_DTYPE32	0x10	/* dtype is a C enum/int */

static inline __u64 rs_cookie(__u32 op, __u32 lib, __u32 count, __u32 dtype, __u32 comm,
			      __u32 stream, __u32 peer, __u32 flags, __u32 redop, __u32 sendbuf,
			      __u32 recvbuf)
{
	return (__u64)(op & 0xff) | (__u64)(lib & 0xf) << 8 | (__u64)(count & 0xf) << 12 |
	       (__u64)(dtype & 0xf) << 16 | (__u64)(comm & 0xf) << 20 |
	       (__u64)(stream & 0xf) << 24 | (__u64)(peer & 0xf) << 28 |
	       (__u64)(flags & 0xff) << 32 | (__u64)(redop & 0xf) << 40 |
	       (__u64)(sendbuf & 0xf) << 44 | (__u64)(recvbuf & 0xf) << 48;
}

#define RS_SEQ_NONE ((__u64)-1)

/* A user-chosen step marker (--steps marker:/usdt:): entry only, sequenced, no arguments. */
#define RS_MARKER_COOKIE \
	((__u64)RS_OP_STEP_FORWARD | (__u64)(RS_CKF_SEQ | RS_CKF_ENTRY) << 32)

/* RS_EV_COLL: one call, recorded at return. */
struct rs_ev_coll {
	struct rs_hdr h;
	__u64 enter_ns;
	__u64 exit_ns;
	__u64 comm;	/* communicator handle as the process sees it; 0 when the API has none */
	__u64 seq;	/* per (process, comm), counted in the kernel at entry; RS_SEQ_NONE if unsequenced */
	__u64 count;
	__u64 dtype;	/* NCCL: ncclDataType_t; MPI: the MPI_Datatype handle (user space sizes it) */
	__u64 stream;
	__s64 ret;
	__s32 peer;	/* root or peer rank; -1 when absent */
	__u8 lib;
	__u8 op;
	__u8 depth;	/* nesting of tracked calls on this thread, 0 = outermost */
	__u8 pad;
	__u64 sendbuf;	/* 0 when the API has none */
	__u64 recvbuf;
	__s32 redop;	/* NCCL: ncclRedOp_t; MPI: low bits of the MPI_Op handle; -1 if none */
	__u32 pad2;
};
_Static_assert(sizeof(struct rs_ev_coll) == 120, "rs_ev_coll wire size");

#define RS_UNIQUE_ID_BYTES 128	/* NCCL_UNIQUE_ID_BYTES */

/* RS_EV_COMM_INIT: ncclCommInitRank(Config) returned (nranks, rank), or MPI_Comm_split,
 * MPI_Comm_split_type or MPI_Comm_dup did (rank: the color, nranks: the key; unique_id starts
 * with the parent communicator's handle). */
struct rs_ev_comm_init {
	struct rs_hdr h;
	__u64 enter_ns;
	__u64 exit_ns;
	__u64 comm;	/* *arg1 after return */
	__s64 ret;
	__s32 nranks;
	__s32 rank;
	__u8 lib;
	__u8 pad[7];
	__u8 unique_id[RS_UNIQUE_ID_BYTES];
};
_Static_assert(sizeof(struct rs_ev_comm_init) == 200, "rs_ev_comm_init wire size");

#define RS_MAX_DEPTH 4	/* a power of two */

/* rs_coll_frames value, a thread's local storage: the calls in progress on it. User space
 * reads a rank's (by pidfd) to see who is inside a collective right now (hang detection). */
struct rs_frame {
	__u64 cookie;
	__u64 enter_ns;
	__u64 comm;
	__u64 seq;
	__u64 count;
	__u64 dtype;
	__u64 stream;
	__u64 arg1;	/* RS_CKF_INIT: the ncclComm_t* to read back at return */
	__u64 sp;	/* stack pointer at entry: the return address slot */
	__u64 sendbuf;
	__u64 recvbuf;
	__s32 peer;
	__s32 redop;
};

struct rs_frames {
	__u32 depth;
	__u32 pad;
	struct rs_frame f[RS_MAX_DEPTH];
	__u8 unique_id[RS_UNIQUE_ID_BYTES];	/* init never nests in init */
};

_Static_assert(sizeof(struct rs_frames) == 8 + 96 * RS_MAX_DEPTH + RS_UNIQUE_ID_BYTES,
	       "rs_frames wire size");

#endif /* RS_COLLECTIVES_H */
