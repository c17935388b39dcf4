/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* sched family wire format: off-CPU intervals, run-queue delay, fork and exit of a rank's family. */
#ifndef RS_SCHED_H
#define RS_SCHED_H

#include "rankscope.h"

/* RS_EV_OFFCPU: one thread was off CPU for [start_ns, end_ns); runq_ns of that was runnable. */
struct rs_ev_offcpu {
	struct rs_hdr h;
	__u64 start_ns;
	__u64 end_ns;
	__u64 runq_ns;
	__s64 state;	/* task state at switch-out: 0 preempted, 1 interruptible, 2 uninterruptible */
	__s32 syscall;	/* the syscall it blocked in; -1 if none (preempted in user space) */
	__u32 pad;
};
_Static_assert(sizeof(struct rs_ev_offcpu) == 64, "rs_ev_offcpu wire size");

/* RS_EV_EXIT: the last thread of a tracked process exited. */
struct rs_ev_exit {
	struct rs_hdr h;
	__s32 exit_code;	/* wait(2) status encoding */
	__u32 flags;		/* RS_TRACK_ROOT when the rank itself died */
};
_Static_assert(sizeof(struct rs_ev_exit) == 32, "rs_ev_exit wire size");

/* RS_EV_FORK: a tracked process forked a new process, which now belongs to the same rank. */
struct rs_ev_fork {
	struct rs_hdr h;
	__u32 child_tgid;
	__u32 pad;
};
_Static_assert(sizeof(struct rs_ev_fork) == 32, "rs_ev_fork wire size");

/* RS_EV_EXEC: a process replaced its image. Tracked ones always (a rank that execs is gone);
 * with discovery on, every process on the host (slot RS_SLOT_NONE when untracked). */
struct rs_ev_exec {
	struct rs_hdr h;
	__u32 flags;	/* RS_TRACK_ROOT when a rank itself exec'd */
	__u32 pad;
};
_Static_assert(sizeof(struct rs_ev_exec) == 32, "rs_ev_exec wire size");

/* rs_sched_slots value, indexed by slot: cumulative ns. "main" is the thread whose tid == rank pid. */
struct rs_sched_slot {
	__u64 main_on_ns;
	__u64 main_off_ns;
	__u64 main_runq_ns;
	__u64 all_on_ns;
	__u64 all_off_ns;
	__u64 all_runq_ns;
	__u64 switches;
	__u64 forks;
};
_Static_assert(sizeof(struct rs_sched_slot) == 64, "rs_sched_slot wire size");

/* rs_threads value, keyed by tid: where each tracked thread stands right now. */
struct rs_thread {
	__u64 on_ns;	/* switched in at; 0 if unknown */
	__u64 off_ns;	/* switched out at; 0 if unknown */
	__u64 wake_ns;	/* became runnable at; 0 if not runnable */
	__s64 off_state;
	__s64 off_syscall;
};
_Static_assert(sizeof(struct rs_thread) == 40, "rs_thread wire size");

#endif /* RS_SCHED_H */
