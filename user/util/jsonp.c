// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Strict, bounded JSON reader (RFC 8259) for hostile input: see jsonp.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jsonp.h"

struct rd {
	struct jsonp *d;
	char *p, *end, *base;
};

static int fail(struct rd *r, const char *what)
{
	snprintf(r->d->err, sizeof(r->d->err), "%s at byte %zu", what, (size_t)(r->p - r->base));
	return -EINVAL;
}

static void skip_ws(struct rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

/* A new value's index, or -ENOMEM / -EINVAL (too many). */
static int new_val(struct rd *r, enum jsonp_type t, const char *key)
{
	struct jsonp *d = r->d;
	struct jsonp_val *v;

	if (d->n >= d->max)
		return fail(r, "too many values");
	if (d->n == d->cap) {
		int cap = d->cap ? d->cap * 2 : 64;

		if (cap > d->max)
			cap = d->max;
		v = realloc(d->v, sizeof(*v) * cap);
		if (!v)
			return -ENOMEM;
		d->v = v;
		d->cap = cap;
	}
	v = &d->v[d->n];
	memset(v, 0, sizeof(*v));
	v->type = t;
	v->child = v->next = -1;
	v->key = key;
	return d->n++;
}

static int hex4(const char *s, unsigned int *out)
{
	unsigned int x = 0;
	int i;

	for (i = 0; i < 4; i++) {
		char c = s[i];

		x <<= 4;
		if (c >= '0' && c <= '9')
			x |= c - '0';
		else if (c >= 'a' && c <= 'f')
			x |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			x |= c - 'A' + 10;
		else
			return -1;
	}
	*out = x;
	return 0;
}

static char *put_utf8(char *w, unsigned int cp)
{
	if (cp < 0x80) {
		*w++ = cp;
	} else if (cp < 0x800) {
		*w++ = 0xc0 | cp >> 6;
		*w++ = 0x80 | (cp & 0x3f);
	} else if (cp < 0x10000) {
		*w++ = 0xe0 | cp >> 12;
		*w++ = 0x80 | (cp >> 6 & 0x3f);
		*w++ = 0x80 | (cp & 0x3f);
	} else {
		*w++ = 0xf0 | cp >> 18;
		*w++ = 0x80 | (cp >> 12 & 0x3f);
		*w++ = 0x80 | (cp >> 6 & 0x3f);
		*w++ = 0x80 | (cp & 0x3f);
	}
	return w;
}

/*
 * At the opening quote: decode in place (the decoded text is never longer than the escaped
 * text, so the writer never passes the reader) and NUL-terminate it.
 */
static int read_str(struct rd *r, const char **out, size_t *len)
{
	char *w, *s;
	unsigned int cp, lo;

	s = w = ++r->p;
	for (;;) {
		if (r->p >= r->end)
			return fail(r, "unterminated string");
		if (*r->p == '"')
			break;
		if ((unsigned char)*r->p < 0x20)
			return fail(r, "control character in a string");
		if (*r->p != '\\') {
			*w++ = *r->p++;
			continue;
		}
		if (r->end - r->p < 2)
			return fail(r, "unterminated escape");
		switch (r->p[1]) {
		case '"': *w++ = '"'; break;
		case '\\': *w++ = '\\'; break;
		case '/': *w++ = '/'; break;
		case 'b': *w++ = '\b'; break;
		case 'f': *w++ = '\f'; break;
		case 'n': *w++ = '\n'; break;
		case 'r': *w++ = '\r'; break;
		case 't': *w++ = '\t'; break;
		case 'u':
			if (r->end - r->p < 6 || hex4(r->p + 2, &cp))
				return fail(r, "bad \\u escape");
			r->p += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && r->end - r->p >= 8 && r->p[2] == '\\' &&
			    r->p[3] == 'u' && !hex4(r->p + 4, &lo) && lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				r->p += 6;
			} else if (cp >= 0xd800 && cp < 0xe000) {
				cp = 0xfffd;	/* a lone surrogate */
			}
			w = put_utf8(w, cp);
			break;
		default:
			return fail(r, "bad escape");
		}
		r->p += 2;
	}
	*len = w - s;
	*w = 0;		/* at most where the closing quote was */
	r->p++;
	*out = s;
	return 0;
}

