// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* GPU activity per rank: classification and accumulation of CUPTI records. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "gpu.h"

static bool starts(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && !memcmp(s, prefix, n);
}

enum gpu_kclass gpu__classify(const char *name, size_t len)
{
	size_t i = 0;

	if (starts(name, len, "void ")) {	/* a demangled name */
		name += 5;
		len -= 5;
	}
	/* Itanium mangling: _Z, an optional N (nested), then the identifier's length */
	if (starts(name, len, "_Z")) {
		i = 2;
		if (i < len && name[i] == 'N')
			i++;
		while (i < len && name[i] >= '0' && name[i] <= '9')
			i++;
		name += i;
		len -= i;
	}
	if (starts(name, len, "ncclDevKernel_") || starts(name, len, "ncclKernel_"))
		return GPU_K_NCCL;
	return GPU_K_COMPUTE;
}

const char *gpu__kclass_name(enum gpu_kclass c)
{
	return c == GPU_K_NCCL ? "nccl" : "compute";
}

const char *gpu__copy_name(unsigned int dir)
{
	static const char *const names[RSC_COPY_MAX] = {
		[RSC_COPY_OTHER] = "other", [RSC_COPY_HTOD] = "htod", [RSC_COPY_DTOH] = "dtoh",
		[RSC_COPY_DTOD] = "dtod", [RSC_COPY_PEER] = "peer",
	};

	return dir < RSC_COPY_MAX ? names[dir] : "other";
}

void gpu_names__set(struct gpu_names *t, uint32_t id, const char *name, size_t len)
{
	if (!id || id > RSC_NAMES_MAX_WIRE)
		return;
	t->cls[id] = (uint8_t)gpu__classify(name, len);
	free(t->text[id]);
	t->text[id] = strndup(name, len < GPU_NAME_KEEP ? len : GPU_NAME_KEEP);
	t->named++;
}

const char *gpu_names__text(const struct gpu_names *t, uint32_t id)
{
	return t && id && id <= RSC_NAMES_MAX_WIRE ? t->text[id] : NULL;
}

void gpu_names__free(struct gpu_names *t)
{
	uint32_t i;

	if (!t)
		return;
	for (i = 0; i <= RSC_NAMES_MAX_WIRE; i++)
		free(t->text[i]);
	free(t);
}

enum gpu_kclass gpu_names__class(const struct gpu_names *t, uint32_t id)
{
	if (!t || !id || id > RSC_NAMES_MAX_WIRE)
		return GPU_K_COMPUTE;
	return (enum gpu_kclass)t->cls[id];
}

enum gpu_kclass gpu__on_rec(struct gpu_acc *a, const struct gpu_names *names,
			    const struct rsc_rec *r)
{
	uint64_t d = r->end_ns - r->start_ns;
	enum gpu_kclass c;

	a->received++;
	switch (r->kind) {
	case RSC_REC_KERNEL:
		c = gpu_names__class(names, (uint32_t)r->value);
		a->kernels[c]++;
		a->kernel_ns[c] += d;
		return c;
	case RSC_REC_MEMCPY:
		a->copy_bytes[r->sub < RSC_COPY_MAX ? r->sub : RSC_COPY_OTHER] += r->value;
		a->copy_ns[r->sub < RSC_COPY_MAX ? r->sub : RSC_COPY_OTHER] += d;
		break;
	case RSC_REC_MEMSET:
		a->memset_bytes += r->value;
		a->memset_ns += d;
		break;
	case RSC_REC_SYNC:
		a->sync_ns += d;
		break;
	default:
		break;
	}
	return GPU_K_MAX;
}

void gpu__on_step(struct gpu_acc *a, uint64_t busy_ns, uint64_t wall_ns)
{
	unsigned int i = a->win_n++ % 8;

	a->win_busy[i] = busy_ns < wall_ns ? busy_ns : wall_ns;
	a->win_wall[i] = wall_ns;
}

double gpu__idle_fraction(const struct gpu_acc *a)
{
	uint64_t busy = 0, wall = 0;
	unsigned int i, n = a->win_n < 8 ? a->win_n : 8;

	for (i = 0; i < n; i++) {
		busy += a->win_busy[i];
		wall += a->win_wall[i];
	}
	return wall ? 1.0 - (double)busy / wall : NAN;
}
