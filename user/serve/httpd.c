// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* HTTP on libmicrohttpd: GET-only, loopback by default, bounded connections, one-line errors.
 * One or two listeners over the same documents: --listen, and --api-listen for the API when
 * --listen is on the network without a token (then --listen serves /metrics and /healthz only). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>
#include "capture.h"
#include "comms.h"
#include "httpd.h"
#include "job.h"
#include "json.h"
#include "log.h"
#include "procfs.h"
#include "report.h"

struct step_line {
	uint64_t seq;		/* 1, 2, ... in the order added: the since= cursor */
	char job[128];
	int rank;
	char *json;		/* the line; NULL: rec, to be made into one when asked for */
	size_t len;
	struct step_rec *rec;
};

/* A step as the model made it: names[] follows its st.ncomm communicators, each name's
 * text at its offset there (0: none). */
struct step_rec {
	pid_t pid;
	double confidence;
	const char *rule;	/* a string of static storage (job.c's rule names) */
	uint16_t name_at[JOB_STEP_COMMS];
	struct job_step st;	/* the last member: st.comm[] holds st.ncomm entries */
};

/* One listening address. The API (per-rank data, captures, the live view) is served on it only
 * when api is set; /metrics and /healthz always are. */
struct httpd_listener {
	struct httpd *h;
	struct MHD_Daemon *mhd;
	bool loopback;			/* listening on 127.0.0.0/8 or ::1 */
	bool api;
	unsigned int port;
};

#define HTTPD_LISTENERS	2	/* --listen, --api-listen */

struct httpd {
	struct httpd_listener ln[HTTPD_LISTENERS];
	int nln;
	pthread_mutex_t lock;
	char *doc[HTTPD_DOC_MAX];
	size_t doc_len[HTTPD_DOC_MAX];
	struct step_line *steps;	/* a ring of HTTPD_STEPS_MAX */
	size_t nsteps, head;
	uint64_t step_seq;		/* the last step line's seq */
	struct capture *cap;
	char token[HTTPD_TOKEN_MAX + 1];	/* "" : none; remote API requests are refused */
	uint64_t published_ns;		/* the last publish (or the start) */
	/* lazy documents: made by the loop only when a request waits for them */
	bool lazy[HTTPD_DOC_MAX];
	bool wanted[HTTPD_DOC_MAX];	/* a request waits for a fresh copy */
	uint64_t doc_ns[HTTPD_DOC_MAX];	/* when each was last published */
	pthread_cond_t fresh;		/* signalled at each publish, on CLOCK_MONOTONIC */
	uint64_t stale_ns;		/* /healthz fails after this without one; 0: never */
	uint64_t instance;	/* random at start: a puller tells a restarted server by it */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static enum MHD_Result serve_health(struct httpd *h, struct MHD_Connection *c);

/* On loopback, the Host a client names must be a loopback one: a page whose name was rebound
 * to 127.0.0.1 (DNS rebinding) names its own. */
static bool host_ok(const struct httpd_listener *l, struct MHD_Connection *c)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
	static const char *const names[] = { "127.0.0.1", "localhost", "[::1]" };
	char want[48];
	size_t i;

	if (!l->loopback || !host)
		return true;	/* not on loopback, or HTTP/1.0 without Host: not a browser */
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(want, sizeof(want), "%s:%u", names[i], l->port);
		if (!strcasecmp(host, want) || !strcasecmp(host, names[i]))
			return true;
	}
	return false;
}

int httpd__parse_listen(const char *s, void *sa, unsigned int *len)
{
	struct sockaddr_in *v4 = sa;
	struct sockaddr_in6 *v6 = sa;
	char host[64];
	const char *colon;
	long port;
	size_t hl;

	if (s[0] == '[') {
		colon = strstr(s, "]:");
		if (!colon)
			return -EINVAL;
		hl = colon - s - 1;
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hl);
		host[hl] = '\0';
		colon++;
	} else {
		colon = strrchr(s, ':');
		if (!colon || (size_t)(colon - s) >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, colon - s);
		host[colon - s] = '\0';
	}
	if (parse_long(colon + 1, 1, 65535, &port))
		return -EINVAL;
	memset(sa, 0, sizeof(struct sockaddr_in6));
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		*len = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		*len = sizeof(*v6);
		return 0;
	}
	return -EINVAL;
}

