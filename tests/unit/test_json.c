// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* json: byte-exact output, commas, escaping, UTF-8 validation, numbers, nesting limit. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "json.h"

static int setup(void **state)
{
	static struct json j;

	json__init(&j);
	*state = &j;
	return 0;
}

static int teardown(void **state)
{
	json__free(*state);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* One string value through the writer, compared byte for byte. */
static void check_strn(struct json *j, const char *in, size_t n, const char *want)
{
	json__reset(j);
	json__strn(j, in, n);
	assert_int_equal(j->err, 0);
	assert_string_equal(j->buf, want);
	assert_int_equal(j->len, strlen(want));
}

#define CHECK_STR(j, lit, want) check_strn((j), (lit), sizeof(lit) - 1, (want))

static void nested__objects_and_arrays__exact_bytes(void **state)
{
	struct json *j = *state;

	json__obj_begin(j);
	json__kint(j, "a", 1);
	json__key(j, "b");
	json__arr_begin(j);
	json__int(j, 1);
	json__int(j, 2);
	json__obj_begin(j);
	json__kstr(j, "c", "x");
	json__kstr(j, "n", NULL);
	json__obj_end(j);
	json__arr_begin(j);
	json__arr_end(j);
	json__arr_end(j);
	json__key(j, "d");
	json__obj_begin(j);
	json__obj_end(j);
	json__key(j, "e");
	json__arr_begin(j);
	json__bool(j, true);
	json__bool(j, false);
	json__null(j);
	json__arr_end(j);
	json__kuint(j, "f", 7);
	json__kdouble(j, "g", 1.5);
	json__obj_end(j);
	assert_int_equal(j->err, 0);
	assert_string_equal(j->buf, "{\"a\":1,\"b\":[1,2,{\"c\":\"x\",\"n\":null},[]],\"d\":{},"
				    "\"e\":[true,false,null],\"f\":7,\"g\":1.5}");
	assert_int_equal(j->len, strlen(j->buf));
	assert_int_equal(j->depth, 0);
}

static void nested__array_of_objects__commas_between(void **state)
{
	struct json *j = *state;
	int i;

	json__arr_begin(j);
	for (i = 0; i < 3; i++) {
		json__obj_begin(j);
		json__kint(j, "i", i);
		json__kint(j, "sq", i * i);
		json__obj_end(j);
	}
	json__arr_end(j);
	assert_string_equal(j->buf, "[{\"i\":0,\"sq\":0},{\"i\":1,\"sq\":1},{\"i\":2,\"sq\":4}]");
}

static void str__quote_backslash__escaped(void **state)
{
	struct json *j = *state;

	CHECK_STR(j, "a\"b\\c", "\"a\\\"b\\\\c\"");
	CHECK_STR(j, "/", "\"/\"");
	CHECK_STR(j, "", "\"\"");
}

static void str__control_chars__escaped(void **state)
{
	struct json *j = *state;

	CHECK_STR(j, "\n\r\t", "\"\\n\\r\\t\"");
	CHECK_STR(j, "\x01", "\"\\u0001\"");
	CHECK_STR(j, "\x08\x0c\x1f", "\"\\u0008\\u000c\\u001f\"");
	CHECK_STR(j, "a\0b", "\"a\\u0000b\"");
}

static void str__del__escaped(void **state)
{
	struct json *j = *state;

	CHECK_STR(j, "\x7f", "\"\\u007f\"");
	CHECK_STR(j, "~\x7f~", "\"~\\u007f~\"");
}

static void str__valid_utf8__passed_through(void **state)
{
	struct json *j = *state;

	CHECK_STR(j, "\xc3\xa9", "\"\xc3\xa9\"");			/* U+00E9 */
	CHECK_STR(j, "\xe2\x82\xac", "\"\xe2\x82\xac\"");		/* U+20AC */
	CHECK_STR(j, "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");	/* U+1F600 */
	CHECK_STR(j, "\xc2\x80", "\"\xc2\x80\"");			/* smallest 2-byte */
	CHECK_STR(j, "\xef\xbf\xbf", "\"\xef\xbf\xbf\"");		/* U+FFFF */
	CHECK_STR(j, "\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");	/* U+10FFFF */
	CHECK_STR(j, "\xed\x9f\xbf", "\"\xed\x9f\xbf\"");		/* U+D7FF, below surrogates */
}

static void str__invalid_utf8__replacement(void **state)
{
	struct json *j = *state;

	CHECK_STR(j, "\xff", "\"\\ufffd\"");
	CHECK_STR(j, "a\xfe" "b", "\"a\\ufffdb\"");
	CHECK_STR(j, "\x80", "\"\\ufffd\"");				/* lone continuation */
	/* truncated sequence at the end, and followed by ASCII */
	CHECK_STR(j, "\xe2\x82", "\"\\ufffd\\ufffd\"");
	CHECK_STR(j, "\xe2\x82" "A", "\"\\ufffd\\ufffdA\"");
	CHECK_STR(j, "\xf0\x9f\x98", "\"\\ufffd\\ufffd\\ufffd\"");
	/* overlong '/' */
	CHECK_STR(j, "\xc0\xaf", "\"\\ufffd\\ufffd\"");
	CHECK_STR(j, "\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");
	/* UTF-16 surrogate U+D800 */
	CHECK_STR(j, "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
	CHECK_STR(j, "\xed\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\"");
	/* above U+10FFFF */
	CHECK_STR(j, "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	/* a valid character right after an invalid byte survives */
	CHECK_STR(j, "\xff\xc3\xa9", "\"\\ufffd\xc3\xa9\"");
}

static void strn__length__bounds_read(void **state)
{
	struct json *j = *state;

	/* n cuts a valid 2-byte sequence in half: the half is invalid, bytes past n unread */
	check_strn(j, "ab\xc3\xa9", 3, "\"ab\\ufffd\"");
	check_strn(j, "abcdef", 2, "\"ab\"");
}

static void double__non_finite__null(void **state)
{
	struct json *j = *state;

	json__arr_begin(j);
	json__double(j, NAN);
	json__double(j, INFINITY);
	json__double(j, -INFINITY);
	json__double(j, 0.25);
	json__arr_end(j);
	assert_string_equal(j->buf, "[null,null,null,0.25]");
	json__reset(j);
	json__obj_begin(j);
	json__kdouble(j, "x", NAN);
	json__obj_end(j);
	assert_string_equal(j->buf, "{\"x\":null}");
}

/* Plain runs are copied whole between escapes: every boundary between a run and an escape. */
static void strn__runs_between_escapes__exact(void **state)
{
	struct json *j = *state;

	CHECK_STR(j, "abc\"def\\ghi\n\x01jk\x7f\xc3\xa9lm\xffno",
		  "\"abc\\\"def\\\\ghi\\n\\u0001jk\\u007f\xc3\xa9lm\\ufffdno\"");
	CHECK_STR(j, "\"", "\"\\\"\"");
	CHECK_STR(j, "x", "\"x\"");
	CHECK_STR(j, "", "\"\"");
	CHECK_STR(j, "tail\\", "\"tail\\\\\"");
}

static void int__extremes__exact(void **state)
{
	struct json *j = *state;

	json__arr_begin(j);
	json__int(j, INT64_MIN);
	json__int(j, INT64_MAX);
	json__int(j, -1);
	json__uint(j, UINT64_MAX);
	json__uint(j, 0);
	json__arr_end(j);
	assert_string_equal(j->buf, "[-9223372036854775808,9223372036854775807,-1,"
				    "18446744073709551615,0]");
}

static void nesting__below_limit__ok(void **state)
{
	struct json *j = *state;
	char want[2 * JSON_MAX_DEPTH + 1];
	int i, n = JSON_MAX_DEPTH - 1;

	for (i = 0; i < n; i++)
		json__arr_begin(j);
	for (i = 0; i < n; i++)
		json__arr_end(j);
	assert_int_equal(j->err, 0);
	memset(want, '[', n);
	memset(want + n, ']', n);
	want[2 * n] = '\0';
	assert_string_equal(j->buf, want);
}

static void nesting__at_limit__err(void **state)
{
	struct json *j = *state;
	int i;

	/* first[] has JSON_MAX_DEPTH slots and the top level takes one */
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		json__arr_begin(j);
	assert_int_equal(j->err, -EINVAL);
}

static void nesting__beyond_limit__err(void **state)
{
	struct json *j = *state;
	size_t len;
	int i;

	for (i = 0; i < JSON_MAX_DEPTH + 1; i++)
		json__obj_begin(j);
	assert_int_equal(j->err, -EINVAL);
	/* sticky: nothing more is written */
	len = j->len;
	json__kint(j, "x", 1);
	json__str(j, "more");
	assert_int_equal(j->len, len);
	assert_int_equal(j->err, -EINVAL);
}

static void nesting__close_without_open__err(void **state)
{
	struct json *j = *state;

	json__arr_end(j);
	assert_int_equal(j->err, -EINVAL);
}

static void reset__after_output__keeps_buffer_empties_text(void **state)
{
	struct json *j = *state;
	char *buf;
	size_t cap;

	json__arr_begin(j);
	json__str(j, "something long enough to allocate");
	json__int(j, 1);
	json__arr_end(j);
	buf = j->buf;
	cap = j->cap;
	assert_non_null(buf);
	json__reset(j);
	assert_ptr_equal(j->buf, buf);
	assert_int_equal(j->cap, cap);
	assert_int_equal(j->len, 0);
	assert_string_equal(j->buf, "");
	assert_int_equal(j->depth, 0);
	/* a fresh document: no stray comma from the previous one */
	json__obj_begin(j);
	json__kint(j, "a", 2);
	json__obj_end(j);
	assert_string_equal(j->buf, "{\"a\":2}");
	assert_ptr_equal(j->buf, buf);
}

static void reset__after_error__clears_err(void **state)
{
	struct json *j = *state;

	json__obj_end(j);
	assert_int_equal(j->err, -EINVAL);
	json__reset(j);
	assert_int_equal(j->err, 0);
	json__int(j, 3);
	assert_string_equal(j->buf, "3");
}

static void growth__large_output__intact(void **state)
{
	struct json *j = *state;
	char want[16];
	int i;

	json__arr_begin(j);
	for (i = 0; i < 10000; i++)
		json__int(j, i);
	json__arr_end(j);
	assert_int_equal(j->err, 0);
	assert_true(j->cap > j->len);
	assert_int_equal(j->len, strlen(j->buf));
	assert_memory_equal(j->buf, "[0,1,2,3,", 9);
	snprintf(want, sizeof(want), ",%d]", 9999);
	assert_string_equal(j->buf + j->len - strlen(want), want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(nested__objects_and_arrays__exact_bytes),
		T(nested__array_of_objects__commas_between),
		T(str__quote_backslash__escaped),
		T(str__control_chars__escaped),
		T(str__del__escaped),
		T(str__valid_utf8__passed_through),
		T(str__invalid_utf8__replacement),
		T(strn__length__bounds_read),
		T(double__non_finite__null),
		T(strn__runs_between_escapes__exact),
		T(int__extremes__exact),
		T(nesting__below_limit__ok),
		T(nesting__at_limit__err),
		T(nesting__beyond_limit__err),
		T(nesting__close_without_open__err),
		T(reset__after_output__keeps_buffer_empties_text),
		T(reset__after_error__clears_err),
		T(growth__large_output__intact),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
