// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* collectives family: one uprobe/uretprobe pair per collective API, decoded by attach cookie. */
#include "common.bpf.h"
#include <bpf/usdt.bpf.h>
#include "collectives.h"


/*
 * The calls in progress on a thread, in the thread's own local storage: found from the task
 * pointer in a few loads (no hash of the tid), made on a thread's first call and freed with
 * the thread, so there is no table to size or to evict from. User space reads a rank's main
 * thread by pidfd (probe_collectives__inflight).
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct rs_frames);
} rs_coll_frames SEC(".maps");

struct rs_seq_key {
	__u32 tgid;
	__u32 lib;	/* gloo and step markers have no communicator: keep their counts apart */
	__u64 comm;
};

/* Next sequence number per (process, communicator); counted here so drops cannot skew it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct rs_seq_key);
	__type(value, __u64);
} rs_coll_seq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rs_frames);
} rs_coll_zero SEC(".maps");

/* SysV x86-64: six integer registers, then 8-byte stack slots above the return address. */
static __always_inline __u64 arg_n(struct pt_regs *ctx, __u32 n)
{
	__u64 v = 0;

	switch (n) {
	case 1: return PT_REGS_PARM1(ctx);
	case 2: return PT_REGS_PARM2(ctx);
	case 3: return PT_REGS_PARM3(ctx);
	case 4: return PT_REGS_PARM4(ctx);
	case 5: return PT_REGS_PARM5(ctx);
	case 6: return BPF_CORE_READ(ctx, r9);
	case 0: return 0;
	default:
		bpf_probe_read_user(&v, sizeof(v), (void *)(PT_REGS_SP(ctx) + 8 * (n - 6)));
		return v;
	}
}

/* Decode the arguments of the call at ctx into f, and take its sequence number. */
static __always_inline void fill_frame(struct pt_regs *ctx, struct rs_frames *fr,
				       struct rs_frame *f, __u64 ck, __u32 tgid)
{
	__u32 flags = RS_CK_FLAGS(ck);
	struct rs_seq_key sk = {};
	__u64 *seq;

	f->cookie = ck;
	f->comm = arg_n(ctx, RS_CK_COMM(ck));
	f->count = arg_n(ctx, RS_CK_COUNT(ck));
	f->dtype = arg_n(ctx, RS_CK_DTYPE(ck));
	if (flags & RS_CKF_COUNT32)
		f->count = (__u32)f->count;
	if (flags & RS_CKF_DTYPE32)
		f->dtype = (__u32)f->dtype;
	f->stream = arg_n(ctx, RS_CK_STREAM(ck));
	f->peer = RS_CK_PEER(ck) ? (__s32)arg_n(ctx, RS_CK_PEER(ck)) : -1;
	f->arg1 = PT_REGS_PARM1(ctx);
	f->sp = PT_REGS_SP(ctx);
	f->sendbuf = arg_n(ctx, RS_CK_SENDBUF(ck));
	f->recvbuf = arg_n(ctx, RS_CK_RECVBUF(ck));
	f->redop = RS_CK_REDOP(ck) ? (__s32)arg_n(ctx, RS_CK_REDOP(ck)) : -1;
	f->seq = RS_SEQ_NONE;
	if (fr && (flags & RS_CKF_INIT) && RS_CK_LIB(ck) != RS_LIB_MPI) {
		/* ncclUniqueId is passed by value: 128 bytes in memory right above the return address. */
		bpf_probe_read_user(fr->unique_id, sizeof(fr->unique_id),
				    (void *)(PT_REGS_SP(ctx) + 8));
	}
	if (flags & RS_CKF_SEQ) {
		sk.tgid = tgid;
		sk.lib = RS_CK_LIB(ck);
		sk.comm = f->comm;
		seq = bpf_map_lookup_elem(&rs_coll_seq, &sk);
		if (!seq) {
			__u64 zero = 0;

			/* two threads may race here: NOEXIST keeps one zero, both then add */
			if (!bpf_map_update_elem(&rs_coll_seq, &sk, &zero, BPF_NOEXIST))
				rs_count_lru(RS_FAM_COLL, true);
			seq = bpf_map_lookup_elem(&rs_coll_seq, &sk);
		}
		if (seq)
			f->seq = __sync_fetch_and_add(seq, 1);
	}
	f->enter_ns = bpf_ktime_get_ns();
}

/* exit_ns 0: an entry-only record, stamped with its entry time (no second clock read) */
static __always_inline void emit_coll(const struct rs_track *tr, __u32 tgid, __u32 tid,
				      const struct rs_frame *f, __u64 exit_ns, __s64 ret, __u32 depth)
{
	struct rs_ev_coll *e;

	e = rs_reserve_at(RS_FAM_COLL, sizeof(*e), RS_EV_COLL, tr, tgid, tid,
			  exit_ns ? exit_ns : f->enter_ns);
	if (!e)
		return;
	e->enter_ns = f->enter_ns;
	e->exit_ns = exit_ns;
	e->comm = f->comm;
	e->seq = f->seq;
	e->count = f->count;
	e->dtype = f->dtype;
	e->stream = f->stream;
	e->ret = ret;
	e->peer = f->peer;
	e->lib = RS_CK_LIB(f->cookie);
	e->op = RS_CK_OP(f->cookie);
	e->depth = depth;
	e->pad = 0;
	e->sendbuf = f->sendbuf;
	e->recvbuf = f->recvbuf;
	e->redop = f->redop;
	e->pad2 = 0;
	rs_submit(e);
}