int httpd__resolve_listen(const char *s, void *sa, unsigned int *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL, *ai;
	const char *colon = strrchr(s, ':');
	char host[64], port[8];
	size_t hl, i;
	long p;

	if (!httpd__parse_listen(s, sa, len))
		return 0;
	/* a host name: letters, digits, '-' and '.', as the resolver takes them */
	if (!colon || s[0] == '[' || (hl = colon - s) == 0 || hl >= sizeof(host) ||
	    parse_long(colon + 1, 1, 65535, &p))
		return -EINVAL;
	for (i = 0; i < hl; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '.')
			return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	snprintf(port, sizeof(port), "%ld", p);
	if (getaddrinfo(host, port, &hints, &res) || !res)
		return -EINVAL;
	/* IPv4 first: "localhost" is ::1 before 127.0.0.1 here, and the default --listen is
	 * 127.0.0.1 */
	for (ai = res; ai && ai->ai_family != AF_INET; ai = ai->ai_next)
		;
	if (!ai)
		ai = res;
	if (ai->ai_addrlen > sizeof(struct sockaddr_in6)) {
		freeaddrinfo(res);
		return -EINVAL;
	}
	memset(sa, 0, sizeof(struct sockaddr_in6));
	memcpy(sa, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int code, const char *type,
			     const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, "Allow", "GET, HEAD, POST, DELETE");
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned int code, const char *msg)
{
	return reply(c, code, "text/plain; charset=utf-8", msg, strlen(msg));
}

static enum MHD_Result unauthorized(struct MHD_Connection *c)
{
	static const char msg[] = "unauthorized: send Authorization: Bearer TOKEN (the daemon's "
				  "--token-file)\n";
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
	MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
	ret = MHD_queue_response(c, MHD_HTTP_UNAUTHORIZED, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_doc(struct httpd *h, struct MHD_Connection *c, enum httpd_doc d,
				 const char *type)
{
	enum MHD_Result ret = MHD_NO;
	struct timespec until;
	uint64_t asked;
	bool have;

	pthread_mutex_lock(&h->lock);
	if (h->lazy[d]) {
		/* ask the loop for a copy made after now; it looks every drain (100 ms). A loop that
		 * does not answer in HTTPD_LAZY_WAIT_MS gets its last copy served (healthz tells) */
		asked = mono_ns();
		h->wanted[d] = true;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += HTTPD_LAZY_WAIT_MS % 1000 * 1000000L;
		until.tv_sec += HTTPD_LAZY_WAIT_MS / 1000 + until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		while (h->doc_ns[d] < asked &&
		       pthread_cond_timedwait(&h->fresh, &h->lock, &until) == 0)
			;
	}
	have = h->doc[d];
	if (have)
		ret = reply(c, MHD_HTTP_OK, type, h->doc[d], h->doc_len[d]);
	pthread_mutex_unlock(&h->lock);
	if (!have)
		return text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready: no data yet\n");
	return ret;
}

/*
 * GET /api/v1/stacks[?job=J][&rank=R][&classes=1]: the latest stacks of the ranks of each job
 * that makes no progress (a JSON array, empty while none is stuck), and each such job's
 * {"type":"stack_classes"} (not with rank; alone with classes). The document holds one object
 * a line, each starting {"type":"stacks","rank":R,"job":"J" or {"type":"stack_classes",
 * "job":"J": filtered line by line.
 */
static enum MHD_Result serve_stacks(struct httpd *h, struct MHD_Connection *c)
{
	const char *js = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "job");
	const char *rs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "rank");
	const char *cl = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "classes");
	static const char classes[] = "{\"type\":\"stack_classes\",";
	char want_rank[48] = "", want_job[300] = "";
	const char *p, *end, *nl;
	enum MHD_Result ret;
	size_t len = 0, n = 0;
	long rank = -1;
	char *out;

	if (rs && parse_long(rs, 0, 1 << 20, &rank))
		return text(c, MHD_HTTP_BAD_REQUEST, "bad request: rank must be a whole number\n");
	if (js && (strlen(js) > 128 || strpbrk(js, "\"\\")))
		return text(c, MHD_HTTP_BAD_REQUEST, "bad request: not a job id\n");
	if (rs)
		snprintf(want_rank, sizeof(want_rank), "{\"type\":\"stacks\",\"rank\":%ld,", rank);
	if (js)
		snprintf(want_job, sizeof(want_job), "\"job\":\"%s\"", js);
	pthread_mutex_lock(&h->lock);
	p = h->doc[HTTPD_STACKS];
	end = p ? p + h->doc_len[HTTPD_STACKS] : NULL;
	out = malloc((p ? h->doc_len[HTTPD_STACKS] : 0) + 4);
	if (!out) {
		pthread_mutex_unlock(&h->lock);
		return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	out[len++] = '[';
	for (; p && p < end; p = nl + 1) {
		size_t l;

		nl = memchr(p, '\n', end - p);
		if (!nl)
			nl = end;
		l = nl - p;
		if (l && p[l - 1] == ',')
			l--;
		if (l < 2 || p[0] != '{' || (rs && strncmp(p, want_rank, strlen(want_rank))) ||
		    (cl && strncmp(p, classes, sizeof(classes) - 1)) ||
		    (js && !memmem(p, l < 400 ? l : 400, want_job, strlen(want_job))))
			continue;
		if (n++)
			out[len++] = ',';
		memcpy(out + len, p, l);
		len += l;
	}
	pthread_mutex_unlock(&h->lock);
	out[len++] = ']';
	ret = reply(c, MHD_HTTP_OK, "application/json", out, len);
	free(out);
	return ret;
}

