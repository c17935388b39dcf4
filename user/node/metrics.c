// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Series for /metrics. Names from the reference documents where they define one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "cpuacct.h"
#include "decode.h"
#include "detect.h"
#include "gpu_wire.h"
#include "hist.h"
#include "metrics.h"
#include "procfs.h"

static int size_index(uint64_t bytes)
{
	if (bytes < (64 << 10))
		return 0;
	if (bytes < (1 << 20))
		return 1;
	if (bytes < (16 << 20))
		return 2;
	return 3;
}

static const char *const size_names[METRICS_SIZE_BUCKETS] = {
	"<64KB", "64KB-1MB", "1MB-16MB", ">=16MB",
};

const char *metrics__size_bucket(uint64_t bytes)
{
	return size_names[size_index(bytes)];
}

void metrics__on_coll(struct metrics_acc *a, unsigned int lib, unsigned int op, uint64_t bytes,
		      uint64_t inside_ns)
{
	if (lib >= METRICS_LIBS || op >= METRICS_OPS)
		return;		/* markers, group calls, GPU syncs: not collectives */
	hist__add(&a->coll[lib][op][size_index(bytes)], inside_ns);
}

void metrics__on_step(struct metrics_acc *a, const struct job_step *st)
{
	int p;

	a->steps++;
	hist__add(&a->step_hist, st->dur_ns);
	for (p = 0; p < PH_MAX; p++)
		a->phase_ns[p] += st->ph.ns[p];
	a->wait_ns += st->ph.comm_wait;
	a->transfer_ns += st->ph.comm_transfer;
	a->inside_ns += st->inside_ns;
	if (!st->stages || st->stage < 0)
		return;
	a->stage = st->stage;
	a->stages = st->stages;
	a->micro = st->micro;
	a->pp_steps++;
	/* busy: the step less its collectives' time (sends, receives and the DP all-reduce) */
	a->pp_busy_ns += st->dur_ns > st->ph.ns[PH_COMM] ? st->dur_ns - st->ph.ns[PH_COMM] : 0;
	a->pp_bubble_ns += st->p2p_ns;
}

/* Is r[i] the first rank of its job in r[]? (one sample per job) */
static bool first_of_job(const struct metrics_rank *r, int i)
{
	int k;

	for (k = 0; k < i; k++)
		if (!strcmp(r[k].job, r[i].job))
			return false;
	return true;
}

/*
 * rankscope_rank_info{job_id,rank,job_src,node,namespace,pod} 1: where each rank runs and why
 * its job id is what it is, one series a rank, joined onto the others by (job_id, rank)
 * (`* on (job_id, rank) group_left(node, pod) rankscope_rank_info`), so that the per-rank
 * series keep their label sets. Unknown labels are left out.
 */
static void rank_info(struct prom *p, const struct metrics_rank *r, int n)
{
	const char *l[13];
	char rank[16];
	int i, k;

	prom__family(p, "rankscope_rank_info", "gauge",
		     "1 per rank: its node, its pod and namespace (with --k8s-pods) and where its "
		     "job id came from (job_src).");
	for (i = 0; i < n; i++) {
		if (!r[i].job_src)
			continue;
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		k = 0;
		l[k++] = "job_id";
		l[k++] = r[i].job;
		l[k++] = "rank";
		l[k++] = rank;
		l[k++] = "job_src";
		l[k++] = r[i].job_src;
		if (r[i].node && r[i].node[0]) {
			l[k++] = "node";
			l[k++] = r[i].node;
		}
		if (r[i].pod && r[i].pod[0] && r[i].ns && r[i].ns[0]) {
			l[k++] = "namespace";
			l[k++] = r[i].ns;
			l[k++] = "pod";
			l[k++] = r[i].pod;
		}
		l[k] = NULL;
		prom__sample(p, "rankscope_rank_info", l, 1);
	}
}

/*
 * Pipeline stages, named as in the reference documents so their bubble PromQL works:
 * pipeline_stage_seconds{phase="busy"} (a summary: _sum, _count) per rank and stage, and per
 * job the micro-batches a step and the theoretical bubble (S - 1) / (M + S - 1).
 */
