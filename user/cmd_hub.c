// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* `rankscope hub`: node daemons' step lines joined into one verdict per job, served as the
 * daemon serves its own. */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "cmd.h"
#include "httpc.h"
#include "httpd.h"
#include "hub.h"
#include "log.h"
#include "report.h"

#define HUB_PEERS_MAX	HUB_MAX_NODES	/* --peers items */
#define HUB_ADDRS_MAX	HUB_MAX_NODES	/* addresses they resolve to */
#define HUB_RESOLVE_NS	10000000000ULL	/* peers are resolved again this often */
#define HUB_BODY_MAX	(16u << 20)	/* an answer over this is refused */
#define HUB_FETCHERS	8		/* nodes asked at once */
#define HUB_RANKS_EVERY	10		/* /api/v1/ranks every this many rounds (and at first) */

struct peer {
	char host[256];		/* as given: a name or an address */
	char port[8];
};

struct addr {
	struct sockaddr_storage sa;
	socklen_t salen;
	char name[96];		/* ip:port, the node's name */
	char hosthdr[272];	/* Host: the peer item */
	int node;
	uint64_t cursor;
	bool live;		/* among the addresses the peers resolve to now */
	/* one round's answers, filled by a fetcher thread, fed by the loop */
	bool want_ranks, ranks_seen;
	struct httpc_resp resp[3];	/* ranks, steps, diagnosis */
	int err;
	char why[256];
	bool down_said;
	uint64_t bad_said_ns;
};

static struct {
	struct peer peers[HUB_PEERS_MAX];
	int npeers;
	struct addr addrs[HUB_ADDRS_MAX];
	int naddrs;
	const char *listen, *token_file;
	char token[HTTPD_TOKEN_MAX + 1];
	double interval_s, duration_s, hang_s;
	int timeout_ms, window;
	bool json;
	int next_fetch;		/* the next address a fetcher takes */
	struct hub *hub;
	struct httpd *httpd;
} g;

static void usage(FILE *f)
{
	fprintf(f,
"usage: rankscope hub --peers HOST:PORT[,HOST:PORT...] [options]\n"
"\n"
"Join node daemons (rankscope daemon --listen) into one verdict per job: their step lines\n"
"are pulled, joined by (job, rank), lined up without a shared clock, and judged as one job.\n"
"Served as a daemon serves its own: /metrics, /healthz, /api/v1/diagnosis, /api/v1/ranks\n"
"(each rank with its node), /api/v1/steps, /api/v1/nodes and the live view at /.\n"
"\n"
"  -P, --peers LIST       node daemons, host:port items; a name that resolves to several\n"
"                         addresses (a headless Service) means each of them, resolved again\n"
"                         every 10 s so nodes come and go\n"
"      --listen ADDR      HTTP address (default 127.0.0.1:9465)\n"
"      --token-file PATH  a bearer token: sent to the daemons, and required of this hub's\n"
"                         clients beyond loopback (root-owned, mode 0400 or 0600)\n"
"      --interval SEC     poll every SEC seconds (default 1)\n"
"      --timeout-ms MS    each request's whole time, connect to last byte (default 2000)\n"
"      --window N         steps a verdict is judged over (default 8)\n"
"      --hang-timeout S   no rank of a job finished a step for S seconds and one is stopped\n"
"                         or a zombie on its node: a hang on that rank (default 60)\n"
"      --json             verdicts as JSON lines on stdout (default: text)\n"
"      --duration SEC     stop after SEC seconds (default: until SIGINT/SIGTERM)\n"
"  -h, --help             this help\n"
"\n"
"A node that fails 3 polls in a row has its ranks marked unobserved (verdicts say so);\n"
"when it answers again, the hub resumes. Exit status: 0, 1 on a runtime error, 2 on bad\n"
"arguments.\n");
}

