/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The probe families: shared maps, one skeleton per family, per-target collective uprobes. */
#ifndef RS_PROBES_H
#define RS_PROBES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "rankscope.h"
#include "sched.h"
#include "io.h"
#include "net.h"
#include "libs.h"

struct bpf_link;
struct ring_buffer;
struct sched_bpf;
struct io_bpf;
struct net_bpf;
struct collectives_bpf;

struct probes_cfg {
	uint32_t ringbuf_bytes;		/* power of two, >= page size */
	uint32_t max_threads;		/* rs_threads, rs_io_inflight (0: RS_MAX_THREADS) */
	uint32_t max_tracked;		/* rs_tracked: ranks and workers (0: RS_MAX_TRACKED) */
	uint64_t offcpu_min_ns;
	uint64_t io_min_ns;
	bool disable[RS_FAM_MAX];
	bool discover;			/* exec records of every process (the daemon) */
};

/* The LRU hash maps: a full one pushes out its oldest entry without telling anyone. */
enum rs_lru {
	RS_LRU_THREADS,		/* rs_threads (sched): one entry per thread of a rank */
	RS_LRU_SEQ,		/* rs_coll_seq (collectives): per (process, communicator) */
	RS_LRU_SOCKS,		/* rs_sock_owner (io, net): per socket of a rank */
	RS_LRU_MAX,
};

/* One LRU map as last counted. */
struct lru_count {
	uint64_t entries;	/* there at the last walk */
	uint64_t capacity;
	uint64_t evicted;	/* at least this many pushed out so far (never goes back) */
};

struct probes {
	struct probes_cfg cfg;
	/* shared across every skeleton */
	int tracked_fd;
	int bits_fd;			/* rs_tgid_bits, mapped at bits */
	uint64_t *bits;
	int events_fd;
	int stats_fd;
	int sock_fd;
	/* one skeleton per family; NULL when it failed or is disabled */
	struct sched_bpf *sched;
	struct io_bpf *io;
	struct net_bpf *net;
	struct collectives_bpf *coll;
	int fam_err[RS_FAM_MAX];	/* 0, or -errno of the step that failed */
	char fam_why[RS_FAM_MAX][160];
	unsigned int fam_progs[RS_FAM_MAX];	/* programs or probes attached */
	bool coll_multi;		/* one uprobe_multi link per (process, library, direction) */
	uint64_t coll_trap_ns;		/* a probed call's trap cost outside its stamps */
	struct coll_link *coll_links;	/* every collective link, with the process it serves */
	size_t coll_nlinks;
	size_t coll_cap;
	struct link_reaper *reaper;	/* closes the links of exited processes off the loop */
	uint64_t mem_limit;		/* of our memory cgroup (UINT64_MAX: none) */
	char mem_where[256];		/* the file that sets it */
	uint64_t map_bytes;		/* kernel memory our maps take, estimated, so far */
	bool mem_short;			/* a family's maps did not fit under mem_limit */
	/* entries user space put in and took out of each LRU map (the programs count theirs
	 * in rs_stats), and what probes__lru_evictions found */
	uint64_t lru_ins[RS_LRU_MAX];
	uint64_t lru_del[RS_LRU_MAX];
	struct lru_count lru[RS_LRU_MAX];
};

const char *probes__lru_name(enum rs_lru m);

/* Count the entries of every LRU map (a walk of each) and, from what went in and out,
 * those the maps evicted: out[m] for each. A lower bound: entries that come and go while a
 * map is walked are not counted as evicted. */
void probes__lru_evictions(struct probes *p, struct lru_count out[RS_LRU_MAX]);

/* Delete the entries of a hash map that match(key, value, ctx) (value NULL when vs is 0):
 * one walk to find them, bounded at twice max entries (deleting while walking restarts a
 * walk, and so may an eviction the programs make meanwhile), then the deletes, each one done
 * told to deleted(key, ctx) when not NULL. Returns how many it deleted. */
