// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* stats: collective accumulation and interval rows over two cumulative slot snapshots. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "hist.h"
#include "stats.h"

#define SEC 1000000000ULL

struct fx {
	struct rank_state rs;
	struct slot_snapshot s1, s2;
	struct rank_row row;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->rs.pid = 4321;
	ranks__init(&f->rs.info);
	f->rs.info.rank = 3;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

static void add(struct rs_hist *h, unsigned int bucket, uint64_t n, uint64_t each_ns)
{
	h->slots[bucket] += n;
	h->count += n;
	h->sum_ns += n * each_ns;
}

/* s1 at t=1 s, s2 at t=3 s: a 2-second interval. */
static void fill(struct fx *f)
{
	struct slot_snapshot *a = &f->s1, *b = &f->s2;
	struct rs_io_stat *rd, *wr;

	a->sched.main_on_ns = 1000;
	a->sched.main_off_ns = 500;
	a->sched.switches = 10;
	b->sched = a->sched;
	b->sched.main_on_ns += 3000;
	b->sched.main_off_ns += 1000;
	b->sched.switches += 4;

	a->net.retransmits = 5;
	a->net.srtt_sum_us = 1000;
	a->net.srtt_samples = 10;
	a->net.srtt_last_us = 90;
	b->net = a->net;
	b->net.retransmits = 12;
	b->net.srtt_sum_us = 1600;
	b->net.srtt_samples = 13;
	b->net.srtt_last_us = 250;

	/* socket reads: 5 old samples, then 99 in bucket 10 and 1 in bucket 20 */
	rd = &a->io[RS_FD_SOCK][0];
	add(&rd->lat, 4, 5, 20);
	rd->bytes = 100;
	b->io[RS_FD_SOCK][0] = *rd;
	rd = &b->io[RS_FD_SOCK][0];
	add(&rd->lat, 10, 99, 1500);
	add(&rd->lat, 20, 1, 1500000);
	rd->bytes += 65536;

	/* file writes: only in the interval */
	wr = &b->io[RS_FD_REG][1];
	add(&wr->lat, 5, 10, 40);
	wr->bytes = 4096;

	add(&a->runq, 8, 3, 300);
	b->runq = a->runq;
	add(&b->runq, 12, 100, 5000);
}

static void on_coll__calls__accumulated(void **state)
{
	struct fx *f = *state;

	stats__on_coll(&f->rs, RS_OP_ALLREDUCE, 1000, 1100);
	stats__on_coll(&f->rs, RS_OP_ALLREDUCE, 2000, 2200);
	/* a clock going backwards counts the call, not the time */
	stats__on_coll(&f->rs, RS_OP_ALLREDUCE, 3000, 2999);
	stats__on_coll(&f->rs, RS_OP_BARRIER, 5, 10);
	assert_true(f->rs.ops[RS_OP_ALLREDUCE].calls == 3);
	assert_true(f->rs.ops[RS_OP_ALLREDUCE].inside_ns == 300);
	assert_true(f->rs.ops[RS_OP_BARRIER].calls == 1);
	assert_true(f->rs.ops[RS_OP_BARRIER].inside_ns == 5);
	assert_true(f->rs.ops[RS_OP_ALLGATHER].calls == 0);
}

static void on_coll__op_out_of_range__ignored(void **state)
{
	struct fx *f = *state;
	struct op_acc before[RS_OP_MAX];

	memcpy(before, f->rs.ops, sizeof(before));
	stats__on_coll(&f->rs, RS_OP_MAX, 0, 100);
	stats__on_coll(&f->rs, ~0u, 0, 100);
	assert_memory_equal(before, f->rs.ops, sizeof(before));
}

static void row__first_call__zero_interval_and_baseline(void **state)
{
	struct fx *f = *state;

	fill(f);
	stats__on_coll(&f->rs, RS_OP_ALLREDUCE, 0, 10);
	stats__row(&f->rs, &f->s1, 1 * SEC, &f->row);
	assert_int_equal(f->row.rank, 3);
	assert_int_equal(f->row.pid, 4321);
	/* no previous time: no rate */
	assert_true(f->row.dt_s == 0);
	assert_true(f->row.ops[RS_OP_ALLREDUCE].per_s == 0);
	assert_true(f->row.ops[RS_OP_ALLREDUCE].calls == 1);
	assert_true(f->row.ops[RS_OP_ALLREDUCE].total == 1);
	/* baseline is s1 now */
	assert_memory_equal(&f->rs.prev, &f->s1, sizeof(f->s1));
	assert_true(f->rs.prev_t_ns == 1 * SEC);
	assert_true(f->rs.prev_ops[RS_OP_ALLREDUCE].calls == 1);
}

static void row__two_snapshots__interval_math(void **state)
{
	struct fx *f = *state;
	struct rank_row *r = &f->row;
	struct rs_hist d;
	int i;

	fill(f);
	for (i = 0; i < 3; i++)
		stats__on_coll(&f->rs, RS_OP_ALLREDUCE, 0, 100);
	stats__row(&f->rs, &f->s1, 1 * SEC, r);
	for (i = 0; i < 4; i++)
		stats__on_coll(&f->rs, RS_OP_ALLREDUCE, 1000, 1250);
	stats__on_coll(&f->rs, RS_OP_BROADCAST, 0, 1000);
	stats__row(&f->rs, &f->s2, 3 * SEC, r);

	assert_true(r->dt_s == 2.0);
	/* collectives: interval calls, total since attach, rate over dt, mean time inside */
	assert_true(r->ops[RS_OP_ALLREDUCE].calls == 4);
	assert_true(r->ops[RS_OP_ALLREDUCE].total == 7);
	assert_true(r->ops[RS_OP_ALLREDUCE].per_s == 2.0);
	assert_true(r->ops[RS_OP_ALLREDUCE].mean_inside_ns == 250.0);
	assert_true(r->ops[RS_OP_BROADCAST].calls == 1);
	assert_true(r->ops[RS_OP_BROADCAST].per_s == 0.5);
	assert_true(r->ops[RS_OP_BROADCAST].mean_inside_ns == 1000.0);
	assert_true(r->ops[RS_OP_BARRIER].calls == 0);
	assert_true(r->ops[RS_OP_BARRIER].mean_inside_ns == 0);

	/* main thread: 3000 ns on, 1000 ns off in the interval */
	assert_true(fabs(r->offcpu_share - 0.25) < 1e-12);

	/* retransmits: delta and cumulative; srtt: mean of the interval's samples */
	assert_true(r->retrans == 7);
	assert_true(r->retrans_total == 12);
	assert_true(fabs(r->srtt_us - 200.0) < 1e-9);

	/* socket reads: only the interval's 100 samples */
	assert_true(r->rd[RS_FD_SOCK].calls == 100);
	assert_true(r->rd[RS_FD_SOCK].ns == 99 * 1500 + 1500000);
	assert_true(r->rd[RS_FD_SOCK].bytes == 65536);
	assert_in_range(r->rd[RS_FD_SOCK].p50_ns, 1024, 2047);
	assert_in_range(r->rd[RS_FD_SOCK].p99_ns, 1024, 2048);
	/* file writes */
	assert_true(r->wr[RS_FD_REG].calls == 10);
	assert_true(r->wr[RS_FD_REG].ns == 400);
	assert_true(r->wr[RS_FD_REG].bytes == 4096);
	hist__diff(&f->s2.io[RS_FD_REG][1].lat, &f->s1.io[RS_FD_REG][1].lat, &d);
	assert_true(r->wr[RS_FD_REG].p50_ns == hist__quantile(&d, 0.5));
	assert_true(r->wr[RS_FD_REG].p99_ns == hist__quantile(&d, 0.99));
	assert_in_range(r->wr[RS_FD_REG].p50_ns, 32, 63);
	/* nothing read from files, nothing written to sockets: read and write kept apart */
	assert_true(r->rd[RS_FD_REG].calls == 0 && r->rd[RS_FD_REG].bytes == 0);
	assert_true(r->wr[RS_FD_SOCK].calls == 0 && r->wr[RS_FD_SOCK].bytes == 0);
	assert_true(r->rd[RS_FD_REG].p99_ns == 0);

	/* run queue: the interval's 100 samples all in bucket 12 */
	assert_in_range(r->runq_p99_ns, 4096, 8192);
}

static void row__no_switches__offcpu_nan(void **state)
{
	struct fx *f = *state;

	fill(f);
	stats__row(&f->rs, &f->s1, 1 * SEC, &f->row);
	stats__row(&f->rs, &f->s1, 2 * SEC, &f->row);
	assert_true(isnan(f->row.offcpu_share));
	/* an all-off interval is 1, not NaN */
	f->s2 = f->s1;
	f->s2.sched.main_off_ns += 777;
	stats__row(&f->rs, &f->s2, 3 * SEC, &f->row);
	assert_true(f->row.offcpu_share == 1.0);
}

static void row__no_srtt_samples__last_known(void **state)
{
	struct fx *f = *state;

	fill(f);
	stats__row(&f->rs, &f->s2, 1 * SEC, &f->row);
	stats__row(&f->rs, &f->s2, 2 * SEC, &f->row);
	assert_true(f->row.srtt_us == 250.0);
	assert_true(f->row.retrans == 0);
	assert_true(f->row.retrans_total == 12);
}

static void row__baseline__advances(void **state)
{
	struct fx *f = *state;

	fill(f);
	stats__row(&f->rs, &f->s1, 1 * SEC, &f->row);
	stats__on_coll(&f->rs, RS_OP_ALLREDUCE, 0, 10);
	stats__row(&f->rs, &f->s2, 3 * SEC, &f->row);
	assert_true(f->row.ops[RS_OP_ALLREDUCE].calls == 1);
	assert_memory_equal(&f->rs.prev, &f->s2, sizeof(f->s2));
	assert_true(f->rs.prev_t_ns == 3 * SEC);
	/* the same snapshot again, one second later: an empty interval */
	stats__row(&f->rs, &f->s2, 4 * SEC, &f->row);
	assert_true(f->row.dt_s == 1.0);
	assert_true(f->row.ops[RS_OP_ALLREDUCE].calls == 0);
	assert_true(f->row.ops[RS_OP_ALLREDUCE].total == 1);
	assert_true(f->row.ops[RS_OP_ALLREDUCE].per_s == 0);
	assert_true(f->row.rd[RS_FD_SOCK].calls == 0);
	assert_true(f->row.rd[RS_FD_SOCK].p99_ns == 0);
	assert_true(f->row.retrans == 0);
	assert_true(isnan(f->row.offcpu_share));
}

static void row__counters_reset__no_wraparound(void **state)
{
	struct fx *f = *state;

	fill(f);
	stats__row(&f->rs, &f->s2, 1 * SEC, &f->row);
	/* maps re-created: everything reads lower than the baseline */
	stats__row(&f->rs, &f->s1, 2 * SEC, &f->row);
	assert_true(f->row.retrans == 0);
	assert_true(f->row.rd[RS_FD_SOCK].calls == 0);
	assert_true(f->row.rd[RS_FD_SOCK].bytes == 0);
	assert_true(f->row.wr[RS_FD_REG].bytes == 0);
	assert_true(isnan(f->row.offcpu_share));
	assert_true(f->row.srtt_us == 90.0);
}

static void row__time_not_advancing__zero_rate(void **state)
{
	struct fx *f = *state;

	fill(f);
	stats__row(&f->rs, &f->s1, 5 * SEC, &f->row);
	stats__on_coll(&f->rs, RS_OP_ALLREDUCE, 0, 10);
	stats__row(&f->rs, &f->s2, 5 * SEC, &f->row);
	assert_true(f->row.dt_s == 0);
	assert_true(f->row.ops[RS_OP_ALLREDUCE].calls == 1);
	assert_true(f->row.ops[RS_OP_ALLREDUCE].per_s == 0);
	assert_true(isfinite(f->row.ops[RS_OP_ALLREDUCE].per_s));
}

static void row__exited__carried(void **state)
{
	struct fx *f = *state;

	f->rs.exited = true;
	stats__row(&f->rs, &f->s1, 1 * SEC, &f->row);
	assert_true(f->row.exited);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(on_coll__calls__accumulated),
		T(on_coll__op_out_of_range__ignored),
		T(row__first_call__zero_interval_and_baseline),
		T(row__two_snapshots__interval_math),
		T(row__no_switches__offcpu_nan),
		T(row__no_srtt_samples__last_known),
		T(row__baseline__advances),
		T(row__counters_reset__no_wraparound),
		T(row__time_not_advancing__zero_rate),
		T(row__exited__carried),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