static int add_peers(const char *list)
{
	char *dup = strdup(list), *save = NULL, *item, *colon;

	if (!dup)
		return -ENOMEM;
	for (item = strtok_r(dup, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		struct peer *p;
		char *end;
		long port;

		if (g.npeers == HUB_PEERS_MAX) {
			pr_warn("hub: more than %d --peers items; give a name that resolves to "
				"several addresses instead", HUB_PEERS_MAX);
			goto bad;
		}
		colon = strrchr(item, ':');
		if (!colon || colon == item) {
			pr_warn("hub: bad --peers item '%s': want host:port (e.g. "
				"rankscope.rankscope.svc:9464)", item);
			goto bad;
		}
		*colon = 0;
		port = strtol(colon + 1, &end, 10);
		if (*end || port < 1 || port > 65535) {
			pr_warn("hub: bad port in --peers item '%s:%s': want 1..65535", item,
				colon + 1);
			goto bad;
		}
		p = &g.peers[g.npeers++];
		/* [v6]:port */
		if (item[0] == '[' && colon[-1] == ']') {
			colon[-1] = 0;
			item++;
		}
		snprintf(p->host, sizeof(p->host), "%s", item);
		snprintf(p->port, sizeof(p->port), "%ld", port);
	}
	free(dup);
	return g.npeers ? 0 : -EINVAL;
bad:
	free(dup);
	return -EINVAL;
}

static int parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "peers", required_argument, NULL, 'P' },
		{ "listen", required_argument, NULL, 'l' },
		{ "token-file", required_argument, NULL, 't' },
		{ "interval", required_argument, NULL, 'i' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "window", required_argument, NULL, 'w' },
		{ "hang-timeout", required_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	long n;
	int c;

	g.listen = "127.0.0.1:9465";
	g.interval_s = 1;
	g.timeout_ms = 2000;
	g.window = HUB_WINDOW;
	g.hang_s = HUB_HANG_NS / 1e9;
	while ((c = getopt_long(argc, argv, "P:h", opts, NULL)) != -1) {
		switch (c) {
		case 'P':
			if (add_peers(optarg))
				return -EINVAL;
			break;
		case 'l':
			g.listen = optarg;
			break;
		case 't':
			g.token_file = optarg;
			break;
		case 'i':
			if (cmd__parse_secs("hub", "--interval", optarg, 0.1, 60, &g.interval_s))
				return -EINVAL;
			break;
		case 'T':
			if (cmd__parse_num("hub", "--timeout-ms", optarg, 100, 60000, &n))
				return -EINVAL;
			g.timeout_ms = n;
			break;
		case 'w':
			if (cmd__parse_num("hub", "--window", optarg, 4, 64, &n))
				return -EINVAL;
			g.window = n;
			break;
		case 'H':
			if (cmd__parse_secs("hub", "--hang-timeout", optarg, 1, 86400, &g.hang_s))
				return -EINVAL;
			break;
		case 'j':
			g.json = true;
			break;
		case 'd':
			if (cmd__parse_secs("hub", "--duration", optarg, 0.001, 1e7, &g.duration_s))
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			pr_warn("hub: run 'rankscope hub --help' for the options");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		pr_warn("hub: unexpected argument '%s'; run 'rankscope hub --help'", argv[optind]);
		return -EINVAL;
	}
	if (!g.npeers) {
		pr_warn("hub: no --peers: name the node daemons, e.g. --peers "
			"rankscope.rankscope.svc:9464 (a headless Service) or host1:9464,host2:9464");
		return -EINVAL;
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void addr_name(const struct sockaddr *sa, char *buf, size_t n)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, n, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const void *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, n, "%s:%u", ip, ntohs(s4->sin_port));
	}
}

/* Every address of every peer; addresses no longer among them are let go. */
static void resolve(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	int i, k, rc, node;
	char name[96];

	for (k = 0; k < g.naddrs; k++)
		g.addrs[k].live = false;
	for (i = 0; i < g.npeers; i++) {
		rc = getaddrinfo(g.peers[i].host, g.peers[i].port, &hints, &res);
		if (rc) {
			pr_warn("hub: failed to resolve peer '%s': %s; is the name right (a headless "
				"Service: its DaemonSet pods ready)?", g.peers[i].host,
				gai_strerror(rc));
			continue;
		}
		for (ai = res; ai; ai = ai->ai_next) {
			if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
				continue;
			addr_name(ai->ai_addr, name, sizeof(name));
			for (k = 0; k < g.naddrs && strcmp(g.addrs[k].name, name); k++)
				;
			if (k == g.naddrs) {
				if (g.naddrs == HUB_ADDRS_MAX)
					break;
				node = hub__node(g.hub, name);
				if (node < 0)
					break;
				memset(&g.addrs[k], 0, sizeof(g.addrs[k]));
				memcpy(&g.addrs[k].sa, ai->ai_addr, ai->ai_addrlen);
				g.addrs[k].salen = ai->ai_addrlen;
				snprintf(g.addrs[k].name, sizeof(g.addrs[k].name), "%s", name);
				snprintf(g.addrs[k].hosthdr, sizeof(g.addrs[k].hosthdr), "%s%s%s:%s",
					 strchr(g.peers[i].host, ':') ? "[" : "", g.peers[i].host,
					 strchr(g.peers[i].host, ':') ? "]" : "", g.peers[i].port);
				g.addrs[k].node = node;
				g.naddrs++;
				pr_info("hub: polling node %s (peer %s:%s)", name, g.peers[i].host,
					g.peers[i].port);
			}
			g.addrs[k].live = true;
		}
		freeaddrinfo(res);
	}
	for (k = 0; k < g.naddrs; k++)
		if (!g.addrs[k].live)
			hub__node_gone(g.hub, g.addrs[k].node);
}

