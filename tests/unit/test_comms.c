// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* comms: handle -> name/size table, NCCL unique-id naming, bound and eviction, OpenMPI scan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "comms.h"
#include "elfsym.h"

#define LIBMPI "/usr/lib/x86_64-linux-gnu/libmpi.so.40"

static int setup(void **state)
{
	struct comms *c = malloc(sizeof(*c));

	if (!c)
		return -1;
	comms__init(c);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	comms__free(*state);
	free(*state);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

static const char *name_of(const struct comms *c, pid_t pid, unsigned int lib, uint64_t h)
{
	static char buf[COMM_NAME_MAX + 32];

	return comms__name(c, pid, lib, h, buf, sizeof(buf));
}

static void set__comm__named(void **state)
{
	struct comms *c = *state;

	comms__set(c, 10, 0x1000, "MPI_COMM_WORLD", 0);
	assert_string_equal(name_of(c, 10, RS_LIB_MPI, 0x1000), "MPI_COMM_WORLD");
	assert_int_equal(c->n, 1);
}

static void name__unregistered__lib_and_hex_handle(void **state)
{
	struct comms *c = *state;

	comms__set(c, 10, 0x1000, "MPI_COMM_WORLD", 0);
	/* handles are per process: the same value in another pid is another object */
	assert_string_equal(name_of(c, 11, RS_LIB_MPI, 0x1000), "mpi:0x1000");
	assert_string_equal(name_of(c, 10, RS_LIB_NCCL, 0x7f00deadbeef), "nccl:0x7f00deadbeef");
	assert_string_equal(name_of(c, 10, RS_LIB_GLOO, 0), "gloo");
	assert_string_equal(name_of(c, 10, RS_LIB_MAX, 0x10), "unknown:0x10");
}

static void name__small_buffer__truncated_terminated(void **state)
{
	struct comms *c = *state;
	char buf[8];

	comms__set(c, 1, 2, "a_rather_long_name", 0);
	assert_ptr_equal(comms__name(c, 1, RS_LIB_MPI, 2, buf, sizeof(buf)), buf);
	assert_string_equal(buf, "a_rathe");
}

static void set__same_handle__replaced(void **state)
{
	struct comms *c = *state;

	comms__set(c, 10, 0x1000, "old", 0);
	comms__set(c, 10, 0x1000, "new", 0);
	assert_string_equal(name_of(c, 10, RS_LIB_MPI, 0x1000), "new");
	assert_int_equal(c->n, 1);
}

static void set__long_name__truncated(void **state)
{
	struct comms *c = *state;
	char longname[COMM_NAME_MAX * 2];

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	comms__set(c, 1, 1, longname, 0);
	assert_int_equal(strlen(name_of(c, 1, RS_LIB_MPI, 1)), COMM_NAME_MAX - 1);
}

static void forget__pid__only_its_handles(void **state)
{
	struct comms *c = *state;

	comms__set(c, 10, 0x1000, "A", 0);
	comms__set(c, 11, 0x1000, "B", 0);
	comms__set(c, 10, 0x2000, "C", 0);
	comms__set(c, 12, 0x3000, "D", 0);
	comms__forget(c, 10);
	assert_int_equal(c->n, 2);
	assert_string_equal(name_of(c, 10, RS_LIB_MPI, 0x1000), "mpi:0x1000");
	assert_string_equal(name_of(c, 10, RS_LIB_MPI, 0x2000), "mpi:0x2000");
	assert_string_equal(name_of(c, 11, RS_LIB_MPI, 0x1000), "B");
	assert_string_equal(name_of(c, 12, RS_LIB_MPI, 0x3000), "D");
	comms__forget(c, 99);
	assert_int_equal(c->n, 2);
}

static void forget__empty_table__noop(void **state)
{
	struct comms *c = *state;

	comms__forget(c, 1);
	assert_int_equal(c->n, 0);
	assert_string_equal(name_of(c, 1, RS_LIB_MPI, 5), "mpi:0x5");
}

static void set_nccl__same_id_two_pids__same_name(void **state)
{
	struct comms *c = *state;
	uint8_t id[RS_UNIQUE_ID_BYTES], other[RS_UNIQUE_ID_BYTES];
	char a[COMM_NAME_MAX], b[COMM_NAME_MAX], d[COMM_NAME_MAX];
	size_t i;

	for (i = 0; i < sizeof(id); i++)
		id[i] = (uint8_t)(i * 7 + 3);
	memcpy(other, id, sizeof(id));
	other[RS_UNIQUE_ID_BYTES - 1] ^= 1;	/* only the last byte differs */
	/* every rank has its own handle value for the same communicator */
	comms__set_nccl(c, 100, 0x5555000010, id, sizeof(id));
	comms__set_nccl(c, 200, 0x6666000020, id, sizeof(id));
	comms__set_nccl(c, 300, 0x7777000030, other, sizeof(other));
	comms__name(c, 100, RS_LIB_NCCL, 0x5555000010, a, sizeof(a));
	comms__name(c, 200, RS_LIB_NCCL, 0x6666000020, b, sizeof(b));
	comms__name(c, 300, RS_LIB_NCCL, 0x7777000030, d, sizeof(d));
	assert_string_equal(a, b);
	assert_string_not_equal(a, d);
	assert_int_equal(strncmp(a, "nccl:", 5), 0);
	assert_int_equal(strlen(a), 5 + 16);
	assert_int_equal(strspn(a + 5, "0123456789abcdef"), 16);
}

static void fnv1a__known_vectors__match(void **state)
{
	/* FNV-1a 64-bit reference values */
	assert_true(comms__fnv1a((const uint8_t *)"", 0) == 0xcbf29ce484222325ULL);
	assert_true(comms__fnv1a((const uint8_t *)"a", 1) == 0xaf63dc4c8601ec8cULL);
	assert_true(comms__fnv1a((const uint8_t *)"foobar", 6) == 0x85944171f73967e8ULL);
}

static void dtype_size__registered__size(void **state)
{
	struct comms *c = *state;

	comms__set(c, 10, 0x2000, "MPI_DOUBLE", 8);
	comms__set(c, 10, 0x2100, "MPI_INT", 4);
	comms__set(c, 10, 0x1000, "MPI_COMM_WORLD", 0);
	assert_int_equal(comms__dtype_size(c, 10, 0x2000), 8);
	assert_int_equal(comms__dtype_size(c, 10, 0x2100), 4);
	assert_int_equal(comms__dtype_size(c, 10, 0x1000), 0);
	assert_int_equal(comms__dtype_size(c, 10, 0x9999), 0);
	assert_int_equal(comms__dtype_size(c, 11, 0x2000), 0);
	/* a datatype is not a communicator name */
	assert_string_equal(name_of(c, 10, RS_LIB_MPI, 0x2000), "mpi:0x2000");
}

static void set__beyond_max__oldest_evicted_and_counted(void **state)
{
	struct comms *c = *state;
	char nm[32];
	uint64_t h;

	for (h = 1; h <= COMMS_MAX + 10; h++) {
		snprintf(nm, sizeof(nm), "c%llu", (unsigned long long)h);
		comms__set(c, 1, h, nm, 0);
	}
	assert_int_equal(c->n, COMMS_MAX);
	assert_true(c->evicted == 10);
	/* the ten oldest are gone, the eleventh and the newest stay */
	for (h = 1; h <= 10; h++) {
		snprintf(nm, sizeof(nm), "mpi:0x%llx", (unsigned long long)h);
		assert_string_equal(name_of(c, 1, RS_LIB_MPI, h), nm);
	}
	assert_string_equal(name_of(c, 1, RS_LIB_MPI, 11), "c11");
	snprintf(nm, sizeof(nm), "c%d", COMMS_MAX + 10);
	assert_string_equal(name_of(c, 1, RS_LIB_MPI, COMMS_MAX + 10), nm);
	/* replacing an entry that exists evicts nothing */
	comms__set(c, 1, 11, "renamed", 0);
	assert_true(c->evicted == 10);
	assert_string_equal(name_of(c, 1, RS_LIB_MPI, 11), "renamed");
}

static void forget__after_eviction__table_consistent(void **state)
{
	struct comms *c = *state;
	uint64_t h;

	for (h = 0; h < COMMS_MAX; h++)
		comms__set(c, 1, h, "one", 0);
	for (h = 0; h < 5; h++)
		comms__set(c, 2, h, "two", 0);
	assert_true(c->evicted == 5);
	comms__forget(c, 1);
	assert_int_equal(c->n, 5);
	for (h = 0; h < 5; h++)
		assert_string_equal(name_of(c, 2, RS_LIB_MPI, h), "two");
	assert_true(c->next < COMMS_MAX);
	/* room again: new entries are added, nothing evicted */
	comms__set(c, 3, 1, "three", 0);
	assert_int_equal(c->n, 6);
	assert_true(c->evicted == 5);
	assert_string_equal(name_of(c, 3, RS_LIB_MPI, 1), "three");
}

static void scan_mpi__libmpi__predefined_handles(void **state)
{
	struct comms *c = *state;
	struct proc_lib pl = { .found = true, .start = 0x7f3000000000ULL, .pgoff = 0 };
	struct elfsym *e;
	uint64_t bias, world, dbl, i8, mstate, at = 0;
	int n;

	if (access(LIBMPI, R_OK))
		skip();
	n = comms__scan_mpi(c, 42, LIBMPI, &pl, &at);
	assert_true(n >= 20);
	assert_int_equal(elfsym__open(LIBMPI, &e), 0);
	assert_int_equal(elfsym__load_bias(e, pl.start, pl.pgoff, &bias), 0);
	assert_int_equal(elfsym__find(e, "ompi_mpi_comm_world", &world, NULL), 0);
	assert_int_equal(elfsym__find(e, "ompi_mpi_double", &dbl, NULL), 0);
	assert_int_equal(elfsym__find(e, "ompi_mpi_int8_t", &i8, NULL), 0);
	assert_int_equal(elfsym__find(e, "ompi_mpi_state", &mstate, NULL), 0);
	elfsym__free(e);
	/* where the daemon reads whether MPI_Init is done, at its runtime address */
	assert_true(at == mstate + bias);
	/* MPI_COMM_WORLD in the process is &ompi_mpi_comm_world at its runtime address */
	assert_string_equal(name_of(c, 42, RS_LIB_MPI, world + bias), "MPI_COMM_WORLD");
	assert_int_equal(comms__dtype_size(c, 42, dbl + bias), 8);
	assert_int_equal(comms__dtype_size(c, 42, i8 + bias), 1);
	/* other processes are not affected */
	assert_int_equal(comms__dtype_size(c, 43, dbl + bias), 0);
}

static void scan_mpi__not_elf__error(void **state)
{
	struct comms *c = *state;
	struct proc_lib pl = { .found = true };

	assert_true(comms__scan_mpi(c, 1, "/nonexistent/libmpi.so.40", &pl, NULL) < 0);
	assert_int_equal(c->n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(set__comm__named),
		T(name__unregistered__lib_and_hex_handle),
		T(name__small_buffer__truncated_terminated),
		T(set__same_handle__replaced),
		T(set__long_name__truncated),
		T(forget__pid__only_its_handles),
		T(forget__empty_table__noop),
		T(set_nccl__same_id_two_pids__same_name),
		T(fnv1a__known_vectors__match),
		T(dtype_size__registered__size),
		T(set__beyond_max__oldest_evicted_and_counted),
		T(forget__after_eviction__table_consistent),
		T(scan_mpi__libmpi__predefined_handles),
		T(scan_mpi__not_elf__error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
