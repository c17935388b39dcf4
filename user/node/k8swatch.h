/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The daemon's optional read-only pod watch (--k8s-pods URL): this node's pod list, polled
 * over plain HTTP (a `kubectl proxy` on loopback) on a thread of its own, so the loop only
 * ever looks a pod up in the last list.
 */
#ifndef RS_K8SWATCH_H
#define RS_K8SWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include "k8s.h"

#define K8S_PODS_MAX		1024	/* pods kept from one list (a node runs 110 by default) */
#define K8S_POLL_S		10
#define K8S_TIMEOUT_MS		5000	/* one poll, connecting to the last byte */

struct k8s_watch;

/*
 * Parse url (http://HOST[:PORT][/PATH[?QUERY]]; a bare host gets
 * /api/v1/pods?fieldSelector=spec.nodeName=NODE), resolve it once and start polling.
 * Returns 0, or -EINVAL (not such a URL), -ENOENT (the host does not resolve) or -errno with
 * a one-line reason in err; *wp is NULL on failure.
 */
int k8s_watch__start(struct k8s_watch **wp, const char *url, const char *node, char *err,
		     size_t errn);

/*
 * Copy the pod with this uid from the last list into *out. A pod the list does not have yet
 * (it started since) asks for a poll now; while the polls succeed, the caller waits for it at
 * most wait_ms, once every few seconds at most. Returns true when the pod is known.
 */
bool k8s_watch__pod(struct k8s_watch *w, const char *uid, int wait_ms, struct k8s_pod *out);

/* Stop the thread and free w; NULL is a no-op. */
void k8s_watch__stop(struct k8s_watch *w);

#endif /* RS_K8SWATCH_H */
