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
#include "capture.h"
#include "cmd.h"
#include "httpc.h"
#include "httpd.h"
#include "hub.h"
#include "hubcap.h"
#include "jsonp.h"
#include "log.h"
#include "report.h"

#define HUB_PEERS_MAX	HUB_MAX_NODES	/* --peers items */
#define HUB_ADDRS_MAX	HUB_MAX_NODES	/* addresses they resolve to */
#define HUB_RESOLVE_NS	10000000000ULL	/* peers are resolved again this often */
#define HUB_BODY_MAX	(16u << 20)	/* an answer over this is refused */
#define HUB_FETCHERS	8		/* nodes asked at once */
#define HUB_RANKS_EVERY	10		/* /api/v1/ranks every this many rounds (and at first) */
#define HUB_CAP_BODY_MAX (256u << 20)	/* a node's capture over this is left out */
#define HUB_CAP_TOTAL_MAX (512ULL << 20)	/* all nodes' captures held at once, at most */
#define HUB_CAP_WAIT_S	75		/* after its window, how long a node's capture is awaited
					 * (a daemon waits up to 30 s for a step, then 2.5 s) */
#define HUB_CAP_FETCH_MS 60000		/* one capture's download, connect to last byte */

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
	struct httpc_resp resp[4];	/* ranks, steps, diagnosis, jobs */
	int err;
	char why[256];
	bool down_said;
	uint64_t bad_said_ns;
	uint64_t sent_ns, recv_ns;	/* the steps request's, for the node's clock */
};

static struct {
	struct peer peers[HUB_PEERS_MAX];
	int npeers;
	struct addr addrs[HUB_ADDRS_MAX];
	int naddrs;
	const char *listen, *token_file;
	char token[HTTPD_TOKEN_MAX + 1];
	double interval_s, duration_s, hang_s, usd;
	int timeout_ms, window, gpus;
	bool json;
	int next_fetch;		/* the next address a fetcher takes */
	struct hub *hub;
	struct httpd *httpd;
	const char *capture_dir;
	struct capture cap;
	bool cap_open;
	pthread_t cap_thread;
	bool cap_busy;		/* a worker has the capture (joined when it ends or at exit) */
	volatile bool cap_done;
	volatile bool stopping;
} g;

/* One node's part of a capture across nodes, for the worker. */
struct cap_node {
	struct sockaddr_storage sa;
	socklen_t salen;
	char name[96];
	char hosthdr[272];
	int clock;		/* hub__node_clock(): 1 lined up, 0 not, -1 down */
	int64_t offset_ns;
	uint64_t err_ns;
	char id[CAPTURE_ID_MAX];
	struct httpc_resp body;
	char why[256];
};

