// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* replay: the line reader, and op traces through the model (clock offsets, shuffled lines,
 * a hang, bad input). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "replay.h"
#include "rline.h"

#define MS 1000000ULL

static void rline__members__typed_reads(void **state)
{
	const char *t = " {\"type\":\"op\", \"rank\":3,\"neg\":-5,\"big\":18446744073709551615,"
			"\"s\":\"a\\\"b\\u0041\\u00e9\",\"n\":null,\"b\":true,"
			"\"o\":{\"x\":[1,{\"y\":\"}\"}]},\"f\":1.5} ";
	struct rline l;
	uint64_t u;
	int64_t i;
	char buf[16];
	const char *raw;
	size_t len;
	bool b;

	assert_int_equal(rline__parse(t, strlen(t), &l), 0);
	assert_int_equal(l.n, 9);
	assert_true(rline__is(&l, "type", "op"));
	assert_true(rline__u64(&l, "rank", &u) && u == 3);
	assert_false(rline__u64(&l, "neg", &u));
	assert_true(rline__i64(&l, "neg", &i) && i == -5);
	assert_true(rline__u64(&l, "big", &u) && u == UINT64_MAX);
	assert_false(rline__i64(&l, "big", &i));
	assert_int_equal(rline__str(&l, "s", buf, sizeof(buf)), 5);
	assert_string_equal(buf, "a\"bA?");
	assert_true(rline__null(&l, "n"));
	assert_true(rline__bool(&l, "b", &b) && b);
	raw = rline__raw(&l, "o", &len);
	assert_non_null(raw);
	assert_int_equal(len, strlen("{\"x\":[1,{\"y\":\"}\"}]}"));
	assert_false(rline__u64(&l, "f", &u));	/* not an integer */
	assert_false(rline__u64(&l, "missing", &u));
	assert_int_equal(rline__str(&l, "s", buf, 3), 2);	/* cut, terminated */
}

static void rline__broken__einval(void **state)
{
	static const char *const bad[] = {
		"", "[]", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\":1} x", "{\"a\":\"x}",
		"{\"a\":{\"b\":1}", "{\"a\":tru}", "{\"a\":[1,2}", "{a:1}", "{\"a\":1 \"b\":2}",
	};
	struct rline l;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rline__parse(bad[i], strlen(bad[i]), &l), -EINVAL);
}

/* An op trace of W ranks: compute (rank `slow` 3 ms longer), then an all-reduce whose return
 * is the same instant everywhere; each rank's times on its own clock (off[r]), lines in
 * reverse order. steps < 0: the last step's all-reduce never returns on ranks but `slow`,
 * which computes on forever. */
