// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* JSON writer: streaming, allocation only to grow the buffer. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "utf8.h"

void json__init(struct json *j)
{
	memset(j, 0, sizeof(*j));
	j->first[0] = true;
}

void json__reset(struct json *j)
{
	char *buf = j->buf;
	size_t cap = j->cap;

	json__init(j);
	j->buf = buf;
	j->cap = cap;
	if (buf)
		buf[0] = '\0';
}

void json__free(struct json *j)
{
	free(j->buf);
	json__init(j);
}

static void put(struct json *j, const char *s, size_t n)
{
	size_t cap;
	char *nb;

	if (j->err)
		return;
	if (j->len + n + 1 > j->cap) {
		cap = j->cap ? j->cap : 256;
		while (cap < j->len + n + 1)
			cap *= 2;
		nb = realloc(j->buf, cap);
		if (!nb) {
			j->err = -ENOMEM;
			return;
		}
		j->buf = nb;
		j->cap = cap;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

static void puts_(struct json *j, const char *s)
{
	put(j, s, strlen(s));
}

/* Comma before every value but the first of its container; none right after a key. */
static void sep(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (!j->first[j->depth])
		put(j, ",", 1);
	j->first[j->depth] = false;
}

static void open_(struct json *j, char c)
{
	sep(j);
	put(j, &c, 1);
	if (j->depth + 1 >= JSON_MAX_DEPTH) {
		j->err = -EINVAL;
		return;
	}
	j->first[++j->depth] = true;
}

static void close_(struct json *j, char c)
{
	if (j->depth <= 0) {
		j->err = -EINVAL;
		return;
	}
	j->depth--;
	put(j, &c, 1);
}

void json__obj_begin(struct json *j) { open_(j, '{'); }
void json__obj_end(struct json *j) { close_(j, '}'); }
void json__arr_begin(struct json *j) { open_(j, '['); }
void json__arr_end(struct json *j) { close_(j, ']'); }

void json__strn(struct json *j, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	char esc[8];
	size_t i, l;

	sep(j);
	put(j, "\"", 1);
	for (i = 0; i < n; i += l) {
		/* a run of printable ASCII that needs no escape goes in one copy: the common case */
		for (l = 0; i + l < n && s[i + l] >= 0x20 && s[i + l] < 0x7f && s[i + l] != '"' &&
			    s[i + l] != '\\'; l++)
			;
		if (l) {
			put(j, (const char *)s + i, l);
			continue;
		}
		l = 1;
		switch (s[i]) {
		case '"': put(j, "\\\"", 2); continue;
		case '\\': put(j, "\\\\", 2); continue;
		case '\n': put(j, "\\n", 2); continue;
		case '\r': put(j, "\\r", 2); continue;
		case '\t': put(j, "\\t", 2); continue;
		default: break;
		}
		if (s[i] < 0x20 || s[i] == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", s[i]);
			put(j, esc, 6);
			continue;
		}
		l = utf8__len(s + i, n - i);
		if (!l) {
			put(j, "\\ufffd", 6);
			l = 1;
			continue;
		}
		put(j, (const char *)s + i, l);
	}
	put(j, "\"", 1);
}

void json__str(struct json *j, const char *s)
{
	if (!s) {
		json__null(j);
		return;
	}
	json__strn(j, s, strlen(s));
}

void json__key(struct json *j, const char *k)
{
	json__str(j, k);
	put(j, ":", 1);
	j->after_key = true;
}

/* Decimal digits of v, written backwards from end; returns where they start. */
static char *digits(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

/* Integers are most of what step and metric lines hold: no printf for them. */
void json__int(struct json *j, int64_t v)
{
	char b[24], *p;

	sep(j);
	/* the magnitude as unsigned: -INT64_MIN does not fit an int64_t */
	p = digits(b + sizeof(b), v < 0 ? -(uint64_t)v : (uint64_t)v);
	if (v < 0)
		*--p = '-';
	put(j, p, (size_t)(b + sizeof(b) - p));
}

void json__uint(struct json *j, uint64_t v)
{
	char b[24], *p;

	sep(j);
	p = digits(b + sizeof(b), v);
	put(j, p, (size_t)(b + sizeof(b) - p));
}

void json__double(struct json *j, double v)
{
	char b[32];

	if (!isfinite(v)) {
		json__null(j);
		return;
	}
	sep(j);
	snprintf(b, sizeof(b), "%.9g", v);
	puts_(j, b);
}

void json__raw(struct json *j, const char *text)
{
	sep(j);
	puts_(j, text);
}

void json__bool(struct json *j, bool v)
{
	sep(j);
	puts_(j, v ? "true" : "false");
}

void json__null(struct json *j)
{
	sep(j);
	puts_(j, "null");
}

void json__kstr(struct json *j, const char *k, const char *v)
{
	json__key(j, k);
	json__str(j, v);
}

void json__kint(struct json *j, const char *k, int64_t v)
{
	json__key(j, k);
	json__int(j, v);
}

void json__kuint(struct json *j, const char *k, uint64_t v)
{
	json__key(j, k);
	json__uint(j, v);
}

void json__kdouble(struct json *j, const char *k, double v)
{
	json__key(j, k);
	json__double(j, v);
}

void json__kunix(struct json *j, const char *k, double v)
{
	char b[32];

	json__key(j, k);
	if (!isfinite(v)) {
		json__null(j);
		return;
	}
	snprintf(b, sizeof(b), "%.3f", v);
	json__raw(j, b);
}