/* A kept step's line, as the daemon would have written it when the step was made. */
static void step_rec_line(struct json *b, const struct step_line *l)
{
	const struct step_rec *r = l->rec;
	const char *names = (const char *)&r->st.comm[r->st.ncomm];
	struct comm_use cu[JOB_STEP_COMMS];
	int i, n = 0;

	for (i = 0; i < r->st.ncomm; i++) {
		if (!r->name_at[i])
			continue;
		memset(&cu[n], 0, sizeof(cu[n]));
		cu[n].hash = r->st.comm[i].comm;
		snprintf(cu[n].name, sizeof(cu[n].name), "%s", names + r->name_at[i] - 1);
		n++;
	}
	report__step(b, l->job, l->rank, r->pid, &r->st, r->rule, r->confidence, cu, n);
}

/* /api/v1/steps?rank=R&last=N[&job=ID]: the last N step lines of rank R (all ranks without
 * rank) of job ID (every job without job). */
/*
 * GET /api/v1/steps[?job=J][&rank=R][&last=N]: the newest step lines first, at most N (100).
 * With since=CURSOR: the lines added after the cursor, oldest first, at most N (4096), as
 * {"cursor":C,"lost":L,"more":B,"steps":[...]}: C is the cursor for the next request, L the
 * lines after the old cursor that the ring dropped before they were asked for, B whether more
 * wait past C.
 */