static char *trace(int W, int steps, int slow, const int64_t *off)
{
	char *path = strdup("/tmp/rs-replay-XXXXXX"), **lines;
	int n = 0, s, r, hang = steps < 0, fd;
	uint64_t t = 10000 * MS, arrive[16];
	FILE *f;

	if (hang)
		steps = -steps;
	lines = calloc(2 * W * steps + 2, sizeof(*lines));
	fd = mkstemp(path);
	assert_true(fd >= 0 && lines);
	f = fdopen(fd, "w");
	fprintf(f, "{\"type\":\"meta\",\"world_size\":%d,\"job\":\"t\"}\n", W);
	for (s = 0; s < steps; s++) {
		bool last = hang && s == steps - 1;
		uint64_t done = 0;

		for (r = 0; r < W; r++) {
			uint64_t c = 2 * MS + (r == slow ? 3 * MS : 0) + (s * 7 + r) % 5 * 10000;

			arrive[r] = t + c;
			if (arrive[r] > done)
				done = arrive[r];
			if (last && r == slow)
				assert_true(asprintf(&lines[n++], "{\"type\":\"op\",\"rank\":%d,\"op\":"
						     "\"compute\",\"start_ns\":%lld}", r,
						     (long long)(t + off[r])) > 0);
			else
				assert_true(asprintf(&lines[n++], "{\"type\":\"op\",\"rank\":%d,\"op\":"
						     "\"compute\",\"start_ns\":%lld,\"dur_ns\":%llu}",
						     r, (long long)(t + off[r]),
						     (unsigned long long)c) > 0);
		}
		done += 200000;
		for (r = 0; r < W; r++) {
			if (last && r == slow)
				continue;
			if (last)
				assert_true(asprintf(&lines[n++], "{\"type\":\"op\",\"rank\":%d,\"op\":"
						     "\"allreduce\",\"start_ns\":%lld,\"comm\":\"w\"}",
						     r, (long long)(arrive[r] + off[r])) > 0);
			else
				assert_true(asprintf(&lines[n++], "{\"type\":\"op\",\"rank\":%d,\"op\":"
						     "\"allreduce\",\"start_ns\":%lld,\"dur_ns\":%llu,"
						     "\"comm\":\"w\",\"bytes\":4096}", r,
						     (long long)(arrive[r] + off[r]),
						     (unsigned long long)(done - arrive[r])) > 0);
		}
		t = done;
	}
	while (n--) {
		fprintf(f, "%s\n", lines[n]);
		free(lines[n]);
	}
	free(lines);
	fclose(f);
	return path;
}

/* Replay path with --json into a string. */
static char *run(char *path, int *err, uint64_t hang_ns)
{
	struct replay_opts o = {
		.jcfg = { .mode = STEPS_AUTO, .window = 8, .hang_timeout_ns = hang_ns,
			  .gpus_per_rank = 1 },
		.tick_ns = 100 * MS, .json = true,
	};
	char *buf = NULL;
	size_t len = 0;

	o.out = open_memstream(&buf, &len);
	assert_non_null(o.out);
	*err = replay__run(&path, 1, &o);
	fclose(o.out);
	return buf;
}

static int count(const char *text, const char *needle)
{
	int n = 0;

	for (; (text = strstr(text, needle)); text++)
		n++;
	return n;
}

static void replay__offset_clocks_shuffled__compute_on_slow_rank(void **state)
{
	static const int64_t off[4] = { 0, 5000 * MS, -3000 * MS, 123456789 };
	char *path = trace(4, 60, 2, off), *out;
	int err;

	out = run(path, &err, 60000 * MS);
	assert_int_equal(err, 0);
	if (!strstr(out, "\"class\":\"compute\",\"rank\":2,\"persistent\":true"))
		fail_msg("no persistent compute verdict on rank 2: %s",
			 strstr(out, "verdict") ? strstr(out, "verdict") : out);
	assert_int_equal(count(out, "\"class\":\"compute\",\"rank\":2,"),
			 count(out, "\"type\":\"verdict\""));
	/* each rank's steps, on its own clock: rank 1's are 5 s ahead of rank 0's */
	assert_true(count(out, "\"type\":\"step\"") >= 4 * 55);
	assert_non_null(strstr(out, "\"rank\":1,\"pid\":0,\"step\":1,\"start_ns\":150"));
	free(out);
	unlink(path);
	free(path);
}

static void replay__never_returns__hang_on_the_computing_rank(void **state)
{
	static const int64_t off[3] = { 0, 0, 0 };
	char *path = trace(3, -30, 1, off), *out;
	int err;

	out = run(path, &err, 2000 * MS);
	assert_int_equal(err, 0);
	assert_non_null(strstr(out, "\"class\":\"hang\",\"rank\":1,"));
	free(out);
	unlink(path);
	free(path);
}

/* An op trace of 2 ranks, 40 steps of asynchronous buckets: compute, two all-reduces that
 * return at once with compute between them, and the waits for them (the second ends at the
 * same instant on both). After the last step's waits: `tail` 0 nothing, 1 the optimizer's
 * compute, 2 the ranks' exits. Returns the step lines of both. */
