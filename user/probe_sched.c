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
	s->rodata->offcpu_min_ns = p->cfg.offcpu_min_ns;
	err = probes__reuse_shared(p, s->maps.rs_tracked, s->maps.rs_events, s->maps.rs_stats,
				   s->maps.rs_sock_owner);
	if (err) {
		probes__fail(p, RS_FAM_SCHED, err, "reuse shared maps");
		return err;
	}
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
	p->fam_progs[RS_FAM_SCHED] = 5;
	return 0;
}

void probe_sched__free(struct probes *p)
{
	sched_bpf__destroy(p->sched);
	p->sched = NULL;
	p->fam_progs[RS_FAM_SCHED] = 0;
}

int probe_sched__read(struct probes *p, uint32_t slot, struct slot_snapshot *snap)
{
	__u32 key = slot;

	if (bpf_map__lookup_elem(p->sched->maps.rs_sched_slots, &key, sizeof(key), &snap->sched,
				 sizeof(snap->sched), 0))
		return -errno;
	if (bpf_map__lookup_elem(p->sched->maps.rs_runq_hist, &key, sizeof(key), &snap->runq,
				 sizeof(snap->runq), 0))
		return -errno;
	return 0;
}
