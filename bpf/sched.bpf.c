// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* sched family: on/off-CPU time and run-queue delay per thread, and a rank's family tree. */
#include "common.bpf.h"
#include "sched.h"

/* Off-CPU intervals shorter than this are only counted, not streamed. */
/* Not const: a capture lowers it at run time, then puts it back. */
volatile __u64 offcpu_min_ns = 100000;
/* The daemon finds new ranks from exec records of every process, not just tracked ones. */
const volatile bool discover = false;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RS_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct rs_thread);
} rs_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct rs_sched_slot);
} rs_sched_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct rs_hist);
} rs_runq_hist SEC(".maps");

/* Kernels before 5.14 (commit 2f064a59a11f) named the field 'state'. */
struct task_struct___o {
	volatile long state;
} __attribute__((preserve_access_index));

static __always_inline __s64 task_state(struct task_struct *t)
{
	/* tp_btf arguments are trusted pointers: plain (CO-RE relocated) loads, no helper */
	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return ((struct task_struct___o *)t)->state;
}

#define PF_EXITING 0x00000004

/* task's entry, made on first sight; never for a task past its exit record, whose entry was
 * deleted there and would then stay forever (woken or switched in once more as it dies) */
static __always_inline struct rs_thread *thread_get(struct task_struct *task)
{
	struct rs_thread *t, zero = {};
	__u32 tid = task->pid;

	t = bpf_map_lookup_elem(&rs_threads, &tid);
	if (t)
		return t;
	if (task->flags & PF_EXITING)
		return NULL;
	if (!bpf_map_update_elem(&rs_threads, &tid, &zero, BPF_NOEXIST))
		rs_count_lru(RS_FAM_SCHED, true);
	return bpf_map_lookup_elem(&rs_threads, &tid);
}

