// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Owner of the io family skeleton. */
#include <errno.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "probes.h"
#include "io.skel.h"

int probe_io__load(struct probes *p)
{
	struct io_bpf *s;
	int err;

	s = io_bpf__open();
	if (!s) {
		probes__fail(p, RS_FAM_IO, -errno, "open io skeleton");
		return p->fam_err[RS_FAM_IO];
	}
	p->io = s;
	s->data->io_min_ns = p->cfg.io_min_ns;
	err = probes__reuse_shared(p, s->maps.rs_tracked, s->maps.rs_tgid_bits,
				   s->maps.rs_events, s->maps.rs_stats, s->maps.rs_sock_owner);
	if (err) {
		probes__fail(p, RS_FAM_IO, err, "reuse shared maps");
		return err;
	}
	if (p->cfg.max_threads)
		bpf_map__set_max_entries(s->maps.rs_io_inflight, p->cfg.max_threads);
	err = probes__fits(p, RS_FAM_IO, s->obj);
	if (err)
		return err;
	err = io_bpf__load(s);
	if (err) {
		probes__fail(p, RS_FAM_IO, err, "load (verifier)");
		return err;
	}
	err = io_bpf__attach(s);
	if (err) {
		probes__fail(p, RS_FAM_IO, err, "attach tp_btf sys_enter/sys_exit");
		return err;
	}
	p->fam_progs[RS_FAM_IO] = 2;
	return 0;
}

void probe_io__free(struct probes *p)
{
	io_bpf__destroy(p->io);
	p->io = NULL;
	p->fam_progs[RS_FAM_IO] = 0;
}

int probe_io__read(struct probes *p, uint32_t slot, struct slot_snapshot *snap)
{
	__u32 kind, w, key;

	for (kind = 0; kind < RS_FD_MAX; kind++) {
		for (w = 0; w < 2; w++) {
			key = rs_io_index(slot, kind, w);
			if (bpf_map__lookup_elem(p->io->maps.rs_io_stats, &key, sizeof(key),
						 &snap->io[kind][w], sizeof(snap->io[kind][w]), 0))
				return -errno;
		}
	}
	return 0;
}

uint64_t probe_io__write_bytes(struct probes *p, uint32_t slot, unsigned int kind,
			       uint64_t *last_ns)
{
	struct rs_io_stat st;
	__u32 key = rs_io_index(slot, kind, 1);

	*last_ns = 0;
	if (!p->io || slot >= RS_MAX_SLOTS || kind >= RS_FD_MAX ||
	    bpf_map__lookup_elem(p->io->maps.rs_io_stats, &key, sizeof(key), &st, sizeof(st), 0))
		return 0;
	*last_ns = st.last_ns;
	return st.bytes;
}
