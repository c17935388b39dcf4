// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* io family: read/write/flush syscalls of tracked ranks, by fd kind; streams the long ones. */
#include "common.bpf.h"
#include "io.h"

/* Calls shorter than this only land in the histograms. */
/* Not const: a capture lowers it at run time (every call streamed), then puts it back. */
volatile __u64 io_min_ns = 100000;

#define S_IFMT   00170000
#define S_IFSOCK 0140000
#define S_IFREG  0100000
#define S_IFIFO  0010000

struct rs_inflight {
	__u64 start_ns;
	__s32 fd;
	__u8 op;
	__u8 kind;
	__u8 pad[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RS_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct rs_inflight);
} rs_io_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_IO_STATS_MAX);
	__type(key, __u32);
	__type(value, struct rs_io_stat);
} rs_io_stats SEC(".maps");

static __always_inline struct file *fd_file(struct task_struct *task, int fd)
{
	struct file **fds;
	struct file *f = NULL;
	unsigned int max;

	if (fd < 0)
		return NULL;
	max = BPF_CORE_READ(task, files, fdt, max_fds);
	if ((unsigned int)fd >= max)
		return NULL;
	fds = BPF_CORE_READ(task, files, fdt, fd);
	if (bpf_core_read(&f, sizeof(f), &fds[fd]))
		return NULL;
	return f;
}

static __always_inline int io_enter(int fd, __u32 op)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct rs_inflight in = {};
	struct rs_track *tr;
	struct file *f;
	__u32 tid = task->pid, mode;

	tr = rs_lookup(task->tgid);
	if (!tr)
		return 0;
	in.kind = RS_FD_OTHER;
	f = fd_file(task, fd);
	if (f) {
		mode = BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT;
		if (mode == S_IFREG) {
			in.kind = RS_FD_REG;
		} else if (mode == S_IFIFO) {
			in.kind = RS_FD_PIPE;
		} else if (mode == S_IFSOCK) {
			struct socket *sock = BPF_CORE_READ(f, private_data);
			__u64 sk = (__u64)BPF_CORE_READ(sock, sk);

			struct rs_track *own;

			in.kind = RS_FD_SOCK;
			/* Lets the net family charge softirq-time TCP events to this rank; the
			 * process using the socket is its owner, whoever recorded it first. */
			own = sk ? bpf_map_lookup_elem(&rs_sock_owner, &sk) : NULL;
			if (own && own->slot != tr->slot)
				*own = *tr;
			else if (sk && !own &&
				 !bpf_map_update_elem(&rs_sock_owner, &sk, tr, BPF_NOEXIST))
				rs_count_lru(RS_FAM_IO, true);
		}
	}
	in.start_ns = bpf_ktime_get_ns();
	in.fd = fd;
	in.op = op;
	bpf_map_update_elem(&rs_io_inflight, &tid, &in, BPF_ANY);
	return 0;
}

static __always_inline int io_exit(long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct rs_inflight *in;
	struct rs_io_stat *st;
	struct rs_ev_io *e;
	struct rs_track *tr;
	__u64 now, dur;
	__u32 tid = task->pid, tgid = task->tgid, idx, is_write;

	/* untracked (a pipe benchmark, a sidecar): no inflight lookup either. An entry left by a
	 * process untracked mid-call is overwritten at its thread's next tracked enter. */
	if (!rs_maybe(tgid))
		return 0;
	in = bpf_map_lookup_elem(&rs_io_inflight, &tid);
	if (!in)
		return 0;
	tr = rs_lookup(tgid);
	if (!tr)
		goto out;
	now = bpf_ktime_get_ns();
	dur = now - in->start_ns;
	is_write = in->op >= RS_IO_FIRST_WRITE;
	idx = rs_io_index(tr->slot, in->kind, is_write);
	st = bpf_map_lookup_elem(&rs_io_stats, &idx);
	if (st) {
		rs_hist_add(&st->lat, dur);
		if (ret > 0)
			__sync_fetch_and_add(&st->bytes, ret);
		else if (ret < 0)
			__sync_fetch_and_add(&st->errors, 1);
		if (ret >= 0)
			st->last_ns = now;
	}
	if (dur >= io_min_ns) {
		e = rs_reserve(RS_FAM_IO, sizeof(*e), RS_EV_IO, tr, tgid, tid);
		if (e) {
			e->start_ns = in->start_ns;
			e->end_ns = now;
			e->ret = ret;
			e->fd = in->fd;
			e->op = in->op;
			e->fd_kind = in->kind;
			rs_submit(e);
		}
	}
out:
	bpf_map_delete_elem(&rs_io_inflight, &tid);
	return 0;
}

/* x86-64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl); -1: not ours. */
static __always_inline int io_op(long nr)
{
	switch (nr) {
	case 0: return RS_IO_READ;
	case 17: return RS_IO_PREAD64;
	case 19: return RS_IO_READV;
	case 295: return RS_IO_PREADV;
	case 45: return RS_IO_RECVFROM;
	case 47: return RS_IO_RECVMSG;
	case 1: return RS_IO_WRITE;
	case 18: return RS_IO_PWRITE64;
	case 20: return RS_IO_WRITEV;
	case 44: return RS_IO_SENDTO;
	case 46: return RS_IO_SENDMSG;
	case 74: return RS_IO_FSYNC;
	case 75: return RS_IO_FDATASYNC;
	case 277: return RS_IO_SYNC_FILE_RANGE;
	default: return -1;
	}
}

/*
 * One program on the raw syscall tracepoints instead of one perf-event tracepoint per
 * syscall: cheaper per traced call, and 2 links to detach instead of 22 (each detach of a
 * faultable tracepoint waits for an RCU tasks-trace grace period). Every syscall on the host
 * runs it, so the syscall number, already in a register, is checked before the tgid map.
 */
SEC("tp_btf/sys_enter")
int BPF_PROG(rs_sys_enter, struct pt_regs *regs, long id)
{
	int op = io_op(id);

	if (op < 0)
		return 0;
	return io_enter((int)regs->di, op);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(rs_sys_exit, struct pt_regs *regs, long ret)
{
	if (io_op(regs->orig_ax) < 0)
		return 0;
	return io_exit(ret);
}