struct cap_work {
	struct cap_node *n;
	int nn;
	int seconds;
	char job[128];
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: rankscope hub --peers HOST:PORT[,HOST:PORT...] [options]\n"
"\n"
"Join node daemons (rankscope daemon --listen) into one verdict per job: their step lines\n"
"are pulled, joined by (job, rank), lined up without a shared clock, and judged as one job.\n"
"Served as a daemon serves its own: /metrics, /healthz, /api/v1/diagnosis, /api/v1/ranks\n"
"(each rank with its node), /api/v1/steps, /api/v1/nodes, /api/v1/jobs (each job's failures\n"
"and recoveries, joined from its nodes') and the live view at /.\n"
"\n"
"  -P, --peers LIST       node daemons, host:port items; a name that resolves to several\n"
"                         addresses (a headless Service) means each of them, resolved again\n"
"                         every 10 s so nodes come and go\n"
"      --listen ADDR      HTTP address (default 127.0.0.1:9465)\n"
"      --token-file PATH  a bearer token: sent to the daemons, and required of this hub's\n"
"                         clients beyond loopback (root-owned, mode 0400 or 0600).\n"
"                         Without it, a --listen that is not loopback serves /metrics\n"
"                         and /healthz only (403 for the API, from loopback too)\n"
"      --interval SEC     poll every SEC seconds (default 1)\n"
"      --timeout-ms MS    each request's whole time, connect to last byte (default 2000)\n"
"      --window N         steps a verdict is judged over (default 8)\n"
"      --hang-timeout S   no rank of a job finished a step for S seconds and one is stopped\n"
"                         or a zombie on its node: a hang on that rank (default 60)\n"
"      --gpu-hour-cost USD  price what a straggler costs (the rank-time its peers on every\n"
"                         node wait for it) at USD per GPU-hour: the verdicts' cost line\n"
"                         and rankscope_straggler_cost_dollars_total\n"
"      --gpus-per-rank N  GPUs each rank holds, for that price (default 1)\n"
"      --capture-dir DIR  where POST /api/v1/capture writes the merged trace of every\n"
"                         node's capture (default /var/lib/rankscope/hub-captures)\n"
"      --json             verdicts as JSON lines on stdout (default: text)\n"
"      --duration SEC     stop after SEC seconds (default: until SIGINT/SIGTERM)\n"
"  -h, --help             this help\n"
"\n"
"POST /api/v1/capture?seconds=N asks every node answering for a step-aligned capture and\n"
"merges them, each node's clock mapped onto the reference node's by the offset found from\n"
"step ends, into one Perfetto trace at GET /api/v1/captures/ID (202 while it runs); its\n"
"otherData states each node's offset and error and the residual the joined collectives show.\n"
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
		{ "gpu-hour-cost", required_argument, NULL, 'U' },
		{ "gpus-per-rank", required_argument, NULL, 'G' },
		{ "json", no_argument, NULL, 'j' },
		{ "capture-dir", required_argument, NULL, 'C' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	long n;
	int c;

	g.listen = "127.0.0.1:9465";
	g.capture_dir = "/var/lib/rankscope/hub-captures";
	g.interval_s = 1;
	g.timeout_ms = 2000;
	g.window = HUB_WINDOW;
	g.hang_s = HUB_HANG_NS / 1e9;
	g.gpus = 1;
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
		case 'U':
			if (cmd__parse_price("hub", optarg, &g.usd))
				return -EINVAL;
			break;
		case 'G':
			if (cmd__parse_num("hub", "--gpus-per-rank", optarg, 1, 64, &n))
				return -EINVAL;
			g.gpus = n;
			break;
		case 'j':
			g.json = true;
			break;
		case 'C':
			if (optarg[0] != '/') {
				pr_warn("hub: invalid --capture-dir '%s': give an absolute path", optarg);
				return -EINVAL;
			}
			g.capture_dir = optarg;
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
			 " (the daemon serves its API on a non-loopback --listen only with "
			 "--token-file: give it and the hub the same token)" : "");
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
	a->sent_ns = now_ns();
	a->err = get(a, path, &a->resp[1], a->why, sizeof(a->why));
	a->recv_ns = now_ns();
	if (!a->err)
		a->err = get(a, "/api/v1/diagnosis", &a->resp[2], a->why, sizeof(a->why));
	/* the jobs' lifecycle: a daemon's only (an attach or an older daemon has none); what a
	 * node does not answer leaves its lives as they were */
	if (!a->err) {
		char why[256];

		if (get(a, "/api/v1/jobs", &a->resp[3], why, sizeof(why)))
			memset(&a->resp[3], 0, sizeof(a->resp[3]));
	}
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
	if (!err && r[1].body) {
		err = hub__feed_steps(g.hub, a->node, r[1].body, r[1].len, &a->cursor, &more, why,
				      sizeof(why));
		if (!err)
			hub__node_timing(g.hub, a->node, a->sent_ns, a->recv_ns);
	}
	if (!err && r[2].body)
		err = hub__feed_diagnosis(g.hub, a->node, r[2].body, r[2].len, why, sizeof(why));
	if (!err && r[3].body)
		err = hub__feed_jobs(g.hub, a->node, r[3].body, r[3].len, why, sizeof(why));
	httpc__resp_free(&r[0]);
	httpc__resp_free(&r[1]);
	httpc__resp_free(&r[2]);
	httpc__resp_free(&r[3]);
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

static uint64_t now_ns(void);

/* Ask a node for a capture: 0 with its id in c->id, or -errno with c->why. */
static int cap_ask(struct cap_node *c, int seconds)
{
	struct httpc_resp r;
	struct jsonp d = {};
	char path[96];
	const char *id;
	int err;
	size_t i;

	snprintf(path, sizeof(path), "/api/v1/capture?seconds=%d&align=step&format=json", seconds);
	err = httpc__request((struct sockaddr *)&c->sa, c->salen, "POST", c->hosthdr, path,
			     g.token[0] ? g.token : NULL, g.timeout_ms, 4096, &r, c->why,
			     sizeof(c->why));
	if (err)
		return err;
	if (r.status != 202) {
		snprintf(c->why, sizeof(c->why), "POST /api/v1/capture: HTTP %d: %.120s", r.status,
			 r.body ? r.body : "");
		httpc__resp_free(&r);
		return -EPROTO;
	}
	id = !jsonp__parse(&d, r.body, r.len, 64) ? jsonp__str(&d, jsonp__root(&d), "id") : NULL;
	err = -EPROTO;
	/* a name we put in a URL: the daemon's form only (hex and dashes) */
	if (id && strlen(id) < sizeof(c->id) && *id) {
		for (i = 0; id[i] && ((id[i] >= '0' && id[i] <= '9') ||
				      (id[i] >= 'a' && id[i] <= 'f') || id[i] == '-'); i++)
			;
		if (!id[i]) {
			snprintf(c->id, sizeof(c->id), "%s", id);
			err = 0;
		}
	}
	if (err)
		snprintf(c->why, sizeof(c->why), "POST /api/v1/capture: no capture id in the answer");
	jsonp__free(&d);
	httpc__resp_free(&r);
	return err;
}

/* Is the node's capture ready: 1 (its text in c->body), 0 (not yet), or -errno (c->why). */
static int cap_fetch(struct cap_node *c, uint64_t *held)
{
	char path[96];
	int err;

	snprintf(path, sizeof(path), "/api/v1/captures/%s", c->id);
	err = httpc__get((struct sockaddr *)&c->sa, c->salen, c->hosthdr, path,
			 g.token[0] ? g.token : NULL, HUB_CAP_FETCH_MS, HUB_CAP_BODY_MAX, &c->body,
			 c->why, sizeof(c->why));
	if (err)
		return err;
	if (c->body.status == 202) {
		httpc__resp_free(&c->body);
		return 0;
	}
	if (c->body.status != 200) {
		snprintf(c->why, sizeof(c->why), "GET %s: HTTP %d: %.120s", path, c->body.status,
			 c->body.body ? c->body.body : "");
		httpc__resp_free(&c->body);
		return -EPROTO;
	}
	if (*held + c->body.len > HUB_CAP_TOTAL_MAX) {
		snprintf(c->why, sizeof(c->why), "its capture (%zu MiB) is over what the hub holds of "
			 "captures at once (%llu MiB); ask for fewer seconds", c->body.len >> 20,
			 HUB_CAP_TOTAL_MAX >> 20);
		httpc__resp_free(&c->body);
		return -EMSGSIZE;
	}
	*held += c->body.len;
	return 1;
}

static int cap_write(void *ctx, int fd, bool gz)
{
	struct cap_work *w = ctx;
	struct hubcap_node *hn = calloc(w->nn ? w->nn : 1, sizeof(*hn));
	struct hubcap_stats st;
	int k, err, in = 0;

	if (!hn)
		return -ENOMEM;
	for (k = 0; k < w->nn; k++) {
		struct cap_node *c = &w->n[k];

		hn[k] = (struct hubcap_node){
			.name = c->name, .capture = c->id[0] ? c->id : NULL, .text = c->body.body,
			.len = c->body.len, .why = c->why, .lined_up = c->clock == 1,
			.offset_ns = c->offset_ns, .err_ns = c->err_ns,
		};
		in += c->body.body != NULL;
	}
	err = hubcap__merge(hn, w->nn, g.cap.id, fd, gz, &st);
	if (!err)
		pr_info("hub: capture %s of job %s: %d of %d nodes, %llu events, %llu collectives "
			"joined across nodes, their ends %.1f us apart (median; clock error stated "
			"per node in the trace)", g.cap.id, w->job, in, w->nn,
			(unsigned long long)st.events, (unsigned long long)st.flows_across,
			st.residual_ns / 1e3);
	free(hn);
	return err;
}

/* The capture across nodes: ask each, wait out the window, collect, merge. */
static void *cap_worker(void *arg)
{
	struct cap_work *w = arg;
	uint64_t held = 0, deadline;
	int k, pending = 0, asked = 0;

	for (k = 0; k < w->nn; k++) {
		if (w->n[k].clock < 0) {
			snprintf(w->n[k].why, sizeof(w->n[k].why), "the node did not answer polls");
			continue;
		}
		if (cap_ask(&w->n[k], w->seconds)) {
			pr_warn("hub: capture: node %s: %s", w->n[k].name, w->n[k].why);
			continue;
		}
		asked++;
	}
	deadline = now_ns() + (uint64_t)(w->seconds + HUB_CAP_WAIT_S) * 1000000000ULL;
	for (pending = asked; pending && !g.stopping && now_ns() < deadline; ) {
		usleep(500000);
		for (pending = 0, k = 0; k < w->nn; k++) {
			struct cap_node *c = &w->n[k];
			int r;

			if (!c->id[0] || c->body.body || c->why[0])
				continue;
			r = cap_fetch(c, &held);
			if (r == 0)
				pending++;
			else if (r < 0)
				pr_warn("hub: capture: node %s: %s", c->name, c->why);
		}
	}
	for (k = 0; k < w->nn; k++)
		if (w->n[k].id[0] && !w->n[k].body.body && !w->n[k].why[0])
			snprintf(w->n[k].why, sizeof(w->n[k].why), "its capture was not ready in "
				 "time");
	capture__writing(&g.cap);
	if (!asked)
		capture__fail(&g.cap, "no node took the capture (see each node's reason in the log)");
	else if (capture__finish_with(&g.cap, cap_write, w))
		pr_warn("hub: capture %s: failed to write the merged trace in %s", g.cap.id,
			g.capture_dir);
	for (k = 0; k < w->nn; k++)
		httpc__resp_free(&w->n[k].body);
	free(w->n);
	free(w);
	g.cap_done = true;
	return NULL;
}

/* A capture asked for: snapshot each node and its clock, and start the worker. */
static void cap_start(uint64_t now)
{
	struct cap_work *w;
	int k;

	if (g.cap_busy && g.cap_done) {
		pthread_join(g.cap_thread, NULL);
		g.cap_busy = false;
	}
	if (!g.cap_open || g.cap_busy)
		return;
	if (capture__cancelled(&g.cap)) {
		pr_info("hub: capture %s cancelled (DELETE)", g.cap.id);
		capture__fail(&g.cap, "cancelled by DELETE before it was written");
		return;
	}
	if (!capture__take(&g.cap, now) && !capture__step(&g.cap, now))
		return;
	capture__writing(&g.cap);	/* the worker has it: no DELETE can stop it now */
	w = calloc(1, sizeof(*w));
	if (w)
		w->n = calloc(g.naddrs ? g.naddrs : 1, sizeof(*w->n));
	if (!w || !w->n) {
		free(w);
		capture__writing(&g.cap);
		capture__fail(&g.cap, "out of memory");
		return;
	}
	w->seconds = g.cap.req.seconds;
	hub__main_job(g.hub, w->job, sizeof(w->job));
	for (k = 0; k < g.naddrs; k++) {
		struct cap_node *c = &w->n[w->nn];

		if (!g.addrs[k].live)
			continue;
		c->sa = g.addrs[k].sa;
		c->salen = g.addrs[k].salen;
		snprintf(c->name, sizeof(c->name), "%s", g.addrs[k].name);
		snprintf(c->hosthdr, sizeof(c->hosthdr), "%s", g.addrs[k].hosthdr);
		c->clock = hub__node_clock(g.hub, w->job, g.addrs[k].node, &c->offset_ns,
					   &c->err_ns);
		w->nn++;
	}
	pr_info("hub: capture %s: asking %d nodes for %d s, aligned to a step", g.cap.id, w->nn,
		w->seconds);
	g.cap_done = false;
	if (pthread_create(&g.cap_thread, NULL, cap_worker, w)) {
		free(w->n);
		free(w);
		capture__writing(&g.cap);
		capture__fail(&g.cap, "cannot start a thread");
		return;
	}
	g.cap_busy = true;
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
					       HTTPD_NODES, HTTPD_JOBS };
	char *(*render[])(struct hub *, size_t *) = { hub__metrics, hub__ranks, hub__diagnosis,
						      hub__nodes, hub__jobs };
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
	hub__set_price(g.hub, g.usd, g.gpus);
	if (httpd__start(g.listen, g.token[0] ? g.token : NULL, &g.httpd, err, sizeof(err))) {
		pr_warn("hub: %s", err);
		hub__free(g.hub);
		return 2;
	}
	if (!httpd__api_on_listen(g.httpd))
		pr_warn("hub: --listen %s is not loopback and there is no --token-file: it serves "
			"/metrics and /healthz only; give --token-file for the API and the live view",
			g.listen);
	if (capture__open(&g.cap, g.capture_dir, 10, 4096ULL << 20, err, sizeof(err)))
		pr_warn("hub: %s; captures across nodes are off", err);
	else
		g.cap_open = true;
	if (g.cap_open)
		httpd__set_capture(g.httpd, &g.cap);
	pr_info("hub: serving /metrics and %s on http://%s; polling every %.1f s",
		httpd__api_on_listen(g.httpd) ? "/api/v1" : "/healthz", g.listen, g.interval_s);
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
		cap_start(now_ns());
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
	httpd__set_capture(g.httpd, NULL);
	httpd__stop(g.httpd);
	g.stopping = true;
	if (g.cap_busy)
		pthread_join(g.cap_thread, NULL);
	if (g.cap_open)
		capture__close(&g.cap);
	hub__free(g.hub);
	if (sfd >= 0)
		close(sfd);
	return rc;
}
