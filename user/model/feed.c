// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The one path records take into the job model, live and on replay. */
#include "feed.h"
#include "job.h"

uint64_t feed__done_ns(const struct feed_rec *r)
{
	return r->end > r->start ? r->end : r->start;
}

void feed__apply(struct job *j, const struct feed_rec *r)
{
	switch (r->kind) {
	case FEED_COLL:
		job__on_coll_peer(j, r->col, r->tid, r->op, r->lib, r->comm, r->seq, r->bytes,
				  r->start, r->end, r->peer);
		break;
	case FEED_OFF:
		job__on_off(j, r->col, r->tid, r->start, r->end, r->runq, r->syscall);
		break;
	case FEED_IO:
		job__on_io(j, r->col, r->tid, r->worker, r->fd_kind, r->write, r->start, r->end,
			   r->bytes);
		break;
	case FEED_EXIT:
		job__on_exit(j, r->col, r->start, r->status);
		break;
	case FEED_GPU:
		job__on_gpu(j, r->col, r->nccl, r->start, r->end);
		break;
	case FEED_RUN:
		job__on_run(j, r->col, r->tid, r->end);
		break;
	}
}
