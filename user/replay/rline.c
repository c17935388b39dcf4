// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A flat JSON object read in place (rline.h). */
#include <errno.h>
#include <string.h>
#include "rline.h"

static const char *blank(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* p at an opening quote: the closing one, or NULL. */
static const char *str_end(const char *p, const char *e, bool *esc)
{
	for (p++; p < e; p++) {
		if (*p == '\\') {
			*esc = true;
			p++;
		} else if (*p == '"') {
			return p;
		} else if ((unsigned char)*p < 0x20) {
			return NULL;
		}
	}
	return NULL;
}

/* p at '{' or '[': just past its match, or NULL (bounded depth). */
static const char *nested_end(const char *p, const char *e)
{
	char stack[32];
	int depth = 0;
	bool esc;

	for (; p < e; p++) {
		switch (*p) {
		case '{': case '[':
			if (depth == (int)sizeof(stack))
				return NULL;
			stack[depth++] = *p == '{' ? '}' : ']';
			break;
		case '}': case ']':
			if (!depth || stack[depth - 1] != *p)
				return NULL;
			if (!--depth)
				return p + 1;
			break;
		case '"':
			p = str_end(p, e, &esc);
			if (!p)
				return NULL;
			break;
		default:
			break;
		}
	}
	return NULL;
}

int rline__parse(const char *p, size_t n, struct rline *l)
{
	const char *e = p + n, *q;
	struct rline_member *m;
	bool esc;

	l->n = 0;
	p = blank(p, e);
	if (p == e || *p != '{')
		return -EINVAL;
	p = blank(p + 1, e);
	if (p < e && *p == '}')
		return blank(p + 1, e) == e ? 0 : -EINVAL;
	for (;;) {
		if (l->n == RLINE_MAX_MEMBERS || p == e || *p != '"')
			return -EINVAL;
		m = &l->m[l->n];
		esc = false;
		q = str_end(p, e, &esc);
		if (!q || esc)
			return -EINVAL;	/* our keys never need escapes */
		m->key = p + 1;
		m->klen = q - p - 1;
		p = blank(q + 1, e);
		if (p == e || *p != ':')
			return -EINVAL;
		p = blank(p + 1, e);
		if (p == e)
			return -EINVAL;
		m->escaped = false;
		if (*p == '"') {
			q = str_end(p, e, &m->escaped);
			if (!q)
				return -EINVAL;
			m->type = RL_STR;
			m->val = p + 1;
			m->vlen = q - p - 1;
			p = q + 1;
		} else if (*p == '{' || *p == '[') {
			q = nested_end(p, e);
			if (!q)
				return -EINVAL;
			m->type = RL_NESTED;
			m->val = p;
			m->vlen = q - p;
			p = q;
		} else {
			for (q = p; q < e && *q != ',' && *q != '}' && *q != ' ' && *q != '\t' &&
			     *q != '\r' && *q != '\n'; q++)
				;
			m->val = p;
			m->vlen = q - p;
			if (m->vlen == 4 && !memcmp(p, "true", 4))
				m->type = RL_TRUE;
			else if (m->vlen == 5 && !memcmp(p, "false", 5))
				m->type = RL_FALSE;
			else if (m->vlen == 4 && !memcmp(p, "null", 4))
				m->type = RL_NULL;
			else if (m->vlen && (*p == '-' || (*p >= '0' && *p <= '9')))
				m->type = RL_NUM;
			else
				return -EINVAL;
			p = q;
		}
		l->n++;
		p = blank(p, e);
		if (p < e && *p == ',') {
			p = blank(p + 1, e);
			continue;
		}
		if (p < e && *p == '}')
			return blank(p + 1, e) == e ? 0 : -EINVAL;
		return -EINVAL;
	}
}

static const struct rline_member *find(const struct rline *l, const char *key)
{
	size_t kl = strlen(key);
	int i;

	for (i = 0; i < l->n; i++)
		if (l->m[i].klen == kl && !memcmp(l->m[i].key, key, kl))
			return &l->m[i];
	return NULL;
}

/* An integer's digits: true with the magnitude in *v (no overflow) and the sign in *neg. */
static bool digits(const struct rline_member *m, uint64_t *v, bool *neg)
{
	const char *p = m->val, *e = m->val + m->vlen;
	uint64_t x = 0;

	if (m->type != RL_NUM)
		return false;
	*neg = *p == '-';
	if (*neg)
		p++;
	if (p == e)
		return false;
	for (; p < e; p++) {
		if (*p < '0' || *p > '9' || x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return false;
		x = x * 10 + (*p - '0');
	}
	*v = x;
	return true;
}

bool rline__u64(const struct rline *l, const char *key, uint64_t *out)
{
	const struct rline_member *m = find(l, key);
	uint64_t v;
	bool neg;

	if (!m || !digits(m, &v, &neg) || (neg && v))
		return false;
	*out = v;
	return true;
}

bool rline__i64(const struct rline *l, const char *key, int64_t *out)
{
	const struct rline_member *m = find(l, key);
	uint64_t v;
	bool neg;

	if (!m || !digits(m, &v, &neg) || v > (uint64_t)INT64_MAX)
		return false;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

bool rline__bool(const struct rline *l, const char *key, bool *out)
{
	const struct rline_member *m = find(l, key);

	if (!m || (m->type != RL_TRUE && m->type != RL_FALSE))
		return false;
	*out = m->type == RL_TRUE;
	return true;
}

bool rline__null(const struct rline *l, const char *key)
{
	const struct rline_member *m = find(l, key);

	return m && m->type == RL_NULL;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int rline__str(const struct rline *l, const char *key, char *buf, size_t n)
{
	const struct rline_member *m = find(l, key);
	const char *p, *e;
	size_t o = 0;

	if (!m || m->type != RL_STR || !n)
		return -ENOENT;
	for (p = m->val, e = m->val + m->vlen; p < e && o + 1 < n; p++) {
		char c = *p;

		if (c == '\\' && p + 1 < e) {
			c = *++p;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u': {
				int k, v = 0, h;

				for (k = 1; k <= 4 && p + k < e && (h = hexval(p[k])) >= 0; k++)
					v = v * 16 + h;
				if (k != 5)
					return -ENOENT;
				p += 4;
				c = v > 0 && v < 0x80 ? (char)v : '?';
				break;
			}
			default: break;	/* \" \\ \/ */
			}
		}
		buf[o++] = c;
	}
	buf[o] = 0;
	return (int)o;
}

bool rline__is(const struct rline *l, const char *key, const char *s)
{
	const struct rline_member *m = find(l, key);
	size_t sl = strlen(s);

	return m && m->type == RL_STR && !m->escaped && m->vlen == sl && !memcmp(m->val, s, sl);
}

const char *rline__raw(const struct rline *l, const char *key, size_t *len)
{
	const struct rline_member *m = find(l, key);

	if (!m || m->type != RL_NESTED)
		return NULL;
	*len = m->vlen;
	return m->val;
}