SEC("uprobe")
int rs_coll_enter(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tid = task->pid, tgid = task->tgid, d, zero = 0;
	struct rs_track own = {}, *tr;
	struct rs_frames *fr;
	__u64 ck;

	/* The probes are on this process only: the bitmap is enough to drop a call made while
	 * it is being untracked. Its rs_track (the slot) is looked up once, at the return. */
	if (!rs_maybe(tgid))
		return 0;
	ck = bpf_get_attach_cookie(ctx);
	if (RS_CK_FLAGS(ck) & RS_CKF_ENTRY) {
		own.slot = RS_CK_SLOT(ck);
		tr = RS_CK_HAS_SLOT(ck) ? &own : rs_lookup(tgid);
		if (!tr)
			return 0;
		/* no frame to keep: decode into per-CPU scratch and record now */
		fr = bpf_map_lookup_elem(&rs_coll_zero, &zero);
		if (!fr)
			return 0;
		fill_frame(ctx, NULL, &fr->f[0], ck, tgid);
		emit_coll(tr, tgid, tid, &fr->f[0], 0, 0, 0);
		return 0;
	}
	fr = bpf_task_storage_get(&rs_coll_frames, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!fr)
		return 0;
	d = fr->depth;
	fr->depth = d + 1;	/* counted even when too deep, so returns stay matched */
	if (d >= RS_MAX_DEPTH)
		return 0;
	fill_frame(ctx, fr, &fr->f[d], ck, tgid);
	return 0;
}

static __always_inline void emit_init(struct pt_regs *ctx, struct rs_track *tr, __u32 tgid,
				      __u32 tid, struct rs_frames *fr, struct rs_frame *f, __u64 now)
{
	struct rs_ev_comm_init *e;
	__u64 comm = 0;

	e = rs_reserve_at(RS_FAM_COLL, sizeof(*e), RS_EV_COMM_INIT, tr, tgid, tid, now);
	if (!e)
		return;
	/* NCCL: *arg1 is the new communicator; MPI_Comm_split & co.: the out-pointer sits in the
	 * stream slot, and the parent communicator goes where NCCL's unique id would */
	if (RS_CK_LIB(f->cookie) == RS_LIB_MPI) {
		bpf_probe_read_user(&comm, sizeof(comm), (void *)f->stream);
		__builtin_memset(e->unique_id, 0, sizeof(e->unique_id));
		__builtin_memcpy(e->unique_id, &f->comm, sizeof(f->comm));
	} else {
		bpf_probe_read_user(&comm, sizeof(comm), (void *)f->arg1);
		__builtin_memcpy(e->unique_id, fr->unique_id, sizeof(e->unique_id));
	}
	e->enter_ns = f->enter_ns;
	e->exit_ns = now;
	e->comm = comm;
	e->ret = PT_REGS_RC(ctx);
	e->nranks = (__s32)f->dtype;	/* table puts nranks in the dtype slot */
	e->rank = (__s32)f->count;	/* and rank in the count slot */
	e->lib = RS_CK_LIB(f->cookie);
	__builtin_memset(e->pad, 0, sizeof(e->pad));
	rs_submit(e);
}

SEC("uretprobe")
int rs_coll_exit(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tid = task->pid, tgid = task->tgid, d, i;
	struct rs_track own = {}, *tr;
	__u64 now, sp;
	struct rs_frames *fr;
	struct rs_frame *f;

	if (!rs_maybe(tgid))
		return 0;
	fr = bpf_task_storage_get(&rs_coll_frames, task, NULL, 0);
	if (!fr || !fr->depth)
		return 0;
	now = bpf_ktime_get_ns();
	/* After the return, sp is one slot above the entry's. Frames entered deeper than that
	 * were left by longjmp and will never return: drop them. */
	sp = PT_REGS_SP(ctx);
	for (i = 0; i < RS_MAX_DEPTH; i++) {
		d = fr->depth;
		if (d < 2 || d > RS_MAX_DEPTH)
			break;
		d = (d - 1) & (RS_MAX_DEPTH - 1);	/* the mask is for the verifier */
		if (fr->f[d].sp + 8 >= sp)
			break;
		fr->depth = d;
	}
	d = --fr->depth;
	if (d >= RS_MAX_DEPTH)
		return 0;
	/* popped whatever happens next, so enters and returns stay matched */
	f = &fr->f[d];
	own.slot = RS_CK_SLOT(f->cookie);
	tr = RS_CK_HAS_SLOT(f->cookie) ? &own : rs_lookup(tgid);
	if (!tr)
		return 0;
	if (RS_CK_FLAGS(f->cookie) & RS_CKF_INIT) {
		emit_init(ctx, tr, tgid, tid, fr, f, now);
		return 0;
	}
	emit_coll(tr, tgid, tid, f, now, PT_REGS_RC(ctx), d);
	return 0;
}

/* --steps usdt:PROVIDER:NAME: the probe's cookie belongs to libbpf's USDT machinery, so the
 * marker's decoding is fixed here: an entry-only, sequenced step marker. */
SEC("usdt")
int rs_usdt_marker(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32, zero = 0;
	struct rs_frames *fr;
	struct rs_track *tr;

	tr = rs_lookup(tgid);
	if (!tr)
		return 0;
	fr = bpf_map_lookup_elem(&rs_coll_zero, &zero);
	if (!fr)
		return 0;
	fill_frame(ctx, NULL, &fr->f[0], RS_MARKER_COOKIE, tgid);
	emit_coll(tr, tgid, tid, &fr->f[0], 0, 0, 0);
	return 0;
}

/*
 * The cheapest enter/exit pair, put by user space on a function of its own for a moment at
 * load: calls timed with and without it give the trap cost each probed call pays outside
 * the [enter_ns, exit_ns] the programs above stamp (probe_collectives__calibrate).
 */
SEC("uprobe")
int rs_calib_enter(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe")
int rs_calib_exit(struct pt_regs *ctx)
{
	return 0;
}
