// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Owner of the collectives family skeleton and of every uprobe link it gets per target. */
#include <errno.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "probes.h"
#include "collectives.skel.h"

int probe_collectives__load(struct probes *p)
{
	struct collectives_bpf *s;
	int err;

	s = collectives_bpf__open();
	if (!s) {
		probes__fail(p, RS_FAM_COLL, -errno, "open collectives skeleton");
		return p->fam_err[RS_FAM_COLL];
	}
	p->coll = s;
	err = probes__reuse_shared(p, s->maps.rs_tracked, s->maps.rs_events, s->maps.rs_stats,
				   s->maps.rs_sock_owner);
	if (err) {
		probes__fail(p, RS_FAM_COLL, err, "reuse shared maps");
		return err;
	}
	err = collectives_bpf__load(s);
	if (err) {
		probes__fail(p, RS_FAM_COLL, err, "load (verifier)");
		return err;
	}
	/* attached per target by probe_collectives__attach() */
	return 0;
}

void probe_collectives__free(struct probes *p)
{
	size_t i;

	for (i = 0; i < p->coll_nlinks; i++)
		bpf_link__destroy(p->coll_links[i]);
	free(p->coll_links);
	p->coll_links = NULL;
	p->coll_nlinks = p->coll_cap = 0;
	collectives_bpf__destroy(p->coll);
	p->coll = NULL;
	p->fam_progs[RS_FAM_COLL] = 0;
}

static int push_link(struct probes *p, struct bpf_link *l)
{
	struct bpf_link **nl;
	size_t cap;

	if (p->coll_nlinks == p->coll_cap) {
		cap = p->coll_cap ? p->coll_cap * 2 : 64;
		nl = realloc(p->coll_links, cap * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		p->coll_links = nl;
		p->coll_cap = cap;
	}
	p->coll_links[p->coll_nlinks++] = l;
	return 0;
}

int probe_collectives__attach(struct probes *p, pid_t pid, const char *path, uint64_t offset,
			      uint64_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie);
	struct bpf_link *l;
	int err, i;

	for (i = 0; i < 2; i++) {
		opts.retprobe = i == 1;
		l = bpf_program__attach_uprobe_opts(i ? p->coll->progs.rs_coll_exit :
							p->coll->progs.rs_coll_enter,
						    pid, path, offset, &opts);
		if (!l)
			return -errno;
		err = push_link(p, l);
		if (err) {
			bpf_link__destroy(l);
			return err;
		}
		p->fam_progs[RS_FAM_COLL]++;
	}
	return 0;
}