static void pipeline_series(struct prom *p, const struct metrics_rank *r, int n)
{
	char rank[16], stage[16];
	int i, any = 0;

	for (i = 0; i < n; i++)
		any += r[i].acc->pp_steps > 0;
	if (!any)
		return;
	prom__family(p, "pipeline_stage_seconds", "summary",
		     "Pipeline stage busy time a step (the step less its sends, receives and "
		     "collectives), per rank and stage from the send/receive graph.");
	for (i = 0; i < n; i++) {
		const char *const *l;

		if (!r[i].acc->pp_steps)
			continue;
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		snprintf(stage, sizeof(stage), "%d", r[i].acc->stage);
		l = LABELS("job_id", r[i].job, "rank", rank, "stage", stage, "phase", "busy");
		prom__sample(p, "pipeline_stage_seconds_sum", l, r[i].acc->pp_busy_ns / 1e9);
		prom__sample(p, "pipeline_stage_seconds_count", l, r[i].acc->pp_steps);
	}
	prom__family(p, "rankscope_pipeline_bubble_seconds_total", "counter",
		     "Main-thread time inside sends and receives: the stage waiting for its "
		     "neighbours.");
	for (i = 0; i < n; i++) {
		if (!r[i].acc->pp_steps)
			continue;
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		snprintf(stage, sizeof(stage), "%d", r[i].acc->stage);
		prom__sample(p, "rankscope_pipeline_bubble_seconds_total",
			     LABELS("job_id", r[i].job, "rank", rank, "stage", stage),
			     r[i].acc->pp_bubble_ns / 1e9);
	}
	prom__family(p, "job_id_micro_batches_per_step", "gauge",
		     "Micro-batches a step: the first pipeline stage's longest run of sends.");
	for (i = 0; i < n; i++)
		if (r[i].acc->pp_steps && r[i].acc->micro && first_of_job(r, i))
			prom__sample(p, "job_id_micro_batches_per_step", LABELS("job_id", r[i].job),
				     r[i].acc->micro);
	prom__family(p, "job_id_theoretical_bubble", "gauge",
		     "The bubble a pipeline of S stages and M micro-batches cannot avoid: "
		     "(S - 1) / (M + S - 1).");
	for (i = 0; i < n; i++)
		if (r[i].acc->pp_steps && r[i].acc->micro && first_of_job(r, i))
			prom__sample(p, "job_id_theoretical_bubble", LABELS("job_id", r[i].job),
				     (double)(r[i].acc->stages - 1) /
					     (r[i].acc->micro + r[i].acc->stages - 1));
}


static void per_rank_counter(struct prom *p, const char *name, const char *help,
			     const struct metrics_rank *r, int n, size_t off)
{
	char rank[16];
	int i;

	prom__family(p, name, "counter", help);
	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		prom__sample(p, name, LABELS("job_id", r[i].job, "rank", rank),
			     *(const uint64_t *)((const char *)r[i].acc + off) / 1e9);
	}
}

