/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* io family wire format: blocking read/write/flush syscalls with the kind of fd they touched. */
#ifndef RS_IO_H
#define RS_IO_H

#include "rankscope.h"

enum rs_fd_kind {
	RS_FD_REG,
	RS_FD_PIPE,
	RS_FD_SOCK,
	RS_FD_OTHER,
	RS_FD_MAX,
};

enum rs_io_op {
	RS_IO_READ,
	RS_IO_PREAD64,
	RS_IO_READV,
	RS_IO_PREADV,
	RS_IO_RECVFROM,
	RS_IO_RECVMSG,
	RS_IO_WRITE,
	RS_IO_PWRITE64,
	RS_IO_WRITEV,
	RS_IO_SENDTO,
	RS_IO_SENDMSG,
	RS_IO_FSYNC,		/* flushes: a checkpoint's time is mostly these */
	RS_IO_FDATASYNC,
	RS_IO_SYNC_FILE_RANGE,
	RS_IO_OP_MAX,
};

#define RS_IO_FIRST_WRITE RS_IO_WRITE

/* RS_EV_IO: one syscall that took at least io_min_ns. */
struct rs_ev_io {
	struct rs_hdr h;
	__u64 start_ns;
	__u64 end_ns;
	__s64 ret;	/* bytes, or -errno */
	__s32 fd;
	__u8 op;	/* enum rs_io_op */
	__u8 fd_kind;	/* enum rs_fd_kind */
	__u8 pad[2];
};
_Static_assert(sizeof(struct rs_ev_io) == 56, "rs_ev_io wire size");

/* rs_io_stats value, indexed by rs_io_index(slot, kind, dir): every call, however short. */
struct rs_io_stat {
	struct rs_hist lat;
	__u64 bytes;
	__u64 errors;
	__u64 last_ns;	/* when the latest call that did not fail returned (a burst's true end) */
};
_Static_assert(sizeof(struct rs_io_stat) == sizeof(struct rs_hist) + 24, "rs_io_stat wire size");

#define RS_IO_STATS_MAX (RS_MAX_SLOTS * RS_FD_MAX * 2)

static inline __u32 rs_io_index(__u32 slot, __u32 kind, __u32 is_write)
{
	return (slot * RS_FD_MAX + kind) * 2 + (is_write ? 1 : 0);
}

#endif /* RS_IO_H */
