// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cmocka tests for user/util/prom.c: the exposition text, byte for byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "prom.h"

static void family__help_escaped__two_lines(void **state)
{
	struct prom p;

	prom__init(&p);
	prom__family(&p, "rankscope_x_total", "counter", "a \\ back\nslash");
	assert_string_equal(p.buf, "# HELP rankscope_x_total a \\\\ back\\nslash\n"
				   "# TYPE rankscope_x_total counter\n");
	prom__free(&p);
}

static void sample__labels_escaped__quoted(void **state)
{
	const char *const labels[] = { "job_id", "a\"b\\c\nd", "rank", "3", NULL };
	struct prom p;

	prom__init(&p);
	prom__sample(&p, "m", labels, 1.5);
	prom__sample(&p, "m", NULL, 42);
	assert_string_equal(p.buf, "m{job_id=\"a\\\"b\\\\c\\nd\",rank=\"3\"} 1.5\nm 42\n");
	prom__free(&p);
}

/* A job id or a name from a container that is not UTF-8: each byte that starts no sequence is
 * U+FFFD, valid sequences stay, so a scraper does not refuse the whole exposition. */
static void sample__labels_not_utf8__replacement_char(void **state)
{
	const char *const labels[] = { "job_id", "a\xff\xc3\xa9\xe2\x82\xed\xa0\x80z", NULL };
	struct prom p;

	prom__init(&p);
	prom__family(&p, "m", "gauge", "h\xc3");
	prom__sample(&p, "m", labels, 1);
	assert_string_equal(p.buf, "# HELP m h\xef\xbf\xbd\n# TYPE m gauge\n"
				   "m{job_id=\"a\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd"
				   "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\x7a\"} 1\n");
	prom__free(&p);
}

static void value__special_and_shortest__spelled(void **state)
{
	char b[40];

	assert_string_equal(prom__value(NAN, b, sizeof(b)), "NaN");
	assert_string_equal(prom__value(INFINITY, b, sizeof(b)), "+Inf");
	assert_string_equal(prom__value(-INFINITY, b, sizeof(b)), "-Inf");
	assert_string_equal(prom__value(0, b, sizeof(b)), "0");
	assert_string_equal(prom__value(-7, b, sizeof(b)), "-7");
	assert_string_equal(prom__value(0.1, b, sizeof(b)), "0.1");
	assert_string_equal(prom__value(1e-9, b, sizeof(b)), "1e-09");
	assert_string_equal(prom__value(18446744073709551615.0, b, sizeof(b)),
			    "1.8446744073709552e+19");
	assert_true(strtod(prom__value(1.0 / 3, b, sizeof(b)), NULL) == 1.0 / 3);
}

static void histogram__cumulative_and_inf__exact(void **state)
{
	const char *const labels[] = { "rank", "0", NULL };
	const uint64_t counts[] = { 1, 0, 2 };
	const double bounds[] = { 0.001, 0.01, 0.1 };
	struct prom p;

	prom__init(&p);
	prom__histogram(&p, "h", labels, counts, bounds, 3, 0.25, 4);
	assert_string_equal(p.buf,
			    "h_bucket{rank=\"0\",le=\"0.001\"} 1\n"
			    "h_bucket{rank=\"0\",le=\"0.01\"} 1\n"
			    "h_bucket{rank=\"0\",le=\"0.1\"} 3\n"
			    "h_bucket{rank=\"0\",le=\"+Inf\"} 4\n"
			    "h_sum{rank=\"0\"} 0.25\n"
			    "h_count{rank=\"0\"} 4\n");
	prom__free(&p);
}

static void histogram__count_below_buckets__inf_not_below(void **state)
{
	const uint64_t counts[] = { 5 };
	const double bounds[] = { 1 };
	struct prom p;

	/* a kernel histogram read mid-update: count lags the buckets */
	prom__init(&p);
	prom__histogram(&p, "h", NULL, counts, bounds, 1, 2, 4);
	assert_string_equal(p.buf, "h_bucket{le=\"1\"} 5\nh_bucket{le=\"+Inf\"} 5\nh_sum 2\n"
				   "h_count 5\n");
	prom__free(&p);
}

