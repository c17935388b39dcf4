/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* librankscope_cupti.so internals: record conversion, the clock, the queue and the sender. */
#ifndef RS_CUPTI_H
#define RS_CUPTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include "rs_cupti_wire.h"

#define RSC_QUEUE_RECS		65536	/* records waiting for the daemon (2.5 MiB) */
#define RSC_NAMES_MAX		RSC_NAMES_MAX_WIRE	/* distinct kernel names per process */
#define RSC_NAME_BYTES_MAX	(2u << 20)	/* their text, in all */
#define RSC_POOL_BUFS		32	/* activity buffers lent to CUPTI, 8 MiB in all */
#define RSC_BUFFER_SIZE		(256u << 10)
#define RSC_BUFFER_RECORDS	1024	/* maxNumRecords: a buffer completes after this many,
					 * so it comes back within a flush even at low rates
					 * (1024 kernel records of 256 bytes fit) */
#define RSC_SPARE_SIZE		4096	/* the spare holds one record (maxNumRecords 1) */
#define RSC_POOL_GHOSTS		64	/* lost buffers remembered, to free if they come back */
#define RSC_DEVICE_POOL_MAX	16	/* CUPTI's device buffers per context: 51 MB of the
					 * job's GPU memory at most, not 800 MB */
#define RSC_CAL_POINTS		1024	/* calibrations kept: 102 s at one per 100 ms */
#define RSC_CAL_KEEP_NS		600000000000ULL	/* before the points kept, an epoch's line is
						 * still trusted this far back (10 min) */

/* The CUPTI clock against CLOCK_MONOTONIC: mono = cupti + offset_ns, within err_ns. The point
 * it was read at: cupti_ts on CUPTI's clock is mono_ts on CLOCK_MONOTONIC. */
struct rsc_clock {
	int64_t offset_ns;
	uint64_t err_ns;
	bool valid;
	uint64_t cupti_ts, mono_ts;
};

/* Calibrate from n bracketed reads (mono before, cupti, mono after), keeping the tightest.
 * Returns 0, or -1 when no read succeeded. */
int rsc_clock_calibrate(struct rsc_clock *c, int n, int (*cupti_now)(uint64_t *ts),
			uint64_t (*mono_now)(void));

/* Calibration points over time (timeline.c): records convert by the points around their own
 * timestamps, across clock steps and changes of domain. Used by one thread only. */
struct rsc_cal {
	uint64_t cupti, mono, err;
	uint32_t epoch;
};

struct rsc_timeline {
	struct rsc_cal pt[RSC_CAL_POINTS];	/* a ring, the oldest at head */
	unsigned int head, n;
	uint32_t epochs;			/* the newest point's epoch */
	bool truncated;				/* the oldest epoch began before the oldest point */
};

void rsc_timeline_reset(struct rsc_timeline *tl);
/* Add a point. Returns 1 when it starts a new epoch (the clock stepped or changed), 0 when it
 * continues the last one (or is the first), -EINVAL for a point that cannot be one. */
int rsc_timeline_add(struct rsc_timeline *tl, uint64_t cupti, uint64_t mono, uint64_t err);
/* CUPTI time t to CLOCK_MONOTONIC: 0; -EAGAIN when t is past the newest point (convert after
 * the next calibration); -ERANGE when no epoch, or more than one, can have made it. */
int rsc_timeline_map(const struct rsc_timeline *tl, uint64_t t, uint64_t *mono);

/* The buffers lent to CUPTI (pool.c). */
enum rsc_buf_state {
	RSC_BUF_CLEAN,		/* zeroed, ready to lend */
	RSC_BUF_OUT,		/* CUPTI has it */
	RSC_BUF_DIRTY,		/* back, to be zeroed */
	RSC_BUF_SCRUB,		/* being read, zeroed or replaced */
	RSC_BUF_LOST,		/* out when another client took CUPTI over */
};

