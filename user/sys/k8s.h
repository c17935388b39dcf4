/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Kubernetes without a client library: a process's pod from its /proc/PID/cgroup, and a pod
 * list (GET /api/v1/pods) read into pod -> namespace, name and the job that owns it. Both are
 * hostile text: everything is bounded, and pure (no I/O, no logging).
 */
#ifndef RS_K8S_H
#define RS_K8S_H

#include <stddef.h>

#define K8S_UID_LEN	36	/* 8-4-4-4-12 hex digits */
#define K8S_CID_MAX	64	/* a container id: 64 hex digits */
#define K8S_LIST_MAX	(8 << 20)	/* a node's pod list, bytes */
#define K8S_LIST_VALUES	(1 << 19)	/* JSON values in it */

struct k8s_pod {
	char uid[K8S_UID_LEN + 1];	/* lowercase, with dashes */
	char ns[64];			/* a DNS label */
	char name[254];			/* a DNS subdomain */
	char job[128];			/* "k8s:NS:KIND:NAME" of its job; "": owned by none */
};

/*
 * The pod of a process from its /proc/PID/cgroup text (len bytes, NUL or not): cgroup v1 or
 * v2, cgroupfs ("/kubepods/burstable/pod<uid>/<container>") or systemd
 * ("kubepods-burstable-pod<uid with _>.slice/cri-containerd-<container>.scope") paths,
 * anywhere in the path (a cgroup namespace shows "/../.." before them). uid gets the pod's
 * uid, lowercase with dashes; cid (cidn bytes, may be NULL) the container id or "".
 * Returns 0, or -ENOENT when no line names a pod.
 */
int k8s__cgroup_pod(const char *text, size_t len, char uid[K8S_UID_LEN + 1], char *cid,
		    size_t cidn);

/*
 * Read a PodList (or a Pod watch event's list: {"items":[...]}) of len bytes into at most
 * max pods. A pod's job, first that applies: the label jobset.sigs.k8s.io/jobset-name
 * (JobSet), training.kubeflow.org/job-name (its controller's kind when that is the owner,
 * else TrainingJob), batch.kubernetes.io/job-name or job-name (Job), then its controller
 * owner (ownerReferences with controller true) of any kind; a pod owned by none has none.
 * Pods with a malformed uid, namespace or name are left out. Returns how many were read
 * (pods past max are not), or -EINVAL with a one-line reason in err (not JSON, no items
 * array, too many values) or -ENOMEM.
 */
int k8s__parse_pods(const char *text, size_t len, struct k8s_pod *pods, int max, char *err,
		    size_t errn);

/* The pod with this uid among n, or NULL. */
const struct k8s_pod *k8s__find(const struct k8s_pod *pods, int n, const char *uid);

#endif /* RS_K8S_H */
