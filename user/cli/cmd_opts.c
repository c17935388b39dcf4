// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Options of the verbs that run a session: attach, diagnose and daemon share most. */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>
#include "capture.h"
#include "cmd.h"
#include "log.h"
#include "procfs.h"

static void usage(FILE *f, enum cmd_verb v)
{
	if (v == VERB_CAPTURE) {
		fprintf(f,
"Usage: rankscope capture (--server URL | -p PID[,PID...] | --all) [--seconds N]\n"
"                         [--ranks R,...] [--align step] -o FILE\n"
"\n"
"Record every rank in full detail for N seconds (1 to 120, default 10): steps and phases,\n"
"collectives joined across ranks by flow arrows, every blocking syscall and off-CPU\n"
"interval, run-queue delays, GPU kernels and copies (with the CUPTI library), and\n"
"verdicts. FILE is Chrome trace-event JSON, gzipped if it ends in .gz: open it in\n"
"https://ui.perfetto.dev or chrome://tracing.\n"
"\n"
"      --server URL       ask a running rankscope daemon (http://HOST:PORT); it records,\n"
"                         and the file is downloaded here; Ctrl-C cancels it there\n"
"      --token-file PATH  with --server beyond loopback: the daemon's bearer token\n"
"  -p, --pid PIDS         attach to these ranks for the capture, then detach\n"
"  -a, --all              every training process, as rankscope attach --all\n"
"      --seconds N        how long (default 10)\n"
"      --ranks R[,R...]   only these rank numbers\n"
"      --align step       start at the next step boundary\n"
"      --sample-stack-kb N  with -p/--all: each 99 Hz stack sample copies N KiB of the\n"
"                         thread's stack (0 to 63, default 16), unwound from CFI when the\n"
"                         capture is written, so call chains are whole without frame\n"
"                         pointers; 0: frame-pointer chains only. At most 64 MiB of\n"
"                         copies a capture; later samples keep their frame-pointer chain\n"
"  -o, --output FILE      where to write it\n"
"  -v, --verbose          more diagnostics\n"
"  -h, --help             this help\n");
		return;
	}
	if (v == VERB_DAEMON) {
		fprintf(f,
"Usage: rankscope daemon [--listen ADDR] [--all] [OPTIONS]\n"
"\n"
"Watch the node: attach to every training process that starts (a process with a rank\n"
"variable, or one that maps NCCL, MPI or gloo), group ranks into jobs by job id, and\n"
"serve per-rank, per-step metrics and verdicts over HTTP until SIGTERM or SIGINT. Finds\n"
"new processes from exec records and a /proc rescan; detaches from each on exit or exec.\n"
"One daemon per node (a lock file).\n"
"\n"
"  -a, --all              also adopt the training processes already running at start\n"
"                         (the DaemonSet sets it, so a restarted daemon picks its jobs\n"
"                         back up); without it, only processes started after it\n"
"  -p, --pid PIDS         also adopt these PIDs at start\n"
"      --listen ADDR      HTTP address (default 127.0.0.1:9464); see rankscope attach\n"
"                         --help for the endpoints and for --api-listen\n"
"      --api-listen ADDR  also serve the API here, e.g. 127.0.0.1:9466 (the DaemonSet's)\n"
"      --token-file PATH  bearer token for the API beyond loopback (see attach --help)\n"
"      --lock-file PATH   one daemon per node (default /run/rankscope/daemon.lock)\n"
"      --max-ranks N      ranks watched at once, 1 to 256 (default 256)\n"
"      --max-jobs N       jobs watched at once, 1 to 64 (default 32)\n"
"      --max-series N     sample lines in /metrics, 0 for no cap (default 200000);\n"
"                         rankscope_series_overflow_total counts what it leaves out\n"
"      --rescan S         /proc rescan period (default 1)\n"
"      --retain S         keep a finished job's series this long (default 300)\n"
"      --abandon-after S  a failed job not back this long is abandoned (default 3600);\n"
"                         /api/v1/jobs and the job_recovery_* series follow each job id\n"
"                         across its restarts\n"
"      --cgroup PATH      only processes in this cgroup or below it (as /proc/PID/cgroup\n"
"                         shows it): a Slurm job, a share of a host, one of several\n"
"                         daemons on one machine\n"
"      --k8s-pods URL     job ids from the owners of this node's pods (JobSet, PyTorchJob,\n"
"                         Job), from a pod list polled every 10 s over plain HTTP: a\n"
"                         kubectl proxy, http://127.0.0.1:8001 (a bare host lists\n"
"                         spec.nodeName=$NODE_NAME); without it, from the environ\n"
"      --planned-steps N  export rankscope_planned_steps for the dashboard's ETA\n"
"      --gpu-hour-cost USD  price a straggler's cost: the wait it causes, in dollars\n"
"                         (rankscope_straggler_cost_dollars_total, the verdict's words)\n"
"      --gpus-per-rank N  GPUs each rank holds, for that price (default 1)\n"
"      --ckpt-min-mb N    a write burst this big is a checkpoint (default 16)\n"
"      --cupti-socket PATH  GPU timing: where librankscope_cupti.so connects (default:\n"
"                         cupti/cupti.sock next to the lock file,\n"
"                         /run/rankscope/cupti/cupti.sock)\n"
"      --no-cupti         no GPU timing socket\n"
"      --capture-dir DIR  where POST /api/v1/capture writes (default\n"
"                         /var/lib/rankscope/captures, mode 0700)\n"
"      --capture-max-count N, --capture-max-mb N  keep at most N captures / N MiB\n"
"                         (default 10 and 1024); the oldest go first\n"
"      --auto-capture     take one capture when a verdict appears (every 10 min at most)\n"
"      --sample-stack-kb N  stack copied a capture's stack sample (default 16; 0: frame\n"
"                         pointers only), as for rankscope capture\n"
"  -j, --json             also print rank, step and verdict JSON lines on stdout\n"
"  -i, --interval S       publish period in seconds (default 1)\n"
"      --io-min-us, --offcpu-min-us, --ringbuf-kb, --max-threads, --max-processes,\n"
"      --drain-ms, --no-FAMILY, --steps, --window, --hang-timeout: as for rankscope attach\n"
"  -v, --verbose          more diagnostics (libbpf messages)\n"
"  -h, --help             this help\n"
"\n"
"Needs root (or CAP_BPF+CAP_PERFMON+CAP_SYS_PTRACE+CAP_DAC_READ_SEARCH) and kernel BTF.\n");
		return;
	}
	if (v == VERB_DIAGNOSE)
		fprintf(f,
"Usage: rankscope diagnose (-p PID[,PID...] | --all) [--duration S] [--json] [OPTIONS]\n"
"       rankscope diagnose --replay FILE [--replay FILE...] [--json] [OPTIONS]\n"
"\n"
"Attach, split every rank's steps into phases, and report which rank holds the others\n"
"back, in which phase, by how much, and the experiment that could disprove it. Prints a\n"
"short report when the ranks exit or the duration ends, and exits 0.\n"
"\n"
"      --replay FILE      no attach, no root: run the same steps, phases, verdicts and\n"
"                         cost on recorded input: a recording (diagnose --json --events\n"
"                         > FILE) replays exactly as it ran; an op trace (one JSON op a\n"
"                         line, README \"Op traces\") is lined up by its collectives.\n"
"                         Several files: one per node, their clocks lined up the same\n"
"                         way. \"-\" reads stdin. --json, --window, --steps auto|every:N,\n"
"                         --hang-timeout, --drain-ms and the cost options apply\n"
"\n");
	else
		fprintf(f,
"Usage: rankscope attach (-p PID[,PID...] | --all) [OPTIONS]\n"
"\n"
"Attach to running training ranks and show, per rank, collectives, blocking I/O,\n"
"run-queue delay, off-CPU time and TCP health, then per-step phases and straggler\n"
"verdicts. Exits once every rank has exited. On a terminal: a table redrawn each\n"
"second, with each rank's last step as a phase bar, a progress line and the verdict;\n"
"to a pipe or a file, the table alone each second: --json gives steps and verdicts.\n"
"\n");
	fprintf(f,
"  -p, --pid PIDS         comma-separated rank PIDs (rank order = order given,\n"
"                         unless the environ or communicator init says otherwise)\n"
"  -a, --all              every process that maps NCCL/MPI/gloo or has a rank variable\n"
"  -d, --duration S       stop after S seconds (default: until the ranks exit)\n"
"  -j, --json             JSON lines on stdout instead of the table: a rank line per\n"
"                         rank, then rule, step and verdict lines (attach: stats and\n"
"                         self lines too)\n"
"  -e, --events           with --json: also one line per collective call and per\n"
"                         streamed event (io, offcpu, fork, exit, tcp)\n"
"  -i, --interval S       stats/table period in seconds (default 1)\n"
"      --io-min-us N      stream I/O syscalls of at least N us (default 100)\n"
"      --offcpu-min-us N  stream off-CPU intervals of at least N us (default 100)\n"
"      --ringbuf-kb N     ring buffer size, power of two >= 4 (default 4096)\n"
"      --max-threads N    threads of ranks followed at once (default 65536; more push\n"
"                         out the longest idle: rankscope_map_evictions_total)\n"
"      --max-processes N  ranks and their forked workers followed at once (default\n"
"                         8192; a worker past it is not: rankscope_map_full_total)\n"
"      --drain-ms N       steps and verdicts every N ms (default 100); the ring buffer\n"
"                         is read 4x as often, down to every 2 ms while a storm fills it\n"
"      --no-FAMILY        skip a probe family: --no-sched --no-io --no-net --no-collectives\n"
"      --steps MODE       auto (DDP marker, else the collective period; default),\n"
"                         every:N (every N-th collective on the main communicator),\n"
"                         marker:SYMBOL[@LIB] (a function, mangled names too, in the\n"
"                         executable or the library named LIB*) or\n"
"                         usdt:PROVIDER:NAME[@LIB]: one step per call\n"
"      --window N         steps per verdict window (default 8)\n"
"      --hang-timeout S   a rank is hung when a peer waited S seconds in a collective it\n"
"                         has not reached (default 60)\n"
"      --listen ADDR      serve /metrics (Prometheus), /healthz, /api/v1/ranks,\n"
"                         /api/v1/steps?rank=R&last=N and /api/v1/diagnosis on ADDR,\n"
"                         e.g. 127.0.0.1:9464 (loopback unless you say otherwise)\n"
"      --token-file PATH  clients beyond loopback need 'Authorization: Bearer TOKEN'\n"
"                         (this file's one line, mode 600) for the API, captures and\n"
"                         the live view; without it they are refused. /metrics and\n"
"                         /healthz are open to all\n"
"      --api-listen ADDR  serve the API (every path but /metrics and /healthz) on ADDR\n"
"                         too. --listen serves it only when its address is loopback or\n"
"                         --token-file is given: a --listen of 0.0.0.0:9464 without a\n"
"                         token serves /metrics and /healthz only, and 403 to every\n"
"                         other request, from loopback too. ADDR must be loopback\n"
"                         unless --token-file is given, and its port not --listen's\n"
"      --max-series N     with --listen: cap /metrics at N sample lines (default 200000)\n"
"      --planned-steps N  with --listen: export rankscope_planned_steps (dashboard ETA)\n"
"      --gpu-hour-cost USD  price a straggler's cost (the rank-time its peers wait for\n"
"                         it) at USD per GPU-hour, in the verdict's cost line and in\n"
"                         rankscope_straggler_cost_dollars_total; --gpus-per-rank N\n"
"                         GPUs each rank holds (default 1)\n"
"      --ckpt-min-mb N    with --listen: a write burst this big is a checkpoint\n"
"                         (default 16)\n"
"      --cupti-socket PATH  GPU timing: listen here for librankscope_cupti.so (set\n"
"                         RANKSCOPE_CUPTI_SOCKET=PATH in the ranks; default: off)\n"
"      --capture-dir DIR, --capture-max-count N, --capture-max-mb N, --auto-capture,\n"
"      --sample-stack-kb N:\n"
"                         with --listen, captures as for rankscope daemon\n"
"  -v, --verbose          more diagnostics (libbpf messages)\n"
"  -h, --help             this help\n"
"\n"
"Needs root (or CAP_BPF+CAP_PERFMON) and kernel BTF.\n");
}

