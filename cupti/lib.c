// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * librankscope_cupti.so: GPU kernel, memcpy, memset and synchronization timing for rankscope.
 *
 * The CUDA driver calls InitializeInjection() when CUDA_INJECTION64_PATH names this library;
 * `rankscope inject` calls it after dlopen() in a running process. It starts one thread and
 * returns success at once, whatever happens next. The thread finds CUPTI with dlopen() (no
 * -lcupti), talks to the daemon over a unix socket, and stays dormant (no activity kind on)
 * until the daemon sends RSC_ENABLE. Nothing here exits, aborts or waits on the application;
 * memory is bounded (the queue, RSC_BUFFERS_MAX buffers, the name table).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cupti.h>
#include "rs_cupti.h"

#define EXPORT __attribute__((visibility("default")))

#define TICK_MS		100
#define FLUSH_NS	500000000ULL	/* flush: records reach the daemon within ~0.6 s */
#define CALIB_NS	500000000ULL	/* recalibrate the clock this often: before each flush, so a
					 * step of CUPTI's clock (it may follow wall time) is soon
					 * caught; 16 bracketed reads, microseconds */
#define STATUS_NS	5000000000ULL	/* a status with the counters this often */
#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	5000

/* CUPTI, resolved at run time */
static struct {
	CUptiResult (*get_version)(uint32_t *);
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
	CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
					  CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*enable)(CUpti_ActivityKind);
	CUptiResult (*disable)(CUpti_ActivityKind);
	CUptiResult (*flush_all)(uint32_t);
	CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
	CUptiResult (*timestamp)(uint64_t *);
} cu;

static struct {
	atomic_int state;		/* enum rsc_state */
	char detail[96];
	uint32_t cupti_version;
	bool enabled;
	uint32_t kinds;
	struct rsc_clock clock;		/* read by the buffer callback */
	pthread_mutex_t clock_lock;
	struct rsc_queue q;
	struct rsc_names names;
	pthread_mutex_t names_lock;
	atomic_int buffers_out;
	_Atomic(uint8_t *) ours[RSC_BUFFERS_MAX];	/* the buffers we gave CUPTI */
	atomic_uint_fast64_t records, dropped_cupti, dropped_clock;
	atomic_bool forked;		/* in a child of the process: do nothing */
	atomic_bool exiting;		/* exit() runs: CUPTI and the driver go away, keep off */
	atomic_bool in_cupti;		/* our thread is in a CUPTI call */
	int fd;				/* to the daemon; -1 when not connected */
	uint32_t names_sent;		/* on this connection */
	bool status_due;		/* a status to send before any data */
	/* the environment, read once on the caller's thread: a getenv() on ours could race the
	 * application's setenv(), which may move the environment array */
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	char cupti_lib[4096];
} g = { .state = RSC_ST_NO_CUPTI, .fd = -1 };

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cupti_now(uint64_t *ts)
{
	return cu.timestamp(ts) == CUPTI_SUCCESS ? 0 : -1;
}

static void set_state(int state, const char *detail)
{
	atomic_store(&g.state, state);
	snprintf(g.detail, sizeof(g.detail), "%s", detail);
}

/* ---- CUPTI's buffer callbacks: on CUPTI's threads, never blocking for long ---- */

/* Remember buf as ours (true), or forget it: false when it was not ours. A buffer that is
 * not ours reaches us if another tool registered its callbacks before us: its memory, never
 * to be read as ours or freed. */
