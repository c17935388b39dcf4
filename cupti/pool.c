// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The activity buffers lent to CUPTI: a fixed pool, allocated, zeroed and so pre-faulted on the
 * library's own thread, never on the application's. CUPTI asks for a buffer on the thread that
 * launched the work (per-thread buffers, CUDA 13's default), so asking must be cheap: take a
 * clean one, or (rarely) zero a dirty one, or none. A completed buffer comes back dirty, and the
 * library's thread zeroes it for the next time (CUPTI skips its own zeroing:
 * CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER).
 *
 * CUPTI before API version 27 crashes on a NULL buffer, so for it the pool has a spare to hand
 * out when every buffer is out: the library lends it for one record at a time, which it counts
 * and drops. The spare may be out to several threads at once; nothing reads it.
 *
 * When another CUPTI client takes the buffer callbacks over, the buffers out are lost to it
 * (Kineto keeps buffers it does not know): rsc_pool_abandon() forgets them, and
 * rsc_pool_renew() replaces them before the library records again. A lost buffer that comes
 * back to us later is freed.
 */
#include <stdlib.h>
#include <string.h>
#include "rs_cupti.h"

static uint8_t *alloc_zeroed(size_t size)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, size))
		return NULL;
	memset(p, 0, size);	/* here, on our thread: every page faulted in */
	return p;
}

int rsc_pool_init(struct rsc_pool *p, size_t size, bool spare)
{
	int i;

	memset(p, 0, sizeof(*p));
	p->size = size;
	for (i = 0; i < RSC_POOL_BUFS; i++) {
		p->b[i].mem = alloc_zeroed(size);
		if (!p->b[i].mem) {
			rsc_pool_free(p);
			return -1;
		}
		atomic_init(&p->b[i].state, RSC_BUF_CLEAN);
	}
	if (spare && !(p->spare = alloc_zeroed(RSC_SPARE_SIZE))) {
		rsc_pool_free(p);
		return -1;
	}
	return 0;
}

void rsc_pool_free(struct rsc_pool *p)
{
	int i;

	for (i = 0; i < RSC_POOL_BUFS; i++)
		free(p->b[i].mem);
	for (i = 0; i < RSC_POOL_GHOSTS; i++)
		free(atomic_load(&p->ghost[i]));
	free(p->spare);
	memset(p, 0, sizeof(*p));
}

static bool move(struct rsc_buf *b, int from, int to)
{
	return atomic_compare_exchange_strong(&b->state, &from, to);
}

uint8_t *rsc_pool_get(struct rsc_pool *p)
{
	int i;

	for (i = 0; i < RSC_POOL_BUFS; i++)
		if (p->b[i].mem && move(&p->b[i], RSC_BUF_CLEAN, RSC_BUF_OUT))
			return p->b[i].mem;
	/* none clean: our thread is behind; zero one here rather than lose records */
	for (i = 0; i < RSC_POOL_BUFS; i++)
		if (p->b[i].mem && move(&p->b[i], RSC_BUF_DIRTY, RSC_BUF_OUT)) {
			memset(p->b[i].mem, 0, p->size);
			atomic_fetch_add(&p->zeroed_inline, 1);
			return p->b[i].mem;
		}
	if (p->spare) {
		atomic_fetch_add(&p->spare_out, 1);
		return p->spare;
	}
	return NULL;
}

int rsc_pool_put(struct rsc_pool *p, uint8_t *buf, int *slot)
{
	uint8_t *g;
	int i;

	*slot = -1;
	if (!buf)
		return RSC_PUT_NOT_OURS;
	if (buf == p->spare) {
		atomic_fetch_sub(&p->spare_out, 1);
		return RSC_PUT_SPARE;
	}
	for (i = 0; i < RSC_POOL_BUFS; i++) {
		if (p->b[i].mem != buf)
			continue;
		/* held (SCRUB) while the caller reads it: nobody zeroes or lends it meanwhile */
		if (move(&p->b[i], RSC_BUF_OUT, RSC_BUF_SCRUB) ||
		    move(&p->b[i], RSC_BUF_LOST, RSC_BUF_SCRUB)) {
			*slot = i;
			return RSC_PUT_OURS;
		}
		break;		/* being renewed: it may be a ghost already */
	}
	for (i = 0; i < RSC_POOL_GHOSTS; i++) {
		g = buf;
		if (atomic_load(&p->ghost[i]) == buf &&
		    atomic_compare_exchange_strong(&p->ghost[i], &g, NULL)) {
			free(buf);	/* lost, replaced, and back at last: ours to free */
			return RSC_PUT_GHOST;
		}
	}
	return RSC_PUT_NOT_OURS;
}

void rsc_pool_release(struct rsc_pool *p, int slot)
{
	if (slot >= 0 && slot < RSC_POOL_BUFS)
		atomic_store(&p->b[slot].state, RSC_BUF_DIRTY);
}

int rsc_pool_scrub(struct rsc_pool *p)
{
	int i, n = 0;

	for (i = 0; i < RSC_POOL_BUFS; i++) {
		if (!p->b[i].mem || !move(&p->b[i], RSC_BUF_DIRTY, RSC_BUF_SCRUB))
			continue;
		memset(p->b[i].mem, 0, p->size);
		atomic_store(&p->b[i].state, RSC_BUF_CLEAN);
		n++;
	}
	return n;
}

int rsc_pool_count(struct rsc_pool *p, int state)
{
	int i, n = 0;

	for (i = 0; i < RSC_POOL_BUFS; i++)
		n += p->b[i].mem && atomic_load(&p->b[i].state) == state;
	return n;
}

int rsc_pool_abandon(struct rsc_pool *p)
{
	int i, n = 0;

	for (i = 0; i < RSC_POOL_BUFS; i++)
		n += p->b[i].mem && move(&p->b[i], RSC_BUF_OUT, RSC_BUF_LOST);
	return n;
}

int rsc_pool_renew(struct rsc_pool *p)
{
	uint8_t *fresh, *want;
	int i, j, n = 0;

	for (i = 0; i < RSC_POOL_BUFS; i++) {
		if (!p->b[i].mem || atomic_load(&p->b[i].state) != RSC_BUF_LOST)
			continue;
		fresh = alloc_zeroed(p->size);
		if (!fresh)
			return -1;
		/* remember the old one, to free it if it ever comes back; with no room to
		 * remember it, it stays lost (bounded: at most RSC_POOL_GHOSTS are tracked) */
		for (j = 0; j < RSC_POOL_GHOSTS; j++) {
			want = NULL;
			if (atomic_compare_exchange_strong(&p->ghost[j], &want, p->b[i].mem))
				break;
		}
		if (!move(&p->b[i], RSC_BUF_LOST, RSC_BUF_SCRUB)) {
			/* it came back meanwhile: keep it, forget the ghost */
			for (j = 0; j < RSC_POOL_GHOSTS; j++) {
				want = p->b[i].mem;
				atomic_compare_exchange_strong(&p->ghost[j], &want, NULL);
			}
			free(fresh);
			continue;
		}
		p->b[i].mem = fresh;
		atomic_store(&p->b[i].state, RSC_BUF_CLEAN);
		n++;
	}
	return n;
}
