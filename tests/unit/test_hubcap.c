// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * hubcap: two nodes' captures, as daemons write them, merged. Node B's clock runs days and
 * 1.234567 ms off node A's; the hub's step-based offset is 3 ms wrong (its stated error
 * covers it); node B's ranks attached later, so they number their collectives 1000 higher.
 * The merge must join each collective on all four ranks, refine B's offset from the ends to
 * within the error it states of the truth, and leave out a node's garbage lines.
 */
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
#include "hubcap.h"
#include "jsonp.h"

#define US	1000LL
#define MS	1000000LL
#define STEPS	60
#define COLLS	3		/* all-reduces a step */
#define TRUE_OFF (2 * 86400 * 1000 * MS + 1234567)	/* node B's clock - node A's */
#define SEQ_LATE 1000

static uint64_t seed = 7;

static int64_t rnd(int64_t n)
{
	seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
	return (int64_t)((seed >> 33) % (uint64_t)n);
}

static size_t put(char *b, size_t at, size_t n, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(b + at, n - at, fmt, ap);
	va_end(ap);
	assert_true(w > 0 && (size_t)w < n - at);
	return at + w;
}

static size_t ts(char *b, size_t at, size_t n, int64_t ns)
{
	return put(b, at, n, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
}

/* Both nodes' traces: ranks 0, 1 on A (pids 100, 101), 2, 3 on B (pids 200, 201). */
static void make(char *a, char *b, size_t n)
{
	size_t la, lb;
	int64_t t = 50000 * MS;
	int s, c, r;

	la = put(a, 0, n, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"rankscope\"},\n"
		 "\"traceEvents\":[\n");
	lb = put(b, 0, n, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"rankscope\"},\n"
		 "\"traceEvents\":[\n");
	for (r = 0; r < 4; r++) {
		char *d = r < 2 ? a : b;
		size_t *l = r < 2 ? &la : &lb;

		*l = put(d, *l, n, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
			 "\"args\":{\"name\":\"rank %d (pid %d)\"}},\n", 100 * (1 + r / 2) + r % 2, r,
			 100 * (1 + r / 2) + r % 2);
	}
	for (s = 0; s < STEPS; s++) {
		t += 4 * MS + rnd(3 * MS);	/* compute, jittering */
		for (c = 0; c < COLLS; c++) {
			int64_t end = t + 300 * US + rnd(400 * US);	/* ends at once, +- 10 us */

			for (r = 0; r < 4; r++) {
				char *d = r < 2 ? a : b;
				size_t *l = r < 2 ? &la : &lb;
				int64_t st = t - rnd(200 * US), en = end + rnd(10 * US);
				int64_t off = r < 2 ? 0 : TRUE_OFF;
				int pid = 100 * (1 + r / 2) + r % 2;

				*l = put(d, *l, n, "{\"ph\":\"X\",\"name\":\"allreduce\",\"cat\":"
					 "\"collective\",\"pid\":%d,\"tid\":%d,\"ts\":", pid, pid);
				*l = ts(d, *l, n, st + off);
				*l = put(d, *l, n, ",\"dur\":");
				*l = ts(d, *l, n, en - st);
				*l = put(d, *l, n, ",\"args\":{\"lib\":\"mpi\",\"bytes\":4096,\"comm\":"
					 "\"mpi:world\",\"seq\":%d}},\n",
					 s * COLLS + c + (r < 2 ? 0 : SEQ_LATE));
			}
			t = end + 100 * US;
		}
	}
	/* a node's own flow (made again by the merge), and what a hostile node may send */
	la = put(a, la, n, "{\"ph\":\"s\",\"name\":\"x\",\"cat\":\"collective\",\"pid\":100,"
		 "\"tid\":100,\"id\":1,\"ts\":1.000},\n");
	lb = put(b, lb, n, "not json at all,\n{\"ph\":\"X\",\"pid\":99999999,\"ts\":1},\n"
		 "{\"ph\":\"X\",\"pid\":200,\"ts\":1,\"name\":\"\\u0000\\\"</script>\"},\n");
	put(a, la - 2, n, "\n]}\n");
	put(b, lb - 2, n, "\n]}\n");
}

static void two_nodes__days_apart_late_attach__joined_and_offset_refined(void **state)
{
	static char a[1 << 20], b[1 << 20];
	struct hubcap_node nodes[2] = {
		{ .name = "10.0.0.1:9464", .capture = "c-a", .lined_up = true },
		{ .name = "10.0.0.2:9464", .capture = "c-b", .lined_up = true,
		  .offset_ns = TRUE_OFF + 3 * MS, .err_ns = 8 * MS },
	};
	const struct jsonp_val *root, *ev, *e, *od, *nd;
	struct hubcap_stats st;
	struct jsonp d = {};
	FILE *f = tmpfile();
	char *out;
	long len;
	int64_t off, err;
	int flows_b = 0, on = 0;

	(void)state;
	assert_non_null(f);
	make(a, b, sizeof(a));
	nodes[0].text = a;
	nodes[0].len = strlen(a);
	nodes[1].text = b;
	nodes[1].len = strlen(b);
	assert_int_equal(hubcap__merge(nodes, 2, "hub-1", fileno(f), false, &st), 0);
	assert_int_equal(st.flows, STEPS * COLLS);
	assert_int_equal(st.flows_across, STEPS * COLLS);
	assert_int_equal(st.bad_lines, 2);	/* not JSON; a pid out of range */
	assert_true(st.residual_ns < 100 * US);
	len = lseek(fileno(f), 0, SEEK_END);
	out = malloc(len + 1);
	assert_non_null(out);
	assert_int_equal(pread(fileno(f), out, len, 0), len);
	fclose(f);
	assert_int_equal(jsonp__parse(&d, out, len, 1 << 20), 0);
	root = jsonp__root(&d);
	ev = jsonp__get(&d, root, "traceEvents");
	od = jsonp__get(&d, root, "otherData");
	assert_non_null(ev);
	assert_non_null(od);
	nd = jsonp__next(&d, jsonp__first(&d, jsonp__get(&d, od, "nodes")));
	assert_non_null(nd);
	assert_true(jsonp__int64(&d, nd, "clock_offset_ns", &off));
	assert_true(jsonp__int64(&d, nd, "clock_error_ns", &err));
	/* refined from 3 ms off to within the error it states, and that error is small */
	assert_true(llabs(off - TRUE_OFF) <= err);
	assert_true(err < 100 * US);
	for (e = jsonp__first(&d, ev); e; e = jsonp__next(&d, e)) {
		const char *ph = jsonp__str(&d, e, "ph"), *name;
		int64_t pid;

		assert_true(jsonp__int64(&d, e, "pid", &pid));
		if ((!strcmp(ph, "s") || !strcmp(ph, "f")) && pid >> HUBCAP_PID_BITS == 2)
			flows_b++;
		name = jsonp__str(&d, jsonp__get(&d, e, "args"), "name");
		if (!strcmp(ph, "M") && name && strstr(name, " on 10.0.0."))
			on++;
	}
	/* node B's two ranks end (or start) each collective's flow; every process named with
	 * its node */
	assert_int_equal(flows_b, STEPS * COLLS * 2);
	assert_int_equal(on, 4);
	jsonp__free(&d);
	free(out);
}

/* A node that sent nothing, and one not lined up: listed, with why. */
static void missing_and_unaligned__listed_with_why(void **state)
{
	static char a[1 << 20], b[1 << 20];
	struct hubcap_node nodes[3] = {
		{ .name = "a", .capture = "c-a", .lined_up = true },
		{ .name = "b", .capture = "c-b" },
		{ .name = "c", .why = "connect: Connection refused" },
	};
	struct hubcap_stats st;
	FILE *f = tmpfile();
	char out[1 << 16];
	ssize_t len;

	(void)state;
	make(a, b, sizeof(a));
	nodes[0].text = a;
	nodes[0].len = strlen(a);
	nodes[1].text = b;
	nodes[1].len = strlen(b);
	assert_int_equal(hubcap__merge(nodes, 3, "hub-2", fileno(f), false, &st), 0);
	len = pread(fileno(f), out, sizeof(out) - 1, lseek(fileno(f), 0, SEEK_END) > 60000 ?
		    lseek(fileno(f), 0, SEEK_END) - 60000 : 0);
	assert_true(len > 0);
	out[len] = 0;
	fclose(f);
	assert_non_null(strstr(out, "\"why\":\"connect: Connection refused\""));
	assert_non_null(strstr(out, "not lined up with the reference node"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_nodes__days_apart_late_attach__joined_and_offset_refined),
		cmocka_unit_test(missing_and_unaligned__listed_with_why),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
