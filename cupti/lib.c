// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * librankscope_cupti.so: GPU kernel, memcpy, memset and synchronization timing for rankscope.
 *
 * The CUDA driver calls InitializeInjection() when CUDA_INJECTION64_PATH names this library;
 * `rankscope inject` calls it after dlopen() in a running process. It starts one thread and
 * returns success at once, whatever happens next. The thread finds CUPTI with dlopen() (no
 * -lcupti), talks to the daemon over a unix socket, and stays dormant (no activity kind on)
 * until the daemon sends RSC_ENABLE. Nothing here exits, aborts or waits on the application;
 * memory is bounded (the queue, RSC_POOL_BUFS buffers, the name table).
 */
#include "glibc_compat.h"
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

#define TICK_MS		100	/* flush, calibrate and send this often: a buffer of a step
				 * reaches the daemon within ~0.2 s, well inside its 2 s
				 * settle window, at any kernel rate */
#define STATUS_NS	5000000000ULL	/* a status with the counters this often */
#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	5000
#define TAKEN_NS	5000000000ULL	/* buffers out and none back for 5 s: force a flush, and
					 * if none comes back even then, another client has them */
#define QUIET_NS	30000000000ULL	/* no buffer back for this long: say so */
#define RECHECK_NS	5000000000ULL	/* taken over: is CUPTI free again? */
#define REENABLE_MAX	3	/* times the library takes CUPTI back after another client */
#define EXIT_WAIT_S	2	/* at exit, wait at most this for our thread's CUPTI call */
#define CUPTI_NO_NULL	27	/* CUPTI API versions before this crash on a NULL buffer */

/* CUPTI, resolved at run time; the optional ones may be NULL */
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
	/* optional */
	CUptiResult (*set_attr)(CUpti_ActivityAttribute, size_t *, void *);
	CUptiResult (*timestamp_cb)(CUpti_TimestampCallbackFunc);
	CUptiResult (*all_sync)(uint8_t);
	CUptiResult (*cb_state)(uint32_t *, CUpti_SubscriberHandle, CUpti_CallbackDomain,
				CUpti_CallbackId);
	CUptiResult (*result_string)(CUptiResult, const char **);
} cu;

