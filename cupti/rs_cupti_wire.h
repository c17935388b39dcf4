/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The wire between librankscope_cupti.so (in a training process) and the rankscope daemon:
 * one SOCK_SEQPACKET unix socket per process, one message per datagram, host byte order (both
 * ends run on the same node). Shared by cupti/ and user/; the daemon trusts none of it.
 *
 * library -> daemon: RSC_STATUS (first, then on every change), RSC_NAME (a kernel name, once
 *                    per id, before the batch that uses it), RSC_BATCH (activity records).
 * daemon -> library: RSC_ENABLE (start recording), RSC_DISABLE (back to dormant).
 *
 * Compatibility: a peer drops messages whose version it does not know. Structs only grow at
 * the end; a reader takes the fixed part it knows and checks len.
 */
#ifndef RS_CUPTI_WIRE_H
#define RS_CUPTI_WIRE_H

#include <stdint.h>

#define RSC_MAGIC		0x31435352u	/* "RSC1" */
#define RSC_VERSION		1
#define RSC_MSG_MAX		65536		/* bytes in one datagram */
#define RSC_NAME_MAX		1024		/* kernel names are cut to this (mangled C++) */
#define RSC_NAMES_MAX_WIRE	4096		/* name ids are 1..this */
#define RSC_SOCKET_ENV		"RANKSCOPE_CUPTI_SOCKET"
#define RSC_SOCKET_DEFAULT	"/run/rankscope/cupti/cupti.sock"

enum rsc_type {
	RSC_STATUS = 1,
	RSC_NAME,
	RSC_BATCH,
	RSC_ENABLE,
	RSC_DISABLE,
	RSC_TYPE_MAX,
};

struct rsc_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;		/* enum rsc_type */
	uint32_t len;		/* the whole message, this header included */
	uint32_t pad;
};
_Static_assert(sizeof(struct rsc_hdr) == 16, "rsc_hdr wire size");

/* What the library is doing; the daemon reports the dormant reasons as they are. */
enum rsc_state {
	RSC_ST_READY = 1,		/* CUPTI works, dormant until RSC_ENABLE */
	RSC_ST_ACTIVE,			/* recording */
	RSC_ST_NO_DRIVER,		/* dormant: no CUDA driver (libcuda missing, or no device) */
	RSC_ST_NO_CUPTI,		/* dormant: libcupti not found or unusable */
	RSC_ST_OTHER_SUBSCRIBER,	/* another CUPTI subscriber (Kineto, nsys): staying out */
	RSC_ST_CUPTI_VERSION,		/* a CUPTI whose records this build cannot read, or
					 * newer than the driver */
	RSC_ST_TAKEN_OVER,		/* another client (Kineto) took CUPTI: not calling it */
	RSC_ST_FAILED,			/* a CUPTI call failed (NOT_COMPATIBLE: confidential
					 * computing); the detail names it */
	RSC_ST_QUIET,			/* enabled, but no buffer back for 30 s: an idle GPU, or
					 * another client holds the buffers */
	RSC_ST_MAX,
};

struct rsc_status {
	struct rsc_hdr h;
	uint32_t pid;			/* as the process sees itself; the daemon uses peer creds */
	uint32_t state;			/* enum rsc_state */
	uint32_t cupti_version;		/* cuptiGetVersion(), 0 if none */
	uint32_t lib_version;		/* RSC_VERSION of the library */
	uint64_t records;		/* activity records read from CUPTI so far */
	uint64_t dropped_queue;		/* records dropped: our queue was full (daemon slow, absent) */
	uint64_t dropped_cupti;		/* records CUPTI dropped (no buffer to give it), or
					 * wrote into the spare buffer (CUPTI < 27) */
	uint64_t dropped_clock;		/* records dropped: a zero or reversed timestamp, or
					 * one outside every calibrated clock window */
	char detail[96];		/* NUL-terminated: the reason, for a person */
};
_Static_assert(sizeof(struct rsc_status) == 160, "rsc_status wire size");

struct rsc_name {
	struct rsc_hdr h;
	uint32_t id;			/* nonzero, unique per process */
	uint32_t len;			/* bytes of name that follow, no NUL, <= RSC_NAME_MAX */
	/* char name[len]; */
};
_Static_assert(sizeof(struct rsc_name) == 24, "rsc_name wire size");

enum rsc_rec_kind {
	RSC_REC_KERNEL = 1,
	RSC_REC_MEMCPY,
	RSC_REC_MEMSET,
	RSC_REC_SYNC,
	RSC_REC_API,		/* a runtime or driver API call (launch correlation) */
	RSC_REC_KIND_MAX,
};

/* RSC_REC_MEMCPY sub: the direction, from CUpti_ActivityMemcpyKind */
enum rsc_copy {
	RSC_COPY_OTHER,
	RSC_COPY_HTOD,
	RSC_COPY_DTOH,
	RSC_COPY_DTOD,
	RSC_COPY_PEER,
	RSC_COPY_MAX,
};

/* One activity, timestamps already on the daemon's clock: CLOCK_MONOTONIC ns. */
struct rsc_rec {
	uint8_t kind;		/* enum rsc_rec_kind */
	uint8_t sub;		/* memcpy: enum rsc_copy; sync: CUpti_ActivitySynchronizationType;
				 * api: 1 runtime, 2 driver */
	uint16_t device;
	uint32_t stream;
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t value;		/* kernel: name id; memcpy, memset: bytes; api: cbid */
	uint32_t correlation;
	uint32_t pad;
};
_Static_assert(sizeof(struct rsc_rec) == 40, "rsc_rec wire size");

struct rsc_batch {
	struct rsc_hdr h;
	uint32_t nrec;
	uint32_t pad;
	uint64_t calib_err_ns;	/* half the width of the clock calibration window */
	/* struct rsc_rec rec[nrec]; */
};
_Static_assert(sizeof(struct rsc_batch) == 32, "rsc_batch wire size");

#define RSC_BATCH_MAX ((RSC_MSG_MAX - sizeof(struct rsc_batch)) / sizeof(struct rsc_rec))

/* RSC_ENABLE: the record kinds to turn on, a mask of (1 << enum rsc_rec_kind). */
struct rsc_enable {
	struct rsc_hdr h;
	uint32_t kinds;
	uint32_t pad;
};
_Static_assert(sizeof(struct rsc_enable) == 24, "rsc_enable wire size");

#endif /* RS_CUPTI_WIRE_H */
