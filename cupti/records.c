// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* CUPTI activity records to wire records; the clock; kernel-name interning; the queue. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cupti_activity.h>
#include <cupti_activity_deprecated.h>
#include "rs_cupti.h"

/*
 * Records are read through the oldest struct of each kind (Kernel4 from CUDA 9, the first
 * Memcpy, MemcpyPtoP, Memset and Synchronization), which every CUPTI header still declares:
 * the fields read here sit at the same offsets in every version shipped since, so this builds
 * against CUDA 11, 12 or 13 headers and reads what any of those CUPTIs hands over. With the
 * newest headers the compiler checks the offsets.
 */
#define SAME(a, b, f) _Static_assert(offsetof(a, f) == offsetof(b, f), #a "." #f)
#if CUPTI_API_VERSION >= 130000
SAME(CUpti_ActivityKernel4, CUpti_ActivityKernel10, start);
SAME(CUpti_ActivityKernel4, CUpti_ActivityKernel10, end);
SAME(CUpti_ActivityKernel4, CUpti_ActivityKernel10, deviceId);
SAME(CUpti_ActivityKernel4, CUpti_ActivityKernel10, streamId);
SAME(CUpti_ActivityKernel4, CUpti_ActivityKernel10, correlationId);
SAME(CUpti_ActivityKernel4, CUpti_ActivityKernel10, name);
SAME(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, copyKind);
SAME(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, bytes);
SAME(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, start);
SAME(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, end);
SAME(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, deviceId);
SAME(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, streamId);
SAME(CUpti_ActivityMemcpy, CUpti_ActivityMemcpy6, correlationId);
SAME(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, bytes);
SAME(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, start);
SAME(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, end);
SAME(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, deviceId);
SAME(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, streamId);
SAME(CUpti_ActivityMemcpyPtoP, CUpti_ActivityMemcpyPtoP4, correlationId);
SAME(CUpti_ActivityMemset, CUpti_ActivityMemset4, bytes);
SAME(CUpti_ActivityMemset, CUpti_ActivityMemset4, start);
SAME(CUpti_ActivityMemset, CUpti_ActivityMemset4, end);
SAME(CUpti_ActivityMemset, CUpti_ActivityMemset4, deviceId);
SAME(CUpti_ActivityMemset, CUpti_ActivityMemset4, streamId);
SAME(CUpti_ActivityMemset, CUpti_ActivityMemset4, correlationId);
SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, type);
SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, start);
SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, end);
SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, streamId);
SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, correlationId);
#endif

int rsc_clock_calibrate(struct rsc_clock *c, int n, int (*cupti_now)(uint64_t *ts),
			uint64_t (*mono_now)(void))
{
	uint64_t a, b, ts, best = UINT64_MAX, at_cupti = 0, at_mono = 0;
	int64_t off = 0;
	int i;

	for (i = 0; i < n; i++) {
		a = mono_now();
		if (cupti_now(&ts))
			continue;
		b = mono_now();
		if (b < a || !ts)
			continue;
		if (b - a < best) {	/* the tightest bracket bounds the error best */
			best = b - a;
			at_cupti = ts;
			at_mono = a + (b - a) / 2;
			off = (int64_t)at_mono - (int64_t)ts;
		}
	}
	if (best == UINT64_MAX)
		return -1;
	c->offset_ns = off;
	c->err_ns = (best + 1) / 2;
	c->valid = true;
	c->cupti_ts = at_cupti;
	c->mono_ts = at_mono;
	return 0;
}

/* A CUPTI timestamp on CLOCK_MONOTONIC; 0 when it cannot be one. */
static uint64_t to_mono(const struct rsc_clock *c, uint64_t ts)
{
	int64_t v;

	if (!ts || !c->valid)
		return 0;
	v = (int64_t)ts + c->offset_ns;
	return v > 0 ? (uint64_t)v : 0;
}

static uint8_t copy_kind(uint8_t k)
{
	switch (k) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
		return RSC_COPY_HTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
		return RSC_COPY_DTOH;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
		return RSC_COPY_DTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
		return RSC_COPY_PEER;
	default:
		return RSC_COPY_OTHER;
	}
}

static int times(const struct rsc_clock *c, uint64_t start, uint64_t end, struct rsc_rec *rec)
{
	rec->start_ns = to_mono(c, start);
	rec->end_ns = to_mono(c, end);
	if (!rec->start_ns || !rec->end_ns || rec->end_ns < rec->start_ns)
		return -1;
	return 1;
}

