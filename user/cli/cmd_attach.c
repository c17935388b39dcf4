// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* `rankscope attach` and `rankscope diagnose`: a session over ranks given by PID. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include "capture.h"
#include "cmd.h"
#include "replay.h"
#include "httpd.h"
#include "decode.h"
#include "detect.h"
#include "log.h"
#include "period.h"
#include "preflight.h"
#include "procfs.h"
#include "ranks.h"
#include "session.h"
#include "targets.h"

static void print_report(struct session *s);

/* ---- rankscope capture --server URL: a minimal HTTP/1.0 client for the daemon's API ---- */

struct http_resp {
	int code;
	char head[4096];
	int fd;		/* the connection, positioned at the body */
	char *body;	/* what came with the head */
	size_t nbody;
};

/* "http://HOST:PORT" to a connected socket. Returns the fd or -errno, with err filled. */
static int http_connect(const char *url, char *host, size_t hn, char *err, size_t n)
{
	struct sockaddr_in6 sa;
	unsigned int salen;
	const char *hp = url;
	int fd;

	if (!strncmp(hp, "http://", 7))
		hp += 7;
	snprintf(host, hn, "%.*s", (int)strcspn(hp, "/"), hp);
	if (httpd__resolve_listen(host, &sa, &salen)) {
		snprintf(err, n, "invalid --server '%s': expected http://HOST:PORT (an address or a name, "
			 "e.g. http://127.0.0.1:9464)", url);
		return -EINVAL;
	}
	fd = socket(((struct sockaddr *)&sa)->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, salen)) {
		int e = -errno;

		snprintf(err, n, "cannot connect to %.64s: %s; is rankscope daemon --listen there?",
			 host, strerror(errno));
		if (fd >= 0)
			close(fd);
		return e;
	}
	return fd;
}

/* --token-file's bearer token for a daemon beyond loopback; "" none */
static const char *client_token = "";

/* Send a request and read the status line and the head. Returns 0 or -errno. */
static int http_do(const char *url, const char *method, const char *path, struct http_resp *r,
		   char *err, size_t n)
{
	char host[256], req[2048], *end;
	struct timeval tv = { 10, 0 };
	size_t len = 0;
	ssize_t k;
	int fd;

	memset(r, 0, sizeof(*r));
	fd = http_connect(url, host, sizeof(host), err, n);
	if (fd < 0)
		return fd;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n%s%s%s\r\n",
		 method, path, host, client_token[0] ? "Authorization: Bearer " : "", client_token,
		 client_token[0] ? "\r\n" : "");
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		goto io;
	while (len < sizeof(r->head) - 1) {
		k = read(fd, r->head + len, sizeof(r->head) - 1 - len);
		if (k <= 0)
			break;
		len += k;
		r->head[len] = '\0';
		if (strstr(r->head, "\r\n\r\n"))
			break;
	}
	end = strstr(r->head, "\r\n\r\n");
	if (!end || sscanf(r->head, "HTTP/%*s %d", &r->code) != 1)
		goto io;
	r->body = end + 4;
	r->nbody = len - (size_t)(r->body - r->head);
	r->fd = fd;
	return 0;
io:
	snprintf(err, n, "no HTTP answer from %s", url);
	close(fd);
	return -EIO;
}