static __always_inline int on_wakeup(struct task_struct *p)
{
	struct rs_thread *t;

	/* tp_btf arguments are trusted: plain loads, no probe-read helper calls */
	if (!rs_lookup(p->tgid))
		return 0;
	t = thread_get(p);
	if (t && !t->wake_ns)
		t->wake_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(rs_sched_wakeup, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(rs_sched_wakeup_new, struct task_struct *p)
{
	return on_wakeup(p);
}

static __always_inline void switch_out(struct task_struct *prev, struct rs_track *tr,
				       bool preempt, __u64 now)
{
	struct rs_sched_slot *ss;
	struct rs_thread *t;
	__u32 tid;

	/* a dying thread's last switch: its entry is gone and must stay gone (tid reuse) */
	if (prev->flags & PF_EXITING)
		return;
	tid = prev->pid;
	t = thread_get(prev);
	if (!t)
		return;
	ss = bpf_map_lookup_elem(&rs_sched_slots, &tr->slot);
	if (ss && t->on_ns && now > t->on_ns) {
		__sync_fetch_and_add(&ss->all_on_ns, now - t->on_ns);
		if (tid == tr->root_tgid)
			__sync_fetch_and_add(&ss->main_on_ns, now - t->on_ns);
	}
	t->on_ns = 0;
	t->off_ns = now;
	t->off_state = task_state(prev);
	/* which syscall it sleeps in tells input waits (poll, futex) from others (nanosleep) */
	t->off_syscall = -1;
	if (t->off_state) {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);

		if (regs)
			t->off_syscall = BPF_CORE_READ(regs, orig_ax);
	}
	/* Still on the run queue (preempted, even between set_current_state() and schedule()):
	 * its run-queue wait starts now. */
	t->wake_ns = preempt || t->off_state == 0 ? now : 0;
}

static __always_inline void switch_in(struct task_struct *next, struct rs_track *tr, __u64 now)
{
	struct rs_sched_slot *ss;
	struct rs_ev_offcpu *e;
	struct rs_thread *t;
	__u64 off = 0, runq = 0;
	__u32 tid, tgid;

	tgid = next->tgid;
	tid = next->pid;
	t = thread_get(next);
	if (!t)
		return;
	if (t->wake_ns && now > t->wake_ns)
		runq = now - t->wake_ns;
	if (t->off_ns && now > t->off_ns)
		off = now - t->off_ns;
	ss = bpf_map_lookup_elem(&rs_sched_slots, &tr->slot);
	if (ss) {
		__sync_fetch_and_add(&ss->switches, 1);
		__sync_fetch_and_add(&ss->all_off_ns, off);
		__sync_fetch_and_add(&ss->all_runq_ns, runq);
		if (tid == tr->root_tgid) {
			__sync_fetch_and_add(&ss->main_off_ns, off);
			__sync_fetch_and_add(&ss->main_runq_ns, runq);
		}
	}
	if (t->wake_ns) {
		struct rs_hist *h = bpf_map_lookup_elem(&rs_runq_hist, &tr->slot);

		if (h)
			rs_hist_add(h, runq);
	}
	if (t->off_ns && off >= offcpu_min_ns) {
		e = rs_reserve(RS_FAM_SCHED, sizeof(*e), RS_EV_OFFCPU, tr, tgid, tid);
		if (e) {
			e->start_ns = t->off_ns;
			e->end_ns = now;
			e->runq_ns = runq;
			e->state = t->off_state;
			e->syscall = t->off_syscall;
			e->pad = 0;
			rs_submit(e);
		}
	}
	t->on_ns = now;
	t->off_ns = 0;
	t->wake_ns = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(rs_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct rs_track *tr;
	__u64 now = 0;

	/* the common case on a busy node: neither task is ours, and not even the clock is read */
	tr = rs_lookup(prev->tgid);
	if (tr) {
		now = bpf_ktime_get_ns();
		switch_out(prev, tr, preempt, now);
	}
	tr = rs_lookup(next->tgid);
	if (tr) {
		if (!now)
			now = bpf_ktime_get_ns();
		switch_in(next, tr, now);
	}
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(rs_sched_fork, struct task_struct *parent, struct task_struct *child)
{
	struct rs_sched_slot *ss;
	struct rs_track *tr, ctr;
	struct rs_ev_fork *e;
	__u32 ptgid = parent->tgid, ctgid = child->tgid;

	if (ctgid == ptgid)	/* a new thread: already covered by its tgid */
		return 0;
	tr = rs_lookup(ptgid);
	if (!tr)
		return 0;
	/* A forked worker (data loader) belongs to the same rank as its parent. */
	ctr = *tr;
	ctr.flags &= ~RS_TRACK_ROOT;
	ctr.exited = 0;
	rs_bit_set(ctgid);	/* before the entry: a set bit may only ever over-approximate */
	if (bpf_map_update_elem(&rs_tracked, &ctgid, &ctr, BPF_ANY))
		rs_count_full(RS_FAM_SCHED);	/* RS_MAX_TRACKED processes tracked already */
	ss = bpf_map_lookup_elem(&rs_sched_slots, &tr->slot);
	if (ss)
		__sync_fetch_and_add(&ss->forks, 1);
	e = rs_reserve(RS_FAM_SCHED, sizeof(*e), RS_EV_FORK, tr, ptgid, parent->pid);
	if (!e)
		return 0;
	e->child_tgid = ctgid;
	rs_submit(e);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(rs_sched_exit, struct task_struct *p)
{
	struct rs_ev_exit *e;
	struct rs_track *tr;
	__u32 tgid = p->tgid, tid = p->pid;

	/* whether or not its process is still tracked: one untracked since (a rank dropped, a
	 * thread seeded as it died) must not leave its entry behind */
	if (!bpf_map_delete_elem(&rs_threads, &tid))
		rs_count_lru(RS_FAM_SCHED, false);
	tr = rs_lookup(tgid);
	if (!tr)
		return 0;
	/* signal->live drops to 0 in do_exit() before this tracepoint; during exit_group several
	 * threads can see 0, so the exited flag lets exactly one of them report. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	if (__sync_lock_test_and_set(&tr->exited, 1))
		return 0;
	e = rs_reserve(RS_FAM_SCHED, sizeof(*e), RS_EV_EXIT, tr, tgid, tid);
	if (e) {
		e->exit_code = BPF_CORE_READ(p, exit_code);
		e->flags = tr->flags & RS_TRACK_ROOT;
		rs_submit(e);
	}
	/* Children are ours to forget; roots are removed by user space, which owns them. */
	if (!(tr->flags & RS_TRACK_ROOT)) {
		bpf_map_delete_elem(&rs_tracked, &tgid);
		rs_bit_clear(tgid);
	}
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(rs_sched_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct rs_track none = { .slot = RS_SLOT_NONE };
	struct rs_ev_exec *e;
	struct rs_track *tr;
	__u32 tgid = p->tgid;

	tr = rs_lookup(tgid);
	if (!tr && !discover)
		return 0;
	e = rs_reserve(RS_FAM_SCHED, sizeof(*e), RS_EV_EXEC, tr ? tr : &none, tgid, p->pid);
	if (!e)
		return 0;
	e->flags = tr ? tr->flags & RS_TRACK_ROOT : 0;
	rs_submit(e);
	return 0;
}
