/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A small JSON writer into a growable buffer; commas and escaping are its job, not the caller's. */
#ifndef RS_JSON_H
#define RS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 16

struct json {
	char *buf;
	size_t len;
	size_t cap;
	int depth;
	bool first[JSON_MAX_DEPTH];
	bool after_key;
	int err;	/* sticky: -ENOMEM or -EINVAL (nesting) */
};

void json__init(struct json *j);
void json__reset(struct json *j);	/* keep the buffer, empty the text */
void json__free(struct json *j);

void json__obj_begin(struct json *j);
void json__obj_end(struct json *j);
void json__arr_begin(struct json *j);
void json__arr_end(struct json *j);
void json__key(struct json *j, const char *k);
/* Invalid UTF-8 bytes are written as U+FFFD so output is always valid JSON. */
void json__str(struct json *j, const char *s);
void json__strn(struct json *j, const char *s, size_t n);
void json__int(struct json *j, int64_t v);
void json__uint(struct json *j, uint64_t v);
void json__double(struct json *j, double v);	/* non-finite becomes null */
void json__bool(struct json *j, bool v);
void json__null(struct json *j);

/* A value that is already JSON text (the caller rendered it with this writer). */
void json__raw(struct json *j, const char *text);

/* key + value shorthands */
void json__kstr(struct json *j, const char *k, const char *v);	/* NULL -> null */
void json__kint(struct json *j, const char *k, int64_t v);
void json__kuint(struct json *j, const char *k, uint64_t v);
void json__kdouble(struct json *j, const char *k, double v);
/* Unix seconds to the millisecond ("%.3f"): json__double's 9 digits are 10 s at this epoch. */
void json__kunix(struct json *j, const char *k, double v);

#endif /* RS_JSON_H */