/* The rest of the body, up to max bytes, NUL-terminated in buf. */
static void http_text(struct http_resp *r, char *buf, size_t max)
{
	size_t len = r->nbody < max - 1 ? r->nbody : max - 1;
	ssize_t k;

	memcpy(buf, r->body, len);
	while (len < max - 1 && (k = read(r->fd, buf + len, max - 1 - len)) > 0)
		len += k;
	buf[len] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* Ctrl-C or SIGTERM while capture --server waits: the signal, to cancel on the daemon */
static volatile sig_atomic_t remote_stop;

static void on_remote_stop(int sig)
{
	remote_stop = sig;
}

/* The user gave up: cancel capture id on the daemon (DELETE), not leave it recording. */
static int remote_cancel(const char *id)
{
	char path[64], err[256], body[256], safe[300];
	struct http_resp r;

	snprintf(path, sizeof(path), "/api/v1/captures/%s", id);
	if (http_do(cmd_capture_server, "DELETE", path, &r, err, sizeof(err))) {
		pr_warn("capture: interrupted, and the cancel failed: %s; the daemon may still "
			"record %s", err, id);
		return 130;
	}
	http_text(&r, body, sizeof(body));
	close(r.fd);
	if (r.code == 200 || r.code == 202)
		pr_warn("capture: interrupted; %s cancelled on %s", id, cmd_capture_server);
	else
		pr_warn("capture: interrupted; the daemon answered the cancel of %s with %d: %s", id,
			r.code, log__safe(body, safe, sizeof(safe)));
	return 130;
}

static int capture_remote(const struct session_opts *o)
{
	struct sigaction sa = { .sa_handler = on_remote_stop };	/* no SA_RESTART: waits end */
	const struct capture_req *q = &o->capture_now;
	char path[512], body[512], err[256], id[CAPTURE_ID_MAX] = "", ranks[256] = "";
	struct http_resp r;
	uint64_t t0 = session__now();
	ssize_t k;
	char *p;
	int i, fd, out;

	size_t olen = strlen(o->capture_out);
	bool gz = olen > 3 && !strcmp(o->capture_out + olen - 3, ".gz");
	long long want = -1, got = 0;
	char safe[600];

	for (i = 0; i < q->nranks; i++) {
		size_t used = strlen(ranks);

		if ((size_t)snprintf(ranks + used, sizeof(ranks) - used, "%s%d", i ? "," : "",
				     q->ranks[i]) >= sizeof(ranks) - used) {
			pr_warn("capture: too many --ranks for one request; ask for fewer");
			return 1;
		}
	}
	snprintf(path, sizeof(path), "/api/v1/capture?seconds=%d%s%s%s%s", q->seconds,
		 q->nranks ? "&ranks=" : "", ranks, q->align ? "&align=step" : "",
		 gz ? "&format=gz" : "");
	if (http_do(cmd_capture_server, "POST", path, &r, err, sizeof(err))) {
		pr_warn("capture: %s", err);
		return 1;
	}
	http_text(&r, body, sizeof(body));
	close(r.fd);
	p = strstr(body, "\"id\":\"");
	if (r.code != 202 || !p || sscanf(p + 6, "%39[0-9a-f-]", id) != 1) {
		pr_warn("capture: the daemon said %d: %s", r.code, log__safe(body, safe, sizeof(safe)));
		return 1;
	}
	pr_info("capture: %s recording for %d s on %s (Ctrl-C cancels it)", id, q->seconds,
		cmd_capture_server);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	snprintf(path, sizeof(path), "/api/v1/captures/%s", id);
	for (;;) {
		usleep(500000);
		if (remote_stop)
			return remote_cancel(id);
		if (http_do(cmd_capture_server, "GET", path, &r, err, sizeof(err))) {
			if (remote_stop)
				return remote_cancel(id);
			pr_warn("capture: %s", err);
			return 1;
		}
		if (r.code != 202)
			break;
		close(r.fd);
		if (session__now() - t0 > (uint64_t)(q->seconds + 120) * 1000000000ULL) {
			pr_warn("capture: %s still not written after %d s; ask again with GET %s", id,
				q->seconds + 120, path);
			return 1;
		}
	}
	if (r.code != 200) {
		http_text(&r, body, sizeof(body));
		close(r.fd);
		pr_warn("capture: the daemon said %d: %s", r.code, log__safe(body, safe, sizeof(safe)));
		return 1;
	}
	p = strcasestr(r.head, "\r\ncontent-length:");
	if (p)
		sscanf(p + 17, "%lld", &want);
	out = open(o->capture_out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	fd = r.fd;
	if (out < 0 || (r.nbody && write(out, r.body, r.nbody) != (ssize_t)r.nbody)) {
		pr_warn("capture: cannot write %s: %s", o->capture_out, strerror(errno));
		goto fail;
	}
	got = r.nbody;
	while ((k = read(fd, body, sizeof(body))) > 0) {
		if (write(out, body, k) != k) {
			pr_warn("capture: cannot write %s: %s", o->capture_out, strerror(errno));
			goto fail;
		}
		got += k;
	}
	if (remote_stop) {
		pr_warn("capture: interrupted during the download; %s is still on the daemon: GET %s",
			id, path);
		goto fail;
	}
	if (k < 0 || (want >= 0 && got != want)) {	/* a timeout or a cut connection */
		pr_warn("capture: the download of %s stopped at %lld of %lld bytes; ask again with "
			"GET %s", id, got, want, path);
		goto fail;
	}
	close(fd);
	close(out);
	pr_info("capture: %s written to %s", id, o->capture_out);
	return 0;
fail:
	close(fd);
	if (out >= 0) {
		close(out);
		unlink(o->capture_out);
	}
	return remote_stop ? 130 : 1;
}

static int run(int argc, char **argv, enum cmd_verb verb)
{
	struct rank_info *infos = NULL;
	struct session s = {};
	char msg[512];
	int err, i, k, n, given = TARGETS_MAX;

	err = cmd__parse_opts(argc, argv, &s.o, verb);
	if (err)
		return err > 0 ? 0 : 2;
	if (s.o.nreplay) {
		struct replay_opts ro = {
			.jcfg = s.o.jcfg, .tick_ns = s.o.drain_ms * 1000000ULL, .json = s.o.json,
			.out = stdout,
		};

		signal(SIGPIPE, SIG_IGN);
		return replay__run(s.o.replay, s.o.nreplay, &ro) ? 1 : 0;
	}
	if (verb == VERB_CAPTURE && cmd_capture_server) {
		client_token = s.o.token;
		return capture_remote(&s.o);
	}
	signal(SIGPIPE, SIG_IGN);
	session__block_signals();
	s.out = stdout;
	s.tty = isatty(STDOUT_FILENO);

	/* before --all reads /proc: unprivileged, it would find nothing and blame the job */
	if (preflight__privileges(msg, sizeof(msg)) ||
	    preflight__btf(&preflight_default, msg, sizeof(msg)) ||
	    (access("/sys/bus/event_source/devices/uprobe/type", R_OK) &&
	     preflight__tracefs(&preflight_default, 1, msg, sizeof(msg)))) {
		pr_warn("attach: %s", msg);
		return 1;
	}
	/* a warning: mainline kernels treat 3 as 2, and tp_btf probes need no perf event */
	if (preflight__perf_events(&preflight_default, msg, sizeof(msg)))
		pr_warn("attach: %s", msg);
	if (s.o.all) {
		given = s.o.npids;
		i = targets__discover(s.o.pids + s.o.npids, TARGETS_MAX - s.o.npids, getpid());
		if (i < 0) {
			pr_warn("attach: failed to scan /proc: %s", strerror(-i));
			return 1;
		}
		s.o.npids = targets__dedup(s.o.pids, s.o.npids + i);
		if (!s.o.npids) {
			pr_warn("attach: --all found no training process (none maps NCCL, MPI or gloo "
				"or has RANK/OMPI_COMM_WORLD_RANK/PMI_RANK/PMIX_RANK/SLURM_PROCID); start "
				"the job first");
			return 1;
		}
	}
	for (i = 0; i < s.o.npids; i++) {
		if (s.o.pids[i] == getpid()) {
			pr_warn("attach: PID %d is rankscope itself; give the training processes' PIDs",
				s.o.pids[i]);
			return 2;
		}
		if (i >= given)
			continue;
		err = targets__check_given(s.o.pids[i], msg, sizeof(msg));
		if (err < 0) {
			pr_warn("attach: %s", msg);
			return err == -ESRCH ? 1 : 2;	/* gone: not the user's mistake */
		}
		if (err > 0)
			pr_warn("attach: %s", msg);
	}
	s.o.max_ranks = s.o.npids;
	s.o.max_jobs = 1;
	err = session__open(&s);
	if (!err)
		err = cmd__serve_api(&s, verb == VERB_DIAGNOSE ? "diagnose" : "attach");
	if (err)
		goto out;
	infos = calloc(s.o.npids, sizeof(*infos));
	if (!infos) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < s.o.npids; i++) {
		struct proc_stat st;

		/* one --all found may be gone by now (a short-lived process): not an error */
		if (i >= given && (procfs__stat(s.o.pids[i], &st) || st.state == 'Z')) {
			pr_info("attach: PID %d (found by --all) exited before the attach; skipped",
				s.o.pids[i]);
			memmove(&s.o.pids[i], &s.o.pids[i + 1],
				sizeof(s.o.pids[0]) * (s.o.npids - i - 1));
			s.o.npids--;
			i--;
			continue;
		}
		err = session__prepare(&s, i, s.o.pids[i]);
		if (err)
			goto out;
		infos[i] = s.ranks[i].info;
	}
	/* the given order numbers the ranks the environ did not */
	ranks__assign_by_order(infos, s.o.npids);
	for (i = 0, n = 0; i < s.o.npids; i++) {
		s.ranks[i].info.rank = infos[i].rank;
		s.ranks[i].info.src = infos[i].src;
		n += session__join(&s, i, true) == AR_OK;
	}
	if (!n) {
		err = -ENOENT;
		goto out;
	}
	err = session__build_jobs(&s);
	if (err)
		goto out;
	if (s.o.jcfg.mode == STEPS_MARKER && s.probes.coll) {
		for (i = 0, k = 0; i < s.nranks; i++)
			k += s.ranks[i].used && s.ranks[i].markers;
		if (!k) {
			/* said per rank above; a step rule that cannot be set is no rule at all */
			pr_warn("attach: the step marker was set on no rank; check the name (nm -D) "
				"or give another --steps");
			session__close(&s);
			free(infos);
			return 2;
		}
	}
	pr_info("attach: attached to %d rank%s, %u probes; Ctrl-C to detach", n, n == 1 ? "" : "s",
		probes__count(&s.probes));
	/* the first stats interval starts now */
	for (i = 0; i < s.nranks; i++) {
		struct slot_snapshot snap;
		struct rank_row row;
		uint64_t t = session__now();

		if (!s.ranks[i].used)
			continue;
		probes__read_slot(&s.probes, s.ranks[i].slot, s.ranks[i].pid, t, &snap);
		stats__row(&s.ranks[i], &snap, t, &row);
	}
	err = session__loop(&s, NULL);
	session__finish(&s);
	if (verb == VERB_CAPTURE && !s.cap_written && !err) {
		pr_warn("capture: nothing written (the ranks exited before the capture ended?)");
		err = -EIO;
	}
	if (s.o.report && !s.o.json && verb != VERB_CAPTURE)
		print_report(&s);
	if (!err && s.write_err) {
		err = s.write_err;
		pr_warn("attach: failed to write output: %s; was the reader closed?", strerror(-err));
	}
out:
	session__close(&s);
	free(infos);
	return err ? 1 : 0;
}

int cmd_attach(int argc, char **argv)
{
	return run(argc, argv, VERB_ATTACH);
}

int cmd_diagnose(int argc, char **argv)
{
	return run(argc, argv, VERB_DIAGNOSE);
}

int cmd_capture(int argc, char **argv)
{
	return run(argc, argv, VERB_CAPTURE);
}

/* diagnose's human report: the rule, each rank's last step, the verdict and the cost. */
static void print_report(struct session *s)
{
	const struct sjob *j = &s->jobs[0];
	const struct job_step **last = calloc(j->ncols + 1, sizeof(*last));
	int *rank = calloc(j->ncols + 1, sizeof(*rank));
	struct report_diag d = {
		.ncols = j->ncols, .world = -1, .steps_seen = j->steps_seen, .rank = rank,
		.last = last, .window = s->o.jcfg.window, .worst = j->have_worst ? &j->worst : NULL,
		.worst_rank = -1, .cost = j->model ? job__cost(j->model) : NULL,
		.usd = s->o.jcfg.gpu_hour_usd, .gpus = s->o.jcfg.gpus_per_rank,
	};
	int i, p;

	if (!last || !rank)
		goto out;
	d.rule = j->model ? job__rule(j->model, &d.conf, &d.period) : "";
	for (i = 0; i < j->ncols; i++) {
		const struct rank_state *rs = &s->ranks[j->slots[i]];

		if (rs->info.world_size > d.world)
			d.world = rs->info.world_size;
		rank[i] = rs->info.rank;
		last[i] = &rs->last_step;
	}
	for (p = 0; p < RS_FAM_MAX; p++) {
		d.attempted += s->self.attempted[p];
		d.dropped += s->self.dropped[p];
	}
	if (j->have_worst && j->worst.col >= 0 && j->worst.col < j->ncols)
		d.worst_rank = rank[j->worst.col];
	report__diagnose(stdout, &d);
out:
	free(last);
	free(rank);
}
