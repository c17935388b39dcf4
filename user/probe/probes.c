// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Shared maps and family lifecycle; each family's skeleton lives in user/probe/probe_<family>.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "decode.h"
#include "log.h"
#include "preflight.h"
#include "probes.h"
#include "sched.skel.h"
#include "io.skel.h"
#include "net.skel.h"
#include "collectives.skel.h"

static const struct {
	int (*load)(struct probes *p);
	void (*free)(struct probes *p);
} families[RS_FAM_MAX] = {
	[RS_FAM_SCHED] = { probe_sched__load, probe_sched__free },
	[RS_FAM_IO] = { probe_io__load, probe_io__free },
	[RS_FAM_NET] = { probe_net__load, probe_net__free },
	[RS_FAM_COLL] = { probe_collectives__load, probe_collectives__free },
};

void probes__fail(struct probes *p, int fam, int err, const char *step)
{
	char buf[96];

	p->fam_err[fam] = err ? err : -EINVAL;
	libbpf_strerror(p->fam_err[fam], buf, sizeof(buf));
	snprintf(p->fam_why[fam], sizeof(p->fam_why[fam]), "failed to %s: %s", step, buf);
}

int probes__reuse_shared(struct probes *p, struct bpf_map *tracked, struct bpf_map *bits,
			 struct bpf_map *events, struct bpf_map *stats, struct bpf_map *sock)
{
	int err;

	err = bpf_map__reuse_fd(tracked, p->tracked_fd);
	if (!err)
		err = bpf_map__reuse_fd(bits, p->bits_fd);
	if (!err)
		err = bpf_map__set_max_entries(events, p->cfg.ringbuf_bytes);
	if (!err)
		err = bpf_map__reuse_fd(events, p->events_fd);
	if (!err)
		err = bpf_map__reuse_fd(stats, p->stats_fd);
	if (!err)
		err = bpf_map__reuse_fd(sock, p->sock_fd);
	return err;
}

/* Room the process itself needs besides its maps (a daemon's heap and stacks, measured at
 * ~20 MiB idle): a limit that leaves less is refused at start, not met by the OOM killer. */
#define MEM_RESERVE	(24ULL << 20)

static uint64_t map_estimate(enum bpf_map_type t, uint32_t key, uint32_t value, uint32_t entries,
			     uint32_t flags)
{
	uint64_t k = (key + 7) & ~7u, v = (value + 7) & ~7u;
	int ncpu = libbpf_num_possible_cpus();

	switch (t) {
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_LRU_HASH:
		return flags & BPF_F_NO_PREALLOC ? 0 : (uint64_t)entries * (k + v + 48);
	case BPF_MAP_TYPE_ARRAY:
		return (uint64_t)entries * v;
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		return (uint64_t)entries * v * (ncpu > 0 ? ncpu : 1);
	case BPF_MAP_TYPE_RINGBUF:
		return entries;
	default:
		return 0;	/* task storage and the like: made on use */
	}
}

/* Do sum more bytes of maps (what, the largest named) fit under the memory limit? Counts them
 * when they do; says why not, once, when they do not. */
static bool mem_fits(struct probes *p, const char *what, uint64_t sum, const char *largest,
		     uint64_t big)
{
	if (!p->mem_limit)
		p->mem_limit = preflight__memcg_limit(p->mem_where, sizeof(p->mem_where));
	if (p->mem_limit == UINT64_MAX || p->map_bytes + sum + MEM_RESERVE <= p->mem_limit) {
		p->map_bytes += sum;
		return true;
	}
	pr_warn("probes: not loading %s: their maps need about %.1f MiB (the largest, %s, %.1f "
		"MiB), which with %.1f MiB of maps made and %llu MiB for the process passes the "
		"memory limit of %.1f MiB (%s); raise it (memory.max; in Kubernetes "
		"resources.limits.memory) to at least %.0f MiB", what, sum / 1048576.0, largest,
		big / 1048576.0, p->map_bytes / 1048576.0, MEM_RESERVE >> 20,
		p->mem_limit / 1048576.0, p->mem_where, (p->map_bytes + sum + MEM_RESERVE) / 1048576.0 + 8);
	return false;
}

