/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* BPF-only helpers shared by every family: the tracked-tgid filter, reserve-or-count-drop. */
#ifndef RS_COMMON_BPF_H
#define RS_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "rankscope.h"

/*
 * These maps exist once per rankscope process: user space creates them and every
 * family's skeleton reuses the fds, so one ring buffer and one filter serve all families.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RS_MAX_TRACKED);
	__type(key, __u32);
	__type(value, struct rs_track);
} rs_tracked SEC(".maps");

/*
 * Every global hook (sched_switch, sys_enter, ...) runs for every task on the node and asks
 * "is this ours?" first. An array lookup is inlined by the verifier into a bounds check and
 * an add, so the answer for an untracked task costs a few instructions and no helper call.
 * Mmapable: user space sets and clears bits with atomic ops on the same words.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, RS_TGID_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} rs_tgid_bits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);	/* user space sets --ringbuf-kb */
} rs_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RS_FAM_MAX);
	__type(key, __u32);
	__type(value, struct rs_fam_stats);
} rs_stats SEC(".maps");

/*
 * Socket -> owning rank. The io family fills it at socket syscalls, the net family at state
 * changes made in a rank's context; the net family reads it in softirq context.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RS_MAX_SOCKS);
	__type(key, __u64);
	__type(value, struct rs_track);
} rs_sock_owner SEC(".maps");

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* May tgid be tracked? false is exact; true means "look it up". */
static __always_inline bool rs_maybe(__u32 tgid)
{
	__u32 w = tgid >> 6;
	__u64 *bits = bpf_map_lookup_elem(&rs_tgid_bits, &w);

	return bits && (*bits >> (tgid & 63)) & 1;
}

/* Bits of forked workers; user space owns the roots' bits (probes__track). */
static __always_inline void rs_bit_set(__u32 tgid)
{
	__u32 w = tgid >> 6;
	__u64 *bits = bpf_map_lookup_elem(&rs_tgid_bits, &w);

	if (bits)
		__sync_fetch_and_or(bits, 1ULL << (tgid & 63));
}

static __always_inline void rs_bit_clear(__u32 tgid)
{
	__u32 w = tgid >> 6;
	__u64 *bits = bpf_map_lookup_elem(&rs_tgid_bits, &w);

	if (bits)
		__sync_fetch_and_and(bits, ~(1ULL << (tgid & 63)));
}

static __always_inline struct rs_track *rs_lookup(__u32 tgid)
{
	if (!rs_maybe(tgid))
		return NULL;
	return bpf_map_lookup_elem(&rs_tracked, &tgid);
}

/* The current task by a per-CPU load (the x86-64 JIT inlines this helper; pid_tgid is a
 * call), then its tgid by a plain load: the "not ours" answer costs no call at all. */
static __always_inline struct rs_track *rs_current(void)
{
	return rs_lookup(bpf_get_current_task_btf()->tgid);
}

/* A hash map refused an update for want of room: counted per family, never silent. */
static __always_inline void rs_count_full(__u32 family)
{
	struct rs_fam_stats *st = bpf_map_lookup_elem(&rs_stats, &family);

	if (st)
		__sync_fetch_and_add(&st->map_full, 1);
}

/* An entry put in (ins) or taken out of the family's LRU map: what lets user space count the
 * entries the map evicted on its own. Only on success: a new entry, or one that was there. */
static __always_inline void rs_count_lru(__u32 family, bool ins)
{
	struct rs_fam_stats *st = bpf_map_lookup_elem(&rs_stats, &family);

	if (!st)
		return;
	if (ins)
		__sync_fetch_and_add(&st->lru_ins, 1);
	else
		__sync_fetch_and_add(&st->lru_del, 1);
}

/* Reserve a record stamped ts and count the attempt; a failed reserve is counted, never
 * silent. ts: a clock read the caller made already (saves a helper call on a hot path). */
static __always_inline void *rs_reserve_at(__u32 family, __u32 size, __u32 kind,
					   const struct rs_track *tr, __u32 tgid, __u32 tid,
					   __u64 ts)
{
	struct rs_fam_stats *st;
	struct rs_hdr *h;

	/* atomic even per CPU: a softirq program can interrupt a task-context one here */
	st = bpf_map_lookup_elem(&rs_stats, &family);
	if (st)
		__sync_fetch_and_add(&st->attempted, 1);
	h = bpf_ringbuf_reserve(&rs_events, size, 0);
	if (!h) {
		if (st)
			__sync_fetch_and_add(&st->dropped, 1);
		return NULL;
	}
	h->size = size;
	h->kind = kind;
	h->tgid = tgid;
	h->tid = tid;
	h->slot = tr->slot;
	h->ts_ns = ts;
	return h;
}

static __always_inline void *rs_reserve(__u32 family, __u32 size, __u32 kind,
					const struct rs_track *tr, __u32 tgid, __u32 tid)
{
	return rs_reserve_at(family, size, kind, tr, tgid, tid, bpf_ktime_get_ns());
}

/* No wakeup: a wakeup per event costs the traced thread over a microsecond; user space polls. */
static __always_inline void rs_submit(void *rec)
{
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
}

static __always_inline __u32 rs_log2(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffffULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
	shift = (v > 0xff) << 3; v >>= shift; r |= shift;
	shift = (v > 0xf) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline void rs_hist_add(struct rs_hist *h, __u64 ns)
{
	__u32 b = rs_log2(ns);

	if (b >= RS_HIST_SLOTS)
		b = RS_HIST_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[b], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum_ns, ns);
}

#endif /* RS_COMMON_BPF_H */
