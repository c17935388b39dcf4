// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Owner of the pysample skeleton: see probe_pysample.h. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "probe_pysample.h"
#include "pysample.skel.h"

#define PYS_LINKS_MAX	512	/* perf events a capture samples at most (STACKS_THREADS_MAX) */

struct pysample {
	struct pysample_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *links[PYS_LINKS_MAX];
	int nlinks;
	pysample_fn fn;
	void *ctx;
	int got;
};

static int on_rec(void *ctx, void *data, size_t len)
{
	struct pysample *ps = ctx;

	if (len >= sizeof(struct pys_rec) && ps->fn) {
		ps->fn(ps->ctx, data);
		ps->got++;
	}
	return 0;
}

int pysample__open(struct pysample **out, const char **why)
{
	struct pysample *ps = calloc(1, sizeof(*ps));
	int err;

	*out = NULL;
	if (!ps) {
		*why = "out of memory";
		return -ENOMEM;
	}
	ps->skel = pysample_bpf__open_and_load();
	if (!ps->skel) {
		err = -errno;
		*why = "load (verifier)";
		free(ps);
		return err ? err : -EINVAL;
	}
	ps->rb = ring_buffer__new(bpf_map__fd(ps->skel->maps.pys_ring), on_rec, ps, NULL);
	if (!ps->rb) {
		err = -errno;
		*why = "ring buffer";
		pysample__close(ps);
		return err ? err : -EINVAL;
	}
	*out = ps;
	return 0;
}

int pysample__attach(struct pysample *ps, int perf_fd)
{
	struct bpf_link *l;
	int fd;

	if (ps->nlinks == PYS_LINKS_MAX)
		return -E2BIG;
	/* libbpf closes the perf fd it is given when the link goes: give it its own */
	fd = dup(perf_fd);
	if (fd < 0)
		return -errno;
	l = bpf_program__attach_perf_event(ps->skel->progs.pys_sample, fd);
	if (!l) {
		int err = -errno;

		close(fd);
		return err;
	}
	ps->links[ps->nlinks++] = l;
	return 0;
}

int pysample__thread(struct pysample *ps, uint32_t tid, uint64_t tstate)
{
	__u32 k = tid;
	__u64 v = tstate;

	return bpf_map_update_elem(bpf_map__fd(ps->skel->maps.pys_tstate), &k, &v, BPF_ANY) ?
	       -errno : 0;
}

int pysample__poll(struct pysample *ps, pysample_fn fn, void *ctx)
{
	ps->fn = fn;
	ps->ctx = ctx;
	ps->got = 0;
	ring_buffer__consume(ps->rb);
	return ps->got;
}

uint64_t pysample__drops(struct pysample *ps)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	__u64 *v, sum = 0;
	__u32 zero = 0;

	if (ncpu <= 0)
		return 0;
	v = calloc(ncpu, sizeof(*v));
	if (v && !bpf_map_lookup_elem(bpf_map__fd(ps->skel->maps.pys_drops), &zero, v))
		for (i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

void pysample__close(struct pysample *ps)
{
	int i;

	if (!ps)
		return;
	for (i = 0; i < ps->nlinks; i++)
		bpf_link__destroy(ps->links[i]);
	ring_buffer__free(ps->rb);
	pysample_bpf__destroy(ps->skel);
	free(ps);
}