static void log2_hist__ns_buckets__seconds_bounds(void **state)
{
	struct rs_hist h = {};
	struct prom p;

	h.slots[0] = 1;		/* [1, 2) ns: folded into the first bucket */
	h.slots[10] = 2;	/* [1024, 2048) ns */
	h.slots[RS_HIST_SLOTS - 1] = 4;	/* the overflow slot: +Inf only */
	h.count = 7;
	h.sum_ns = 3000;
	prom__init(&p);
	prom__log2_hist(&p, "x_seconds", NULL, &h);
	assert_ptr_equal(strstr(p.buf, "x_seconds_bucket{"),
			 strstr(p.buf, "x_seconds_bucket{le=\"1.024e-06\"} 1\n"));
	assert_null(strstr(p.buf, "2e-09"));
	assert_non_null(strstr(p.buf, "x_seconds_bucket{le=\"2.048e-06\"} 3\n"));
	assert_non_null(strstr(p.buf, "x_seconds_bucket{le=\"4.096e-06\"} 3\n"));
	/* every series has the same le set, up to 2^39 ns, whatever it holds */
	assert_non_null(strstr(p.buf, "x_seconds_bucket{le=\"549.755813888\"} 3\n"
				      "x_seconds_bucket{le=\"+Inf\"} 7\nx_seconds_sum 3e-06\n"
				      "x_seconds_count 7\n"));
	assert_null(strstr(p.buf, "1099.5"));
	prom__free(&p);
}

static void log2_hist__empty__same_le_set(void **state)
{
	struct rs_hist h = {};
	struct prom p;
	const char *c;
	int n = 0;

	prom__init(&p);
	prom__log2_hist(&p, "x_seconds", NULL, &h);
	for (c = p.buf; (c = strstr(c, "_bucket{")); c++)
		n++;
	assert_int_equal(n, RS_HIST_SLOTS - 1 - 9 + 1);	/* 30 finite buckets and +Inf */
	assert_non_null(strstr(p.buf, "x_seconds_bucket{le=\"+Inf\"} 0\nx_seconds_sum 0\n"));
	prom__free(&p);
}

static void reset__keeps_buffer__empty_text(void **state)
{
	struct prom p;

	prom__init(&p);
	prom__sample(&p, "m", NULL, 1);
	prom__reset(&p);
	assert_int_equal(p.len, 0);
	assert_string_equal(p.buf, "");
	prom__free(&p);
}

static void cap__samples_and_histograms__left_out_and_counted(void **state)
{
	const uint64_t counts[] = { 1, 2 };
	const double bounds[] = { 0.1, 1 };
	struct prom p;

	prom__init(&p);
	p.max_series = 6;
	prom__sample(&p, "a", NULL, 1);
	prom__sample(&p, "b", NULL, 2);
	/* 2 buckets + Inf + sum + count = 5 lines: does not fit in the 4 left, left out whole */
	prom__histogram(&p, "h", NULL, counts, bounds, 2, 1.5, 3);
	prom__sample(&p, "c", NULL, 3);
	prom__sample(&p, "d", NULL, 4);
	prom__sample(&p, "e", NULL, 5);
	prom__sample(&p, "f", NULL, 6);
	prom__sample(&p, "g", NULL, 7);		/* the 7th line: over */
	assert_string_equal(p.buf, "a 1\nb 2\nc 3\nd 4\ne 5\nf 6\n");
	assert_int_equal(p.series, 6);
	assert_int_equal(p.over, 6);
	/* no cap: everything */
	prom__reset(&p);
	p.max_series = 0;
	prom__histogram(&p, "h", NULL, counts, bounds, 2, 1.5, 3);
	assert_int_equal(p.over, 0);
	assert_non_null(strstr(p.buf, "h_count 3\n"));
	prom__free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(family__help_escaped__two_lines),
		cmocka_unit_test(sample__labels_escaped__quoted),
		cmocka_unit_test(sample__labels_not_utf8__replacement_char),
		cmocka_unit_test(value__special_and_shortest__spelled),
		cmocka_unit_test(histogram__cumulative_and_inf__exact),
		cmocka_unit_test(histogram__count_below_buckets__inf_not_below),
		cmocka_unit_test(log2_hist__ns_buckets__seconds_bounds),
		cmocka_unit_test(log2_hist__empty__same_le_set),
		cmocka_unit_test(reset__keeps_buffer__empty_text),
		cmocka_unit_test(cap__samples_and_histograms__left_out_and_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