static bool own(uint8_t *buf, bool take)
{
	uint8_t *want;
	int i;

	for (i = 0; i < RSC_BUFFERS_MAX; i++) {
		want = take ? NULL : buf;
		if (atomic_compare_exchange_strong(&g.ours[i], &want, take ? buf : NULL))
			return true;
	}
	return false;
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	*max_records = 0;
	*buf = NULL;
	*size = 0;
	if (atomic_fetch_add(&g.buffers_out, 1) >= RSC_BUFFERS_MAX) {
		atomic_fetch_sub(&g.buffers_out, 1);
		return;		/* CUPTI drops what it cannot store, and counts it */
	}
	if (posix_memalign((void **)buf, 8, RSC_BUFFER_SIZE)) {
		atomic_fetch_sub(&g.buffers_out, 1);
		*buf = NULL;
		return;
	}
	if (!own(*buf, true)) {		/* cannot happen: buffers_out bounds them */
		free(*buf);
		atomic_fetch_sub(&g.buffers_out, 1);
		*buf = NULL;
		return;
	}
	*size = RSC_BUFFER_SIZE;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				      size_t valid)
{
	struct rsc_rec recs[256];
	struct rsc_clock clk;
	CUpti_Activity *a = NULL;
	const char *name;
	size_t n = 0, dropped = 0;
	bool fresh;
	int r;

	if (!buf || !own(buf, false))
		return;
	pthread_mutex_lock(&g.clock_lock);
	clk = g.clock;
	pthread_mutex_unlock(&g.clock_lock);
	while (buf && !atomic_load(&g.forked) && cu.next_record(buf, valid, &a) == CUPTI_SUCCESS) {
		atomic_fetch_add(&g.records, 1);
		r = rsc_convert(a, &clk, &recs[n], &name);
		if (r < 0) {
			atomic_fetch_add(&g.dropped_clock, 1);
			continue;
		}
		if (!r)
			continue;
		if (name) {
			pthread_mutex_lock(&g.names_lock);
			recs[n].value = rsc_names_intern(&g.names, name, &fresh);
			pthread_mutex_unlock(&g.names_lock);
		}
		if (++n == sizeof(recs) / sizeof(recs[0])) {
			rsc_queue_put(&g.q, recs, n);
			n = 0;
		}
	}
	if (n)
		rsc_queue_put(&g.q, recs, n);
	if (cu.dropped && cu.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
		atomic_fetch_add(&g.dropped_cupti, dropped);
	free(buf);
	atomic_fetch_sub(&g.buffers_out, 1);
}

/* ---- finding CUDA and CUPTI ---- */

static void *open_any(const char *const *names, int flags)
{
	void *h;

	for (; *names; names++)
		if ((h = dlopen(*names, flags)))
			return h;
	return NULL;
}

static bool find_driver(void)
{
	static const char *const libcuda[] = { "libcuda.so.1", "libcuda.so", NULL };
	int (*driver_version)(int *);
	int v = 0;
	void *h;

	/* already in the process when CUDA runs; otherwise a driver must at least exist */
	h = open_any(libcuda, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = open_any(libcuda, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		set_state(RSC_ST_NO_DRIVER, "dormant: no CUDA driver (libcuda.so.1 not found)");
		return false;
	}
	driver_version = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
	if (!driver_version || driver_version(&v) || !v) {
		set_state(RSC_ST_NO_DRIVER, "dormant: no CUDA driver (cuDriverGetVersion failed)");
		return false;
	}
	return true;	/* the handle stays open: the driver is needed for as long as we run */
}

static bool find_cupti(void)
{
	static const char *const libcupti[] = {
		"libcupti.so", "libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8",
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
		"/usr/local/cuda/lib64/libcupti.so", NULL,
	};
	const char *env = g.cupti_lib;
	char msg[96];
	void *h = NULL;

	/* the one the application already uses (a wheel's libcupti.so.12): never a second CUPTI
	 * in the process; then RANKSCOPE_CUPTI_LIB, then the usual places */
	h = open_any(libcupti, RTLD_NOW | RTLD_NOLOAD);
	if (!h && env && *env)
		h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = open_any(libcupti, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		set_state(RSC_ST_NO_CUPTI, "dormant: libcupti not found (set RANKSCOPE_CUPTI_LIB)");
		return false;
	}
#define SYM(f, name) (*(void **)&cu.f = dlsym(h, name))
	if (!SYM(get_version, "cuptiGetVersion") || !SYM(subscribe, "cuptiSubscribe") ||
	    !SYM(unsubscribe, "cuptiUnsubscribe") ||
	    !SYM(register_callbacks, "cuptiActivityRegisterCallbacks") ||
	    !SYM(enable, "cuptiActivityEnable") || !SYM(disable, "cuptiActivityDisable") ||
	    !SYM(flush_all, "cuptiActivityFlushAll") ||
	    !SYM(next_record, "cuptiActivityGetNextRecord") ||
	    !SYM(timestamp, "cuptiGetTimestamp")) {
		set_state(RSC_ST_NO_CUPTI, "dormant: libcupti lacks a function rankscope needs");
		return false;
	}
	SYM(dropped, "cuptiActivityGetNumDroppedRecords");
#undef SYM
	if (cu.get_version(&g.cupti_version) != CUPTI_SUCCESS || g.cupti_version < 10) {
		snprintf(msg, sizeof(msg), "GPU timing unavailable: CUPTI API version %u is too old",
			 g.cupti_version);
		set_state(RSC_ST_CUPTI_VERSION, msg);
		return false;
	}
	return true;
}

static void CUPTIAPI probe_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p)
{
}

static const CUpti_ActivityKind kinds_of[RSC_REC_KIND_MAX][3] = {
	[RSC_REC_KERNEL] = { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL },
	[RSC_REC_MEMCPY] = { CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2 },
	[RSC_REC_MEMSET] = { CUPTI_ACTIVITY_KIND_MEMSET },
	[RSC_REC_SYNC] = { CUPTI_ACTIVITY_KIND_SYNCHRONIZATION },
	[RSC_REC_API] = { CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER },
};

static void activity(bool on, uint32_t kinds)
{
	int k, i;

	for (k = 1; k < RSC_REC_KIND_MAX; k++) {
		if (!(kinds & (1u << k)))
			continue;
		for (i = 0; i < 3 && kinds_of[k][i]; i++)
			on ? cu.enable(kinds_of[k][i]) : cu.disable(kinds_of[k][i]);
	}
}

/* The daemon asked for data. */
static void enable(uint32_t kinds)
{
	CUpti_SubscriberHandle sub;
	CUptiResult r;

	if (g.enabled || atomic_load(&g.state) != RSC_ST_READY)
		return;
	/* another tool holding the callback API (Kineto, nsys) owns CUPTI: stay out */
	r = cu.subscribe(&sub, probe_cb, NULL);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		set_state(RSC_ST_OTHER_SUBSCRIBER, "GPU timing unavailable: another CUPTI subscriber");
		return;
	}
	if (r == CUPTI_SUCCESS)
		cu.unsubscribe(sub);
	if (cu.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
		set_state(RSC_ST_NO_CUPTI, "dormant: cuptiActivityRegisterCallbacks failed");
		return;
	}
	pthread_mutex_lock(&g.clock_lock);
	rsc_clock_calibrate(&g.clock, 16, cupti_now, mono_ns);
	pthread_mutex_unlock(&g.clock_lock);
	g.kinds = kinds & ~1u;
	activity(true, g.kinds);
	g.enabled = true;
	set_state(RSC_ST_ACTIVE, "recording");
}

