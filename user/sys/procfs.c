// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* /proc readers and parsers; pure helpers return -errno and never log. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>
#include "procfs.h"

ssize_t procfs__read(pid_t pid, const char *name, char **bufp, size_t max)
{
	char path[64], *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (len + 1 >= cap) {
			if (cap >= max + 1)
				break;	/* truncated at max */
			cap = cap ? cap * 2 : 4096;
			if (cap > max + 1)
				cap = max + 1;
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				goto fail;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	if (!buf) {
		buf = malloc(1);
		if (!buf)
			return -ENOMEM;
	}
	buf[len] = '\0';
	*bufp = buf;
	return len;
fail:
	close(fd);
	free(buf);
	return err;
}

static int parse_hex(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0, d;

	for (;; s++, digits++) {
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (digits >= 16)
			return -EINVAL;
		v = v << 4 | d;
	}
	if (!digits)
		return -EINVAL;
	*out = v;
	*p = s;
	return 0;
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

int procfs__parse_maps_line(const char *line, struct proc_map *m)
{
	const char *p = line;
	uint64_t v;
	int i;

	memset(m, 0, sizeof(*m));
	if (parse_hex(&p, &m->start) || expect(&p, '-') || parse_hex(&p, &m->end) ||
	    expect(&p, ' '))
		return -EINVAL;
	for (i = 0; i < 4; i++, p++) {
		if (!*p || *p == ' ')
			return -EINVAL;
		m->perms[i] = *p;
	}
	if (expect(&p, ' ') || parse_hex(&p, &m->pgoff) || expect(&p, ' '))
		return -EINVAL;
	if (parse_hex(&p, &v) || v > UINT_MAX || expect(&p, ':'))
		return -EINVAL;
	m->dev_major = v;
	if (parse_hex(&p, &v) || v > UINT_MAX || expect(&p, ' '))
		return -EINVAL;
	m->dev_minor = v;
	/* inode is decimal */
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (v = 0; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (*p - '0');
	}
	m->inode = v;
	if (m->end < m->start)
		return -EINVAL;
	while (*p == ' ')
		p++;
	m->path = p;
	return 0;
}

const char *procfs__environ_get(const char *env, size_t len, const char *key)
{
	size_t klen = strlen(key), i = 0, elen;
	const char *e, *nul;

	while (i < len) {
		e = env + i;
		nul = memchr(e, '\0', len - i);
		elen = nul ? (size_t)(nul - e) : len - i;
		/* an unterminated last entry is truncated input: ignore it */
		if (nul && elen > klen && !memcmp(e, key, klen) && e[klen] == '=')
			return e + klen + 1;
		i += elen + 1;
	}
	return NULL;
}

bool procfs__cgroup_next(const char *text, size_t len, size_t *pos, const char **path,
			 size_t *plen)
{
	const char *line, *nl, *g;
	size_t llen;

	while (*pos < len) {
		line = text + *pos;
		nl = memchr(line, '\n', len - *pos);
		llen = nl ? (size_t)(nl - line) : len - *pos;
		*pos += llen + 1;
		/* "ID:CONTROLLERS:PATH": the path is after the second colon, and may hold colons */
		g = memchr(line, ':', llen);
		if (g)
			g = memchr(g + 1, ':', llen - (size_t)(g + 1 - line));
		if (!g || memchr(line, '\0', llen))
			continue;	/* not a line, or not text */
		*path = g + 1;
		*plen = llen - (size_t)(g + 1 - line);
		return true;
	}
	return false;
}

bool procfs__cgroup_under(const char *text, size_t len, const char *path)
{
	size_t plen = strlen(path), pos = 0, glen;
	const char *g;

	if (plen == 1 && path[0] == '/')
		plen = 0;
	while (procfs__cgroup_next(text, len, &pos, &g, &glen))
		if (glen >= plen && !memcmp(g, path, plen) && (glen == plen || g[plen] == '/'))
			return true;
	return false;
}

static int parse_stat_nul(const char *buf, size_t len, struct proc_stat *st);

int procfs__parse_stat(const char *buf, size_t len, struct proc_stat *st)
{
	char copy[1024];

	/* sscanf needs a terminator at len, and the caller's buffer may not have one there */
	if (len >= sizeof(copy))
		return -EINVAL;
	memcpy(copy, buf, len);
	copy[len] = '\0';
	return parse_stat_nul(copy, len, st);
}

static int parse_stat_nul(const char *buf, size_t len, struct proc_stat *st)
{
	const char *open, *close, *p, *end = buf + len;
	unsigned long long start, vsize;
	size_t clen;
	int field, n;
	char state;

	memset(st, 0, sizeof(*st));
	open = memchr(buf, '(', len);
	if (!open)
		return -EINVAL;
	/* comm may itself contain ')': the real one is the last */
	for (close = NULL, p = open; p < end; p++)
		if (*p == ')')
			close = p;
	if (!close || close + 2 >= end)
		return -EINVAL;
	if (sscanf(buf, "%d", &st->pid) != 1)
		return -EINVAL;
	clen = close - open - 1;
	if (clen >= sizeof(st->comm))
		clen = sizeof(st->comm) - 1;
	memcpy(st->comm, open + 1, clen);
	st->comm[clen] = '\0';
	p = close + 2;
	if (sscanf(p, "%c %d%n", &state, &st->ppid, &n) != 2)
		return -EINVAL;
	st->state = state;
	p += n;
	/* fields 5..21 precede starttime (22) */
	for (field = 5; field <= 21; field++) {
		while (p < end && *p == ' ')
			p++;
		if (field == 9)
			st->flags = strtoull(p, NULL, 10);	/* NUL-terminated: stops in time */
		while (p < end && *p != ' ')
			p++;
		if (p >= end)
			return -EINVAL;
	}
	if (sscanf(p, " %llu%n", &start, &n) != 1)
		return -EINVAL;
	st->starttime = start;
	/* vsize (23): optional here, a hint only (0 when absent) */
	if (sscanf(p + n, " %llu", &vsize) == 1)
		st->vsize = vsize;
	return 0;
}

int procfs__stat(pid_t pid, struct proc_stat *st)
{
	char *buf;
	ssize_t n;
	int err;

	n = procfs__read(pid, "stat", &buf, 4096);
	if (n < 0)
		return n;
	err = procfs__parse_stat(buf, n, st);
	free(buf);
	return err;
}

int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	/* strtol skips leading white space of any kind; hostile text must not get that far */
	if (!s || !((*s >= '0' && *s <= '9') || *s == '-' || *s == '+'))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < lo || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}

int procfs__status_ids(const char *text, size_t len, const char *key, long *ids, int max)
{
	size_t klen = strlen(key), i = 0;
	const char *at, *end = text + len, *e;
	int n = 0;

	/* a line that starts with "KEY:" */
	while (i + klen < len) {
		at = text + i;
		if (!memcmp(at, key, klen) && at[klen] == ':')
			break;
		e = memchr(at, '\n', len - i);
		if (!e)
			return 0;
		i = (size_t)(e - text) + 1;
	}
	if (i + klen >= len)
		return 0;
	for (at = text + i + klen + 1; at < end && *at != '\n';) {
		long v = 0;
		bool digits = false;

		if (*at == ' ' || *at == '\t') {
			at++;
			continue;
		}
		for (; at < end && *at >= '0' && *at <= '9'; at++) {
			digits = true;
			if (v < LONG_MAX / 10)
				v = v * 10 + (*at - '0');
		}
		if (!digits)
			break;
		if (n < max)
			ids[n] = v;
		n++;
	}
	return n;
}

int procfs__status_field(pid_t pid, const char *name, const char *key, long *ids, int max)
{
	char *buf = NULL;
	ssize_t len;
	int n = 0;

	len = procfs__read(pid, name, &buf, 16384);
	if (len > 0)
		n = procfs__status_ids(buf, (size_t)len, key, ids, max);
	free(buf);
	return n;
}

long procfs__self_fds(void)
{
	struct dirent *de;
	long n = 0;
	DIR *d;

	d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the DIR's own */
}

int procfs__read_mem(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { .iov_base = buf, .iov_len = n };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = n };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}
