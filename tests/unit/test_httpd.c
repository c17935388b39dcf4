// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cmocka tests for user/serve/httpd.c over a real loopback socket: /healthz turns 503 when the loop
 * stops publishing, and a loopback listener refuses a Host that is not a loopback name; a
 * --listen on 0.0.0.0 without a token serves /metrics and /healthz only, the API goes to
 * --api-listen, which must be loopback without a token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "comms.h"
#include "httpd.h"
#include "job.h"
#include "json.h"
#include "report.h"

struct srv {
	struct httpd *h;
	unsigned int port;
};

static int setup(void **state)
{
	static struct srv s;
	char addr[32], err[256];
	int i;

	srand(time(NULL) ^ getpid());
	for (i = 0; i < 50; i++) {
		s.port = 20000 + rand() % 30000;
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", s.port);
		if (!httpd__start(addr, NULL, &s.h, err, sizeof(err)))
			break;
		s.h = NULL;
	}
	if (!s.h)
		return -1;
	*state = &s;
	return 0;
}

static int teardown(void **state)
{
	struct srv *s = *state;

	httpd__stop(s->h);
	return 0;
}

static char resp[65536];	/* the last answer, head and body */

/* GET path with the given Host header (NULL: the listener's own); returns the status code */
static int get(const struct srv *s, const char *path, const char *host)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(s->port) };
	char req[256];
	ssize_t n, got = 0;
	int fd, code = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (host)
		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
			 path, host);
	else
		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
			 "Connection: close\r\n\r\n", path, s->port);
	if (write(fd, req, strlen(req)) == (ssize_t)strlen(req)) {
		while ((size_t)got < sizeof(resp) - 1 &&
		       (n = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
			got += n;
		resp[got] = '\0';
		if (sscanf(resp, "HTTP/1.%*d %d", &code) != 1)
			code = -1;
	}
	close(fd);
	return code;
}

static void publish(const struct srv *s)
{
	httpd__publish(s->h, HTTPD_METRICS, "m 1\n", 4);
}

static void healthz__loop_stops_publishing__503_then_200(void **state)
{
	struct srv *s = *state;

	httpd__set_stale(s->h, 300000000ULL);	/* 0.3 s */
	publish(s);
	assert_int_equal(get(s, "/healthz", NULL), 200);
	usleep(500000);
	assert_int_equal(get(s, "/healthz", NULL), 503);	/* nothing published since */
	assert_int_equal(get(s, "/metrics", NULL), 200);	/* the last snapshot still served */
	publish(s);
	assert_int_equal(get(s, "/healthz", NULL), 200);
	httpd__set_stale(s->h, 0);
	usleep(400000);
	assert_int_equal(get(s, "/healthz", NULL), 200);	/* 0: never stale */
}

static void host__not_loopback__403(void **state)
{
	struct srv *s = *state;
	char host[64];

	publish(s);
	assert_int_equal(get(s, "/metrics", "rebound.example.com"), 403);
	snprintf(host, sizeof(host), "rebound.example.com:%u", s->port);
	assert_int_equal(get(s, "/metrics", host), 403);
	snprintf(host, sizeof(host), "localhost:%u", s->port);
	assert_int_equal(get(s, "/metrics", host), 200);
	assert_int_equal(get(s, "/metrics", "[::1]"), 200);
}

/* The body of the last answer. */
static const char *body(void)
{
	const char *b = strstr(resp, "\r\n\r\n");

	return b ? b + 4 : "";
}

static void add_steps(const struct srv *s, int from, int to)
{
	char line[64];
	int k;

	for (k = from; k <= to; k++) {
		snprintf(line, sizeof(line), "{\"step\":%d,\"rank\":%d}", k, k % 2);
		httpd__add_step(s->h, "j", k % 2, line, strlen(line));
	}
}

static void steps_since__cursor__each_line_once_in_order(void **state)
{
	struct srv *s = *state;
	char path[96];
	unsigned long long cursor, lost;

	add_steps(s, 1, 5);
	assert_int_equal(get(s, "/api/v1/steps?since=0&last=3", NULL), 200);
	assert_int_equal(sscanf(body(), "{\"cursor\":%llu,\"lost\":%llu", &cursor, &lost), 2);
	assert_int_equal(lost, 0);
	assert_non_null(strstr(body(), "\"more\":true"));
	assert_non_null(strstr(body(), "[{\"step\":1,\"rank\":1},{\"step\":2,\"rank\":0},"
				       "{\"step\":3,\"rank\":1}]"));
	/* the rest, then nothing new */
	snprintf(path, sizeof(path), "/api/v1/steps?since=%llu", cursor);
	assert_int_equal(get(s, path, NULL), 200);
	assert_non_null(strstr(body(), "\"more\":false,"));
	assert_non_null(strstr(body(), "\"steps\":[{\"step\":4,\"rank\":0},"
				       "{\"step\":5,\"rank\":1}]}"));
	assert_int_equal(sscanf(body(), "{\"cursor\":%llu", &cursor), 1);
	snprintf(path, sizeof(path), "/api/v1/steps?since=%llu", cursor);
	assert_int_equal(get(s, path, NULL), 200);
	assert_non_null(strstr(body(), "\"steps\":[]}"));
	/* one rank's: the cursor still moves past the others' */
	add_steps(s, 6, 9);
	snprintf(path, sizeof(path), "/api/v1/steps?since=%llu&rank=0", cursor);
	assert_int_equal(get(s, path, NULL), 200);
	assert_non_null(strstr(body(), "[{\"step\":6,\"rank\":0},{\"step\":8,\"rank\":0}]"));
	assert_int_equal(sscanf(body(), "{\"cursor\":%llu", &lost), 1);
	assert_int_equal(lost, cursor + 4);
	/* a cursor the ring has moved past: the lines lost are counted */
	add_steps(s, 10, 10 + HTTPD_STEPS_MAX);
	snprintf(path, sizeof(path), "/api/v1/steps?since=%llu&last=1", cursor);
	assert_int_equal(get(s, path, NULL), 200);
	assert_int_equal(sscanf(body(), "{\"cursor\":%llu,\"lost\":%llu", &cursor, &lost), 2);
	assert_int_equal(lost, 5);
	assert_int_equal(get(s, "/api/v1/steps?since=-1", NULL), 400);
	assert_int_equal(get(s, "/api/v1/steps?since=abc", NULL), 400);
	/* a cursor past the newest line (a puller of a server that restarted): the answer's
	 * cursor goes back to the newest, and the server's instance and clock come with it */
	snprintf(path, sizeof(path), "/api/v1/steps?since=%llu", cursor + 1000000);
	assert_int_equal(get(s, path, NULL), 200);
	assert_int_equal(sscanf(body(), "{\"cursor\":%llu", &lost), 1);
	assert_int_equal(lost, 5 + 4 + HTTPD_STEPS_MAX + 1);	/* every line added */
	assert_non_null(strstr(body(), "\"instance\":\""));
	assert_non_null(strstr(body(), "\"now_ns\":"));
}

/*
 * A daemon keeps its steps as the model made them and makes each line only when asked: the
 * line is the one report__step writes when the step is made, byte for byte, whatever the
 * communicators, their names (known or not) and the fields a step has.
 */
static void step_rec__made_when_asked__same_line_as_at_once(void **state)
{
	struct srv *s = *state;
	struct comm_use cu[3] = {};
	struct job_step st = {};
	struct json want;
	char path[96];
	int shape, i;

	json__init(&want);
	snprintf(cu[0].name, sizeof(cu[0].name), "nccl:0a1b2c3d4e5f6071/8");
	cu[0].hash = 0x1111;
	snprintf(cu[1].name, sizeof(cu[1].name), "mpi:\"world\"\\x");	/* escaped */
	cu[1].hash = 0x2222;
	cu[2].hash = 0x3333;	/* not a step's */
	for (shape = 0; shape < 4; shape++) {
		memset(&st, 0, sizeof(st));
		st.index = 41 + shape;
		st.start_ns = 1000000000ULL * (shape + 1);
		st.dur_ns = 25000000 + shape;
		st.ph.ns[PH_COMPUTE] = 20000000;
		st.ph.ns[PH_COMM] = 5000000;
		st.collectives = 25;
		st.inside_ns = 4900000;
		st.stage = -1;
		/* 0: no communicator; 1: one named; 2: a named one and an unnamed one; 3: all
		 * JOB_STEP_COMMS, ops past them, GPU and pipeline fields */
		st.ncomm = shape == 3 ? JOB_STEP_COMMS : shape;
		for (i = 0; i < st.ncomm; i++) {
			st.comm[i].comm = i == 0 ? 0x1111 : i == 1 ? 0x9999 : 0x2222 + i;
			st.comm[i].ops = 25 - i;
			st.comm[i].bytes = 65536ULL * (i + 1);
			st.comm[i].inside_ns = 1000 * (i + 1);
			if (i != 1) {
				st.comm[i].sig = 0xabcdef0123456789ULL + i;
				snprintf(st.comm[i].sig_ops, sizeof(st.comm[i].sig_ops),
					 "allreduce:%d broadcast:64", 65536 * (i + 1));
			}
		}
		if (shape == 3) {
			st.comm[3].comm = 0x2222;
			st.comm_other_ops = 7;
			st.has_gpu = true;
			st.gpu_busy_ns = 20000000;
			st.gpu_nccl_ns = 3000000;
			st.stages = 4;
			st.stage = 2;
			st.micro = 8;
			st.p2p_ns = 123;
		}
		json__reset(&want);
		report__step(&want, "jr", 3, 4242, &st, "period", 0.75 + shape, cu, 3);
		assert_int_equal(want.err, 0);
		httpd__add_step_rec(s->h, "jr", 3, 4242, &st, "period", 0.75 + shape, cu, 3);
		/* the step itself may change after: the kept copy does not */
		memset(&st, 0xff, sizeof(st));
		snprintf(path, sizeof(path), "/api/v1/steps?job=jr&last=1");
		assert_int_equal(get(s, path, NULL), 200);
		assert_int_equal(body()[0], '[');
		assert_int_equal(strlen(body()), want.len + 2);
		assert_memory_equal(body() + 1, want.buf, want.len);
		assert_string_equal(body() + 1 + want.len, "]");
	}
	/* among text lines (a hub's), newest first, each once */
	httpd__add_step(s->h, "jr", 1, "{\"t\":1}", 7);
	assert_int_equal(get(s, "/api/v1/steps?job=jr&last=2", NULL), 200);
	assert_int_equal(strncmp(body(), "[{\"t\":1},", 9), 0);
	assert_memory_equal(body() + 9, want.buf, want.len);
	json__free(&want);
}

/* method path on 127.0.0.1:port (a loopback client); returns the status code */
static int req(unsigned int port, const char *method, const char *path, const char *auth)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	char r[512];
	ssize_t n, got = 0;
	int fd, code = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(r, sizeof(r), "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n%s%s%s"
		 "Connection: close\r\n\r\n", method, path, port, auth ? "Authorization: " : "",
		 auth ? auth : "", auth ? "\r\n" : "");
	if (write(fd, r, strlen(r)) == (ssize_t)strlen(r)) {
		while ((size_t)got < sizeof(resp) - 1 &&
		       (n = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
			got += n;
		resp[got] = '\0';
		if (sscanf(resp, "HTTP/1.%*d %d", &code) != 1)
			code = -1;
	}
	close(fd);
	return code;
}

/* httpd__start on HOST:a free port; the port in *port. */
static struct httpd *start_on(const char *host, const char *token, unsigned int *port)
{
	struct httpd *h = NULL;
	char addr[64], err[256];
	int i;

	for (i = 0; i < 50 && !h; i++) {
		*port = 20000 + rand() % 30000;
		snprintf(addr, sizeof(addr), "%s:%u", host, *port);
		if (httpd__start(addr, token, &h, err, sizeof(err)))
			h = NULL;
	}
	return h;
}

/* httpd__listen_api on 127.0.0.1:a free port other than avoid; the port, or 0. */
static unsigned int api_on(struct httpd *h, unsigned int avoid)
{
	char addr[64], err[256];
	unsigned int port;
	int i;

	for (i = 0; i < 50; i++) {
		port = 20000 + rand() % 30000;
		if (port == avoid)
			continue;
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
		if (!httpd__listen_api(h, addr, err, sizeof(err)))
			return port;
	}
	return 0;
}

static const char *const api_paths[] = {
	"/api/v1/ranks", "/api/v1/diagnosis", "/api/v1/steps?last=1", "/api/v1/stacks", "/",
	"/api/v1/captures/x", "/api/v1/nothing",
};

static void listen__not_loopback_no_token__api_403_even_from_loopback(void **state)
{
	unsigned int port, api;
	struct httpd *h = start_on("0.0.0.0", NULL, &port);
	size_t i;

	assert_non_null(h);
	assert_false(httpd__api_on_listen(h));
	httpd__publish(h, HTTPD_METRICS, "m 1\n", 4);
	httpd__publish(h, HTTPD_RANKS, "[]", 2);
	assert_int_equal(req(port, "GET", "/metrics", NULL), 200);
	assert_int_equal(req(port, "GET", "/healthz", NULL), 200);
	/* this client is on loopback, and still refused: a proxy in the pod would be too */
	for (i = 0; i < sizeof(api_paths) / sizeof(api_paths[0]); i++)
		assert_int_equal(req(port, "GET", api_paths[i], NULL), 403);
	assert_non_null(strstr(body(), "--api-listen"));
	assert_int_equal(req(port, "POST", "/api/v1/capture?seconds=1", NULL), 403);
	assert_int_equal(req(port, "DELETE", "/api/v1/captures/x", NULL), 403);
	assert_int_equal(req(port, "GET", "/api/v1/ranks", "Bearer 0123456789abcdef0123"), 403);
	/* --api-listen on loopback: the API there, /metrics too; still nothing on --listen */
	api = api_on(h, port);
	assert_true(api > 0);
	assert_int_equal(req(api, "GET", "/api/v1/ranks", NULL), 200);
	assert_string_equal(body(), "[]");
	assert_int_equal(req(api, "GET", "/metrics", NULL), 200);
	assert_int_equal(req(api, "POST", "/api/v1/capture?seconds=1", NULL), 404);	/* no captures */
	assert_int_equal(req(port, "GET", "/api/v1/ranks", NULL), 403);
	httpd__stop(h);
}

static void listen_api__not_loopback_or_bad__refused_with_the_fix(void **state)
{
	unsigned int port;
	struct httpd *h = start_on("0.0.0.0", NULL, &port);
	char err[256];

	assert_non_null(h);
	assert_int_equal(httpd__listen_api(h, "0.0.0.0:1", err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "--token-file"));
	assert_non_null(strstr(err, "127.0.0.1"));
	assert_int_equal(httpd__listen_api(h, "[::]:1", err, sizeof(err)), -EPERM);
	assert_int_equal(httpd__listen_api(h, "nonsense", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "invalid --api-listen"));
	httpd__stop(h);
}

static void listen__not_loopback_with_token__api_served_to_loopback(void **state)
{
	static const char tok[] = "0123456789abcdef0123";
	unsigned int port, api;
	struct httpd *h = start_on("0.0.0.0", tok, &port);
	char err[256];

	assert_non_null(h);
	assert_true(httpd__api_on_listen(h));
	httpd__publish(h, HTTPD_RANKS, "[]", 2);
	/* as before --api-listen: loopback clients (kubectl port-forward) are served */
	assert_int_equal(req(port, "GET", "/api/v1/ranks", NULL), 200);
	/* with a token, --api-listen may be any address */
	api = api_on(h, port);
	assert_true(api > 0);
	assert_int_equal(httpd__listen_api(h, "0.0.0.0:1", err, sizeof(err)), -E2BIG);
	httpd__stop(h);
}

static void is_loopback__addresses(void **state)
{
	assert_int_equal(httpd__is_loopback("127.0.0.1:9464"), 1);
	assert_int_equal(httpd__is_loopback("127.1.2.3:9464"), 1);
	assert_int_equal(httpd__is_loopback("[::1]:9464"), 1);
	assert_int_equal(httpd__is_loopback("[::ffff:127.0.0.1]:9464"), 1);
	assert_int_equal(httpd__is_loopback("0.0.0.0:9464"), 0);
	assert_int_equal(httpd__is_loopback("[::]:9464"), 0);
	assert_int_equal(httpd__is_loopback("10.1.2.3:9464"), 0);
	assert_int_equal(httpd__is_loopback("127.0.0.1"), -EINVAL);
	assert_int_equal(httpd__is_loopback("127.0.0.1:0"), -EINVAL);
}

static void bearer__exact_token__only_that(void **state)
{
	static const char tok[] = "0123456789abcdef0123";

	assert_true(httpd__bearer_ok("Bearer 0123456789abcdef0123", tok));
	assert_false(httpd__bearer_ok(NULL, tok));
	assert_false(httpd__bearer_ok("0123456789abcdef0123", tok));		/* no scheme */
	assert_false(httpd__bearer_ok("bearer 0123456789abcdef0123", tok));
	assert_false(httpd__bearer_ok("Bearer 0123456789abcdef012", tok));	/* a prefix */
	assert_false(httpd__bearer_ok("Bearer 0123456789abcdef01234", tok));	/* longer */
	assert_false(httpd__bearer_ok("Bearer 0123456789abcdef0124", tok));
	assert_false(httpd__bearer_ok("Bearer ", tok));
	assert_false(httpd__bearer_ok("Bearer ", ""));				/* no token: never */
}

/* Write text to a new file of mode mode; its path in path. */
static void token_file(char *path, size_t n, const char *text, mode_t mode)
{
	int fd;

	snprintf(path, n, "/tmp/rankscope-token-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void load_token__modes_and_contents__refused_with_the_fix(void **state)
{
	char path[64], tok[HTTPD_TOKEN_MAX + 1], err[256];

	token_file(path, sizeof(path), "c0ffee00c0ffee00c0ffee00\n", 0600);
	assert_int_equal(httpd__load_token(path, tok, sizeof(tok), err, sizeof(err)), 0);
	assert_string_equal(tok, "c0ffee00c0ffee00c0ffee00");	/* the newline dropped */
	unlink(path);
	/* readable by others (a Secret's default 0644) */
	token_file(path, sizeof(path), "c0ffee00c0ffee00c0ffee00\n", 0644);
	assert_int_equal(httpd__load_token(path, tok, sizeof(tok), err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "chmod 600"));
	unlink(path);
	/* too short, two words, a NUL, empty */
	token_file(path, sizeof(path), "short\n", 0600);
	assert_int_equal(httpd__load_token(path, tok, sizeof(tok), err, sizeof(err)), -EINVAL);
	unlink(path);
	token_file(path, sizeof(path), "c0ffee00c0ffee00 c0ffee00\n", 0400);
	assert_int_equal(httpd__load_token(path, tok, sizeof(tok), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "printable"));
	unlink(path);
	token_file(path, sizeof(path), "", 0600);
	assert_int_equal(httpd__load_token(path, tok, sizeof(tok), err, sizeof(err)), -EINVAL);
	unlink(path);
	/* longer than the longest token */
	{
		char big[HTTPD_TOKEN_MAX + 40];

		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		token_file(path, sizeof(path), big, 0600);
		assert_int_equal(httpd__load_token(path, tok, sizeof(tok), err, sizeof(err)),
				 -EINVAL);
		unlink(path);
	}
	/* not a file, and no file */
	assert_int_equal(httpd__load_token("/tmp", tok, sizeof(tok), err, sizeof(err)), -EINVAL);
	assert_true(httpd__load_token("/nonexistent/token", tok, sizeof(tok), err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "cannot open"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(healthz__loop_stops_publishing__503_then_200),
		cmocka_unit_test(host__not_loopback__403),
		cmocka_unit_test(steps_since__cursor__each_line_once_in_order),
		cmocka_unit_test(step_rec__made_when_asked__same_line_as_at_once),
		cmocka_unit_test(bearer__exact_token__only_that),
		cmocka_unit_test(load_token__modes_and_contents__refused_with_the_fix),
		cmocka_unit_test(listen__not_loopback_no_token__api_403_even_from_loopback),
		cmocka_unit_test(listen_api__not_loopback_or_bad__refused_with_the_fix),
		cmocka_unit_test(listen__not_loopback_with_token__api_served_to_loopback),
		cmocka_unit_test(is_loopback__addresses),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
