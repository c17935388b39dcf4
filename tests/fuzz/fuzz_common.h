/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What the text-writer harnesses share: the text a reader should get back, and a copy of each
 * document for a checker outside the fuzzer (promtool, Python). */
#ifndef RS_FUZZ_COMMON_H
#define RS_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "utf8.h"

/* s's n bytes as a reader gets them back: each byte that starts no UTF-8 sequence becomes
 * U+FFFD. out holds 3 * n + 1; returns the length (out is NUL-terminated). */
static inline size_t fuzz_expect_utf8(const char *s, size_t n, char *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i, l, o = 0;

	for (i = 0; i < n; i += l ? l : 1) {
		l = u[i] < 0x80 ? 1 : utf8__len(u + i, n - i);
		memcpy(out + o, l ? s + i : "\xef\xbf\xbd", l ? l : 3);
		o += l ? l : 3;
	}
	out[o] = '\0';
	return o;
}

/* With the directory in env set, write the document there as N.ext, N counting up. */
static inline void fuzz_write_out(const char *env, const char *ext, const char *buf, size_t len)
{
	static unsigned long count;
	const char *dir = getenv(env);
	char path[512];
	FILE *fp;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%lu.%s", dir, count++, ext);
	fp = fopen(path, "w");
	if (!fp)
		return;
	fwrite(buf, 1, len, fp);
	fclose(fp);
}

#endif /* RS_FUZZ_COMMON_H */