static enum MHD_Result serve_steps(struct httpd *h, struct MHD_Connection *c)
{
	const char *js = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "job");
	const char *rs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "rank");
	const char *ls = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "last");
	const char *ss = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
	long rank = -1, last = ss ? HTTPD_STEPS_MAX : 100, since = 0;
	size_t i, k, n = 0, oldest, hlen = 0;
	uint64_t cursor, lost = 0;
	enum MHD_Result ret;
	bool more = false;
	char *out, head[192];	/* what precedes the lines, written once they are known */
	struct json b;

	if ((rs && parse_long(rs, 0, 1 << 20, &rank)) ||
	    (ls && parse_long(ls, 1, HTTPD_STEPS_MAX, &last)) ||
	    (ss && parse_long(ss, 0, 1L << 62, &since)))
		return text(c, MHD_HTTP_BAD_REQUEST,
			    "bad request: rank, last and since must be whole numbers (last 1..4096, "
			    "since a cursor from the last answer, 0 at first)\n");
	json__init(&b);
	json__arr_begin(&b);
	pthread_mutex_lock(&h->lock);
	/* a cursor past the newest line is another server's (this one restarted): answer with
	 * this one's newest, so the puller sees its cursor go back */
	cursor = (uint64_t)since > h->step_seq ? h->step_seq : (uint64_t)since;
	oldest = (h->head + HTTPD_STEPS_MAX - h->nsteps) % HTTPD_STEPS_MAX;
	if (ss && h->nsteps && h->steps[oldest].seq > (uint64_t)since + 1)
		lost = h->steps[oldest].seq - since - 1;
	for (i = 0; i < h->nsteps; i++) {
		const struct step_line *l;

		/* since: oldest first from the cursor; else newest first */
		k = ss ? (oldest + i) % HTTPD_STEPS_MAX :
			 (h->head + HTTPD_STEPS_MAX - 1 - i) % HTTPD_STEPS_MAX;
		l = &h->steps[k];
		if (ss && l->seq <= (uint64_t)since)
			continue;
		if (n == (size_t)last) {
			more = true;
			break;
		}
		cursor = l->seq;
		if ((rank >= 0 && l->rank != rank) || (js && strcmp(js, l->job)))
			continue;
		n++;
		if (l->json)
			json__raw(&b, l->json);
		else if (l->rec)
			step_rec_line(&b, l);
	}
	pthread_mutex_unlock(&h->lock);
	json__arr_end(&b);
	if (b.err) {
		json__free(&b);
		return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	if (ss)
		hlen = snprintf(head, sizeof(head), "{\"cursor\":%llu,\"lost\":%llu,\"more\":%s,"
				"\"instance\":\"%016llx\",\"now_ns\":%llu,\"steps\":",
				(unsigned long long)cursor, (unsigned long long)lost,
				more ? "true" : "false", (unsigned long long)h->instance,
				(unsigned long long)mono_ns());
	out = malloc(hlen + b.len + 1);
	if (!out) {
		json__free(&b);
		return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	memcpy(out, head, hlen);
	memcpy(out + hlen, b.buf, b.len);
	n = hlen + b.len;
	if (ss)
		out[n++] = '}';
	json__free(&b);
	ret = reply(c, MHD_HTTP_OK, "application/json", out, n);
	free(out);
	return ret;
}

static const char *arg(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

struct unknown_arg {
	const char *const *known;
	bool found;		/* an argument not in known */
	char name[40];		/* the first such, printable (may be "") */
};

static enum MHD_Result find_unknown(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct unknown_arg *u = cls;
	const char *const *k;

	(void)kind;
	(void)value;
	for (k = u->known; *k; k++)
		if (!strcmp(key, *k))
			return MHD_YES;
	/* printable, bounded: it goes back in the reply */
	u->found = true;
	snprintf(u->name, sizeof(u->name), "%.*s", (int)strcspn(key, "\r\n\"<>&"), key);
	return MHD_NO;
}

/* POST /api/v1/capture?seconds=N[&ranks=R,...][&align=step][&format=gz]: 202 and the id the
 * server made, 409 while one runs, 400 for a bad value or an argument it does not know (a
 * typo must not start a 10 s capture the caller did not ask for). The loop does the work. */
static enum MHD_Result post_capture(struct httpd *h, struct MHD_Connection *c)
{
	static const char *const known[] = { "seconds", "ranks", "align", "format", NULL };
	struct unknown_arg u = { .known = known };
	struct capture_req req;
	char id[CAPTURE_ID_MAX], err[160], body[128];
	int r;

	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, find_unknown, &u);
	if (u.found) {
		snprintf(err, sizeof(err), "bad request: unknown argument '%s'; the capture takes "
			 "seconds, ranks, align and format\n", u.name);
		return text(c, MHD_HTTP_BAD_REQUEST, err);
	}
	if (capture__parse(arg(c, "seconds"), arg(c, "ranks"), arg(c, "align"), arg(c, "format"),
			   &req, err, sizeof(err))) {
		strncat(err, "\n", sizeof(err) - strlen(err) - 1);
		return text(c, MHD_HTTP_BAD_REQUEST, err);
	}
	/* under the lock: the loop may take the capture away (at exit) */
	pthread_mutex_lock(&h->lock);
	r = h->cap ? capture__request(h->cap, &req, id, sizeof(id)) : -ENOENT;
	pthread_mutex_unlock(&h->lock);
	if (r == -ENOENT)
		return text(c, MHD_HTTP_NOT_FOUND, "not found: captures are off\n");
	if (r == -EBUSY)
		return text(c, MHD_HTTP_CONFLICT, "conflict: a capture is running; try again when it ends\n");
	snprintf(body, sizeof(body), "{\"id\":\"%s\",\"seconds\":%d,\"url\":\"/api/v1/captures/%s\"}",
		 id, req.seconds, id);
	return reply(c, MHD_HTTP_ACCEPTED, "application/json", body, strlen(body));
}

/* GET /api/v1/captures/ID: the file once written, 202 while it records, 500 when it failed. */
static enum MHD_Result get_capture(struct httpd *h, struct MHD_Connection *c, const char *id)
{
	struct capture_entry e;
	struct MHD_Response *r;
	enum MHD_Result ret;
	char body[256];
	bool gz = false;
	int fd, err;

	pthread_mutex_lock(&h->lock);
	err = h->cap ? capture__lookup(h->cap, id, &e, &fd, &gz) : -ENOTSUP;
	pthread_mutex_unlock(&h->lock);
	if (err == -ENOTSUP)
		return text(c, MHD_HTTP_NOT_FOUND, "not found: captures are off\n");
	if (err == -EINVAL)
		return text(c, MHD_HTTP_BAD_REQUEST, "bad request: not a capture id\n");
	if (err)
		return text(c, MHD_HTTP_NOT_FOUND, "not found: no such capture\n");
	if (e.state == CAPTURE_FAILED) {
		snprintf(body, sizeof(body), "capture failed: %s\n", e.err);
		return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, body);
	}
	if (fd < 0) {
		snprintf(body, sizeof(body), "{\"id\":\"%s\",\"state\":\"recording\"}", e.id);
		return reply(c, MHD_HTTP_ACCEPTED, "application/json", body, strlen(body));
	}
	r = MHD_create_response_from_fd(e.bytes, fd);	/* takes the fd */
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", gz ? "application/gzip" : "application/json");
	snprintf(body, sizeof(body), "attachment; filename=\"rankscope-%s.json%s\"", e.id,
		 gz ? ".gz" : "");
	MHD_add_response_header(r, "Content-Disposition", body);
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* DELETE /api/v1/captures/ID: 202 when the capture in progress will stop unwritten, 200
 * when a written or failed one is gone (its file too), 409 while it is being written. */
static enum MHD_Result delete_capture(struct httpd *h, struct MHD_Connection *c, const char *id)
{
	char body[128];
	int r;

	pthread_mutex_lock(&h->lock);
	r = h->cap ? capture__cancel(h->cap, id) : -ENOTSUP;
	pthread_mutex_unlock(&h->lock);
	if (r == -ENOTSUP)
		return text(c, MHD_HTTP_NOT_FOUND, "not found: captures are off\n");
	if (r == -EINVAL)
		return text(c, MHD_HTTP_BAD_REQUEST, "bad request: not a capture id\n");
	if (r == -ENOENT)
		return text(c, MHD_HTTP_NOT_FOUND, "not found: no such capture\n");
	if (r == -EBUSY)
		return text(c, MHD_HTTP_CONFLICT, "conflict: the capture is being written; DELETE "
			    "it when GET gives 200\n");
	snprintf(body, sizeof(body), "{\"id\":\"%s\",\"state\":\"%s\"}", id,
		 r ? "deleted" : "cancelled");
	return reply(c, r ? MHD_HTTP_OK : MHD_HTTP_ACCEPTED, "application/json", body,
		     strlen(body));
}

/* A browser's POST from another site's page (a CORS "simple request" reaches us): its Origin
 * names another host, or Sec-Fetch-Site says so. curl and rankscope send neither. */
static bool cross_site(struct MHD_Connection *c)
{
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
	const char *site = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site");
	const char *o;

	if (site && (!strcmp(site, "cross-site") || !strcmp(site, "same-site")))
		return true;
	if (!origin)
		return false;
	o = strstr(origin, "://");
	return !host || !o || strcmp(o + 3, host);
}

static enum MHD_Result serve_view(struct MHD_Connection *c)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len;
	const char *page = httpd__view(&len);

	r = MHD_create_response_from_buffer(len, (void *)page, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "Content-Security-Policy", "frame-ancestors 'none'");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

bool httpd__bearer_ok(const char *header, const char *token)
{
	size_t i, tlen = strlen(token), hlen;
	unsigned char d;

	if (!header || strncmp(header, "Bearer ", 7) || !tlen)
		return false;
	header += 7;
	hlen = strlen(header);
	/* over the expected token's length whatever was sent; a length difference counts too */
	d = hlen != tlen;
	for (i = 0; i < tlen; i++)
		d |= (unsigned char)(i < hlen ? header[i] : 0) ^ (unsigned char)token[i];
	return !d;
}

/* Did the request come from this host's loopback (127.0.0.0/8, ::1, or v4-mapped 127/8)? */
static bool from_loopback(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci;
	const struct sockaddr *sa;

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr)
		return false;
	sa = ci->client_addr;
	if (sa->sa_family == AF_INET)
		return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24 == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* Per-rank data, captures and the page that shows them: not for anyone on the network. */
/* Whether d was ever published (the hub's documents are not the daemon's). */
static bool has_doc(struct httpd *h, enum httpd_doc d)
{
	bool have;

	pthread_mutex_lock(&h->lock);
	have = h->doc[d] != NULL;
	pthread_mutex_unlock(&h->lock);
	return have;
}

static bool guarded(const char *url)
{
	return strcmp(url, "/metrics") && strcmp(url, "/healthz");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **ctx)
{
	struct httpd_listener *l = cls;
	struct httpd *h = l->h;

	if (*upload_size)
		return text(c, MHD_HTTP_BAD_REQUEST, "bad request: no body expected\n");
	/* whoever the client seems to be: a proxy in the pod (a mesh sidecar, kubectl
	 * port-forward) arrives from loopback too */
	if (guarded(url) && !l->api)
		return text(c, MHD_HTTP_FORBIDDEN,
			    "forbidden: this address is not loopback and there is no --token-file, "
			    "so it serves /metrics and /healthz only; use the --api-listen address "
			    "(loopback), or give --token-file\n");
	if (guarded(url) && !from_loopback(c)) {
		if (!h->token[0])
			return text(c, MHD_HTTP_FORBIDDEN,
				    "forbidden: per-rank data is served beyond loopback only with "
				    "--token-file (and a bearer token); /metrics and /healthz are open\n");
		if (!httpd__bearer_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
								  "Authorization"), h->token))
			return unauthorized(c);
	}
	if (!host_ok(l, c))
		return text(c, MHD_HTTP_FORBIDDEN,
			    "forbidden: the Host header names another host (DNS rebinding?); use "
			    "http://127.0.0.1:PORT\n");
	if (!strcmp(method, "POST") || !strcmp(method, "DELETE")) {
		if (cross_site(c))
			return text(c, MHD_HTTP_FORBIDDEN,
				    "forbidden: a cross-site request; POST or DELETE from the page "
				    "itself or a client without Origin\n");
		if (!strcmp(method, "POST") && !strcmp(url, "/api/v1/capture"))
			return post_capture(h, c);
		if (!strcmp(method, "DELETE") && !strncmp(url, "/api/v1/captures/", 17))
			return delete_capture(h, c, url + 17);
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
			    "method not allowed: POST only to /api/v1/capture, DELETE only to "
			    "/api/v1/captures/ID\n");
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: use GET\n");
	if (!strcmp(url, "/"))
		return serve_view(c);
	if (!strncmp(url, "/api/v1/captures/", 17))
		return get_capture(h, c, url + 17);
	if (!strcmp(url, "/metrics"))
		return serve_doc(h, c, HTTPD_METRICS, "text/plain; version=0.0.4; charset=utf-8");
	if (!strcmp(url, "/healthz"))
		return serve_health(h, c);
	if (!strcmp(url, "/api/v1/ranks"))
		return serve_doc(h, c, HTTPD_RANKS, "application/json");
	if (!strcmp(url, "/api/v1/diagnosis"))
		return serve_doc(h, c, HTTPD_DIAGNOSIS, "application/json");
	if (!strcmp(url, "/api/v1/steps"))
		return serve_steps(h, c);
	if (!strcmp(url, "/api/v1/nodes") && has_doc(h, HTTPD_NODES))
		return serve_doc(h, c, HTTPD_NODES, "application/json");
	if (!strcmp(url, "/api/v1/stacks"))
		return serve_stacks(h, c);
	if (!strcmp(url, "/api/v1/jobs") && has_doc(h, HTTPD_JOBS))
		return serve_doc(h, c, HTTPD_JOBS, "application/json");
	return text(c, MHD_HTTP_NOT_FOUND,
		    "not found: try /, /metrics, /healthz, /api/v1/ranks, /api/v1/steps, "
		    "/api/v1/diagnosis, /api/v1/stacks, /api/v1/jobs, /api/v1/capture, "
		    "/api/v1/captures/ID\n");
}

