// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* report: the terminal's phase bar, letter per phase, proportional, small phases kept visible. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "report.h"

static int count(const char *s, char c)
{
	int n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

static void bar__proportional__width_exact(void **state)
{
	struct phases ph = {};
	char buf[41];

	ph.ns[PH_COMPUTE] = 25;
	ph.ns[PH_COMM] = 50;
	ph.ns[PH_OTHER] = 25;
	report__phase_bar(&ph, 100, buf, 40);
	assert_int_equal(strlen(buf), 40);
	assert_int_equal(count(buf, 'c'), 10);
	assert_int_equal(count(buf, 'm'), 20);
	assert_int_equal(count(buf, 'o'), 10);
	assert_string_equal(buf, "ccccccccccmmmmmmmmmmmmmmmmmmmmoooooooooo");	/* phase order */
}

static void bar__small_phase__still_one_letter(void **state)
{
	struct phases ph = {};
	char buf[21];

	ph.ns[PH_COMPUTE] = 970;
	ph.ns[PH_GPU_WAIT] = 30;	/* 3%: less than one cell of 20, still shown */
	report__phase_bar(&ph, 1000, buf, 20);
	assert_int_equal(strlen(buf), 20);
	assert_int_equal(count(buf, 'g'), 1);
	assert_int_equal(count(buf, 'c'), 19);
}

static void bar__nothing__empty(void **state)
{
	struct phases ph = {};
	char buf[8] = "x";

	assert_string_equal(report__phase_bar(&ph, 0, buf, 7), "");
}

/* evidence.detail is a stable field: present on every verdict, "" when there is nothing. */
static void verdict__no_detail__empty_string(void **state)
{
	static const enum vclass classes[] = { V_NONE, V_COMPUTE, V_INPUT };
	struct job_verdict v;
	struct json j;
	size_t i;

	for (i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		memset(&v, 0, sizeof(v));
		v.v.cls = classes[i];
		json__init(&j);
		report__verdict(&j, &v, "job", 1, 42);
		assert_false(j.err);
		assert_non_null(strstr(j.buf, "\"evidence\":{"));
		assert_non_null(strstr(j.buf, "\"detail\":\"\""));
		json__free(&j);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bar__proportional__width_exact),
		cmocka_unit_test(bar__small_phase__still_one_letter),
		cmocka_unit_test(bar__nothing__empty),
		cmocka_unit_test(verdict__no_detail__empty_string),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