int rsc_convert(const void *activity, const struct rsc_clock *c, struct rsc_rec *rec,
		const char **name)
{
	const CUpti_Activity *a = activity;

	memset(rec, 0, sizeof(*rec));
	*name = NULL;
	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel4 *k = activity;

		rec->kind = RSC_REC_KERNEL;
		rec->device = k->deviceId;
		rec->stream = k->streamId;
		rec->correlation = k->correlationId;
		*name = k->name;
		return times(c, k->start, k->end, rec);
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy *m = activity;

		rec->kind = RSC_REC_MEMCPY;
		rec->sub = copy_kind(m->copyKind);
		rec->device = m->deviceId;
		rec->stream = m->streamId;
		rec->correlation = m->correlationId;
		rec->value = m->bytes;
		return times(c, m->start, m->end, rec);
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY2: {
		const CUpti_ActivityMemcpyPtoP *m = activity;

		rec->kind = RSC_REC_MEMCPY;
		rec->sub = RSC_COPY_PEER;
		rec->device = m->deviceId;
		rec->stream = m->streamId;
		rec->correlation = m->correlationId;
		rec->value = m->bytes;
		return times(c, m->start, m->end, rec);
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset *m = activity;

		rec->kind = RSC_REC_MEMSET;
		rec->device = m->deviceId;
		rec->stream = m->streamId;
		rec->correlation = m->correlationId;
		rec->value = m->bytes;
		return times(c, m->start, m->end, rec);
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization *s = activity;

		rec->kind = RSC_REC_SYNC;
		rec->sub = (uint8_t)s->type;
		rec->stream = s->streamId;
		rec->correlation = s->correlationId;
		return times(c, s->start, s->end, rec);
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *api = activity;

		rec->kind = RSC_REC_API;
		rec->sub = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? 1 : 2;
		rec->correlation = api->correlationId;
		rec->value = api->cbid;
		return times(c, api->start, api->end, rec);
	}
	default:
		return 0;
	}
}

/* FNV-1a, 64 bit */
static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h ? h : 1;
}

#define SLOTS (RSC_NAMES_MAX * 2)

uint32_t rsc_names_intern(struct rsc_names *t, const char *name, bool *fresh)
{
	size_t len = strnlen(name, RSC_NAME_MAX);
	uint64_t h = hash(name, len);
	struct rsc_name_ent *e;
	uint32_t i;

	*fresh = false;
	if (!t->ent) {
		t->ent = calloc(SLOTS, sizeof(*t->ent));
		t->slot_of = calloc(RSC_NAMES_MAX + 1, sizeof(*t->slot_of));
		if (!t->ent || !t->slot_of) {
			free(t->ent);
			free(t->slot_of);
			t->ent = NULL;
			t->slot_of = NULL;
			return 0;
		}
	}
	for (i = h % SLOTS;; i = (i + 1) % SLOTS) {
		e = &t->ent[i];
		if (!e->hash)
			break;
		if (e->hash == h && e->len == len && !memcmp(e->name, name, len))
			return e->id;
	}
	if (t->n >= RSC_NAMES_MAX || t->bytes + len > RSC_NAME_BYTES_MAX)
		return 0;
	e->name = malloc(len + 1);
	if (!e->name)
		return 0;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	e->hash = h;
	e->len = len;
	e->id = ++t->n;
	t->slot_of[e->id] = i;
	t->bytes += len;
	*fresh = true;
	return e->id;
}

const char *rsc_names_get(const struct rsc_names *t, uint32_t id, uint32_t *len)
{
	const struct rsc_name_ent *e;

	if (!t->ent || !id || id > t->n)
		return NULL;
	e = &t->ent[t->slot_of[id]];
	*len = e->len;
	return e->name;
}

void rsc_names_free(struct rsc_names *t)
{
	uint32_t i;

	for (i = 0; t->ent && i < SLOTS; i++)
		free(t->ent[i].name);
	free(t->ent);
	free(t->slot_of);
	memset(t, 0, sizeof(*t));
}

int rsc_queue_init(struct rsc_queue *q)
{
	memset(q, 0, sizeof(*q));
	q->rec = calloc(RSC_QUEUE_RECS, sizeof(*q->rec));
	if (!q->rec)
		return -1;
	pthread_mutex_init(&q->lock, NULL);
	return 0;
}

void rsc_queue_free(struct rsc_queue *q)
{
	if (q->rec)
		pthread_mutex_destroy(&q->lock);
	free(q->rec);
	q->rec = NULL;
}

void rsc_queue_put(struct rsc_queue *q, const struct rsc_rec *r, size_t n)
{
	size_t i;

	pthread_mutex_lock(&q->lock);
	for (i = 0; i < n; i++) {
		if (q->len == RSC_QUEUE_RECS) {	/* the newest go: the oldest are on their way */
			q->dropped += n - i;
			break;
		}
		q->rec[(q->head + q->len++) % RSC_QUEUE_RECS] = r[i];
	}
	pthread_mutex_unlock(&q->lock);
}

size_t rsc_queue_take(struct rsc_queue *q, struct rsc_rec *out, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&q->lock);
	while (n < max && q->len) {
		out[n++] = q->rec[q->head];
		q->head = (q->head + 1) % RSC_QUEUE_RECS;
		q->len--;
	}
	pthread_mutex_unlock(&q->lock);
	return n;
}

void rsc_queue_unget(struct rsc_queue *q, const struct rsc_rec *r, size_t n)
{
	size_t i;

	pthread_mutex_lock(&q->lock);
	for (i = n; i-- > 0;) {
		if (q->len == RSC_QUEUE_RECS) {
			q->dropped++;
			continue;
		}
		q->head = (q->head + RSC_QUEUE_RECS - 1) % RSC_QUEUE_RECS;
		q->rec[q->head] = r[i];
		q->len++;
	}
	pthread_mutex_unlock(&q->lock);
}