static int read_num(struct rd *r, int at)
{
	struct jsonp_val *v = &r->d->v[at];
	char *s = r->p, buf[64], *e;
	bool frac = false;
	size_t n;

	if (r->p < r->end && *r->p == '-')
		r->p++;
	if (r->p >= r->end || *r->p < '0' || *r->p > '9')
		return fail(r, "bad number");
	if (*r->p == '0')
		r->p++;
	else
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	if (r->p < r->end && *r->p == '.') {
		frac = true;
		if (++r->p >= r->end || *r->p < '0' || *r->p > '9')
			return fail(r, "bad fraction");
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
		frac = true;
		if (++r->p < r->end && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return fail(r, "bad exponent");
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	n = r->p - s;
	if (n >= sizeof(buf))
		return fail(r, "number too long");
	memcpy(buf, s, n);
	buf[n] = 0;
	v->num = strtod(buf, NULL);
	if (!frac) {
		errno = 0;
		v->i = strtoll(buf, &e, 10);
		v->is_int = !errno && *e == 0;
	}
	return 0;
}

static int read_val(struct rd *r, const char *key, int depth);

/* Members or elements until the closer; obj: "key": value pairs. */
static int read_list(struct rd *r, int at, bool obj, int depth)
{
	const char *key = NULL;
	size_t klen;
	int c, last = -1, err;

	r->p++;
	skip_ws(r);
	if (r->p < r->end && *r->p == (obj ? '}' : ']')) {
		r->p++;
		return 0;
	}
	for (;;) {
		skip_ws(r);
		if (obj) {
			if (r->p >= r->end || *r->p != '"')
				return fail(r, "expected a member name");
			err = read_str(r, &key, &klen);
			if (err)
				return err;
			skip_ws(r);
			if (r->p >= r->end || *r->p != ':')
				return fail(r, "expected ':'");
			r->p++;
		}
		c = read_val(r, key, depth + 1);
		if (c < 0)
			return c;
		if (last < 0)
			r->d->v[at].child = c;
		else
			r->d->v[last].next = c;
		last = c;
		r->d->v[at].n++;
		skip_ws(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		if (r->p < r->end && *r->p == (obj ? '}' : ']')) {
			r->p++;
			return 0;
		}
		return fail(r, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

/* A value's index, or a negative errno. */
static int read_val(struct rd *r, const char *key, int depth)
{
	int at, err = 0;
	size_t n;

	if (depth > JSONP_MAX_DEPTH)
		return fail(r, "nested too deep");
	skip_ws(r);
	if (r->p >= r->end)
		return fail(r, "expected a value");
	switch (*r->p) {
	case '{':
	case '[':
		at = new_val(r, *r->p == '{' ? JSONP_OBJ : JSONP_ARR, key);
		if (at >= 0)
			err = read_list(r, at, r->d->v[at].type == JSONP_OBJ, depth);
		break;
	case '"':
		at = new_val(r, JSONP_STR, key);
		if (at >= 0) {
			const char *s;

			err = read_str(r, &s, &n);
			r->d->v[at].str = s;
			r->d->v[at].len = n;
		}
		break;
	case 't':
	case 'f':
	case 'n':
		if (r->end - r->p >= 4 && !memcmp(r->p, "true", 4)) {
			at = new_val(r, JSONP_BOOL, key);
			if (at >= 0)
				r->d->v[at].b = true;
			r->p += 4;
		} else if (r->end - r->p >= 5 && !memcmp(r->p, "false", 5)) {
			at = new_val(r, JSONP_BOOL, key);
			r->p += 5;
		} else if (r->end - r->p >= 4 && !memcmp(r->p, "null", 4)) {
			at = new_val(r, JSONP_NULL, key);
			r->p += 4;
		} else {
			return fail(r, "bad literal");
		}
		break;
	default:
		at = new_val(r, JSONP_NUM, key);
		if (at >= 0)
			err = read_num(r, at);
		break;
	}
	return err ? err : at;
}

int jsonp__parse(struct jsonp *d, const char *text, size_t len, int max_nodes)
{
	struct rd r = { .d = d };
	int err;

	jsonp__free(d);
	d->max = max_nodes > 0 ? max_nodes : 1;
	d->text = malloc(len + 1);
	if (!d->text)
		return -ENOMEM;
	memcpy(d->text, text, len);
	d->text[len] = 0;
	r.base = r.p = d->text;
	r.end = d->text + len;
	err = read_val(&r, NULL, 0);
	if (err < 0)
		return err;
	skip_ws(&r);
	if (r.p != r.end)
		return fail(&r, "trailing text");
	return 0;
}

void jsonp__free(struct jsonp *d)
{
	if (!d)
		return;
	free(d->v);
	free(d->text);
	d->v = NULL;
	d->text = NULL;
	d->n = d->cap = 0;
	d->err[0] = 0;
}

const struct jsonp_val *jsonp__root(const struct jsonp *d)
{
	return d->n ? &d->v[0] : NULL;
}

const struct jsonp_val *jsonp__first(const struct jsonp *d, const struct jsonp_val *v)
{
	return v && v->child >= 0 ? &d->v[v->child] : NULL;
}

const struct jsonp_val *jsonp__next(const struct jsonp *d, const struct jsonp_val *v)
{
	return v && v->next >= 0 ? &d->v[v->next] : NULL;
}

const struct jsonp_val *jsonp__get(const struct jsonp *d, const struct jsonp_val *v,
				   const char *key)
{
	const struct jsonp_val *c;

	if (!v || v->type != JSONP_OBJ)
		return NULL;
	for (c = jsonp__first(d, v); c; c = jsonp__next(d, c))
		if (!strcmp(c->key, key))
			return c;
	return NULL;
}

bool jsonp__int64(const struct jsonp *d, const struct jsonp_val *obj, const char *key,
		  int64_t *out)
{
	const struct jsonp_val *v = jsonp__get(d, obj, key);

	if (!v || v->type != JSONP_NUM || !v->is_int)
		return false;
	*out = v->i;
	return true;
}

bool jsonp__uint64(const struct jsonp *d, const struct jsonp_val *obj, const char *key,
		   uint64_t *out)
{
	int64_t x;

	if (!jsonp__int64(d, obj, key, &x) || x < 0)
		return false;
	*out = x;
	return true;
}

bool jsonp__double(const struct jsonp *d, const struct jsonp_val *obj, const char *key,
		   double *out)
{
	const struct jsonp_val *v = jsonp__get(d, obj, key);

	if (!v || v->type != JSONP_NUM)
		return false;
	*out = v->num;
	return true;
}

const char *jsonp__str(const struct jsonp *d, const struct jsonp_val *obj, const char *key)
{
	const struct jsonp_val *v = jsonp__get(d, obj, key);

	return v && v->type == JSONP_STR ? v->str : NULL;
}
