/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* GPU activity per rank, from librankscope_cupti.so's records: kernel classes, copies, and the
 * library's own status. Kernel-free: unit-tested. */
#ifndef RS_GPU_H
#define RS_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "rs_cupti_wire.h"

enum gpu_kclass {
	GPU_K_COMPUTE,
	GPU_K_NCCL,
	GPU_K_MAX,
};

/* ncclDevKernel_* and ncclKernel_* are NCCL's, mangled (_Z..) or not; the rest is compute. */
enum gpu_kclass gpu__classify(const char *name, size_t len);
const char *gpu__kclass_name(enum gpu_kclass c);
const char *gpu__copy_name(unsigned int dir);

/* Kernel name ids of one library connection -> class. Ids the library never named are compute. */
struct gpu_names {
	uint8_t cls[RSC_NAMES_MAX_WIRE + 1];
	char *text[RSC_NAMES_MAX_WIRE + 1];	/* the first GPU_NAME_KEEP bytes, for captures */
	uint32_t named;		/* ids seen */
};

#define GPU_NAME_KEEP	160

void gpu_names__set(struct gpu_names *t, uint32_t id, const char *name, size_t len);
enum gpu_kclass gpu_names__class(const struct gpu_names *t, uint32_t id);
const char *gpu_names__text(const struct gpu_names *t, uint32_t id);	/* NULL: unnamed */
void gpu_names__free(struct gpu_names *t);

/* Per-rank cumulative numbers for /metrics. */
struct gpu_acc {
	uint64_t kernels[GPU_K_MAX];
	uint64_t kernel_ns[GPU_K_MAX];
	uint64_t copy_bytes[RSC_COPY_MAX];
	uint64_t copy_ns[RSC_COPY_MAX];
	uint64_t memset_bytes, memset_ns;
	uint64_t sync_ns;
	/* the library's status */
	bool have_status;
	uint32_t state;
	char detail[96];
	uint64_t received;		/* records the daemon took */
	uint64_t invalid;		/* records it refused */
	uint64_t lib_records, dropped_queue, dropped_cupti, dropped_clock;
	/* idle fraction over the last steps: a ring of (busy, wall) */
	uint64_t win_busy[8], win_wall[8];
	unsigned int win_n;
};

/* Account one record of a rank; returns the kernel class for kernels (GPU_K_MAX otherwise). */
enum gpu_kclass gpu__on_rec(struct gpu_acc *a, const struct gpu_names *names,
			    const struct rsc_rec *r);
/* Account one step's GPU busy time against its wall time. */
void gpu__on_step(struct gpu_acc *a, uint64_t busy_ns, uint64_t wall_ns);
/* 1 - busy / wall over the last steps; NaN before any. */
double gpu__idle_fraction(const struct gpu_acc *a);

#endif /* RS_GPU_H */