static struct {
	atomic_int state;		/* enum rsc_state */
	char detail[96];
	uint32_t cupti_version;
	int driver_version;
	bool enabled;
	uint32_t kinds;
	CUpti_SubscriberHandle sub;	/* held while recording: other tools see CUPTI in use */
	bool subscribed;
	bool own_clock;			/* our CLOCK_MONOTONIC timestamp callback is installed */
	bool finalized;			/* taken over by a client that finalized CUPTI */
	int reenabled;
	uint64_t taken_ns, quiet_since;
	struct rsc_timeline tl;		/* our thread's (and the exiting thread's, once fenced) */
	struct rsc_pool pool;
	bool pool_ready;
	struct rsc_queue q;
	struct rsc_names names;
	pthread_mutex_t names_lock;
	pthread_mutex_t run_lock;	/* held by our thread for each tick's work: the exit fence */
	atomic_uint_fast64_t callbacks;	/* buffer callbacks CUPTI made to us */
	atomic_uint_fast64_t records, dropped_cupti, dropped_clock;
	atomic_bool forked;		/* in a child of the process: do nothing */
	atomic_bool exiting;		/* exit() runs: CUPTI and the driver go away, keep off */
	int fd;				/* to the daemon; -1 when not connected */
	uint32_t names_sent;		/* on this connection */
	bool status_due;		/* a status to send before any data */
	uint64_t calib_err;		/* the newest calibration's half-width */
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

static __thread bool calibrating;	/* our own cuptiGetTimestamp calls */
static atomic_uint_fast64_t stamps;	/* records CUPTI stamped through mono_cb */

/* Our timestamp callback: CUPTI's records then come on CLOCK_MONOTONIC, the daemon's clock.
 * It also counts the records being made: when they are, and none reaches our buffer callbacks,
 * another client has the buffers (watch()). */
static uint64_t CUPTIAPI mono_cb(void)
{
	if (!calibrating)
		atomic_fetch_add_explicit(&stamps, 1, memory_order_relaxed);
	return mono_ns();
}

static int cupti_now(uint64_t *ts)
{
	CUptiResult r;

	calibrating = true;
	r = cu.timestamp(ts);
	calibrating = false;
	return r == CUPTI_SUCCESS ? 0 : -1;
}

static void set_state(int state, const char *detail)
{
	atomic_store(&g.state, state);
	snprintf(g.detail, sizeof(g.detail), "%s", detail);
}

/* "GPU timing off: cuptiActivityEnable(10): CUPTI_ERROR_NOT_COMPATIBLE" */
static void set_failed(int state, const char *call, long arg, CUptiResult r)
{
	const char *name = NULL;
	char code[24], msg[96];

	if (!cu.result_string || cu.result_string(r, &name) != CUPTI_SUCCESS || !name) {
		snprintf(code, sizeof(code), "error %d", (int)r);
		name = code;
	}
	if (arg >= 0)
		snprintf(msg, sizeof(msg), "GPU timing off: %s(%ld): %s", call, arg, name);
	else
		snprintf(msg, sizeof(msg), "GPU timing off: %s: %s", call, name);
	set_state(state, msg);
}

/* ---- CUPTI's buffer callbacks: on CUPTI's threads (often the application's), never
 * blocking, never allocating ---- */

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	atomic_fetch_add(&g.callbacks, 1);
	*buf = rsc_pool_get(&g.pool);
	*size = !*buf ? 0 : *buf == g.pool.spare ? RSC_SPARE_SIZE : g.pool.size;
	/* the spare (CUPTI < 27, every buffer out) takes one record a time: shared by every
	 * thread CUPTI fills it from, its content is never read, and each fill counts one */
	*max_records = !*buf ? 0 : *buf == g.pool.spare ? 1 : RSC_BUFFER_RECORDS;
	/* NULL (CUPTI 27 and later only): CUPTI drops what it cannot store, and counts it */
}