int probes__fits(struct probes *p, int fam, struct bpf_object *obj)
{
	const char *largest = "";
	uint64_t sum = 0, big = 0, b;
	struct bpf_map *m;
	char what[64];

	bpf_object__for_each_map(m, obj) {
		if (bpf_map__fd(m) >= 0)
			continue;	/* a shared map, made already (and counted then) */
		b = map_estimate(bpf_map__type(m), bpf_map__key_size(m), bpf_map__value_size(m),
				 bpf_map__max_entries(m), bpf_map__map_flags(m));
		sum += b;
		if (b > big) {
			big = b;
			largest = bpf_map__name(m);
		}
	}
	snprintf(what, sizeof(what), "the %s probes", decode__family_name(fam));
	if (mem_fits(p, what, sum, largest, big))
		return 0;
	probes__fail(p, fam, -ENOMEM, "fit under the memory cgroup limit");
	p->mem_short = true;
	return -ENOMEM;
}

/* Processes rs_tracked holds: ranks and their forked workers. */
static uint32_t tracked_max(const struct probes *p)
{
	return p->cfg.max_tracked ? p->cfg.max_tracked : RS_MAX_TRACKED;
}

static int create_shared(struct probes *p)
{
	const struct { enum bpf_map_type t; uint32_t k, v, n; const char *name; } m[] = {
		{ BPF_MAP_TYPE_HASH, sizeof(__u32), sizeof(struct rs_track), tracked_max(p),
		  "rs_tracked" },
		{ BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(__u64), RS_TGID_WORDS, "rs_tgid_bits" },
		{ BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(__u32), sizeof(struct rs_fam_stats), RS_FAM_MAX,
		  "rs_stats" },
		{ BPF_MAP_TYPE_LRU_HASH, sizeof(__u64), sizeof(struct rs_track), RS_MAX_SOCKS,
		  "rs_sock_owner" },
	};
	uint64_t sum = p->cfg.ringbuf_bytes, big = p->cfg.ringbuf_bytes, b;
	const char *largest = "rs_events";
	size_t i;

	/* the maps every family shares: the first to fit under a memory limit, or nothing */
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		b = map_estimate(m[i].t, m[i].k, m[i].v, m[i].n, 0);
		sum += b;
		if (b > big) {
			big = b;
			largest = m[i].name;
		}
	}
	if (!mem_fits(p, "the shared maps", sum, largest, big))
		return -ENOMEM;
	p->tracked_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "rs_tracked", sizeof(__u32),
				       sizeof(struct rs_track), tracked_max(p), NULL);
	if (p->tracked_fd < 0)
		return -errno;
	p->bits_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "rs_tgid_bits", sizeof(__u32),
				    sizeof(__u64), RS_TGID_WORDS,
				    &(struct bpf_map_create_opts){ .sz = sizeof(struct bpf_map_create_opts),
								   .map_flags = BPF_F_MMAPABLE });
	if (p->bits_fd < 0)
		return -errno;
	p->bits = mmap(NULL, RS_TGID_WORDS * sizeof(__u64), PROT_READ | PROT_WRITE, MAP_SHARED,
		       p->bits_fd, 0);
	if (p->bits == MAP_FAILED) {
		p->bits = NULL;
		return -errno;
	}
	p->events_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "rs_events", 0, 0,
				      p->cfg.ringbuf_bytes, NULL);
	if (p->events_fd < 0)
		return -errno;
	p->stats_fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "rs_stats", sizeof(__u32),
				     sizeof(struct rs_fam_stats), RS_FAM_MAX, NULL);
	if (p->stats_fd < 0)
		return -errno;
	p->sock_fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "rs_sock_owner", sizeof(__u64),
				    sizeof(struct rs_track), RS_MAX_SOCKS, NULL);
	if (p->sock_fd < 0)
		return -errno;
	return 0;
}

static int silent_print(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	if (lvl == LIBBPF_DEBUG && log_verbosity < LOG_DEBUG)
		return 0;
	if (log_verbosity < LOG_DEBUG)
		return 0;	/* failures are reported once, per family, by us */
	return vfprintf(stderr, fmt, ap);
}