typedef bool (*map_match_fn)(const void *key, const void *value, void *ctx);
typedef void (*map_deleted_fn)(const void *key, void *ctx);
size_t probes__map_delete(int fd, size_t ks, size_t vs, size_t max, map_match_fn match,
			  map_deleted_fn deleted, void *ctx);

/* A uprobe_multi link fd (kernels 6.6+) or a libbpf perf-event link, of one target process. */
struct coll_link {
	pid_t pid;
	int fd;			/* uprobe_multi; -1 for a libbpf link */
	struct bpf_link *link;
	unsigned int nprobes;
};

/* Run time of a family's programs, from bpf_stats (kernel.bpf_stats_enabled=1). */
struct fam_run {
	uint64_t run_ns;
	uint64_t run_cnt;
};

/* What attaching the collective probes to one process found. */
struct coll_report {
	int nsites[RS_LIB_MAX];		/* probe sites attached per library */
	int endbr[RS_LIB_MAX];		/* of those, moved past an endbr64 */
	int err[RS_LIB_MAX];		/* -errno per library that was found but failed */
	const char *via[RS_LIB_MAX];	/* "root" or "map_files" */
	enum lib_refusal refused[RS_LIB_MAX];	/* why not by the path under the root */
};

struct slot_snapshot {
	struct rs_sched_slot sched;
	/* the main thread's interval in progress at read time, which the counters above only
	 * get when it ends: without it a rank blocked for a whole interval shows nothing */
	uint64_t main_open_on_ns;
	uint64_t main_open_off_ns;
	struct rs_hist runq;
	struct rs_io_stat io[RS_FD_MAX][2];	/* [kind][is_write] */
	struct rs_net_slot net;
};

/* Create the shared maps and load + attach every enabled family. A family that fails is
 * recorded in fam_err/fam_why and skipped. Returns the number of families running, or
 * -errno when the shared maps cannot be created (nothing can run). */
int probes__open(struct probes *p, const struct probes_cfg *cfg);
void probes__close(struct probes *p);

/* Remove every probe (programs stay loaded, maps stay readable): nothing new is produced. */
void probes__detach(struct probes *p);

/* Track tgid as a rank root (flags RS_TRACK_ROOT) or child. Returns 0 or -errno. */
int probes__track(struct probes *p, pid_t tgid, uint32_t slot, pid_t root, bool is_root);
int probes__untrack(struct probes *p, pid_t tgid);
/* Forget a slot for reuse: untrack every process that still carries it and zero its per-rank
 * counters. */
void probes__release_slot(struct probes *p, uint32_t slot);
/* Is tgid tracked (a rank or a worker of one)? Fills *tr when it is. */
bool probes__tracked(struct probes *p, pid_t tgid, struct rs_track *tr);
/* Remove the collective probes of one process: dead (exited), their uprobe links close on
 * the closing threads; alive (exec'd, dropped), here, before anything attaches to it again. */
void probes__detach_pid(struct probes *p, pid_t pid, bool dead);
/* Link fds handed to the closing threads and not closed yet (they will be, soon). */
unsigned int probes__links_closing(struct probes *p);
/* Stream every syscall and off-CPU interval (a capture), or only those over the configured
 * thresholds again. */
void probes__set_detail(struct probes *p, bool full);
/* Sum the run time of each family's programs. Returns 0, or -ENOENT when bpf_stats is off. */
int probes__run_stats(struct probes *p, struct fam_run out[RS_FAM_MAX]);

/* Put the collective uprobes on every supported library pid maps.
 * Returns the number of probes attached (0: no collective library), or -errno. */
int probes__attach_coll(struct probes *p, pid_t pid, const struct proc_libs *libs,
			struct coll_report *rep);

/* A user-chosen step marker on pid: an entry probe at file offset of path, or the USDT
 * probe provider:name in path. Returns 0 or -errno. */
int probe_collectives__attach_marker(struct probes *p, pid_t pid, const char *path,
				     uint64_t offset);
int probe_collectives__attach_usdt(struct probes *p, pid_t pid, const char *path,
				   const char *provider, const char *name);

