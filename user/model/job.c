// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The job model: per-rank timelines, step boundaries aligned across ranks, verdicts. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collectives.h"
#include "decode.h"
#include "io.h"
#include "job.h"
#include "links.h"

/* A step boundary: a marker's entry, or the return of a period's last collective. */
struct job_mark {
	uint64_t t;
	uint64_t seq;		/* markers: their seq; period walk: the step index k */
	uint64_t aseq;		/* period walk: the boundary collective's aligned seq */
};

struct tl_gpu {
	uint64_t start, end;
	bool nccl;
};

struct job_rank {
	struct tl_gpu *gpu;	/* CUPTI kernels and copies; NULL until the first */
	int ngpu;
	uint64_t gpu_seen;	/* the latest end among them: the GPU reported up to here */
	struct tl_coll *sync;	/* CUDA synchronize calls of the main thread */
	int nsync;
	int rank;		/* its number, for messages */
	uint32_t main_tid;
	uint64_t main_ret_ns;	/* the main thread's latest return from a collective */
	struct tl_coll *coll;	/* ordered by entry */
	int ncoll;
	struct tl_off *off;
	int noff;
	struct tl_io *io;
	int nio;
	struct job_mark *mark;	/* step boundaries, in time order */
	int nmark;
	/* the period walk over this rank's main collectives, in aligned seq order */
	int64_t walk_next;	/* next aligned seq to look at */
	int walk_j;		/* position in the template; -1 while searching */
	uint64_t walk_k;	/* boundaries found */
	uint64_t *hist;		/* the last period's signatures, while searching */
	uint64_t *hgap;		/* and the pause after each */
	int nhist;
	int miss;		/* mismatches in a row */
	int step_hits;		/* template positions matched in this step so far */
	uint64_t step_gmax;	/* the longest pause inside the current step so far */
	int bad_ends;		/* template ends in a row not at a step's longest pause */
	int64_t search_from;	/* aligned seq where the walk last began searching */
	int search_locks;	/* steps in a row found only by searching again */
	int64_t lost_from;	/* where the first of them began searching */
	bool locked_once;	/* the walk has found a step since the template was learned */
	uint64_t *bwd;		/* DDP finalize_backward entries */
	int nbwd;
	uint64_t main_comm;	/* its busiest communicator: a TP or DP group's differs by rank */
	bool have_main;
	int64_t seq_off;	/* aligned seq = seq + seq_off */
	int anchored;		/* its steps end at the reference's anchor (a pipeline stage whose
				 * main collectives a step differ in number): 1 yes, -1 no, 0 not
				 * known yet */
	int seq_hint;		/* coll index of find_seq's last hit: where the next search starts */
	uint64_t seen_ns;	/* the latest start (or entry) of its records, or end of a run */
	uint64_t built_start, built_end;	/* its last step built (0: none yet) */
	uint64_t *prev_sig;	/* the calls of the step before that one (call_sig), what strays */
	int nprev;		/* compares it with; -1: not known (not built just before it) */
	int64_t mark_off;	/* marker steps: step number = marker seq + mark_off */
	bool aligned;
	bool exited;
	uint64_t exit_ns;
	int exit_status;
};

struct job {
	struct job_cfg cfg;
	bool detail;		/* report phase runs (a capture) */
	struct job_probe_ops ops;
	int n;
	struct job_rank *r;
	bool have_main;		/* the reference rank knows its main communicator */
	bool markers;		/* steps come from markers */
	struct period_result per;
	bool have_period;
	int relearns;		/* templates learned again after the pattern changed */
	uint64_t gen_k;		/* the first step built on the current template */
	int tried_n;		/* collectives the last attempt to learn the period saw */
	int64_t learn_from;	/* learn from the reference rank's collectives from this aligned seq */
	bool have_learn_from;
	char rule_note[160];	/* what changed, for on_rule */
	bool walk;		/* period/every steps: boundaries from the template walk */
	uint64_t *tmpl;		/* one step's signatures, the boundary collective last */
	bool tmpl_fixed;	/* no rotation of it is itself: signatures alone place the end */
	int64_t s0;		/* every rank walks from this aligned seq */
	bool have_s0;
	const char *rule;
	uint64_t next_k;	/* next step index to assemble */
	bool have_next;
	/* completed rows, a ring of JOB_ROWS */
	struct step_obs *rows;
	uint64_t *row_k;
	int nrows;
	struct persist persist;
	/* the longer view's intermittent verdict (judge_long), judged again every half window */
	struct verdict long_v;
	int long_m;		/* the rows it judged; 0: it said nothing */
	uint64_t long_k;	/* the step it was judged at */
	bool long_tried;
	struct comm_ref cref;	/* for collectives that got slower (detect__comm_change) */
	struct links *links;	/* for a link slower than its siblings (links.h) */
	enum vclass cand_cls;	/* a new verdict seen, not yet confirmed */
	int cand_col, cand_n;
	struct job_verdict last;
	struct cost cost;	/* what stragglers cost it (cost.h) */
	bool emitted;
	uint64_t last_emit_k;
	bool hang_done;
	uint64_t progress_ns;	/* the last step built, or the first look (0: not yet) */
	uint64_t last_end_ns;	/* the end of the last step built (0: none yet) */
	int disk_col;		/* the one rank in uninterruptible sleep at every look, -1: none */
	uint64_t stacks_ns;	/* the last look at a stuck job's stacks */
	uint64_t disk_since;
	bool exit_done;
	bool div_done;
	/* which ranks share a main communicator, when names do not say: whether two ranks were
	 * inside the same-seq collective at once, a bit for each of the last co_n */
	uint32_t *co;
	int co_n;
	int *grp;
	bool grp_known;
	/* the groups (column masks, jobs of up to 64 columns) each column was judged in over
	 * its latest step, by communicator name or learned */
	uint64_t *vg;		/* n * JOB_VGROUPS */
	int *nvg;
	int world;		/* ranks in the job, -1: not known */
	uint64_t now;		/* of the current advance */
};

struct job *job__new(const struct job_cfg *cfg, int nranks, const struct job_probe_ops *ops)
{
	struct job *j = calloc(1, sizeof(*j));
	int i;

	if (!j)
		return NULL;
	j->cfg = *cfg;
	if (j->cfg.window < 2)
		j->cfg.window = 8;
	j->ops = *ops;
	j->n = nranks;
	j->disk_col = -1;
	j->r = calloc(nranks, sizeof(*j->r));
	j->rows = calloc((size_t)JOB_ROWS * nranks, sizeof(*j->rows));
	j->row_k = calloc(JOB_ROWS, sizeof(*j->row_k));
	j->co = calloc((size_t)nranks * nranks, sizeof(*j->co));
	j->grp = calloc(nranks, sizeof(*j->grp));
	j->vg = calloc((size_t)nranks * JOB_VGROUPS, sizeof(*j->vg));
	j->nvg = calloc(nranks, sizeof(*j->nvg));
	j->links = links__new(nranks, j->cfg.window);
	if (!j->r || !j->rows || !j->row_k || !j->co || !j->grp || !j->vg || !j->nvg || !j->links)
		goto fail;
	for (i = 0; i < nranks; i++) {
		struct job_rank *r = &j->r[i];

		r->coll = calloc(JOB_MAX_COLL, sizeof(*r->coll));
		r->off = calloc(JOB_MAX_OFF, sizeof(*r->off));
		r->io = calloc(JOB_MAX_IO, sizeof(*r->io));
		r->mark = calloc(JOB_MAX_MARK, sizeof(*r->mark));
		r->walk_j = -1;
		r->rank = i;	/* until job__set_rank() */
		r->bwd = calloc(JOB_MAX_MARK, sizeof(*r->bwd));
		r->sync = calloc(JOB_MAX_SYNC, sizeof(*r->sync));
		if (!r->coll || !r->off || !r->io || !r->mark || !r->bwd || !r->sync)
			goto fail;
	}
	j->last.col = -1;
	j->last.cost.rank = -1;
	j->world = -1;
	j->rule = "";
	return j;
fail:
	job__free(j);
	return NULL;
}

uint64_t job__progress_ns(const struct job *j)
{
	return j ? j->progress_ns : 0;
}

void job__free(struct job *j)
{
	int i;

	if (!j)
		return;
	for (i = 0; j->r && i < j->n; i++) {
		free(j->r[i].coll);
		free(j->r[i].off);
		free(j->r[i].io);
		free(j->r[i].mark);
		free(j->r[i].hist);
		free(j->r[i].prev_sig);
		free(j->r[i].hgap);
		free(j->r[i].bwd);
		free(j->r[i].gpu);
		free(j->r[i].sync);
	}
	free(j->r);
	free(j->tmpl);
	free(j->rows);
	free(j->row_k);
	free(j->co);
	free(j->grp);
	free(j->vg);
	free(j->nvg);
	links__free(j->links);
	free(j);
}

/* Keep at most cap elements: drop the oldest half when full (bounded memory). */
#define MAKE_ROOM(arr, n, cap)							\
	do {									\
		if ((n) >= (cap)) {						\
			memmove((arr), (arr) + (cap) / 2,			\
				sizeof(*(arr)) * ((n) - (cap) / 2));		\
			(n) -= (cap) / 2;					\
		}								\
	} while (0)

void job__set_rank(struct job *j, int col, int rank, uint32_t tid)
{
	if (!j || col < 0 || col >= j->n)
		return;
	j->r[col].rank = rank;
	j->r[col].main_tid = tid;
	links__set_rank(j->links, col, rank);
}

void job__set_world(struct job *j, int world_size)
{
	if (j)
		j->world = world_size > 0 ? world_size : -1;
}

/* Ranks of the job run where they are not observed: ranks beyond the columns. */
static bool partial(const struct job *j)
{
	return j->world > j->n;
}

static bool is_p2p_op(unsigned int op)
{
	return op == RS_OP_SEND || op == RS_OP_RECV;
}

static bool is_p2p(const struct tl_coll *c)
{
	return is_p2p_op(c->op);
}

void job__on_coll(struct job *j, int col, uint32_t tid, unsigned int op, unsigned int lib,
		  uint64_t comm, uint64_t seq, uint64_t bytes, uint64_t enter, uint64_t exit)
{
	job__on_coll_peer(j, col, tid, op, lib, comm, seq, bytes, enter, exit, -1);
}

void job__on_coll_peer(struct job *j, int col, uint32_t tid, unsigned int op, unsigned int lib,
		       uint64_t comm, uint64_t seq, uint64_t bytes, uint64_t enter, uint64_t exit,
		       int peer)
{
	struct job_rank *r;
	int i;

	if (!j || col < 0 || col >= j->n)
		return;
	r = &j->r[col];
	if (enter > r->seen_ns)
		r->seen_ns = enter;
	if (op == RS_OP_STEP_FORWARD) {
		MAKE_ROOM(r->mark, r->nmark, JOB_MAX_MARK);
		r->mark[r->nmark++] = (struct job_mark){ .t = enter, .seq = seq };
		if (j->cfg.mode == STEPS_AUTO || j->cfg.mode == STEPS_MARKER)
			j->markers = true;
		return;
	}
	if (op == RS_OP_STEP_BACKWARD) {
		MAKE_ROOM(r->bwd, r->nbwd, JOB_MAX_MARK);
		r->bwd[r->nbwd++] = enter;
		return;
	}
	if (op == RS_OP_GROUP_START || op == RS_OP_GROUP_END || op == RS_OP_COMM_INIT)
		return;
	if (op == RS_OP_GPU_SYNC) {	/* the main thread waiting for the GPU: gpu_wait */
		if (!exit || (r->main_tid && tid != r->main_tid))
			return;
		MAKE_ROOM(r->sync, r->nsync, JOB_MAX_SYNC);
		r->sync[r->nsync++] = (struct tl_coll){ .enter = enter, .exit = exit, .tid = tid,
							.op = op, .lib = lib };
		return;
	}
	if (exit && tid == r->main_tid && exit > r->main_ret_ns)
		r->main_ret_ns = exit;
	MAKE_ROOM(r->coll, r->ncoll, JOB_MAX_COLL);
	/* records come at return; keep entry order (nested or other threads can interleave) */
	for (i = r->ncoll; i > 0 && r->coll[i - 1].enter > enter; i--)
		r->coll[i] = r->coll[i - 1];
	r->coll[i] = (struct tl_coll){
		.enter = enter, .exit = exit, .seq = seq, .comm = comm, .bytes = bytes,
		.tid = tid, .op = op, .lib = lib,
		.peer = is_p2p_op(op) && peer >= 0 && peer < INT16_MAX ? peer : -1,
	};
	r->ncoll++;
}

void job__on_off(struct job *j, int col, uint32_t tid, uint64_t start, uint64_t end,
		 uint64_t runq, int32_t syscall)
{
	struct job_rank *r;

	if (!j || col < 0 || col >= j->n || end <= start)
		return;
	r = &j->r[col];
	if (r->main_tid && tid != r->main_tid)
		return;		/* phases are the main thread's */
	if (start > r->seen_ns)
		r->seen_ns = start;
	MAKE_ROOM(r->off, r->noff, JOB_MAX_OFF);
	r->off[r->noff++] = (struct tl_off){
		.start = start, .end = end, .runq = runq, .tid = tid, .syscall = syscall,
	};
}

void job__on_run(struct job *j, int col, uint32_t tid, uint64_t end)
{
	struct job_rank *r;

	if (!j || col < 0 || col >= j->n)
		return;
	r = &j->r[col];
	if ((!r->main_tid || tid == r->main_tid) && end > r->seen_ns)
		r->seen_ns = end;
}

void job__on_io(struct job *j, int col, uint32_t tid, bool worker, unsigned int kind,
		bool write, uint64_t start, uint64_t end, uint64_t bytes)
{
	struct job_rank *r;

	if (!j || col < 0 || col >= j->n || end <= start)
		return;
	r = &j->r[col];
	if (!worker && r->main_tid && tid != r->main_tid)
		return;		/* other threads of the rank: neither main nor worker I/O */
	if (!worker && start > r->seen_ns)
		r->seen_ns = start;
	MAKE_ROOM(r->io, r->nio, JOB_MAX_IO);
	r->io[r->nio++] = (struct tl_io){
		.start = start, .end = end, .bytes = bytes, .tid = tid, .kind = kind,
		.worker = worker, .write = write,
	};
}

void job__on_exit(struct job *j, int col, uint64_t t, int status)
{
	if (!j || col < 0 || col >= j->n || j->r[col].exited)
		return;
	j->r[col].exited = true;
	j->r[col].exit_ns = t;
	j->r[col].exit_status = status;
}

void job__on_gpu(struct job *j, int col, bool nccl, uint64_t start, uint64_t end)
{
	struct job_rank *r;

	if (!j || col < 0 || col >= j->n || end <= start)
		return;
	r = &j->r[col];
	if (!r->gpu && !(r->gpu = calloc(JOB_MAX_GPU, sizeof(*r->gpu))))
		return;
	MAKE_ROOM(r->gpu, r->ngpu, JOB_MAX_GPU);
	r->gpu[r->ngpu++] = (struct tl_gpu){ .start = start, .end = end, .nccl = nccl };
	if (end > r->gpu_seen)
		r->gpu_seen = end;
}

void job__set_detail(struct job *j, bool on)
{
	if (j)
		j->detail = on;
}

const char *job__rule(const struct job *j, double *confidence, int *period)
{
	if (confidence)
		*confidence = j->markers ? 1.0 : j->per.confidence;
	if (period)
		*period = j->markers ? 1 : j->per.period;
	return j->rule;
}

const struct job_verdict *job__last_verdict(const struct job *j)
{
	return &j->last;
}

/* ---- the main communicator, its alignment and period ---- */

static bool is_main(const struct job_rank *r, const struct tl_coll *c)
{
	return r->have_main && c->comm == r->main_comm && c->exit;
}

/* Each rank's main communicator: the one most of its first returned collectives are on. Ranks
 * in different tensor- or pipeline-parallel groups have different ones, with the same shape. */
static void pick_main_comm(struct job *j)
{
	uint64_t best;
	int c, i, k, cnt, best_cnt;

	for (c = 0; c < j->n; c++) {
		struct job_rank *r = &j->r[c];

		if (r->have_main || r->ncoll < 8)
			continue;
		for (best = 0, best_cnt = 0, i = 0; i < r->ncoll && i < 256; i++) {
			if (!r->coll[i].exit)
				continue;
			for (cnt = 0, k = 0; k < r->ncoll && k < 256; k++)
				cnt += r->coll[k].comm == r->coll[i].comm && r->coll[k].exit;
			if (cnt > best_cnt) {
				best_cnt = cnt;
				best = r->coll[i].comm;
			}
		}
		if (best_cnt) {
			r->main_comm = best;
			r->have_main = true;
		}
	}
	j->have_main = j->r[0].have_main;
}

/*
 * Same (comm, seq) across ranks is the same collective; seqs count from each rank's attach, so
 * line them up by time: one collective's returns on all ranks are close together. Ranks are
 * attached one after another, so their counts may differ by hundreds of back-to-back buckets:
 * the candidate offsets are those that pair each returned collective of the reference run with
 * the nearest return on the other rank, and the one whose returns are closest over the whole
 * run (same op and size) wins.
 *
 * The pairing is over every collective of the ranks' main threads first: ranks of different
 * tensor-parallel groups share no main-communicator collective, only the data-parallel ones
 * between them, and those (with the op and size of each) fix where in the step each rank is.
 * When those sequences do not pair up, the main communicators' collectives alone are used.
 *
 * The run is collectives ALIGN_RUN..2 * ALIGN_RUN of the reference (its first ones may come
 * before the other rank's attach). A job that ends sooner (30 steps of one all-reduce) is
 * lined up at its end on what there is: the later two thirds, at least ALIGN_SHORT.
 *
 * Pipeline stages past two make different numbers of sends and receives a step, so neither
 * sequence pairs up; then the collectives that are no messages (the gradient norm's
 * all-reduce), once a step, a run of ALIGN_SHARED of them. The offset is then that of one
 * such pair: such a rank's steps end at those (anchor_bounds), not at seqs.
 */
#define ALIGN_RUN 24
#define ALIGN_SHORT 6
#define ALIGN_SHARED 8
#define ALIGN_NEAR 8	/* collectives either side of the nearest return tried too */
#define ALIGN_SLACK 3	/* once the job ended or hung: collectives of the reference's run a
			 * rank that stopped earlier may lack */

/*
 * Asynchronous collectives return at their launch, which says nothing of the other ranks:
 * a rank a bucket ahead launches its buckets a bucket's time apart from its peers', and equal
 * buckets pair as well one off as not. What is the same on every rank is the program's order
 * of launches and waits, and a wait ends when its collectives complete: at nearly the same
 * instant everywhere. Ranks that wait so are paired first with each collective at the end of
 * the first wait after it (a step's buckets all at its one wait's end).
 */
enum align_on { ALIGN_WAITS, ALIGN_THREAD, ALIGN_MAIN, ALIGN_NO_P2P };

/* One collective of a run to pair: its index in the rank's and its return, or the end of
 * the wait for it (ALIGN_WAITS). */
struct align_at {
	int i;
	uint64_t t;
};

static uint64_t ddp_done(const struct job_rank *r, uint64_t s, uint64_t e);

static bool in_align(const struct job_rank *r, const struct tl_coll *c, enum align_on on)
{
	if (on == ALIGN_MAIN || on == ALIGN_WAITS)
		return is_main(r, c) && (on == ALIGN_MAIN || c->exit);
	return c->exit && (!r->main_tid || c->tid == r->main_tid) &&
	       (on != ALIGN_NO_P2P || !is_p2p(c));
}

static int align_index(const struct job_rank *r, enum align_on on, struct align_at *at, int max)
{
	uint64_t done = 0;
	int i, w = 0, n = 0;

	for (i = 0; i < r->ncoll && n < max; i++) {
		const struct tl_coll *c = &r->coll[i];

		if (!in_align(r, c, on))
			continue;
		if (on == ALIGN_WAITS) {
			/* the first wait after it: one past the last, none (not in the run) */
			if (w < r->nbwd && r->bwd[w] < c->exit) {
				while (w < r->nbwd && r->bwd[w] < c->exit)
					w++;
				done = 0;
			}
			if (w == r->nbwd)
				break;
			if (!done)
				done = ddp_done(r, r->bwd[w], UINT64_MAX);
		}
		at[n].i = i;
		at[n++].t = on == ALIGN_WAITS ? done : c->exit;
	}
	return n;
}

/* The reference's run: ri[lo..hi) of its nr collectives, runs of `run`; false: too short
 * yet. */