int probes__open(struct probes *p, const struct probes_cfg *cfg)
{
	int fam, running = 0, err;

	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	p->tracked_fd = p->bits_fd = p->events_fd = p->stats_fd = p->sock_fd = -1;
	libbpf_set_print(silent_print);
	err = create_shared(p);
	if (err)
		return err;
	for (fam = 0; fam < RS_FAM_MAX; fam++) {
		if (cfg->disable[fam]) {
			p->fam_err[fam] = -ECANCELED;
			snprintf(p->fam_why[fam], sizeof(p->fam_why[fam]), "disabled");
			continue;
		}
		err = families[fam].load(p);
		if (err) {
			if (!p->fam_err[fam])
				probes__fail(p, fam, err, "load");
			families[fam].free(p);
			continue;
		}
		running++;
	}
	/* some maps did not fit: what did would only meet the OOM killer later */
	if (p->mem_short)
		return -ENOMEM;
	return running;
}

void probes__detach(struct probes *p)
{
	if (p->sched)
		sched_bpf__detach(p->sched);
	if (p->io)
		io_bpf__detach(p->io);
	if (p->net)
		net_bpf__detach(p->net);
	probe_collectives__detach_all(p);
	memset(p->fam_progs, 0, sizeof(p->fam_progs));
}

void probes__close(struct probes *p)
{
	int fam;

	for (fam = 0; fam < RS_FAM_MAX; fam++)
		families[fam].free(p);
	if (p->tracked_fd >= 0)
		close(p->tracked_fd);
	if (p->bits)
		munmap(p->bits, RS_TGID_WORDS * sizeof(__u64));
	p->bits = NULL;
	if (p->bits_fd >= 0)
		close(p->bits_fd);
	if (p->events_fd >= 0)
		close(p->events_fd);
	if (p->stats_fd >= 0)
		close(p->stats_fd);
	if (p->sock_fd >= 0)
		close(p->sock_fd);
	p->tracked_fd = p->bits_fd = p->events_fd = p->stats_fd = p->sock_fd = -1;
}

