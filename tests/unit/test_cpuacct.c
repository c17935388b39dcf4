// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cpuacct: CPU time by thread kind, counted for live and ended threads, never decreasing. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>
#include "cpuacct.h"

/* Burn about ms of this thread's CPU time. */
static void burn(double ms)
{
	struct timespec a, b;
	volatile unsigned long x = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 10000; i++)
			x += i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

static void *capture_thread(void *arg)
{
	pthread_setname_np(pthread_self(), CPUACCT_CAPTURE_NAME);
	burn(30);
	cpuacct__thread_exit(CPUACCT_CAPTURE);
	return arg;
}

static void *other_thread(void *arg)
{
	burn(30);
	return arg;
}

static void kinds__main_capture_other__each_counted(void **state)
{
	double a[CPUACCT_KINDS], b[CPUACCT_KINDS], c[CPUACCT_KINDS];
	pthread_t th;

	assert_int_equal(cpuacct__read(a), 0);
	burn(30);
	assert_int_equal(cpuacct__read(b), 0);
	assert_true(b[CPUACCT_LOOP] >= a[CPUACCT_LOOP] + 0.025);	/* the main thread */
	assert_int_equal(pthread_create(&th, NULL, capture_thread, NULL), 0);
	pthread_join(th, NULL);
	assert_int_equal(cpuacct__read(c), 0);
	/* ended, and still counted: at least its 30 ms, not twice that */
	assert_true(c[CPUACCT_CAPTURE] >= b[CPUACCT_CAPTURE] + 0.025);
	assert_true(c[CPUACCT_CAPTURE] < b[CPUACCT_CAPTURE] + 0.2);
	assert_int_equal(pthread_create(&th, NULL, other_thread, NULL), 0);
	burn(5);
	pthread_join(th, NULL);
	/* an unnamed thread is the HTTP server's kind; once it ended uncounted, the reading
	 * keeps what it saw (a counter never goes back) */
	assert_int_equal(cpuacct__read(a), 0);
	for (int k = 0; k < CPUACCT_KINDS; k++)
		assert_true(a[k] >= c[k]);
}

static void names__every_kind__distinct(void **state)
{
	assert_string_equal(cpuacct__name(CPUACCT_LOOP), "loop");
	assert_string_equal(cpuacct__name(CPUACCT_HTTP), "http");
	assert_string_equal(cpuacct__name(CPUACCT_CAPTURE), "capture");
	assert_string_equal(cpuacct__name(CPUACCT_KINDS), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(kinds__main_capture_other__each_counted),
		cmocka_unit_test(names__every_kind__distinct),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
