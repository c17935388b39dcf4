/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One JSON line of a recording or an op trace, read in place: the top-level members of one
 * object, nested objects and arrays kept as their raw text. Much faster than a tree (a replay
 * reads millions of lines), bounded, and it never reads past the line.
 */
#ifndef RS_RLINE_H
#define RS_RLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RLINE_MAX_MEMBERS 48

enum rline_type { RL_STR, RL_NUM, RL_TRUE, RL_FALSE, RL_NULL, RL_NESTED };

struct rline_member {
	const char *key, *val;	/* key without quotes; a string's value without quotes, raw */
	uint32_t klen, vlen;
	enum rline_type type;
	bool escaped;		/* a string with backslashes: rline__str decodes it */
};

struct rline {
	struct rline_member m[RLINE_MAX_MEMBERS];
	int n;
};

/* Read the object in p[0..n) (leading and trailing blanks allowed). Returns 0, or -EINVAL
 * when it is no JSON object, or holds more than RLINE_MAX_MEMBERS members. */
int rline__parse(const char *p, size_t n, struct rline *l);

/* Typed reads of member key: true and *out set only when it exists with that type (an
 * integer: a number without fraction or exponent that fits). */
bool rline__u64(const struct rline *l, const char *key, uint64_t *out);
bool rline__i64(const struct rline *l, const char *key, int64_t *out);
bool rline__bool(const struct rline *l, const char *key, bool *out);
/* Is member key there and null? */
bool rline__null(const struct rline *l, const char *key);
/* A string member decoded into buf (NUL-terminated, cut to n - 1 bytes; \u escapes outside
 * ASCII become '?'). Returns its length, or -ENOENT when there is no such string. */
int rline__str(const struct rline *l, const char *key, char *buf, size_t n);
/* Does string member key equal s? */
bool rline__is(const struct rline *l, const char *key, const char *s);
/* A nested object's or array's raw text, or NULL. */
const char *rline__raw(const struct rline *l, const char *key, size_t *len);

#endif /* RS_RLINE_H */