/* libmicrohttpd's own messages: with -v only. Its bind failure names port 0 (it never saw
 * ours, given as a sockaddr); the caller's line names the real address. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	if (log_verbosity >= LOG_DEBUG)
		vfprintf(stderr, fmt, ap);
}

/* Is sa a loopback address (127.0.0.0/8, ::1, v4-mapped 127/8)? Its port into *port. */
static bool sa_loopback(const struct sockaddr_in6 *sa, unsigned int *port)
{
	const struct sockaddr_in *v4 = (const struct sockaddr_in *)sa;

	if (sa->sin6_family == AF_INET) {
		*port = ntohs(v4->sin_port);
		return ntohl(v4->sin_addr.s_addr) >> 24 == 127;
	}
	*port = ntohs(sa->sin6_port);
	return IN6_IS_ADDR_LOOPBACK(&sa->sin6_addr) ||
	       (IN6_IS_ADDR_V4MAPPED(&sa->sin6_addr) && sa->sin6_addr.s6_addr[12] == 127);
}

int httpd__is_loopback(const char *addr)
{
	struct sockaddr_in6 sa;
	unsigned int salen, port;

	if (httpd__resolve_listen(addr, &sa, &salen))
		return -EINVAL;
	return sa_loopback(&sa, &port);
}

