// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: the Kubernetes readers (user/sys/k8s.c) on any bytes. The first byte picks
 * the input: a /proc/PID/cgroup text (a container writes its own cgroup names), or a pod list
 * as the pod watch reads it (the API server's answer, or whatever answers at --k8s-pods).
 * Checked beyond the sanitizers: a uid found is 36 bytes of lowercase hex and dashes, a
 * container id hex within its bound, every pod read has its strings terminated within their
 * fields, and a job id is "k8s:" and fits. Built with ASan and UBSan.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "k8s.h"

#define PODS 8

static char *exact_copy(const uint8_t *data, size_t len)
{
	char *copy = malloc(len ? len : 1);

	if (copy && len)
		memcpy(copy, data, len);
	return copy;
}

static void terminated(const char *s, size_t size)
{
	if (strnlen(s, size) == size)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct k8s_pod pods[PODS];
	char uid[K8S_UID_LEN + 1], cid[K8S_CID_MAX + 1], err[160], *text;
	size_t len = size ? size - 1 : 0, i;
	int n, k;

	if (!size)
		return 0;
	text = exact_copy(data + 1, len);	/* ASan sees a read past len */
	if (!text)
		return 0;
	if (data[0] & 1) {
		if (!k8s__cgroup_pod(text, len, uid, cid, sizeof(cid))) {
			if (strlen(uid) != K8S_UID_LEN)
				abort();
			for (i = 0; i < K8S_UID_LEN; i++)
				if (!strchr("0123456789abcdef-", uid[i]) || !uid[i])
					abort();
			terminated(cid, sizeof(cid));
			if (strspn(cid, "0123456789abcdefABCDEF") != strlen(cid))
				abort();
		}
	} else {
		n = k8s__parse_pods(text, len, pods, PODS, err, sizeof(err));
		if (n > PODS)
			abort();
		for (k = 0; k < n; k++) {
			terminated(pods[k].uid, sizeof(pods[k].uid));
			terminated(pods[k].ns, sizeof(pods[k].ns));
			terminated(pods[k].name, sizeof(pods[k].name));
			terminated(pods[k].job, sizeof(pods[k].job));
			if (pods[k].job[0] && strncmp(pods[k].job, "k8s:", 4))
				abort();
			if (k8s__find(pods, n, pods[k].uid) == NULL)
				abort();
		}
		if (n < 0)
			terminated(err, sizeof(err));
	}
	free(text);
	return 0;
}