/* Records stay on CUPTI's clock here; our thread converts them by the calibration of the
 * time they were made (timeline.c). */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				      size_t valid)
{
	static const struct rsc_clock raw = { .valid = true };
	struct rsc_rec recs[256];
	CUpti_Activity *a = NULL;
	const char *name;
	size_t n = 0, dropped = 0;
	bool fresh;
	int r, put, slot;

	put = rsc_pool_put(&g.pool, buf, &slot);
	if (put == RSC_PUT_NOT_OURS || put == RSC_PUT_GHOST)
		return;		/* another client's buffer, or one of ours it had: not read */
	atomic_fetch_add(&g.callbacks, 1);
	if (put == RSC_PUT_SPARE) {
		/* CUPTI < 27 had no buffer of ours: the one record it wrote here is counted,
		 * not read (another fill may be writing over it) */
		if (valid)
			atomic_fetch_add(&g.dropped_cupti, 1);
		return;
	}
	while (!atomic_load(&g.forked) && cu.next_record(buf, valid, &a) == CUPTI_SUCCESS) {
		atomic_fetch_add(&g.records, 1);
		r = rsc_convert(a, &raw, &recs[n], &name);
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
	/* dirty now: our thread zeroes it before CUPTI gets it again */
	rsc_pool_release(&g.pool, slot);
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
	g.driver_version = v;
	return true;	/* the handle stays open: the driver is needed for as long as we run */
}

/* The CUDA major version of a CUPTI API version (cupti_version.h): xxyyzz from CUDA 13 on,
 * 19 to 28 for CUDA 12, 13 to 18 for CUDA 11. */
static int cupti_cuda_major(uint32_t v)
{
	if (v >= 100000)
		return v / 10000;
	return v >= 19 ? 12 : v >= 13 ? 11 : 10;
}

static bool bind_cupti(void *h)
{
#define SYM(f, name) (*(void **)&cu.f = dlsym(h, name))
	if (!SYM(get_version, "cuptiGetVersion") || !SYM(subscribe, "cuptiSubscribe") ||
	    !SYM(unsubscribe, "cuptiUnsubscribe") ||
	    !SYM(register_callbacks, "cuptiActivityRegisterCallbacks") ||
	    !SYM(enable, "cuptiActivityEnable") || !SYM(disable, "cuptiActivityDisable") ||
	    !SYM(flush_all, "cuptiActivityFlushAll") ||
	    !SYM(next_record, "cuptiActivityGetNextRecord") ||
	    !SYM(timestamp, "cuptiGetTimestamp"))
		return false;
	SYM(dropped, "cuptiActivityGetNumDroppedRecords");
	SYM(set_attr, "cuptiActivitySetAttribute");
	SYM(timestamp_cb, "cuptiActivityRegisterTimestampCallback");
	SYM(all_sync, "cuptiActivityEnableAllSyncRecords");
	SYM(cb_state, "cuptiGetCallbackState");
	SYM(result_string, "cuptiGetResultString");
#undef SYM
	return true;
}

/* Take libcupti h if it is usable with this driver: true; else false, with why. */
static bool try_cupti(void *h, char *why, size_t len)
{
	CUptiResult (*version)(uint32_t *);
	uint32_t v = 0;

	*(void **)&version = dlsym(h, "cuptiGetVersion");
	if (!version || version(&v) != CUPTI_SUCCESS) {
		snprintf(why, len, "dormant: libcupti lacks cuptiGetVersion");
		return false;
	}
	if (v < 10) {
		snprintf(why, len, "GPU timing unavailable: CUPTI API version %u is too old", v);
		return false;
	}
	/* a CUPTI newer than the driver fails in odd ways: CUDA 13's needs a 13 driver */
	if (cupti_cuda_major(v) > g.driver_version / 1000) {
		snprintf(why, len, "GPU timing unavailable: CUPTI %u is for CUDA %d, the driver "
			 "is CUDA %d.%d", v, cupti_cuda_major(v), g.driver_version / 1000,
			 g.driver_version % 1000 / 10);
		return false;
	}
	if (!bind_cupti(h)) {
		snprintf(why, len, "dormant: libcupti lacks a function rankscope needs");
		return false;
	}
	g.cupti_version = v;
	return true;
}

static bool find_cupti(void)
{
	static const char *const libcupti[] = {
		"libcupti.so", "libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8",
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
		"/usr/local/cuda/lib64/libcupti.so", NULL,
	};
	const char *const *name;
	char why[96] = "dormant: libcupti not found (set RANKSCOPE_CUPTI_LIB)";
	void *h;

	/* the one the application already uses (a wheel's libcupti.so.12): never a second CUPTI
	 * in the process, so if it is unusable, so is CUPTI */
	for (name = libcupti; *name; name++) {
		if (!(h = dlopen(*name, RTLD_NOW | RTLD_NOLOAD)))
			continue;
		if (try_cupti(h, why, sizeof(why)))
			return true;
		set_state(RSC_ST_CUPTI_VERSION, why);
		return false;
	}
	/* then RANKSCOPE_CUPTI_LIB, then the usual places: the first the driver can run */
	for (name = g.cupti_lib[0] ? NULL : libcupti;; name = name ? name + 1 : libcupti) {
		if (name && !*name)
			break;
		h = dlopen(name ? *name : g.cupti_lib, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			continue;
		if (try_cupti(h, why, sizeof(why)))
			return true;
		dlclose(h);
	}
	set_state(strstr(why, "unavailable") ? RSC_ST_CUPTI_VERSION : RSC_ST_NO_CUPTI, why);
	return false;
}

/* Before CUDA creates a context: cap CUPTI's device buffers (250 per context by default, 3.2 MB
 * each, taken from the training job's GPU memory once activity is on). */
static void limit_device_pool(void)
{
	size_t v = RSC_DEVICE_POOL_MAX, sz = sizeof(v);

	if (cu.set_attr)
		cu.set_attr(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, &sz, &v);
	/* a failure leaves CUPTI's default: more device memory, nothing else */
}

/* The subscription is held while recording, so that other tools see CUPTI in use; it does
 * not enable a single callback. */
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

/* Turn the kinds off, or on: 0, or the failed kind's result (those turned on are off again). */
static CUptiResult activity(bool on, uint32_t kinds, CUpti_ActivityKind *failed)
{
	CUptiResult r;
	int k, i;

	for (k = 1; k < RSC_REC_KIND_MAX; k++) {
		if (!(kinds & (1u << k)))
			continue;
		for (i = 0; i < 3 && kinds_of[k][i]; i++) {
			if (!on) {
				cu.disable(kinds_of[k][i]);	/* nothing to do if it fails */
				continue;
			}
			r = cu.enable(kinds_of[k][i]);
			if (r != CUPTI_SUCCESS) {
				*failed = kinds_of[k][i];
				while (i-- > 0)
					cu.disable(kinds_of[k][i]);
				activity(false, kinds & ((1u << k) - 1), failed);
				return r;
			}
		}
	}
	return CUPTI_SUCCESS;
}

static void release(void)
{
	if (g.subscribed)
		cu.unsubscribe(g.sub);
	g.subscribed = false;
}

/* One calibration point, on CUPTI's clock as it is now. */
static void calibrate(void)
{
	struct rsc_clock c = {};

	if (rsc_clock_calibrate(&c, 16, cupti_now, mono_ns))
		return;
	if (rsc_timeline_add(&g.tl, c.cupti_ts, c.mono_ts, c.err_ns) >= 0)
		g.calib_err = c.err_ns;
}

/* Take CUPTI: subscribe, lend buffers, our clock, the kinds. false with the state set. */
static bool take_cupti(uint32_t kinds)
{
	CUpti_ActivityKind bad = 0;
	uint8_t one = 1;
	size_t sz = sizeof(one);
	CUptiResult r;

	/* another tool holding the callback API (Kineto, nsys) owns CUPTI: stay out */
	r = cu.subscribe(&g.sub, probe_cb, NULL);
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		set_state(RSC_ST_OTHER_SUBSCRIBER, "GPU timing unavailable: another CUPTI subscriber");
		return false;
	}
	if (r != CUPTI_SUCCESS) {
		set_failed(RSC_ST_FAILED, "cuptiSubscribe", -1, r);
		return false;
	}
	g.subscribed = true;
	if (!g.pool_ready) {
		if (rsc_pool_init(&g.pool, RSC_BUFFER_SIZE, g.cupti_version < CUPTI_NO_NULL)) {
			release();
			set_state(RSC_ST_FAILED, "GPU timing off: no memory for activity buffers");
			return false;
		}
		g.pool_ready = true;
	} else if (rsc_pool_renew(&g.pool) < 0) {
		release();
		set_state(RSC_ST_FAILED, "GPU timing off: no memory for activity buffers");
		return false;
	}
	/* our buffers come zeroed (on our thread): CUPTI need not zero them on the
	 * application's; if it cannot be told, it zeroes them itself */
	if (cu.set_attr)
		cu.set_attr(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &sz, &one);
	r = cu.register_callbacks(buffer_requested, buffer_completed);
	if (r != CUPTI_SUCCESS) {
		release();
		set_failed(RSC_ST_FAILED, "cuptiActivityRegisterCallbacks", -1, r);
		return false;
	}
	/* no other client: records on CLOCK_MONOTONIC, before any kind is on; without the
	 * callback (older CUPTI) the calibration follows CUPTI's own clock */
	g.own_clock = cu.timestamp_cb && cu.timestamp_cb(mono_cb) == CUPTI_SUCCESS;
	/* no records for cudaEventQuery/cudaStreamQuery that found work pending: the NCCL
	 * watchdog and the caching allocator poll them all the time */
	if (cu.all_sync)
		cu.all_sync(0);
	calibrate();
	r = activity(true, kinds, &bad);
	if (r != CUPTI_SUCCESS) {
		release();
		set_failed(RSC_ST_FAILED, "cuptiActivityEnable", bad, r);
		return false;
	}
	g.kinds = kinds;
	g.enabled = true;
	g.quiet_since = mono_ns();
	set_state(RSC_ST_ACTIVE, "recording");
	return true;
}

/* The daemon asked for data. */
static void enable(uint32_t kinds)
{
	if (g.enabled || atomic_load(&g.state) != RSC_ST_READY)
		return;
	take_cupti(kinds & ~1u);
}

static void disable(void)
{
	CUpti_ActivityKind bad;

	if (atomic_load(&g.state) == RSC_ST_TAKEN_OVER) {
		/* CUPTI is not ours to touch: let go of the subscription, and never take
		 * CUPTI back */
		release();
		g.finalized = false;
		g.reenabled = REENABLE_MAX;
		return;
	}
	if (!g.enabled)
		return;
	activity(false, g.kinds, &bad);
	cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	release();
	g.enabled = false;
	set_state(RSC_ST_READY, "dormant: waiting for the daemon");
}

/* Another client has CUPTI: stop calling it, forget the buffers it holds, say why. The
 * subscription, if still ours, stays held: its going stale is how a later cuptiFinalize of the
 * other client shows (retake()). */
static void taken_over(const char *why, bool finalized)
{
	char msg[96];
	int lost = rsc_pool_abandon(&g.pool);

	if (finalized)
		g.subscribed = false;
	g.enabled = false;
	g.finalized = finalized;
	g.taken_ns = mono_ns();
	snprintf(msg, sizeof(msg), "GPU timing off: %s (%d buffers lost)", why, lost);
	set_state(RSC_ST_TAKEN_OVER, msg);
}

/* Each tick while recording: is CUPTI still ours? Suspect a takeover when buffers are out
 * and none comes back, or when CUPTI stamps records (our timestamp callback runs) and none
 * reaches us, for 5 s; confirm with a forced flush, which hands every buffer of ours back. */
static void watch(uint64_t now, uint64_t *calls_seen, uint64_t *since)
{
	static uint64_t stamps_seen;
	uint64_t calls = atomic_load(&g.callbacks), made = atomic_load(&stamps);
	bool suspect;
	uint32_t on = 0;
	CUptiResult r;

	/* a client that finalized CUPTI took our subscription with it */
	if (g.subscribed && cu.cb_state &&
	    cu.cb_state(&on, g.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED) !=
	    CUPTI_SUCCESS) {
		taken_over("another CUPTI client finalized CUPTI", true);
		return;
	}
	if (calls != *calls_seen) {
		*calls_seen = calls;
		stamps_seen = made;
		*since = 0;
		g.quiet_since = now;
		if (atomic_load(&g.state) == RSC_ST_QUIET)
			set_state(RSC_ST_ACTIVE, "recording");
		return;
	}
	suspect = rsc_pool_count(&g.pool, RSC_BUF_OUT) > 0 || (g.own_clock && made != stamps_seen);
	if (!suspect)
		*since = 0;
	else if (!*since)
		*since = now;
	if (suspect && now - *since >= TAKEN_NS) {
		/* a forced flush returns every buffer of ours (a record still running, a hung
		 * collective, loses its times) */
		*since = 0;
		stamps_seen = atomic_load(&stamps);
		r = cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		if (r != CUPTI_SUCCESS)
			taken_over("another CUPTI client finalized CUPTI (cuptiActivityFlushAll "
				   "failed)", true);
		else if (atomic_load(&g.callbacks) == calls)
			taken_over("another CUPTI client took the activity buffers", false);
		return;
	}
	if (now - g.quiet_since >= QUIET_NS && atomic_load(&g.state) == RSC_ST_ACTIVE)
		set_state(RSC_ST_QUIET, "recording, but no GPU records for 30 s: an idle GPU, or "
			  "another CUPTI client");
}

/* Taken over: once the other client is done, and has shown it by finalizing CUPTI (our
 * subscription goes stale with it), take CUPTI back if no one holds it. A client that keeps
 * CUPTI (no finalize) keeps it: the library stays taken_over. Checked every 5 s, with one
 * read-only call. */
static void retake(uint64_t now)
{
	CUpti_SubscriberHandle sub;
	uint32_t on = 0;

	if (g.reenabled >= REENABLE_MAX || now - g.taken_ns < RECHECK_NS)
		return;
	g.taken_ns = now;
	if (g.subscribed && cu.cb_state &&
	    cu.cb_state(&on, g.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED) !=
	    CUPTI_SUCCESS) {
		g.subscribed = false;
		g.finalized = true;
	}
	if (!g.finalized)
		return;
	if (cu.subscribe(&sub, probe_cb, NULL) != CUPTI_SUCCESS)
		return;
	cu.unsubscribe(sub);
	g.reenabled++;
	atomic_store(&g.state, RSC_ST_READY);
	if (!take_cupti(g.kinds))
		return;
	snprintf(g.detail, sizeof(g.detail), "recording again after another client (%d)",
		 g.reenabled);
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

/* Records onto CLOCK_MONOTONIC, in place: the first *wait of them were looked at (the rest
 * were made after the newest calibration and wait for the next); of those, the converted ones
 * are packed at the front and counted in the return, the ones no calibration covers dropped. */
static size_t to_mono(struct rsc_rec *recs, size_t n, size_t *wait)
{
	uint64_t start, end;
	size_t i, k = 0;
	int r1, r2;

	for (i = 0; i < n; i++) {
		r1 = rsc_timeline_map(&g.tl, recs[i].start_ns, &start);
		r2 = rsc_timeline_map(&g.tl, recs[i].end_ns, &end);
		if (r1 == -EAGAIN || r2 == -EAGAIN)
			break;
		if (r1 || r2 || end < start) {
			atomic_fetch_add(&g.dropped_clock, 1);
			continue;
		}
		recs[i].start_ns = start;
		recs[i].end_ns = end;
		recs[k++] = recs[i];
	}
	*wait = i;
	return k;
}

/* Converted, not sent yet: the socket was full */
static struct rsc_rec ready[RSC_BATCH_MAX];
static size_t nready;

/* A due status, then records, each batch after the names it may use (CUPTI's thread can add a
 * name at any time), as long as the socket takes them. */
static void send_data(void)
{
	static union {
		struct rsc_batch b;
		char raw[RSC_MSG_MAX];
	} m;
	struct rsc_rec *recs = (struct rsc_rec *)(m.raw + sizeof(m.b));
	size_t n, looked;

	if (g.status_due)
		send_status();
	while (g.fd >= 0 && !g.status_due) {
		if (!nready) {
			/* take first: every name these records use was interned before they were
			 * queued, so sending the names next covers them */
			n = rsc_queue_take(&g.q, ready, RSC_BATCH_MAX);
			nready = to_mono(ready, n, &looked);
			if (looked < n)
				rsc_queue_unget(&g.q, ready + looked, n - looked);
			if (!nready) {
				if (!n || looked < n)
					return;	/* none, or waiting for the next calibration */
				continue;	/* every one dropped: the next ones */
			}
		}
		if (send_names())
			return;		/* full, or gone: ready waits */
		memcpy(recs, ready, nready * sizeof(*recs));
		hdr(&m.b.h, RSC_BATCH, sizeof(m.b) + nready * sizeof(*recs));
		m.b.nrec = nready;
		m.b.pad = 0;
		m.b.calib_err_ns = g.own_clock ? 0 : g.calib_err;
		if (send_msg(&m, m.b.h.len))
			return;		/* kept: dropped only when the queue fills */
		nready = 0;
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
	return g.status_due || names || recs || nready;
}

static void at_exit(void);

/* CUPTI found (on the caller's thread, or on ours for a late injection): ready. */
static bool found_cupti(void)
{
	if (!find_driver() || !find_cupti())
		return false;
	limit_device_pool();
	/* exit handlers run last first: ours, registered now, runs before the destructors
	 * libcupti registered as it loaded */
	atexit(at_exit);
	set_state(RSC_ST_READY, "dormant: waiting for the daemon");
	return true;
}

/* rankscope inject: CUDA runs already; CUPTI is found on our thread */
static bool late;

/* One tick's work with CUPTI and the socket, under run_lock. */
static void tick(const struct pollfd *pfd, uint64_t *calls_seen, uint64_t *since)
{
	static uint64_t last;
	uint64_t now;
	CUptiResult r;

	if (g.fd >= 0 && (pfd->revents & (POLLIN | POLLHUP | POLLERR)))
		read_control();
	now = mono_ns();
	if (now - last < TICK_MS * 1000000ULL) {
		send_data();	/* the socket took more: CUPTI waits for the next tick */
		return;
	}
	last = now;
	if (g.enabled) {
		/* not FORCED: that hands back buffers with records still in flight, their
		 * timestamps 0, lost for good; a queued NCCL kernel waiting for a straggler is
		 * exactly the record that matters. 0 returns the buffers whose records are all
		 * complete, which RSC_BUFFER_RECORDS keeps small. */
		r = cu.flush_all(0);
		if (r != CUPTI_SUCCESS)
			taken_over("another CUPTI client finalized CUPTI (cuptiActivityFlushAll "
				   "failed)", true);
		else
			watch(now, calls_seen, since);
		/* after the flush: what it delivered was made before this point */
		if (g.enabled)
			calibrate();
	} else if (atomic_load(&g.state) == RSC_ST_TAKEN_OVER) {
		retake(now);
	}
	if (g.pool_ready)
		rsc_pool_scrub(&g.pool);
	send_data();
}

static void *run(void *arg)
{
	uint64_t now, last_status = 0, next_connect = 0, calls_seen = 0, since = 0;
	unsigned int backoff = BACKOFF_MIN_MS;
	struct pollfd pfd;

	if (late)
		found_cupti();
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
		/* fenced from exit(): at_exit() takes run_lock and keeps it, so no tick starts
		 * once exit() has begun, and exit() waits for the one running */
		pthread_mutex_lock(&g.run_lock);
		if (atomic_load(&g.exiting)) {
			pthread_mutex_unlock(&g.run_lock);
			return NULL;
		}
		tick(&pfd, &calls_seen, &since);
		now = mono_ns();
		if (g.fd >= 0 && now - last_status >= STATUS_NS) {
			send_status();
			last_status = now;
		}
		pthread_mutex_unlock(&g.run_lock);
	}
	return NULL;
}

/* exit(): fence our thread (wait for its tick, bounded), then, on the exiting thread while
 * CUPTI and the driver are still up (our handler runs before their destructors), turn the
 * kinds off, force the last buffers out and send what the socket takes. run_lock stays held:
 * our thread never calls CUPTI again. */
static void at_exit(void)
{
	static atomic_flag once = ATOMIC_FLAG_INIT;
	CUpti_ActivityKind bad;
	struct timespec until;

	if (atomic_flag_test_and_set(&once) || atomic_load(&g.forked))
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += EXIT_WAIT_S;
	if (pthread_mutex_timedlock(&g.run_lock, &until)) {
		/* our thread is stuck in CUPTI: leave everything alone */
		atomic_store(&g.exiting, true);
		return;
	}
	atomic_store(&g.exiting, true);
	if (g.enabled) {
		activity(false, g.kinds, &bad);
		cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		calibrate();
		release();
		g.enabled = false;
	}
	send_status();	/* the final counters first, while the socket has room */
	send_data();
}

static void in_child(void)
{
	/* a forked worker shares our socket and our CUPTI state: it must touch neither */
	atomic_store(&g.forked, true);
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
	late = true;
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
	pthread_mutex_init(&g.names_lock, NULL);
	pthread_mutex_init(&g.run_lock, NULL);
	read_env();
	pthread_atfork(NULL, NULL, in_child);
	/* from the driver: CUDA is initializing, no context yet, the one moment CUPTI's device
	 * buffer pool can still be capped. rankscope inject comes later; its thread finds CUPTI. */
	if (!late)
		found_cupti();
	/* our thread takes none of the application's signals */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (!pthread_create(&t, NULL, run, NULL))
		pthread_detach(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 1;
}
