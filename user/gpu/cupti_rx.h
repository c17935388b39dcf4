/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The daemon's end of the CUPTI socket: one SOCK_SEQPACKET connection per training process. */
#ifndef RS_CUPTI_RX_H
#define RS_CUPTI_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpu.h"
#include "gpu_wire.h"

#define CUPTI_RX_CONNS_MAX	1024	/* connections at once; more are closed at accept */
#define CUPTI_RX_MSGS_PER_POLL	64	/* per connection per poll: one process cannot starve */

struct cupti_rx_ops {
	/* Should pid's library record now (a rank we watch)? */
	bool (*wanted)(void *ctx, pid_t pid);
	/* A valid record, or a status, from the library in process pid (from SO_PEERCRED). */
	void (*on_rec)(void *ctx, pid_t pid, const struct gpu_names *names, const struct rsc_rec *r);
	void (*on_status)(void *ctx, pid_t pid, const struct rsc_status *st, bool changed);
	void *ctx;
};

struct cupti_rx_stats {
	uint64_t messages;	/* decoded */
	uint64_t invalid;	/* messages or records refused (names, records unasked) */
	uint64_t refused;	/* connections closed: over the limit, or to make room */
	unsigned int conns;
	unsigned int by_state[RSC_ST_MAX];	/* connections by their library's last state */
};

struct cupti_rx;

/* Listen on path (a stale socket there is replaced; the directory is created). The socket is
 * mode 0666: ranks run as any user. Returns 0, or -errno with err filled. */
int cupti_rx__open(const char *path, const struct cupti_rx_ops *ops, struct cupti_rx **out,
		   char *err, size_t n);
/* Remove the socket file and close every connection. */
void cupti_rx__close(struct cupti_rx *rx);
/* An fd that is readable when something waits (an epoll fd of its own). */
int cupti_rx__fd(const struct cupti_rx *rx);
/* Accept and read what is there, never waiting. */
void cupti_rx__poll(struct cupti_rx *rx);
/* Ask the libraries of wanted processes for data, and the others to stop. */
void cupti_rx__refresh(struct cupti_rx *rx);
void cupti_rx__stats(const struct cupti_rx *rx, struct cupti_rx_stats *st);

#endif /* RS_CUPTI_RX_H */