struct rsc_pool {
	struct rsc_buf {
		uint8_t *_Atomic mem;
		_Atomic int state;
	} b[RSC_POOL_BUFS];
	uint8_t *spare;			/* CUPTI < 27 only: never NULL to it */
	uint8_t *_Atomic ghost[RSC_POOL_GHOSTS];
	size_t size;
	atomic_int spare_out;
	atomic_uint_fast64_t zeroed_inline;	/* zeroed on CUPTI's thread: ours was behind */
};

enum { RSC_PUT_NOT_OURS, RSC_PUT_OURS, RSC_PUT_SPARE, RSC_PUT_GHOST };

/* RSC_POOL_BUFS buffers of size bytes, zeroed here; a spare too if asked. 0 or -1. */
int rsc_pool_init(struct rsc_pool *p, size_t size, bool spare);
void rsc_pool_free(struct rsc_pool *p);
/* For CUPTI's request: a clean buffer, else a dirty one zeroed now, else the spare, else NULL. */
uint8_t *rsc_pool_get(struct rsc_pool *p);
/* A buffer CUPTI completed: RSC_PUT_OURS (held for the caller to read, then
 * rsc_pool_release(*slot) makes it dirty), _SPARE, _GHOST (freed), or _NOT_OURS (another
 * client's: not to be read or freed). */
int rsc_pool_put(struct rsc_pool *p, uint8_t *buf, int *slot);
void rsc_pool_release(struct rsc_pool *p, int slot);
/* Zero the dirty buffers (the library's thread). Returns how many. */
int rsc_pool_scrub(struct rsc_pool *p);
int rsc_pool_count(struct rsc_pool *p, int state);
/* Another client took CUPTI: the buffers out are lost to it. Returns how many. */
int rsc_pool_abandon(struct rsc_pool *p);
/* New buffers in place of the lost ones. Returns how many, or -1 (no memory). */
int rsc_pool_renew(struct rsc_pool *p);

/* Kernel names -> ids 1, 2, ... once per process; bounded. The sender sends ids in order, all
 * of them again on a new connection, before the records that use them. */
struct rsc_names {
	struct rsc_name_ent {
		uint64_t hash;
		uint32_t id;
		uint32_t len;
		char *name;
	} *ent;			/* open addressing, RSC_NAMES_MAX * 2 slots */
	uint32_t *slot_of;	/* id -> slot in ent, RSC_NAMES_MAX + 1 */
	uint32_t n;
	size_t bytes;
};

/* The id of name (a new one is added and *fresh set), or 0 when the table is full. */
uint32_t rsc_names_intern(struct rsc_names *t, const char *name, bool *fresh);
const char *rsc_names_get(const struct rsc_names *t, uint32_t id, uint32_t *len);
void rsc_names_free(struct rsc_names *t);

/* Convert one CUPTI activity record (a CUpti_Activity *) into rec, on the clock c. The kernel
 * name, if any, goes to *name. Returns 1 when rec is filled, 0 for a record kind not kept,
 * -1 for a zero or reversed timestamp (counted as a clock drop). */
int rsc_convert(const void *activity, const struct rsc_clock *c, struct rsc_rec *rec,
		const char **name);

/* The bounded queue between CUPTI's buffer callback and the sender. */
struct rsc_queue {
	pthread_mutex_t lock;
	struct rsc_rec *rec;	/* a ring of RSC_QUEUE_RECS */
	size_t head, len;
	uint64_t dropped;	/* records that found the queue full */
};

int rsc_queue_init(struct rsc_queue *q);
void rsc_queue_free(struct rsc_queue *q);
/* Add n records (never blocks on the daemon: drops past the bound, counted). */
void rsc_queue_put(struct rsc_queue *q, const struct rsc_rec *r, size_t n);
/* Take up to max records. */
size_t rsc_queue_take(struct rsc_queue *q, struct rsc_rec *out, size_t max);
/* Put back n records taken but not sent, at the front. */
void rsc_queue_unget(struct rsc_queue *q, const struct rsc_rec *r, size_t n);

#endif /* RS_CUPTI_H */