static bool align_run(int nr, int run, bool final, int *lo, int *hi)
{
	if (nr >= 2 * run) {
		*lo = run;
		*hi = 2 * run;
		return true;
	}
	*lo = nr / 3;
	*hi = nr;
	return final && *hi - *lo >= ALIGN_SHORT;
}

static uint64_t run_cost(const struct job_rank *ref, const struct align_at *ri, int lo, int hi,
			 const struct job_rank *r, const struct align_at *ci, int nc, int off,
			 int slack)
{
	uint64_t cost = 0, a, b;
	int k, n = 0, slack_at = slack;

	for (k = lo; k < hi; k++) {
		const struct tl_coll *x, *y;

		if (k + off < 0 || k + off >= nc) {
			if (--slack < 0)
				return UINT64_MAX;
			continue;
		}
		x = &ref->coll[ri[k].i];
		y = &r->coll[ci[k + off].i];
		/* the same collective has the same op and size everywhere; a message is a send on
		 * one side and a receive on the other */
		if ((x->op != y->op && !(is_p2p(x) && is_p2p(y))) || x->bytes != y->bytes) {
			/* a divergent rank's last call differs: as missing, within the slack */
			if (k < hi - slack_at || --slack < 0)
				return UINT64_MAX;
			continue;
		}
		a = ri[k].t;
		b = ci[k + off].t;
		cost += a > b ? a - b : b - a;
		n++;
	}
	/* per pair, over the whole run: runs that pair fewer are not cheaper for it */
	return n < hi - lo ? (n ? cost / n * (uint64_t)(hi - lo) : UINT64_MAX) : cost;
}

/*
 * The offset from the reference run ri to ci with the closest returns; false: none pairs.
 * The nearest return to each reference collective gives a candidate, and so do its
 * neighbours: when the ranks' work differs, the nearest return may be a collective or two
 * away from the same one, and only the op and size pattern fixes which. slack: how many of
 * the run may have no counterpart on r (once the job ended or hung, a rank stopped a
 * collective or a few before the reference: the one stuck in its work never made the last).
 */
static bool best_offset(const struct job_rank *ref, const struct align_at *ri, int lo, int hi,
			const struct job_rank *r, const struct align_at *ci, int nc, int slack,
			int *best_off)
{
	uint64_t cost, best_cost = UINT64_MAX, d, dn;
	int k, i, near, off;

	for (k = lo; k < hi; k++) {
		uint64_t t = ri[k].t;

		for (near = -1, dn = UINT64_MAX, i = 0; i < nc; i++) {
			uint64_t e = ci[i].t;

			d = e > t ? e - t : t - e;
			if (d < dn) {
				dn = d;
				near = i;
			}
		}
		if (near < 0)
			continue;
		for (off = near - k - ALIGN_NEAR; off <= near - k + ALIGN_NEAR; off++) {
			cost = run_cost(ref, ri, lo, hi, r, ci, nc, off, slack);
			if (cost < best_cost) {
				best_cost = cost;
				*best_off = off;
			}
		}
	}
	return best_cost != UINT64_MAX;
}

/* The latest return among the n collectives at; 0: none returned. */
static uint64_t last_return(const struct align_at *at, int n)
{
	while (n > 0 && !at[n - 1].t)
		n--;
	return n ? at[n - 1].t : 0;
}

/* Rank r's seq offset from the reference, pairing on its main thread's collectives (or on
 * the main communicator's alone, or its collectives that are no messages): the first pair in
 * which both are on their main comm (else, of the last kind, the first pair). A rank a little
 * behind may not have returned from the copy of the run's last collective yet: paired then,
 * the run would pair with its collectives one or more before (a step's equal buckets look
 * alike), so it is paired once it has returned from one after it, or once the reference
 * went ALIGN_NEAR collectives on without it. */
static bool align_one(const struct job_rank *ref, const struct job_rank *r, enum align_on on,
		      bool final, struct align_at *ri, struct align_at *ci, int64_t *seq_off)
{
	int nr, nc, k, off = 0, lo, hi;
	int run = on == ALIGN_NO_P2P ? ALIGN_SHARED : ALIGN_RUN;

	nr = align_index(ref, on, ri, 3 * ALIGN_RUN);
	nc = align_index(r, on, ci, JOB_MAX_COLL);
	if (!align_run(nr, run, final, &lo, &hi) || nc < hi - lo)
		return false;
	if (!final && nr < hi + ALIGN_NEAR &&
	    last_return(ci, nc) < last_return(ri, hi))
		return false;
	/* fewer than the run on a rank still returning: its group's own collectives lag the
	 * reference's (a tensor-parallel group held by its slow rank, by up to a step of them),
	 * and paired now its run would pair with ones the reference made earlier */
	if (!final && nc < hi && nr > ALIGN_NEAR && last_return(ci, nc) >= ri[nr - ALIGN_NEAR].t)
		return false;
	if (!best_offset(ref, ri, lo, hi, r, ci, nc, final ? ALIGN_SLACK : 0, &off))
		return false;
	for (k = lo; k < nr && k + off < nc; k++) {
		const struct tl_coll *a = &ref->coll[ri[k].i], *b = &r->coll[ci[k + off].i];

		if ((is_main(ref, a) && is_main(r, b)) || (on == ALIGN_NO_P2P && a->comm == b->comm)) {
			*seq_off = (int64_t)a->seq - (int64_t)b->seq;
			return true;
		}
	}
	return false;
}

static bool has_p2p(const struct job_rank *r)
{
	int i;

	for (i = 0; i < r->ncoll; i++)
		if (is_p2p(&r->coll[i]))
			return true;
	return false;
}

static void align(struct job *j, bool final)
{
	const struct job_rank *ref = &j->r[0];
	struct align_at ri[3 * ALIGN_RUN], *ci;
	int c, lo, hi;

	if (!ref->have_main)
		return;
	ci = malloc(sizeof(*ci) * JOB_MAX_COLL);
	if (!ci)
		return;
	for (c = 1; c < j->n; c++) {
		struct job_rank *r = &j->r[c];

		if (r->aligned || !r->have_main)
			continue;
		/* ranks that wait for their collectives pair at the ends of those waits: not on
		 * their launches while too few came, unless the job ended */
		if (ref->nbwd && r->nbwd && align_index(ref, ALIGN_WAITS, ri, 1) &&
		    align_index(r, ALIGN_WAITS, ci, 1)) {
			r->aligned = align_one(ref, r, ALIGN_WAITS, final, ri, ci, &r->seq_off);
			if (r->aligned || !final)
				continue;
		}
		r->aligned = align_one(ref, r, ALIGN_THREAD, final, ri, ci, &r->seq_off) ||
			     align_one(ref, r, ALIGN_MAIN, final, ri, ci, &r->seq_off) ||
			     (has_p2p(r) && align_one(ref, r, ALIGN_NO_P2P, final, ri, ci,
						      &r->seq_off));
	}
	/* the reference is aligned once its own run is long enough to pair others against */
	if (align_run(align_index(ref, ALIGN_MAIN, ri, 3 * ALIGN_RUN), ALIGN_RUN, final, &lo, &hi))
		j->r[0].aligned = true;
	free(ci);
}

/*
 * When step [s, e) of rank r finished its gradient all-reduces: the end of its wait after
 * DDP's finalize_backward (a chain of off-CPU intervals, each starting within 0.2 ms of the
 * last), or the entry itself when it did not wait (it was the last to arrive). 0: no entry.
 */
static uint64_t ddp_done(const struct job_rank *r, uint64_t s, uint64_t e)
{
	uint64_t b = 0, t;
	int i;

	for (i = 0; i < r->nbwd && !b; i++)
		if (r->bwd[i] >= s && r->bwd[i] < e)
			b = r->bwd[i];
	if (!b)
		return 0;
	for (t = b, i = 0; i < r->noff; i++) {
		if (r->off[i].start + 200 * 1000ULL < t || r->off[i].end <= t)
			continue;
		if (r->off[i].start > t + 200 * 1000ULL || r->off[i].start >= e)
			break;
		t = r->off[i].end;
	}
	return t;
}

/* When a step's last collective completed on rank r: its return, or, when the rank then
 * waits for it in the background (a wait marked as DDP's finalize_backward marks its own,
 * right after the call: asynchronous collectives), the end of that wait. */
static uint64_t coll_done(const struct job_rank *r, const struct tl_coll *c)
{
	uint64_t d, upto;
	int i;

	if (!c->exit)
		return c->exit;
	/* a wait begun before the thread's next collective is for this one (the thread may be
	 * preempted between the return and the wait); none seen yet: one right after it */
	upto = c->exit + JOB_GROUP_GAP_NS;
	for (i = (int)(c - r->coll) + 1; i < r->ncoll; i++)
		if (r->coll[i].tid == c->tid) {
			upto = r->coll[i].enter;
			break;
		}
	for (i = 0; i < r->nbwd; i++)
		if (r->bwd[i] >= c->exit && r->bwd[i] < upto)
			break;
	if (i == r->nbwd)
		return c->exit;
	d = ddp_done(r, r->bwd[i], UINT64_MAX);
	return d > c->exit ? d : c->exit;
}

/* When step [s, e) of r finished the work every rank finishes together: DDP's
 * finalize_backward wait, else the exit of the last collective that ends in it (an
 * all-reduce or a barrier returns on every rank at once, whoever came late). 0: neither. */
#define JOB_MARK_SPAN_NS	(60ULL * 1000000000ULL)	/* a collective longer than this: a hang */

static uint64_t step_done(const struct job_rank *r, uint64_t s, uint64_t e)
{
	uint64_t t = ddp_done(r, s, e), last = 0;
	int i, lo = 0, hi = r->ncoll;

	if (t)
		return t;
	while (lo < hi) {	/* the first collective entered at e or after */
		int mid = lo + (hi - lo) / 2;

		if (r->coll[mid].enter < e)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo - 1; i >= 0 && r->coll[i].enter + JOB_MARK_SPAN_NS > s; i--)
		if (r->coll[i].exit >= s && r->coll[i].exit < e && r->coll[i].exit > last &&
		    r->coll[i].op != RS_OP_GPU_SYNC && r->coll[i].peer < 0)
			last = r->coll[i].exit;
	return last;
}

/* The start of marker seq s of rank r and the next marker's, if both are there. */
static bool mark_step(const struct job_rank *r, int64_t s, uint64_t *start, uint64_t *end)
{
	int i;

	for (i = 0; i + 1 < r->nmark; i++)
		if ((int64_t)r->mark[i].seq == s && r->mark[i + 1].seq == r->mark[i].seq + 1) {
			*start = r->mark[i].t;
			*end = r->mark[i + 1].t;
			return true;
		}
	return false;
}

/*
 * Marker steps (DDP's prepare_for_forward, or --steps marker:/usdt:) count from each rank's
 * attach, so the same step may have different numbers on two ranks attached a step apart.
 * Nearest starts cannot line them up: a rank starved of input starts each step most of a
 * step after its peers. Their ends can: the gradient all-reduces finish at once on every
 * rank, and so does each rank's wait in finalize_backward, or its last collective. The
 * offset whose steps finish closest together (median over the steps both ranks have) wins.
 */
static void align_markers(struct job *j)
{
	const struct job_rank *ref = &j->r[0];
	uint64_t rs, re, ts, te, a, b, *d, best, med;
	int c, i, o, best_o, pairs;

	j->r[0].aligned = true;
	d = malloc(sizeof(*d) * JOB_MAX_MARK);
	if (!d)
		return;
	for (c = 1; c < j->n; c++) {
		struct job_rank *r = &j->r[c];
		bool any = false;

		if (r->aligned || r->nmark < JOB_MARK_ALIGN || ref->nmark < JOB_MARK_ALIGN)
			continue;
		best = UINT64_MAX;
		best_o = 0;
		for (o = 0; o <= 2 * JOB_MARK_OFF; o++) {
			int oo = o % 2 ? -(o + 1) / 2 : o / 2;	/* 0, -1, 1, -2, 2, ... */

			for (pairs = 0, i = 0; i + 1 < r->nmark; i++) {
				if (r->mark[i + 1].seq != r->mark[i].seq + 1)
					continue;
				rs = r->mark[i].t;
				re = r->mark[i + 1].t;
				if (!mark_step(ref, (int64_t)r->mark[i].seq + oo, &ts, &te))
					continue;
				a = step_done(r, rs, re);
				b = step_done(ref, ts, te);
				if (!a || !b)
					continue;
				d[pairs++] = a > b ? a - b : b - a;
			}
			if (pairs < JOB_MARK_ALIGN / 2)
				continue;
			any = true;
			med = detect__median(d, pairs);
			if (med < best) {
				best = med;
				best_o = oo;
			}
		}
		if (!any && r->nmark < 2 * JOB_MARK_ALIGN)
			continue;	/* no backward seen yet: wait a little */
		r->mark_off = best_o;
		r->aligned = true;
	}
	free(d);
}

static int64_t aseq(const struct job_rank *r, const struct tl_coll *c);

/*
 * Main collective i's signature, with the other communicators' collectives its thread made
 * since the rank's previous main one folded in. Tensor-parallel layers are all alike on the
 * main communicator, and a rank that computes more pauses alike between all of them: the
 * data-parallel all-reduce on its own communicator is what marks the step. At most
 * JOB_FOLD_MAX are folded (a window holds a few thousand).
 */
static uint64_t main_sig(const struct job_rank *r, int i, bool *folded)
{
	const struct tl_coll *c = &r->coll[i];
	uint64_t s = period__sig(c->op, c->bytes, c->comm);
	int k, n = 0;

	for (k = i - 1; k >= 0 && n < JOB_FOLD_MAX && !is_main(r, &r->coll[k]); k--) {
		const struct tl_coll *o = &r->coll[k];

		if (o->tid != c->tid || o->comm == r->main_comm)
			continue;
		s = period__sig(o->op, o->bytes, s ^ o->comm);
		n++;
	}
	if (folded)
		*folded = n > 0;
	return s;
}

/* What a collective does to the step: gradients are reduced at its end, parameters and
 * activations gathered or exchanged from its start; a barrier says neither. */
enum coll_role { ROLE_NONE, ROLE_REDUCE, ROLE_GATHER };

static enum coll_role coll_role(unsigned int op)
{
	switch (op) {
	case RS_OP_ALLREDUCE: case RS_OP_REDUCE_SCATTER: case RS_OP_REDUCE:
		return ROLE_REDUCE;
	case RS_OP_ALLGATHER: case RS_OP_ALLTOALL: case RS_OP_BROADCAST: case RS_OP_GATHER:
	case RS_OP_SCATTER: case RS_OP_SEND: case RS_OP_RECV:
		return ROLE_GATHER;
	default:
		return ROLE_NONE;
	}
}

/*
 * Where a step ends, by what its collectives do: when one step's main collectives (t[], of
 * roles role[]) both reduce and gather, the step ends after the reduction that the longest run
 * of gathers follows (the last reduce-scatter before FSDP's forward all-gathers, the
 * all-reduce after MoE's dispatch and combine), wherever the longest pause falls: turns t[] to
 * end there. It stays when its end is one of the equals, or the roles do not say. The roles
 * are those of the template's own collectives: a save's barrier every few steps shifts the
 * places of the collectives after it, so places counted from the start of those seen say
 * nothing.
 */
static void end_by_roles(uint64_t *t, const uint8_t *role, int p)
{
	int q, k, run, best = -1, best_run = 0;
	uint64_t *tmp;
	bool keep = false;

	for (q = 0; q < p; q++) {
		if (role[q] != ROLE_REDUCE)
			continue;
		for (run = 0, k = 1; k < p && role[(q + k) % p] != ROLE_REDUCE; k++)
			run += role[(q + k) % p] == ROLE_GATHER;
		if (!run || run < best_run)
			continue;
		if (run > best_run)
			keep = false;
		keep |= q == p - 1;
		if (run > best_run || best < 0) {
			best_run = run;
			best = q;
		}
	}
	if (best < 0 || keep || !(tmp = malloc(sizeof(*tmp) * p)))
		return;
	for (k = 0; k < p; k++)
		tmp[k] = t[(best + 1 + k) % p];
	memcpy(t, tmp, sizeof(*t) * p);
	free(tmp);
}

/* The template: one step's signatures ending with its boundary collective, the step seen most
 * often (an inserted collective shifts the windows after it, so take the majority). */
