// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The CUPTI socket: accept, identify by peer credentials, decode, ask for data. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "cupti_rx.h"
#include "log.h"

struct conn {
	int fd;			/* -1: free */
	pid_t pid;
	bool enabled;
	uint32_t state;		/* the library's last status; 0 before any */
	struct gpu_names *names;
};

struct cupti_rx {
	char path[108];
	int lfd;
	int ep;
	struct cupti_rx_ops ops;
	struct conn *c;		/* CUPTI_RX_CONNS_MAX */
	struct cupti_rx_stats st;
	void *buf;		/* one datagram */
};

int cupti_rx__open(const char *path, const struct cupti_rx_ops *ops, struct cupti_rx **out,
		   char *err, size_t n)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN };
	struct cupti_rx *rx;
	char dir[sizeof(sa.sun_path)], *slash;
	struct stat stb;
	mode_t old;
	int b;
	int i, e;

	if (!path || path[0] != '/' || strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, n, "invalid --cupti-socket '%s': give an absolute path under %zu bytes",
			 path ? path : "", sizeof(sa.sun_path));
		return -EINVAL;
	}
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return -ENOMEM;
	rx->lfd = rx->ep = -1;
	rx->ops = *ops;
	snprintf(rx->path, sizeof(rx->path), "%s", path);
	rx->c = calloc(CUPTI_RX_CONNS_MAX, sizeof(*rx->c));
	rx->buf = malloc(RSC_MSG_MAX);
	if (!rx->c || !rx->buf) {
		cupti_rx__close(rx);
		return -ENOMEM;
	}
	for (i = 0; i < CUPTI_RX_CONNS_MAX; i++)
		rx->c[i].fd = -1;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST) {
			e = -errno;
			snprintf(err, n, "failed to create %s for the CUPTI socket: %s", dir,
				 strerror(errno));
			goto fail;
		}
	}
	/* a socket left by a daemon that died (we hold the node's lock): anything else stays */
	if (!lstat(path, &stb)) {
		if (!S_ISSOCK(stb.st_mode)) {
			e = -EEXIST;
			snprintf(err, n, "%s exists and is not a socket; remove it or give another "
				 "--cupti-socket", path);
			goto fail;
		}
		unlink(path);
	}
	rx->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	strcpy(sa.sun_path, path);
	/* the socket is created 0666 (any rank's uid connects) by bind itself: a chmod by path
	 * afterwards would follow whatever a pod sharing the directory put there meanwhile */
	old = umask(0111);
	b = rx->lfd < 0 ? -1 : bind(rx->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (b || listen(rx->lfd, 128)) {
		e = -errno;
		snprintf(err, n, "failed to listen on the CUPTI socket %s: %s", path, strerror(errno));
		goto fail;
	}
	rx->ep = epoll_create1(EPOLL_CLOEXEC);
	ev.data.u32 = UINT32_MAX;
	if (rx->ep < 0 || epoll_ctl(rx->ep, EPOLL_CTL_ADD, rx->lfd, &ev)) {
		e = -errno;
		snprintf(err, n, "failed to poll the CUPTI socket: %s", strerror(errno));
		goto fail;
	}
	*out = rx;
	return 0;
fail:
	cupti_rx__close(rx);
	return e;
}