/* The BPF side ORs and ANDs the same words (forked workers): atomic here too. */
static void tgid_bit(struct probes *p, pid_t tgid, bool on)
{
	uint64_t bit;

	if (!p->bits || tgid <= 0 || tgid >= RS_PID_LIMIT)
		return;
	bit = 1ULL << (tgid & 63);
	if (on)
		__atomic_fetch_or(&p->bits[tgid >> 6], bit, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_and(&p->bits[tgid >> 6], ~bit, __ATOMIC_SEQ_CST);
}

int probes__track(struct probes *p, pid_t tgid, uint32_t slot, pid_t root, bool is_root)
{
	struct rs_track tr = {
		.slot = slot,
		.root_tgid = root,
		.flags = is_root ? RS_TRACK_ROOT : 0,
	};
	__u32 key = tgid;

	if (slot >= RS_MAX_SLOTS)
		return -E2BIG;
	if (tgid <= 0 || tgid >= RS_PID_LIMIT)
		return -EINVAL;
	/* bit first: the programs must never see the entry without it */
	tgid_bit(p, tgid, true);
	if (bpf_map_update_elem(p->tracked_fd, &key, &tr, BPF_ANY))
		return -errno;
	return 0;
}

int probes__untrack(struct probes *p, pid_t tgid)
{
	__u32 key = tgid;

	if (bpf_map_delete_elem(p->tracked_fd, &key) && errno != ENOENT)
		return -errno;
	tgid_bit(p, tgid, false);
	probe_collectives__forget(p, &key, 1);
	return 0;
}

int probes__attach_coll(struct probes *p, pid_t pid, const struct proc_libs *libs,
			struct coll_report *rep)
{
	struct probe_site *sites;
	char path[64];
	int lib, i, n, fd, err, total = 0;

	memset(rep, 0, sizeof(*rep));
	if (!p->coll)
		return -ENOENT;
	sites = calloc(coll_apis_n, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	for (lib = 1; lib < RS_LIB_MAX; lib++) {
		const struct proc_lib *pl = &libs->lib[lib];

		if (!pl->found)
			continue;
		fd = libs__open_mapped(pid, pl, &rep->via[lib], &rep->refused[lib]);
		if (fd < 0) {
			rep->err[lib] = fd;
			continue;
		}
		/* both our ELF reader and the kernel's uprobe path lookup go through this fd */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = libs__resolve(path, pl, lib, sites);
		if (n <= 0) {
			rep->err[lib] = n ? n : -ENOENT;
			close(fd);
			continue;
		}
		err = probe_collectives__attach(p, pid, path, sites, n);
		close(fd);
		if (err) {
			rep->err[lib] = err;
			continue;
		}
		rep->nsites[lib] = n;
		for (i = 0; i < n; i++)
			rep->endbr[lib] += sites[i].skipped_endbr;
		total += n;
	}
	free(sites);
	return total;
}

int probes__fam_stats(struct probes *p, struct rs_fam_stats out[RS_FAM_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), c;
	struct rs_fam_stats *per;
	__u32 fam;

	memset(out, 0, sizeof(*out) * RS_FAM_MAX);
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	per = calloc(ncpu, sizeof(*per));
	if (!per)
		return -ENOMEM;
	for (fam = 0; fam < RS_FAM_MAX; fam++) {
		if (bpf_map_lookup_elem(p->stats_fd, &fam, per))
			continue;
		for (c = 0; c < ncpu; c++) {
			out[fam].attempted += per[c].attempted;
			out[fam].dropped += per[c].dropped;
			out[fam].map_full += per[c].map_full;
			out[fam].lru_ins += per[c].lru_ins;
			out[fam].lru_del += per[c].lru_del;
		}
	}
	free(per);
	return 0;
}

int probes__read_slot(struct probes *p, uint32_t slot, pid_t main_tid, uint64_t now_ns,
		      struct slot_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	if (slot >= RS_MAX_SLOTS)
		return -E2BIG;
	if (p->sched)
		probe_sched__read(p, slot, main_tid, now_ns, s);
	if (p->io)
		probe_io__read(p, slot, s);
	if (p->net)
		probe_net__read(p, slot, s);
	return 0;
}

unsigned int probes__count(const struct probes *p)
{
	unsigned int n = 0;
	int fam;

	for (fam = 0; fam < RS_FAM_MAX; fam++)
		n += p->fam_progs[fam];
	return n;
}

bool probes__tracked(struct probes *p, pid_t tgid, struct rs_track *tr)
{
	__u32 key = tgid;

	return !bpf_map_lookup_elem(p->tracked_fd, &key, tr);
}

/* Zero one element of an array map (value_size bytes). */
static void zero_elem(struct bpf_map *m, __u32 key)
{
	char zero[sizeof(struct rs_io_stat) > sizeof(struct rs_hist) ?
		  sizeof(struct rs_io_stat) : sizeof(struct rs_hist)] = {};
	size_t vs = bpf_map__value_size(m);

	if (vs <= sizeof(zero))
		bpf_map__update_elem(m, &key, sizeof(key), zero, vs, BPF_ANY);
}

size_t probes__map_delete(int fd, size_t ks, size_t vs, size_t max, map_match_fn match,
			  map_deleted_fn deleted, void *ctx)
{
	char *keys = NULL, *grown, *cur, *next, *val;
	size_t n = 0, cap = 0, steps = 0, i, done = 0;
	bool first = true;

	cur = malloc(ks);
	next = malloc(ks);
	val = vs ? malloc(vs) : NULL;
	while (cur && next && (!vs || val) && steps++ < 2 * max &&
	       !bpf_map_get_next_key(fd, first ? NULL : cur, next)) {
		first = false;
		memcpy(cur, next, ks);
		if (vs && bpf_map_lookup_elem(fd, next, val))
			continue;	/* gone since */
		if (!match(next, val, ctx))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(keys, cap * ks);
			if (!grown)
				break;
			keys = grown;
		}
		memcpy(keys + n++ * ks, next, ks);
	}
	for (i = 0; i < n; i++) {
		if (bpf_map_delete_elem(fd, keys + i * ks))
			continue;
		done++;
		if (deleted)
			deleted(keys + i * ks, ctx);
	}
	free(keys);
	free(cur);
	free(next);
	free(val);
	return done;
}

/* How many entries a hash map holds now: one walk, bounded as probes__map_delete's. */
static uint64_t map_entries(int fd, size_t ks, size_t max)
{
	char *cur = malloc(ks), *next = malloc(ks);
	uint64_t n = 0;
	size_t steps = 0;

	while (cur && next && steps++ < 2 * max &&
	       !bpf_map_get_next_key(fd, n ? cur : NULL, next)) {
		memcpy(cur, next, ks);
		n++;
	}
	free(cur);
	free(next);
	return n < max ? n : max;
}

const char *probes__lru_name(enum rs_lru m)
{
	static const char *const names[RS_LRU_MAX] = {
		[RS_LRU_THREADS] = "rs_threads",
		[RS_LRU_SEQ] = "rs_coll_seq",
		[RS_LRU_SOCKS] = "rs_sock_owner",
	};

	return (unsigned int)m < RS_LRU_MAX ? names[m] : "?";
}

/* The fd, key size and capacity of LRU map m; false when its family is not loaded. */
static bool lru_map(struct probes *p, enum rs_lru m, int *fd, size_t *ks, size_t *max)
{
	const struct bpf_map *bm = NULL;

	if (m == RS_LRU_SOCKS) {
		*fd = p->sock_fd;
		*ks = sizeof(__u64);
		*max = RS_MAX_SOCKS;
		return *fd >= 0;
	}
	if (m == RS_LRU_THREADS && p->sched)
		bm = p->sched->maps.rs_threads;
	else if (m == RS_LRU_SEQ && p->coll)
		bm = p->coll->maps.rs_coll_seq;
	if (!bm)
		return false;
	*fd = bpf_map__fd(bm);
	*ks = bpf_map__key_size(bm);
	*max = bpf_map__max_entries(bm);
	return *fd >= 0;
}

/* What went in and out of LRU map m so far: the programs' (by family) and user space's. */
static void lru_moves(struct probes *p, const struct rs_fam_stats *fs, enum rs_lru m,
		      uint64_t *ins, uint64_t *del)
{
	*ins = p->lru_ins[m];
	*del = p->lru_del[m];
	switch (m) {
	case RS_LRU_THREADS:
		*ins += fs[RS_FAM_SCHED].lru_ins;
		*del += fs[RS_FAM_SCHED].lru_del;
		break;
	case RS_LRU_SEQ:
		*ins += fs[RS_FAM_COLL].lru_ins;
		*del += fs[RS_FAM_COLL].lru_del;
		break;
	default:
		*ins += fs[RS_FAM_IO].lru_ins + fs[RS_FAM_NET].lru_ins;
		*del += fs[RS_FAM_IO].lru_del + fs[RS_FAM_NET].lru_del;
		break;
	}
}

/*
 * Entries now = put in - taken out - evicted, so evicted = in - out - now. The walk is not
 * atomic: "in" is read before it and "out" after, so an entry that comes or goes meanwhile
 * makes the count smaller, never larger; and it never goes back.
 */
void probes__lru_evictions(struct probes *p, struct lru_count out[RS_LRU_MAX])
{
	struct rs_fam_stats before[RS_FAM_MAX], after[RS_FAM_MAX];
	uint64_t ins, del, unused, live, ev;
	size_t ks, max;
	int m, fd;

	if (probes__fam_stats(p, before))
		goto out;
	for (m = 0; m < RS_LRU_MAX; m++) {
		if (!lru_map(p, m, &fd, &ks, &max))
			continue;
		lru_moves(p, before, m, &ins, &unused);
		live = map_entries(fd, ks, max);
		if (probes__fam_stats(p, after))
			break;
		lru_moves(p, after, m, &unused, &del);
		ev = ins > del + live ? ins - del - live : 0;
		p->lru[m].entries = live;
		p->lru[m].capacity = max;
		if (ev > p->lru[m].evicted)
			p->lru[m].evicted = ev;
	}
out:
	memcpy(out, p->lru, sizeof(p->lru));
}

/* ctx: the slot first (a struct slot_tgids or a bare uint32_t) */
static bool slot_is(const void *key, const void *value, void *ctx)
{
	(void)key;
	return ((const struct rs_track *)value)->slot == *(const uint32_t *)ctx;
}

/* The processes of a slot deleted from rs_tracked. */
struct slot_tgids {
	uint32_t slot;
	size_t n, cap;
	__u32 tgids[];
};

static void tgid_deleted(const void *key, void *ctx)
{
	struct slot_tgids *st = ctx;

	if (st->n < st->cap)
		memcpy(&st->tgids[st->n++], key, sizeof(__u32));
}

struct tgid_set {
	const __u32 *tgids;
	size_t n;
};

static bool seq_of(const void *key, const void *value, void *ctx)
{
	const struct tgid_set *set = ctx;
	__u32 tgid;
	size_t k;

	(void)value;
	memcpy(&tgid, key, sizeof(tgid));	/* struct rs_seq_key starts with it */
	for (k = 0; k < set->n; k++)
		if (set->tgids[k] == tgid)
			return true;
	return false;
}

void probe_collectives__forget(struct probes *p, const __u32 *tgids, size_t ntgids)
{
	const struct bpf_map *m;
	struct tgid_set set = { tgids, ntgids };

	if (!p->coll || !ntgids)
		return;
	m = p->coll->maps.rs_coll_seq;
	p->lru_del[RS_LRU_SEQ] += probes__map_delete(bpf_map__fd(m), bpf_map__key_size(m), 0,
						     bpf_map__max_entries(m), seq_of, NULL,
						     &set);
}

void probes__release_slot(struct probes *p, uint32_t slot)
{
	struct slot_tgids *st;
	size_t i;
	int k, dir;

	if (slot >= RS_MAX_SLOTS)
		return;
	st = calloc(1, sizeof(*st) + tracked_max(p) * sizeof(st->tgids[0]));
	if (st) {
		st->slot = slot;
		st->cap = tracked_max(p);
		probes__map_delete(p->tracked_fd, sizeof(__u32), sizeof(struct rs_track),
				   st->cap, slot_is, tgid_deleted, st);
		for (i = 0; i < st->n; i++)
			tgid_bit(p, (pid_t)st->tgids[i], false);
		probe_collectives__forget(p, st->tgids, st->n);
		free(st);
	}
	/* the sockets its processes used: only TCP ones are deleted by the programs (at
	 * close), a UNIX one would stay until the LRU pushed it out, its owner long gone */
	p->lru_del[RS_LRU_SOCKS] += probes__map_delete(p->sock_fd, sizeof(__u64),
						       sizeof(struct rs_track), RS_MAX_SOCKS,
						       slot_is, NULL, &slot);
	if (p->sched) {
		zero_elem(p->sched->maps.rs_sched_slots, slot);
		zero_elem(p->sched->maps.rs_runq_hist, slot);
	}
	if (p->io)
		for (k = 0; k < RS_FD_MAX; k++)
			for (dir = 0; dir < 2; dir++)
				zero_elem(p->io->maps.rs_io_stats, rs_io_index(slot, k, dir));
	if (p->net)
		zero_elem(p->net->maps.rs_net_slots, slot);
}

static void obj_run_stats(struct bpf_object *obj, struct fam_run *out)
{
	struct bpf_prog_info info;
	struct bpf_program *prog;
	__u32 len;
	int fd;

	if (!obj)
		return;
	bpf_object__for_each_program(prog, obj) {
		fd = bpf_program__fd(prog);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		out->run_ns += info.run_time_ns;
		out->run_cnt += info.run_cnt;
	}
}

int probes__run_stats(struct probes *p, struct fam_run out[RS_FAM_MAX])
{
	char c = '0';
	FILE *f;

	memset(out, 0, sizeof(*out) * RS_FAM_MAX);
	f = fopen("/proc/sys/kernel/bpf_stats_enabled", "re");
	if (f) {
		c = fgetc(f);
		fclose(f);
	}
	obj_run_stats(p->sched ? p->sched->obj : NULL, &out[RS_FAM_SCHED]);
	obj_run_stats(p->io ? p->io->obj : NULL, &out[RS_FAM_IO]);
	obj_run_stats(p->net ? p->net->obj : NULL, &out[RS_FAM_NET]);
	obj_run_stats(p->coll ? p->coll->obj : NULL, &out[RS_FAM_COLL]);
	/* counters keep what they had when stats were on; say "off" only if nothing was counted */
	if (c != '1' && !out[RS_FAM_SCHED].run_cnt && !out[RS_FAM_IO].run_cnt &&
	    !out[RS_FAM_NET].run_cnt && !out[RS_FAM_COLL].run_cnt)
		return -ENOENT;
	return 0;
}

void probes__set_detail(struct probes *p, bool full)
{
	/* the skeletons' .data is the map itself (mmap'd): the programs see it at once */
	if (p->io && p->io->data)
		p->io->data->io_min_ns = full ? 0 : p->cfg.io_min_ns;
	if (p->sched && p->sched->data)
		p->sched->data->offcpu_min_ns = full ? 0 : p->cfg.offcpu_min_ns;
}