static void disable(void)
{
	if (!g.enabled)
		return;
	activity(false, g.kinds);
	cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	g.enabled = false;
	set_state(RSC_ST_READY, "dormant: waiting for the daemon");
}

/* ---- the daemon's socket ---- */

static void hdr(struct rsc_hdr *h, int type, size_t len)
{
	h->magic = RSC_MAGIC;
	h->version = RSC_VERSION;
	h->type = type;
	h->len = len;
	h->pad = 0;
}

static void disconnect(void)
{
	if (g.fd >= 0)
		close(g.fd);
	g.fd = -1;
}

/* Send one message without waiting: 0, or -1 (not sent; -2 also means disconnected). */
static int send_msg(const void *m, size_t len)
{
	ssize_t n;

	if (g.fd < 0)
		return -2;
	n = send(g.fd, m, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n == (ssize_t)len)
		return 0;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -1;
	disconnect();
	return -2;
}

static void send_status(void)
{
	struct rsc_status st = {};

	hdr(&st.h, RSC_STATUS, sizeof(st));
	st.pid = getpid();
	st.state = atomic_load(&g.state);
	st.cupti_version = g.cupti_version;
	st.lib_version = RSC_VERSION;
	st.records = atomic_load(&g.records);
	pthread_mutex_lock(&g.q.lock);
	st.dropped_queue = g.q.dropped;
	pthread_mutex_unlock(&g.q.lock);
	st.dropped_cupti = atomic_load(&g.dropped_cupti);
	st.dropped_clock = atomic_load(&g.dropped_clock);
	snprintf(st.detail, sizeof(st.detail), "%s", g.detail);
	/* kept due until the socket takes it: a slow daemon still gets the counters */
	g.status_due = send_msg(&st, sizeof(st)) != 0 && g.fd >= 0;
}

/* rankscope inject --cupti-socket: the daemon's socket, given before the environment */
static char sock_given[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];