static int async_steps(int tail)
{
	char path[] = "/tmp/rs-replay-XXXXXX", *out;
	uint64_t t = 10000 * MS, done;
	int fd = mkstemp(path), s, r, err, n;
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	for (s = 0; s < 40; s++) {
		done = t + 9 * MS;
		for (r = 0; r < 2; r++) {
			uint64_t a = t + 2 * MS + r * 100000;

			fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"compute\",\"start_ns\":%llu,"
				"\"dur_ns\":%llu}\n", r, (unsigned long long)t,
				(unsigned long long)(a - t));
			fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"allreduce\",\"start_ns\":%llu,"
				"\"dur_ns\":10000,\"comm\":\"w\",\"bytes\":4096,\"async\":true}\n", r,
				(unsigned long long)a);
			fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"compute\",\"start_ns\":%llu,"
				"\"dur_ns\":%llu}\n", r, (unsigned long long)(a + 10000),
				(unsigned long long)(3 * MS));
			fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"allreduce\",\"start_ns\":%llu,"
				"\"dur_ns\":10000,\"comm\":\"w\",\"bytes\":4096,\"async\":true}\n", r,
				(unsigned long long)(a + 3 * MS + 10000));
			fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"wait\",\"start_ns\":%llu,"
				"\"dur_ns\":%llu,\"comm\":\"w\"}\n", r,
				(unsigned long long)(a + 3 * MS + 20000),
				(unsigned long long)(done - (a + 3 * MS + 20000)));
			if (s < 39 || tail != 1)
				continue;
			fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"compute\",\"start_ns\":%llu,"
				"\"dur_ns\":%llu}\n", r, (unsigned long long)done,
				(unsigned long long)MS);
		}
		t = done;
	}
	for (r = 0; tail == 2 && r < 2; r++)
		fprintf(f, "{\"type\":\"exit\",\"rank\":%d,\"t_ns\":%llu}\n", r,
			(unsigned long long)(t + MS));
	fclose(f);
	out = run(path, &err, 60000 * MS);
	assert_int_equal(err, 0);
	n = count(out, "\"type\":\"step\"");
	free(out);
	unlink(path);
	return n;
}

static void replay__async_step_then_compute__the_last_step_ends(void **state)
{
	int ran = async_steps(1), exited = async_steps(2), cut = async_steps(0);

	/* running after the last waits ended is as sure a sign the step is over as the exit */
	assert_true(exited > 2 * 30);
	assert_int_equal(ran, exited);
	/* nothing after them: the recording may have been cut between two waits of a chain */
	assert_int_equal(cut, exited - 2);
}

/*
 * Four ranks of asynchronous steps: compute, an all-reduce that returns at once, then the
 * wait for it, which ends at the same instant everywhere. Rank 3 is runnable and not running
 * for 3 ms inside each of its waits (an op trace's sched_delay inside the wait): early in it
 * (`late` false), it then blocks again and its wait ends with the others'; at its end, woken
 * and runnable, it ends 3 ms after them. Returns the replay's --json output.
 */
