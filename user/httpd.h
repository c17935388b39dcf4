/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The HTTP endpoints (libmicrohttpd): they serve published snapshots and touch nothing else. */
#ifndef RS_HTTPD_H
#define RS_HTTPD_H

#include <stddef.h>
#include <stdint.h>

#define HTTPD_MAX_CONN		64	/* connections at once */
#define HTTPD_MAX_PER_IP	16
#define HTTPD_TIMEOUT_S		10	/* idle connections are closed after this */
#define HTTPD_MEM_LIMIT		(32 * 1024)	/* per connection: request line and headers */
#define HTTPD_STEPS_MAX		4096	/* step lines kept for /api/v1/steps */

enum httpd_doc {
	HTTPD_METRICS,		/* /metrics, text/plain; version=0.0.4 */
	HTTPD_RANKS,		/* /api/v1/ranks, a JSON array */
	HTTPD_DIAGNOSIS,	/* /api/v1/diagnosis, a JSON array: each job's latest verdict */
	HTTPD_DOC_MAX,
};

struct httpd;
struct capture;

/* The live view page (user/view.html, built in by user/view.c). */
const char *httpd__view(size_t *len);

/* Serve POST /api/v1/capture and GET /api/v1/captures/ID from c (NULL: 404). */
void httpd__set_capture(struct httpd *h, struct capture *c);

/* /healthz answers 503 once nothing was published for ns (0, the default: never). */
void httpd__set_stale(struct httpd *h, uint64_t ns);

/* Parse "HOST:PORT" (IPv4, or [IPv6]). Returns 0 or -EINVAL. */
int httpd__parse_listen(const char *s, void *sockaddr, unsigned int *len);

/* Listen on addr ("127.0.0.1:9464") in its own thread. Returns 0, or -errno with err filled. */
int httpd__start(const char *addr, struct httpd **out, char *err, size_t n);
void httpd__stop(struct httpd *h);

/* Replace what a document serves (copied under a lock). */
void httpd__publish(struct httpd *h, enum httpd_doc doc, const char *body, size_t len);

/* Add one step line (JSON object text) of a job's rank; the oldest go beyond HTTPD_STEPS_MAX. */
void httpd__add_step(struct httpd *h, const char *job, int rank, const char *json, size_t len);

#endif /* RS_HTTPD_H */
