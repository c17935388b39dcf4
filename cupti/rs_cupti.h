/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* librankscope_cupti.so internals: record conversion, the clock, the queue and the sender. */
#ifndef RS_CUPTI_H
#define RS_CUPTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include "rs_cupti_wire.h"

#define RSC_QUEUE_RECS		65536	/* records waiting for the daemon (2.5 MiB) */
#define RSC_NAMES_MAX		RSC_NAMES_MAX_WIRE	/* distinct kernel names per process */
#define RSC_NAME_BYTES_MAX	(2u << 20)	/* their text, in all */
#define RSC_BUFFERS_MAX		8	/* CUPTI activity buffers out at once */
#define RSC_BUFFER_SIZE		(1u << 20)

/* The CUPTI clock against CLOCK_MONOTONIC: mono = cupti + offset_ns, within err_ns. */
struct rsc_clock {
	int64_t offset_ns;
	uint64_t err_ns;
	bool valid;
};

/* Calibrate from n bracketed reads (mono before, cupti, mono after), keeping the tightest.
 * Returns 0, or -1 when no read succeeded. */
int rsc_clock_calibrate(struct rsc_clock *c, int n, int (*cupti_now)(uint64_t *ts),
			uint64_t (*mono_now)(void));

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
