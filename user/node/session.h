/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A session: the probes, the ranks they watch grouped into jobs, and the loop that drains them.
 * `attach` and `diagnose` run one over a fixed set of PIDs; `daemon` adds and drops ranks as
 * processes come and go. */
#ifndef RS_SESSION_H
#define RS_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>
#include "capture.h"
#include "ckpt.h"
#include "comms.h"
#include "cupti_rx.h"
#include "httpd.h"
#include "job.h"
#include "joblife.h"
#include "json.h"
#include "k8swatch.h"
#include "metrics.h"
#include "probes.h"
#include "prom.h"
#include "report_rank.h"
#include "stacks.h"
#include "stats.h"
#include "targets.h"

#define SESSION_JOBS_MAX	64
#define SESSION_REPLAY_MAX	64	/* diagnose --replay files */
#define SESSION_STALL_NS	2000000000ULL	/* a loop that did not run this long says so */

struct session_hooks;

struct session_opts {
	pid_t pids[TARGETS_MAX];
	int npids;
	bool all;
	bool json;
	bool events;
	double duration_s;	/* 0: until the ranks exit or a signal */
	double interval_s;
	uint32_t drain_ms;
	struct probes_cfg pcfg;
	struct job_cfg jcfg;
	bool report;		/* diagnose: a human report at the end, no table */
	/* --steps marker:SYM[@LIB] or usdt:PROVIDER:NAME[@LIB] */
	char marker_sym[256];
	char usdt_provider[64];
	char usdt_name[64];
	char marker_lib[128];	/* "" = the executable */
	const char *listen;	/* serve /metrics and /api/v1 here; NULL: no HTTP */
	const char *api_listen;	/* also the API here (cmd_daemon, cmd_attach); NULL: none */
	/* the daemon */
	bool daemon;		/* ranks come and go; jobs by job id; runs until a signal */
	int max_ranks;		/* at most RS_MAX_SLOTS */
	int max_jobs;		/* at most SESSION_JOBS_MAX */
	size_t max_series;	/* /metrics sample lines; 0: no cap */
	double rescan_s;	/* /proc rescan period */
	double retain_s;	/* a finished job's series stay this long */
	double abandon_s;	/* a failed job not back within this is abandoned */
	const char *lock_file;
	const char *cgroup;	/* --cgroup: only processes in this cgroup or below; NULL: all */
	const char *k8s_pods;	/* --k8s-pods: the pod watch's URL; NULL: none */
	char token[HTTPD_TOKEN_MAX + 1];	/* --token-file's bearer token; "": none */
	long planned_steps;	/* --planned-steps: exported for the ETA panel; 0: none */
	const char *cupti_socket;	/* GPU timing from librankscope_cupti.so; NULL: off */
	/* captures */
	const char *capture_dir;	/* with --listen: POST /api/v1/capture writes here */
	size_t capture_max_count;
	uint64_t capture_max_bytes;
	bool auto_capture;		/* one capture when a verdict appears, every 10 min at most */
	const char *capture_out;	/* rankscope capture -p: record at once, write here */
	struct capture_req capture_now;
	uint32_t sample_stack_bytes;	/* stack copied a sample (stacks.h); 0: none */
	struct ckpt_cfg ckpt;
	/* diagnose --replay FILE...: the model on recorded input, no session at all */
	char *replay[SESSION_REPLAY_MAX];
	int nreplay;
};

/* Why a candidate process was or was not attached (rankscope_attach_total{result}). */
enum attach_result {
	AR_OK,
	AR_GONE,		/* exited before we got to it */
	AR_CAP_RANKS,		/* --max-ranks reached */
	AR_CAP_JOBS,		/* --max-jobs reached */
	AR_DUP_RANK,		/* its job already has a live rank with that number */
	AR_TRACK_FAILED,	/* the tracked-process map refused it */
	AR_FD_LIMIT,		/* too few fds left under RLIMIT_NOFILE (the daemon keeps a reserve) */
	AR_MAX,
};

/* One job: the ranks that share a job id, and the model that judges them. */
struct sjob {
	bool used;
	char id[128];
	int slots[RS_MAX_SLOTS];	/* column -> rank slot */
	int ncols;
	struct job *model;
	bool dirty;			/* membership changed: rebuild the model */
	struct job_verdict worst;	/* the most serious verdict seen, for the report */
	bool have_worst;
	struct job_verdict last;	/* the latest, for /metrics */
	bool have_last;
	uint64_t steps_seen;
	uint64_t done_ns;		/* every rank gone since (0: some run) */
	struct session *s;
	char *stacks;			/* its ranks' stacks while it makes no progress */
	uint64_t stacks_ns;		/* when they were read */
	/* the daemon's lifecycle (joblife): the model's steps handed to it, once a step */
	uint64_t builds;		/* models made for this job */
	uint64_t life_build;		/* the model life_k counts in */
	uint64_t life_k;		/* the next step index to hand over */
};

