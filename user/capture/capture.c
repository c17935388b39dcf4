// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Captures: requests, recording buffers, trace files in the capture directory, its limits. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "capture.h"
#include "procfs.h"

/* mkdir -p, the parents 0755 and the last 0700. */
static int make_dirs(const char *dir)
{
	char p[4096];
	size_t i;

	snprintf(p, sizeof(p), "%s", dir);
	for (i = 1; p[i]; i++) {
		if (p[i] != '/')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		p[i] = '/';
	}
	if (mkdir(p, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* A daemon killed while writing leaves ".ID.tmp": nobody can fetch it, so it goes. */
static void remove_partials(struct capture *c)
{
	int dfd = dup(c->dirfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *de;
	size_t len;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		len = strlen(de->d_name);
		if (de->d_name[0] == '.' && len > 5 && !strcmp(de->d_name + len - 4, ".tmp"))
			unlinkat(c->dirfd, de->d_name, 0);
	}
	closedir(d);
}

int capture__open(struct capture *c, const char *dir, size_t max_count, uint64_t max_bytes,
		  char *err, size_t n)
{
	struct stat st;
	int e;

	memset(c, 0, sizeof(*c));
	c->dirfd = c->efd = -1;
	pthread_mutex_init(&c->lock, NULL);
	c->max_count = max_count;
	c->max_bytes = max_bytes;
	if (!dir) {	/* rankscope capture -o FILE: no directory of captures */
		c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		return c->efd < 0 ? -errno : 0;
	}
	snprintf(c->dir, sizeof(c->dir), "%s", dir);
	if (dir[0] != '/') {
		snprintf(err, n, "invalid --capture-dir '%s': give an absolute path", dir);
		return -EINVAL;
	}
	e = make_dirs(dir);
	if (e) {
		snprintf(err, n, "failed to create the capture directory %s: %s; give --capture-dir",
			 dir, strerror(-e));
		return e;
	}
	c->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->dirfd < 0 || c->efd < 0) {
		e = -errno;
		snprintf(err, n, "failed to open the capture directory %s: %s (a symlink is refused)",
			 dir, strerror(errno));
		return e;
	}
	/* ours alone: an emptyDir is 0777, a parent may be writable by others */
	if (!fstat(c->dirfd, &st) && (st.st_uid != geteuid() || (st.st_mode & 077))) {
		if (st.st_uid != geteuid() || fchmod(c->dirfd, 0700)) {
			snprintf(err, n, "the capture directory %s belongs to uid %u or cannot be made "
				 "0700; give --capture-dir a directory of its own", dir, st.st_uid);
			return -EPERM;
		}
	}
	remove_partials(c);
	return 0;
}

static void drop_buffers(struct capture *c)
{
	size_t i;

	for (i = 0; i < c->nstr; i++)
		free(c->str[i]);
	for (i = 0; i < c->nthr; i++)
		free((char *)c->thr[i].name);
	free(c->str);
	free(c->str_hash);
	free(c->thr);
	free(c->ev);
	c->str_hash = NULL;
	c->last_thr = 0;
	c->str = NULL;
	c->thr = NULL;
	c->ev = NULL;
	c->nstr = c->nthr = c->nev = c->cap = 0;
	c->dropped = 0;
	memset(&c->samples, 0, sizeof(c->samples));
	c->has_samples = false;
}

void capture__close(struct capture *c)
{
	drop_buffers(c);
	if (c->dirfd >= 0)
		close(c->dirfd);
	if (c->efd >= 0)
		close(c->efd);
	c->dirfd = c->efd = -1;
	pthread_mutex_destroy(&c->lock);
}

int capture__parse(const char *seconds, const char *ranks, const char *align, const char *format,
		   struct capture_req *req, char *err, size_t n)
{
	char tok[16];
	const char *p, *comma;
	size_t len;
	long v;

	memset(req, 0, sizeof(*req));
	req->seconds = CAPTURE_SECONDS_DEFAULT;
	if (seconds) {
		if (parse_long(seconds, 1, CAPTURE_SECONDS_MAX, &v)) {
			snprintf(err, n, "bad request: seconds must be a whole number from 1 to %d",
				 CAPTURE_SECONDS_MAX);
			return -EINVAL;
		}
		req->seconds = v;
	}
	for (p = ranks; p && *p; p = comma ? comma + 1 : p + len) {
		comma = strchr(p, ',');
		len = comma ? (size_t)(comma - p) : strlen(p);
		if (!len || len >= sizeof(tok) || req->nranks == CAPTURE_RANKS_MAX)
			goto bad_ranks;
		memcpy(tok, p, len);
		tok[len] = '\0';
		if (parse_long(tok, 0, 1 << 20, &v))
			goto bad_ranks;
		req->ranks[req->nranks++] = v;
		if (!comma)
			break;
	}
	if (align && strcmp(align, "step")) {
		snprintf(err, n, "bad request: align takes one value: step");
		return -EINVAL;
	}
	req->align = align != NULL;
	if (format && strcmp(format, "json") && strcmp(format, "gz")) {
		snprintf(err, n, "bad request: format is json or gz");
		return -EINVAL;
	}
	req->gz = format && !strcmp(format, "gz");
	return 0;
bad_ranks:
	snprintf(err, n, "bad request: ranks must be R[,R...], at most %d rank numbers",
		 CAPTURE_RANKS_MAX);
	return -EINVAL;
}

/* "20261129-130501-1a2b3c4d": time, then random; the only names the server makes. */
static void make_id(char *id, size_t n)
{
	unsigned int r = 0;
	char b[64];
	struct tm tm;
	time_t t = time(NULL);

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned int)(t ^ getpid() ^ (uintptr_t)id);
	gmtime_r(&t, &tm);
	strftime(b, sizeof(b), "%Y%m%d-%H%M%S", &tm);
	snprintf(id, n, "%.15s-%08x", b, r);
}

static bool id_ok(const char *id)
{
	size_t i, n = strlen(id);

	if (n != 24)
		return false;
	for (i = 0; i < n; i++) {
		char ch = id[i];
		bool dash = i == 8 || i == 15;

		if (dash ? ch != '-' : !((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return false;
	}
	return true;
}

static struct capture_entry *entry(struct capture *c, const char *id)
{
	unsigned int i, n = c->nhist < CAPTURE_HISTORY ? c->nhist : CAPTURE_HISTORY;

	for (i = 0; i < n; i++)
		if (!strcmp(c->hist[i].id, id))
			return &c->hist[i];
	return NULL;
}

int capture__request(struct capture *c, const struct capture_req *req, char *id, size_t n)
{
	struct capture_entry *e;
	uint64_t one = 1;

	pthread_mutex_lock(&c->lock);
	if (c->state != CAPTURE_IDLE) {
		pthread_mutex_unlock(&c->lock);
		return -EBUSY;
	}
	c->req = *req;
	make_id(c->id, sizeof(c->id));
	c->state = CAPTURE_PENDING;
	c->cancel = false;
	e = &c->hist[c->nhist++ % CAPTURE_HISTORY];
	memset(e, 0, sizeof(*e));
	snprintf(e->id, sizeof(e->id), "%s", c->id);
	e->state = CAPTURE_PENDING;
	snprintf(id, n, "%s", c->id);
	pthread_mutex_unlock(&c->lock);
	if (write(c->efd, &one, sizeof(one)) < 0)
		return 0;	/* the loop polls the state every drain anyway */
	return 0;
}

int capture__lookup(struct capture *c, const char *id, struct capture_entry *out, int *fd,
		    bool *gz)
{
	struct capture_entry *e;
	struct stat st;

	*fd = -1;
	if (!id_ok(id))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	e = entry(c, id);
	if (e)
		*out = *e;
	pthread_mutex_unlock(&c->lock);
	if (!e)
		return -ENOENT;
	if (out->state != CAPTURE_DONE)
		return 0;
	/* a name we made, in the directory we opened: no path from the request reaches here */
	*fd = openat(c->dirfd, out->file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0 || fstat(*fd, &st) || !S_ISREG(st.st_mode)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		out->state = CAPTURE_FAILED;
		snprintf(out->err, sizeof(out->err), "the capture file is gone (the directory's limits "
			 "removed it)");
		return 0;
	}
	out->bytes = st.st_size;
	*gz = strstr(out->file, ".gz") != NULL;
	return 0;
}

int capture__cancel(struct capture *c, const char *id)
{
	struct capture_entry *e;
	uint64_t one = 1;
	int ret = 1;

	if (!id_ok(id))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	e = entry(c, id);
	if (!e) {
		ret = -ENOENT;
	} else if (!strcmp(id, c->id) && (c->state == CAPTURE_PENDING ||
					  c->state == CAPTURE_ARMED ||
					  c->state == CAPTURE_RUNNING)) {
		c->cancel = true;
		ret = 0;
	} else if (e->state != CAPTURE_DONE && e->state != CAPTURE_FAILED) {
		ret = -EBUSY;
	} else {
		/* a name we made, in the directory we opened */
		if (e->state == CAPTURE_DONE && e->file[0])
			unlinkat(c->dirfd, e->file, 0);
		memset(e, 0, sizeof(*e));	/* "" is no id: the entry is free */
	}
	pthread_mutex_unlock(&c->lock);
	if (!ret && c->efd >= 0 && write(c->efd, &one, sizeof(one)) < 0)
		return 0;	/* the loop looks every drain anyway */
	return ret;
}

bool capture__cancelled(struct capture *c)
{
	bool yes;

	pthread_mutex_lock(&c->lock);
	yes = c->cancel && (c->state == CAPTURE_PENDING || c->state == CAPTURE_ARMED ||
			    c->state == CAPTURE_RUNNING);
	c->cancel = false;
	pthread_mutex_unlock(&c->lock);
	return yes;
}

static void set_entry(struct capture *c, enum capture_state st, const char *file, const char *why)
{
	struct capture_entry *e;

	pthread_mutex_lock(&c->lock);
	e = entry(c, c->id);
	if (e) {
		e->state = st;
		if (file)
			snprintf(e->file, sizeof(e->file), "%s", file);
		if (why)
			snprintf(e->err, sizeof(e->err), "%s", why);
	}
	pthread_mutex_unlock(&c->lock);
}

bool capture__take(struct capture *c, uint64_t now)
{
	uint64_t v;
	bool start = false;

	if (c->efd >= 0 && read(c->efd, &v, sizeof(v)) < 0)
		v = 0;
	pthread_mutex_lock(&c->lock);
	if (c->state == CAPTURE_ARMED && now - c->armed_ns > CAPTURE_ARMED_MAX_NS) {
		/* no step came (a hung job: when a capture matters most): start anyway */
		c->state = CAPTURE_RUNNING;
		c->t_start = now;
		c->t_end = now + (uint64_t)c->req.seconds * 1000000000ULL;
		start = true;
	}
	if (c->state == CAPTURE_PENDING) {
		if (c->req.align) {
			c->state = CAPTURE_ARMED;
			c->armed_ns = now;
		} else {
			c->state = CAPTURE_RUNNING;
			c->t_start = now;
			c->t_end = now + (uint64_t)c->req.seconds * 1000000000ULL;
			start = true;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (c->state == CAPTURE_RUNNING || c->state == CAPTURE_ARMED)
		set_entry(c, CAPTURE_RUNNING, NULL, NULL);
	return start;
}

bool capture__step(struct capture *c, uint64_t step_end)
{
	bool start = false;

	pthread_mutex_lock(&c->lock);
	if (c->state == CAPTURE_ARMED) {
		/* the step was assembled after it ended: the window starts at the boundary */
		c->state = CAPTURE_RUNNING;
		c->t_start = step_end;
		c->t_end = step_end + (uint64_t)c->req.seconds * 1000000000ULL;
		start = true;
	}
	pthread_mutex_unlock(&c->lock);
	return start;
}

void capture__writing(struct capture *c)
{
	pthread_mutex_lock(&c->lock);
	c->state = CAPTURE_WRITING;
	pthread_mutex_unlock(&c->lock);
}

void capture__fail(struct capture *c, const char *why)
{
	set_entry(c, CAPTURE_FAILED, NULL, why);
	drop_buffers(c);
	pthread_mutex_lock(&c->lock);
	c->state = CAPTURE_IDLE;
	pthread_mutex_unlock(&c->lock);
}

void capture__abandon(struct capture *c)
{
	pthread_mutex_lock(&c->lock);
	if (c->state == CAPTURE_PENDING || c->state == CAPTURE_ARMED) {
		struct capture_entry *e = entry(c, c->id);

		if (e) {
			e->state = CAPTURE_FAILED;
			snprintf(e->err, sizeof(e->err), "the session ended before the capture began");
		}
		c->state = CAPTURE_IDLE;
	}
	pthread_mutex_unlock(&c->lock);
}

bool capture__running(const struct capture *c)
{
	return c && c->state == CAPTURE_RUNNING;
}

bool capture__wants(const struct capture *c, int rank)
{
	int i;

	if (!capture__running(c))
		return false;
	if (!c->req.nranks)
		return true;
	for (i = 0; i < c->req.nranks; i++)
		if (c->req.ranks[i] == rank)
			return true;
	return false;
}

bool capture__due(const struct capture *c, uint64_t now)
{
	return capture__running(c) && now >= c->t_end + CAPTURE_SETTLE_NS;
}

void capture__add(struct capture *c, const struct trace_ev *e)
{
	struct trace_ev *ne;
	size_t ncap;

	if ((e->end < c->t_start || e->start > c->t_end) && e->kind != TR_VERDICT)
		return;		/* outside the window (steps of its end come in late) */
	if (c->nev == c->cap) {
		if (c->cap >= CAPTURE_EVENTS_MAX) {
			c->dropped++;
			return;
		}
		ncap = c->cap ? c->cap * 2 : 4096;
		ne = realloc(c->ev, ncap * sizeof(*ne));
		if (!ne) {
			c->dropped++;
			return;
		}
		c->ev = ne;
		c->cap = ncap;
	}
	c->ev[c->nev++] = *e;
}

#define STR_SLOTS (CAPTURE_STRINGS_MAX * 2)

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

int32_t capture__str(struct capture *c, const char *s)
{
	char **ns;
	size_t i;

	if (!s)
		return -1;
	if (!c->str_hash && !(c->str_hash = calloc(STR_SLOTS, sizeof(*c->str_hash))))
		return -1;
	/* once each: a kernel's or a communicator's name repeats in every step */
	for (i = str_hash(s) % STR_SLOTS; c->str_hash[i]; i = (i + 1) % STR_SLOTS)
		if (!strcmp(c->str[c->str_hash[i] - 1], s))
			return c->str_hash[i] - 1;
	if (c->nstr >= CAPTURE_STRINGS_MAX)
		return -1;
	if (!(c->nstr & (c->nstr + 1)) || !c->str) {	/* grow at 0, 1, 3, 7, ... */
		ns = realloc(c->str, (c->nstr * 2 + 2) * sizeof(*ns));
		if (!ns)
			return -1;
		c->str = ns;
	}
	c->str[c->nstr] = strdup(s);
	if (!c->str[c->nstr])
		return -1;
	c->str_hash[i] = c->nstr + 1;
	return c->nstr++;
}

void capture__thread(struct capture *c, uint32_t pid, uint32_t tid, const char *name)
{
	struct trace_thread *nt;
	size_t i;

	if (c->last_thr < c->nthr && c->thr[c->last_thr].pid == pid &&
	    c->thr[c->last_thr].tid == tid)
		return;
	for (i = 0; i < c->nthr; i++)
		if (c->thr[i].pid == pid && c->thr[i].tid == tid) {
			c->last_thr = i;
			return;
		}
	if (c->nthr >= CAPTURE_THREADS_MAX)
		return;
	nt = realloc(c->thr, (c->nthr + 1) * sizeof(*nt));
	if (!nt)
		return;
	c->thr = nt;
	c->thr[c->nthr] = (struct trace_thread){ .pid = pid, .tid = tid, .name = strdup(name) };
	if (c->thr[c->nthr].name)
		c->nthr++;
}

static int write_to(struct capture *c, int fd, bool gz, const struct trace_proc *procs,
		    int nprocs)
{
	struct trace_in in = {
		.procs = procs, .nprocs = nprocs, .threads = c->thr, .nthreads = c->nthr,
		.ev = c->ev, .nev = c->nev, .str = (const char *const *)c->str, .nstr = c->nstr,
		.dropped = c->dropped, .id = c->id, .samples = c->has_samples ? &c->samples : NULL,
	};
	return trace__write(fd, gz, &in);
}

struct file_info {
	char name[CAPTURE_ID_MAX + 16];
	time_t mtime;
	uint64_t bytes;
};

static int by_age(const void *x, const void *y)
{
	const struct file_info *a = x, *b = y;

	return a->mtime < b->mtime ? -1 : a->mtime > b->mtime;
}

/* Remove the oldest captures (only files named as we name them) beyond the limits. */
static void trim(struct capture *c)
{
	struct file_info *f = NULL, *nf;
	struct dirent *de;
	struct stat st;
	uint64_t total = 0;
	size_t n = 0, i;
	char id[CAPTURE_ID_MAX];
	int dfd = dup(c->dirfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		size_t len = strcspn(de->d_name, ".");

		if (len >= sizeof(id) || strlen(de->d_name) >= sizeof(f->name))
			continue;
		memcpy(id, de->d_name, len);
		id[len] = '\0';
		if (!id_ok(id) || (strcmp(de->d_name + len, ".json") &&
				   strcmp(de->d_name + len, ".json.gz")))
			continue;
		if (fstatat(c->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		nf = realloc(f, (n + 1) * sizeof(*f));
		if (!nf)
			break;
		f = nf;
		memcpy(f[n].name, de->d_name, strlen(de->d_name) + 1);
		f[n].mtime = st.st_mtime;
		f[n].bytes = st.st_size;
		total += st.st_size;
		n++;
	}
	closedir(d);
	qsort(f, n, sizeof(*f), by_age);
	/* the newest stays, even alone over the byte limit: it was just promised to a client */
	for (i = 0; i + 1 < n && (n - i > c->max_count || total > c->max_bytes); i++) {
		if (!unlinkat(c->dirfd, f[i].name, 0))
			total -= f[i].bytes;
	}
	free(f);
}

struct procs_ctx {
	struct capture *c;
	const struct trace_proc *procs;
	int nprocs;
};

static int write_procs(void *ctx, int fd, bool gz)
{
	struct procs_ctx *p = ctx;

	return write_to(p->c, fd, gz, p->procs, p->nprocs);
}

int capture__finish(struct capture *c, const struct trace_proc *procs, int nprocs)
{
	struct procs_ctx p = { c, procs, nprocs };

	return capture__finish_with(c, write_procs, &p);
}

int capture__finish_with(struct capture *c, int (*write)(void *ctx, int fd, bool gz), void *ctx)
{
	char tmp[CAPTURE_ID_MAX + 16], file[CAPTURE_ID_MAX + 16], why[160];
	bool gz = c->req.gz;
	int fd, err;

	snprintf(tmp, sizeof(tmp), ".%s.tmp", c->id);
	snprintf(file, sizeof(file), "%s.json%s", c->id, gz ? ".gz" : "");
	fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	err = fd < 0 ? -errno : write(ctx, fd, gz);
	if (!err && fsync(fd) && errno != EINVAL)
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (!err && renameat(c->dirfd, tmp, c->dirfd, file))
		err = -errno;
	if (err) {
		unlinkat(c->dirfd, tmp, 0);	/* no partial file left behind */
		snprintf(why, sizeof(why), "failed to write the capture in %.80s: %s", c->dir,
			 strerror(-err));
		set_entry(c, CAPTURE_FAILED, NULL, why);
	} else {
		set_entry(c, CAPTURE_DONE, file, NULL);
		trim(c);
	}
	drop_buffers(c);
	pthread_mutex_lock(&c->lock);
	c->state = CAPTURE_IDLE;
	pthread_mutex_unlock(&c->lock);
	return err;
}

int capture__write_file(struct capture *c, const char *path, const struct trace_proc *procs,
			int nprocs, char *err, size_t n)
{
	size_t len = strlen(path);
	bool gz = len > 3 && !strcmp(path + len - 3, ".gz");
	int fd, e;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	e = fd < 0 ? -errno : write_to(c, fd, gz, procs, nprocs);
	if (!e && fsync(fd) && errno != EINVAL)
		e = -errno;
	if (fd >= 0)
		close(fd);
	if (e) {
		unlink(path);
		snprintf(err, n, "failed to write %s: %s", path, strerror(-e));
	}
	drop_buffers(c);
	pthread_mutex_lock(&c->lock);
	c->state = CAPTURE_IDLE;
	pthread_mutex_unlock(&c->lock);
	return e;
}
