// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A process's pod and the pod's job, from text the kernel and the API server give: see k8s.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "jsonp.h"
#include "k8s.h"
#include "procfs.h"

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* 36 bytes at s: 8-4-4-4-12 hex digits, '-' or '_' (systemd's escape of '-') between. Written
 * to out lowercase with dashes. */
static bool parse_uid(const char *s, char out[K8S_UID_LEN + 1])
{
	int i;

	for (i = 0; i < K8S_UID_LEN; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-' && s[i] != '_')
				return false;
			out[i] = '-';
		} else if (is_hex(s[i])) {
			out[i] = s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 'a' : s[i];
		} else {
			return false;
		}
	}
	out[K8S_UID_LEN] = '\0';
	return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* One path component: "pod<uid>" (cgroupfs) or "...-pod<uid_>.slice" / "pod<uid_>.slice"
 * (systemd). */
static bool pod_component(const char *c, size_t n, char uid[K8S_UID_LEN + 1])
{
	const char *p;

	if (n == 3 + K8S_UID_LEN && !memcmp(c, "pod", 3))
		return parse_uid(c + 3, uid);
	if (n < 3 + K8S_UID_LEN + 6 || !ends_with(c, n, ".slice"))
		return false;
	p = c + n - 6 - K8S_UID_LEN - 3;
	if (memcmp(p, "pod", 3) || (p > c && p[-1] != '-'))
		return false;
	return parse_uid(p + 3, uid);
}

/* The container's component after the pod's: "<hex>" (cgroupfs) or "cri-containerd-<hex>.scope",
 * "docker-<hex>.scope", "crio-<hex>.scope" (systemd). */
static void container_component(const char *c, size_t n, char *cid, size_t cidn)
{
	const char *dash;
	size_t i;

	if (ends_with(c, n, ".scope"))
		n -= 6;
	dash = memrchr(c, '-', n);
	if (dash) {
		n -= (size_t)(dash + 1 - c);
		c = dash + 1;
	}
	if (n < 12 || n > K8S_CID_MAX || n >= cidn)
		return;
	for (i = 0; i < n; i++)
		if (!is_hex(c[i]))
			return;
	memcpy(cid, c, n);
	cid[n] = '\0';
}

int k8s__cgroup_pod(const char *text, size_t len, char uid[K8S_UID_LEN + 1], char *cid,
		    size_t cidn)
{
	const char *path, *end, *c, *slash;
	size_t pos = 0, plen;

	if (cid && cidn)
		cid[0] = '\0';
	while (procfs__cgroup_next(text, len, &pos, &path, &plen)) {
		end = path + plen;
		for (c = path; c < end; c = slash + 1) {
			slash = memchr(c, '/', (size_t)(end - c));
			if (!slash)
				slash = end;
			if (!pod_component(c, (size_t)(slash - c), uid))
				continue;
			if (cid && cidn && slash < end) {
				const char *next = slash + 1, *s2 = memchr(next, '/', (size_t)(end - next));

				container_component(next, (size_t)((s2 ? s2 : end) - next), cid, cidn);
			}
			return 0;
		}
	}
	return -ENOENT;
}

/* A member's string, whole (no NUL inside) and 1..max-1 bytes of the given character class,
 * else NULL. */
enum cls { CLS_LABEL, CLS_NAME, CLS_KIND, CLS_UID };

static bool class_ok(char c, enum cls k)
{
	bool alnum_lower = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

	switch (k) {
	case CLS_LABEL: return alnum_lower || (c >= 'A' && c <= 'Z') || strchr("-_.", c);
	case CLS_NAME: return alnum_lower || c == '-' || c == '.';
	case CLS_KIND: return alnum_lower || (c >= 'A' && c <= 'Z');
	case CLS_UID: return is_hex(c) || c == '-';
	}
	return false;
}

static const char *member(const struct jsonp *d, const struct jsonp_val *obj, const char *key,
			  enum cls k, size_t max)
{
	const struct jsonp_val *v = jsonp__get(d, obj, key);
	size_t i;

	if (!v || v->type != JSONP_STR || !v->len || v->len >= max)
		return NULL;
	for (i = 0; i < v->len; i++)
		if (!v->str[i] || !class_ok(v->str[i], k))
			return NULL;
	return v->str;
}

static uint64_t fnv1a(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* "k8s:NS:KIND:NAME", or its hash when that does not fit (names run to 253 bytes) */
static void set_job(struct k8s_pod *p, const char *kind, const char *name)
{
	uint64_t h;
	int w;

	w = snprintf(p->job, sizeof(p->job), "k8s:%s:%s:%s", p->ns, kind, name);
	if (w > 0 && (size_t)w < sizeof(p->job))
		return;
	h = fnv1a(name, fnv1a(":", fnv1a(kind, fnv1a(":", fnv1a(p->ns, 0xcbf29ce484222325ULL)))));
	snprintf(p->job, sizeof(p->job), "k8s:%s:%s:h-%016llx", p->ns, kind,
		 (unsigned long long)h);
}

/* The pod's controller: its ownerReferences entry with controller true. */
static const struct jsonp_val *controller(const struct jsonp *d, const struct jsonp_val *md)
{
	const struct jsonp_val *refs = jsonp__get(d, md, "ownerReferences"), *r, *c;

	if (!refs || refs->type != JSONP_ARR)
		return NULL;
	for (r = jsonp__first(d, refs); r; r = jsonp__next(d, r)) {
		c = jsonp__get(d, r, "controller");
		if (r->type == JSONP_OBJ && c && c->type == JSONP_BOOL && c->b)
			return r;
	}
	return NULL;
}

static bool read_pod(const struct jsonp *d, const struct jsonp_val *item, struct k8s_pod *p)
{
	const struct jsonp_val *md = jsonp__get(d, item, "metadata"), *labels, *ctl;
	const char *uid, *ns, *name, *v, *okind = NULL, *oname = NULL;

	memset(p, 0, sizeof(*p));
	if (!md || md->type != JSONP_OBJ)
		return false;
	uid = member(d, md, "uid", CLS_UID, K8S_UID_LEN + 1);
	ns = member(d, md, "namespace", CLS_NAME, sizeof(p->ns));
	name = member(d, md, "name", CLS_NAME, sizeof(p->name));
	if (!uid || strlen(uid) != K8S_UID_LEN || !parse_uid(uid, p->uid) || !ns || !name)
		return false;
	snprintf(p->ns, sizeof(p->ns), "%s", ns);
	snprintf(p->name, sizeof(p->name), "%s", name);
	ctl = controller(d, md);
	if (ctl) {
		okind = member(d, ctl, "kind", CLS_KIND, 64);
		oname = member(d, ctl, "name", CLS_NAME, 254);
		if (!okind || !oname)
			okind = oname = NULL;
	}
	labels = jsonp__get(d, md, "labels");
	if (labels && labels->type != JSONP_OBJ)
		labels = NULL;
	if ((v = member(d, labels, "jobset.sigs.k8s.io/jobset-name", CLS_LABEL, 64)))
		set_job(p, "JobSet", v);
	else if ((v = member(d, labels, "training.kubeflow.org/job-name", CLS_LABEL, 64)))
		set_job(p, oname && !strcmp(oname, v) ? okind : "TrainingJob", v);
	else if ((v = member(d, labels, "batch.kubernetes.io/job-name", CLS_LABEL, 64)) ||
		 (v = member(d, labels, "job-name", CLS_LABEL, 64)))
		set_job(p, "Job", v);
	else if (okind)
		set_job(p, okind, oname);
	return true;
}

int k8s__parse_pods(const char *text, size_t len, struct k8s_pod *pods, int max, char *err,
		    size_t errn)
{
	const struct jsonp_val *root, *items, *it;
	struct jsonp d = {};
	int n = 0, e;

	e = jsonp__parse(&d, text, len, K8S_LIST_VALUES);
	if (e) {
		snprintf(err, errn, "not JSON: %s", e == -ENOMEM ? "out of memory" : d.err);
		goto out;
	}
	root = jsonp__root(&d);
	items = jsonp__get(&d, root, "items");
	if (root->type != JSONP_OBJ || !items ||
	    (items->type != JSONP_ARR && items->type != JSONP_NULL)) {
		snprintf(err, errn, "not a pod list: no \"items\" array");
		e = -EINVAL;
		goto out;
	}
	for (it = jsonp__first(&d, items); it && n < max; it = jsonp__next(&d, it))
		if (it->type == JSONP_OBJ && read_pod(&d, it, &pods[n]))
			n++;
out:
	jsonp__free(&d);
	return e ? e : n;
}

const struct k8s_pod *k8s__find(const struct k8s_pod *pods, int n, const char *uid)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(pods[i].uid, uid))
			return &pods[i];
	return NULL;
}
