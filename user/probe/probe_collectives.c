// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Owner of the collectives family skeleton and of every uprobe link it gets per target. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <bpf/btf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "log.h"
#include "procfs.h"
#include "probes.h"
#include "collectives.skel.h"

/*
 * uprobe_multi (Linux 6.6) puts every site of one library in one link, and detaching it waits
 * for one RCU tasks-trace grace period instead of one per site (~0.1 s each, serialized).
 * Debian's libbpf 1.1 and uapi headers predate it: the attach type and the BPF_LINK_CREATE
 * layout below are the kernel's (include/uapi/linux/bpf.h, 6.6+).
 */
#define RS_BPF_TRACE_UPROBE_MULTI	48
#define RS_BPF_F_UPROBE_MULTI_RETURN	1

struct rs_link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 um_flags;
	__u32 pid;
	__u32 pad;
};

/* Does the running kernel know BPF_TRACE_UPROBE_MULTI? Asked of its BTF, not its version. */
static bool kernel_has_uprobe_multi(void)
{
	const struct btf_type *t;
	const struct btf_enum *e;
	struct btf *btf;
	bool found = false;
	int id, i;

	btf = btf__load_vmlinux_btf();
	if (!btf)
		return false;
	id = btf__find_by_name_kind(btf, "bpf_attach_type", BTF_KIND_ENUM);
	if (id > 0) {
		t = btf__type_by_id(btf, id);
		e = btf_enum(t);
		for (i = 0; i < btf_vlen(t) && !found; i++, e++)
			found = e->val == RS_BPF_TRACE_UPROBE_MULTI &&
				!strcmp(btf__name_by_offset(btf, e->name_off), "BPF_TRACE_UPROBE_MULTI");
	}
	btf__free(btf);
	return found;
}

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
	err = probes__reuse_shared(p, s->maps.rs_tracked, s->maps.rs_tgid_bits,
				   s->maps.rs_events, s->maps.rs_stats, s->maps.rs_sock_owner);
	if (err) {
		probes__fail(p, RS_FAM_COLL, err, "reuse shared maps");
		return err;
	}
	p->coll_multi = kernel_has_uprobe_multi();
	if (p->coll_multi) {
		bpf_program__set_expected_attach_type(s->progs.rs_coll_enter,
						      RS_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(s->progs.rs_coll_exit,
						      RS_BPF_TRACE_UPROBE_MULTI);
	}
	err = probes__fits(p, RS_FAM_COLL, s->obj);
	if (err)
		return err;
	err = collectives_bpf__load(s);
	if (err) {
		probes__fail(p, RS_FAM_COLL, err, "load (verifier)");
		return err;
	}
	probe_collectives__calibrate(p);
	/* attached per target by probe_collectives__attach() */
	return 0;
}

#if defined(__x86_64__)
/*
 * What the calibration probes: a function of our own that starts as library functions do
 * past their endbr64, with a push the kernel emulates (an instruction it must single-step
 * out of line instead costs a second trap, which collectives' probes do not pay).
 */
int probe_calib_target(int x);
__asm__(".text\n"
	".globl probe_calib_target\n"
	".type probe_calib_target, @function\n"
	"probe_calib_target:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	lea 1(%rdi), %eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size probe_calib_target, .-probe_calib_target\n");
#endif

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#define CALIB_CALLS	1000
#define CALIB_ROUNDS	5

/* The fastest of CALIB_ROUNDS batches of CALIB_CALLS calls, in ns. */
static uint64_t calib_batch(void)
{
	uint64_t best = UINT64_MAX, t;
	volatile int sink = 0;
	int r, i;

	for (r = 0; r < CALIB_ROUNDS; r++) {
		t = mono_ns();
		for (i = 0; i < CALIB_CALLS; i++)
			sink += probe_calib_target(i);
		t = mono_ns() - t;
		if (t < best)
			best = t;
	}
	return best;
}

/* The file offset of our own code at addr: its mapping in /proc/self/maps. */
static int self_offset(uintptr_t addr, uint64_t *off)
{
	char *maps = NULL, *line, *save = NULL;
	struct proc_map m;
	int err = -ENOENT;

	if (procfs__read(getpid(), "maps", &maps, PROC_MAPS_MAX) < 0)
		return -EIO;
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (procfs__parse_maps_line(line, &m) || addr < m.start || addr >= m.end)
			continue;
		*off = addr - m.start + m.pgoff;
		err = 0;
		break;
	}
	free(maps);
	return err;
}

