// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Owner of the sched family skeleton. */
#include <errno.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "probes.h"
#include "sched.skel.h"

int probe_sched__load(struct probes *p)
{
	struct sched_bpf *s;
	int err;

	s = sched_bpf__open();
	if (!s) {
		probes__fail(p, RS_FAM_SCHED, -errno, "open sched skeleton");
		return p->fam_err[RS_FAM_SCHED];
	}
	p->sched = s;
	s->data->offcpu_min_ns = p->cfg.offcpu_min_ns;
	s->rodata->discover = p->cfg.discover;
	err = probes__reuse_shared(p, s->maps.rs_tracked, s->maps.rs_tgid_bits,
				   s->maps.rs_events, s->maps.rs_stats, s->maps.rs_sock_owner);
	if (err) {
		probes__fail(p, RS_FAM_SCHED, err, "reuse shared maps");
		return err;
	}
	if (p->cfg.max_threads)
		bpf_map__set_max_entries(s->maps.rs_threads, p->cfg.max_threads);
	err = probes__fits(p, RS_FAM_SCHED, s->obj);
	if (err)
		return err;
	err = sched_bpf__load(s);
	if (err) {
		probes__fail(p, RS_FAM_SCHED, err, "load (verifier)");
		return err;
	}
	err = sched_bpf__attach(s);
	if (err) {
		probes__fail(p, RS_FAM_SCHED, err, "attach tp_btf sched_*");
		return err;
	}
	p->fam_progs[RS_FAM_SCHED] = 6;
	return 0;
}

void probe_sched__free(struct probes *p)
{
	sched_bpf__destroy(p->sched);
	p->sched = NULL;
	p->fam_progs[RS_FAM_SCHED] = 0;
}

int probe_sched__seed(struct probes *p, pid_t tid, bool running, uint64_t now_ns)
{
	struct rs_thread t = {};
	__u32 key = tid;

	if (!p->sched)
		return -ENOENT;
	if (running)
		t.on_ns = now_ns;
	else
		t.off_ns = now_ns;
	t.off_state = running ? 0 : 1;
	if (bpf_map__update_elem(p->sched->maps.rs_threads, &key, sizeof(key), &t, sizeof(t),
				 BPF_NOEXIST))
		return errno == EEXIST ? 0 : -errno;
	p->lru_ins[RS_LRU_THREADS]++;
	return 0;
}

void probe_sched__forget(struct probes *p, pid_t tid)
{
	__u32 key = tid;

	if (p->sched && !bpf_map__delete_elem(p->sched->maps.rs_threads, &key, sizeof(key), 0))
		p->lru_del[RS_LRU_THREADS]++;
}

int probe_sched__read(struct probes *p, uint32_t slot, pid_t main_tid, uint64_t now_ns,
		      struct slot_snapshot *snap)
{
	struct rs_thread t;
	__u32 key = slot, tid = main_tid;

	if (!bpf_map__lookup_elem(p->sched->maps.rs_threads, &tid, sizeof(tid), &t, sizeof(t), 0)) {
		if (t.on_ns && now_ns > t.on_ns)
			snap->main_open_on_ns = now_ns - t.on_ns;
		else if (t.off_ns && now_ns > t.off_ns)
			snap->main_open_off_ns = now_ns - t.off_ns;
	}

	if (bpf_map__lookup_elem(p->sched->maps.rs_sched_slots, &key, sizeof(key), &snap->sched,
				 sizeof(snap->sched), 0))
		return -errno;
	if (bpf_map__lookup_elem(p->sched->maps.rs_runq_hist, &key, sizeof(key), &snap->runq,
				 sizeof(snap->runq), 0))
		return -errno;
	return 0;
}