static void self_metrics(struct prom *p, const struct self_stats *s)
{
	static double start_time;	/* the loop's thread only */
	struct rusage ru;
	struct timespec ts;
	int f;
	long fds, rss_pages = 0, ticks = sysconf(_SC_CLK_TCK);
	double cpu[CPUACCT_KINDS];
	char *statm = NULL;
	struct proc_stat st;

	static const char *const names[3] = { "rankscope_events_attempted_total",
					      "rankscope_events_received_total",
					      "rankscope_events_dropped_total" };
	static const char *const helps[3] = {
		"Ring-buffer records the probes tried to write.",
		"Records rankscope read from the ring buffer.",
		"Records lost because the ring buffer was full.",
	};
	const uint64_t *vals[3] = { s->attempted, s->received, s->dropped };
	int k;

	for (k = 0; k < 3; k++) {
		prom__family(p, names[k], "counter", helps[k]);
		for (f = 0; f < RS_FAM_MAX; f++)
			prom__sample(p, names[k], LABELS("family", decode__family_name(f)),
				     vals[k][f]);
	}
	prom__family(p, "rankscope_map_full_total", "counter",
		     "Updates a full BPF hash map refused (past 8192 tracked processes, a forked "
		     "worker is not tracked), by family.");
	for (f = 0; f < RS_FAM_MAX; f++)
		prom__sample(p, "rankscope_map_full_total", LABELS("family", decode__family_name(f)),
			     s->map_full[f]);
	prom__family(p, "rankscope_map_evictions_total", "counter",
		     "Entries an LRU BPF map pushed out to make room (a lower bound, counted every "
		     "10 s): per-thread state (rs_threads), collective sequence numbers "
		     "(rs_coll_seq) or socket owners (rs_sock_owner) forgotten.");
	for (f = 0; f < RS_LRU_MAX; f++)
		if (s->lru[f].capacity)
			prom__sample(p, "rankscope_map_evictions_total",
				     LABELS("map", probes__lru_name(f)), s->lru[f].evicted);
	prom__family(p, "rankscope_map_entries", "gauge",
		     "Entries in an LRU BPF map at its last count.");
	for (f = 0; f < RS_LRU_MAX; f++)
		if (s->lru[f].capacity)
			prom__sample(p, "rankscope_map_entries", LABELS("map", probes__lru_name(f)),
				     s->lru[f].entries);
	prom__family(p, "rankscope_map_capacity", "gauge", "Entries an LRU BPF map can hold.");
	for (f = 0; f < RS_LRU_MAX; f++)
		if (s->lru[f].capacity)
			prom__sample(p, "rankscope_map_capacity", LABELS("map", probes__lru_name(f)),
				     s->lru[f].capacity);
	prom__family(p, "rankscope_events_invalid_total", "counter",
		     "Records that failed to decode.");
	prom__sample(p, "rankscope_events_invalid_total", NULL, s->invalid);
	prom__family(p, "rankscope_probe_trap_seconds", "gauge",
		     "What a probed collective call pays in uprobe and uretprobe traps outside the "
		     "times the probes stamp, measured at start on this machine; collective "
		     "intervals are widened by it (0: not measured).");
	prom__sample(p, "rankscope_probe_trap_seconds", NULL, s->coll_trap_ns / 1e9);
	prom__family(p, "rankscope_probes_attached", "gauge", "Probes attached right now.");
	prom__sample(p, "rankscope_probes_attached", NULL, s->probes_attached);
	prom__family(p, "rankscope_ranks", "gauge", "Ranks watched now, exited ones included.");
	prom__sample(p, "rankscope_ranks", NULL, s->ranks);
	prom__family(p, "rankscope_jobs", "gauge", "Jobs watched now.");
	prom__sample(p, "rankscope_jobs", NULL, s->jobs);
	if (s->attach) {
		prom__family(p, "rankscope_attach_total", "counter",
			     "Candidate processes, by what attaching to them came to.");
		for (k = 0; k < s->nattach; k++)
			prom__sample(p, "rankscope_attach_total", LABELS("result", s->attach_names[k]),
				     s->attach[k]);
	}
	if (s->lib_refused) {
		prom__family(p, "rankscope_library_path_refused_total", "counter",
			     "Library paths, as a process names them under its root, that were not "
			     "the file it mapped (the mapping itself was opened instead), by why.");
		for (k = LR_NONE + 1; k < LR_MAX; k++)
			prom__sample(p, "rankscope_library_path_refused_total",
				     LABELS("reason", libs__refusal_name(k)), s->lib_refused[k]);
	}
	if (s->lib_errors) {
		prom__family(p, "rankscope_library_probe_errors_total", "counter",
			     "Collective libraries that could not be probed, by why.");
		for (k = 0; k < LE_MAX; k++)
			prom__sample(p, "rankscope_library_probe_errors_total",
				     LABELS("reason", libs__error_name(k)), s->lib_errors[k]);
	}
	if (s->cupti) {
		static const char *const res[5] = { "received", "invalid", "dropped_queue",
						    "dropped_cupti", "dropped_clock" };

		prom__family(p, "rankscope_cupti_records_total", "counter",
			     "CUPTI activity records: taken by the daemon, refused as invalid, or "
			     "dropped in the library (queue full, CUPTI without a buffer, bad clock).");
		for (k = 0; k < 5; k++)
			prom__sample(p, "rankscope_cupti_records_total", LABELS("result", res[k]),
				     s->cupti_records[k]);
		prom__family(p, "rankscope_cupti_connections", "gauge",
			     "CUPTI libraries connected, by their state (unknown: no status yet).");
		for (k = 0; k < RSC_ST_MAX; k++)
			prom__sample(p, "rankscope_cupti_connections",
				     LABELS("state", gpu_wire__state_name(k)), s->cupti_conns[k]);
	}
	if (s->drain_period_ns) {
		prom__family(p, "rankscope_drain_period_seconds", "gauge",
			     "How often the ring buffer is drained now: --drain-ms, or shorter while "
			     "records come faster than one period of the ring holds.");
		prom__sample(p, "rankscope_drain_period_seconds", NULL, s->drain_period_ns / 1e9);
	}
	prom__family(p, "rankscope_series_overflow_total", "counter",
		     "Sample lines /metrics left out because of the series cap (--max-series).");
	prom__sample(p, "rankscope_series_overflow_total", NULL, s->series_overflow);
	if (s->have_run) {
		prom__family(p, "rankscope_bpf_run_seconds_total", "counter",
			     "Time the family's BPF programs ran (kernel.bpf_stats_enabled=1).");
		for (f = 0; f < RS_FAM_MAX; f++)
			prom__sample(p, "rankscope_bpf_run_seconds_total",
				     LABELS("family", decode__family_name(f)), s->run_ns[f] / 1e9);
		prom__family(p, "rankscope_bpf_runs_total", "counter",
			     "Times the family's BPF programs ran (kernel.bpf_stats_enabled=1).");
		for (f = 0; f < RS_FAM_MAX; f++)
			prom__sample(p, "rankscope_bpf_runs_total",
				     LABELS("family", decode__family_name(f)), s->run_cnt[f]);
	}

	if (!cpuacct__read(cpu)) {
		prom__family(p, "rankscope_cpu_seconds_total", "counter",
			     "rankscope's own CPU time (user + system) by thread: the loop (drain, "
			     "steps, verdicts, publish), the HTTP server, capture writers.");
		for (k = 0; k < CPUACCT_KINDS; k++)
			prom__sample(p, "rankscope_cpu_seconds_total",
				     LABELS("thread", cpuacct__name(k)), cpu[k]);
	}

	/* the standard process_* set */
	if (!getrusage(RUSAGE_SELF, &ru)) {
		prom__family(p, "process_cpu_seconds_total", "counter",
			     "Total user and system CPU time spent in seconds.");
		prom__sample(p, "process_cpu_seconds_total", NULL,
			     ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
			     (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	}
	if (procfs__read(getpid(), "statm", &statm, 256) > 0 &&
	    sscanf(statm, "%*s %ld", &rss_pages) == 1) {
		prom__family(p, "process_resident_memory_bytes", "gauge",
			     "Resident memory size in bytes.");
		prom__sample(p, "process_resident_memory_bytes", NULL,
			     (double)rss_pages * sysconf(_SC_PAGESIZE));
	}
	free(statm);
	fds = procfs__self_fds();
	if (fds >= 0) {
		prom__family(p, "process_open_fds", "gauge", "Number of open file descriptors.");
		prom__sample(p, "process_open_fds", NULL, fds);
	}
	/* start time: boot time + starttime ticks, read once: a clock stepped later (NTP, date
	 * -s) must not move it, or Prometheus would take the step for a restart */
	if (!start_time && !procfs__stat(getpid(), &st) && !clock_gettime(CLOCK_REALTIME, &ts)) {
		struct timespec up;

		clock_gettime(CLOCK_BOOTTIME, &up);
		start_time = (double)ts.tv_sec - up.tv_sec + (double)st.starttime / ticks;
	}
	if (start_time) {
		prom__family(p, "process_start_time_seconds", "gauge",
			     "Start time of the process since unix epoch in seconds.");
		prom__sample(p, "process_start_time_seconds", NULL, start_time);
	}
}

/* Per (lib, op, size) histograms of time inside; only_lib NONE: every library, with a lib
 * label (the reference documents' nccl_* name has none). Empty ones are left out. */
static void coll_hists(struct prom *p, const char *name, const struct metrics_rank *r, int n,
		       int only_lib)
{
	const struct rs_hist *h;
	int i, lib, op, sb;
	char rank[16];

	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		for (lib = 1; lib < METRICS_LIBS; lib++) {
			if (only_lib != RS_LIB_NONE && lib != only_lib)
				continue;
			for (op = 1; op < METRICS_OPS; op++) {
				for (sb = 0; sb < METRICS_SIZE_BUCKETS; sb++) {
					h = &r[i].acc->coll[lib][op][sb];
					if (!h->count)
						continue;
					if (only_lib != RS_LIB_NONE)
						prom__log2_hist(p, name,
							LABELS("job_id", r[i].job, "rank", rank,
							       "op", decode__op_name(op),
							       "size_bucket", size_names[sb]), h);
					else
						prom__log2_hist(p, name,
							LABELS("job_id", r[i].job, "rank", rank,
							       "lib", decode__lib_name(lib),
							       "op", decode__op_name(op),
							       "size_bucket", size_names[sb]), h);
				}
			}
		}
	}
}

/* GPU time from the CUPTI libraries, for the ranks that have one. */
static void gpu_series(struct prom *p, const struct metrics_rank *r, int n)
{
	char rank[16];
	double idle;
	int i, k;

	prom__family(p, "rankscope_gpu_kernel_seconds_total", "counter",
		     "GPU kernel time (CUPTI), compute or NCCL (comm).");
	for (i = 0; i < n; i++) {
		if (!r[i].gpu)
			continue;
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		for (k = 0; k < GPU_K_MAX; k++)
			prom__sample(p, "rankscope_gpu_kernel_seconds_total",
				     LABELS("job_id", r[i].job, "rank", rank, "kind",
					    gpu__kclass_name(k)), r[i].gpu->kernel_ns[k] / 1e9);
	}
	prom__family(p, "rankscope_gpu_kernels_total", "counter", "GPU kernels (CUPTI).");
	for (i = 0; i < n; i++) {
		if (!r[i].gpu)
			continue;
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		for (k = 0; k < GPU_K_MAX; k++)
			prom__sample(p, "rankscope_gpu_kernels_total",
				     LABELS("job_id", r[i].job, "rank", rank, "kind",
					    gpu__kclass_name(k)), r[i].gpu->kernels[k]);
	}
	prom__family(p, "rankscope_gpu_memcpy_bytes_total", "counter",
		     "Bytes copied by the GPU (CUPTI), by direction.");
	for (i = 0; i < n; i++) {
		if (!r[i].gpu)
			continue;
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		for (k = 0; k < RSC_COPY_MAX; k++)
			prom__sample(p, "rankscope_gpu_memcpy_bytes_total",
				     LABELS("job_id", r[i].job, "rank", rank, "direction",
					    gpu__copy_name(k)), r[i].gpu->copy_bytes[k]);
	}
	prom__family(p, "rankscope_gpu_memcpy_seconds_total", "counter",
		     "GPU copy time (CUPTI), by direction.");
	for (i = 0; i < n; i++) {
		if (!r[i].gpu)
			continue;
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		for (k = 0; k < RSC_COPY_MAX; k++)
			prom__sample(p, "rankscope_gpu_memcpy_seconds_total",
				     LABELS("job_id", r[i].job, "rank", rank, "direction",
					    gpu__copy_name(k)), r[i].gpu->copy_ns[k] / 1e9);
	}
	prom__family(p, "rankscope_gpu_idle_fraction", "gauge",
		     "1 - GPU busy / step time over the last 8 steps: the bubble of a pipeline "
		     "stage, or input-bound GPUs.");
	for (i = 0; i < n; i++) {
		if (!r[i].gpu)
			continue;
		idle = gpu__idle_fraction(r[i].gpu);
		if (idle != idle)	/* NaN: no step with GPU time yet */
			continue;
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		prom__sample(p, "rankscope_gpu_idle_fraction", LABELS("job_id", r[i].job, "rank", rank),
			     idle);
	}
	prom__family(p, "rankscope_gpu_timing", "gauge",
		     "1 for the state of the rank's CUPTI library (active, ready, no_driver, ...).");
	for (i = 0; i < n; i++) {
		if (!r[i].gpu || !r[i].gpu->have_status)
			continue;
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		prom__sample(p, "rankscope_gpu_timing",
			     LABELS("job_id", r[i].job, "rank", rank, "state",
				    gpu_wire__state_name(r[i].gpu->state)), 1);
	}
}

static void checkpoints(struct prom *p, const struct metrics_rank *r, int n)
{
	char rank[16];
	int i;

	prom__family(p, "train_checkpoint_seconds_total", "counter",
		     "Time spent writing checkpoints: bursts of large regular-file writes by the "
		     "rank and its workers.");
	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		prom__sample(p, "train_checkpoint_seconds_total",
			     LABELS("job_id", r[i].job, "rank", rank), r[i].acc->ckpt_ns / 1e9);
	}
	prom__family(p, "checkpoint_bytes_written_total", "counter",
		     "Bytes written by checkpoint bursts.");
	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		prom__sample(p, "checkpoint_bytes_written_total",
			     LABELS("job_id", r[i].job, "rank", rank), r[i].acc->ckpt_bytes);
	}
	prom__family(p, "train_checkpoint_timestamp_seconds", "gauge",
		     "When the last checkpoint ended, unix seconds; absent before the first.");
	for (i = 0; i < n; i++) {
		if (!r[i].acc->ckpt_count)
			continue;
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		prom__sample(p, "train_checkpoint_timestamp_seconds",
			     LABELS("job_id", r[i].job, "rank", rank), r[i].acc->ckpt_last_unix);
	}
}

