// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cmocka tests for user/util/log.c: text from traced processes cannot drive the terminal. */
#include <setjmp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

/* stdout and stderr into one temporary file (2>&1), stdout fully buffered in buf */
struct capture {
	char path[32];
	int fd, out, err;
};

static void capture_begin(struct capture *c, char *buf, size_t n)
{
	snprintf(c->path, sizeof(c->path), "/tmp/rs-test-log-XXXXXX");
	c->fd = mkstemp(c->path);
	c->out = dup(1);
	c->err = dup(2);
	assert_true(c->fd >= 0 && c->out >= 0 && c->err >= 0);
	fflush(stdout);
	dup2(c->fd, 1);
	dup2(c->fd, 2);
	setvbuf(stdout, buf, _IOFBF, n);
}

/* back to the terminal; the file, open for reading (and gone once closed) */
static FILE *capture_end(struct capture *c)
{
	FILE *f;

	fflush(stdout);
	setvbuf(stdout, NULL, _IOLBF, 0);
	dup2(c->out, 1);
	dup2(c->err, 2);
	f = fopen(c->path, "r");
	assert_non_null(f);
	unlink(c->path);
	close(c->fd);
	close(c->out);
	close(c->err);
	return f;
}

/* stdout fully buffered in 128 bytes: a 200-byte line is written out in part (glibc writes the
 * full buffer, keeps the rest); a message logged after it must come after the whole line */
static void msg__after_cut_line__line_whole(void **state)
{
	char line[201], want[256], got[256] = "", buf[128];
	struct capture c;
	FILE *f;
	size_t n;

	memset(line, 'x', sizeof(line));
	line[0] = '{';
	line[sizeof(line) - 3] = '}';
	line[sizeof(line) - 2] = '\n';
	line[sizeof(line) - 1] = '\0';
	snprintf(want, sizeof(want), "%srankscope: late\n", line);
	capture_begin(&c, buf, sizeof(buf));
	fputs(line, stdout);
	log_msg(LOG_WARN, "late");
	f = capture_end(&c);
	n = fread(got, 1, sizeof(got) - 1, f);
	got[n] = '\0';
	fclose(f);
	assert_string_equal(got, want);
}

static void *log_many(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 3000; i++)
		log_msg(LOG_WARN, "message %d of a thread", i);
	return NULL;
}

/* Lines written the way session.c's emit writes them (one call under stdout's lock) into a
 * small full buffer, while another thread logs to the same file: every line must be whole,
 * either a JSON line or a message. A message written between a flush and the next cut of a
 * line would land inside it. */
static void msg__from_thread__lines_whole(void **state)
{
	char line[300], buf[512], got[512];
	int i, bad = 0, json = 0, msgs = 0;
	struct capture c;
	pthread_t t;
	FILE *f;

	memset(line, 'x', sizeof(line));
	line[0] = '{';
	line[sizeof(line) - 2] = '}';
	line[sizeof(line) - 1] = '\n';
	capture_begin(&c, buf, sizeof(buf));
	assert_int_equal(pthread_create(&t, NULL, log_many, NULL), 0);
	for (i = 0; i < 20000; i++) {
		flockfile(stdout);
		fwrite(line, 1, sizeof(line) - 1, stdout);
		fputc('\n', stdout);
		funlockfile(stdout);
	}
	pthread_join(t, NULL);
	f = capture_end(&c);
	while (fgets(got, sizeof(got), f)) {
		if (got[0] == '{')
			json++, bad += strlen(got) != sizeof(line) || got[sizeof(line) - 2] != '}';
		else if (!strncmp(got, "rankscope: message ", 19))
			msgs++, bad += !strstr(got, " of a thread\n");
		else
			bad++;
	}
	fclose(f);
	assert_int_equal(bad, 0);
	assert_int_equal(json, 20000);
	assert_int_equal(msgs, 3000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(safe__escape_and_control__replaced),
		cmocka_unit_test(safe__long__truncated_terminated),
		cmocka_unit_test(msg__after_cut_line__line_whole),
		cmocka_unit_test(msg__from_thread__lines_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