static char *starved_in_waits(bool late)
{
	char path[] = "/tmp/rs-replay-XXXXXX", *out;
	uint64_t st[4], a[4], done, w, e;
	int fd = mkstemp(path), s, r, err;
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	for (r = 0; r < 4; r++)
		st[r] = 10000 * MS;
	for (s = 0; s < 40; s++) {
		for (done = 0, r = 0; r < 4; r++) {
			a[r] = st[r] + 8 * MS + r * 100000;
			done = a[r] > done ? a[r] : done;
		}
		done += 4 * MS;
		for (r = 0; r < 4; r++) {
			w = a[r] + 20000;
			e = late && r == 3 ? done + 3 * MS : done;
			fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"compute\",\"start_ns\":%llu,"
				"\"dur_ns\":%llu}\n", r, (unsigned long long)st[r],
				(unsigned long long)(a[r] - st[r]));
			fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"allreduce\",\"start_ns\":%llu,"
				"\"dur_ns\":10000,\"comm\":\"w\",\"bytes\":4096,\"async\":true}\n", r,
				(unsigned long long)a[r]);
			fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"wait\",\"start_ns\":%llu,"
				"\"dur_ns\":%llu,\"comm\":\"w\"}\n", r, (unsigned long long)w,
				(unsigned long long)(e - w));
			if (r == 3)
				fprintf(f, "{\"type\":\"op\",\"rank\":3,\"op\":\"sched_delay\","
					"\"start_ns\":%llu,\"dur_ns\":%llu}\n",
					(unsigned long long)(late ? e - 3 * MS : w + 100000),
					(unsigned long long)(3 * MS));
			st[r] = e + 50000;
		}
	}
	fclose(f);
	out = run(path, &err, 60000 * MS);
	assert_int_equal(err, 0);
	unlink(path);
	return out;
}

/* Either way the sched_delay is the wait's own time, not an interval that cuts it: no input
 * wait, and rank 3's steps end with its waits. Early, the all-reduce went on without it and
 * it held nobody; at the end, its next step starts late: CPU contention on it. */
static void replay__starved_inside_its_waits__cpu_contention_only_when_it_ends_them(void **state)
{
	char *out;
	int late, steps;

	for (late = 0; late < 2; late++) {
		out = starved_in_waits(late);
		steps = count(out, "\"type\":\"step\"");
		assert_true(steps >= 4 * 35);
		if (count(out, "\"input_wait\":0,") != steps)
			fail_msg("a wait told as input: %s", strstr(out, "\"type\":\"step\""));
		assert_int_equal(count(out, "\"rank\":3,\"pid\":0,"), steps / 4);
		assert_true(count(out, "\"type\":\"verdict\"") > 0);
		if (late ? count(out, "\"class\":\"cpu_contention\",\"rank\":3,\"persistent\":true")
			   == 0 : count(out, "\"class\":\"none\"") != count(out, "\"type\":\"verdict\""))
			fail_msg("starved %s in its waits: %s", late ? "at the end" : "early",
				 strstr(out, "\"type\":\"verdict\""));
		free(out);
	}
}

/*
 * Tensor + data parallel, 4 ranks: TP groups {0,1} ("tp0") and {2,3} ("tp1") each run 29
 * all-reduces a step, 40 ms apart, then DP groups {0,2} and {1,3} all-reduce the gradients.
 * Rank 3 waits 600 ms for its input at the start of each step, so its whole TP group runs
 * half its step behind rank 0's and catches up only at the DP all-reduce. Its steps still end
 * at that all-reduce, with rank 0's: not 15 TP all-reduces earlier, where the group's returns
 * are nearest in time to rank 0's.
 */
