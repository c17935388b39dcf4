// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Validating decoder for ring-buffer records; nothing from the kernel is trusted blindly. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "decode.h"

static const struct {
	unsigned int size;
	int family;
} kinds[RS_EV_KIND_MAX] = {
	[RS_EV_OFFCPU] = { sizeof(struct rs_ev_offcpu), RS_FAM_SCHED },
	[RS_EV_EXIT] = { sizeof(struct rs_ev_exit), RS_FAM_SCHED },
	[RS_EV_FORK] = { sizeof(struct rs_ev_fork), RS_FAM_SCHED },
	[RS_EV_EXEC] = { sizeof(struct rs_ev_exec), RS_FAM_SCHED },
	[RS_EV_IO] = { sizeof(struct rs_ev_io), RS_FAM_IO },
	[RS_EV_TCP_STATE] = { sizeof(struct rs_ev_tcp), RS_FAM_NET },
	[RS_EV_TCP_RETRANS] = { sizeof(struct rs_ev_tcp), RS_FAM_NET },
	[RS_EV_COLL] = { sizeof(struct rs_ev_coll), RS_FAM_COLL },
	[RS_EV_COMM_INIT] = { sizeof(struct rs_ev_comm_init), RS_FAM_COLL },
};

int decode__event(const void *data, size_t len, struct rs_event *ev)
{
	struct rs_hdr h;
	unsigned int want;

	memset(ev, 0, sizeof(*ev));
	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, data, sizeof(h));
	if (h.size < sizeof(h) || h.size > len)
		return -EINVAL;
	if (h.kind == 0 || h.kind >= RS_EV_KIND_MAX)
		return -ENOTSUP;
	want = kinds[h.kind].size;
	if (h.size < want)
		return -EINVAL;
	memcpy(&ev->h, data, want);
	ev->kind = h.kind;
	return 0;
}

int decode__family(unsigned int kind)
{
	if (kind == 0 || kind >= RS_EV_KIND_MAX)
		return -1;
	return kinds[kind].family;
}

const char *decode__family_name(unsigned int fam)
{
	static const char *const n[RS_FAM_MAX] = { "sched", "io", "net", "collectives" };

	return fam < RS_FAM_MAX ? n[fam] : "unknown";
}

const char *decode__op_name(unsigned int op)
{
	static const char *const n[RS_OP_MAX] = {
		[RS_OP_NONE] = "none",
		[RS_OP_ALLREDUCE] = "allreduce",
		[RS_OP_ALLGATHER] = "allgather",
		[RS_OP_REDUCE_SCATTER] = "reduce_scatter",
		[RS_OP_BROADCAST] = "broadcast",
		[RS_OP_REDUCE] = "reduce",
		[RS_OP_ALLTOALL] = "alltoall",
		[RS_OP_BARRIER] = "barrier",
		[RS_OP_GATHER] = "gather",
		[RS_OP_SCATTER] = "scatter",
		[RS_OP_SEND] = "send",
		[RS_OP_RECV] = "recv",
		[RS_OP_GROUP_START] = "group_start",
		[RS_OP_GROUP_END] = "group_end",
		[RS_OP_COMM_INIT] = "comm_init",
		[RS_OP_STEP_FORWARD] = "ddp_prepare_for_forward",
		[RS_OP_STEP_BACKWARD] = "ddp_finalize_backward",
		[RS_OP_GPU_SYNC] = "gpu_sync",
	};

	return op < RS_OP_MAX && n[op] ? n[op] : "unknown";
}

int decode__by_name(const char *(*name)(unsigned int), unsigned int max, const char *s)
{
	unsigned int v;

	for (v = 0; v < max; v++)
		if (!strcmp(name(v), s))
			return (int)v;
	return -1;
}

const char *decode__lib_name(unsigned int lib)
{
	static const char *const n[RS_LIB_MAX] = { "none", "nccl", "mpi", "gloo", "torch",
						    "cudart", "cuda" };

	return lib < RS_LIB_MAX ? n[lib] : "unknown";
}

const char *decode__fd_kind_name(unsigned int kind)
{
	static const char *const n[RS_FD_MAX] = { "file", "pipe", "socket", "other" };

	return kind < RS_FD_MAX ? n[kind] : "unknown";
}

const char *decode__io_op_name(unsigned int op)
{
	static const char *const n[RS_IO_OP_MAX] = {
		"read", "pread64", "readv", "preadv", "recvfrom", "recvmsg",
		"write", "pwrite64", "writev", "sendto", "sendmsg", "fsync", "fdatasync",
		"sync_file_range",
	};

	return op < RS_IO_OP_MAX ? n[op] : "unknown";
}

const char *decode__tcp_state_name(unsigned int s)
{
	static const char *const n[] = {
		"UNKNOWN", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",
		"TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING",
		"NEW_SYN_RECV", "BOUND_INACTIVE",
	};

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "UNKNOWN";
}

unsigned int decode__nccl_dtype_size(uint64_t dtype)
{
	/* ncclDataType_t, nccl.h 2.28: int8 uint8 int32 uint32 int64 uint64 f16 f32 f64 bf16 f8 f8 */
	static const unsigned char sz[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

	return dtype < sizeof(sz) ? sz[dtype] : 0;
}

char *decode__addr(const uint8_t a[16], char *out, size_t n)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (!memcmp(a, v4mapped, sizeof(v4mapped)))
		inet_ntop(AF_INET, a + 12, out, n);
	else
		inet_ntop(AF_INET6, a, out, n);
	return out;
}

const char *decode__syscall_name(long nr)
{
	/* the ones a waiting rank sits in; arch/x86/entry/syscalls/syscall_64.tbl */
	switch (nr) {
	case 0: return "read";
	case 1: return "write";
	case 7: return "poll";
	case 17: return "pread64";
	case 23: return "select";
	case 35: return "nanosleep";
	case 45: return "recvfrom";
	case 47: return "recvmsg";
	case 61: return "wait4";
	case 202: return "futex";
	case 230: return "clock_nanosleep";
	case 232: return "epoll_wait";
	case 270: return "pselect6";
	case 271: return "ppoll";
	case 281: return "epoll_pwait";
	default: return "syscall";
	}
}
