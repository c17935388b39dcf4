// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cmocka tests for user/util/log.c: text from traced processes cannot drive the terminal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "log.h"

static void safe__escape_and_control__replaced(void **state)
{
	char buf[32];

	assert_string_equal(log__safe("a\033[2Jb\nc\x7f\xc3\xa9", buf, sizeof(buf)), "a?[2Jb?c???");
}

static void safe__long__truncated_terminated(void **state)
{
	char buf[4];

	assert_string_equal(log__safe("abcdef", buf, sizeof(buf)), "abc");
	assert_string_equal(log__safe(NULL, buf, sizeof(buf)), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(safe__escape_and_control__replaced),
		cmocka_unit_test(safe__long__truncated_terminated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
