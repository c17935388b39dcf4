/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The daemon's decoder for messages from librankscope_cupti.so: every byte is hostile. */
#ifndef RS_GPU_WIRE_H
#define RS_GPU_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include "rs_cupti_wire.h"

struct gpu_msg {
	enum rsc_type type;
	union {
		struct rsc_status status;	/* detail NUL-terminated, state in range */
		struct {
			uint32_t id;
			uint32_t len;
			const char *text;	/* points into the buffer, len bytes, no NUL */
		} name;
		struct {
			uint32_t nrec;
			uint64_t calib_err_ns;
			const struct rsc_rec *rec;	/* into the buffer; see gpu_wire__rec() */
		} batch;
	};
};

/* Decode one datagram of len bytes. Returns 0, or -EINVAL (malformed: bad magic, length,
 * count, state or kind), -EPROTO (another wire version), -ENOTSUP (a type the daemon does not
 * take from a library). */
int gpu_wire__decode(const void *buf, size_t len, struct gpu_msg *m);

#define GPU_WIRE_REC_MAX_NS	3600000000000ULL	/* a longer record is refused */

/* Record i of a decoded batch, copied out (the buffer need not be aligned). Returns 0, or
 * -EINVAL for a record whose kind or times are wrong, or that lasts over an hour (skip it). */
int gpu_wire__rec(const struct gpu_msg *m, uint32_t i, struct rsc_rec *out);

const char *gpu_wire__state_name(uint32_t state);

#endif /* RS_GPU_WIRE_H */
