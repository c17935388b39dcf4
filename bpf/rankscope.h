/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Wire format shared by every probe family and user space: record header, kinds, shared maps. */
#ifndef RANKSCOPE_H
#define RANKSCOPE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * Bump on any incompatible change. Structs are append-only: new fields go at the end and
 * the reader checks hdr.size before touching them.
 */
#define RS_ABI 1

#define RS_MAX_SLOTS	256	/* ranks one rankscope process tracks; a slot indexes per-rank maps */
#define RS_MAX_TRACKED	8192	/* tgids: ranks plus their forked workers */
/* PID_MAX_LIMIT on 64-bit: no tgid reaches it, whatever kernel.pid_max says */
#define RS_PID_LIMIT	(4 * 1024 * 1024)
#define RS_TGID_WORDS	(RS_PID_LIMIT / 64)	/* rs_tgid_bits: one bit per tgid, 512 KiB */
#define RS_MAX_THREADS	65536
#define RS_MAX_SOCKS	16384
#define RS_HIST_SLOTS	40	/* log2(ns) buckets: bucket b holds [2^b, 2^(b+1)) ns, up to ~18 min */

enum rs_family {
	RS_FAM_SCHED,
	RS_FAM_IO,
	RS_FAM_NET,
	RS_FAM_COLL,
	RS_FAM_MAX,
};

enum rs_kind {
	RS_EV_OFFCPU = 1,
	RS_EV_EXIT,
	RS_EV_FORK,
	RS_EV_IO,
	RS_EV_TCP_STATE,
	RS_EV_TCP_RETRANS,
	RS_EV_COLL,
	RS_EV_COMM_INIT,
	RS_EV_EXEC,
	RS_EV_KIND_MAX,
};

/* Every ring-buffer record starts with this; size covers the whole record. */
struct rs_hdr {
	__u16 size;
	__u16 kind;
	__u32 tgid;
	__u32 tid;
	__u32 slot;
	__u64 ts_ns;	/* CLOCK_MONOTONIC (bpf_ktime_get_ns) when the record was made */
};
_Static_assert(sizeof(struct rs_hdr) == 24, "rs_hdr wire size");

#define RS_SLOT_NONE	0xffffffffU	/* a record of a process no rank owns (discovery) */

#define RS_TRACK_ROOT	0x1	/* the rank's own process, not a forked worker */

/*
 * Value of rs_tracked, keyed by tgid. User space fills roots; the sched family adds children.
 * rs_tgid_bits holds a superset of its keys: a tgid's bit is set before its entry goes in and
 * cleared after it comes out, so a clear bit proves "not ours" without the hash lookup.
 */
struct rs_track {
	__u32 slot;
	__u32 root_tgid;
	__u32 flags;
	__u32 exited;	/* set once by the exit tracepoint, so one exit record per process */
};
_Static_assert(sizeof(struct rs_track) == 16, "rs_track wire size");

/* Per-CPU, indexed by enum rs_family. attempted == received + dropped once drained. */
struct rs_fam_stats {
	__u64 attempted;
	__u64 dropped;
	__u64 map_full;		/* updates a full hash map refused (a worker left untracked) */
	/* entries the family's programs put in and took out of its LRU map (sched: rs_threads,
	 * coll: rs_coll_seq, io and net: rs_sock_owner); with user space's own and a count of
	 * what is there, the entries the map evicted (see probes__lru_evictions) */
	__u64 lru_ins;
	__u64 lru_del;
};
_Static_assert(sizeof(struct rs_fam_stats) == 40, "rs_fam_stats wire size");

/* Cumulative log2 histogram; never reset, readers diff two snapshots. */
struct rs_hist {
	__u64 slots[RS_HIST_SLOTS];
	__u64 count;
	__u64 sum_ns;
};
_Static_assert(sizeof(struct rs_hist) == 8 * (RS_HIST_SLOTS + 2), "rs_hist wire size");

#endif /* RANKSCOPE_H */