/*
 * Each probed call pays the uprobe's and the uretprobe's traps outside the interval the
 * programs stamp: ~1-8 us a call, by machine and kernel. The program lives it inside its
 * call, so a step of many small collectives would show that time as compute. Measure it
 * once here, on an empty probe pair on a function of our own, and widen every collective's
 * interval by it (session.c). 0 when the measure cannot be made.
 */
void probe_collectives__calibrate(struct probes *p)
{
	LIBBPF_OPTS(bpf_uprobe_opts, ret_opts, .retprobe = true);
	struct bpf_link *in = NULL, *out = NULL;
	uint64_t off, bare, probed;
	int err;

	p->coll_trap_ns = 0;
#if !defined(__x86_64__)
	(void)in, (void)out, (void)off, (void)bare, (void)probed, (void)err, (void)ret_opts;
#else
	err = self_offset((uintptr_t)probe_calib_target, &off);
	if (err) {
		pr_debug("probes: no calibration of the probe cost: own code not found in maps");
		return;
	}
	bare = calib_batch();
	in = bpf_program__attach_uprobe_opts(p->coll->progs.rs_calib_enter, getpid(),
					     "/proc/self/exe", off, NULL);
	out = in ? bpf_program__attach_uprobe_opts(p->coll->progs.rs_calib_exit, getpid(),
						   "/proc/self/exe", off, &ret_opts) : NULL;
	if (in && out) {
		probed = calib_batch();
		if (probed > bare)
			p->coll_trap_ns = (probed - bare) / CALIB_CALLS;
		/* a hypervisor's hiccup, not a probe: never more than this */
		if (p->coll_trap_ns > 50000)
			p->coll_trap_ns = 0;
	}
	bpf_link__destroy(out);
	bpf_link__destroy(in);
	pr_debug("probes: a probed call pays %llu ns of traps outside its stamps (%s)",
		 (unsigned long long)p->coll_trap_ns, in && out ? "measured" : "not measured");
#endif
}

static void link_close(struct coll_link *l)
{
	if (l->fd >= 0)
		close(l->fd);
	bpf_link__destroy(l->link);
}

/*
 * Closing a uprobe link waits for the kernel's grace periods: 20 to 80 ms here, for each link.
 * A node where ranks come and go (restarts, short jobs, a launcher's helpers) would hold the
 * loop for seconds, with steps, verdicts and /healthz waiting behind it. The links of an
 * exited process serve nothing (the kernel matches them to that process, not to its pid
 * number), so REAPER_THREADS threads close them; closes running at once share their grace
 * periods. Past REAPER_MAX waiting, the loop closes them itself: memory stays bounded.
 */
#define REAPER_THREADS	16
#define REAPER_MAX	4096

struct link_reaper {
	pthread_t thr[REAPER_THREADS];
	int nthr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct coll_link q[REAPER_MAX];
	size_t n;
	bool stop;
};

static void *reaper_main(void *arg)
{
	struct link_reaper *r = arg;
	struct coll_link l;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->n && !r->stop)
			pthread_cond_wait(&r->cv, &r->mu);
		if (!r->n)
			break;	/* stopping, and nothing left */
		l = r->q[--r->n];
		pthread_mutex_unlock(&r->mu);
		link_close(&l);
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static struct link_reaper *reaper_get(struct probes *p)
{
	struct link_reaper *r = p->reaper;
	sigset_t all, old;

	if (r)
		return r->nthr ? r : NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	/* signals are the loop's (signalfd): the threads block them all */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (r->nthr < REAPER_THREADS && !pthread_create(&r->thr[r->nthr], NULL, reaper_main, r))
		r->nthr++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	p->reaper = r;
	return r->nthr ? r : NULL;
}

/* Close every link handed over, then the threads. Nothing of ours is attached after. */
static void reaper_stop(struct probes *p)
{
	struct link_reaper *r = p->reaper;
	int i;

	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	for (i = 0; i < r->nthr; i++)
		pthread_join(r->thr[i], NULL);
	while (r->n)
		link_close(&r->q[--r->n]);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
	p->reaper = NULL;
}

/* Close l on a reaper thread, or here if there is none or it is full. Only a raw
 * uprobe_multi fd goes (a plain close()): a libbpf link's destroy touches state the object
 * shares (a USDT link gives back its spec ids), which only this thread may. */