/* GET path from a; 0 with the body, or a negative errno with why. */
static int get(struct addr *a, const char *path, struct httpc_resp *r, char *why, size_t n)
{
	int err = httpc__get((struct sockaddr *)&a->sa, a->salen, a->hosthdr, path,
			     g.token[0] ? g.token : NULL, g.timeout_ms, HUB_BODY_MAX, r, why, n);

	if (err)
		return err;
	/* a daemon that has no data yet (it just started): nothing to read, nothing wrong */
	if (r->status == 503) {
		httpc__resp_free(r);
		return -EAGAIN;
	}
	if (r->status != 200) {
		snprintf(why, n, "GET %s: HTTP %d%s", path, r->status, r->status == 401 ?
			 " (a wrong or missing token: --token-file)" : r->status == 403 ?
			 " (the daemon serves per-rank data beyond loopback only with "
			 "--token-file)" : "");
		httpc__resp_free(r);
		return -EPROTO;
	}
	return 0;
}

/* A worker's GETs for one node: its ranks (now and then), its new step lines and its
 * verdicts. Nothing here touches the hub: the loop feeds what came back. */
static void fetch_node(struct addr *a)
{
	char path[96];

	a->err = 0;
	a->why[0] = 0;
	if (a->want_ranks) {
		a->err = get(a, "/api/v1/ranks", &a->resp[0], a->why, sizeof(a->why));
		if (a->err)
			return;
	}
	snprintf(path, sizeof(path), "/api/v1/steps?since=%llu&last=%d",
		 (unsigned long long)a->cursor, HTTPD_STEPS_MAX);
	a->err = get(a, path, &a->resp[1], a->why, sizeof(a->why));
	if (!a->err)
		a->err = get(a, "/api/v1/diagnosis", &a->resp[2], a->why, sizeof(a->why));
}

static void *fetcher(void *arg)
{
	int k;

	while ((k = __atomic_fetch_add(&g.next_fetch, 1, __ATOMIC_RELAXED)) < g.naddrs)
		if (g.addrs[k].live)
			fetch_node(&g.addrs[k]);
	return NULL;
}

/* Feed what a node answered, or count why it did not. */
static void apply_node(struct addr *a, uint64_t now)
{
	struct httpc_resp *r = a->resp;
	char why[256];
	bool more;
	int err = a->err;

	snprintf(why, sizeof(why), "%s", a->why);
	if (!err && r[0].body)
		err = hub__feed_ranks(g.hub, a->node, r[0].body, r[0].len, why, sizeof(why));
	if (!err && r[1].body)
		err = hub__feed_steps(g.hub, a->node, r[1].body, r[1].len, &a->cursor, &more, why,
				      sizeof(why));
	if (!err && r[2].body)
		err = hub__feed_diagnosis(g.hub, a->node, r[2].body, r[2].len, why, sizeof(why));
	httpc__resp_free(&r[0]);
	httpc__resp_free(&r[1]);
	httpc__resp_free(&r[2]);
	if (!err || err == -EAGAIN) {
		if (a->down_said)
			pr_info("hub: node %s answers again; its ranks are observed again", a->name);
		a->down_said = false;
		hub__node_ok(g.hub, a->node, now);
		return;
	}
	/* garbage, or too much of it: counted, and said at most once a minute */
	if (err == -EINVAL || err == -EMSGSIZE || err == -EPROTO) {
		hub__node_bad(g.hub, a->node);
		if (now - a->bad_said_ns > 60000000000ULL || !a->bad_said_ns) {
			pr_warn("hub: node %s: a bad answer: %s; is it a rankscope daemon of this "
				"version?", a->name, why);
			a->bad_said_ns = now;
		}
	}
	hub__node_failed(g.hub, a->node, why, now);
	if (!a->down_said) {
		a->down_said = true;
		pr_warn("hub: node %s does not answer as it should: %s; its ranks are unobserved "
			"after %d failed polls", a->name, why, HUB_DOWN_POLLS);
	}
}