/* A collective a thread is inside now. */
struct coll_inflight {
	uint64_t enter_ns;
	uint64_t seq;		/* per process and communicator */
	unsigned int op, lib;
	uint64_t comm;		/* the library's handle */
	uint64_t count, dtype;	/* elements and their type, as the library was given them */
};

/* Is thread tid inside a probed collective now? Returns 0 with what it is in, -ENOENT if not,
 * -errno. */
int probe_collectives__inflight(struct probes *p, pid_t tid, struct coll_inflight *in);
/* Delete the per-communicator sequence counters of these processes (gone: a new process with
 * the same pid must start from 0, and the LRU must not fill with the dead). */
void probe_collectives__forget(struct probes *p, const __u32 *tgids, size_t ntgids);
/* Measure coll_trap_ns (at load). */
void probe_collectives__calibrate(struct probes *p);

/* Sum the per-CPU family counters. */
int probes__fam_stats(struct probes *p, struct rs_fam_stats out[RS_FAM_MAX]);

/* Read one slot's cumulative per-rank maps (zeros for families not running), with the
 * interval main_tid is in at now_ns (CLOCK_MONOTONIC). */
int probes__read_slot(struct probes *p, uint32_t slot, pid_t main_tid, uint64_t now_ns,
		      struct slot_snapshot *s);

/* Every probe attached right now (family programs + collective uprobes). */
unsigned int probes__count(const struct probes *p);

/* Family owners (user/probe/probe_<family>.c). Each returns 0 or -errno and fills fam_why. */
int probe_sched__load(struct probes *p);
void probe_sched__free(struct probes *p);
int probe_io__load(struct probes *p);
void probe_io__free(struct probes *p);
int probe_net__load(struct probes *p);
void probe_net__free(struct probes *p);
int probe_collectives__load(struct probes *p);
void probe_collectives__free(struct probes *p);
void probe_collectives__detach_all(struct probes *p);
/* Attach the enter and exit programs at n sites of the file at path, for pid only.
 * Returns 0 or -errno (nothing of this call stays attached on error). */
int probe_collectives__attach(struct probes *p, pid_t pid, const char *path,
			      const struct probe_site *sites, int n);
/* Seed a thread the kernel has not seen switch yet (blocked since before attach), so its
 * open interval counts from now. Leaves a known thread alone. Returns 0 or -errno. */
int probe_sched__seed(struct probes *p, pid_t tid, bool running, uint64_t now_ns);
/* Delete tid's entry (a thread seeded as it exited: the kernel's exit came first). */
void probe_sched__forget(struct probes *p, pid_t tid);
int probe_sched__read(struct probes *p, uint32_t slot, pid_t main_tid, uint64_t now_ns,
		      struct slot_snapshot *s);
int probe_io__read(struct probes *p, uint32_t slot, struct slot_snapshot *s);
/* Bytes written so far by slot's family to fds of kind (0 when io is not running), and in
 * *last_ns when its latest write or flush returned (0: none). */
uint64_t probe_io__write_bytes(struct probes *p, uint32_t slot, unsigned int kind,
			       uint64_t *last_ns);
int probe_net__read(struct probes *p, uint32_t slot, struct slot_snapshot *s);

/* Helpers for the family owners. */
struct bpf_map;
struct bpf_object;
/* Will the maps of obj (family fam), with those made so far, fit under our memory cgroup's
 * limit with room for the process itself? Estimates each map's kernel memory before it is
 * made: past the limit the kernel would OOM-kill us, with nothing said. Returns 0, or -ENOMEM
 * with the family failed and one line naming the largest map, its size and the limit. */
int probes__fits(struct probes *p, int fam, struct bpf_object *obj);
int probes__reuse_shared(struct probes *p, struct bpf_map *tracked, struct bpf_map *bits,
			 struct bpf_map *events, struct bpf_map *stats, struct bpf_map *sock);
void probes__fail(struct probes *p, int fam, int err, const char *step);

#endif /* RS_PROBES_H */