/*
 * Add a listener on addr (opt: the option that named it, for messages). api: serve the API
 * there; -1: when addr is loopback or there is a token. Returns 0, or -errno with err filled.
 */
static int listen_on(struct httpd *h, const char *addr, const char *opt, int api, char *err,
		     size_t n)
{
	struct httpd_listener *l = &h->ln[h->nln];
	struct sockaddr_in6 sa;
	unsigned int salen;

	if (h->nln == HTTPD_LISTENERS)
		return -E2BIG;
	if (httpd__resolve_listen(addr, &sa, &salen)) {
		snprintf(err, n, "invalid %s '%s': expected HOST:PORT, e.g. 127.0.0.1:9464", opt,
			 addr);
		return -EINVAL;
	}
	l->h = h;
	l->loopback = sa_loopback(&sa, &l->port);
	l->api = api < 0 ? l->loopback || h->token[0] : api;
	/* MHD_USE_AUTO: epoll on Linux. select() (the default) cannot take an fd past 1023, and
	 * the daemon may hold more: every CUPTI connection, and a perf-event fd per probe site
	 * before Linux 6.6; /metrics would then refuse every client */
	l->mhd = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
				  (sa.sin6_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, handle, l,
				  MHD_OPTION_SOCK_ADDR, &sa,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTPD_MAX_CONN,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)HTTPD_MAX_PER_IP,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTPD_TIMEOUT_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTPD_MEM_LIMIT,
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_END);
	if (!l->mhd) {
		snprintf(err, n, "failed to listen on %s (port in use, or not an address of this "
			 "host?); choose another with %s", addr, opt);
		return -EADDRINUSE;
	}
	h->nln++;
	return 0;
}

