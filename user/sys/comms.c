// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Handle -> name/size tables, bounded, one per rankscope process. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comms.h"
#include "decode.h"
#include "elfsym.h"

void comms__init(struct comms *c)
{
	memset(c, 0, sizeof(*c));
}

void comms__free(struct comms *c)
{
	free(c->e);
	comms__init(c);
}

static struct comm_entry *find(const struct comms *c, pid_t pid, uint64_t handle)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->e[i].pid == pid && c->e[i].handle == handle)
			return &c->e[i];
	return NULL;
}

void comms__set(struct comms *c, pid_t pid, uint64_t handle, const char *name, uint32_t size)
{
	struct comm_entry *e = find(c, pid, handle);

	c->gen++;
	if (!e) {
		if (!c->e) {
			c->e = calloc(COMMS_MAX, sizeof(*c->e));
			if (!c->e)
				return;
		}
		if (c->n < COMMS_MAX) {
			e = &c->e[c->n++];
		} else {
			e = &c->e[c->next];
			c->next = (c->next + 1) % COMMS_MAX;
			c->evicted++;
		}
	}
	e->pid = pid;
	e->handle = handle;
	e->size = size;
	snprintf(e->name, sizeof(e->name), "%s", name);
}

uint64_t comms__fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

void comms__set_nccl(struct comms *c, pid_t pid, uint64_t handle, const uint8_t *id, size_t n)
{
	char name[COMM_NAME_MAX];

	snprintf(name, sizeof(name), "nccl:%016" PRIx64, comms__fnv1a(id, n));
	comms__set(c, pid, handle, name, 0);
}

const char *comms__name(const struct comms *c, pid_t pid, unsigned int lib, uint64_t handle,
			char *buf, size_t n)
{
	const struct comm_entry *e = find(c, pid, handle);

	if (e && !e->size)
		snprintf(buf, n, "%s", e->name);
	else if (!handle)
		snprintf(buf, n, "%s", decode__lib_name(lib));
	else
		snprintf(buf, n, "%s:0x%" PRIx64, decode__lib_name(lib), handle);
	return buf;
}

uint32_t comms__dtype_size(const struct comms *c, pid_t pid, uint64_t handle)
{
	const struct comm_entry *e = find(c, pid, handle);

	return e ? e->size : 0;
}

void comms__forget(struct comms *c, pid_t pid)
{
	size_t i = 0;

	c->gen++;
	while (i < c->n) {
		if (c->e[i].pid == pid) {
			c->e[i] = c->e[--c->n];
			continue;
		}
		i++;
	}
	if (c->next >= c->n)
		c->next = 0;
}

/* OpenMPI 4: MPI_COMM_WORLD is &ompi_mpi_comm_world, MPI_DOUBLE is &ompi_mpi_double, ... */
static const struct {
	const char *sym;
	const char *name;
	uint32_t size;
} mpi_handles[] = {
	{ "ompi_mpi_comm_world", "MPI_COMM_WORLD", 0 },
	{ "ompi_mpi_comm_self", "MPI_COMM_SELF", 0 },
	{ "ompi_mpi_char", "MPI_CHAR", 1 },
	{ "ompi_mpi_signed_char", "MPI_SIGNED_CHAR", 1 },
	{ "ompi_mpi_unsigned_char", "MPI_UNSIGNED_CHAR", 1 },
	{ "ompi_mpi_byte", "MPI_BYTE", 1 },
	{ "ompi_mpi_short", "MPI_SHORT", 2 },
	{ "ompi_mpi_unsigned_short", "MPI_UNSIGNED_SHORT", 2 },
	{ "ompi_mpi_int", "MPI_INT", 4 },
	{ "ompi_mpi_unsigned", "MPI_UNSIGNED", 4 },
	{ "ompi_mpi_long", "MPI_LONG", 8 },
	{ "ompi_mpi_unsigned_long", "MPI_UNSIGNED_LONG", 8 },
	{ "ompi_mpi_long_long_int", "MPI_LONG_LONG", 8 },
	{ "ompi_mpi_unsigned_long_long", "MPI_UNSIGNED_LONG_LONG", 8 },
	{ "ompi_mpi_float", "MPI_FLOAT", 4 },
	{ "ompi_mpi_double", "MPI_DOUBLE", 8 },
	{ "ompi_mpi_long_double", "MPI_LONG_DOUBLE", 16 },
	{ "ompi_mpi_int8_t", "MPI_INT8_T", 1 },
	{ "ompi_mpi_uint8_t", "MPI_UINT8_T", 1 },
	{ "ompi_mpi_int16_t", "MPI_INT16_T", 2 },
	{ "ompi_mpi_uint16_t", "MPI_UINT16_T", 2 },
	{ "ompi_mpi_int32_t", "MPI_INT32_T", 4 },
	{ "ompi_mpi_uint32_t", "MPI_UINT32_T", 4 },
	{ "ompi_mpi_int64_t", "MPI_INT64_T", 8 },
	{ "ompi_mpi_uint64_t", "MPI_UINT64_T", 8 },
	{ "ompi_mpi_c_bool", "MPI_C_BOOL", 1 },
	{ "ompi_mpi_c_float_complex", "MPI_C_FLOAT_COMPLEX", 8 },
	{ "ompi_mpi_c_double_complex", "MPI_C_DOUBLE_COMPLEX", 16 },
};

struct mpi_ctx {
	struct comms *c;
	pid_t pid;
	uint64_t bias;
	uint64_t state;		/* &ompi_mpi_state in pid, or 0 */
	int n;
};

static int mpi_cb(const char *name, uint64_t vaddr, uint64_t size, bool is_func, void *vctx)
{
	struct mpi_ctx *m = vctx;
	size_t i;

	if (is_func || strncmp(name, "ompi_mpi_", 9))
		return 0;
	if (!strcmp(name, "ompi_mpi_state") && size == sizeof(int32_t)) {
		m->state = vaddr + m->bias;
		return 0;
	}
	for (i = 0; i < sizeof(mpi_handles) / sizeof(mpi_handles[0]); i++) {
		if (strcmp(name, mpi_handles[i].sym))
			continue;
		comms__set(m->c, m->pid, vaddr + m->bias, mpi_handles[i].name,
			   mpi_handles[i].size);
		m->n++;
	}
	return 0;
}

int comms__scan_mpi(struct comms *c, pid_t pid, const char *host_path, const struct proc_lib *pl,
		    uint64_t *state_addr)
{
	struct mpi_ctx m = { .c = c, .pid = pid };
	struct elfsym *e;
	int err;

	err = elfsym__open(host_path, &e);
	if (err)
		return err;
	err = elfsym__load_bias(e, pl->start, pl->pgoff, &m.bias);
	if (!err)
		err = elfsym__foreach(e, mpi_cb, &m);
	elfsym__free(e);
	if (state_addr && m.state)
		*state_addr = m.state;
	return err ? err : m.n;
}