static void replay__tp_group_half_a_step_behind__steps_end_together(void **state)
{
	char path[] = "/tmp/rs-replay-XXXXXX", *out, *p;
	uint64_t t = 10000 * MS, cur[4], done, lo[4], hi[4];
	int fd = mkstemp(path), s, l, r, g, err, n[4] = {};
	int64_t start;
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fprintf(f, "{\"type\":\"meta\",\"world_size\":4,\"job\":\"tpdp\"}\n");
	for (s = 0; s < 12; s++) {
		for (r = 0; r < 4; r++) {
			cur[r] = t;
			if (r == 3) {
				fprintf(f, "{\"type\":\"op\",\"rank\":3,\"op\":\"input_wait\","
					"\"start_ns\":%llu,\"dur_ns\":%llu}\n",
					(unsigned long long)t, (unsigned long long)(600 * MS));
				cur[r] += 600 * MS;
			}
		}
		for (l = 0; l <= 29; l++) {
			for (g = 0; g < 2; g++) {
				int a = l < 29 ? 2 * g : g, b = l < 29 ? 2 * g + 1 : g + 2;
				int pair[2] = { a, b }, i;

				done = (cur[a] > cur[b] ? cur[a] : cur[b]) + 40 * MS;
				for (i = 0; i < 2; i++) {
					r = pair[i];
					fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"compute\","
						"\"start_ns\":%llu,\"dur_ns\":%llu}\n", r,
						(unsigned long long)cur[r], (unsigned long long)(30 * MS));
					fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"allreduce\","
						"\"start_ns\":%llu,\"dur_ns\":%llu,\"comm\":\"%s%d\","
						"\"bytes\":%d}\n", r,
						(unsigned long long)(cur[r] + 30 * MS),
						(unsigned long long)(done - cur[r] - 30 * MS),
						l < 29 ? "tp" : "dp", g, l < 29 ? 4096 : 65536);
					cur[r] = done;
				}
			}
		}
		for (r = 0; r < 4; r++)
			fprintf(f, "{\"type\":\"op\",\"rank\":%d,\"op\":\"compute\",\"start_ns\":%llu,"
				"\"dur_ns\":%llu}\n", r, (unsigned long long)cur[r],
				(unsigned long long)(20 * MS));
		t = cur[0] + 20 * MS;
	}
	fclose(f);
	out = run(path, &err, 60000 * MS);
	assert_int_equal(err, 0);
	/* each rank's steps: their count and the first and last start */
	for (r = 0; r < 4; r++) {
		lo[r] = UINT64_MAX;
		hi[r] = 0;
	}
	for (p = out; (p = strstr(p, "\"type\":\"step\"")); p++) {
		if (sscanf(strstr(p, "\"rank\":"), "\"rank\":%d", &r) != 1 || r < 0 || r > 3)
			continue;
		assert_int_equal(sscanf(strstr(p, "\"start_ns\":"), "\"start_ns\":%lld",
					(long long *)&start), 1);
		n[r]++;
		lo[r] = (uint64_t)start < lo[r] ? (uint64_t)start : lo[r];
		hi[r] = (uint64_t)start > hi[r] ? (uint64_t)start : hi[r];
	}
	for (r = 1; r < 4; r++) {
		if (n[r] != n[0] || lo[r] != lo[0] || hi[r] != hi[0])
			fail_msg("rank %d: %d steps from %llu to %llu; rank 0: %d from %llu to %llu", r,
				 n[r], (unsigned long long)lo[r], (unsigned long long)hi[r], n[0],
				 (unsigned long long)lo[0], (unsigned long long)hi[0]);
	}
	assert_true(n[0] >= 10);
	free(out);
	unlink(path);
}

static void replay__bad_op__einval_nothing_run(void **state)
{
	static const char text[] = "{\"type\":\"op\",\"rank\":0,\"op\":\"allreduce\","
				   "\"start_ns\":1,\"dur_ns\":5}\n"
				   "{\"type\":\"op\",\"rank\":0,\"op\":\"nope\",\"start_ns\":1}\n";
	char path[] = "/tmp/rs-replay-XXXXXX", *out;
	int fd = mkstemp(path), err;

	assert_true(fd >= 0);
	assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	out = run(path, &err, 60000 * MS);
	assert_int_equal(err, -EINVAL);
	assert_int_equal(count(out ? out : "", "\"type\""), 0);
	free(out);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rline__members__typed_reads),
		cmocka_unit_test(rline__broken__einval),
		cmocka_unit_test(replay__offset_clocks_shuffled__compute_on_slow_rank),
		cmocka_unit_test(replay__never_returns__hang_on_the_computing_rank),
		cmocka_unit_test(replay__async_step_then_compute__the_last_step_ends),
		cmocka_unit_test(replay__starved_inside_its_waits__cpu_contention_only_when_it_ends_them),
		cmocka_unit_test(replay__tp_group_half_a_step_behind__steps_end_together),
		cmocka_unit_test(replay__bad_op__einval_nothing_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
