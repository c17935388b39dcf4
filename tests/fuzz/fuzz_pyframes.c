// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer harness: CPython 3.11's frame chain (sys/pyframes.c) read from a target whose
 * whole memory is the input, mapped at FUZZ_BASE; the read callback serves only bytes inside
 * it. The input's first 64 bytes are a header (below) that also holds Py_Version; _PyRuntime
 * is at offset 64. The thread states pyframes__open finds and the header's tids are walked,
 * and the location table decoder is run on the bytes after the header. Besides ASan and
 * UBSan, the results are checked against what pyframes.h promises, and abort() when not.
 * Built with ASan and UBSan.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "py311_offsets.h"
#include "pyframes.h"

#define FUZZ_BASE	0x10000000ULL
#define HDR_SIZE	64
/*
 * The header, little-endian:
 *   0  u64 Py_Version (PY_BUILT_VERSION's major.minor put in when flags say so)
 *   8  u32 flags (F_*), bits 8-15 max frames, bits 16-21 err size - 1
 *  12  s32 firstlineno, for the location table at 64
 *  16  s64 a byte address in that table
 *  24  u64 tids[3] to ask for
 *  64  _PyRuntime
 */
#define F_VERSION	(1u << 0)	/* Py_Version's major.minor := the built one's */
#define F_NO_VERSION	(1u << 1)	/* version_at = 0: an interpreter before 3.11 */
#define F_NO_STRTYPE	(1u << 2)	/* unicode_type = 0: strings not type-checked */
#define F_NO_BYTESTYPE	(1u << 3)	/* bytes_type = 0 */
#define F_MAX		(1u << 4)	/* max frames from bits 8-15, else PY_FRAMES_MAX */
#define F_NERR		(1u << 5)	/* err size (1-64) from bits 16-21, else 128 */

/* the type objects are only compared, never read: outside the memory */
#define CODE_TYPE	0x30000000ULL
#define UNICODE_TYPE	0x30000100ULL
#define BYTES_TYPE	0x30000200ULL

#define OUT_MAX		(PY_FRAMES_MAX + 8)

struct mem {
	const uint8_t *p;
	size_t n;
};

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	const struct mem *m = ctx;

	if (addr < FUZZ_BASE || n > m->n || addr - FUZZ_BASE > m->n - n)
		return -1;
	memcpy(buf, m->p + (addr - FUZZ_BASE), n);
	return 0;
}

/* a frame's name or file: terminated, printable ASCII */
static void check_str(const char *s, size_t size)
{
	size_t len = strnlen(s, size), i;

	if (len == size)
		abort();
	for (i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] >= 0x7f)
			abort();
}

static void walk(struct py_target *py, pid_t tid, int max, size_t nerr)
{
	struct py_frame out[OUT_MAX];
	char err[128];
	bool truncated;
	int n, cap = max < PY_FRAMES_MAX ? max : PY_FRAMES_MAX, i;

	n = pyframes__thread(py, tid, out, max, &truncated, err, nerr);
	if (n < 0 || n > cap || (truncated && n != cap) || strnlen(err, nerr) == nerr)
		abort();
	for (i = 0; i < n; i++) {
		check_str(out[i].func, sizeof(out[i].func));
		check_str(out[i].file, sizeof(out[i].file));
		if (out[i].line < 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_target py = {};
	struct mem m;
	uint8_t *copy, *table;
	uint32_t flags = 0;
	int32_t first = 0;
	int64_t addr = 0, addrs[20];
	uint64_t tids[3] = {}, v;
	size_t nerr = 128, tlen;
	int max = PY_FRAMES_MAX, rc, i;

	if (size >= HDR_SIZE) {
		memcpy(&flags, data + 8, 4);
		memcpy(&first, data + 12, 4);
		memcpy(&addr, data + 16, 8);
		memcpy(tids, data + 24, sizeof(tids));
	}
	/* an exact-size copy, so any read past the input is ASan's to see */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (size >= 8 && (flags & F_VERSION)) {
		memcpy(&v, copy, 8);
		v = (v & 0xffff) | (PY_BUILT_VERSION & ~0xffffULL);
		memcpy(copy, &v, 8);
	}
	if (flags & F_MAX)
		max = (flags >> 8 & 0xff) % (OUT_MAX + 1);
	if (flags & F_NERR)
		nerr = 1 + (flags >> 16 & 63);

	m.p = copy;
	m.n = size;
	py.runtime = FUZZ_BASE + HDR_SIZE;
	py.version_at = (flags & F_NO_VERSION) ? 0 : FUZZ_BASE;
	py.code_type = CODE_TYPE;
	py.unicode_type = (flags & F_NO_STRTYPE) ? 0 : UNICODE_TYPE;
	py.bytes_type = (flags & F_NO_BYTESTYPE) ? 0 : BYTES_TYPE;
	py.read = mem_read;
	py.ctx = &m;
	py.pid = -1;

	rc = pyframes__open(&py);
	if ((rc == 0) != py.usable || strnlen(py.note, sizeof(py.note)) == sizeof(py.note) ||
	    (rc == 0 && (py.note[0] || py.ntstates < 1 || py.ntstates > PY_TSTATES_MAX)) ||
	    (rc != 0 && !py.note[0]))
		abort();
	/* asked whether open worked or not: the walk must cope either way */
	for (i = 0; i < 3; i++)
		walk(&py, (pid_t)tids[i], max, nerr);
	for (i = 0; i < py.ntstates && i < 4; i++)
		walk(&py, (pid_t)py.tstates[i].tid, max, nerr);
	pyframes__close(&py);

	/* the bytes after the header as a location table, in a buffer of its own size */
	tlen = size > HDR_SIZE ? size - HDR_SIZE : 0;
	table = malloc(tlen ? tlen : 1);
	if (table) {
		memcpy(table, data + (size > HDR_SIZE ? HDR_SIZE : size), tlen);
		addrs[0] = addr;
		addrs[1] = -2;
		addrs[2] = (int64_t)tlen * 16;
		addrs[3] = INT64_MAX;
		for (i = 4; i < 20; i++)
			addrs[i] = (i - 4) * 2;
		for (i = 0; i < 20; i++)
			if (pyframes__addr2line(table, tlen, first, addrs[i]) < 0)
				abort();
		free(table);
	}
	free(copy);
	return 0;
}