/* One round: every live node asked by HUB_FETCHERS workers at once, then fed in order. */
static void poll_all(uint64_t now, uint64_t round)
{
	pthread_t th[HUB_FETCHERS];
	int k, n = 0;

	for (k = 0; k < g.naddrs; k++)
		g.addrs[k].want_ranks = !(round % HUB_RANKS_EVERY) || !g.addrs[k].ranks_seen;
	g.next_fetch = 0;
	for (k = 0; k < HUB_FETCHERS && k < g.naddrs; k++)
		if (!pthread_create(&th[n], NULL, fetcher, NULL))
			n++;
	if (!n)
		fetcher(NULL);		/* no thread: do it here */
	for (k = 0; k < n; k++)
		pthread_join(th[k], NULL);
	for (k = 0; k < g.naddrs; k++) {
		if (!g.addrs[k].live)
			continue;
		if (!g.addrs[k].err && g.addrs[k].resp[0].body)
			g.addrs[k].ranks_seen = true;
		apply_node(&g.addrs[k], now);
	}
}

static void on_verdict(void *ctx, const char *job, const struct job_verdict *v, int rank)
{
	char line[1024];

	if (g.json) {
		struct json j;

		json__init(&j);
		report__verdict(&j, v, job, rank, 0);
		if (!j.err)
			printf("%s\n", j.buf);
		json__free(&j);
	} else {
		printf("job %s: ", job);
		report__verdict_text(stdout, v, rank, line, sizeof(line));
	}
	fflush(stdout);
}

static void add_step(void *ctx, const char *job, int rank, const char *json, size_t len)
{
	httpd__add_step(g.httpd, job, rank, json, len);
}

static void publish(void)
{
	static const enum httpd_doc docs[] = { HTTPD_METRICS, HTTPD_RANKS, HTTPD_DIAGNOSIS,
					       HTTPD_NODES };
	char *(*render[])(struct hub *, size_t *) = { hub__metrics, hub__ranks, hub__diagnosis,
						      hub__nodes };
	size_t i, len;
	char *doc;

	hub__drain_steps(g.hub, add_step, NULL);
	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		doc = render[i](g.hub, &len);
		if (doc)
			httpd__publish(g.httpd, docs[i], doc, len);
		free(doc);
	}
}

int cmd_hub(int argc, char **argv)
{
	uint64_t t, next_resolve = 0, end, tick, round = 0;
	struct pollfd pfd;
	char err[256];
	sigset_t mask;
	int sfd, rc;

	rc = parse(argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (g.token_file && httpd__load_token(g.token_file, g.token, sizeof(g.token), err,
					      sizeof(err))) {
		pr_warn("hub: %s", err);
		return 2;
	}
	g.hub = hub__new(g.window);
	if (!g.hub) {
		pr_warn("hub: out of memory");
		return 1;
	}
	hub__set_hang_timeout(g.hub, (uint64_t)(g.hang_s * 1e9));
	if (httpd__start(g.listen, g.token[0] ? g.token : NULL, &g.httpd, err, sizeof(err))) {
		pr_warn("hub: %s", err);
		hub__free(g.hub);
		return 2;
	}
	pr_info("hub: serving /metrics and /api/v1 on http://%s; polling every %.1f s",
		g.listen, g.interval_s);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	signal(SIGPIPE, SIG_IGN);
	t = now_ns();
	end = g.duration_s > 0 ? t + (uint64_t)(g.duration_s * 1e9) : UINT64_MAX;
	tick = (uint64_t)(g.interval_s * 1e9);
	rc = 0;
	for (;;) {
		t = now_ns();
		if (t >= next_resolve) {
			resolve();
			next_resolve = t + HUB_RESOLVE_NS;
		}
		hub__tick(g.hub, t);
		poll_all(t, round++);
		hub__judge(g.hub, now_ns(), on_verdict, NULL);
		publish();
		if (now_ns() >= end)
			break;
		pfd = (struct pollfd){ .fd = sfd, .events = POLLIN };
		t = now_ns();
		if (poll(&pfd, 1, (int)((t + tick < end ? tick : end - t) / 1000000)) > 0) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				pr_info("hub: %s: stopping", strsignal(si.ssi_signo));
			break;
		}
	}
	httpd__stop(g.httpd);
	hub__free(g.hub);
	if (sfd >= 0)
		close(sfd);
	return rc;
}