enum {
	OPT_IO_MIN = 256, OPT_OFFCPU_MIN, OPT_RINGBUF, OPT_DRAIN,
	OPT_NO_SCHED, OPT_NO_IO, OPT_NO_NET, OPT_NO_COLL, OPT_STEPS, OPT_WINDOW, OPT_HANG,
	OPT_LISTEN, OPT_LOCK, OPT_MAX_RANKS, OPT_MAX_JOBS, OPT_MAX_SERIES, OPT_RESCAN, OPT_RETAIN,
	OPT_ABANDON,
	OPT_PLANNED, OPT_CKPT_MIN, OPT_CUPTI, OPT_NO_CUPTI, OPT_CAP_DIR, OPT_CAP_COUNT, OPT_CAP_MB,
	OPT_STACK_KB, OPT_MAX_THREADS, OPT_MAX_PROCS,
	OPT_AUTO_CAP, OPT_SECONDS, OPT_SERVER, OPT_RANKS, OPT_ALIGN, OPT_CGROUP, OPT_TOKEN,
	OPT_API_LISTEN,
	OPT_K8S_PODS, OPT_GPU_COST, OPT_GPUS_RANK, OPT_REPLAY,
};

static const char *who = "attach";
const char *cmd_capture_server;

int cmd__parse_num(const char *verb, const char *opt, const char *arg, long lo, long hi,
		   long *out)
{
	if (!parse_long(arg, lo, hi, out))
		return 0;
	pr_warn("%s: invalid %s '%s': expected a whole number from %ld to %ld", verb, opt,
		arg, lo, hi);
	return -EINVAL;
}