static void drop(struct cupti_rx *rx, struct conn *c)
{
	if (c->fd < 0)
		return;
	epoll_ctl(rx->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	gpu_names__free(c->names);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	rx->st.conns--;
}

void cupti_rx__close(struct cupti_rx *rx)
{
	int i;

	if (!rx)
		return;
	for (i = 0; rx->c && i < CUPTI_RX_CONNS_MAX; i++)
		drop(rx, &rx->c[i]);
	if (rx->lfd >= 0) {
		close(rx->lfd);
		unlink(rx->path);
	}
	if (rx->ep >= 0)
		close(rx->ep);
	free(rx->c);
	free(rx->buf);
	free(rx);
}

int cupti_rx__fd(const struct cupti_rx *rx)
{
	return rx->ep;
}

static void do_accept(struct cupti_rx *rx)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int fd, i, k;

	while ((fd = accept4(rx->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		for (i = 0; i < CUPTI_RX_CONNS_MAX && rx->c[i].fd >= 0; i++)
			;
		/* full: make room by closing one whose process is no rank of ours, so a flood of
		 * connections from elsewhere cannot keep a rank's library out */
		for (k = 0; i == CUPTI_RX_CONNS_MAX && k < CUPTI_RX_CONNS_MAX; k++) {
			if (rx->ops.wanted && rx->ops.wanted(rx->ops.ctx, rx->c[k].pid))
				continue;
			drop(rx, &rx->c[k]);
			rx->st.refused++;
			i = k;
		}
		if (i == CUPTI_RX_CONNS_MAX || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) ||
		    cr.pid <= 0) {
			rx->st.refused++;
			close(fd);
			continue;
		}
		ev.data.u32 = i;
		if (epoll_ctl(rx->ep, EPOLL_CTL_ADD, fd, &ev)) {
			rx->st.refused++;
			close(fd);
			continue;
		}
		rx->c[i] = (struct conn){ .fd = fd, .pid = cr.pid };
		rx->st.conns++;
	}
}

static void send_ctl(struct cupti_rx *rx, struct conn *c, bool on)
{
	struct rsc_enable m = {
		.h = { .magic = RSC_MAGIC, .version = RSC_VERSION,
		       .type = on ? RSC_ENABLE : RSC_DISABLE,
		       .len = on ? sizeof(m) : sizeof(m.h) },
		.kinds = (1u << RSC_REC_KERNEL) | (1u << RSC_REC_MEMCPY) | (1u << RSC_REC_MEMSET) |
			 (1u << RSC_REC_SYNC),
	};

	/* a full socket: try again at the next refresh */
	if (send(c->fd, &m, m.h.len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)m.h.len)
		c->enabled = on;
}

static bool wanted(struct cupti_rx *rx, const struct conn *c)
{
	return rx->ops.wanted && rx->ops.wanted(rx->ops.ctx, c->pid);
}

static void handle(struct cupti_rx *rx, struct conn *c, const struct gpu_msg *m)
{
	struct timespec ts;
	struct rsc_rec r;
	uint64_t late;
	uint32_t i;

	switch (m->type) {
	case RSC_STATUS: {
		bool changed = c->state != m->status.state;

		c->state = m->status.state;
		if (rx->ops.on_status)
			rx->ops.on_status(rx->ops.ctx, c->pid, &m->status, changed);
		/* a library that came back dormant (a restart) is asked again */
		if (m->status.state == RSC_ST_READY)
			c->enabled = false;
		break;
	}
	case RSC_NAME:
		/* names and records only from a rank's library (asked, or recording since
		 * before a daemon restart): a process that is no rank, or anyone with the
		 * socket, gets no memory here */
		if (!wanted(rx, c)) {
			rx->st.invalid++;
			break;
		}
		if (!c->names)
			c->names = calloc(1, sizeof(*c->names));
		if (c->names)
			gpu_names__set(c->names, m->name.id, m->name.text, m->name.len);
		break;
	case RSC_BATCH:
		if (!wanted(rx, c)) {
			rx->st.invalid++;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		/* a record cannot end in the future: a minute of slack for the calibration */
		late = (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec + 60000000000ULL;
		for (i = 0; i < m->batch.nrec; i++) {
			if (gpu_wire__rec(m, i, &r) || r.end_ns > late) {
				rx->st.invalid++;
				continue;
			}
			if (rx->ops.on_rec)
				rx->ops.on_rec(rx->ops.ctx, c->pid, c->names, &r);
		}
		break;
	default:
		break;
	}
}

static void do_read(struct cupti_rx *rx, struct conn *c)
{
	struct gpu_msg m;
	ssize_t n;
	int k;

	for (k = 0; k < CUPTI_RX_MSGS_PER_POLL && c->fd >= 0; k++) {
		n = recv(c->fd, rx->buf, RSC_MSG_MAX, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			drop(rx, c);
			return;
		}
		if (n > RSC_MSG_MAX || gpu_wire__decode(rx->buf, n, &m)) {
			rx->st.invalid++;
			continue;
		}
		rx->st.messages++;
		handle(rx, c, &m);
	}
}

void cupti_rx__poll(struct cupti_rx *rx)
{
	struct epoll_event evs[32];
	int n, i;

	n = epoll_wait(rx->ep, evs, 32, 0);
	for (i = 0; i < n; i++) {
		if (evs[i].data.u32 == UINT32_MAX)
			do_accept(rx);
		else if (evs[i].data.u32 < CUPTI_RX_CONNS_MAX)
			do_read(rx, &rx->c[evs[i].data.u32]);
	}
}

void cupti_rx__refresh(struct cupti_rx *rx)
{
	struct conn *c;
	bool want;
	int i;

	for (i = 0; i < CUPTI_RX_CONNS_MAX; i++) {
		c = &rx->c[i];
		/* taken_over: the library keeps off CUPTI until the other client is gone, and it
		 * can still be told to stop */
		if (c->fd < 0 || (c->state != RSC_ST_READY && c->state != RSC_ST_ACTIVE &&
				  c->state != RSC_ST_QUIET && c->state != RSC_ST_TAKEN_OVER))
			continue;
		want = rx->ops.wanted && rx->ops.wanted(rx->ops.ctx, c->pid);
		if (want && c->state == RSC_ST_READY && !c->enabled)
			send_ctl(rx, c, true);
		else if (!want && (c->enabled || c->state != RSC_ST_READY))
			send_ctl(rx, c, false);
	}
}

void cupti_rx__stats(const struct cupti_rx *rx, struct cupti_rx_stats *st)
{
	int i;

	*st = rx->st;
	memset(st->by_state, 0, sizeof(st->by_state));
	for (i = 0; i < CUPTI_RX_CONNS_MAX; i++)
		if (rx->c[i].fd >= 0 && rx->c[i].state < RSC_ST_MAX)
			st->by_state[rx->c[i].state]++;
}
