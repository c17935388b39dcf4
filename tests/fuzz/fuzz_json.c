// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: the JSON writer's string escaping (user/util/json.c), which every
 * capture, step line and API document uses for text from a container (paths, names, job
 * ids, Python frames), on any bytes. The document it writes must parse (user/util/jsonp.c) and
 * give back the same bytes, with U+FFFD for each byte that starts no UTF-8 sequence. With
 * FUZZ_JSON_OUT set, each document is also written there, for tests/fuzz/json.sh to check with
 * Python's json module. Built with ASan and UBSan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_common.h"
#include "json.h"
#include "jsonp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	const struct jsonp_val *v;
	struct jsonp d = {};
	struct json j;
	size_t o;
	char *exp, *key = NULL;

	json__init(&j);
	exp = malloc(3 * size + 1);
	key = strndup(s, size);
	if (!exp || !key)
		goto out;
	o = fuzz_expect_utf8(s, size, exp);
	json__obj_begin(&j);
	json__key(&j, "frame");
	json__strn(&j, s, size);
	json__key(&j, key);	/* a key is a string too (up to the first NUL) */
	json__uint(&j, size);
	json__obj_end(&j);
	if (j.err)
		goto out;
	if (jsonp__parse(&d, j.buf, j.len, 16))
		abort();
	v = jsonp__get(&d, jsonp__root(&d), "frame");
	if (!v || v->type != JSONP_STR || v->len != o || memcmp(v->str, exp, o))
		abort();
	fuzz_write_out("FUZZ_JSON_OUT", "json", j.buf, j.len);
out:
	jsonp__free(&d);
	json__free(&j);
	free(exp);
	free(key);
	return 0;
}