int cmd__parse_secs(const char *verb, const char *opt, const char *arg, double lo, double hi,
		    double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (!*arg || *end || errno || !(v >= lo && v <= hi)) {
		pr_warn("%s: invalid %s '%s': expected seconds from %g to %g", verb, opt, arg,
			lo, hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int cmd__parse_price(const char *verb, const char *arg, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (!*arg || *end || errno || !(v >= 0.01 && v <= 10000)) {
		pr_warn("%s: invalid --gpu-hour-cost '%s': expected US dollars per GPU-hour from "
			"0.01 to 10000, e.g. 2.9", verb, arg);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_num(const char *opt, const char *arg, long lo, long hi, long *out)
{
	return cmd__parse_num(who, opt, arg, lo, hi, out);
}

static int parse_secs(const char *opt, const char *arg, double lo, double hi, double *out)
{
	return cmd__parse_secs(who, opt, arg, lo, hi, out);
}

static const char *verb_name(enum cmd_verb v)
{
	return v == VERB_DAEMON ? "daemon" : v == VERB_DIAGNOSE ? "diagnose" :
	       v == VERB_CAPTURE ? "capture" : "attach";
}

/* "marker:SYM[@LIB]" or "usdt:PROVIDER:NAME[@LIB]" into o. Returns 0 or -EINVAL. */
static int parse_marker(const char *arg, struct session_opts *o)
{
	char buf[512], *at, *colon;
	bool usdt = !strncmp(arg, "usdt:", 5);

	if (!usdt && strncmp(arg, "marker:", 7))
		return -EINVAL;
	if (snprintf(buf, sizeof(buf), "%s", arg + (usdt ? 5 : 7)) >= (int)sizeof(buf))
		return -EINVAL;
	at = strchr(buf, '@');
	if (at) {
		*at++ = '\0';
		if (!*at || strchr(at, '/') || strlen(at) >= sizeof(o->marker_lib))
			return -EINVAL;
		snprintf(o->marker_lib, sizeof(o->marker_lib), "%s", at);
	}
	if (!usdt) {
		if (!buf[0] || strlen(buf) >= sizeof(o->marker_sym))
			return -EINVAL;
		snprintf(o->marker_sym, sizeof(o->marker_sym), "%s", buf);
		return 0;
	}
	colon = strchr(buf, ':');
	if (!colon || colon == buf || !colon[1] || strlen(buf) >= sizeof(o->usdt_provider) ||
	    strlen(colon + 1) >= sizeof(o->usdt_name))
		return -EINVAL;
	*colon = '\0';
	snprintf(o->usdt_provider, sizeof(o->usdt_provider), "%s", buf);
	snprintf(o->usdt_name, sizeof(o->usdt_name), "%s", colon + 1);
	return 0;
}

/* --cgroup PATH: absolute, as /proc/PID/cgroup shows it, without . or .. parts; a trailing
 * slash is dropped. */
static int parse_cgroup(const char *arg, struct session_opts *o)
{
	static char path[1024];
	size_t n = strlen(arg);
	const char *p;

	if (arg[0] != '/' || n >= sizeof(path) || strstr(arg, "//")) {
		pr_warn("daemon: invalid --cgroup '%s': give the cgroup's absolute path as "
			"/proc/PID/cgroup shows it, e.g. /slurm/uid_0/job_42", arg);
		return -EINVAL;
	}
	for (p = arg; p; p = strchr(p + 1, '/'))
		if (!strncmp(p, "/.", 2) && (p[2] == '/' || !p[2] ||
					     (p[2] == '.' && (p[3] == '/' || !p[3])))) {
			pr_warn("daemon: invalid --cgroup '%s': no '.' or '..' parts", arg);
			return -EINVAL;
		}
	memcpy(path, arg, n + 1);
	if (n > 1 && path[n - 1] == '/')
		path[n - 1] = '\0';
	o->cgroup = path;
	return 0;
}

/* Can a file be made at path (its directory exists, is a directory, and is writable)? Checked
 * before recording, so a typo in -o does not cost a whole capture. 0, or why not in err. */
static int out_dir_unwritable(const char *path, char *err, size_t n)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int e = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (stat(dir, &st))
		e = errno;
	else if (!S_ISDIR(st.st_mode))
		e = ENOTDIR;
	else if (access(dir, W_OK))
		e = errno;
	if (e)
		snprintf(err, n, "%.*s: %s", (int)(n > 64 ? n - 64 : 1), dir, strerror(e));
	return -e;
}

/* The port of a HOST:PORT that httpd__resolve_listen took. */
static long port_of(const char *addr)
{
	const char *colon = strrchr(addr, ':');

	return colon ? strtol(colon + 1, NULL, 10) : -1;
}

/* --api-listen: an address, loopback unless there is a token (the API holds captures), not
 * --listen's port (one of the two binds would fail, or it would serve itself twice). */
static int check_api_listen(const struct session_opts *o)
{
	int lo = httpd__is_loopback(o->api_listen);

	if (!o->listen) {
		pr_warn("%s: --api-listen serves the API next to --listen; give --listen ADDR too",
			who);
		return -EINVAL;
	}
	if (lo < 0) {
		pr_warn("%s: invalid --api-listen '%s': expected HOST:PORT, e.g. 127.0.0.1:9466",
			who, o->api_listen);
		return -EINVAL;
	}
	if (!lo && !o->token[0]) {
		pr_warn("%s: invalid --api-listen '%s': not a loopback address, and the API "
			"(captures included) goes beyond loopback only with a bearer token; give "
			"--token-file, or use 127.0.0.1:PORT", who, o->api_listen);
		return -EINVAL;
	}
	if (port_of(o->api_listen) == port_of(o->listen)) {
		pr_warn("%s: invalid --api-listen '%s': the same port as --listen %s; give it a "
			"port of its own, e.g. 127.0.0.1:9466", who, o->api_listen, o->listen);
		return -EINVAL;
	}
	return 0;
}

int cmd__serve_api(struct session *s, const char *verb)
{
	char err[256];
	int e;

	if (!s->httpd)
		return 0;
	if (s->o.api_listen) {
		e = httpd__listen_api(s->httpd, s->o.api_listen, err, sizeof(err));
		if (e) {
			pr_warn("%s: %s", verb, err);
			return e;
		}
		pr_info("%s: serving the API on http://%s (--api-listen)", verb, s->o.api_listen);
	}
	if (httpd__api_on_listen(s->httpd))
		return 0;
	if (s->o.api_listen)
		pr_info("%s: %s serves /metrics and /healthz only (not loopback, no --token-file)",
			verb, s->o.listen);
	else
		pr_warn("%s: the API is served nowhere: --listen %s is not loopback and there is no "
			"--token-file, so it serves /metrics and /healthz only; give --api-listen "
			"127.0.0.1:PORT (or --token-file) for the API and captures", verb, s->o.listen);
	return 0;
}

int cmd__parse_opts(int argc, char **argv, struct session_opts *o, enum cmd_verb verb)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "duration", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "events", no_argument, NULL, 'e' },
		{ "interval", required_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "io-min-us", required_argument, NULL, OPT_IO_MIN },
		{ "offcpu-min-us", required_argument, NULL, OPT_OFFCPU_MIN },
		{ "ringbuf-kb", required_argument, NULL, OPT_RINGBUF },
		{ "max-threads", required_argument, NULL, OPT_MAX_THREADS },
		{ "max-processes", required_argument, NULL, OPT_MAX_PROCS },
		{ "drain-ms", required_argument, NULL, OPT_DRAIN },
		{ "no-sched", no_argument, NULL, OPT_NO_SCHED },
		{ "no-io", no_argument, NULL, OPT_NO_IO },
		{ "no-net", no_argument, NULL, OPT_NO_NET },
		{ "no-collectives", no_argument, NULL, OPT_NO_COLL },
		{ "steps", required_argument, NULL, OPT_STEPS },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "hang-timeout", required_argument, NULL, OPT_HANG },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "api-listen", required_argument, NULL, OPT_API_LISTEN },
		{ "lock-file", required_argument, NULL, OPT_LOCK },
		{ "max-ranks", required_argument, NULL, OPT_MAX_RANKS },
		{ "max-jobs", required_argument, NULL, OPT_MAX_JOBS },
		{ "max-series", required_argument, NULL, OPT_MAX_SERIES },
		{ "rescan", required_argument, NULL, OPT_RESCAN },
		{ "retain", required_argument, NULL, OPT_RETAIN },
		{ "abandon-after", required_argument, NULL, OPT_ABANDON },
		{ "planned-steps", required_argument, NULL, OPT_PLANNED },
		{ "ckpt-min-mb", required_argument, NULL, OPT_CKPT_MIN },
		{ "cupti-socket", required_argument, NULL, OPT_CUPTI },
		{ "no-cupti", no_argument, NULL, OPT_NO_CUPTI },
		{ "capture-dir", required_argument, NULL, OPT_CAP_DIR },
		{ "capture-max-count", required_argument, NULL, OPT_CAP_COUNT },
		{ "sample-stack-kb", required_argument, NULL, OPT_STACK_KB },
		{ "capture-max-mb", required_argument, NULL, OPT_CAP_MB },
		{ "auto-capture", no_argument, NULL, OPT_AUTO_CAP },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "k8s-pods", required_argument, NULL, OPT_K8S_PODS },
		{ "gpu-hour-cost", required_argument, NULL, OPT_GPU_COST },
		{ "gpus-per-rank", required_argument, NULL, OPT_GPUS_RANK },
		{ "token-file", required_argument, NULL, OPT_TOKEN },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "output", required_argument, NULL, 'o' },
		{ "server", required_argument, NULL, OPT_SERVER },
		{ "ranks", required_argument, NULL, OPT_RANKS },
		{ "align", required_argument, NULL, OPT_ALIGN },
		{ "replay", required_argument, NULL, OPT_REPLAY },
		{},
	};
	const char *bad;
	long v;
	int c, n, li = -1;
	bool no_cupti = false, cap_dir_given = false;
	const char *cap_seconds = NULL, *cap_ranks = NULL, *cap_align = NULL, *needs_listen = NULL;
	char cap_err[160], out_err[PATH_MAX + 64];
	static char cupti_default[PATH_MAX];

	memset(o, 0, sizeof(*o));
	who = verb == VERB_DAEMON ? "daemon" : verb == VERB_CAPTURE ? "capture" : "attach";
	o->report = verb == VERB_DIAGNOSE;
	o->daemon = verb == VERB_DAEMON;
	o->max_ranks = RS_MAX_SLOTS;
	o->max_jobs = 32;
	o->max_series = 200000;
	o->retain_s = 300;
	o->abandon_s = 3600;
	o->jcfg.gpus_per_rank = 1;
	o->lock_file = "/run/rankscope/daemon.lock";
	o->ckpt = (struct ckpt_cfg){ .active_bytes = CKPT_ACTIVE_BYTES, .gap_ns = CKPT_GAP_NS,
				     .min_bytes = CKPT_MIN_BYTES };
	if (o->daemon) {
		o->listen = "127.0.0.1:9464";
		o->rescan_s = 1;
		o->pcfg.discover = true;
	}
	o->interval_s = 1;
	o->drain_ms = 100;
	o->pcfg.ringbuf_bytes = 4096 * 1024;
	o->pcfg.max_threads = RS_MAX_THREADS;
	o->pcfg.io_min_ns = 100000;
	o->pcfg.offcpu_min_ns = 100000;
	o->jcfg.mode = STEPS_AUTO;
	o->jcfg.window = 8;
	o->jcfg.hang_timeout_ns = 60ULL * 1000000000ULL;
	optind = 1;
	o->capture_dir = "/var/lib/rankscope/captures";
	o->capture_max_count = 10;
	o->sample_stack_bytes = STACKS_USER_BYTES;
	o->capture_max_bytes = 1024ULL << 20;
	while ((c = getopt_long(argc, argv, "p:ad:jei:vho:", longopts, &li)) != -1) {
		switch (c) {
		case 'p':
			n = targets__parse_pids(optarg, o->pids + o->npids, TARGETS_MAX - o->npids,
						&bad);
			if (n < 0) {
				pr_warn("%s: invalid PID list '%s' at '%s': expected PID[,PID...] of "
					"positive numbers (at most %d)", who, optarg, bad, TARGETS_MAX);
				return -EINVAL;
			}
			o->npids += n;
			break;
		case 'a': o->all = true; break;
		case 'j': o->json = true; break;
		case 'e': o->events = true; break;
		case 'v': log_verbosity = LOG_DEBUG; break;
		case 'd':
			if (parse_secs("--duration", optarg, 0.001, 1e7, &o->duration_s))
				return -EINVAL;
			break;
		case 'i':
			if (parse_secs("--interval", optarg, 0.05, 3600, &o->interval_s))
				return -EINVAL;
			break;
		case OPT_IO_MIN:
			if (parse_num("--io-min-us", optarg, 0, 60000000, &v))
				return -EINVAL;
			o->pcfg.io_min_ns = v * 1000ULL;
			break;
		case OPT_OFFCPU_MIN:
			if (parse_num("--offcpu-min-us", optarg, 0, 60000000, &v))
				return -EINVAL;
			o->pcfg.offcpu_min_ns = v * 1000ULL;
			break;
		case OPT_RINGBUF:
			if (parse_num("--ringbuf-kb", optarg, 4, 1 << 20, &v))
				return -EINVAL;
			if (v & (v - 1)) {
				pr_warn("%s: invalid --ringbuf-kb '%s': must be a power of two (4, 8, ... 1048576)",
					who, optarg);
				return -EINVAL;
			}
			o->pcfg.ringbuf_bytes = v * 1024;
			break;
		case OPT_MAX_THREADS:
			if (parse_num("--max-threads", optarg, 1024, 1 << 22, &v))
				return -EINVAL;
			o->pcfg.max_threads = v;
			break;
		case OPT_MAX_PROCS:
			if (parse_num("--max-processes", optarg, 16, 1 << 20, &v))
				return -EINVAL;
			o->pcfg.max_tracked = v;
			break;
		case OPT_DRAIN:
			if (parse_num("--drain-ms", optarg, 1, 10000, &v))
				return -EINVAL;
			o->drain_ms = v;
			break;
		case OPT_NO_SCHED: o->pcfg.disable[RS_FAM_SCHED] = true; break;
		case OPT_NO_IO: o->pcfg.disable[RS_FAM_IO] = true; break;
		case OPT_NO_NET: o->pcfg.disable[RS_FAM_NET] = true; break;
		case OPT_NO_COLL: o->pcfg.disable[RS_FAM_COLL] = true; break;
		case OPT_STEPS:
			if (!strcmp(optarg, "auto")) {
				o->jcfg.mode = STEPS_AUTO;
			} else if (!strncmp(optarg, "every:", 6) &&
				   !parse_long(optarg + 6, 1, PERIOD_MAX, &v)) {
				o->jcfg.mode = STEPS_EVERY;
				o->jcfg.every = v;
			} else if (!parse_marker(optarg, o)) {
				o->jcfg.mode = STEPS_MARKER;
			} else {
				pr_warn("%s: invalid --steps '%s': use auto, every:N (N from 1 to %d), "
					"marker:SYMBOL[@LIB] or usdt:PROVIDER:NAME[@LIB]", who, optarg, PERIOD_MAX);
				return -EINVAL;
			}
			break;
		case OPT_WINDOW:
			if (parse_num("--window", optarg, 2, JOB_ROWS, &v))
				return -EINVAL;
			o->jcfg.window = v;
			break;
		case OPT_LISTEN:
			o->listen = optarg;
			break;
		case OPT_API_LISTEN:
			if (verb == VERB_CAPTURE) {
				pr_warn("capture: --api-listen is an option of rankscope daemon and "
					"attach");
				return -EINVAL;
			}
			o->api_listen = optarg;
			break;
		case OPT_LOCK:
			if (!o->daemon || optarg[0] != '/')
				goto daemon_only;
			o->lock_file = optarg;
			break;
		case OPT_MAX_RANKS:
			if (!o->daemon)
				goto daemon_only;
			if (parse_num("--max-ranks", optarg, 1, RS_MAX_SLOTS, &v))
				return -EINVAL;
			o->max_ranks = v;
			break;
		case OPT_MAX_JOBS:
			if (!o->daemon)
				goto daemon_only;
			if (parse_num("--max-jobs", optarg, 1, SESSION_JOBS_MAX, &v))
				return -EINVAL;
			o->max_jobs = v;
			break;
		case OPT_RESCAN:
			if (!o->daemon)
				goto daemon_only;
			if (parse_secs("--rescan", optarg, 0.1, 3600, &o->rescan_s))
				return -EINVAL;
			break;
		case OPT_RETAIN:
			if (!o->daemon)
				goto daemon_only;
			if (parse_secs("--retain", optarg, 0, 86400 * 7, &o->retain_s))
				return -EINVAL;
			break;
		case OPT_ABANDON:
			if (!o->daemon)
				goto daemon_only;
			if (parse_secs("--abandon-after", optarg, 1, 86400 * 7, &o->abandon_s))
				return -EINVAL;
			break;
		case OPT_MAX_SERIES:
			needs_listen = "max-series";
			if (parse_num("--max-series", optarg, 0, 100000000, &v))
				return -EINVAL;
			o->max_series = v;
			break;
		case OPT_PLANNED:
			needs_listen = "planned-steps";
			if (parse_num("--planned-steps", optarg, 1, 1L << 40, &v))
				return -EINVAL;
			o->planned_steps = v;
			break;
		case OPT_CUPTI:
			if (optarg[0] != '/' || strlen(optarg) >= 108) {
				pr_warn("%s: invalid --cupti-socket '%s': give an absolute path under 108 "
					"bytes", who, optarg);
				return -EINVAL;
			}
			o->cupti_socket = optarg;
			break;
		case OPT_NO_CUPTI:
			no_cupti = true;
			break;
		case OPT_CAP_DIR:
			cap_dir_given = true;
			if (optarg[0] != '/') {
				pr_warn("%s: invalid --capture-dir '%s': give an absolute path", who, optarg);
				return -EINVAL;
			}
			o->capture_dir = optarg;
			break;
		case OPT_CAP_COUNT:
			needs_listen = "capture-max-count";
			if (parse_num("--capture-max-count", optarg, 1, 10000, &v))
				return -EINVAL;
			o->capture_max_count = v;
			break;
		case OPT_CAP_MB:
			needs_listen = "capture-max-mb";
			if (parse_num("--capture-max-mb", optarg, 1, 1 << 20, &v))
				return -EINVAL;
			o->capture_max_bytes = (uint64_t)v << 20;
			break;
		case OPT_AUTO_CAP:
			o->auto_capture = true;
			break;
		case OPT_STACK_KB:
			if (parse_num("--sample-stack-kb", optarg, 0, 63, &v))
				return -EINVAL;
			o->sample_stack_bytes = (uint32_t)v << 10;
			break;
		case OPT_TOKEN: {
			char err[256];

			if (httpd__load_token(optarg, o->token, sizeof(o->token), err, sizeof(err))) {
				pr_warn("%s: %s", who, err);
				return -EINVAL;
			}
			break;
		}
		case OPT_CGROUP:
			if (!o->daemon)
				goto daemon_only;
			if (parse_cgroup(optarg, o))
				return -EINVAL;
			break;
		case OPT_K8S_PODS:
			if (!o->daemon)
				goto daemon_only;
			o->k8s_pods = optarg;
			break;
		case OPT_SECONDS:
		case 'o':
		case OPT_SERVER:
		case OPT_RANKS:
		case OPT_ALIGN:
			if (verb != VERB_CAPTURE) {
				pr_warn("%s: --%s is an option of rankscope capture", who,
					c == 'o' ? "output" : longopts[li].name);
				return -EINVAL;
			}
			if (c == OPT_SECONDS)
				cap_seconds = optarg;
			else if (c == 'o')
				o->capture_out = optarg;
			else if (c == OPT_SERVER)
				cmd_capture_server = optarg;
			else if (c == OPT_RANKS)
				cap_ranks = optarg;
			else
				cap_align = optarg;
			break;
		case OPT_CKPT_MIN:
			if (parse_num("--ckpt-min-mb", optarg, 1, 1 << 20, &v))
				return -EINVAL;
			o->ckpt.min_bytes = (uint64_t)v << 20;
			break;
		case OPT_GPU_COST:
			if (cmd__parse_price(who, optarg, &o->jcfg.gpu_hour_usd))
				return -EINVAL;
			break;
		case OPT_GPUS_RANK:
			if (parse_num("--gpus-per-rank", optarg, 1, 64, &v))
				return -EINVAL;
			o->jcfg.gpus_per_rank = v;
			break;
		case OPT_REPLAY:
			if (verb != VERB_DIAGNOSE) {
				pr_warn("%s: --replay is an option of rankscope diagnose", who);
				return -EINVAL;
			}
			if (o->nreplay == SESSION_REPLAY_MAX) {
				pr_warn("diagnose: more than %d --replay files; merge some first",
					SESSION_REPLAY_MAX);
				return -EINVAL;
			}
			o->replay[o->nreplay++] = optarg;
			break;
		case OPT_HANG: {
			double secs;

			if (parse_secs("--hang-timeout", optarg, 0.1, 86400, &secs))
				return -EINVAL;
			o->jcfg.hang_timeout_ns = (uint64_t)(secs * 1e9);
			break;
		}
		case 'h':
			usage(stdout, verb);
			return 1;
		default:
			fprintf(stderr, "Try 'rankscope %s --help'.\n", verb_name(verb));
			return -EINVAL;
		}
	}
	if (optind < argc) {
		pr_warn("%s: unexpected argument '%s'; PIDs go after -p, comma-separated", who,
			argv[optind]);
		return -EINVAL;
	}
	o->npids = targets__dedup(o->pids, o->npids);	/* -p 1 -p 1 is one target */
	if (o->nreplay) {
		if (o->npids || o->all || o->listen || o->duration_s || o->events ||
		    o->auto_capture || o->marker_sym[0] || o->usdt_name[0]) {
			pr_warn("diagnose: --replay reads recorded input: -p, --all, --duration, "
				"--events, --listen and marker steps do not apply; leave them out");
			return -EINVAL;
		}
		return 0;
	}
	if (!o->daemon && o->npids && o->all) {
		pr_warn("%s: give -p PIDS or --all, not both", who);
		return -EINVAL;
	}
	/* --capture-dir also serves --auto-capture */
	if (cap_dir_given && !o->auto_capture && !needs_listen)
		needs_listen = "capture-dir";
	if (!o->daemon && needs_listen && !o->listen && verb != VERB_CAPTURE) {
		pr_warn("%s: --%s applies to what --listen serves; give --listen ADDR too, or "
			"leave it out", who, needs_listen);
		return -EINVAL;
	}
	if (!o->npids && !o->all && !o->daemon && verb != VERB_CAPTURE) {
		pr_warn("attach: no target; give -p PID[,PID...] or --all");
		return -EINVAL;
	}
	if (verb == VERB_CAPTURE) {
		if (capture__parse(cap_seconds, cap_ranks, cap_align, NULL, &o->capture_now, cap_err,
				   sizeof(cap_err))) {
			pr_warn("capture: invalid option: %s", cap_err + strlen("bad request: "));
			return -EINVAL;
		}
		if (!o->capture_out) {
			pr_warn("capture: no output file; give -o FILE (FILE.json, or FILE.json.gz)");
			return -EINVAL;
		}
		if (out_dir_unwritable(o->capture_out, out_err, sizeof(out_err))) {
			pr_warn("capture: cannot write -o %s: %s; nothing was recorded",
				o->capture_out, out_err);
			return -EINVAL;
		}
		if (!cmd_capture_server == !(o->npids || o->all)) {
			pr_warn("capture: give either --server URL (a running daemon) or -p PIDS / --all");
			return -EINVAL;
		}
		/* recording starts with the session and the session ends once it is written;
		 * the duration is a bound in case it never is */
		o->duration_s = o->capture_now.seconds + 30;
		o->report = true;	/* no table: the capture is the output */
		return 0;
	}
	/* the daemon's CUPTI socket sits in a directory of its own next to the lock file,
	 * /run/rankscope/cupti/cupti.sock: training pods mount only that one, read only, and
	 * never reach the lock */
	if (o->daemon && !o->cupti_socket) {
		const char *slash = strrchr(o->lock_file, '/');

		snprintf(cupti_default, sizeof(cupti_default), "%.*s/cupti/cupti.sock",
			 (int)(slash - o->lock_file), o->lock_file);
		o->cupti_socket = cupti_default;
	}
	if (no_cupti)
		o->cupti_socket = NULL;
	if (o->events && !o->json) {
		pr_warn("%s: --events needs --json (events are JSON lines)", who);
		return -EINVAL;
	}
	if (o->listen) {
		struct sockaddr_storage sa;
		unsigned int salen;

		if (httpd__resolve_listen(o->listen, &sa, &salen)) {
			pr_warn("%s: invalid --listen '%s': expected HOST:PORT, e.g. 127.0.0.1:9464 "
				"or [::1]:9464", who, o->listen);
			return -EINVAL;
		}
	}
	if (o->api_listen && check_api_listen(o))
		return -EINVAL;
	return 0;
daemon_only:
	if (o->daemon)
		pr_warn("daemon: invalid --lock-file '%s': give an absolute path", optarg);
	else
		pr_warn("%s: --%s is a daemon option; see rankscope daemon --help", who,
			li >= 0 ? longopts[li].name : "?");
	return -EINVAL;
}

