// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The pod watch: see k8swatch.h. The thread owns the HTTP exchange; the loop reads a table. */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include "httpc.h"
#include "k8swatch.h"
#include "log.h"

#define WAIT_EVERY_NS	5000000000ULL	/* the loop waits for a poll once in this at most */

struct k8s_watch {
	struct sockaddr_storage sa;
	socklen_t salen;
	char host[300];			/* the Host header */
	char path[1024];
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t kick;		/* the loop wants a poll now, or stop */
	pthread_cond_t done;		/* a poll ended */
	bool kicked, stop;
	bool polling;			/* a poll is under way (its list may predate a new pod) */
	bool ok;			/* the last poll succeeded */
	unsigned long polls;		/* polls ended */
	unsigned long long waited_ns;	/* when the loop last waited */
	struct k8s_pod *pods;		/* the last good list, n of them */
	int n;
};

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* One poll: a new list in *pods (the caller frees it), its length, or -errno with err. */
static int poll_pods(struct k8s_watch *w, struct k8s_pod **pods, char *err, size_t errn)
{
	struct httpc_resp r;
	struct k8s_pod *p;
	int n;

	n = httpc__get((struct sockaddr *)&w->sa, w->salen, w->host, w->path, NULL,
		       K8S_TIMEOUT_MS, K8S_LIST_MAX, &r, err, errn);
	if (n)
		return n;
	if (r.status != 200) {
		snprintf(err, errn, "HTTP status %d", r.status);
		httpc__resp_free(&r);
		return -EPROTO;
	}
	p = calloc(K8S_PODS_MAX, sizeof(*p));
	if (!p) {
		httpc__resp_free(&r);
		snprintf(err, errn, "out of memory");
		return -ENOMEM;
	}
	n = k8s__parse_pods(r.body, r.len, p, K8S_PODS_MAX, err, errn);
	httpc__resp_free(&r);
	if (n < 0) {
		free(p);
		return n;
	}
	*pods = p;
	return n;
}