static void link_close_later(struct probes *p, struct coll_link *l)
{
	struct link_reaper *r = l->link ? NULL : reaper_get(p);

	if (r) {
		pthread_mutex_lock(&r->mu);
		if (r->n < REAPER_MAX) {
			r->q[r->n++] = *l;
			pthread_cond_signal(&r->cv);
			pthread_mutex_unlock(&r->mu);
			return;
		}
		pthread_mutex_unlock(&r->mu);
	}
	link_close(l);
}

/* Close the links [from, nlinks) of pid (every pid when pid is 0), keeping the others; later
 * (on a reaper thread) when later is set. */
static void links_drop(struct probes *p, size_t from, pid_t pid, bool later)
{
	size_t i, out = from;

	for (i = from; i < p->coll_nlinks; i++) {
		struct coll_link *l = &p->coll_links[i];

		if (pid && l->pid != pid) {
			p->coll_links[out++] = *l;
			continue;
		}
		if (later)
			link_close_later(p, l);
		else
			link_close(l);
		if (p->fam_progs[RS_FAM_COLL] >= l->nprobes)
			p->fam_progs[RS_FAM_COLL] -= l->nprobes;
	}
	p->coll_nlinks = out;
}

void probe_collectives__detach_all(struct probes *p)
{
	reaper_stop(p);
	links_drop(p, 0, 0, false);
}

void probes__detach_pid(struct probes *p, pid_t pid, bool dead)
{
	/* a live process (exec'd, or dropped) would still match its links until they close:
	 * those close now, so that a new attach to it does not count everything twice */
	if (pid > 0)
		links_drop(p, 0, pid, dead);
}

unsigned int probes__links_closing(struct probes *p)
{
	unsigned int n = 0;

	if (p->reaper) {
		pthread_mutex_lock(&p->reaper->mu);
		n = p->reaper->n;
		pthread_mutex_unlock(&p->reaper->mu);
	}
	return n;
}

void probe_collectives__free(struct probes *p)
{
	reaper_stop(p);
	links_drop(p, 0, 0, false);
	free(p->coll_links);
	p->coll_links = NULL;
	p->coll_nlinks = p->coll_cap = 0;
	collectives_bpf__destroy(p->coll);
	p->coll = NULL;
	p->fam_progs[RS_FAM_COLL] = 0;
}

