// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Validating decoder for the CUPTI library's messages (fuzzed: tests/fuzz/fuzz_gpu_wire.c). */
#include <errno.h>
#include <string.h>
#include "gpu_wire.h"

int gpu_wire__decode(const void *buf, size_t len, struct gpu_msg *m)
{
	struct rsc_hdr h;
	struct rsc_name nm;
	struct rsc_batch b;

	memset(m, 0, sizeof(*m));
	if (!buf || len < sizeof(h) || len > RSC_MSG_MAX)
		return -EINVAL;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != RSC_MAGIC || h.len != len)
		return -EINVAL;
	if (h.version != RSC_VERSION)
		return -EPROTO;
	switch (h.type) {
	case RSC_STATUS:
		if (len < sizeof(m->status))
			return -EINVAL;
		memcpy(&m->status, buf, sizeof(m->status));
		if (!m->status.state || m->status.state >= RSC_ST_MAX)
			return -EINVAL;
		m->status.detail[sizeof(m->status.detail) - 1] = '\0';
		m->type = RSC_STATUS;
		return 0;
	case RSC_NAME:
		if (len < sizeof(nm))
			return -EINVAL;
		memcpy(&nm, buf, sizeof(nm));
		if (!nm.id || nm.len > RSC_NAME_MAX || nm.len != len - sizeof(nm))
			return -EINVAL;
		m->name.id = nm.id;
		m->name.len = nm.len;
		m->name.text = (const char *)buf + sizeof(nm);
		m->type = RSC_NAME;
		return 0;
	case RSC_BATCH:
		if (len < sizeof(b))
			return -EINVAL;
		memcpy(&b, buf, sizeof(b));
		if (b.nrec > RSC_BATCH_MAX || (len - sizeof(b)) / sizeof(struct rsc_rec) != b.nrec ||
		    (len - sizeof(b)) % sizeof(struct rsc_rec))
			return -EINVAL;
		m->batch.nrec = b.nrec;
		m->batch.calib_err_ns = b.calib_err_ns;
		m->batch.rec = (const struct rsc_rec *)((const char *)buf + sizeof(b));
		m->type = RSC_BATCH;
		return 0;
	case RSC_ENABLE:
	case RSC_DISABLE:
		return -ENOTSUP;	/* the daemon sends these, it does not take them */
	default:
		return -EINVAL;
	}
}

int gpu_wire__rec(const struct gpu_msg *m, uint32_t i, struct rsc_rec *out)
{
	if (m->type != RSC_BATCH || i >= m->batch.nrec)
		return -EINVAL;
	memcpy(out, (const char *)m->batch.rec + (size_t)i * sizeof(*out), sizeof(*out));
	/* an hour-long kernel is a forged or broken record: it would push the rank's GPU time
	 * (and arrival, completion) far off */
	if (!out->kind || out->kind >= RSC_REC_KIND_MAX || !out->start_ns ||
	    out->end_ns < out->start_ns || out->end_ns - out->start_ns > GPU_WIRE_REC_MAX_NS)
		return -EINVAL;
	if (out->kind == RSC_REC_MEMCPY && out->sub >= RSC_COPY_MAX)
		return -EINVAL;
	return 0;
}

const char *gpu_wire__state_name(uint32_t state)
{
	static const char *const names[RSC_ST_MAX] = {
		[RSC_ST_READY] = "ready", [RSC_ST_ACTIVE] = "active",
		[RSC_ST_NO_DRIVER] = "no_driver", [RSC_ST_NO_CUPTI] = "no_cupti",
		[RSC_ST_OTHER_SUBSCRIBER] = "other_subscriber",
		[RSC_ST_CUPTI_VERSION] = "cupti_version",
		[RSC_ST_TAKEN_OVER] = "taken_over", [RSC_ST_FAILED] = "failed",
		[RSC_ST_QUIET] = "quiet",
	};

	return state < RSC_ST_MAX && names[state] ? names[state] : "unknown";
}
