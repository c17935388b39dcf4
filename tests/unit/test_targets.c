// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* targets: -p PID lists, and the existing descendants of a rank. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "targets.h"

static void dedup__across_lists__first_kept(void **state)
{
	pid_t p[] = { 5, 3, 5, 9, 3, 5 };

	assert_int_equal(targets__dedup(p, 6), 3);
	assert_int_equal(p[0], 5);
	assert_int_equal(p[1], 3);
	assert_int_equal(p[2], 9);
	assert_int_equal(targets__dedup(p, 0), 0);
}

static void parse_pids__list__in_order(void **state)
{
	pid_t p[8];
	const char *bad = NULL;

	assert_int_equal(targets__parse_pids("1,2,3", p, 8, &bad), 3);
	assert_int_equal(p[0], 1);
	assert_int_equal(p[1], 2);
	assert_int_equal(p[2], 3);
	assert_int_equal(targets__parse_pids("4194304", p, 8, &bad), 1);
	assert_int_equal(p[0], 4194304);
}

static void parse_pids__duplicates__removed_order_kept(void **state)
{
	pid_t p[8];
	const char *bad;

	assert_int_equal(targets__parse_pids("30,10,30,20,10", p, 8, &bad), 3);
	assert_int_equal(p[0], 30);
	assert_int_equal(p[1], 10);
	assert_int_equal(p[2], 20);
	/* duplicates do not count against max */
	assert_int_equal(targets__parse_pids("1,2,1,2,2", p, 2, &bad), 2);
}

static void parse_pids__empty_token__einval_at_token(void **state)
{
	const char *s = "1,,2", *bad = NULL;
	pid_t p[8];

	assert_int_equal(targets__parse_pids(s, p, 8, &bad), -EINVAL);
	assert_ptr_equal(bad, s + 2);
	s = ",1";
	assert_int_equal(targets__parse_pids(s, p, 8, &bad), -EINVAL);
	assert_ptr_equal(bad, s);
}

static void parse_pids__trailing_comma__einval_at_end(void **state)
{
	const char *s = "1,2,", *bad = NULL;
	pid_t p[8];

	assert_int_equal(targets__parse_pids(s, p, 8, &bad), -EINVAL);
	assert_ptr_equal(bad, s + 4);
}

static void parse_pids__junk__einval_at_token(void **state)
{
	static const struct {
		const char *s;
		size_t at;
	} bad[] = {
		{ "abc", 0 },
		{ "0", 0 },
		{ "-5", 0 },
		{ "1,x,3", 2 },
		{ "1,2,0", 4 },
		{ "12a", 0 },
		{ "1, 2", 2 },
		{ "4194305", 0 },
		{ "1,99999999999999999999999", 2 },
		{ "1,123456789012345678901234567890123456", 2 },	/* longer than any pid */
	};
	const char *where;
	pid_t p[8];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		where = NULL;
		if (targets__parse_pids(bad[i].s, p, 8, &where) != -EINVAL)
			fail_msg("accepted '%s'", bad[i].s);
		if (where != bad[i].s + bad[i].at)
			fail_msg("'%s': bad points at offset %td, want %zu", bad[i].s,
				 where - bad[i].s, bad[i].at);
	}
}

static void parse_pids__empty__einval(void **state)
{
	const char *bad;
	pid_t p[1];

	assert_int_equal(targets__parse_pids("", p, 1, &bad), -EINVAL);
	assert_int_equal(targets__parse_pids(NULL, p, 1, &bad), -EINVAL);
}

static void parse_pids__too_many__e2big_at_token(void **state)
{
	const char *s = "1,2,3", *bad = NULL;
	pid_t p[2];

	assert_int_equal(targets__parse_pids(s, p, 2, &bad), -E2BIG);
	assert_ptr_equal(bad, s + 4);
	assert_int_equal(targets__parse_pids(s, p, 0, &bad), -E2BIG);
}

static int contains(const pid_t *p, int n, pid_t want)
{
	int i;

	for (i = 0; i < n; i++)
		if (p[i] == want)
			return 1;
	return 0;
}

static void children__forked_child_and_grandchild__found(void **state)
{
	pid_t child, grandchild = 0, out[64];
	int fds[2], n, status;

	assert_int_equal(pipe(fds), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pid_t g;

		close(fds[0]);
		g = fork();
		if (g == 0) {
			close(fds[1]);
			pause();
			_exit(0);
		}
		if (g < 0 || write(fds[1], &g, sizeof(g)) != sizeof(g))
			_exit(1);
		close(fds[1]);
		/* reap the grandchild when the test kills it, then go */
		waitpid(g, NULL, 0);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &grandchild, sizeof(grandchild)), sizeof(grandchild));
	close(fds[0]);
	assert_true(grandchild > 0);

	n = targets__children(getpid(), out, 64);
	/* check before cleaning up: a failed assert jumps out of the test */
	kill(grandchild, SIGKILL);
	waitpid(child, &status, 0);
	assert_true(contains(out, n, child));
	assert_true(contains(out, n, grandchild));
	assert_false(contains(out, n, getpid()));
	assert_false(contains(out, n, getppid()));
}

static void children__bounded__max(void **state)
{
	pid_t kids[3], out[64];
	int i, n;

	for (i = 0; i < 3; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			pause();
			_exit(0);
		}
	}
	n = targets__children(getpid(), out, 2);
	for (i = 0; i < 3; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	assert_int_equal(n, 2);
	assert_true(contains(kids, 3, out[0]));
	assert_true(contains(kids, 3, out[1]));
}

static void children__leaf_process__none(void **state)
{
	pid_t kid, out[8];
	int n;

	kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		pause();
		_exit(0);
	}
	n = targets__children(kid, out, 8);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	assert_int_equal(n, 0);
	assert_int_equal(targets__children(99999999, out, 8), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dedup__across_lists__first_kept),
		cmocka_unit_test(parse_pids__list__in_order),
		cmocka_unit_test(parse_pids__duplicates__removed_order_kept),
		cmocka_unit_test(parse_pids__empty_token__einval_at_token),
		cmocka_unit_test(parse_pids__trailing_comma__einval_at_end),
		cmocka_unit_test(parse_pids__junk__einval_at_token),
		cmocka_unit_test(parse_pids__empty__einval),
		cmocka_unit_test(parse_pids__too_many__e2big_at_token),
		cmocka_unit_test(children__forked_child_and_grandchild__found),
		cmocka_unit_test(children__bounded__max),
		cmocka_unit_test(children__leaf_process__none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
