/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The HTTP endpoints (libmicrohttpd): they serve published snapshots and touch nothing else. */
#ifndef RS_HTTPD_H
#define RS_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTPD_MAX_CONN		64	/* connections at once */
#define HTTPD_MAX_PER_IP	16
#define HTTPD_TIMEOUT_S		10	/* idle connections are closed after this */
#define HTTPD_MEM_LIMIT		(32 * 1024)	/* per connection: request line and headers */
#define HTTPD_STEPS_MAX		4096	/* step lines kept for /api/v1/steps */
#define HTTPD_TOKEN_MIN		16	/* bytes: a bearer token shorter than this is refused */
#define HTTPD_TOKEN_MAX		512

enum httpd_doc {
	HTTPD_METRICS,		/* /metrics, text/plain; version=0.0.4 */
	HTTPD_RANKS,		/* /api/v1/ranks, a JSON array */
	HTTPD_DIAGNOSIS,	/* /api/v1/diagnosis, a JSON array: each job's latest verdict */
	HTTPD_NODES,		/* /api/v1/nodes (the hub's), a JSON array: each node daemon */
	HTTPD_STACKS,		/* /api/v1/stacks: "[\n", one stacks object a line, "]": the ranks
				 * of each job that makes no progress */
	HTTPD_JOBS,		/* /api/v1/jobs (the daemon's), a JSON array: each job's failures,
				 * recoveries and timeline */
	HTTPD_DOC_MAX,
};

struct httpd;
struct capture;
struct job_step;
struct comm_use;

/* The live view page (user/serve/view.html, built in by user/serve/view.c). */
const char *httpd__view(size_t *len);

/* Serve POST /api/v1/capture and GET /api/v1/captures/ID from c (NULL: 404). */
void httpd__set_capture(struct httpd *h, struct capture *c);

/* /healthz answers 503 once nothing was published for ns (0, the default: never). */
void httpd__set_stale(struct httpd *h, uint64_t ns);

/*
 * Read a bearer token from path: a regular file owned by root (or by us) that neither group
 * nor others can read, of HTTPD_TOKEN_MIN..HTTPD_TOKEN_MAX printable bytes (a trailing newline
 * is dropped). Returns 0, or -errno with a line that names the fix in err.
 */
int httpd__load_token(const char *path, char *token, size_t n, char *err, size_t errn);

/* Is "Bearer TOKEN" (an Authorization header's value, or NULL) this token? In time that does
 * not depend on where they differ. */
bool httpd__bearer_ok(const char *header, const char *token);

/* Parse "HOST:PORT" (IPv4, or [IPv6]). Returns 0 or -EINVAL. */
int httpd__parse_listen(const char *s, void *sockaddr, unsigned int *len);

/* httpd__parse_listen, or HOST a name to resolve ("localhost:9464"): the first address. */
int httpd__resolve_listen(const char *s, void *sa, unsigned int *len);

/* 1 if addr (HOST:PORT, as httpd__resolve_listen takes it) is a loopback address, 0 if not,
 * -EINVAL if it is not an address. */
int httpd__is_loopback(const char *addr);

/*
 * Listen on addr ("127.0.0.1:9464", --listen) in its own thread. Returns 0, or -errno with err
 * filled. /metrics and /healthz are open to all. The API (per-rank data, captures, the live
 * view: every other path) is served on addr only when addr is loopback or there is a token
 * (NULL or "": none); otherwise every client, even one from loopback, gets 403 for it (a proxy
 * in the pod arrives from loopback too). Where it is served, clients beyond loopback need
 * "Authorization: Bearer TOKEN".
 */
int httpd__start(const char *addr, const char *token, struct httpd **out, char *err, size_t n);

/*
 * Serve the API on addr too (--api-listen), with the same rules for clients beyond loopback.
 * addr must be loopback unless h has a token. Returns 0, or -EINVAL (not an address), -EPERM
 * (not loopback, no token) or -EADDRINUSE with err filled.
 */
int httpd__listen_api(struct httpd *h, const char *addr, char *err, size_t n);

/* Does --listen (httpd__start's addr) serve the API? */
bool httpd__api_on_listen(const struct httpd *h);
void httpd__stop(struct httpd *h);

/* Replace what a document serves (copied under a lock). */
void httpd__publish(struct httpd *h, enum httpd_doc doc, const char *body, size_t len);

/*
 * Make document d only on demand: a request for it waits (up to HTTPD_LAZY_WAIT_MS) for a copy
 * published after it arrived, and the loop asks httpd__wanted() whether to make one. Rendering
 * /metrics every tick for a scrape every 15 s or more was most of an idle daemon's CPU.
 */
#define HTTPD_LAZY_WAIT_MS	1000
void httpd__set_lazy(struct httpd *h, enum httpd_doc d);
/* Is a request waiting for a fresh d? Clears the flag: the caller publishes one. */
bool httpd__wanted(struct httpd *h, enum httpd_doc d);

/* Add one step line (JSON object text) of a job's rank; the oldest go beyond HTTPD_STEPS_MAX. */
void httpd__add_step(struct httpd *h, const char *job, int rank, const char *json, size_t len);
/* The same from the step itself, made into its line (report__step) only when a request asks
 * for it: most steps of a daemon nobody reads are never turned into text. */
void httpd__add_step_rec(struct httpd *h, const char *job, int rank, pid_t pid,
			 const struct job_step *st, const char *rule, double confidence,
			 const struct comm_use *comms, int ncomms);

#endif /* RS_HTTPD_H */
