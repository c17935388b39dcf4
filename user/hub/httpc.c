// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Bounded HTTP/1.1 requests for the hub: see httpc.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "httpc.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for ev on fd until the deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short ev, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int64_t left;
	int n;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, left > 1000 ? 1000 : (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* The value of header name in head (NUL-terminated, lines end in CRLF), or NULL. */
static const char *header(const char *head, const char *name)
{
	size_t n = strlen(name);
	const char *l = strstr(head, "\r\n");

	while (l && l[2] && !(l[2] == '\r' && l[3] == '\n')) {
		l += 2;
		if (!strncasecmp(l, name, n) && l[n] == ':') {
			l += n + 1;
			while (*l == ' ' || *l == '\t')
				l++;
			return l;
		}
		l = strstr(l, "\r\n");
	}
	return NULL;
}

int httpc__get(const struct sockaddr *sa, socklen_t salen, const char *host, const char *path,
	       const char *token, int timeout_ms, size_t max_body, struct httpc_resp *r,
	       char *err, size_t errn)
{
	return httpc__request(sa, salen, "GET", host, path, token, timeout_ms, max_body, r, err,
			      errn);
}

int httpc__request(const struct sockaddr *sa, socklen_t salen, const char *method,
		   const char *host, const char *path, const char *token, int timeout_ms,
		   size_t max_body, struct httpc_resp *r, char *err, size_t errn)
{
	int64_t deadline = now_ms() + timeout_ms;
	size_t cap = 4096, len = 0, sent = 0, qlen, hlen = 0, want = SIZE_MAX;
	char *buf = NULL, *q = NULL, *nb;
	const char *cl, *te, *eoh;
	int fd, e = 0, ret;
	socklen_t el = sizeof(e);
	ssize_t n;

	memset(r, 0, sizeof(*r));
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errn, "socket: %s", strerror(-ret));
		return ret;
	}
	if (connect(fd, sa, salen) && errno != EINPROGRESS) {
		ret = -errno;
		snprintf(err, errn, "connect: %s", strerror(-ret));
		goto out;
	}
	ret = wait_fd(fd, POLLOUT, deadline);
	if (!ret && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el))
		e = errno;
	if (ret || e) {
		ret = ret ? ret : -e;
		snprintf(err, errn, "connect: %s", ret == -ETIMEDOUT ?
			 "no answer within the timeout" : strerror(-ret));
		goto out;
	}
	qlen = (size_t)asprintf(&q, "%s %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n"
				"Connection: close\r\n%s%s%s%s\r\n", method, path, host,
				strcmp(method, "GET") ? "Content-Length: 0\r\n" : "",
				token ? "Authorization: Bearer " : "", token ? token : "",
				token ? "\r\n" : "");
	if (!q || qlen == (size_t)-1) {
		q = NULL;
		ret = -ENOMEM;
		snprintf(err, errn, "out of memory");
		goto out;
	}
	while (sent < qlen) {
		n = send(fd, q + sent, qlen - sent, MSG_NOSIGNAL);
		if (n > 0) {
			sent += n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			ret = -errno;
			snprintf(err, errn, "send: %s", strerror(-ret));
			goto out;
		}
		ret = wait_fd(fd, POLLOUT, deadline);
		if (ret) {
			snprintf(err, errn, "send: %s", strerror(-ret));
			goto out;
		}
	}
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		snprintf(err, errn, "out of memory");
		goto out;
	}
	for (;;) {
		if (hlen && len - hlen >= want)
			break;
		if (len + 1 >= cap) {
			size_t ncap = cap * 2;

			if (ncap > HTTPC_MAX_HEAD + max_body + 1)
				ncap = HTTPC_MAX_HEAD + max_body + 1;
			if (ncap <= len + 1) {
				ret = -EMSGSIZE;
				snprintf(err, errn, "answer over %zu bytes", max_body);
				goto out;
			}
			nb = realloc(buf, ncap);
			if (!nb) {
				ret = -ENOMEM;
				snprintf(err, errn, "out of memory");
				goto out;
			}
			buf = nb;
			cap = ncap;
		}
		n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR) {
				ret = -errno;
				snprintf(err, errn, "read: %s", strerror(-ret));
				goto out;
			}
			ret = wait_fd(fd, POLLIN, deadline);
			if (ret) {
				snprintf(err, errn, "read: %s", ret == -ETIMEDOUT ?
					 "the answer did not end within the timeout" :
					 strerror(-ret));
				goto out;
			}
			continue;
		}
		len += n;
		buf[len] = 0;
		if (hlen)
			continue;
		eoh = memmem(buf, len, "\r\n\r\n", 4);
		if (!eoh) {
			if (len > HTTPC_MAX_HEAD) {
				ret = -EPROTO;
				snprintf(err, errn, "headers over %d bytes", HTTPC_MAX_HEAD);
				goto out;
			}
			continue;
		}
		hlen = eoh + 4 - buf;
		if (strncmp(buf, "HTTP/1.", 7) || len < 12 || buf[8] != ' ' ||
		    sscanf(buf + 9, "%3d", &r->status) != 1 || r->status < 100 || r->status > 599) {
			ret = -EPROTO;
			snprintf(err, errn, "not an HTTP/1.x answer");
			goto out;
		}
		buf[hlen - 2] = 0;	/* headers alone, for header() */
		te = header(buf, "Transfer-Encoding");
		if (te && strncasecmp(te, "identity", 8)) {
			ret = -EPROTO;
			snprintf(err, errn, "a chunked answer (only Content-Length is read)");
			goto out;
		}
		cl = header(buf, "Content-Length");
		if (cl) {
			char *end;
			unsigned long long v = strtoull(cl, &end, 10);

			if (end == cl || (*end != '\r' && *end != ' ')) {
				ret = -EPROTO;
				snprintf(err, errn, "a bad Content-Length");
				goto out;
			}
			if (v > max_body) {
				ret = -EMSGSIZE;
				snprintf(err, errn, "answer of %llu bytes, over %zu", v, max_body);
				goto out;
			}
			want = v;
		}
		buf[hlen - 2] = '\r';
		if (len - hlen > max_body) {
			ret = -EMSGSIZE;
			snprintf(err, errn, "answer over %zu bytes", max_body);
			goto out;
		}
	}
	if (!hlen) {
		ret = -EPROTO;
		snprintf(err, errn, len ? "the answer ended inside its headers" : "an empty answer");
		goto out;
	}
	if (want != SIZE_MAX && len - hlen < want) {
		ret = -EPROTO;
		snprintf(err, errn, "the answer ended after %zu of %zu bytes", len - hlen, want);
		goto out;
	}
	if (want != SIZE_MAX)
		len = hlen + want;
	r->len = len - hlen;
	memmove(buf, buf + hlen, r->len);
	buf[r->len] = 0;
	r->body = buf;
	buf = NULL;
	ret = 0;
out:
	if (ret)
		r->status = 0;
	free(buf);
	free(q);
	close(fd);
	return ret;
}

void httpc__resp_free(struct httpc_resp *r)
{
	if (!r)
		return;
	free(r->body);
	r->body = NULL;
	r->len = 0;
}