int httpd__start(const char *addr, const char *token, struct httpd **out, char *err, size_t n)
{
	struct httpd *h;
	int e;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->published_ns = mono_ns();
	if (getrandom(&h->instance, sizeof(h->instance), GRND_NONBLOCK) != sizeof(h->instance))
		h->instance = mono_ns() ^ (uint64_t)getpid() << 32;
	snprintf(h->token, sizeof(h->token), "%s", token ? token : "");
	h->steps = calloc(HTTPD_STEPS_MAX, sizeof(*h->steps));
	if (!h->steps) {
		free(h);
		return -ENOMEM;
	}
	pthread_mutex_init(&h->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&h->fresh, &ca);
		pthread_condattr_destroy(&ca);
	}
	e = listen_on(h, addr, "--listen", -1, err, n);
	if (e) {
		httpd__stop(h);
		return e;
	}
	*out = h;
	return 0;
}

int httpd__listen_api(struct httpd *h, const char *addr, char *err, size_t n)
{
	int lo = httpd__is_loopback(addr);

	if (lo < 0) {
		snprintf(err, n, "invalid --api-listen '%s': expected HOST:PORT, e.g. "
			 "127.0.0.1:9466", addr);
		return -EINVAL;
	}
	if (!lo && !h->token[0]) {
		snprintf(err, n, "--api-listen %s is not a loopback address, and the API (captures "
			 "included) is served beyond loopback only with a bearer token: give "
			 "--token-file, or listen on 127.0.0.1", addr);
		return -EPERM;
	}
	return listen_on(h, addr, "--api-listen", 1, err, n);
}

bool httpd__api_on_listen(const struct httpd *h)
{
	return h && h->nln && h->ln[0].api;
}

int httpd__load_token(const char *path, char *token, size_t n, char *err, size_t errn)
{
	char buf[HTTPD_TOKEN_MAX + 2];
	struct stat st;
	ssize_t len;
	size_t i;
	int fd;

	/* a Kubernetes Secret volume is a symlink to a file of its own: follow it, then check
	 * what was opened */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errn, "cannot open --token-file %s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errn, "--token-file %s is not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		snprintf(err, errn, "--token-file %s can be read by group or others (mode %04o): "
			 "chmod 600 it (Kubernetes: defaultMode: 0400 on the Secret volume)", path,
			 (unsigned int)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errn, "--token-file %s is owned by uid %u, not root: chown it", path,
			 (unsigned int)st.st_uid);
		close(fd);
		return -EPERM;
	}
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len < 0) {
		snprintf(err, errn, "cannot read --token-file %s: %s", path, strerror(errno));
		return -EIO;
	}
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	buf[len] = '\0';
	for (i = 0; i < (size_t)len; i++)
		if (buf[i] <= ' ' || buf[i] > '~')
			break;
	if (i < (size_t)len || len < HTTPD_TOKEN_MIN || len > HTTPD_TOKEN_MAX || (size_t)len >= n) {
		snprintf(err, errn, "--token-file %s: the token must be %d to %d printable "
			 "characters without spaces on one line, e.g. from `openssl rand -hex 32`",
			 path, HTTPD_TOKEN_MIN, HTTPD_TOKEN_MAX);
		return -EINVAL;
	}
	memcpy(token, buf, len + 1);
	return 0;
}

void httpd__stop(struct httpd *h)
{
	size_t i;
	int d;

	if (!h)
		return;
	for (d = 0; d < h->nln; d++)
		MHD_stop_daemon(h->ln[d].mhd);
	for (d = 0; d < HTTPD_DOC_MAX; d++)
		free(h->doc[d]);
	for (i = 0; h->steps && i < HTTPD_STEPS_MAX; i++) {
		free(h->steps[i].json);
		free(h->steps[i].rec);
	}
	free(h->steps);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->fresh);
	free(h);
}

void httpd__publish(struct httpd *h, enum httpd_doc d, const char *body, size_t len)
{
	char *copy;

	if (!h || d >= HTTPD_DOC_MAX)
		return;
	copy = malloc(len + 1);
	if (!copy)
		return;		/* keep serving the previous snapshot */
	memcpy(copy, body, len);
	copy[len] = '\0';
	pthread_mutex_lock(&h->lock);
	free(h->doc[d]);
	h->doc[d] = copy;
	h->doc_len[d] = len;
	h->published_ns = h->doc_ns[d] = mono_ns();
	pthread_cond_broadcast(&h->fresh);
	pthread_mutex_unlock(&h->lock);
}

