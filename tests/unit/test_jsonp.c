// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* jsonp: the hub's reader of what node daemons answer (hostile input). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "jsonp.h"

static int parse(struct jsonp *d, const char *s)
{
	return jsonp__parse(d, s, strlen(s), 1000);
}

static void step_line__members_read_by_type(void **state)
{
	struct jsonp d = {};
	const struct jsonp_val *r, *ph, *c;
	int64_t i;
	uint64_t u;
	double x;
	int n = 0;

	assert_int_equal(parse(&d, " {\"type\":\"step\",\"rank\":3,\"start_ns\":1764000000123456789,"
			 "\"neg\":-7,\"dur_ns\":8.5e6,\"phases\":{\"compute\":5,\"comm\":2},"
			 "\"ok\":true,\"no\":false,\"z\":null,\"a\":[1,[2,3],{}]} \n"), 0);
	r = jsonp__root(&d);
	assert_int_equal(r->type, JSONP_OBJ);
	assert_string_equal(jsonp__str(&d, r, "type"), "step");
	assert_true(jsonp__int64(&d, r, "rank", &i));
	assert_int_equal(i, 3);
	/* past 2^53: exact as an integer, not through a double */
	assert_true(jsonp__uint64(&d, r, "start_ns", &u));
	assert_true(u == 1764000000123456789ULL);
	assert_false(jsonp__uint64(&d, r, "neg", &u));
	assert_true(jsonp__int64(&d, r, "neg", &i));
	assert_int_equal(i, -7);
	assert_false(jsonp__int64(&d, r, "dur_ns", &i));	/* written with an exponent */
	assert_true(jsonp__double(&d, r, "dur_ns", &x));
	assert_true(x == 8.5e6);
	assert_null(jsonp__str(&d, r, "rank"));
	assert_null(jsonp__get(&d, r, "missing"));
	ph = jsonp__get(&d, r, "phases");
	assert_true(jsonp__int64(&d, ph, "comm", &i));
	assert_int_equal(i, 2);
	assert_true(jsonp__get(&d, r, "ok")->b);
	assert_false(jsonp__get(&d, r, "no")->b);
	assert_int_equal(jsonp__get(&d, r, "z")->type, JSONP_NULL);
	for (c = jsonp__first(&d, jsonp__get(&d, r, "a")); c; c = jsonp__next(&d, c))
		n++;
	assert_int_equal(n, 3);
	jsonp__free(&d);
}

static void strings__escapes_and_surrogates_decoded(void **state)
{
	struct jsonp d = {};
	const struct jsonp_val *r;

	assert_int_equal(parse(&d, "[\"a\\\"b\\\\c\\/d\\n\\t\", \"\\u00e9\\u20ac\", "
			 "\"\\ud83d\\ude00\", \"\\ud800x\", \"nul\\u0000in\"]"), 0);
	r = jsonp__first(&d, jsonp__root(&d));
	assert_string_equal(r->str, "a\"b\\c/d\n\t");
	r = jsonp__next(&d, r);
	assert_string_equal(r->str, "\xc3\xa9\xe2\x82\xac");
	r = jsonp__next(&d, r);
	assert_string_equal(r->str, "\xf0\x9f\x98\x80");
	r = jsonp__next(&d, r);
	assert_string_equal(r->str, "\xef\xbf\xbdx");	/* a lone surrogate: U+FFFD */
	r = jsonp__next(&d, r);
	assert_int_equal(r->len, 6);
	assert_memory_equal(r->str, "nul\0in", 6);
	jsonp__free(&d);
}

static void bad_text__refused_with_where(void **state)
{
	static const char *const bad[] = {
		"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1,}", "[1 2]", "01", "1.", "1e", "-",
		"+1", ".5", "tru", "nulll", "\"abc", "\"a\\x\"", "\"\\u12g4\"", "\"tab\there\"",
		"{1:2}", "[1]]", "{} {}", "NaN", "0x10",
	};
	struct jsonp d = {};
	char deep[200];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(&d, bad[i]) != -EINVAL)
			print_error("accepted: '%s'\n", bad[i]);
		assert_int_equal(parse(&d, bad[i]), -EINVAL);
		assert_non_null(strstr(d.err, "at byte"));
	}
	/* nested past JSONP_MAX_DEPTH */
	memset(deep, '[', sizeof(deep) - 1);
	deep[sizeof(deep) - 1] = 0;
	assert_int_equal(parse(&d, deep), -EINVAL);
	assert_non_null(strstr(d.err, "too deep"));
	/* more values than allowed */
	assert_int_equal(jsonp__parse(&d, "[1,2,3,4]", 9, 4), -EINVAL);
	assert_non_null(strstr(d.err, "too many values"));
	assert_int_equal(jsonp__parse(&d, "[1,2,3]", 7, 4), 0);
	/* the length is what counts, not a NUL: nothing is read past it */
	assert_int_equal(jsonp__parse(&d, "[1,2]xyz", 5, 10), 0);
	assert_int_equal(jsonp__parse(&d, "\"ab", 2, 10), -EINVAL);
	jsonp__free(&d);
	jsonp__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(step_line__members_read_by_type),
		cmocka_unit_test(strings__escapes_and_surrogates_decoded),
		cmocka_unit_test(bad_text__refused_with_where),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
