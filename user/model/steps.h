/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Steps and their phases: a partition of the main thread's wall time (DESIGN.md §4). */
#ifndef RS_STEPS_H
#define RS_STEPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum phase {
	PH_COMPUTE,
	PH_SCHED_DELAY,
	PH_COMM,
	PH_GPU_WAIT,
	PH_IO,
	PH_INPUT_WAIT,
	PH_OTHER,
	PH_MAX,
};

struct phases {
	uint64_t ns[PH_MAX];	/* sums to the step duration */
	uint64_t comm_sched;	/* of sched_delay, the part inside a collective: with comm, the
				 * time inside the step's collectives (steps__inside) */
	uint64_t comm_wait;	/* comm = comm_wait + comm_transfer, once ranks are joined */
	uint64_t comm_transfer;
	uint64_t io_write;	/* of io, the part in write-side calls (a checkpoint's) */
	int32_t other_nr;	/* the syscall most of `other` was blocked in; -1 unknown */
	uint64_t other_nr_ns;	/* and how long */
};

/* Main-thread intervals, CLOCK_MONOTONIC ns, [start, end). */
struct tl_coll {
	uint64_t enter, exit;	/* exit 0: entry-only probe */
	uint64_t seq;		/* aligned across ranks by the caller */
	uint64_t comm;		/* communicator name hash */
	uint64_t bytes;
	uint32_t tid;
	uint8_t op;
	uint8_t lib;
	int16_t peer;		/* send/recv: the peer's rank in the communicator; -1 none */
};

struct tl_off {
	uint64_t start, end, runq;	/* the last runq ns of [start, end) were runnable */
	uint32_t tid;
	int32_t syscall;		/* what it blocked in (x86-64 number); -1 unknown */
};

/* Does blocking in this syscall mean waiting for input (poll, select, epoll, futex)? */
bool steps__input_syscall(int32_t nr);

struct tl_io {
	uint64_t start, end;
	uint64_t bytes;
	uint32_t tid;
	uint8_t kind;		/* enum rs_fd_kind */
	bool worker;		/* made by a data-loader worker, not the main thread */
	bool write;		/* a write-side call (write, fsync...): what a checkpoint makes */
};

const char *steps__phase_name(enum phase ph);

/* The main thread's time inside the step's collectives: comm, and the time it was runnable
 * but not running there (sched_delay). A peer waiting for a straggler waits all of it. */
uint64_t steps__inside(const struct phases *ph);

/* Partition [start, end) of the main thread into phases. Each instant gets one phase, by
 * priority: runnable while off CPU inside a collective or a CUDA synchronize call
 * (sched_delay: CPU contention whatever the call), inside a collective (comm), inside a CUDA
 * synchronize call (gpu_wait: an entry of c with op RS_OP_GPU_SYNC), in a file syscall (io),
 * in a pipe/socket syscall (input_wait), runnable while off CPU (sched_delay), blocked in a
 * futex after comm_from when
 * non-zero (comm: waiting for background collectives, as DDP's finalize_backward does),
 * blocked in poll/select/epoll/futex (input_wait: the input pipeline's handoff), blocked for
 * another reason (other), else on CPU (compute). Intervals may overlap and stick out of the
 * step; the result always sums to end - start. */
void steps__partition(uint64_t start, uint64_t end, const struct tl_coll *c, int nc,
		      const struct tl_off *o, int no, const struct tl_io *io, int nio,
		      uint64_t comm_from, struct phases *out);

/* The same, also calling run() for each maximal interval of one phase, in time order. */
void steps__partition_cb(uint64_t start, uint64_t end, const struct tl_coll *c, int nc,
			 const struct tl_off *o, int no, const struct tl_io *io, int nio,
			 uint64_t comm_from, struct phases *out,
			 void (*run)(void *ctx, enum phase ph, uint64_t s, uint64_t e), void *ctx);

#endif /* RS_STEPS_H */