void httpd__set_lazy(struct httpd *h, enum httpd_doc d)
{
	if (!h || d >= HTTPD_DOC_MAX)
		return;
	pthread_mutex_lock(&h->lock);
	h->lazy[d] = true;
	pthread_mutex_unlock(&h->lock);
}

bool httpd__wanted(struct httpd *h, enum httpd_doc d)
{
	bool w;

	if (!h || d >= HTTPD_DOC_MAX)
		return false;
	pthread_mutex_lock(&h->lock);
	w = h->wanted[d];
	h->wanted[d] = false;
	pthread_mutex_unlock(&h->lock);
	return w;
}

/* Put a line (its text, or the step to make it from) in the ring, over the oldest. */
static void add_line(struct httpd *h, const char *job, int rank, char *json, size_t len,
		     struct step_rec *rec)
{
	struct step_line *s;

	pthread_mutex_lock(&h->lock);
	s = &h->steps[h->head];
	free(s->json);
	free(s->rec);
	snprintf(s->job, sizeof(s->job), "%s", job);
	s->rank = rank;
	s->json = json;
	s->len = len;
	s->rec = rec;
	s->seq = ++h->step_seq;
	h->head = (h->head + 1) % HTTPD_STEPS_MAX;
	if (h->nsteps < HTTPD_STEPS_MAX)
		h->nsteps++;
	pthread_mutex_unlock(&h->lock);
}

void httpd__add_step(struct httpd *h, const char *job, int rank, const char *json, size_t len)
{
	char *copy;

	if (!h)
		return;
	copy = malloc(len + 1);
	if (!copy)
		return;
	memcpy(copy, json, len);
	copy[len] = '\0';
	add_line(h, job, rank, copy, len, NULL);
}

void httpd__add_step_rec(struct httpd *h, const char *job, int rank, pid_t pid,
			 const struct job_step *st, const char *rule, double confidence,
			 const struct comm_use *comms, int ncomms)
{
	size_t head = offsetof(struct step_rec, st) + offsetof(struct job_step, comm), at = 0;
	int nc = st->ncomm < 0 ? 0 : st->ncomm > JOB_STEP_COMMS ? JOB_STEP_COMMS : st->ncomm;
	const char *name[JOB_STEP_COMMS] = {};
	size_t nlen[JOB_STEP_COMMS] = {};
	struct step_rec *r;
	char *names;
	int i, k;

	if (!h)
		return;
	/* each communicator's name, as /api/v1/ranks names it, copied after the kept ones */
	for (i = 0; i < nc; i++) {
		for (k = 0; k < ncomms && comms[k].hash != st->comm[i].comm; k++)
			;
		if (k < ncomms) {
			name[i] = comms[k].name;
			nlen[i] = strnlen(comms[k].name, sizeof(comms[k].name) - 1);
			at += nlen[i] + 1;
		}
	}
	r = malloc(head + nc * sizeof(st->comm[0]) + at);
	if (!r)
		return;
	memcpy(&r->st, st, offsetof(struct job_step, comm) + nc * sizeof(st->comm[0]));
	r->st.ncomm = nc;
	r->pid = pid;
	r->rule = rule;
	r->confidence = confidence;
	names = (char *)&r->st.comm[nc];
	for (at = 0, i = 0; i < nc; i++) {
		r->name_at[i] = 0;
		if (!name[i])
			continue;
		memcpy(names + at, name[i], nlen[i]);
		names[at + nlen[i]] = '\0';
		r->name_at[i] = (uint16_t)(at + 1);
		at += nlen[i] + 1;
	}
	add_line(h, job, rank, NULL, 0, r);
}

void httpd__set_capture(struct httpd *h, struct capture *c)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->cap = c;
	pthread_mutex_unlock(&h->lock);
}

void httpd__set_stale(struct httpd *h, uint64_t ns)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stale_ns = ns;
	pthread_mutex_unlock(&h->lock);
}

/* /healthz: 200 while the loop publishes, 503 once it has not for stale_ns (a wedged loop
 * serves frozen series: a liveness probe should restart it, not call it healthy) */
static enum MHD_Result serve_health(struct httpd *h, struct MHD_Connection *c)
{
	uint64_t age, stale;
	char body[128];

	pthread_mutex_lock(&h->lock);
	age = mono_ns() - h->published_ns;
	stale = h->stale_ns;
	pthread_mutex_unlock(&h->lock);
	if (stale && age > stale) {
		snprintf(body, sizeof(body), "stale: nothing published for %.0f s; the event loop "
			 "is stuck (see the daemon's log)\n", age / 1e9);
		return text(c, MHD_HTTP_SERVICE_UNAVAILABLE, body);
	}
	return text(c, MHD_HTTP_OK, "ok\n");
}