static int learn_template(struct job *j, const uint64_t *sig, const uint8_t *role, int n)
{
	int p = j->per.period, b, b2, same, best_b = -1, best_n = 0, k;
	uint64_t *t;

	for (b = p - 1; b < n; b++) {
		if (b % p != j->per.phase)
			continue;
		for (same = 0, b2 = p - 1; b2 < n; b2++)
			same += b2 % p == j->per.phase &&
				!memcmp(sig + b - p + 1, sig + b2 - p + 1, sizeof(*sig) * p);
		if (same > best_n) {
			best_n = same;
			best_b = b;
		}
	}
	if (best_b < 0)
		return -EINVAL;
	t = calloc(p, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (k = 0; k < j->n; k++) {
		struct job_rank *r = &j->r[k];

		free(r->hist);
		free(r->hgap);
		r->hist = calloc(p, sizeof(*r->hist));
		r->hgap = calloc(p, sizeof(*r->hgap));
		if (!r->hist || !r->hgap) {
			free(t);
			return -ENOMEM;
		}
		r->nhist = 0;
		r->walk_j = -1;
		r->miss = 0;
		r->bad_ends = 0;
		r->step_gmax = 0;
		r->locked_once = false;
	}
	memcpy(t, sig + best_b - p + 1, sizeof(*t) * p);
	end_by_roles(t, role + best_b - p + 1, p);
	free(j->tmpl);
	j->tmpl = t;
	/* [B, B, B] (equal buckets) is itself turned by one, [T+DP, T, T, T] by none but a
	 * whole step: only the first needs the pauses to tell where the step ends */
	for (j->tmpl_fixed = true, b = 1; b < p && j->tmpl_fixed; b++) {
		for (k = 0; k < p && t[k] == t[(k + b) % p]; k++)
			;
		j->tmpl_fixed = k < p;
	}
	return 0;
}

/* The shortest multiple of period p (at most PERIOD_MAX), seen twice, that the later half
 * of the n signatures repeats exactly (the first half may hold the job's setup): FSDP's
 * forward all-gathers and backward (all-gather, reduce-scatter) pairs repeat every 2 but
 * for two places a step. 0: none. */
static int longer_exact(const uint64_t *sig, int n, int p)
{
	int q, i;

	for (q = 2 * p; p > 0 && q <= PERIOD_MAX && 2 * q <= n; q += p) {
		for (i = n / 2; i < n && sig[i] == sig[i - q]; i++)
			;
		if (i == n)
			return q;
	}
	return 0;
}

static const struct tl_coll *find_seq(const struct job *j, const struct job_rank *r, int64_t s);
static uint64_t overlap(uint64_t s, uint64_t e, uint64_t a, uint64_t b);
static const struct tl_coll *first_p2p(const struct job_rank *r, uint64_t s, uint64_t e);

/*
 * The pause from one collective's return (from) to the next one's entry (to) on rank r, less
 * the time its main thread spent writing files in it; UINT64_MAX when that is half of it or
 * more: a checkpoint's save, whose pause says nothing of where steps end (every rank saving
 * every 7th step would make steps of 7, and the save's short writes and its file's open and
 * rename are not all seen). *io: a cursor into r->io, for pauses asked in time order.
 */
static uint64_t pause_of(const struct job_rank *r, uint64_t from, uint64_t to, int *io)
{
	uint64_t g = to > from ? to - from : 0, w = 0;
	int i;

	while (*io < r->nio && r->io[*io].end <= from)
		(*io)++;
	for (i = *io; i < r->nio && r->io[i].start < to; i++)
		if (r->io[i].write && !r->io[i].worker && r->io[i].kind == RS_FD_REG)
			w += overlap(from, to, r->io[i].start, r->io[i].end);
	return w && 2 * w >= g ? UINT64_MAX : g - w;
}

/* Pauses that were saves (UINT64_MAX) take the median of the others'. */
static void fill_saves(uint64_t *gap, int n)
{
	uint64_t *v = malloc(sizeof(*v) * (size_t)(n > 0 ? n : 1)), med;
	int i, m = 0;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		if (gap[i] != UINT64_MAX)
			v[m++] = gap[i];
	med = m ? detect__median(v, m) : 0;
	for (i = 0; i < n; i++)
		if (gap[i] == UINT64_MAX)
			gap[i] = med;
	free(v);
}

/*
 * The pause after each of the reference's collectives (ref[i], gap[i] before ref[i + 1]) as
 * the ranks lined up with it make it: the median of theirs and its own, over up to
 * JOB_GAP_RANKS ranks spread over the job (of two, the shorter). A step ends in a pause on
 * every rank; a pause of one rank's own (rank 0 saving a checkpoint, or late every k-th step)
 * is not one, and read on the reference alone it makes steps of k. The median, not the
 * least: a rank lined up a bucket or two off (equal buckets) pauses elsewhere. Pipeline
 * stages make other calls between the ones they share, and their pauses are their
 * schedule's: not looked at.
 */
static void common_gaps(const struct job *j, const struct tl_coll *const *ref, uint64_t *gap,
			int n)
{
	int c, i, m, k = 1, step = j->n > JOB_GAP_RANKS ? j->n / JOB_GAP_RANKS : 1, io;
	uint64_t *v, *at;

	if (n < 2 || has_p2p(&j->r[0]))
		return;
	v = malloc(sizeof(*v) * (size_t)(n - 1) * (JOB_GAP_RANKS + 2));
	at = malloc(sizeof(*at) * (JOB_GAP_RANKS + 2));
	if (!v || !at)
		goto out;
	for (i = 0; i + 1 < n; i++)
		v[(size_t)i * (JOB_GAP_RANKS + 2)] = gap[i];
	for (c = step; c < j->n && k < JOB_GAP_RANKS + 2; c += step) {
		const struct job_rank *r = &j->r[c];

		if (!r->aligned || r->exited || has_p2p(r))
			continue;
		for (io = 0, i = 0; i + 1 < n; i++) {
			const struct tl_coll *a = find_seq(j, r, aseq(&j->r[0], ref[i]));
			const struct tl_coll *b = find_seq(j, r, aseq(&j->r[0], ref[i + 1]));
			uint64_t g = UINT64_MAX;	/* not seen: no say */

			if (a && b && a->exit && a->op == ref[i]->op && a->bytes == ref[i]->bytes &&
			    b->op == ref[i + 1]->op && b->bytes == ref[i + 1]->bytes)
				g = pause_of(r, a->exit, b->enter, &io);
			v[(size_t)i * (JOB_GAP_RANKS + 2) + k] = g;
		}
		k++;
	}
	for (i = 0; k > 1 && i + 1 < n; i++) {
		const uint64_t *p = &v[(size_t)i * (JOB_GAP_RANKS + 2)];
		int q;

		for (m = 0, q = 0; q < k; q++)
			if (p[q] != UINT64_MAX)
				at[m++] = p[q];
		if (m == 2)
			gap[i] = at[0] < at[1] ? at[0] : at[1];
		else if (m > 2)
			gap[i] = detect__median(at, m);
	}
out:
	free(v);
	free(at);
}

/* Whether some of the n collectives reduce, or none gathers (a barrier loop, no step to
 * wait for). */
static bool reduces(const uint8_t *role, int n)
{
	bool gathers = false;
	int i;

	for (i = 0; i < n; i++) {
		if (role[i] == ROLE_REDUCE)
			return true;
		gathers |= role[i] == ROLE_GATHER;
	}
	return !gathers;
}

/* The last JOB_PERIOD_SEEN main collectives of the reference rank, learned once there are
 * enough (more while the pauses say steps may be longer than what was seen). */
/* Whether the job's ranks are on more than one main communicator. */
static bool split_mains(const struct job *j)
{
	int c;

	for (c = 1; c < j->n; c++)
		if (j->r[c].have_main && j->r[0].have_main && j->r[c].main_comm != j->r[0].main_comm)
			return true;
	return false;
}

static void detect_period(struct job *j, bool final)
{
	const struct job_rank *r = &j->r[0];
	uint64_t *sig, *gap, prev_exit = 0;
	int i, n = 0, from = 0, err, old_p = j->per.period, io = 0;
	const struct tl_coll **ref;
	uint8_t *role;
	bool *fold, *red;

	if (j->have_period || !j->have_main)
		return;
	if (j->cfg.mode == STEPS_EVERY) {
		j->per.period = j->cfg.every;
		j->per.phase = j->cfg.every - 1;
		j->per.confidence = 1;
		j->have_period = true;
		j->walk = true;		/* no template: every N-th collective */
		j->rule = "every";
		return;
	}
	for (i = r->ncoll - 1; i >= 0 && n < JOB_PERIOD_SEEN; i--)
		if (is_main(r, &r->coll[i]) &&
		    (!j->have_learn_from || aseq(r, &r->coll[i]) >= j->learn_from)) {
			n++;
			from = i;
		}
	/* enough repeats of the largest period we look for, or what there is at the end; after
	 * an attempt that found nothing, not again every tick: when a quarter more has come */
	if (n < 48 && !(final && n >= PERIOD_MIN_REPEATS))
		return;
	if (!final && j->tried_n && n < j->tried_n + (j->tried_n / 4 > 16 ? j->tried_n / 4 : 16))
		return;
	j->tried_n = n;
	sig = calloc(n, sizeof(*sig));
	gap = calloc(n, sizeof(*gap));
	fold = calloc(n, sizeof(*fold));
	role = calloc(n, sizeof(*role));
	red = calloc(n, sizeof(*red));
	ref = calloc(n, sizeof(*ref));
	if (!sig || !gap || !fold || !role || !red || !ref)
		goto out;
	for (n = 0, i = from; i < r->ncoll; i++) {
		const struct tl_coll *c = &r->coll[i];

		if (!is_main(r, c) || (j->have_learn_from && aseq(r, c) < j->learn_from))
			continue;
		if (n)
			gap[n - 1] = pause_of(r, prev_exit, c->enter, &io);
		sig[n] = main_sig(r, i, &fold[n]);
		role[n] = coll_role(c->op);
		red[n] = role[n] == ROLE_REDUCE;
		ref[n] = c;
		n++;
		prev_exit = c->exit;
	}
	/* ranks on different main communicators (tensor- or pipeline-parallel groups) meet on
	 * another one once a step: until the reference made a call there, its step was not seen
	 * whole (48 equal tensor-parallel all-reduces are not 48 steps), for a while */
	if (!final && n < JOB_PERIOD_WAIT && split_mains(j)) {
		for (i = 0; i < n && !fold[i]; i++)
			;
		if (i == n)
			goto out;
	}
	common_gaps(j, ref, gap, n);
	fill_saves(gap, n - 1);
	/* a training step reduces its gradients: collectives that only gather or exchange (48
	 * of a MoE step's dispatches and combines before its all-reduce) were not a step seen
	 * whole, for a while; a job that never reduces is taken as it is after that */
	if (!final && n < JOB_PERIOD_WAIT && !reduces(role, n))
		goto out;
	err = period__detect_folded(sig, gap, fold, n, PERIOD_MAX, final, &j->per);
	/* a step without the job's reductions, or without its collectives on other
	 * communicators, is part of one: wait for them to repeat */
	if (!err) {
		bool last = final || n >= JOB_PERIOD_SEEN;
		int e = period__marked(sig, red, n, false, last, &j->per);

		if (!e)
			e = period__marked(sig, fold, n, true, last, &j->per);
		if (e && !last)
			goto out;
	}
	/* a period that still repeats imperfectly, again and again (not only around the job's
	 * setup, nor one hiccup), may be part of a longer one not seen 3 times yet (FSDP's
	 * 2L+1 collectives a step, an eval cycle): wait for more, for a while; when a multiple
	 * of it already repeats exactly twice, until that one can be seen 3 times */
	if (!err && !final && j->per.late_confidence < JOB_PERIOD_SURE &&
	    ((j->per.late_misses >= PERIOD_MIN_REPEATS && n < JOB_PERIOD_WAIT) ||
	     n < PERIOD_MIN_REPEATS * longer_exact(sig, n, j->per.period)))
		goto out;
	if (err || j->per.period <= 0)
		goto out;
	if (learn_template(j, sig, role, n))
		goto out;
	j->have_period = true;
	j->walk = true;
	j->rule = "period";
	if (j->relearns)
		snprintf(j->rule_note, sizeof(j->rule_note),
			 "the collective pattern changed: steps of %d collectives now, %d before",
			 j->per.period, old_p);
	else
		snprintf(j->rule_note, sizeof(j->rule_note), "steps of %d collectives%s",
			 j->per.period, j->per.long_ns ? ", ended by their longest pause" : "");
	if (j->ops.on_rule)
		j->ops.on_rule(j->ops.ctx, j->rule, j->per.period, j->per.confidence,
			       j->relearns > 0, j->rule_note);
out:
	free(sig);
	free(gap);
	free(fold);
	free(role);
	free(red);
	free(ref);
}

static int64_t aseq(const struct job_rank *r, const struct tl_coll *c)
{
	return (int64_t)c->seq + r->seq_off;
}

/*
 * The main communicator's collective with aligned seq s. Steps ask for neighbouring seqs in
 * turn (a step's end is the next one's start; lateness walks the seqs between), so the search
 * starts at the last hit and walks toward s, then the other way: O(distance), not O(window)
 * (at 1,000 steps/s a full scan per call was most of the daemon's CPU). Seqs of the main
 * communicator are unique in the window, so any order finds the same one. The hint is only a
 * starting index: after a trim shifts the array it is merely a worse start.
 */
static const struct tl_coll *find_seq(const struct job *j, const struct job_rank *r, int64_t s)
{
	struct job_rank *w = (struct job_rank *)r;	/* the hint only; the window is not changed */
	int h = r->seq_hint, i, pass;
	bool up;

	if (r->ncoll <= 0)
		return NULL;
	if (h < 0 || h >= r->ncoll)
		h = r->ncoll - 1;
	up = !is_main(r, &r->coll[h]) || aseq(r, &r->coll[h]) <= s;
	for (pass = 0; pass < 2; pass++, up = !up) {
		for (i = h; i >= 0 && i < r->ncoll; i += up ? 1 : -1) {
			if (is_main(r, &r->coll[i]) && aseq(r, &r->coll[i]) == s) {
				w->seq_hint = i;
				return &r->coll[i];
			}
		}
	}
	return NULL;
}

/* ---- the period walk ---- */

/* Record a boundary of rank r at collective c. */
static void add_boundary(struct job_rank *r, const struct tl_coll *c, int64_t as)
{
	MAKE_ROOM(r->mark, r->nmark, JOB_MAX_MARK);
	r->mark[r->nmark++] = (struct job_mark){ .t = c->exit, .seq = ++r->walk_k, .aseq = as };
}

static void start_search(struct job_rank *r, int64_t as)
{
	r->walk_j = -1;
	r->nhist = 0;
	r->miss = 0;
	r->bad_ends = 0;
	r->step_gmax = 0;
	r->search_from = as;
}

/*
 * Whether a rank other than the reference ends a step of p collectives at aligned seq as by
 * its own pauses: the pause after it clearly the longest since the step's first. Asynchronous
 * launches return at once, so a late reference rank's pauses are its compute slices, all
 * alike; the others wait for it after their last launch, where the step ends for all.
 */
static bool other_rank_ends(const struct job *j, int64_t as, int p)
{
	const struct tl_coll *s, *e;
	uint64_t inside, gap;
	int c, i, prev;

	for (c = 1; c < j->n; c++) {
		const struct job_rank *q = &j->r[c];

		if (has_p2p(q) || !(e = find_seq(j, q, as)) || !(s = find_seq(j, q, as - p + 1)))
			continue;
		for (inside = 0, prev = (int)(s - q->coll), i = prev + 1; i < q->ncoll; i++) {
			if (!is_main(q, &q->coll[i]))
				continue;
			gap = q->coll[i].enter > q->coll[prev].exit ?
				q->coll[i].enter - q->coll[prev].exit : 0;
			if (&q->coll[prev] == e) {
				if (period__step_end(gap, inside))
					return true;
				break;
			}
			inside = gap > inside ? gap : inside;
			prev = i;
		}
	}
	return false;
}

/*
 * Follow the step template over one collective of the reference rank; after: the pause that
 * followed it. A step's boundary is its template's last collective: an extra collective (an
 * eval, a checkpoint barrier) stays inside the step it falls in, a missing one is skipped
 * over, and after a run of strangers the walk searches for a whole template again. When the
 * steps were found from their pauses (equal buckets), a boundary must also be followed by the
 * step's longest pause, on the reference rank or another (other_rank_ends); two template ends
 * in a row that are not mean the walk lost the step (a lost collective), and it searches
 * again.
 */
static void walk_one(struct job *j, struct job_rank *r, const struct tl_coll *c, uint64_t sig,
		     int64_t as, uint64_t after)
{
	int p = j->per.period, q, k;
	bool gaps = j->per.long_ns != 0 && !j->tmpl_fixed;
	uint64_t inside;

	if (!j->tmpl) {		/* every:N counts */
		if (++r->walk_j >= p) {
			r->walk_j = 0;
			add_boundary(r, c, as);
		}
		return;
	}
	if (r->walk_j < 0) {	/* searching: the last p signatures must be the template */
		memmove(r->hist, r->hist + 1, sizeof(*r->hist) * (p - 1));
		memmove(r->hgap, r->hgap + 1, sizeof(*r->hgap) * (p - 1));
		r->hist[p - 1] = sig;
		r->hgap[p - 1] = after;
		if (r->nhist < p)
			r->nhist++;
		/* the rank's first collectives: the first has nothing before it to fold in (the
		 * data-parallel all-reduce of a step before), so it is not compared */
		if (r->nhist < p || (memcmp(r->hist, j->tmpl, sizeof(*r->hist) * p) &&
				     (as - (p - 1) != j->s0 || p < 2 ||
				      memcmp(r->hist + 1, j->tmpl + 1, sizeof(*r->hist) * (p - 1)))))
			return;
		for (inside = 0, k = 0; k < p - 1; k++)
			inside = r->hgap[k] > inside ? r->hgap[k] : inside;
		if (gaps && !period__step_end(after, inside) && !other_rank_ends(j, as, p))
			return;
		r->walk_j = 0;
		r->step_hits = 0;
		r->miss = 0;
		r->bad_ends = 0;
		r->step_gmax = 0;
		if (r->locked_once && !r->search_locks++)
			r->lost_from = r->search_from;
		r->locked_once = true;
		add_boundary(r, c, as);
		return;
	}
	for (q = r->walk_j; q < p && j->tmpl[q] != sig; q++)
		;
	/* a step is not closed by its last collective's look-alike with most of it missing
	 * (an eval's all-reduce after the step's own): that one is a stranger too */
	if (q == p - 1 && 2 * (r->step_hits + 1) < p)
		q = p;
	if (q == p) {		/* a stranger: it stays in this step */
		if (++r->miss > 2 * p)
			start_search(r, as);
		return;
	}
	r->miss = 0;
	r->step_hits++;
	/* q > walk_j: the ones between are missing */
	r->walk_j = q + 1;
	if (r->walk_j < p) {
		r->step_gmax = after > r->step_gmax ? after : r->step_gmax;
		return;
	}
	r->walk_j = 0;
	r->step_hits = 0;
	if (gaps && !period__step_end(after, r->step_gmax) && !other_rank_ends(j, as, p)) {
		r->step_gmax = after > r->step_gmax ? after : r->step_gmax;
		if (++r->bad_ends >= 2) {
			start_search(r, as);
			return;
		}
	} else {
		r->bad_ends = 0;
		r->search_locks = 0;
	}
	r->step_gmax = 0;
	add_boundary(r, c, as);
}

/* The job's pattern changed (a new model phase): the walk has searched for a template over
 * JOB_RELEARN_STEPS periods' worth of collectives without finding one, or found the last
 * JOB_RELEARN_STEPS steps only by searching. Learn it again. */
static void maybe_relearn(struct job *j, int64_t as)
{
	struct job_rank *r = &j->r[0];
	int64_t from = r->search_from;

	if (!j->tmpl || !r->locked_once)
		return;
	/* steps found only by searching again, one after another: the template ends inside
	 * them (equal buckets, more of them now) */
	if (r->search_locks >= JOB_RELEARN_STEPS)
		from = r->lost_from;
	else if (r->walk_j >= 0 ||
		 as - r->search_from < (int64_t)JOB_RELEARN_STEPS * j->per.period ||
		 as - r->search_from < 48)
		return;
	j->have_period = false;
	j->tried_n = 0;
	j->relearns++;
	j->gen_k = j->next_k;
	r->search_locks = 0;
	j->learn_from = from;
	j->have_learn_from = true;
	/* the walk goes on from here with the new template; step numbers go on too */
}

static void walk(struct job *j, bool final)
{
	struct job_rank *r = &j->r[0];
	int c, i, i2;

	if (!j->have_s0) {
		/* a common start: after every rank's first main collective */
		int64_t s0 = INT64_MIN;

		for (c = 0; c < j->n; c++) {
			const struct job_rank *q = &j->r[c];
			bool any = false;

			if (!q->aligned && !q->exited)
				return;
			/* a pipeline's other stages cut their steps at their copies of the
			 * reference's anchors, not at its seqs */
			if (c && (has_p2p(q) || has_p2p(&j->r[0])))
				continue;
			for (i = 0; i < q->ncoll && !any; i++) {
				if (!is_main(q, &q->coll[i]))
					continue;
				any = true;
				if ((int64_t)q->coll[i].seq + q->seq_off > s0)
					s0 = (int64_t)q->coll[i].seq + q->seq_off;
			}
			if (!any && !q->exited)
				return;
		}
		j->s0 = s0;
		j->have_s0 = true;
		r->walk_next = s0;
		r->search_from = s0;
	}
	/* only the reference rank walks: the other ranks' boundaries are their collectives with
	 * the same aligned seq, so every rank cuts the same logical step */
	for (i = 0; i < r->ncoll; i++) {
		const struct tl_coll *t = &r->coll[i];
		int64_t as = (int64_t)t->seq + r->seq_off;
		uint64_t after = 0;

		if (!is_main(r, t) || as < r->walk_next)
			continue;
		/* the pause after it: wait for the next collective, unless it has gone */
		for (i2 = i + 1; i2 < r->ncoll && !is_main(r, &r->coll[i2]); i2++)
			;
		if (i2 < r->ncoll)
			after = r->coll[i2].enter > t->exit ? r->coll[i2].enter - t->exit : 0;
		else if (final)	/* observation ended: the pause lasted until now at least */
			after = j->now > t->exit ? j->now - t->exit : 0;
		else if (!r->exited && j->per.long_ns)
			break;
		r->walk_next = as + 1;
		walk_one(j, r, t, main_sig(r, i, NULL), as, after);
		maybe_relearn(j, as);
		if (!j->have_period)
			break;
	}
}

/* ---- step assembly ---- */

/* The latest aligned seq rank r has reached on the main communicator. */
static int64_t reached(const struct job *j, const struct job_rank *r)
{
	int i;

	for (i = r->ncoll - 1; i >= 0; i--)
		if (is_main(r, &r->coll[i]))
			return aseq(r, &r->coll[i]);
	return INT64_MIN;
}

/* Whether rank r entered a wait for its asynchronous collectives after end that has not
 * ended, in the same chain: its latest wait mark is past end, nothing was seen of it since
 * (no off-CPU interval from it, whose record comes at its end), and no collective was entered
 * after end. Its step goes on. */
static bool still_waiting(const struct job_rank *r, uint64_t end)
{
	uint64_t m = r->nbwd ? r->bwd[r->nbwd - 1] : 0;

	if (m <= end)
		return false;
	if (r->noff && r->off[r->noff - 1].end > m)
		return false;
	/* a collective since end (records are in entry order): that wait is the next step's,
	 * after its collectives (DDP's next backward) */
	return !r->ncoll || r->coll[r->ncoll - 1].enter <= end;
}

/*
 * Whether the wait chain that ends at `end` after rank r's asynchronous collective c is over:
 * the rank was seen doing anything after it but entering a wait that goes on, or some rank
 * entered a main collective after c (c completed everywhere, so no wait for it goes on). A
 * recording cut in the chain, or a wait still going on, is neither: the step is not over yet.
 */
static bool chain_over(const struct job *j, const struct job_rank *r, const struct tl_coll *c,
		       uint64_t end)
{
	int64_t s = aseq(r, c);
	int i;

	if (r->exited)
		return true;
	if (r->seen_ns > end && !still_waiting(r, end))
		return true;
	for (i = 0; i < j->n; i++)
		if (j->r[i].aligned && reached(j, &j->r[i]) > s)
			return true;
	return false;
}

/* Boundaries of step k of rank r: [*start, *end). Returns 1, 0 if not known yet, -1 if it
 * never will be (the rank went past a boundary collective it has no record of: a drop). */
/*
 * When the step that boundary collective c ends is over on rank r: c's return, or, when its
 * thread goes on to reduce on other communicators before its next main collective (TP+DP's
 * data-parallel all-reduce after the last tensor-parallel one, a pipeline's world all-reduce
 * after its last send), their return: a step ends with its reductions. 0: not known yet: one
 * of them is still inside (up to the hang timeout), or the next main collective has not come
 * (for JOB_SETTLE_NS).
 */
/* The reductions on other communicators that close the step boundary collective c ends on
 * rank r (on c's thread, before its next main collective or anything else). */
static int closing(const struct job_rank *r, const struct tl_coll *c)
{
	int i, n = 0;

	for (i = (int)(c - r->coll) + 1; i < r->ncoll; i++) {
		const struct tl_coll *o = &r->coll[i];

		if (o->tid != c->tid)
			continue;
		if (o->comm == r->main_comm || coll_role(o->op) != ROLE_REDUCE)
			break;
		n++;
	}
	return n;
}

/* Whether rank r waited for collective c in the background after its return (an
 * asynchronous collective, and its wait). */
static bool waited(const struct job_rank *r, const struct tl_coll *c)
{
	return c->exit && coll_done(r, c) > c->exit;
}

/* Whether what was recorded of rank r ends inside the step boundary collective c ends: fewer
 * reductions close it than closed each of the (up to) two steps before still kept (a period of
 * main collectives back each, on c's thread): the steps of a pipeline's stage, or of TP+DP,
 * end with them; or those were waited for after their return (asynchronous), and c not yet. */
static bool cut_before_closed(const struct job *j, const struct job_rank *r,
			      const struct tl_coll *c)
{
	int i, k, n = j->per.period, have = closing(r, c), least = INT_MAX;
	bool all_waited = true;

	for (i = (int)(c - r->coll) - 1, k = 0; i >= 0 && k < 2; i--)
		if (r->coll[i].tid == c->tid && is_main(r, &r->coll[i]) && --n <= 0) {
			int m = closing(r, &r->coll[i]);

			least = m < least ? m : least;
			all_waited &= waited(r, &r->coll[i]);
			n = j->per.period;
			k++;
		}
	return k && (have < least || (all_waited && !waited(r, c)));
}

static uint64_t bound_end(const struct job *j, const struct job_rank *r, const struct tl_coll *c,
			  bool final)
{
	uint64_t end = coll_done(r, c), d;
	struct job_inflight in;
	int i;

	/* ended by a wait for its asynchronous collectives: not before that wait is over */
	if (end > c->exit && !chain_over(j, r, c, end))
		return 0;
	for (i = (int)(c - r->coll) + 1; i < r->ncoll; i++) {
		const struct tl_coll *o = &r->coll[i];

		if (o->tid != c->tid)
			continue;
		if (o->comm == r->main_comm || coll_role(o->op) != ROLE_REDUCE)
			return end;
		/* still inside: waiting there for a late rank, its step ends late; stuck there
		 * (a hang, a divergent call), or cut there, it never ends */
		if (!o->exit)
			return r->exited ? end : 0;
		d = coll_done(r, o);
		end = d > end ? d : end;
	}
	/* what was recorded ends before the reductions that closed the steps before: the
	 * recording (or the rank) ended inside the step, which never ends */
	if ((final || r->exited) && cut_before_closed(j, r, c))
		return 0;
	/* one inside now (its record comes at its return): waiting there for a late rank, the
	 * step ends late; stuck there (a hang, a divergent call) or cut there, it never ends */
	if (!r->exited && j->ops.inflight && j->ops.inflight(j->ops.ctx, (int)(r - j->r), &in) &&
	    in.comm != r->main_comm && coll_role(in.op) == ROLE_REDUCE && in.enter_ns >= c->exit)
		return 0;
	if (final || r->exited)
		return end;
	return j->now >= end + JOB_SETTLE_NS ? end : 0;
}

/*
 * Pipeline stages make different numbers of main collectives a step (the first stage sends
 * M activations and receives M gradients, a middle one also passes both on), so the same
 * aligned seq is not the same step's end on each. Their steps end together at what they
 * share: the reduction that ends the reference's step (a world all-reduce of the loss or the
 * gradient norm, after the sends or among them on MPI's world) is one collective on every
 * rank, its anchor. It returns on every rank at nearly the same instant, so each rank's copy
 * is its collective of the same communicator, op and size that returned nearest to it.
 */

/* The anchor of the reference's step ended by boundary collective c: the last reduction on
 * another communicator it closes with (bound_end's), else c when it is a reduction; NULL:
 * none, or (*done false) not known yet. */
static const struct tl_coll *step_anchor(const struct job_rank *r, const struct tl_coll *c,
					 bool final, bool *done)
{
	const struct tl_coll *a = NULL;
	int i;

	*done = false;
	for (i = (int)(c - r->coll) + 1; i < r->ncoll; i++) {
		const struct tl_coll *o = &r->coll[i];

		if (o->tid != c->tid)
			continue;
		if (o->comm == r->main_comm || coll_role(o->op) != ROLE_REDUCE) {
			*done = true;
			break;
		}
		a = o;
	}
	/* the recording or the rank ended after it: nothing more will close it */
	if (final || r->exited)
		*done = true;
	if (!a && *done && !is_p2p(c) && coll_role(c->op) == ROLE_REDUCE)
		a = c;
	return a && a->exit ? a : NULL;
}

/* Rank r's copy of the reference's anchor a: completed within tol of it (an asynchronous
 * one's return says nothing; the end of the wait for it does). */
static const struct tl_coll *anchor_on(const struct job *j, const struct job_rank *r,
				       const struct tl_coll *a, uint64_t tol)
{
	const struct tl_coll *best = NULL;
	uint64_t d, dn = tol + 1, ta = coll_done(&j->r[0], a), t;
	int i;

	for (i = r->ncoll - 1; i >= 0; i--) {
		const struct tl_coll *o = &r->coll[i];

		if (o->exit && o->exit + 4 * tol < ta)
			break;		/* two steps back: no wait lasts that long */
		if (o->comm != a->comm || o->op != a->op || o->bytes != a->bytes || !o->exit)
			continue;
		t = coll_done(r, o);
		d = t > ta ? t - ta : ta - t;
		if (d < dn) {
			dn = d;
			best = o;
		}
	}
	return best;
}

/*
 * Rank r's step by the anchors: 1 (*start, *end set), 0 not known yet, -1 never, -2 not by
 * the anchors (by the aligned seqs). Whether rank r goes by them is decided once, on the
 * first step both ends have: when it or the reference sends or receives messages (a
 * pipeline's stages: another stage's messages are not the reference's, even where it makes
 * as many, and its step starts where it is, not at the reference's first seq).
 */
static int anchor_bounds(const struct job *j, struct job_rank *r, int64_t as_a, int64_t as_b,
			 bool final, uint64_t *start, uint64_t *end)
{
	const struct job_rank *ref = &j->r[0];
	const struct tl_coll *fa = find_seq(j, ref, as_a), *fb = find_seq(j, ref, as_b);
	const struct tl_coll *ra, *rb, *a, *b;
	bool da = false, db = false, past;
	uint64_t tol;

	if (r->anchored < 0)
		return -2;
	ra = fa ? step_anchor(ref, fa, final, &da) : NULL;
	rb = fb ? step_anchor(ref, fb, final, &db) : NULL;
	if (!ra || !rb || rb->exit <= ra->exit || ra->comm != rb->comm) {
		if (r->anchored > 0)
			return fa && fb && da && db ? -1 : 0;
		if ((da && db) || !fa || final || r->exited)
			r->anchored = -1;	/* no shared reduction ends the steps */
		return r->anchored < 0 ? -2 : 0;
	}
	tol = (rb->exit - ra->exit) / 2;
	a = anchor_on(j, r, ra, tol);
	b = anchor_on(j, r, rb, tol);
	past = r->exited || final || (r->ncoll && r->coll[r->ncoll - 1].enter > rb->exit + tol);
	if (!r->anchored) {
		/* a pipeline's stages: their messages are not the reference's, even where
		 * they count as many (the first and the last stage); without messages, a
		 * count that differs is a rank whose main communicator is not settled yet */
		if (a && b)
			r->anchored = has_p2p(r) || has_p2p(ref) ? 1 : -1;
		else if (past)
			r->anchored = -1;	/* it has no copy: another group's */
		if (r->anchored < 0)
			return -2;
	}
	/* no copy of one anchor, and it went on: that step is lost, not awaited */
	if (!a || !b)
		return past ? -1 : 0;
	*start = coll_done(r, a);
	*end = coll_done(r, b);
	return *end > *start ? 1 : -1;
}

static int bounds(const struct job *j, const struct job_rank *r, uint64_t k, uint64_t *start,
		  uint64_t *end, bool final)
{
	const struct tl_coll *a, *b;
	const struct job_rank *ref = &j->r[0];
	int i, ia = -1, ib = -1;

	if (j->markers) {
		int64_t off = r->mark_off;

		for (i = 0; i < r->nmark; i++) {
			if ((int64_t)r->mark[i].seq + off == (int64_t)k)
				ia = i;
			if ((int64_t)r->mark[i].seq + off == (int64_t)k + 1)
				ib = i;
		}
		if (ia < 0 || ib < 0)
			return 0;
		*start = r->mark[ia].t;
		*end = r->mark[ib].t;
		return *end > *start ? 1 : -1;
	}
	/* the reference rank's boundary collectives, on this rank */
	for (i = 0; i < ref->nmark; i++) {
		if (ref->mark[i].seq == k)
			ia = i;
		if (ref->mark[i].seq == k + 1)
			ib = i;
	}
	if (ia < 0 || ib < 0)
		return 0;
	if (r != ref) {
		int ret = anchor_bounds(j, (struct job_rank *)r, ref->mark[ia].aseq,
					ref->mark[ib].aseq, final, start, end);

		if (ret != -2)
			return ret;
	}
	a = find_seq(j, r, ref->mark[ia].aseq);
	b = find_seq(j, r, ref->mark[ib].aseq);
	if (r == ref && (!a || !b)) {	/* trimmed: what the walk saw */
		*start = a ? bound_end(j, r, a, true) : ref->mark[ia].t;
		*end = b ? bound_end(j, r, b, true) : ref->mark[ib].t;
		return *end > *start ? 1 : -1;
	}
	if (!a || !b)
		return reached(j, r) > (int64_t)ref->mark[ib].aseq ? -1 : 0;
	*start = bound_end(j, r, a, true);
	*end = bound_end(j, r, b, final);
	if (!*end)
		return 0;
	return *end > *start ? 1 : -1;
}

static uint64_t overlap(uint64_t s, uint64_t e, uint64_t a, uint64_t b)
{
	uint64_t lo = s > a ? s : a, hi = e < b ? e : b;

	return hi > lo ? hi - lo : 0;
}

static int by_start(const void *a, const void *b)
{
	const struct tl_gpu *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* GPU time in [s, e): the union over streams, NCCL kernels' time, and the step collective's
 * NCCL kernel: the first to start after the host entered it (the kernel is enqueued inside the
 * call; JOB_GPU_SLACK_NS absorbs the probe's own timing), within one step of it. */
static void gpu_step(const struct job_rank *r, uint64_t s, uint64_t e, struct step_obs *o,
		     struct job_step *st)
{
	struct tl_gpu *iv;
	uint64_t hi = 0, lo, a;
	int i, n = 0;

	if (!r->ngpu)
		return;
	st->has_gpu = true;
	iv = calloc(r->ngpu, sizeof(*iv));
	for (i = 0; iv && i < r->ngpu; i++) {
		const struct tl_gpu *g = &r->gpu[i];

		if (g->nccl && o->arrival_ns && g->start + JOB_GPU_SLACK_NS >= o->arrival_ns &&
		    g->start < o->arrival_ns + (e - s) &&
		    (!o->gpu_arrival_ns || g->start < o->gpu_arrival_ns)) {
			o->gpu_arrival_ns = g->start;
			o->gpu_done_ns = g->end;
		}
		if (g->end <= s || g->start >= e)
			continue;
		iv[n].start = g->start > s ? g->start : s;
		iv[n].end = g->end < e ? g->end : e;
		if (g->nccl)
			st->gpu_nccl_ns += iv[n].end - iv[n].start;
		n++;
	}
	if (!iv)
		return;
	qsort(iv, n, sizeof(*iv), by_start);
	for (i = 0; i < n; i++) {
		lo = iv[i].start > hi ? iv[i].start : hi;
		a = iv[i].end > lo ? iv[i].end - lo : 0;
		st->gpu_busy_ns += a;
		if (iv[i].end > hi)
			hi = iv[i].end;
	}
	free(iv);
}

struct phase_ctx {
	const struct job *j;
	int col;
};

static void phase_run(void *ctx, enum phase ph, uint64_t s, uint64_t e)
{
	const struct phase_ctx *pc = ctx;

	pc->j->ops.on_phase(pc->j->ops.ctx, pc->col, ph, s, e);
}

/* Add a collective to its communicator's sequence of the step (FNV-1a over op and bytes). */
static void step_sig(struct job_step_comm *sc, const struct tl_coll *c)
{
	uint64_t h = sc->sig ? sc->sig : 0xcbf29ce484222325ULL, x = (uint64_t)c->op << 56 ^ c->bytes;
	size_t len = strlen(sc->sig_ops), nlen, blen;
	char num[24], *b = num + sizeof(num), *out;
	const char *name;
	uint64_t v = c->bytes;
	int i;

	for (i = 0; i < 8; i++, x >>= 8)
		h = (h ^ (x & 0xff)) * 0x100000001b3ULL;
	sc->sig = h ? h : 1;
	if (len + 4 >= sizeof(sc->sig_ops) || (len >= 3 && !strcmp(sc->sig_ops + len - 3, "...")))
		return;
	/* " OP:BYTES" by hand: this runs for every collective of every step */
	do
		*--b = (char)('0' + v % 10);
	while (v /= 10);
	blen = (size_t)(num + sizeof(num) - b);
	name = decode__op_name(c->op);
	nlen = strlen(name);
	out = sc->sig_ops + len;
	if (len + !!len + nlen + 1 + blen >= sizeof(sc->sig_ops)) {
		memcpy(out, " ...", sizeof(" ..."));
		return;
	}
	if (len)
		*out++ = ' ';
	memcpy(out, name, nlen);
	out += nlen;
	*out++ = ':';
	memcpy(out, b, blen);
	out[blen] = '\0';
}

/* Count a collective of the step on its communicator (held: the time runnable and not
 * running inside it). */
static void step_comm(struct job_step *st, const struct tl_coll *c, uint64_t held)
{
	int i;

	for (i = 0; i < st->ncomm && st->comm[i].comm != c->comm; i++)
		;
	if (i == st->ncomm) {
		if (i == JOB_STEP_COMMS) {
			st->comm_other_ops++;
			return;
		}
		st->comm[st->ncomm++].comm = c->comm;
	}
	st->comm[i].ops++;
	st->comm[i].bytes += c->bytes;
	if (c->exit && is_p2p(c))
		st->comm[i].p2p_ns += c->exit - c->enter;
	if (c->exit)
		st->comm[i].inside_ns += c->exit - c->enter;
	st->comm[i].held_ns += held;
	if (!is_p2p(c))
		step_sig(&st->comm[i], c);
}

static uint64_t runnable_in(const struct job_rank *r, int *cur, uint64_t a, uint64_t b);

static void build_step(const struct job *j, const struct job_rank *r, uint64_t k, uint64_t s,
		       uint64_t e, struct step_obs *o, struct job_step *st)
{
	struct tl_coll *cs = NULL;
	struct tl_off *offs;
	struct tl_io *ios;
	uint64_t comm_from = 0;
	int i, nc = 0, noff = 0, nio = 0, cur = 0;

	memset(st, 0, sizeof(*st));
	st->index = k;
	st->start_ns = s;
	st->dur_ns = e - s;
	cs = calloc(r->ncoll + r->nsync + 1, sizeof(*cs));
	/* in entry order: none from the first entered at e on counts (the window holds every
	 * step not yet assembled, some 200 ms of them) */
	for (i = 0; cs && i < r->ncoll && r->coll[i].enter < e; i++) {
		const struct tl_coll *c = &r->coll[i];

		if (c->enter >= s) {
			st->collectives++;
			if (c->exit)
				st->inside_ns += c->exit - c->enter;
			step_comm(st, c, c->exit && !is_p2p(c) ?
				  runnable_in(r, &cur, c->enter, c->exit) : 0);
			/* arrival: the step's first collective, on any thread (gloo workers) */
			if (!o->arrival_ns) {
				o->arrival_ns = c->enter;
				o->done_ns = c->exit;
			}
		}
		if (c->tid == r->main_tid && overlap(s, e, c->enter, c->exit ? c->exit : c->enter))
			cs[nc++] = *c;
		if (c->tid == r->main_tid && is_p2p(c) && c->exit)
			st->p2p_ns += overlap(s, e, c->enter, c->exit);
	}
	for (i = 0; cs && i < r->nsync; i++)
		if (overlap(s, e, r->sync[i].enter, r->sync[i].exit))
			cs[nc++] = r->sync[i];
	/* after a wait for background collectives begins (DDP's finalize_backward, an op
	 * trace's wait), a futex wait is that wait: comm, whichever rule cuts the steps */
	for (i = 0; i < r->nbwd; i++)
		if (r->bwd[i] >= s && r->bwd[i] < e && !comm_from)
			comm_from = r->bwd[i];
	for (i = 0; i < r->nio; i++) {
		if (!r->io[i].worker)
			continue;
		st->worker_io_ns += overlap(s, e, r->io[i].start, r->io[i].end);
		if (r->io[i].end > s && r->io[i].end <= e)
			st->worker_io_bytes += r->io[i].bytes;
	}
	/* Only the intervals that overlap the step can classify a moment of it: the window holds
	 * every step not yet assembled, and the partition looks at each interval per point. */
	offs = calloc(r->noff + 1, sizeof(*offs));
	ios = calloc(r->nio + 1, sizeof(*ios));
	for (i = 0; offs && i < r->noff; i++)
		if (r->off[i].start < e && r->off[i].end > s)
			offs[noff++] = r->off[i];
	for (i = 0; ios && i < r->nio; i++)
		if (r->io[i].start < e && r->io[i].end > s)
			ios[nio++] = r->io[i];
	if (!offs || !ios) {	/* out of memory: the whole window, slower but the same */
		free(offs);
		free(ios);
		offs = NULL;
		ios = NULL;
	}
	if (j->detail && j->ops.on_phase) {
		struct phase_ctx pc = { .j = j, .col = (int)(r - j->r) };

		steps__partition_cb(s, e, cs, nc, offs ? offs : r->off, offs ? noff : r->noff,
				    ios ? ios : r->io, ios ? nio : r->nio, comm_from, &st->ph,
				    phase_run, &pc);
	} else {
		steps__partition(s, e, cs, nc, offs ? offs : r->off, offs ? noff : r->noff,
				 ios ? ios : r->io, ios ? nio : r->nio, comm_from, &st->ph);
	}
	free(offs);
	free(ios);
	free(cs);
	gpu_step(r, s, e, o, st);
	o->present = true;
	o->dur_ns = st->dur_ns;
	o->ph = st->ph;
	/* a collective seen at entry only (gloo's): seeing part of the job, its end is the
	 * rank's time waiting in collectives after it arrived, so the wait for ranks not seen
	 * here still shows (as remote_wait); a whole job keeps judging by arrivals alone */
	if (partial(j) && o->arrival_ns && !o->done_ns)
		o->done_ns = o->arrival_ns + steps__inside(&st->ph);
}

/*
 * Which ranks share the main communicator, learned: every member of an all-reduce (gather,
 * barrier) is inside it at once, since none can leave before the last arrives. Two ranks of
 * one group overlap at every seq; two of different groups only while their groups happen to
 * keep the same time, so the groups are those of the last JOB_GROUP_LEARN collectives.
 */
static void learn_groups(struct job *j, const struct tl_coll *const *at)
{
	int c, d, n = j->n;

	for (c = 0; c < n; c++)
		for (d = c + 1; d < n; d++)
			j->co[c * n + d] = j->co[c * n + d] << 1 |
					   (at[c] && at[d] && at[c]->enter <= at[d]->exit &&
					    at[d]->enter <= at[c]->exit);
	if (j->co_n < JOB_GROUP_LEARN) {
		j->co_n++;
		return;
	}
	for (c = 0; c < n; c++)
		j->grp[c] = c;
	/* together in nine of ten: one group (and so are both their groups), numbered by its
	 * first rank */
	for (c = 0; c < n; c++)
		for (d = c + 1; d < n; d++) {
			int from = j->grp[d], to = j->grp[c], x;

			if (from == to ||
			    __builtin_popcount(j->co[c * n + d]) * 10 < JOB_GROUP_LEARN * 9)
				continue;
			if (from < to) {
				from = to;
				to = j->grp[d];
			}
			for (x = 0; x < n; x++)
				if (j->grp[x] == from)
					j->grp[x] = to;
		}
	/* no two ranks always together (a broadcast's root may leave before the others come):
	 * grouping stays by time */
	for (j->grp_known = false, c = 0; c < n && !j->grp_known; c++)
		j->grp_known = j->grp[c] != c;
}

/*
 * Which ranks are in one collective at a seq: those on the same communicator, when names say
 * so (two ranks share one); else, since an MPI sub-communicator made before the attach has a
 * different handle in each process, the groups learned above, and until they are, those that
 * left it together (returns within JOB_GROUP_GAP_NS of the previous one, in time order).
 * grp[c] is a group number. True: by names or learned, false: by time, a guess.
 */
static bool groups(struct job *j, const struct tl_coll *const *at, int *grp)
{
	bool named = false;
	int c, i, g = 0, done, n = j->n;
	uint64_t prev = 0, t;

	for (c = 0; c < n && !named; c++)
		for (i = c + 1; i < n && !named; i++)
			named = at[c] && at[i] && at[c]->comm == at[i]->comm;
	for (c = 0; c < n; c++)
		grp[c] = -1;
	if (named) {
		for (c = 0; c < n; c++)
			for (i = 0; at[c] && i <= c; i++)
				if (at[i] && at[i]->comm == at[c]->comm) {
					grp[c] = i;
					break;
				}
		return true;
	}
	learn_groups(j, at);
	if (j->grp_known) {
		for (c = 0; c < n; c++)
			grp[c] = at[c] ? j->grp[c] : -1;
		return true;
	}
	/* by time: repeatedly take the earliest return not grouped yet */
	for (done = 0; done < n; done++) {
		for (t = UINT64_MAX, i = -1, c = 0; c < n; c++)
			if (at[c] && grp[c] < 0 && at[c]->exit < t) {
				t = at[c]->exit;
				i = c;
			}
		if (i < 0)
			break;
		if (prev && t - prev > JOB_GROUP_GAP_NS)
			g++;
		grp[i] = g;
		prev = t;
	}
	return false;
}

/* Remember which group each column was judged in (reset: a new step), for the verdict. */
static void note_groups(struct job *j, const struct tl_coll *const *at, const int *grp,
			bool reset)
{
	uint64_t m, *vg;
	int c, i;

	if (j->n > 64)
		return;
	for (c = 0; c < j->n; c++) {
		if (reset)
			j->nvg[c] = 0;
		if (!at[c])
			continue;
		for (m = 0, i = 0; i < j->n; i++)
			if (at[i] && grp[i] == grp[c])
				m |= 1ULL << i;
		vg = &j->vg[c * JOB_VGROUPS];
		for (i = 0; i < j->nvg[c] && vg[i] != m; i++)
			;
		if (i == j->nvg[c] && i < JOB_VGROUPS)
			vg[j->nvg[c]++] = m;
	}
}

/*
 * How long rank r worked before entering collective c: from the return of its main thread's
 * previous collective, less its waits for collectives in flight (asynchronous ones return at
 * once: the rank that came last waits least there, and its peers' longer waits are not work).
 * UINT64_MAX: none is known.
 */
static uint64_t work_before(const struct job_rank *r, const struct tl_coll *c)
{
	const struct tl_coll *p;
	uint64_t w, d, from, upto = 0;
	int i;

	for (p = c - 1; p >= r->coll; p--)
		if (p->tid == c->tid && p->exit)
			break;
	if (p < r->coll || p->exit > c->enter)
		return UINT64_MAX;
	w = c->enter - p->exit;
	/* marks in time order; one wait per bucket makes chains that overlap: count once */
	for (i = 0; i < r->nbwd; i++) {
		if (r->bwd[i] < p->exit || r->bwd[i] >= c->enter)
			continue;
		d = ddp_done(r, r->bwd[i], UINT64_MAX);
		d = d < c->enter ? d : c->enter;
		from = r->bwd[i] > upto ? r->bwd[i] : upto;
		if (d > from) {
			w -= d - from < w ? d - from : w;
			upto = d;
		}
	}
	return w;
}


/* Rank r's main thread's time runnable and not running in [a, b); *cur: a cursor into r->off
 * for intervals asked in time order. */
static uint64_t runnable_in(const struct job_rank *r, int *cur, uint64_t a, uint64_t b)
{
	uint64_t sum = 0, s, e;
	int i;

	while (*cur < r->noff && r->off[*cur].end <= a)
		(*cur)++;
	for (i = *cur; i < r->noff && r->off[i].start < b; i++) {
		s = r->off[i].end - r->off[i].runq;
		e = r->off[i].end;
		s = s > a ? s : a;
		e = e < b ? e : b;
		sum += e > s ? e - s : 0;
	}
	return sum;
}

/* The n-th call of column c's main thread in [lo, hi) that is op on comm with that peer
 * (from index i on); -1 when none. */
static int nth_p2p(const struct job_rank *r, uint64_t lo, uint64_t hi, int i, unsigned int op,
		   uint64_t comm, int peer)
{
	for (; i < r->ncoll && r->coll[i].enter < hi; i++) {
		const struct tl_coll *o = &r->coll[i];

		if (o->enter >= lo && o->tid == r->main_tid && o->op == op && o->comm == comm &&
		    o->peer == peer && o->exit)
			return i;
	}
	return -1;
}

/*
 * Column r's main thread's time from its previous call (or step start lo) to its call i that
 * was not compute: reads, input, waits for a CPU or for anything else. Before a receive that
 * then waited for its peer, the receive would have waited through it all the same.
 */
static uint64_t idle_before_p2p(const struct job_rank *r, int i, uint64_t lo)
{
	uint64_t from = lo, to = r->coll[i].enter, idle = 0;
	struct tl_off *offs;
	struct tl_io *ios;
	struct phases ph;
	int p, no = 0, nio = 0;

	for (p = i - 1; p >= 0; p--)
		if (r->coll[p].tid == r->main_tid) {
			from = r->coll[p].exit > from ? r->coll[p].exit : from;
			break;
		}
	if (to <= from)
		return 0;
	offs = calloc(r->noff + 1, sizeof(*offs));
	ios = calloc(r->nio + 1, sizeof(*ios));
	if (offs && ios) {
		for (p = 0; p < r->noff; p++)
			if (r->off[p].start < to && r->off[p].end > from)
				offs[no++] = r->off[p];
		for (p = 0; p < r->nio; p++)
			if (r->io[p].start < to && r->io[p].end > from)
				ios[nio++] = r->io[p];
		steps__partition(from, to, NULL, 0, offs, no, ios, nio, 0, &ph);
		idle = to - from - ph.ns[PH_COMPUTE];
	}
	free(offs);
	free(ios);
	return idle;
}

/*
 * Each column's point-to-point transfer in its step [lo, hi), added to xfer: the time both
 * sides of a send and its receive were inside them (a receive posted early waits for the
 * send, a send blocked on its receiver waits for the receive: neither is the link), less the
 * time either end was runnable and not running then, which is added to that end's held (a
 * starved end holds its peer; starved while its peer is not there yet, it holds nobody). The
 * n-th send from one rank to another pairs with the n-th receive at the other from the one,
 * on the same communicator. A rank's place in a communicator is its place by rank number
 * among the ranks that send or receive on it in the step (pcomm: each column's, 0: none).
 * A receive posted before its send waited for the peer: the receiver's time just before it
 * that was not compute (idle_before_p2p) is added to its slack.
 */
static const struct job *by_comm_job;	/* qsort's context (the model is single-threaded) */
static const uint64_t *by_comm_key;

static int by_comm(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;

	if (by_comm_key[a] != by_comm_key[b])
		return by_comm_key[a] < by_comm_key[b] ? -1 : 1;
	return (by_comm_job->r[a].rank > by_comm_job->r[b].rank) -
	       (by_comm_job->r[a].rank < by_comm_job->r[b].rank);
}

static void p2p_transfer(const struct job *j, const uint64_t *lo, const uint64_t *hi,
			 const uint64_t *pcomm, uint64_t *xfer, uint64_t *held, uint64_t *slack)
{
	int c, d, i, a, b, k, *ord, *place, *first, done[4], ndone, cc, cd, cr;
	uint64_t s, e, sc, sd, st, rx, sr;

	if (j->n < 2)
		return;
	ord = calloc(j->n, sizeof(*ord));
	place = calloc(j->n, sizeof(*place));
	first = calloc(j->n, sizeof(*first));
	if (!ord || !place || !first)
		goto out;
	for (c = 0; c < j->n; c++)
		ord[c] = c;
	by_comm_job = j;
	by_comm_key = pcomm;
	qsort(ord, j->n, sizeof(*ord), by_comm);
	for (i = 0; i < j->n; i++) {
		c = ord[i];
		first[c] = i && pcomm[ord[i - 1]] == pcomm[c] ? first[ord[i - 1]] : i;
		place[c] = i - first[c];
	}
	for (c = 0; c < j->n; c++) {
		const struct job_rank *r = &j->r[c];

		if (!pcomm[c])
			continue;
		for (ndone = 0, i = 0; i < r->ncoll && r->coll[i].enter < hi[c] && ndone < 4; i++) {
			const struct tl_coll *o = &r->coll[i];

			if (o->enter < lo[c] || o->tid != r->main_tid || o->op != RS_OP_SEND ||
			    o->comm != pcomm[c] || o->peer < 0)
				continue;
			for (k = 0; k < ndone && done[k] != o->peer; k++)
				;
			if (k < ndone)
				continue;	/* that peer's pairs are counted */
			done[ndone++] = o->peer;
			/* the peer: the o->peer-th by rank number on the communicator */
			k = first[c] + o->peer;
			if (k >= j->n || pcomm[ord[k]] != pcomm[c] || ord[k] == c)
				continue;
			d = ord[k];
			cc = cd = cr = 0;
			for (a = i, b = 0;; a++, b++) {
				a = nth_p2p(r, lo[c], hi[c], a, RS_OP_SEND, o->comm, o->peer);
				b = nth_p2p(&j->r[d], lo[d], hi[d], b, RS_OP_RECV, o->comm, place[c]);
				if (a < 0 || b < 0)
					break;
				s = r->coll[a].enter > j->r[d].coll[b].enter ? r->coll[a].enter :
				    j->r[d].coll[b].enter;
				e = r->coll[a].exit < j->r[d].coll[b].exit ? r->coll[a].exit :
				    j->r[d].coll[b].exit;
				/* the receive once both came: a send that returns once its bytes
				 * are queued (TCP's buffer) leaves the transfer to the receive, less
				 * the time the receiver was runnable and not running in it */
				if (r->coll[a].enter > j->r[d].coll[b].enter)
					slack[d] += idle_before_p2p(&j->r[d], b, lo[d]);
				rx = j->r[d].coll[b].exit > s ? j->r[d].coll[b].exit - s : 0;
				sr = rx ? runnable_in(&j->r[d], &cr, s, j->r[d].coll[b].exit) : 0;
				if (e <= s) {
					xfer[d] += rx > sr ? rx - sr : 0;
					links__p2p(j->links, c, d, r->coll[a].bytes, 0);
					continue;
				}
				sc = runnable_in(r, &cc, s, e);
				sd = runnable_in(&j->r[d], &cd, s, e);
				st = sc > sd ? sc : sd;
				xfer[c] += e - s > st ? e - s - st : 0;
				sr = sr > st ? sr : st;
				xfer[d] += rx > sr ? rx - sr : 0;
				links__p2p(j->links, c, d, r->coll[a].bytes, rx > st ? rx - st : 0);
				held[c] += sc;
				held[d] += sd;
			}
		}
	}
out:
	free(ord);
	free(place);
	free(first);
}

/*
 * A pipeline rank that waits less than its peers is late only if it holds someone back: its
 * stage's data-parallel replicas run the same schedule, so when it reaches the stage's own
 * reduction (the data-parallel all-reduce of its gradients) no later than they do, its extra
 * work filled the pipeline's bubble and cost nothing. Lateness is capped at that arrival's.
 * A communicator every rank shares (the world's) is no stage's: its arrivals differ by
 * schedule. Each rank's slack (p2p_transfer) is its row's slack_ns.
 */
static void stage_arrivals(const struct job *j, uint64_t k, struct step_obs *row)
{
	uint64_t *comm = NULL, *enter = NULL, *leave = NULL, *tmp = NULL, *lo = NULL, *hi = NULL;
	uint64_t *pcomm = NULL, *xfer = NULL, *held = NULL, *slack = NULL, s, e, last, in, sc, sm;
	uint64_t maxleave = 0;
	int c, i, p, have = 0, cur;

	if (j->n < 2)
		return;
	comm = calloc(j->n, sizeof(*comm));
	enter = calloc(j->n, sizeof(*enter));
	leave = calloc(j->n, sizeof(*leave));
	tmp = calloc(j->n, sizeof(*tmp));
	lo = calloc(j->n, sizeof(*lo));
	hi = calloc(j->n, sizeof(*hi));
	pcomm = calloc(j->n, sizeof(*pcomm));
	xfer = calloc(j->n, sizeof(*xfer));
	held = calloc(j->n, sizeof(*held));
	slack = calloc(j->n, sizeof(*slack));
	if (!comm || !enter || !leave || !tmp || !lo || !hi || !pcomm || !xfer || !held || !slack)
		goto out;
	for (c = 0; c < j->n; c++) {
		const struct job_rank *r = &j->r[c];
		const struct tl_coll *f;

		if (!row[c].present || bounds(j, r, k, &s, &e, true) != 1)
			continue;
		lo[c] = s;
		hi[c] = e;
		if ((f = first_p2p(r, s, e)))
			pcomm[c] = f->comm;
		for (i = 0; i < r->ncoll && r->coll[i].enter < e; i++) {
			const struct tl_coll *o = &r->coll[i];

			if (o->enter >= s && o->comm != r->main_comm &&
			    coll_role(o->op) == ROLE_REDUCE && !is_p2p(o)) {
				comm[c] = o->comm;
				enter[c] = o->enter;
				leave[c] = o->exit;
				break;
			}
		}
		have += comm[c] != 0;
	}
	p2p_transfer(j, lo, hi, pcomm, xfer, held, slack);
	for (c = 0; c < j->n; c++)
		maxleave = leave[c] > maxleave ? leave[c] : maxleave;
	for (c = 0; c < j->n; c++) {
		row[c].slack_ns = slack[c];
		in = steps__inside(&row[c].ph);
		if (!comm[c]) {
			if (row[c].present && xfer[c] + held[c])
				row[c].wait_ns = xfer[c] + held[c] < in ? in - xfer[c] - held[c] : 0;
			row[c].held_ns = held[c];
			continue;
		}
		for (last = enter[c], p = 0, i = 0; i < j->n; i++)
			if (i != c && comm[i] == comm[c]) {
				tmp[p++] = enter[i];
				last = enter[i] > last ? enter[i] : last;
			}
		/* its stage's collective once all its members came is a transfer, not a wait
		 * for another stage's work (a slower link between replicas lengthens it), less
		 * the longest any member was runnable and not running in it: a member that polls
		 * holds the others back while it waits for a CPU, the link has no part in that.
		 * With none of its members seen (an MPI communicator named by its handle, its own
		 * to each process) nothing says when they came: its time in it is no transfer. */
		if (leave[c] > last) {
			for (sm = 0, i = 0; i < j->n; i++)
				if (comm[i] == comm[c]) {
					cur = 0;
					sc = runnable_in(&j->r[i], &cur, last, leave[c]);
					sm = sc > sm ? sc : sm;
				}
			cur = 0;
			sc = runnable_in(&j->r[c], &cur, last, leave[c]);
			if (p)
				xfer[c] += leave[c] - last > sm ? leave[c] - last - sm : 0;
			/* another stage's all-reduce ended later: the step waited for that one,
			 * and so much of this one's delay cost nothing */
			held[c] += sc > maxleave - leave[c] ? sc - (maxleave - leave[c]) : 0;
		}
		/* waiting: the rest of its time inside (starved time included) */
		row[c].wait_ns = xfer[c] + held[c] < in ? in - xfer[c] - held[c] : 0;
		row[c].held_ns = held[c];
		if (!p || p + 1 == have)
			continue;
		s = detect__median(tmp, p);
		if ((int64_t)enter[c] - (int64_t)s < row[c].late_ns)
			row[c].late_ns = (int64_t)enter[c] - (int64_t)s;
	}
out:
	free(comm);
	free(enter);
	free(leave);
	free(tmp);
	free(lo);
	free(hi);
	free(pcomm);
	free(xfer);
	free(held);
	free(slack);
}

/*
 * Lateness over the whole step: at each collective of step k (the reference rank's boundaries,
 * point-to-point ops left out) that every present rank entered and left, each rank's work
 * since its previous collective against its peers' median, and its wait for the last one to
 * enter. Summed, that is the time a rank spent on its own work beyond its peers. Work, not
 * entry times: members do not leave a collective together (one side of a two-rank
 * all-reduce returns hundreds of microseconds first), so entries differ without any work.
 */
static void step_lateness(struct job *j, uint64_t k, struct step_obs *row)
{
	const struct job_rank *ref = &j->r[0];
	const struct tl_coll **at;
	uint64_t *tmp, *work = NULL, *sorted = NULL, last, in;
	int64_t lo = INT64_MIN, hi = INT64_MIN, s;
	int c, i, m, n = 0, g0, *grp = NULL;
	bool p2p = false, known, fresh = false, one;

	if (j->markers || !j->walk)
		return;
	for (i = 0; i < ref->nmark; i++) {
		if (ref->mark[i].seq == k)
			lo = (int64_t)ref->mark[i].aseq + 1;
		if (ref->mark[i].seq == k + 1)
			hi = (int64_t)ref->mark[i].aseq;
	}
	if (lo == INT64_MIN || hi == INT64_MIN)
		return;
	at = calloc(j->n, sizeof(*at));
	tmp = calloc(j->n, sizeof(*tmp));
	grp = calloc(j->n, sizeof(*grp));
	work = calloc(j->n, sizeof(*work));
	sorted = calloc(j->n, sizeof(*sorted));
	if (!at || !tmp || !grp || !work || !sorted)
		goto out;
	for (s = lo; s <= hi; s++) {
		for (m = 0, c = 0; c < j->n; c++) {
			/* a stage on the anchors: its seqs are not the others' */
			at[c] = row[c].present && j->r[c].anchored <= 0 ?
				find_seq(j, &j->r[c], s) : NULL;
			p2p |= at[c] && is_p2p(at[c]);
			if (row[c].present && (!at[c] || is_p2p(at[c])))
				break;
			m += at[c] != NULL;
		}
		if (c < j->n || m < 2)
			continue;
		n++;
		/* waits against the peers on the same communicator only: two tensor-parallel
		 * groups run their own all-reduces at the same seq, at their own times. Work is
		 * alike in every group (data-parallel replicas), so until the groups are known it
		 * is against every rank: a guessed group of one has no peer */
		known = groups(j, at, grp);
		if (known) {
			note_groups(j, at, grp, !fresh);
			fresh = true;
		}
		for (one = true, g0 = -1, m = 0, c = 0; c < j->n; c++) {
			work[c] = at[c] ? work_before(&j->r[c], at[c]) : UINT64_MAX;
			if (work[c] != UINT64_MAX)
				sorted[m++] = work[c];
			if (known && at[c]) {
				g0 = g0 < 0 ? grp[c] : g0;
				one &= grp[c] == g0;
			}
		}
		/* one group (the usual data-parallel job): every rank's peers are all the others,
		 * so one sort gives each its peers' median, not a median per rank */
		if (one)
			detect__sort_u64(sorted, m);
		for (c = 0; c < j->n; c++) {
			uint64_t med, mx;
			int p = 0;

			if (!at[c])
				continue;
			for (mx = 0, last = at[c]->enter, i = 0; i < j->n; i++) {
				if (i == c || !at[i])
					continue;
				if (!one && work[i] != UINT64_MAX && (grp[i] == grp[c] || !known)) {
					tmp[p++] = work[i];
					mx = work[i] > mx ? work[i] : mx;
				}
				if (grp[i] == grp[c])
					last = at[i]->enter > last ? at[i]->enter : last;
			}
			if (work[c] == UINT64_MAX || (one ? m < 2 : !p))
				continue;
			med = one ? detect__median_without(sorted, m, work[c]) : detect__median(tmp, p);
			if (one)	/* the latest of the others */
				mx = sorted[m - 1] == work[c] ? sorted[m - 2] : sorted[m - 1];
			row[c].late_ns += (int64_t)work[c] - (int64_t)med;
			row[c].alone_ns += work[c] > mx ? work[c] - mx : 0;
			row[c].has_alone = true;
			in = at[c]->exit - at[c]->enter;
			row[c].wait_ns += last - at[c]->enter < in ? last - at[c]->enter : in;
		}
	}
	/*
	 * Only point-to-point in the step (a pipeline stage's sends and receives): entries do not
	 * pair up across ranks, but waiting does: a rank blocked in a receive waits for its
	 * peer's work. Lateness is how much less than its peers a rank waited.
	 */
	if (!n && p2p) {
		for (c = 0; c < j->n; c++)
			if (row[c].present) {
				row[c].late_ns = INT64_MAX;
				row[c].wait_ns = steps__inside(&row[c].ph);
			}
		stage_arrivals(j, k, row);
		/* less its slack over its peers': reading, or waiting for input or a CPU, just
		 * before a receive that then waited for the peer held nobody back (a stage that
		 * reads at the start of its step, while the pipeline fills). Not compute: how
		 * much of it runs where a stage waits next is the schedule's, stage by stage */
		for (c = 0; c < j->n; c++) {
			int p = 0;
			uint64_t in, sl;

			if (!row[c].present)
				continue;
			for (i = 0; i < j->n; i++)
				if (i != c && row[i].present)
					tmp[p++] = steps__inside(&row[i].ph);
			if (!p) {
				row[c].late_ns = 0;
				continue;
			}
			in = detect__median(tmp, p);
			for (p = 0, i = 0; i < j->n; i++)
				if (i != c && row[i].present)
					tmp[p++] = row[i].slack_ns;
			sl = detect__median(tmp, p);
			s = (int64_t)in - (int64_t)steps__inside(&row[c].ph) -
			    (row[c].slack_ns > sl ? (int64_t)(row[c].slack_ns - sl) : 0);
			row[c].late_ns = s < row[c].late_ns ? s : row[c].late_ns;
			n++;
		}
	}
	for (c = 0; n && c < j->n; c++)
		row[c].has_late = row[c].present;
out:
	free(at);
	free(tmp);
	free(grp);
	free(work);
	free(sorted);
}

/* The first point-to-point call of column c's main thread in [s, e): its op and peer. */
static const struct tl_coll *first_p2p(const struct job_rank *r, uint64_t s, uint64_t e)
{
	int i;

	for (i = 0; i < r->ncoll && r->coll[i].enter < e; i++) {
		const struct tl_coll *c = &r->coll[i];

		if (c->tid == r->main_tid && c->enter >= s && is_p2p(c))
			return c;
	}
	return NULL;
}

/*
 * Pipeline stages from the send/receive graph of one step: a rank whose step begins with a
 * send is the first stage (it has its micro-batches); one that begins by receiving from rank
 * p is one stage after p. The micro-batches are the first stage's sends before its first
 * receive. Peers are ranks of the communicator, taken as the ranks' own numbers (the world
 * communicator); a rank whose chain does not resolve stays -1.
 */
/*
 * The column of the peer of column c's send or receive first[c] (first: each column's first
 * of the step; ord: the columns with one, by its communicator then rank, n of them). The peer
 * is its rank in the communicator. With the step's messages on one communicator (the world's,
 * or one pipeline's), that is the rank itself, which holds when only some ranks are seen;
 * on several (one pipeline per data-parallel replica, as Megatron's), the place by rank number
 * among the ranks whose messages are on it. -1: none seen.
 */
static int p2p_peer(const struct job *j, const struct tl_coll *const *first, const int *ord,
		    int n, int c)
{
	uint64_t comm = first[c]->comm;
	int lo = 0, hi = n, i, peer = first[c]->peer;

	if (first[ord[0]]->comm == first[ord[n - 1]]->comm) {
		for (i = 0; i < n; i++)
			if (j->r[ord[i]].rank == peer)
				return ord[i] == c ? -1 : ord[i];
		return -1;
	}
	while (lo < hi) {	/* the communicator's first column */
		i = (lo + hi) / 2;
		if (first[ord[i]]->comm < comm)
			lo = i + 1;
		else
			hi = i;
	}
	i = lo + peer;
	if (peer < 0 || i >= n || first[ord[i]]->comm != comm || ord[i] == c)
		return -1;
	return ord[i];
}

static void pipeline_stages(const struct job *j, struct job_step *st, const struct step_obs *row)
{
	const struct tl_coll **first;
	int c, i, pass, changed, max = -1, micro = 0, *ord, n = 0;
	uint64_t *key;

	first = calloc(j->n, sizeof(*first));
	ord = calloc(j->n, sizeof(*ord));
	key = calloc(j->n, sizeof(*key));
	if (!first || !ord || !key)
		goto out;
	for (c = 0; c < j->n; c++) {
		st[c].stage = -1;
		if (row[c].present)
			first[c] = first_p2p(&j->r[c], st[c].start_ns, st[c].start_ns + st[c].dur_ns);
		if (first[c] && first[c]->op == RS_OP_SEND)
			st[c].stage = 0;
		if (first[c]) {
			key[c] = first[c]->comm;
			ord[n++] = c;
		}
	}
	by_comm_job = j;
	by_comm_key = key;
	qsort(ord, n, sizeof(*ord), by_comm);
	for (pass = 0, changed = 1; changed && pass < j->n; pass++) {
		for (changed = 0, c = 0; c < j->n; c++) {
			if (st[c].stage >= 0 || !first[c] || first[c]->op != RS_OP_RECV)
				continue;
			i = p2p_peer(j, first, ord, n, c);
			if (i >= 0 && st[i].stage >= 0) {
				st[c].stage = st[i].stage + 1;
				changed = 1;
			}
		}
	}
	for (c = 0; c < j->n; c++)
		max = st[c].stage > max ? st[c].stage : max;
	/* the first stage's longest run of sends, the step taken as a cycle (where it is cut
	 * does not matter): GPipe sends its M activations in a row */
	for (c = 0; c < j->n && max > 0 && !micro; c++) {
		const struct job_rank *r = &j->r[c];
		uint64_t s = st[c].start_ns, e = s + st[c].dur_ns;
		int run = 0, head = -1, best = 0;

		if (st[c].stage || !row[c].present)
			continue;
		for (i = 0; i < r->ncoll && r->coll[i].enter < e; i++) {
			const struct tl_coll *x = &r->coll[i];

			if (x->tid != r->main_tid || x->enter < s || !is_p2p(x))
				continue;
			if (x->op == RS_OP_SEND) {
				run++;
				continue;
			}
			if (head < 0)
				head = run;	/* the sends before the first receive */
			best = run > best ? run : best;
			run = 0;
		}
		/* the last run goes on into the first, round the cycle */
		if (head < 0)
			best = run;
		else if (run + head > best)
			best = run + head;
		micro = best;
	}
	for (c = 0; c < j->n; c++) {
		st[c].stages = max > 0 ? max + 1 : 0;
		st[c].micro = max > 0 ? micro : 0;
		if (max <= 0)
			st[c].stage = -1;
	}
out:
	free(first);
	free(ord);
	free(key);
}

/* The first step index every live rank can have: after all of them were attached. */
static bool first_k(struct job *j)
{
	uint64_t k, mine, best = 0;
	int c, i;
	bool any;

	/* period steps: the reference rank's boundaries are every rank's */
	for (c = 0; c < (j->markers ? j->n : 1); c++) {
		const struct job_rank *r = &j->r[c];

		any = false;
		mine = 0;
		for (i = 0; i < r->nmark; i++) {
			k = r->mark[i].seq + (j->markers ? r->mark_off : 0);
			if (!any || k < mine)
				mine = k;
			any = true;
		}
		if (!any && !r->exited)
			return false;
		if (mine > best)
			best = mine;
	}
	j->next_k = best ? best : 1;
	j->have_next = true;
	return true;
}

/* A stuck job's verdict on column jv->col: its stack and a waiting peer's (peer -1: the
 * first live one), as evidence. */
static void stuck_evidence(struct job *j, struct job_verdict *jv, int peer)
{
	char coll[64];
	int c, k, cols[2];

	if (!j->ops.where || jv->col < 0)
		return;
	for (c = 0; peer < 0 && c < j->n; c++)
		if (c != jv->col && !j->r[c].exited)
			peer = c;
	cols[0] = jv->col;
	cols[1] = peer;
	for (k = 0; k < 2; k++) {
		if (cols[k] < 0)
			continue;
		j->ops.where(j->ops.ctx, cols[k], coll, sizeof(coll), jv->stacks[k].text,
			     sizeof(jv->stacks[k].text));
		jv->stacks[k].rank = j->r[cols[k]].rank;
	}
}

/* What the step's straggler, if it has one, cost its peers (cost.h). */
static void step_cost(struct job *j, uint64_t k, const struct step_obs *row, uint64_t now)
{
	struct cost_step cs;
	int rank;

	cost__step(row, j->n, &cs);
	rank = cs.culprit >= 0 ? j->r[cs.culprit].rank : -1;
	cost__add(&j->cost, &cs, rank, now);
	if (j->ops.on_cost)
		j->ops.on_cost(j->ops.ctx, k, &cs, rank);
}

const struct cost *job__cost(const struct job *j)
{
	return &j->cost;
}

/* What stragglers cost the job, as the verdict says it: a straggler verdict charges its rank. */
static void verdict_cost(struct job *j, struct job_verdict *jv)
{
	if (jv->col >= 0 && jv->col < j->n && detect__straggler(jv->cls, jv->persistent))
		cost__charge(&j->cost, j->r[jv->col].rank, j->now);
	cost__sum(&j->cost, j->now, j->cfg.gpu_hour_usd, j->cfg.gpus_per_rank, &jv->cost);
}

static void emit_verdict(struct job *j, struct job_verdict *jv)
{
	uint64_t last = j->last_end_ns;
	int c;

	/* a stuck job's last progress: its last step built, or a later collective return (the
	 * steps before it may not be built yet), or the first look */
	for (c = 0; jv->stuck && !jv->since_ns && c < j->n; c++)
		if (j->r[c].main_ret_ns > last)
			last = j->r[c].main_ret_ns;
	if (jv->stuck && !jv->since_ns)
		jv->since_ns = last ? last : j->progress_ns;
	jv->ranks_seen = j->n;
	jv->world_size = j->world;
	verdict_cost(j, jv);
	j->last = *jv;
	j->emitted = true;
	if (j->ops.on_verdict)
		j->ops.on_verdict(j->ops.ctx, jv);
}

/* The late column's groups smaller than the job, each as its ranks and a -1. */
static void verdict_group(const struct job *j, struct job_verdict *jv)
{
	uint64_t all = j->n >= 64 ? ~0ULL : (1ULL << j->n) - 1, m;
	int c, g, col = jv->col;

	jv->ngroup = 0;
	if (col < 0 || j->n > 64)
		return;
	for (g = 0; g < j->nvg[col]; g++) {
		m = j->vg[col * JOB_VGROUPS + g];
		if ((m & all) == all || jv->ngroup + __builtin_popcountll(m) + 1 > JOB_GROUP_SHOW)
			continue;
		for (c = 0; c < j->n; c++)
			if (m >> c & 1)
				jv->group[jv->ngroup++] = j->r[c].rank;
		jv->group[jv->ngroup++] = -1;
	}
}

/* A pipeline rank's busy time in a step: the step less its sends, receives and collectives. */
static uint64_t busy_of(const struct step_obs *o)
{
	return o->dur_ns > steps__inside(&o->ph) ? o->dur_ns - steps__inside(&o->ph) : 0;
}

/* ... less its slack: time it would have waited for a peer all the same holds nobody back. */
static uint64_t due_of(const struct step_obs *o)
{
	uint64_t b = busy_of(o);

	return b > o->slack_ns ? b - o->slack_ns : 0;
}

/*
 * A pipeline's bubble over the window: each stage's median share of its step spent in sends
 * and receives, against the share its schedule cannot avoid, (S - 1) / (M + S - 1). Excess
 * as the seed alert Train_Bubble_Excess has it (over 1.5x), and by 5 points at least.
 */
static void pipeline_bubble(const struct step_obs *win, int m, int n, struct job_pp *pp)
{
	uint64_t *share, *busy, lo = UINT64_MAX, hi = 0;
	int s, c, i, k, stages = 0, micro = 0;

	memset(pp, 0, sizeof(*pp));
	for (i = m - 1; i >= 0 && !stages; i--)
		for (c = 0; c < n && !stages; c++)
			if (win[i * n + c].present && win[i * n + c].stages > 1) {
				stages = win[i * n + c].stages;
				micro = win[i * n + c].micro;
			}
	if (stages < 2)
		return;
	share = calloc((size_t)m * n, sizeof(*share));
	busy = calloc((size_t)m * n, sizeof(*busy));
	if (!share || !busy) {
		free(share);
		free(busy);
		return;
	}
	pp->stages = stages;
	pp->micro = micro;
	pp->theory = micro > 0 ? (double)(stages - 1) / (micro + stages - 1) : 0;
	pp->worst = -1;
	for (s = 0; s < stages && s < JOB_PP_SHOW; s++) {
		for (k = 0, i = 0; i < m; i++)
			for (c = 0; c < n; c++) {
				const struct step_obs *o = &win[i * n + c];

				if (!o->present || o->stage != s || !o->dur_ns)
					continue;
				busy[k] = busy_of(o);
				share[k++] = o->p2p_ns * 1000000 / o->dur_ns;
			}
		if (!k)
			continue;
		pp->bubble[s] = detect__median(share, k) / 1e6;
		pp->busy_ns[s] = detect__median(busy, k);
		lo = pp->busy_ns[s] < lo ? pp->busy_ns[s] : lo;
		hi = pp->busy_ns[s] > hi ? pp->busy_ns[s] : hi;
		if (pp->worst < 0 || pp->bubble[s] > pp->bubble[pp->worst])
			pp->worst = s;
	}
	free(share);
	free(busy);
	/* a stage busier than the others makes them idle: that is a straggler, for the rules
	 * that name one, not the schedule */
	pp->balanced = pp->worst >= 0 && hi * 4 <= lo * 5;
	pp->excess = pp->theory > 0 && pp->worst >= 0 &&
		     pp->bubble[pp->worst] > 1.5 * pp->theory &&
		     pp->bubble[pp->worst] >= pp->theory + 0.05;
}

/* Each of S stages' median of f over its ranks in a row of n (tmp: n scratch); false when a
 * stage has none there. */
static bool stage_medians(const struct step_obs *row, int n, int S,
			  uint64_t (*f)(const struct step_obs *), uint64_t *tmp, uint64_t *out)
{
	int s, c, k;

	for (s = 0; s < S; s++) {
		for (k = 0, c = 0; c < n; c++)
			if (row[c].present && row[c].stage == s && row[c].dur_ns)
				tmp[k++] = f(&row[c]);
		if (!k)
			return false;
		out[s] = detect__median(tmp, k);
	}
	return true;
}

/*
 * A pipeline whose straggler rules named nobody, with one stage busier than the others: the
 * pipeline runs at that stage's pace. The rules compare a rank with its own stage's replicas,
 * which are all as slow. Busy, and busy less its slack (due_of): reading at the start of its
 * step while the pipeline fills, a stage sets no pace (and slack alone is no excess: the first
 * stage, which fills the pipeline, has none at the start of its step). Busier, in each step,
 * than the other stages' median in that step (work that varies from step to step varies on
 * every stage), by over a quarter of that median, or by DETECT_NOISE_K times the noise, at the
 * median over the window's steps, and by DETECT_SKEW_MIN_NS at least. The noise: the
 * DETECT_NOISE_Q quantile of how far the other stages are from their median in a step, or of
 * how far the stage's own excess strays from its median from step to step (with 2 stages the
 * other has no peer). Its phase: the one of the stage's largest median excess over the other
 * stages' (input, storage, compute, CPU); its rank the stage's first in the window's last row,
 * late by that excess.
 */
static bool busier_than_noise(const struct step_obs *win, int m, int n, const struct job_pp *pp,
			      int hi, uint64_t e)
{
	uint64_t *b, *d = NULL, *tmp, med;
	int64_t *x, *dev, ex, xd;
	int s, i, k, nx = 0, nd = 0, S = pp->stages;
	bool ok = false;

	b = calloc((size_t)S * m, sizeof(*b));		/* each stage's busy time, each step */
	d = calloc(S, sizeof(*d));
	tmp = calloc(n > S ? n : S, sizeof(*tmp));
	dev = calloc((size_t)S * m * 2, sizeof(*dev));
	x = calloc(m, sizeof(*x));
	if (!b || !d || !tmp || !dev || !x)
		goto out;
	for (i = 0; i < m; i++) {
		if (!stage_medians(&win[(size_t)i * n], n, S, busy_of, tmp, &b[(size_t)i * S]) ||
		    !stage_medians(&win[(size_t)i * n], n, S, due_of, tmp, d))
			continue;	/* a stage missing from this step */
		for (k = 0, s = 0; s < S; s++)
			if (s != hi)
				tmp[k++] = d[s];
		xd = (int64_t)d[hi] - (int64_t)detect__median(tmp, k);
		for (k = 0, s = 0; s < S; s++)
			if (s != hi)
				tmp[k++] = b[i * S + s];
		med = detect__median(tmp, k);
		x[nx] = (int64_t)b[i * S + hi] - (int64_t)med;
		x[nx] = xd < x[nx] ? xd : x[nx];
		nx++;
		for (s = 0; s < S; s++)
			if (s != hi)
				dev[nd++] = b[i * S + s] > med ? (int64_t)(b[i * S + s] - med) :
								 (int64_t)(med - b[i * S + s]);
	}
	if (nx < 2)
		goto out;
	ex = detect__median_i64(x, nx);
	if (ex < DETECT_SKEW_MIN_NS)
		goto out;
	for (i = 0; i < nx; i++)
		dev[nd++] = x[i] > ex ? x[i] - ex : ex - x[i];
	ok = ex >= DETECT_NOISE_K * detect__tail(dev, nd) || (uint64_t)ex * 4 > e;
out:
	free(b);
	free(d);
	free(tmp);
	free(dev);
	free(x);
	return ok;
}

static bool busiest_stage(const struct step_obs *win, int m, int n, const struct job_pp *pp,
			  struct verdict *v)
{
	static const enum phase cand[] = { PH_INPUT_WAIT, PH_IO, PH_COMPUTE, PH_SCHED_DELAY };
	uint64_t others[JOB_PP_SHOW], med[JOB_PP_SHOW], *x, e, best = 0;
	int s, hi = -1, k, c, i, p, col = -1, pick = -1;

	if (pp->stages < 2 || pp->stages > JOB_PP_SHOW || pp->worst < 0)
		return false;
	for (s = 0; s < pp->stages; s++)
		hi = hi < 0 || pp->busy_ns[s] > pp->busy_ns[hi] ? s : hi;
	for (k = 0, s = 0; s < pp->stages; s++)
		if (s != hi)
			others[k++] = pp->busy_ns[s];
	e = detect__median(others, k);
	if (!busier_than_noise(win, m, n, pp, hi, e))
		return false;
	for (c = 0; c < n && col < 0; c++)
		if (win[(size_t)(m - 1) * n + c].present && win[(size_t)(m - 1) * n + c].stage == hi)
			col = c;
	if (col < 0 || !(x = calloc((size_t)m * n, sizeof(*x))))
		return false;
	for (p = 0; p < (int)(sizeof(cand) / sizeof(cand[0])); p++) {
		for (s = 0; s < pp->stages; s++) {
			for (k = 0, i = 0; i < m; i++)
				for (c = 0; c < n; c++)
					if (win[i * n + c].present && win[i * n + c].stage == s)
						x[k++] = win[i * n + c].ph.ns[cand[p]];
			med[s] = detect__median(x, k);
		}
		for (k = 0, s = 0; s < pp->stages; s++)
			if (s != hi)
				others[k++] = med[s];
		e = detect__median(others, k);
		if (med[hi] > e && (pick < 0 || med[hi] - e > best)) {
			best = med[hi] - e;
			pick = p;
		}
	}
	free(x);
	if (pick < 0)
		return false;
	v->cls = detect__phase_class(cand[pick]);
	v->phase = cand[pick];
	v->rank = col;
	v->skew_ns = v->phase_excess_ns = (int64_t)best;
	return true;
}

/* The newest m rows of the ring, oldest first (the caller frees it). */
static struct step_obs *newest_rows(const struct job *j, int m)
{
	struct step_obs *win;
	int i, base;

	win = calloc((size_t)m * j->n, sizeof(*win));
	if (!win)
		return NULL;
	for (i = 0; i < m; i++) {
		base = (j->nrows - m + i) % JOB_ROWS;
		memcpy(&win[i * j->n], &j->rows[(size_t)base * j->n], sizeof(*win) * j->n);
	}
	return win;
}

/*
 * A straggler late every k-th step, with k over half the window, is late in one step of a
 * window: judged over every row kept (JOB_ROWS steps), it is late in several, apart. Only an
 * intermittent verdict is taken from there; what holds in most steps is the window's to tell.
 * Returns the rows judged, 0 when the longer view says nothing more. A row in or out of it
 * changes little, so it is judged again every half window (k, the step judged), not every step.
 */
static int judge_long(struct job *j, int w, uint64_t k, struct verdict *v)
{
	struct step_obs *rows;
	struct verdict lv = {};
	int m = j->nrows < JOB_ROWS ? j->nrows : JOB_ROWS;

	if (j->long_tried && k < j->long_k + (uint64_t)(w + 1) / 2)
		goto out;
	j->long_tried = true;
	j->long_k = k;
	j->long_m = 0;
	if (m <= w || !(rows = newest_rows(j, m)))
		return 0;
	if (!detect__window_seen(rows, m, j->n, !partial(j), &lv) && lv.intermittent) {
		j->long_v = lv;
		j->long_m = m;
	}
	free(rows);
out:
	if (j->long_m)
		*v = j->long_v;
	return j->long_m;
}

/*
 * An intermittent verdict's share of steps, over every row kept: the window that told it is
 * one that held enough hits to, so its share is high (a save every 12th step is in 2 of 16
 * steps of the windows that name it, 5 or 6 of 64 of all). m: the rows it was judged over.
 */
static void intermittent_share(struct job *j, struct job_verdict *jv, int m)
{
	struct step_obs *rows;
	int all = j->nrows < JOB_ROWS ? j->nrows : JOB_ROWS, n, hits;

	if (!jv->v.intermittent || jv->col < 0 || all <= m || !(rows = newest_rows(j, all)))
		return;
	hits = detect__hits(rows, all, j->n, &jv->v, &n);
	free(rows);
	if (n <= jv->v.nsteps)
		return;
	jv->v.hits = hits;
	jv->v.nsteps = n;
	jv->first = jv->last + 1 - all;
}

static void judge(struct job *j, uint64_t k)
{
	struct step_obs *win;
	struct job_verdict jv = {};
	struct verdict sv;
	int w = j->cfg.window, m, lm;
	bool weak;

	m = j->nrows < w ? j->nrows : w;
	if (m < w && j->emitted)
		return;
	if (m < (w < 4 ? w : 4))
		return;
	if (!(win = newest_rows(j, m)))
		return;
	if (detect__window_seen(win, m, j->n, !partial(j), &jv.v)) {
		free(win);
		return;
	}
	sv = jv.v;
	lm = jv.v.cls == V_NONE ? judge_long(j, w, k, &jv.v) : 0;
	/* no rank late, none intermittent (a save every few steps blames none either): the
	 * collectives against the job's own earlier ones, in steps of one template (steps built
	 * before the pattern changed are other steps). The window's rows are judged, not the
	 * longer view's: most of those may be from before a change. */
	if ((jv.v.cls == V_NONE || jv.v.cls == V_CHECKPOINT) && !partial(j) &&
	    k + 1 >= j->gen_k + m) {
		struct verdict cv = sv;

		if (cv.cls == V_CHECKPOINT) {	/* the save's rank is no culprit of this */
			cv.cls = V_NONE;
			cv.rank = -1;
			cv.intermittent = false;
			cv.skew_ns = cv.phase_excess_ns = 0;
			cv.hits = 0;
		}
		if (detect__comm_change(&j->cref, win, m, j->n, w, j->relearns, k, &cv, jv.detail,
					sizeof(jv.detail))) {
			jv.v = cv;
			lm = 0;
		}
	}
	/* nor slower than before: a link slower than those that do the same work */
	if (jv.v.cls == V_NONE && !partial(j))
		links__judge(j->links, m, jv.v.step_ns, &jv.v, jv.detail, sizeof(jv.detail));
	pipeline_bubble(win, m, j->n, &jv.pp);
	if (jv.v.cls == V_NONE && !partial(j) && busiest_stage(win, m, j->n, &jv.pp, &jv.v)) {
		int stage = win[(size_t)(m - 1) * j->n + jv.v.rank].stage;

		snprintf(jv.detail, sizeof(jv.detail), "stage %d is busy %.1f ms a step, %.1f ms "
			 "more than the other stages' median in %s: the pipeline runs at its pace",
			 stage, jv.pp.busy_ns[stage] / 1e6, jv.v.skew_ns / 1e6,
			 steps__phase_name(jv.v.phase));
	}
	free(win);
	/* late among the ranks seen here, but they wait longer still for ranks elsewhere */
	if (partial(j))
		detect__held_elsewhere(&jv.v, jv.v.rank >= 0 ? j->r[jv.v.rank].rank : -1, j->n,
				       j->world, "seen here", jv.detail, sizeof(jv.detail));
	jv.cls = jv.v.cls;
	jv.col = jv.v.rank;
	jv.step = k;
	/* no straggler explains it: the stages idle over what their schedule leaves */
	if (jv.cls == V_NONE && jv.pp.excess && jv.pp.balanced) {
		jv.cls = jv.v.cls = V_BUBBLE;
		snprintf(jv.detail, sizeof(jv.detail), "stage %d idles %.0f%% of its step in sends "
			 "and receives, over 1.5x the %.0f%% a %d-stage schedule of %d micro-batches "
			 "leaves, with no stage slower than the others", jv.pp.worst,
			 jv.pp.bubble[jv.pp.worst] * 100, jv.pp.theory * 100, jv.pp.stages,
			 jv.pp.micro);
	}
	/* every rank seen here arrives on time and they all wait for the collective to end:
	 * with ranks of the job elsewhere, one of those is what they wait for, not the network */
	if (jv.cls == V_COMMUNICATION && partial(j)) {
		jv.cls = jv.v.cls = V_REMOTE_WAIT;
		snprintf(jv.detail, sizeof(jv.detail), "the %d ranks seen here (of %d) arrive "
			 "together and wait %.1f ms after the last of them; ranks not observed here "
			 "hold them", j->n, j->world, jv.v.post_arrival_ns / 1e6);
	}
	if (jv.col >= 0 && jv.v.phase == PH_OTHER)
		snprintf(jv.detail, sizeof(jv.detail), "off CPU, blocked in %s: not waiting for "
			 "input, storage, a collective or a CPU", jv.v.other_nr >= 0 ?
			 decode__syscall_name(jv.v.other_nr) : "an unknown call");
	verdict_group(j, &jv);
	jv.t_ns = j->now;
	jv.first = k + 1 - (lm ? lm : m);
	jv.last = k;
	/* a new story told by a lateness near the threshold must hold for JOB_CONFIRM windows in
	 * a row: one burst of contention on a shared host moves one window's medians just past
	 * it, a straggler moves every window's. One told by the fewest steps of a window that can
	 * tell it (an intermittent one late in two) must hold until the window has no step in
	 * common with the first that told it: one burst makes a rank late by a lot in two steps,
	 * an intermittent straggler does it again. Two a window apart or more (the longer view),
	 * with steps on time between, are two, not one burst: it did it again */
	weak = jv.v.intermittent && jv.v.hits <= DETECT_HITS_MIN && jv.v.hit_span < w;
	if (jv.cls != V_NONE && (weak || jv.v.skew_ns < 2 * (int64_t)detect__threshold_of(&jv.v)) &&
	    !(j->emitted && jv.cls == j->last.cls && jv.col == j->last.col)) {
		if (jv.cls == j->cand_cls && jv.col == j->cand_col) {
			j->cand_n++;
		} else {
			j->cand_cls = jv.cls;
			j->cand_col = jv.col;
			j->cand_n = 1;
		}
		if (j->cand_n < (weak ? m + 1 : JOB_CONFIRM))
			return;
	}
	j->cand_n = 0;
	intermittent_share(j, &jv, lm ? lm : m);
	jv.persistent = detect__persistent(&j->persist, jv.col);
	/* a line when the story changes, and once a window while it does not */
	if (j->emitted && jv.cls == j->last.cls && jv.col == j->last.col &&
	    k - j->last_emit_k < (uint64_t)w && !(jv.persistent && !j->last.persistent)) {
		verdict_cost(j, &jv);
		j->last = jv;
		return;
	}
	j->last_emit_k = k;
	emit_verdict(j, &jv);
}

/* Same (comm, seq), different (op, bytes): the odd one out against the majority. */
static void check_divergence(struct job *j, uint64_t k)
{
	const struct tl_coll **at;
	struct job_verdict jv = {};
	int64_t lo, hi, s;
	int c, d, same, best, odd;

	if (j->div_done || j->markers)
		return;
	at = calloc(j->n, sizeof(*at));
	if (!at)
		return;
	/* step k runs from boundary k (excluded) to boundary k + 1, on rank 0's sequence */
	lo = hi = INT64_MIN;
	for (c = 0; c < j->r[0].nmark; c++) {
		if (j->r[0].mark[c].seq == k)
			lo = (int64_t)j->r[0].mark[c].aseq + 1;
		if (j->r[0].mark[c].seq == k + 1)
			hi = (int64_t)j->r[0].mark[c].aseq;
	}
	if (lo == INT64_MIN || hi == INT64_MIN) {
		free(at);
		return;
	}
	for (s = lo; s <= hi && !j->div_done; s++) {
		/* ranks whose steps end at the same aligned seq as the reference's (the others,
		 * pipeline stages anchored or not decided yet, make other calls in between) */
		for (c = 0; c < j->n; c++)
			at[c] = !c || j->r[c].anchored < 0 ? find_seq(j, &j->r[c], s) : NULL;
		/* the signature most ranks entered */
		for (best = -1, same = 0, c = 0; c < j->n; c++) {
			int n = 0;

			for (d = 0; at[c] && d < j->n; d++)
				n += at[d] && at[d]->op == at[c]->op && at[d]->bytes == at[c]->bytes;
			if (n > same) {
				same = n;
				best = c;
			}
		}
		/* point-to-point: a pipeline's stages send and receive at the same seq */
		if (best < 0 || is_p2p(at[best]))
			continue;
		/* seeing part of the job, a tie names no odd one out: the hub, seeing all, does */
		if (partial(j) && same * 2 <= j->n)
			continue;
		for (odd = -1, c = 0; c < j->n && odd < 0; c++)
			if (at[c] && (at[c]->op != at[best]->op || at[c]->bytes != at[best]->bytes))
				odd = c;
		if (odd < 0)
			continue;
		jv.cls = jv.v.cls = V_DIVERGENT;
		jv.col = jv.v.rank = odd;
		jv.step = jv.first = jv.last = k;
		jv.t_ns = j->now;
		snprintf(jv.detail, sizeof(jv.detail),
			 "at seq %" PRId64 " on the main communicator this rank entered %s of %" PRIu64
			 " bytes; %d other rank(s) entered %s of %" PRIu64 " bytes", s,
			 decode__op_name(at[odd]->op), at[odd]->bytes, same,
			 decode__op_name(at[best]->op), at[best]->bytes);
		j->div_done = true;
		emit_verdict(j, &jv);
	}
	free(at);
}

/* Forget what ended before t: a finished step's events are never needed again, and keeping
 * them would make every later step scan them (a 1 us "step" loop is 10^6 steps/s). */
#define TRIM(arr, n, cond)							\
	do {									\
		int _i, _k = 0;							\
		for (_i = 0; _i < (n) && (cond); _i++)				\
			_k++;							\
		if (_k) {							\
			memmove((arr), (arr) + _k, sizeof(*(arr)) * ((n) - _k));	\
			(n) -= _k;						\
		}								\
	} while (0)

static uint64_t call_sig(unsigned int op, uint64_t bytes, uint64_t comm)
{
	return (comm * 0x9e3779b97f4a7c15ULL) ^ (bytes * 0xff51afd7ed558ccdULL) ^ op;
}

/* The main thread's calls that entered in [from, to), as call_sig, into r->prev_sig: the step
 * just before the one built from to on. Not known (-1) when none was built just before it. */
static void keep_prev_step(struct job_rank *r, uint64_t from, uint64_t to)
{
	uint64_t *p;
	int i, n = 0;

	r->nprev = -1;
	if (!r->built_end || r->built_end != to)
		return;
	for (i = 0; i < r->ncoll; i++)
		n += r->coll[i].enter >= from && r->coll[i].enter < to;
	if (n && !(p = realloc(r->prev_sig, sizeof(*p) * n)))
		return;
	if (n)
		r->prev_sig = p;
	for (n = 0, i = 0; i < r->ncoll; i++) {
		const struct tl_coll *x = &r->coll[i];

		if (x->enter >= from && x->enter < to && (!r->main_tid || x->tid == r->main_tid))
			r->prev_sig[n++] = call_sig(x->op, x->bytes, x->comm);
	}
	r->nprev = n;
}

static void trim(struct job_rank *r, uint64_t t)
{
	int n = r->ncoll;

	/* collectives are in entry order: drop the leading ones that also returned before t,
	 * and move find_seq's hint with the ones kept */
	TRIM(r->coll, r->ncoll, r->coll[_i].exit && r->coll[_i].exit < t);
	r->seq_hint = r->seq_hint > n - r->ncoll ? r->seq_hint - (n - r->ncoll) : 0;
	TRIM(r->off, r->noff, r->off[_i].end < t);
	TRIM(r->io, r->nio, r->io[_i].end < t);
	TRIM(r->bwd, r->nbwd, r->bwd[_i] < t);
	TRIM(r->mark, r->nmark, r->mark[_i].t < t);
	/* in arrival order, several streams interleaved: the leading ones that ended before t */
	TRIM(r->gpu, r->ngpu, r->gpu[_i].end < t);
	TRIM(r->sync, r->nsync, r->sync[_i].exit && r->sync[_i].exit < t);
}

/* A communicator of column c the same on all its members: its name, unless that is the
 * process's own (an MPI handle's address) and the group of its main one was learned. */
static uint64_t comm_id(const struct job *j, int c, uint64_t comm)
{
	if (j->grp_known && j->r[c].have_main && comm == j->r[c].main_comm && j->grp[c] >= 0)
		return 0x9e3779b97f4a7c15ULL * (uint64_t)(j->grp[c] + 1) ^ 0x67726f7570ULL;
	return comm;
}

/* Whether column c has waited in a call past the hang timeout. */
static bool col_stuck(struct job *j, int c, uint64_t now)
{
	struct job_inflight in;

	return j->ops.inflight && j->cfg.hang_timeout_ns && !j->r[c].exited &&
	       j->ops.inflight(j->ops.ctx, c, &in) && now > in.enter_ns &&
	       now - in.enter_ns >= j->cfg.hang_timeout_ns;
}

static void assemble(struct job *j, uint64_t now, bool final)
{
	struct step_obs *row;
	struct job_step *st;
	uint64_t s, e;
	int c, i, guard, b;

	if (!j->have_next && !first_k(j))
		return;
	st = calloc(j->n, sizeof(*st));
	if (!st)
		return;
	for (guard = 0; guard < 1000; guard++) {
		row = &j->rows[(size_t)(j->nrows % JOB_ROWS) * j->n];
		memset(row, 0, sizeof(*row) * j->n);
		links__begin(j->links, j->next_k);
		for (c = 0; c < j->n; c++) {
			const struct job_rank *r = &j->r[c];

			b = bounds(j, r, j->next_k, &s, &e, final);
			if (b < 0)
				continue;	/* never: absent from this row */
			if (!b) {
				/* absent from this row: gone, or, when no more will come, stuck
				 * in a call (a hang, a divergent call) where its peers went on */
				if (r->exited || (final && col_stuck(j, c, now)))
					continue;
				goto done;
			}
			if (!final && now < e + JOB_SETTLE_NS)
				goto done;
			/* the end: now is when observation stopped; a step that ends after it was
			 * seen while the probes came off one by one (a marker still firing after
			 * the collectives' link was closed): cut, not a step */
			if (final && e > now)
				goto done;
			/* GPU records come late (the library flushes every 0.5 s): wait until this
			 * rank's GPU has reported past the step, for a while */
			if (!final && r->ngpu && r->gpu_seen < e && now < e + JOB_GPU_SETTLE_NS)
				goto done;
			build_step(j, r, j->next_k, s, e, &row[c], &st[c]);
			st[c].col = c;
		}
		/* every rank gone before this step: no step, not a row of nobody */
		for (c = 0; c < j->n && !row[c].present; c++)
			;
		if (c == j->n)
			goto done;
		for (c = 0; c < j->n; c++)
			for (i = 0; row[c].present && i < st[c].ncomm; i++)
				links__coll(j->links, c, comm_id(j, c, st[c].comm[i].comm),
					    st[c].comm[i].sig,
					    st[c].comm[i].inside_ns - st[c].comm[i].p2p_ns,
					    st[c].comm[i].held_ns);
		step_lateness(j, j->next_k, row);
		pipeline_stages(j, st, row);
		for (c = 0; c < j->n; c++)
			links__place(j->links, c, st[c].stage);
		links__end(j->links);
		for (c = 0; c < j->n; c++) {
			row[c].stage = st[c].stage;
			row[c].stages = st[c].stages;
			row[c].micro = st[c].micro;
			row[c].p2p_ns = st[c].p2p_ns;
		}
		detect__split_comm(row, j->n);
		for (c = 0; c < j->n; c++) {
			if (!row[c].present)
				continue;
			st[c].ph = row[c].ph;
			if (j->ops.on_step)
				j->ops.on_step(j->ops.ctx, &st[c], j->rule);
		}
		step_cost(j, j->next_k, row, now);
		j->row_k[j->nrows % JOB_ROWS] = j->next_k;
		j->nrows++;
		j->progress_ns = now;
		for (c = 0; c < j->n; c++)
			if (row[c].present && st[c].start_ns + st[c].dur_ns > j->last_end_ns)
				j->last_end_ns = st[c].start_ns + st[c].dur_ns;
		check_divergence(j, j->next_k);
		judge(j, j->next_k);
		/* a straggler verdict on a rank: its waits are a straggler's cost */
		if (j->emitted && j->last.col >= 0 && j->last.col < j->n &&
		    detect__straggler(j->last.cls, j->last.persistent))
			cost__charge(&j->cost, j->r[j->last.col].rank, now);
		j->next_k++;
		/* the next step starts where this one ended: older events are done with */
		for (c = 0; c < j->n; c++) {
			if (!row[c].present)
				continue;
			keep_prev_step(&j->r[c], j->r[c].built_start, st[c].start_ns);
			j->r[c].built_start = st[c].start_ns;
			j->r[c].built_end = st[c].start_ns + st[c].dur_ns;
			trim(&j->r[c], st[c].start_ns);
		}
	}
done:
	free(st);
}

/*
 * Whether column c's calls since its last step built stray from the ones it made in that
 * step, call for call (each against the one a step's worth of calls before it), the call it
 * waits in (in) last: 1 yes (*pos: the place in the step of the first that does), 0 no (none
 * strays, or it made none since), -1 not known (no step built on it). A skipped, reordered or
 * mismatched collective is one the rank did not make there the step before.
 */
static int strays(const struct job *j, int c, const struct job_inflight *in, int *pos)
{
	const struct job_rank *r = &j->r[c];
	uint64_t *sig;
	int i, n = 0, len = -1, ret = 0;
	bool open = in->op != 0;

	if (!r->built_end)
		return -1;
	sig = malloc(sizeof(*sig) * (size_t)(r->ncoll + 1));
	if (!sig)
		return -1;
	for (i = 0; i < r->ncoll; i++) {
		const struct tl_coll *x = &r->coll[i];

		if (x->enter < r->built_start || (r->main_tid && x->tid != r->main_tid))
			continue;
		if (!x->exit && x->seq == in->seq && x->comm == in->comm)
			open = false;	/* an entry-only probe has it already */
		if (len < 0 && x->enter >= r->built_end)
			len = n;
		sig[n++] = call_sig(x->op, x->bytes, x->comm);
	}
	if (open) {
		if (len < 0)
			len = n;
		sig[n++] = call_sig(in->op, in->bytes, in->comm);
	}
	if (len < 0 && !open && n)
		len = n;	/* no call since its step (an open wait is none): none strays */
	if (len <= 0)
		ret = -1;
	/* the step built last against the one before it: a call skipped, reordered or changed
	 * in it, before the one the rank now waits in */
	for (i = 0; ret == 0 && r->nprev > 0 && i < (len > r->nprev ? len : r->nprev); i++) {
		if (i >= len || i >= r->nprev || sig[i] != r->prev_sig[i]) {
			*pos = i;
			ret = 1;
		}
	}
	for (i = len; ret == 0 && i < n; i++) {
		if (sig[i] != sig[i - len]) {
			*pos = (i - len) % len;
			ret = 1;
		}
	}
	free(sig);
	return ret;
}

/* Whether column c's step before its last one built made a call like in (not known: no). */
static bool made_before(const struct job *j, int c, const struct job_inflight *in)
{
	uint64_t sig = call_sig(in->op, in->bytes, in->comm);
	int i;

	for (i = 0; i < j->r[c].nprev; i++)
		if (j->r[c].prev_sig[i] == sig)
			return true;
	return false;
}

/*
 * The odd one among calls in flight on the same communicator at the same seq, against a
 * strict majority of the others in one (op, bytes): its column (*major: one of the majority),
 * or -1. With no majority (a communicator of two), the one whose call its step before never
 * made, where each of the others made theirs.
 */
static int odd_in_flight(const struct job *j, const struct job_inflight *in, const bool *inside,
			 int *major, bool *history)
{
	int c, d, same, best = -1, nbest = 0, group, other;

	for (c = 0; c < j->n; c++) {
		if (!inside[c])
			continue;
		for (same = group = 0, d = 0; d < j->n; d++) {
			if (!inside[d] || in[d].comm != in[c].comm || in[d].seq != in[c].seq)
				continue;
			group++;
			same += in[d].op == in[c].op && in[d].bytes == in[c].bytes;
		}
		if (same * 2 > group && same < group && same > nbest) {
			nbest = same;
			best = c;
		}
	}
	for (c = 0; best >= 0 && c < j->n; c++)
		if (inside[c] && in[c].comm == in[best].comm && in[c].seq == in[best].seq &&
		    (in[c].op != in[best].op || in[c].bytes != in[best].bytes)) {
			*major = best;
			return c;
		}
	for (c = 0; best < 0 && c < j->n; c++) {
		if (!inside[c] || j->r[c].nprev <= 0 || made_before(j, c, &in[c]))
			continue;
		for (group = 0, other = -1, d = 0; d < j->n; d++) {
			if (d == c || !inside[d] || in[d].comm != in[c].comm || in[d].seq != in[c].seq)
				continue;
			group++;
			if ((in[d].op == in[c].op && in[d].bytes == in[c].bytes) ||
			    !made_before(j, d, &in[d]))
				break;
			other = d;
		}
		if (d == j->n && group) {
			*major = other;
			*history = true;
			return c;
		}
	}
	return -1;
}

/*
 * Every rank of the job is seen here, none stopped, and some wait in a collective. One whose
 * call differs from a strict majority's in the same one (communicator, seq) is divergent.
 * Else, when one rank made calls since its last step that the step before did not make
 * there, while the others (one at least) made the same ones, it is: the others wait for a call
 * it skipped, reordered or changed (a rank outside every collective, stuck in its step, made
 * the first of them only). Said, or not.
 */
static bool waits_diverge(struct job *j, uint64_t now, uint64_t wait_since)
{
	struct job_verdict jv = {};
	struct job_inflight *in = calloc(j->n, sizeof(*in));
	bool *inside = calloc(j->n, sizeof(*inside));
	int c, known = 0, nodd = 0, odd = -1, at = 0, pos = 0, y, m = 0;
	bool history = false;

	if (!in || !inside)
		goto out;
	for (c = 0; c < j->n; c++)
		if (!j->r[c].exited)
			inside[c] = j->ops.inflight(j->ops.ctx, c, &in[c]);
	odd = odd_in_flight(j, in, inside, &m, &history);
	if (odd >= 0) {
		snprintf(jv.detail, sizeof(jv.detail), "every rank has waited %.1f s in a "
			 "collective; this rank waits in %s of %" PRIu64 " bytes where %s of its "
			 "communicator wait in %s of %" PRIu64 " bytes at the same seq%s",
			 (now - wait_since) / 1e9, decode__op_name(in[odd].op), in[odd].bytes,
			 history ? "the others" : "most", decode__op_name(in[m].op), in[m].bytes,
			 history ? ", the call each made the step before, where this one made none "
			 "like it" : "");
		goto found;
	}
	for (c = 0; c < j->n; c++) {
		if (!inside[c])
			in[c] = (struct job_inflight){};	/* its calls so far: none open */
		if (j->r[c].exited || (y = strays(j, c, &in[c], &pos)) < 0)
			continue;
		known++;
		if (y && !nodd++) {
			odd = c;
			at = pos;
		}
	}
	if (nodd != 1 || known < 2) {	/* more than one: not one rank's odd call */
		odd = -1;
		goto out;
	}
	snprintf(jv.detail, sizeof(jv.detail), "every rank has waited %.1f s in a collective; "
		 "this rank's call %d of its step is not the one it made there the step before, "
		 "while %d of the %d others made theirs: they wait for a call it skipped, "
		 "reordered or changed", (now - wait_since) / 1e9, at + 1, known - nodd,
		 j->n - 1);
found:
	jv.cls = jv.v.cls = V_DIVERGENT;
	jv.col = jv.v.rank = odd;
	jv.t_ns = now;
	jv.since_ns = wait_since;
	jv.step = jv.first = jv.last = j->next_k;
	j->hang_done = true;
	jv.stuck = true;
	emit_verdict(j, &jv);
out:
	free(in);
	free(inside);
	return odd >= 0;
}

/*
 * Every rank seen here has waited past the hang timeout inside a collective (the same one, or
 * some still in the one before: their peers here got their share first), none of them
 * stopped, none behind. With ranks of the job elsewhere, the one that holds it is among
 * those; with every rank here, the collective itself never completes (a transport, network
 * or device fault): a hang, on no rank.
 */
static void all_waiting(struct job *j, uint64_t now, uint64_t wait_since, int64_t wait_seq)
{
	struct job_verdict jv = {};
	struct job_inflight in;
	int c, behind = 0;

	for (c = 0; c < j->n; c++) {
		if (j->r[c].exited)
			continue;
		if (!j->ops.inflight(j->ops.ctx, c, &in))
			return;
		if ((int64_t)in.seq + j->r[c].seq_off < wait_seq)
			behind++;
	}
	jv.t_ns = now;
	jv.since_ns = wait_since;
	jv.step = jv.first = jv.last = j->next_k;
	jv.col = jv.v.rank = -1;
	if (partial(j)) {
		jv.cls = jv.v.cls = V_REMOTE_WAIT;
		snprintf(jv.detail, sizeof(jv.detail), "every rank seen here (%d of %d) has waited "
			 "%.1f s in collective seq %" PRId64 "%s, none of them stopped: the rank "
			 "that holds it is not observed here (a hang or a dead rank on another node)",
			 j->n, j->world, (now - wait_since) / 1e9, wait_seq,
			 behind ? " (some still in the one before)" : "");
	} else {
		jv.cls = jv.v.cls = V_HANG;
		snprintf(jv.detail, sizeof(jv.detail), "every rank (%d) has waited %.1f s inside "
			 "collective seq %" PRId64 " and none is outside one or behind: the collective "
			 "never completes (a transport, network or device fault)", j->n,
			 (now - wait_since) / 1e9, wait_seq);
	}
	j->hang_done = true;
	jv.stuck = true;
	emit_verdict(j, &jv);
}

/*
 * Every rank of a stuck job merely waits: their stacks say where (at most once a hang
 * timeout). Ranks in different collectives, against a strict majority in one: divergent on
 * the odd one. Ranks in a collective but one that is in none: a hang on that one, with the
 * frames it is in.
 */
static void stuck_stacks(struct job *j, uint64_t now)
{
	struct job_verdict jv = {};
	char (*coll)[48] = NULL, (*stack)[JOB_STACK_TEXT] = NULL;
	int c, d, best = -1, same = 0, in = 0, out = -1, nout = 0, odd = -1, seen = 0;

	if (!j->ops.where || (j->stacks_ns && now < j->stacks_ns + j->cfg.hang_timeout_ns))
		return;
	j->stacks_ns = now;
	coll = calloc(j->n, sizeof(*coll));
	stack = calloc(j->n, sizeof(*stack));
	if (!coll || !stack)
		goto out;
	for (c = 0; c < j->n; c++) {
		if (j->r[c].exited)
			continue;
		if (j->ops.where(j->ops.ctx, c, coll[c], sizeof(coll[c]), stack[c],
				 sizeof(stack[c]))) {
			in++;
		} else if (stack[c][0]) {
			if (out < 0)
				out = c;
			nout++;
		}
		seen++;
	}
	for (c = 0; c < j->n; c++) {
		int n = 0;

		for (d = 0; coll[c][0] && d < j->n; d++)
			n += !strcmp(coll[c], coll[d]);
		if (n > same) {
			same = n;
			best = c;
		}
	}
	jv.t_ns = now;
	jv.step = jv.first = jv.last = j->next_k;
	if (in == seen && best >= 0 && same < in && same * 2 > in) {
		for (c = 0; c < j->n && odd < 0; c++)
			if (coll[c][0] && strcmp(coll[c], coll[best]))
				odd = c;
		jv.cls = jv.v.cls = V_DIVERGENT;
		jv.col = jv.v.rank = odd;
		snprintf(jv.detail, sizeof(jv.detail), "no step has ended for %.1f s; by their "
			 "stacks this rank waits in %s while %d other rank(s) wait in %s",
			 (now - j->progress_ns) / 1e9, coll[odd], same, coll[best]);
	} else if (nout == 1 && in == seen - 1 && in > 0) {
		jv.cls = jv.v.cls = V_HANG;
		jv.col = jv.v.rank = out;
		snprintf(jv.detail, sizeof(jv.detail), "no step has ended for %.1f s; %d rank(s) "
			 "wait in %s, and this one is in no collective: %s",
			 (now - j->progress_ns) / 1e9, in, best >= 0 ? coll[best] : "a collective",
			 stack[out]);
	}
	if (jv.cls == V_NONE)
		goto out;
	/* the stacks judged by: the odd rank's and one of the majority's */
	memcpy(jv.stacks[0].text, stack[jv.col], sizeof(jv.stacks[0].text));
	jv.stacks[0].rank = j->r[jv.col].rank;
	if (best >= 0) {
		memcpy(jv.stacks[1].text, stack[best], sizeof(jv.stacks[1].text));
		jv.stacks[1].rank = j->r[best].rank;
	}
	j->hang_done = true;
	jv.stuck = true;
	emit_verdict(j, &jv);
out:
	free(coll);
	free(stack);
}

/*
 * Attached to a job that was already stuck: its ranks entered their collectives before the
 * probes existed, so none is in flight for us, and no step ends. When none has for the hang
 * timeout since the first look (or the last step), what each rank's process is doing names
 * the one that holds the others: stopped, a zombie, or the only one in uninterruptible sleep.
 */
static void first_look_hang(struct job *j, uint64_t now)
{
	struct job_verdict jv = {};
	char st[96], lag_st[96] = "", disk_st[96] = "";
	int c, lag = -1, ndisk = 0, disk = -1, waiting = 0;

	if (!j->ops.state || j->n < 2 || now < j->progress_ns + j->cfg.hang_timeout_ns)
		return;
	/* no step yet is not a stuck job while collectives still return: its steps are not
	 * known yet (equal buckets take 48 collectives to learn, a long time at slow steps) */
	for (c = 0; c < j->n; c++)
		if (!j->r[c].exited && j->r[c].main_ret_ns &&
		    now < j->r[c].main_ret_ns + j->cfg.hang_timeout_ns)
			return;
	for (c = 0; c < j->n; c++) {
		if (j->r[c].exited)
			continue;
		j->ops.state(j->ops.ctx, c, st, sizeof(st));
		if (lag < 0 && (!strncmp(st, "stopped", 7) || !strncmp(st, "a zombie", 8))) {
			lag = c;
			snprintf(lag_st, sizeof(lag_st), "%s", st);
		} else if (!strncmp(st, "in uninterruptible", 18) && ndisk++ == 0) {
			disk = c;
			snprintf(disk_st, sizeof(disk_st), "%s", st);
		} else {
			waiting++;
		}
	}
	/* the only rank in uninterruptible sleep, and at every look for the hang timeout: a
	 * writer's moments in D between its runs are not a hang */
	if (ndisk != 1 || disk != j->disk_col) {
		j->disk_col = ndisk == 1 ? disk : -1;
		j->disk_since = now;
	} else if (lag < 0 && now >= j->disk_since + j->cfg.hang_timeout_ns) {
		lag = disk;
		snprintf(lag_st, sizeof(lag_st), "%s", disk_st);
	}
	if (lag < 0) {
		stuck_stacks(j, now);
		return;
	}
	jv.cls = jv.v.cls = V_HANG;
	jv.col = jv.v.rank = lag;
	jv.t_ns = now;
	jv.step = jv.first = jv.last = j->next_k;
	snprintf(jv.detail, sizeof(jv.detail), "no step has ended for %.1f s (the job was stuck "
		 "when rankscope came: its calls predate the probes); the laggard is %s, %d other "
		 "rank(s) wait", (now - j->progress_ns) / 1e9, lag_st, waiting);
	stuck_evidence(j, &jv, -1);
	j->hang_done = true;
	jv.stuck = true;
	emit_verdict(j, &jv);
}

static void check_hang(struct job *j, uint64_t now)
{
	struct job_verdict jv = {};
	struct job_inflight in;
	uint64_t wait_since = 0, wait_comm = 0;
	int64_t wait_seq = INT64_MIN, s;
	int c, waiter = -1, lag = -1, pass;

	if (j->hang_done || !j->ops.inflight)
		return;
	for (c = 0; c < j->n; c++) {
		/* a call the main thread is in now began after its last return: returned within
		 * the timeout, it cannot have waited that long (and its frames need no read) */
		if (j->r[c].exited || (j->r[c].main_ret_ns &&
				       now < j->r[c].main_ret_ns + j->cfg.hang_timeout_ns))
			continue;
		if (!j->ops.inflight(j->ops.ctx, c, &in))
			continue;
		if (now > in.enter_ns && now - in.enter_ns >= j->cfg.hang_timeout_ns) {
			s = (int64_t)in.seq + j->r[c].seq_off;
			if (s > wait_seq) {
				wait_seq = s;
				waiter = c;
				wait_since = in.enter_ns;
				wait_comm = in.comm;
			}
		}
	}
	if (waiter < 0) {
		first_look_hang(j, now);
		return;
	}
	/* a rank that cannot run holds the others, whatever call it was stopped in: one stopped
	 * inside collective k leaves some peers in k and others already in k + 1 */
	for (c = 0; c < j->n && lag < 0 && j->ops.state; c++) {
		char st[96];

		if (j->r[c].exited)
			continue;
		j->ops.state(j->ops.ctx, c, st, sizeof(st));
		if (!strncmp(st, "stopped", 7) || !strncmp(st, "a zombie", 8))
			lag = c;
	}
	/* every rank here, none stopped: an odd call first */
	if (lag < 0 && !partial(j) && waits_diverge(j, now, wait_since))
		return;
	/* then one outside every collective while the waiter is in one; else one inside an
	 * older collective on the waiter's communicator (seqs on others say nothing of it), only
	 * when every rank is seen here (with ranks elsewhere, it may wait on one of those: its
	 * peers here got their data first). Outside first: on two communicators, or in a
	 * pipeline, one in an older call may wait on it */
	for (pass = 0; pass < 2 && lag < 0; pass++) {
		for (c = 0; c < j->n && lag < 0; c++) {
			bool inside;

			if (c == waiter || j->r[c].exited || (pass && partial(j)))
				continue;
			inside = j->ops.inflight(j->ops.ctx, c, &in);
			if (pass ? inside && in.comm == wait_comm &&
				   (int64_t)in.seq + j->r[c].seq_off < wait_seq : !inside)
				lag = c;
		}
	}
	if (lag < 0) {
		all_waiting(j, now, wait_since, wait_seq);
		return;
	}
	if (lag == waiter) {	/* report the wait as seen by another rank */
		for (c = 0; c < j->n; c++) {
			if (c != lag && !j->r[c].exited && j->ops.inflight(j->ops.ctx, c, &in)) {
				waiter = c;
				wait_since = in.enter_ns;
				break;
			}
		}
	}
	jv.cls = jv.v.cls = V_HANG;
	jv.col = jv.v.rank = lag;
	jv.t_ns = now;
	/* the job's last progress: when the waiter entered the collective it still waits in
	 * (the steps before it may not all be built yet: their end needs the next collective) */
	jv.since_ns = wait_since;
	jv.step = jv.first = jv.last = j->next_k;
	{
		char state[96] = "unknown";

		if (j->ops.state)
			j->ops.state(j->ops.ctx, lag, state, sizeof(state));
		snprintf(jv.detail, sizeof(jv.detail),
			 "rank %d has waited %.1f s in collective seq %" PRId64 "; the laggard is %s",
			 j->r[waiter].rank, (now - wait_since) / 1e9, wait_seq, state);
	}
	stuck_evidence(j, &jv, waiter);
	j->hang_done = true;
	jv.stuck = true;
	emit_verdict(j, &jv);
}

static void check_exits(struct job *j, uint64_t now)
{
	struct job_verdict jv = {};
	const struct job_rank *r;
	int c, first = -1, alive = 0;
	bool abnormal;

	if (j->exit_done)
		return;
	for (c = 0; c < j->n; c++)
		alive += !j->r[c].exited;
	/* the first rank to go is the cause; the others may be its launcher's cleanup */
	for (c = 0; c < j->n; c++) {
		r = &j->r[c];
		if (!r->exited)
			continue;
		/* killed by a signal, or non-zero status (wait(2) encoding) */
		abnormal = (r->exit_status & 0x7f) || (r->exit_status >> 8);
		if (!abnormal && !(alive && now - r->exit_ns >= JOB_EXIT_GRACE_NS))
			continue;
		if (first < 0 || r->exit_ns < j->r[first].exit_ns)
			first = c;
	}
	if (first < 0)
		return;
	r = &j->r[first];
	jv.cls = jv.v.cls = V_RANK_EXITED;
	jv.col = jv.v.rank = first;
	jv.step = jv.first = jv.last = j->next_k;
	jv.t_ns = j->now;
	if (r->exit_status & 0x7f)
		snprintf(jv.detail, sizeof(jv.detail), "killed by signal %d; %d rank(s) still running",
			 r->exit_status & 0x7f, alive);
	else
		snprintf(jv.detail, sizeof(jv.detail), "exited with status %d while %d rank(s) kept "
			 "running", r->exit_status >> 8 & 0xff, alive);
	j->exit_done = true;
	emit_verdict(j, &jv);
}

/* Whether a rank has waited in a call past the hang timeout. */
static bool stuck_waiting(struct job *j, uint64_t now)
{
	int c;

	for (c = 0; c < j->n; c++)
		if (col_stuck(j, c, now))
			return true;
	return false;
}

void job__advance(struct job *j, uint64_t now, bool final)
{
	bool settled;

	if (!j)
		return;
	j->now = now;
	if (!j->progress_ns)
		j->progress_ns = now;
	pick_main_comm(j);
	if (!j->markers) {
		/* a job stuck before its steps were learned makes no more calls: learn them from
		 * what it made, as at the end of a run, so its last steps show what it skipped */
		settled = final || (!j->have_period && !j->hang_done && stuck_waiting(j, now));
		align(j, settled);
		detect_period(j, settled);
		if (!j->have_period)
			goto checks;
		walk(j, final);
	} else {
		int c;

		j->rule = j->cfg.mode == STEPS_MARKER ? "marker" : "ddp_marker";
		align_markers(j);
		for (c = 0; c < j->n && !final; c++)
			if (!j->r[c].aligned && !j->r[c].exited)
				goto checks;
	}
	assemble(j, now, final);
	/* the step not built yet, as far as its collectives came: one that never completes (a
	 * mismatch leaves its wait hanging) is never built, and its odd call is there */
	if (j->have_next)
		check_divergence(j, j->next_k);
checks:
	check_hang(j, now);
	check_exits(j, now);
}