void metrics__render(struct prom *p, const struct metrics_rank *r, int n,
		     const struct metrics_job *jobs, int njobs, const struct self_stats *self,
		     long planned_steps)
{
	char rank[16];
	int i, k, ph;

	/* the series alerts read come first: a --max-series cap cuts the histograms before them */
	prom__family(p, "rankscope_straggler_verdict", "gauge",
		     "The current verdict per job (1), with its class and the late rank.");
	for (i = 0; i < njobs; i++) {
		const struct job_verdict *v = jobs[i].v;

		if (v && jobs[i].vrank >= 0)
			snprintf(rank, sizeof(rank), "%d", jobs[i].vrank);
		else
			rank[0] = '\0';
		prom__sample(p, "rankscope_straggler_verdict",
			     LABELS("job_id", jobs[i].id, "class",
				    v ? detect__class_name(v->cls) : "none", "rank", rank,
				    "persistent", v && v->persistent ? "true" : "false"), 1);
	}
	prom__family(p, "rankscope_rank_state", "gauge", "1 for the rank's current state.");
	for (i = 0; i < n; i++) {
		static const char *const states[] = { "running", "exited", "hung" };
		int cur = r[i].exited ? 1 : r[i].hung ? 2 : 0;

		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		for (k = 0; k < 3; k++)
			prom__sample(p, "rankscope_rank_state",
				     LABELS("job_id", r[i].job, "rank", rank, "state", states[k]),
				     k == cur);
	}
	rank_info(p, r, n);
	if (njobs) {
		const char *ids[njobs];
		const struct cost *costs[njobs];

		for (i = 0; i < njobs; i++) {
			ids[i] = jobs[i].id;
			costs[i] = jobs[i].cost;
		}
		cost__series(p, ids, costs, njobs, jobs[0].gpu_hour_usd, jobs[0].gpus_per_rank);
	}
	prom__family(p, "rankscope_job_ranks_seen", "gauge",
		     "Ranks of the job observed by this rankscope (a node's part of a job on several).");
	for (i = 0; i < njobs; i++)
		prom__sample(p, "rankscope_job_ranks_seen", LABELS("job_id", jobs[i].id),
			     jobs[i].ranks_seen);
	prom__family(p, "rankscope_job_world_size", "gauge",
		     "Ranks in the whole job (environment or widest communicator); absent if unknown.");
	for (i = 0; i < njobs; i++)
		if (jobs[i].world_size > 0)
			prom__sample(p, "rankscope_job_world_size", LABELS("job_id", jobs[i].id),
				     jobs[i].world_size);
	checkpoints(p, r, n);
	if (planned_steps > 0) {
		prom__family(p, "rankscope_planned_steps", "gauge",
			     "Steps the job plans to run (--planned-steps), for the ETA.");
		for (i = 0; i < njobs; i++)
			prom__sample(p, "rankscope_planned_steps", LABELS("job_id", jobs[i].id),
				     planned_steps);
	}
	prom__family(p, "train_step_seconds", "histogram",
		     "Training step duration per rank, from step boundaries found by rankscope; "
		     "a pipeline stage's rank also carries its stage.");
	for (i = 0; i < n; i++) {
		char stage[16];

		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		snprintf(stage, sizeof(stage), "%d", r[i].acc->stage);
		if (r[i].acc->pp_steps)
			prom__log2_hist(p, "train_step_seconds",
					LABELS("job_id", r[i].job, "rank", rank, "stage", stage),
					&r[i].acc->step_hist);
		else
			prom__log2_hist(p, "train_step_seconds",
					LABELS("job_id", r[i].job, "rank", rank),
					&r[i].acc->step_hist);
	}
	pipeline_series(p, r, n);
	prom__family(p, "rankscope_step_phase_seconds_total", "counter",
		     "Main-thread time per step phase; the phases of a step sum to the step.");
	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		for (ph = 0; ph < PH_MAX; ph++)
			prom__sample(p, "rankscope_step_phase_seconds_total",
				     LABELS("job_id", r[i].job, "rank", rank, "phase",
					    steps__phase_name(ph)),
				     r[i].acc->phase_ns[ph] / 1e9);
	}
	per_rank_counter(p, "rankscope_collective_wait_seconds_total",
			 "Time inside collectives before the last local peer arrived.", r, n,
			 offsetof(struct metrics_acc, wait_ns));
	per_rank_counter(p, "rankscope_collective_transfer_seconds_total",
			 "Time inside collectives after the last local peer arrived.", r, n,
			 offsetof(struct metrics_acc, transfer_ns));
	per_rank_counter(p, "rankscope_collective_inside_seconds_total",
			 "Time inside collectives; across nodes, inside - min(inside) is the wait.",
			 r, n, offsetof(struct metrics_acc, inside_ns));
	prom__family(p, "rankscope_collective_seq", "gauge",
		     "Steps completed per rank (aligned across ranks): a rank that stops while "
		     "others advance is hung.");
	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		prom__sample(p, "rankscope_collective_seq",
			     LABELS("job_id", r[i].job, "rank", rank, "comm", "main"),
			     r[i].acc->steps);
	}
	prom__family(p, "rankscope_tcp_retransmits_total", "counter",
		     "TCP retransmits on sockets the rank owns.");
	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		prom__sample(p, "rankscope_tcp_retransmits_total",
			     LABELS("job_id", r[i].job, "rank", rank), r[i].snap->net.retransmits);
	}
	prom__family(p, "rankscope_tcp_srtt_seconds", "gauge",
		     "Smoothed RTT last seen on the rank's TCP sockets.");
	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		prom__sample(p, "rankscope_tcp_srtt_seconds", LABELS("job_id", r[i].job, "rank", rank),
			     r[i].snap->net.srtt_last_us / 1e6);
	}
	prom__family(p, "nccl_collective_duration_seconds", "histogram",
		     "Time inside NCCL collective calls (host side), per op and message size.");
	coll_hists(p, "nccl_collective_duration_seconds", r, n, RS_LIB_NCCL);
	prom__family(p, "rankscope_collective_duration_seconds", "histogram",
		     "Time inside collective calls of every library (nccl, mpi, gloo), per op and "
		     "message size.");
	coll_hists(p, "rankscope_collective_duration_seconds", r, n, RS_LIB_NONE);
	prom__family(p, "rankscope_runqueue_delay_seconds", "histogram",
		     "Time the rank's threads waited runnable for a CPU.");
	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		prom__log2_hist(p, "rankscope_runqueue_delay_seconds",
				LABELS("job_id", r[i].job, "rank", rank), &r[i].snap->runq);
	}
	prom__family(p, "rankscope_io_read_seconds", "histogram",
		     "Read-side syscall latency of the rank and its workers, by fd kind.");
	for (i = 0; i < n; i++) {
		snprintf(rank, sizeof(rank), "%d", r[i].rank);
		for (k = 0; k < RS_FD_MAX; k++)
			prom__log2_hist(p, "rankscope_io_read_seconds",
					LABELS("job_id", r[i].job, "rank", rank, "kind",
					       decode__fd_kind_name(k)),
					&r[i].snap->io[k][0].lat);
	}
	gpu_series(p, r, n);
	/* rankscope's own series are never capped: they say what the cap left out */
	p->max_series = 0;
	if (self)
		self_metrics(p, self);
}
