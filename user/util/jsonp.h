/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A strict JSON reader for what the hub pulls from node daemons: hostile input, so bounded in
 * depth and nodes, and it never reads past the length it is given. The text is copied once;
 * strings are decoded in place in that copy, so a document is two allocations.
 */
#ifndef RS_JSONP_H
#define RS_JSONP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSONP_MAX_DEPTH	32

enum jsonp_type {
	JSONP_NULL,
	JSONP_BOOL,
	JSONP_NUM,
	JSONP_STR,
	JSONP_ARR,
	JSONP_OBJ,
};

struct jsonp_val {
	enum jsonp_type type;
	int child;		/* first element or member; -1: none */
	int next;		/* next sibling; -1: last */
	int n;			/* elements or members */
	const char *key;	/* an object member's name; NULL in arrays and at the top */
	const char *str;	/* JSONP_STR: decoded UTF-8, NUL-terminated (may hold NULs: len) */
	size_t len;
	double num;		/* JSONP_NUM */
	int64_t i;		/* JSONP_NUM written as an integer that fits: exact (ns, ids) */
	bool is_int;
	bool b;			/* JSONP_BOOL */
};

struct jsonp {
	struct jsonp_val *v;	/* v[0] is the document's value */
	int n, cap, max;
	char *text;		/* the copy strings point into */
	char err[96];
};

/*
 * Parse len bytes of text (no NUL needed) into d, at most max_nodes values. Returns 0, or
 * -EINVAL (bad JSON, too deep, too many values: d->err says which, with the byte offset) or
 * -ENOMEM. d is reset first; jsonp__free() it either way.
 */
int jsonp__parse(struct jsonp *d, const char *text, size_t len, int max_nodes);
void jsonp__free(struct jsonp *d);

/* The document's value; NULL before a successful parse. */
const struct jsonp_val *jsonp__root(const struct jsonp *d);
/* An object's member by name (the first, if repeated), or NULL (also when v is no object). */
const struct jsonp_val *jsonp__get(const struct jsonp *d, const struct jsonp_val *v,
				   const char *key);
/* Children of an array or object: for (c = jsonp__first(d, v); c; c = jsonp__next(d, c)) */
const struct jsonp_val *jsonp__first(const struct jsonp *d, const struct jsonp_val *v);
const struct jsonp_val *jsonp__next(const struct jsonp *d, const struct jsonp_val *v);

/* Typed member reads: true and *out set only when the member exists with that type (int64:
 * an integer that fits; uint64: one that is not negative). */
bool jsonp__int64(const struct jsonp *d, const struct jsonp_val *obj, const char *key,
		  int64_t *out);
bool jsonp__uint64(const struct jsonp *d, const struct jsonp_val *obj, const char *key,
		   uint64_t *out);
bool jsonp__double(const struct jsonp *d, const struct jsonp_val *obj, const char *key,
		   double *out);
/* The member's string, or NULL. */
const char *jsonp__str(const struct jsonp *d, const struct jsonp_val *obj, const char *key);

#endif /* RS_JSONP_H */
