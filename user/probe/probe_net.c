// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Owner of the net family skeleton. */
#include <errno.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "probes.h"
#include "net.skel.h"

int probe_net__load(struct probes *p)
{
	struct net_bpf *s;
	int err;

	s = net_bpf__open();
	if (!s) {
		probes__fail(p, RS_FAM_NET, -errno, "open net skeleton");
		return p->fam_err[RS_FAM_NET];
	}
	p->net = s;
	err = probes__reuse_shared(p, s->maps.rs_tracked, s->maps.rs_tgid_bits,
				   s->maps.rs_events, s->maps.rs_stats, s->maps.rs_sock_owner);
	if (err) {
		probes__fail(p, RS_FAM_NET, err, "reuse shared maps");
		return err;
	}
	err = probes__fits(p, RS_FAM_NET, s->obj);
	if (err)
		return err;
	err = net_bpf__load(s);
	if (err) {
		probes__fail(p, RS_FAM_NET, err, "load (verifier)");
		return err;
	}
	err = net_bpf__attach(s);
	if (err) {
		probes__fail(p, RS_FAM_NET, err, "attach tp_btf tcp/sock tracepoints");
		return err;
	}
	p->fam_progs[RS_FAM_NET] = 3;
	return 0;
}

void probe_net__free(struct probes *p)
{
	net_bpf__destroy(p->net);
	p->net = NULL;
	p->fam_progs[RS_FAM_NET] = 0;
}

int probe_net__read(struct probes *p, uint32_t slot, struct slot_snapshot *snap)
{
	__u32 key = slot;

	if (bpf_map__lookup_elem(p->net->maps.rs_net_slots, &key, sizeof(key), &snap->net,
				 sizeof(snap->net), 0))
		return -errno;
	return 0;
}