static void *run(void *arg)
{
	struct k8s_watch *w = arg;
	struct k8s_pod *pods, *old;
	struct timespec until;
	char err[160];
	bool was_ok = true;
	int n;

	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		w->kicked = false;
		w->polling = true;
		pthread_mutex_unlock(&w->mu);
		pods = NULL;
		n = poll_pods(w, &pods, err, sizeof(err));
		/* log a change of state once, not every poll */
		if (n < 0 && was_ok)
			pr_warn("daemon: failed to list pods from http://%s%s: %s; job ids come from "
				"the environ until it answers (is the kubectl proxy running?)", w->host,
				w->path, err);
		else if (n >= 0 && !was_ok)
			pr_info("daemon: pod list from http://%s answers again (%d pods)", w->host, n);
		was_ok = n >= 0;
		pthread_mutex_lock(&w->mu);
		if (n >= 0) {
			old = w->pods;
			w->pods = pods;
			w->n = n;
			free(old);
		}
		w->ok = n >= 0;
		w->polling = false;
		w->polls++;
		pthread_cond_broadcast(&w->done);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += K8S_POLL_S;
		while (!w->stop && !w->kicked)
			if (pthread_cond_timedwait(&w->kick, &w->mu, &until) == ETIMEDOUT)
				break;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* http://HOST[:PORT][/PATH]: host, port and path into w. */
static int parse_url(struct k8s_watch *w, const char *url, const char *node, char *port,
		     size_t portn, char *host, size_t hostn, char *err, size_t errn)
{
	const char *h, *end, *colon, *path;
	size_t hl;

	if (strncmp(url, "http://", 7)) {
		snprintf(err, errn, "'%s' is not an http:// URL (plain HTTP only: a kubectl proxy "
			 "on loopback)", url);
		return -EINVAL;
	}
	h = url + 7;
	path = h + strcspn(h, "/?#");
	if (*h == '[') {
		end = memchr(h, ']', (size_t)(path - h));
		if (!end) {
			snprintf(err, errn, "unbalanced [ in '%s'", url);
			return -EINVAL;
		}
		hl = (size_t)(end - h - 1);
		h++;
		colon = end[1] == ':' ? end + 1 : NULL;
	} else {
		colon = memchr(h, ':', (size_t)(path - h));
		hl = (size_t)((colon ? colon : path) - h);
	}
	if (!hl || hl >= hostn || (colon && (size_t)(path - colon - 1) >= portn) ||
	    (colon && path == colon + 1) || *path == '#' || *path == '?') {
		snprintf(err, errn, "no host[:port] in '%s'", url);
		return -EINVAL;
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (colon) {
		memcpy(port, colon + 1, (size_t)(path - colon - 1));
		port[path - colon - 1] = '\0';
	} else {
		snprintf(port, portn, "80");
	}
	snprintf(w->host, sizeof(w->host), "%.*s", (int)(path - (url + 7)), url + 7);
	if (!*path || !strcmp(path, "/"))
		snprintf(w->path, sizeof(w->path), "/api/v1/pods%s%s",
			 node && *node ? "?fieldSelector=spec.nodeName=" : "",
			 node && *node ? node : "");
	else if (strlen(path) < sizeof(w->path))
		snprintf(w->path, sizeof(w->path), "%s", path);
	else {
		snprintf(err, errn, "the path of '%.64s...' is too long", url);
		return -EINVAL;
	}
	if (strpbrk(w->path, " \r\n\t")) {
		snprintf(err, errn, "white space in '%s'", url);
		return -EINVAL;
	}
	return 0;
}

int k8s_watch__start(struct k8s_watch **wp, const char *url, const char *node, char *err,
		     size_t errn)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	char host[256], port[16];
	struct k8s_watch *w;
	int e;

	*wp = NULL;
	w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(err, errn, "out of memory");
		return -ENOMEM;
	}
	e = parse_url(w, url, node, port, sizeof(port), host, sizeof(host), err, errn);
	if (e)
		goto fail;
	e = getaddrinfo(host, port, &hints, &ai);
	if (e) {
		snprintf(err, errn, "'%s' does not resolve: %s", host, gai_strerror(e));
		e = -ENOENT;
		goto fail;
	}
	memcpy(&w->sa, ai->ai_addr, ai->ai_addrlen);
	w->salen = ai->ai_addrlen;
	freeaddrinfo(ai);
	w->ok = true;	/* until a poll says otherwise: the first is under way */
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->kick, NULL);
	pthread_cond_init(&w->done, NULL);
	e = -pthread_create(&w->thread, NULL, run, w);
	if (e) {
		snprintf(err, errn, "failed to start its thread: %s", strerror(-e));
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->kick);
		pthread_cond_destroy(&w->done);
		goto fail;
	}
	*wp = w;
	return 0;
fail:
	free(w);
	return e;
}

bool k8s_watch__pod(struct k8s_watch *w, const char *uid, int wait_ms, struct k8s_pod *out)
{
	const struct k8s_pod *p;
	struct timespec until;
	unsigned long polls;
	unsigned long long now = mono_ns();

	if (!w)
		return false;
	pthread_mutex_lock(&w->mu);
	p = k8s__find(w->pods, w->n, uid);
	if (!p) {
		w->kicked = true;
		pthread_cond_signal(&w->kick);
		/* a new pod: the list may predate it. Wait for the next, bounded, and not again
		 * soon: a pod the API never lists must not slow every attach */
		if (wait_ms > 0 && w->ok && now - w->waited_ns >= WAIT_EVERY_NS) {
			w->waited_ns = now;
			polls = w->polls + w->polling;	/* a poll under way: the one after it */
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
			until.tv_sec += wait_ms / 1000 + until.tv_nsec / 1000000000L;
			until.tv_nsec %= 1000000000L;
			while (w->polls <= polls)
				if (pthread_cond_timedwait(&w->done, &w->mu, &until) == ETIMEDOUT)
					break;
			p = k8s__find(w->pods, w->n, uid);
		}
	}
	if (p)
		*out = *p;
	pthread_mutex_unlock(&w->mu);
	return p != NULL;
}

void k8s_watch__stop(struct k8s_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->kick);
	pthread_mutex_unlock(&w->mu);
	/* a poll under way ends within its timeout */
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->kick);
	pthread_cond_destroy(&w->done);
	free(w->pods);
	free(w);
}