static void read_env(void)
{
	const char *p = sock_given[0] ? sock_given : getenv(RSC_SOCKET_ENV);

	/* one too long stays too long (sock_path has a byte more than sun_path): no connect */
	snprintf(g.sock_path, sizeof(g.sock_path), "%s", p && *p ? p : RSC_SOCKET_DEFAULT);
	p = getenv("RANKSCOPE_CUPTI_LIB");
	snprintf(g.cupti_lib, sizeof(g.cupti_lib), "%s", p ? p : "");
}

static void try_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = g.sock_path;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return;
	}
	g.fd = fd;
	g.names_sent = 0;	/* a new daemon knows no name */
	send_status();
}

/* Messages from the daemon: RSC_ENABLE, RSC_DISABLE. Anything else is ignored. */
static void read_control(void)
{
	union {
		struct rsc_hdr h;
		struct rsc_enable en;
		char raw[256];
	} m;
	ssize_t n;

	while (g.fd >= 0) {
		n = recv(g.fd, &m, sizeof(m), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {		/* the daemon went away: back to dormant */
			disconnect();
			disable();
			return;
		}
		if ((size_t)n < sizeof(m.h) || m.h.magic != RSC_MAGIC || m.h.version != RSC_VERSION ||
		    m.h.len != (size_t)n)
			continue;
		if (m.h.type == RSC_ENABLE && (size_t)n >= sizeof(m.en)) {
			/* names sent while the daemon did not want us were not kept: all again */
			g.names_sent = 0;
			enable(m.en.kinds);
		}
		else if (m.h.type == RSC_DISABLE)
			disable();
		send_status();
	}
}

/* The names not sent on this connection yet. Returns 0, or -1 when the socket is full or gone. */
static int send_names(void)
{
	static char raw[sizeof(struct rsc_name) + RSC_NAME_MAX];
	struct rsc_name *nm = (struct rsc_name *)raw;
	const char *name;
	uint32_t len;

	for (;;) {
		pthread_mutex_lock(&g.names_lock);
		if (g.names_sent >= g.names.n) {
			pthread_mutex_unlock(&g.names_lock);
			break;
		}
		name = rsc_names_get(&g.names, g.names_sent + 1, &len);
		if (name) {
			nm->id = g.names_sent + 1;
			nm->len = len;
			memcpy(raw + sizeof(*nm), name, len);
		}
		pthread_mutex_unlock(&g.names_lock);
		if (name) {
			hdr(&nm->h, RSC_NAME, sizeof(*nm) + len);
			if (send_msg(nm, sizeof(*nm) + len))
				return -1;	/* full, or gone: again when writable */
		}
		g.names_sent++;
	}
	return 0;
}

/* A due status, then records, each batch after the names it may use (CUPTI's thread can add a
 * name at any time), as long as the socket takes them. */
static void send_data(void)
{
	static union {
		struct rsc_batch b;
		char raw[RSC_MSG_MAX];
	} m;
	struct rsc_rec *recs = (struct rsc_rec *)(m.raw + sizeof(m.b));
	size_t n;
	int r;

	if (g.status_due)
		send_status();
	while (g.fd >= 0 && !g.status_due) {
		/* take first: every name these records use was interned before they were queued,
		 * so sending the names now covers them */
		n = rsc_queue_take(&g.q, recs, RSC_BATCH_MAX);
		if (send_names() || !n) {
			rsc_queue_unget(&g.q, recs, n);
			return;
		}
		hdr(&m.b.h, RSC_BATCH, sizeof(m.b) + n * sizeof(*recs));
		m.b.nrec = n;
		m.b.pad = 0;
		m.b.calib_err_ns = g.clock.err_ns;
		r = send_msg(&m, m.b.h.len);
		if (r) {
			rsc_queue_unget(&g.q, recs, n);	/* kept: dropped only when the queue fills */
			return;
		}
	}
}

/* Anything waiting for the socket? */
static bool has_pending(void)
{
	bool names, recs;

	pthread_mutex_lock(&g.names_lock);
	names = g.names_sent < g.names.n;
	pthread_mutex_unlock(&g.names_lock);
	pthread_mutex_lock(&g.q.lock);
	recs = g.q.len > 0;
	pthread_mutex_unlock(&g.q.lock);
	return g.status_due || names || recs;
}

static void at_exit(void);

static void *run(void *arg)
{
	uint64_t now, last_flush = 0, last_calib = 0, last_status = 0, next_connect = 0;
	unsigned int backoff = BACKOFF_MIN_MS;
	struct pollfd pfd;

	if (find_driver() && find_cupti()) {
		/* once more, now that libcupti is loaded: exit handlers run last first, so ours
		 * must come before whatever CUPTI registered as it loaded */
		atexit(at_exit);
		set_state(RSC_ST_READY, "dormant: waiting for the daemon");
	}
	for (;;) {
		if (atomic_load(&g.forked) || atomic_load(&g.exiting))
			return NULL;
		now = mono_ns();
		if (g.fd < 0 && now >= next_connect) {
			try_connect();
			if (g.fd < 0) {
				next_connect = now + backoff * 1000000ULL;
				backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
			} else {
				backoff = BACKOFF_MIN_MS;
			}
		}
		pfd.fd = g.fd;
		pfd.events = POLLIN | (has_pending() ? POLLOUT : 0);
		pfd.revents = 0;
		if (g.fd >= 0)
			poll(&pfd, 1, TICK_MS);
		else
			usleep(TICK_MS * 1000);
		/* CUPTI's calls, fenced from exit(): at_exit() waits for this section to end, and
		 * the section does not start once exit() has begun */
		atomic_store(&g.in_cupti, true);
		if (atomic_load(&g.exiting)) {
			atomic_store(&g.in_cupti, false);
			return NULL;
		}
		if (g.fd >= 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			read_control();
		now = mono_ns();
		if (g.enabled && now - last_calib >= CALIB_NS) {
			struct rsc_clock c = {};

			if (!rsc_clock_calibrate(&c, 16, cupti_now, mono_ns)) {
				pthread_mutex_lock(&g.clock_lock);
				g.clock = c;
				pthread_mutex_unlock(&g.clock_lock);
			}
			last_calib = now;
		}
		if (g.enabled && now - last_flush >= FLUSH_NS) {
			/* not FORCED: that hands back buffers with records still in flight, their
			 * timestamps 0, lost for good; a queued NCCL kernel waiting for a straggler
			 * is exactly the record that matters. 0 returns the completed ones. */
			cu.flush_all(0);
			last_flush = now;
		}
		atomic_store(&g.in_cupti, false);
		send_data();
		if (g.fd >= 0 && now - last_status >= STATUS_NS) {
			send_status();
			last_status = now;
		}
	}
	return NULL;
}

/* At exit() the thread stops calling CUPTI before the driver and CUPTI tear down: a flush
 * racing their destructors could turn a clean exit into a crash. What is still in CUPTI's
 * buffers is lost; a bounded wait (200 ms) for a call in progress. */
static void at_exit(void)
{
	int i;

	atomic_store(&g.exiting, true);
	for (i = 0; i < 200 && atomic_load(&g.in_cupti); i++)
		usleep(1000);
}

static void in_child(void)
{
	/* a forked worker shares our socket and our CUPTI state: it must touch neither */
	atomic_store(&g.forked, true);
	atomic_store(&g.in_cupti, false);	/* our thread is not in the child */
	if (g.fd >= 0)
		close(g.fd);
	g.fd = -1;
}

EXPORT int InitializeInjection(void);

/* rankscope inject --cupti-socket PATH: as InitializeInjection, with the daemon's socket
 * given (copied at once: it lives in the injector's scratch space on our stack). A path
 * too long for a unix socket stays too long: no connect. Already running: its socket stays. */
EXPORT int RankscopeInjectWithSocket(const char *sock)
{
	if (sock && sock[0] == '/')
		snprintf(sock_given, sizeof(sock_given), "%s", sock);
	return InitializeInjection();
}

EXPORT int InitializeInjection(void)
{
	static atomic_flag once = ATOMIC_FLAG_INIT;
	sigset_t all, old;
	pthread_t t;

	if (atomic_flag_test_and_set(&once))
		return 1;
	if (rsc_queue_init(&g.q))
		return 1;	/* no memory: stay out, and never fail the application */
	pthread_mutex_init(&g.clock_lock, NULL);
	pthread_mutex_init(&g.names_lock, NULL);
	read_env();
	pthread_atfork(NULL, NULL, in_child);
	atexit(at_exit);
	/* our thread takes none of the application's signals */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (!pthread_create(&t, NULL, run, NULL))
		pthread_detach(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 1;
}
