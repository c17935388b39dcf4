/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The hub's HTTP/1.1 client for node daemons: one request per connection, bounded in time and
 * size, for peers that may answer slowly, hugely or with garbage.
 */
#ifndef RS_HTTPC_H
#define RS_HTTPC_H

#include <stddef.h>
#include <sys/socket.h>

#define HTTPC_MAX_HEAD	(16 * 1024)	/* status line and headers */

struct httpc_resp {
	int status;
	char *body;		/* NUL-terminated (len excludes it) */
	size_t len;
};

/*
 * GET path from the daemon at sa (Host: host), with "Authorization: Bearer token" when token
 * is set. timeout_ms bounds the whole exchange: connecting, sending and every byte of the
 * answer. Returns 0 with any status in r->status, or -ETIMEDOUT, -EMSGSIZE (the answer is over
 * max_body bytes), -EPROTO (not an HTTP/1.x answer, or chunked) or the connect/read errno,
 * with a one-line reason in err. r is empty on failure; httpc__resp_free() it after success.
 */
int httpc__get(const struct sockaddr *sa, socklen_t salen, const char *host, const char *path,
	       const char *token, int timeout_ms, size_t max_body, struct httpc_resp *r,
	       char *err, size_t errn);
/* The same with another method (POST: an empty body). */
int httpc__request(const struct sockaddr *sa, socklen_t salen, const char *method,
		   const char *host, const char *path, const char *token, int timeout_ms,
		   size_t max_body, struct httpc_resp *r, char *err, size_t errn);
void httpc__resp_free(struct httpc_resp *r);

#endif /* RS_HTTPC_H */