/* Grow *arr (of elem-sized items, *n used, *cap allocated) to hold one more. */
static int grow(void **arr, size_t *n, size_t *cap, size_t elem)
{
	size_t ncap;
	void *na;

	if (*n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	na = realloc(*arr, ncap * elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

static int attach_multi(struct probes *p, pid_t pid, const char *path, const __u64 *offsets,
			const __u64 *cookies, int n, bool ret)
{
	struct rs_link_create_uprobe_multi attr;
	int fd, err;

	err = grow((void **)&p->coll_links, &p->coll_nlinks, &p->coll_cap, sizeof(*p->coll_links));
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = bpf_program__fd(ret ? p->coll->progs.rs_coll_exit :
					     p->coll->progs.rs_coll_enter);
	attr.attach_type = RS_BPF_TRACE_UPROBE_MULTI;
	attr.path = (__u64)(unsigned long)path;
	attr.offsets = (__u64)(unsigned long)offsets;
	attr.cookies = (__u64)(unsigned long)cookies;
	attr.cnt = n;
	attr.um_flags = ret ? RS_BPF_F_UPROBE_MULTI_RETURN : 0;
	attr.pid = pid;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;
	p->coll_links[p->coll_nlinks++] = (struct coll_link){ .pid = pid, .fd = fd, .nprobes = n };
	return 0;
}

static int attach_one(struct probes *p, pid_t pid, const char *path, uint64_t offset,
		      uint64_t cookie, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = ret);
	struct bpf_link *l;
	int err;

	err = grow((void **)&p->coll_links, &p->coll_nlinks, &p->coll_cap, sizeof(*p->coll_links));
	if (err)
		return err;
	l = bpf_program__attach_uprobe_opts(ret ? p->coll->progs.rs_coll_exit :
						  p->coll->progs.rs_coll_enter,
					    pid, path, offset, &opts);
	if (!l)
		return -errno;
	p->coll_links[p->coll_nlinks++] = (struct coll_link){ .pid = pid, .fd = -1, .link = l,
							       .nprobes = 1 };
	return 0;
}

int probe_collectives__attach(struct probes *p, pid_t pid, const char *path,
			      const struct probe_site *sites, int n)
{
	size_t links0 = p->coll_nlinks;
	__u64 *offsets, *cookies, *roff, *rck;
	int i, nret = 0, err = 0;
	struct rs_track tr;
	bool slot = probes__tracked(p, pid, &tr) && tr.slot < RS_MAX_SLOTS;

	offsets = calloc(n, sizeof(*offsets));
	cookies = calloc(n, sizeof(*cookies));
	roff = calloc(n, sizeof(*roff));
	rck = calloc(n, sizeof(*rck));
	if (!offsets || !cookies || !roff || !rck) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		offsets[i] = sites[i].offset;
		cookies[i] = libs__cookie(sites[i].api);
		if (slot)
			cookies[i] = RS_CK_WITH_SLOT(cookies[i], tr.slot);
		if (sites[i].api->flags & RS_CKF_ENTRY)
			continue;	/* C++: no return probe (see RS_CKF_ENTRY) */
		roff[nret] = offsets[i];
		rck[nret++] = cookies[i];
	}
	/* return probes first: a call that starts in between then has no unmatched entry */
	if (p->coll_multi) {
		if (nret)
			err = attach_multi(p, pid, path, roff, rck, nret, true);
		if (!err)
			err = attach_multi(p, pid, path, offsets, cookies, n, false);
	} else {
		for (i = 0; i < nret && !err; i++)
			err = attach_one(p, pid, path, roff[i], rck[i], true);
		for (i = 0; i < n && !err; i++)
			err = attach_one(p, pid, path, offsets[i], cookies[i], false);
	}
	if (err) {	/* all or nothing for this library */
		for (i = links0; i < (int)p->coll_nlinks; i++)
			link_close(&p->coll_links[i]);
		p->coll_nlinks = links0;
		goto out;
	}
	p->fam_progs[RS_FAM_COLL] += n + nret;
out:
	free(offsets);
	free(cookies);
	free(roff);
	free(rck);
	return err;
}

int probe_collectives__inflight(struct probes *p, pid_t tid, struct coll_inflight *in)
{
	struct rs_frames fr;
	int d, pidfd, err;

	if (!p->coll)
		return -ENOENT;
	/* task storage is looked up by a pidfd: one held only for the lookup */
	pidfd = syscall(SYS_pidfd_open, tid, 0);
	if (pidfd < 0)
		return -errno;
	err = bpf_map__lookup_elem(p->coll->maps.rs_coll_frames, &pidfd, sizeof(pidfd), &fr,
				   sizeof(fr), 0) ? -errno : 0;
	close(pidfd);
	if (err)
		return err;
	if (!fr.depth || fr.depth > RS_MAX_DEPTH)
		return -ENOENT;
	d = fr.depth - 1;
	/* a frame never filled (entered before attach) or unsequenced tells nothing */
	if (!fr.f[d].enter_ns || fr.f[d].seq == RS_SEQ_NONE)
		return -ENOENT;
	*in = (struct coll_inflight){
		.enter_ns = fr.f[d].enter_ns, .seq = fr.f[d].seq, .op = RS_CK_OP(fr.f[d].cookie),
		.lib = RS_CK_LIB(fr.f[d].cookie), .comm = fr.f[d].comm, .count = fr.f[d].count,
		.dtype = fr.f[d].dtype,
	};
	return 0;
}

int probe_collectives__attach_marker(struct probes *p, pid_t pid, const char *path,
				     uint64_t offset)
{
	static const struct coll_api marker = {
		.lib = RS_LIB_NONE, .op = RS_OP_STEP_FORWARD, .sym = "marker", .comm = 0,
		.flags = RS_CKF_SEQ | RS_CKF_ENTRY,
	};
	struct probe_site site = { .api = &marker, .offset = offset };

	if (!p->coll)
		return -ENOENT;
	return probe_collectives__attach(p, pid, path, &site, 1);
}

int probe_collectives__attach_usdt(struct probes *p, pid_t pid, const char *path,
				   const char *provider, const char *name)
{
	struct bpf_link *l;
	int err;

	if (!p->coll)
		return -ENOENT;
	err = grow((void **)&p->coll_links, &p->coll_nlinks, &p->coll_cap, sizeof(*p->coll_links));
	if (err)
		return err;
	l = bpf_program__attach_usdt(p->coll->progs.rs_usdt_marker, pid, path, provider, name,
				     NULL);
	if (!l)
		return -errno;
	p->coll_links[p->coll_nlinks++] = (struct coll_link){ .pid = pid, .fd = -1, .link = l,
							       .nprobes = 1 };
	p->fam_progs[RS_FAM_COLL]++;
	return 0;
}