struct session {
	struct session_opts o;
	struct probes probes;
	struct ring_buffer *rb;
	struct rank_state *ranks;	/* o.max_ranks slots; used ones have used set */
	int nranks;			/* high-water mark of slots in use */
	struct sjob jobs[SESSION_JOBS_MAX];
	struct comms comms;
	struct self_stats self;
	uint64_t attach_results[AR_MAX];
	uint64_t lib_refused[LR_MAX];	/* library paths under a root not used, by why */
	uint64_t lib_errors[LE_MAX];	/* libraries that could not be probed, by why */
	bool dropped_since_trim;	/* a rank was dropped: malloc_trim() at the next tick */
	uint64_t stop_ns;		/* session__finish began: the probes saw up to here */
	pid_t displaced_pid;	/* the live holder the last session__join took a number from */
	uint64_t series_overflow;	/* /metrics lines left out by the cap, summed over renders */
	struct json j;
	FILE *out;
	bool tty;
	int write_err;
	uint64_t start_ns;		/* when the probes went in */
	struct httpd *httpd;
	struct prom prom;
	const struct session_hooks *hooks;
	struct cupti_rx *rx;
	struct capture cap;
	struct stacks stacks;		/* a capture's stack samples */
	struct pysample *pys;		/* their Python frames, while a capture with a CPython
					 * rank records */
	bool pys_failed;		/* it would not load for this capture: not again */
	bool cap_open;			/* cap is usable */
	bool cap_active;		/* recording: detail is on */
	bool cap_written;		/* rankscope capture -p: the file is written */
	bool finishing;			/* session__finish runs */
	pthread_t cap_writer;		/* writes a finished capture */
	bool cap_writer_on;
	bool cap_writer_done;
	uint64_t gpu_gone[5];		/* CUPTI record counts of ranks dropped since */
	char node[256];			/* this node's name: NODE_NAME, else the hostname */
	struct k8s_watch *k8s;		/* --k8s-pods; NULL: none */
	struct joblife *life;		/* the daemon's jobs across restarts; NULL: not a daemon */
};

uint64_t session__now(void);
const char *session__result_name(enum attach_result r);

/* Allocate the rank table and open the probes, the ring buffer and (with o.listen) HTTP.
 * Returns 0 or -errno, with the reason printed. */
int session__open(struct session *s);
void session__close(struct session *s);

/* Fill slot's rank_state from /proc (identity, environ, libraries). Returns 0 or -ESRCH. */
int session__prepare(struct session *s, int slot, pid_t pid);
/* A free slot, or -ENOSPC. */
int session__free_slot(const struct session *s);
/* Put a prepared rank in its job (by job id, or job 0 for attach), track it and put the
 * collective probes on it. defer: leave the job's model for session__build_jobs().
 * Returns an attach_result. */
enum attach_result session__join(struct session *s, int slot, bool defer);
/* Build the models of jobs whose membership changed. Returns 0 or -ENOMEM. */
int session__build_jobs(struct session *s);
/* A rank's process is gone (exit record, /proc, or exec). */
void session__rank_gone(struct session *s, struct rank_state *rs, uint64_t t, int status);
/* Forget a rank entirely and give its slot back. */
void session__drop_rank(struct session *s, int slot);
/* Is pid a live rank of this session? (check_alive compares start times, so a reused pid is
 * seen as gone within a tick) */
bool session__has_pid(const struct session *s, pid_t pid);

/* What the loop asks of its verb. */
struct session_hooks {
	/* a process exec'd at t (discovery on): is it a new rank? parent: the rank it is a
	 * worker of (0: none); was_rank: it was one of our ranks, dropped just now */
	void (*on_exec)(struct session *s, pid_t pid, uint64_t t, pid_t parent, bool was_rank);
	/* every o.rescan_s (0: never) */
	void (*rescan)(struct session *s);
	/* once per interval tick, after the ranks were checked */
	void (*tick)(struct session *s, uint64_t now);
};

/* Drain, judge and publish until a signal, the duration, a write error or (not a daemon)
 * every rank's exit. Returns 0 or -errno. */
int session__loop(struct session *s, const struct session_hooks *hooks);
/* Detach everything, drain what is left and render the last tick. */
void session__finish(struct session *s);
/* The tables and lines of one interval. */
void session__tick(struct session *s, bool final);
/* Signals the loop reads from a signalfd, blocked before any thread starts. */
void session__block_signals(void);

#endif /* RS_SESSION_H */
