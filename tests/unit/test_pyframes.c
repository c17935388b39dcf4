// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * pyframes: CPython 3.11's frame chain read from a fake target, a few regions of bytes laid
 * out with the offsets generated from python3.11-dev's headers, through the read callback
 * (which fails on any byte outside the regions, as process_vm_readv would). The location
 * table decoder is checked on hand-made 3.11 tables.
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
#include <cmocka.h>
#include "py311_offsets.h"
#include "pyframes.h"

#define DATA_BASE	0x555555554000ULL	/* the interpreter's globals */
#define HEAP_BASE	0x7f0000000000ULL	/* its objects */
#define UNMAPPED	0x7e0000000000ULL	/* in no region */
#define REGION_SIZE	(256 << 10)

/* the type objects are only compared, never read */
#define CODE_TYPE	(DATA_BASE + 0x1000)
#define UNICODE_TYPE	(DATA_BASE + 0x2000)
#define BYTES_TYPE	(DATA_BASE + 0x3000)

enum { R_DATA, R_HEAP, NREGIONS };

struct region {
	uint64_t base;
	size_t size, used;
	uint8_t *buf;
};

struct fake {
	struct region r[NREGIONS];
	struct py_target py;
	uint64_t interp;
	long reads;
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct fake *f = ctx;
	int i;

	f->reads++;
	for (i = 0; i < NREGIONS; i++) {
		struct region *r = &f->r[i];

		if (addr >= r->base && n <= r->size && addr - r->base <= r->size - n) {
			memcpy(buf, r->buf + (addr - r->base), n);
			return 0;
		}
	}
	return -1;
}

/* n zeroed bytes of region i, 16-aligned; their address in the target */
static uint64_t fake_alloc(struct fake *f, int i, size_t n)
{
	struct region *r = &f->r[i];
	uint64_t addr;

	r->used = (r->used + 15) & ~(size_t)15;
	assert_true(r->used + n <= r->size);
	addr = r->base + r->used;
	r->used += n;
	return addr;
}

static uint8_t *at(struct fake *f, uint64_t addr, size_t n)
{
	int i;

	for (i = 0; i < NREGIONS; i++)
		if (addr >= f->r[i].base && addr - f->r[i].base + n <= f->r[i].size)
			return f->r[i].buf + (addr - f->r[i].base);
	fail_msg("fake: %#llx is in no region", (unsigned long long)addr);
	return NULL;
}

static void put64(struct fake *f, uint64_t addr, uint64_t v)
{
	memcpy(at(f, addr, 8), &v, 8);
}

static void put32(struct fake *f, uint64_t addr, uint32_t v)
{
	memcpy(at(f, addr, 4), &v, 4);
}

/* A compact ASCII str as 3.11 lays it out: the text right after the PyASCIIObject. */
static uint64_t fake_str(struct fake *f, const char *s)
{
	size_t len = strlen(s);
	uint64_t o = fake_alloc(f, R_HEAP, PY_STR_ASCII_SIZE + len + 1);

	put64(f, o, 1);		/* ob_refcnt */
	put64(f, o + PY_OFF_OB_TYPE, UNICODE_TYPE);
	put64(f, o + PY_OFF_STR_LENGTH, len);
	/* interned 0, kind 1, compact, ascii, ready (bit 7) */
	put32(f, o + PY_OFF_STR_STATE, 1u << PY_STR_KIND_SHIFT | 1u << PY_STR_COMPACT_BIT |
		  1u << PY_STR_ASCII_BIT | 1u << 7);
	memcpy(at(f, o + PY_STR_ASCII_SIZE, len + 1), s, len + 1);
	return o;
}

static uint64_t fake_bytes(struct fake *f, const uint8_t *b, size_t len)
{
	uint64_t o = fake_alloc(f, R_HEAP, PY_OFF_BYTES_DATA + len + 1);

	put64(f, o + PY_OFF_OB_TYPE, BYTES_TYPE);
	put64(f, o + PY_OFF_VAR_SIZE, len);
	if (len)
		memcpy(at(f, o + PY_OFF_BYTES_DATA, len), b, len);
	return o;
}

/* A code object of units code units; its names and location table as given. */
static uint64_t fake_code(struct fake *f, const char *qualname, const char *filename,
			  const uint8_t *table, size_t tlen, int firstlineno, int units)
{
	uint64_t co = fake_alloc(f, R_HEAP, PY_OFF_CODE_CODE + 2 * units);

	put64(f, co + PY_OFF_OB_TYPE, CODE_TYPE);
	put64(f, co + PY_OFF_CODE_QUALNAME, fake_str(f, qualname));
	put64(f, co + PY_OFF_CODE_NAME, fake_str(f, qualname));
	put64(f, co + PY_OFF_CODE_FILENAME, fake_str(f, filename));
	put64(f, co + PY_OFF_CODE_LINETABLE, fake_bytes(f, table, tlen));
	put32(f, co + PY_OFF_CODE_FIRSTLINENO, (uint32_t)firstlineno);
	return co;
}

/* A frame of code stopped at code unit unit (its prev_instr), called from previous. */
static uint64_t fake_frame(struct fake *f, uint64_t code, int unit, uint64_t previous,
			   bool entry)
{
	uint64_t fr = fake_alloc(f, R_HEAP, PY_FRAME_SIZE);

	put64(f, fr + PY_OFF_FRAME_CODE, code);
	put64(f, fr + PY_OFF_FRAME_PREVIOUS, previous);
	put64(f, fr + PY_OFF_FRAME_PREV_INSTR, code + PY_OFF_CODE_CODE + 2 * unit);
	*at(f, fr + PY_OFF_FRAME_IS_ENTRY, 1) = entry;
	return fr;
}

/* A thread state for tid at the head of the interpreter's list; its _PyCFrame's address,
 * whose current_frame the test sets. */
static uint64_t fake_thread(struct fake *f, uint64_t tid)
{
	uint64_t ts = fake_alloc(f, R_HEAP, PY_OFF_TSTATE_NATIVE_ID + 64);
	uint64_t cf = fake_alloc(f, R_HEAP, PY_OFF_CFRAME_CURRENT + 16);
	uint64_t head;

	memcpy(&head, at(f, f->interp + PY_OFF_INTERP_THREADS_HEAD, 8), 8);
	put64(f, ts + PY_OFF_TSTATE_NEXT, head);
	put64(f, ts + PY_OFF_TSTATE_NATIVE_ID, tid);
	put64(f, ts + PY_OFF_TSTATE_CFRAME, cf);
	put64(f, f->interp + PY_OFF_INTERP_THREADS_HEAD, ts);
	return cf;
}

static void set_frame(struct fake *f, uint64_t cframe, uint64_t frame)
{
	put64(f, cframe + PY_OFF_CFRAME_CURRENT, frame);
}

static int setup(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));
	uint64_t version;
	int i;

	assert_non_null(f);
	f->r[R_DATA].base = DATA_BASE;
	f->r[R_HEAP].base = HEAP_BASE;
	for (i = 0; i < NREGIONS; i++) {
		f->r[i].size = REGION_SIZE;
		f->r[i].buf = calloc(1, REGION_SIZE);
		assert_non_null(f->r[i].buf);
	}
	/* the data region's first 0x4000 bytes: Py_Version, then the type objects */
	version = fake_alloc(f, R_DATA, 0x4000);
	put64(f, version, PY_BUILT_VERSION);
	f->py.runtime = fake_alloc(f, R_DATA, PY_OFF_RUNTIME_INTERP_HEAD + 64);
	f->interp = fake_alloc(f, R_HEAP, PY_OFF_INTERP_THREADS_HEAD + 64);
	put64(f, f->py.runtime + PY_OFF_RUNTIME_INTERP_HEAD, f->interp);
	f->py.version_at = version;
	f->py.code_type = CODE_TYPE;
	f->py.unicode_type = UNICODE_TYPE;
	f->py.bytes_type = BYTES_TYPE;
	f->py.read = fake_read;
	f->py.ctx = f;
	f->py.pid = -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fake *f = *state;
	int i;

	pyframes__close(&f->py);
	for (i = 0; i < NREGIONS; i++)
		free(f->r[i].buf);
	free(f);
	return 0;
}

/* Six code units: 0-1 on firstlineno + 1, 2-4 on firstlineno + 6, 5 on firstlineno + 4. */
static const uint8_t TABLE_3[] = {
	0x80 | 11 << 3 | 1, 2, 6,	/* units 0-1: line + 1 */
	0x80 | 13 << 3 | 2, 5 << 1,	/* units 2-4: line + 5 (no columns) */
	0x80 | 14 << 3 | 0, 2 << 1 | 1, 0, 4, 8,	/* unit 5: line - 2 (long form) */
};

static void thread__three_frames__innermost_first(void **state)
{
	struct fake *f = *state;
	uint64_t other = fake_thread(f, 4241);
	uint64_t cf = fake_thread(f, 4242);
	uint64_t c_main = fake_code(f, "<module>", "/srv/train.py", TABLE_3, sizeof(TABLE_3),
				    10, 6);
	uint64_t c_step = fake_code(f, "Trainer.step", "/srv/trainer.py", TABLE_3,
				    sizeof(TABLE_3), 100, 6);
	uint64_t c_sync = fake_code(f, "sync", "/usr/lib/dist.py", TABLE_3, sizeof(TABLE_3), 40, 6);
	uint64_t f_main = fake_frame(f, c_main, 0, 0, true);
	uint64_t f_step = fake_frame(f, c_step, 3, f_main, false);
	uint64_t f_sync = fake_frame(f, c_sync, 5, f_step, true);
	struct py_frame out[8];
	bool trunc = true;
	char err[128] = "junk";
	int n;

	set_frame(f, cf, f_sync);
	set_frame(f, other, 0);
	assert_int_equal(pyframes__open(&f->py), 0);
	assert_true(f->py.usable);
	assert_string_equal(f->py.note, "");
	assert_true(f->py.version == PY_BUILT_VERSION);
	assert_int_equal(f->py.ntstates, 2);

	n = pyframes__thread(&f->py, 4242, out, 8, &trunc, err, sizeof(err));
	assert_int_equal(n, 3);
	assert_false(trunc);
	assert_string_equal(err, "");
	assert_string_equal(out[0].func, "sync");
	assert_string_equal(out[0].file, "/usr/lib/dist.py");
	assert_int_equal(out[0].line, 40 + 1 + 5 - 2);
	assert_true(out[0].entry);
	assert_string_equal(out[1].func, "Trainer.step");
	assert_string_equal(out[1].file, "/srv/trainer.py");
	assert_int_equal(out[1].line, 100 + 1 + 5);
	assert_false(out[1].entry);
	assert_string_equal(out[2].func, "<module>");
	assert_string_equal(out[2].file, "/srv/train.py");
	assert_int_equal(out[2].line, 10 + 1);
	assert_true(out[2].entry);

	/* the other thread state is found too; it runs no Python now */
	n = pyframes__thread(&f->py, 4241, out, 8, &trunc, err, sizeof(err));
	assert_int_equal(n, 0);
	assert_false(trunc);
	assert_string_equal(err, "");
}

static void thread__long_filename__keeps_its_end(void **state)
{
	struct fake *f = *state;
	uint64_t cf = fake_thread(f, 7);
	char path[201];
	struct py_frame out[2];
	size_t len;
	bool trunc;
	char err[128];

	memset(path, 'd', 200);
	path[0] = '/';
	memcpy(path + 200 - 9, "/train.py", 9);
	path[200] = 0;
	set_frame(f, cf, fake_frame(f, fake_code(f, "f", path, TABLE_3, sizeof(TABLE_3), 1, 6), 0,
				    0, true));
	assert_int_equal(pyframes__open(&f->py), 0);
	assert_int_equal(pyframes__thread(&f->py, 7, out, 2, &trunc, err, sizeof(err)), 1);
	len = strlen(out[0].file);
	assert_int_equal(len, sizeof(out[0].file) - 1);
	assert_memory_equal(out[0].file, "...", 3);
	assert_string_equal(out[0].file + len - 9, "/train.py");
}

/*
 * A table with every form: firstlineno 100; entries, with the byte addresses they cover:
 *   0-3   short form (code 3), 2 units                  line 100
 *   4-5   one-line form (code 12, line + 2), 1 unit     line 102
 *   6-13  no columns (code 13), +70 in a 2-byte varint  line 172
 *   14-15 long form (code 14), -30, then 3 varints      line 142
 *   16-19 no location (code 15), 2 units                0
 *   20-35 short form (code 0), 8 units                  line 142
 *   36-41 long form, +1000 in 2 bytes, 3 varints        line 1142
 */
static const uint8_t TABLE_ALL[] = {
	0x80 | 3 << 3 | 1, 0x12,
	0x80 | 12 << 3 | 0, 5, 9,
	0x80 | 13 << 3 | 3, 0x40 | (140 & 63), 140 >> 6,
	0x80 | 14 << 3 | 0, 30 << 1 | 1, 0, 4, 8,
	0x80 | 15 << 3 | 1,
	0x80 | 0 << 3 | 7, 0x03,
	0x80 | 14 << 3 | 2, 0x40 | (2000 & 63), 2000 >> 6, 0x41, 0x01, 0x00, 0x10,
};

static void addr2line__every_form__lines(void **state)
{
	const uint8_t *t = TABLE_ALL;
	size_t n = sizeof(TABLE_ALL);

	/* the first entry */
	assert_int_equal(pyframes__addr2line(t, n, 100, 0), 100);
	assert_int_equal(pyframes__addr2line(t, n, 100, 3), 100);
	/* the middle ones */
	assert_int_equal(pyframes__addr2line(t, n, 100, 4), 102);
	assert_int_equal(pyframes__addr2line(t, n, 100, 6), 172);
	assert_int_equal(pyframes__addr2line(t, n, 100, 13), 172);
	assert_int_equal(pyframes__addr2line(t, n, 100, 14), 142);
	assert_int_equal(pyframes__addr2line(t, n, 100, 16), 0);
	assert_int_equal(pyframes__addr2line(t, n, 100, 19), 0);
	assert_int_equal(pyframes__addr2line(t, n, 100, 20), 142);
	assert_int_equal(pyframes__addr2line(t, n, 100, 35), 142);
	/* the last one, and one past it */
	assert_int_equal(pyframes__addr2line(t, n, 100, 36), 1142);
	assert_int_equal(pyframes__addr2line(t, n, 100, 41), 1142);
	assert_int_equal(pyframes__addr2line(t, n, 100, 42), 0);
	assert_int_equal(pyframes__addr2line(t, n, 100, 1 << 20), 0);
	/* before the first instruction: the function's first line */
	assert_int_equal(pyframes__addr2line(t, n, 100, -2), 100);
	assert_int_equal(pyframes__addr2line(t, n, 100, INT64_MIN), 100);
	/* counted from firstlineno */
	assert_int_equal(pyframes__addr2line(t, n, 7, 36), 1049);
}

static void addr2line__bad_tables__zero(void **state)
{
	static const uint8_t no_start[] = { 0x12, 0x80 | 3 << 3 | 1, 0 };
	static const uint8_t below_one[] = { 0x80 | 13 << 3 | 7, 20 << 1 | 1 };

	assert_int_equal(pyframes__addr2line(TABLE_ALL, 0, 100, 0), 0);
	assert_int_equal(pyframes__addr2line(no_start, sizeof(no_start), 100, 0), 0);
	/* a line below 1 is no line */
	assert_int_equal(pyframes__addr2line(below_one, sizeof(below_one), 10, 0), 0);
	/* a table cut inside its last entry still gives the entries before it */
	assert_int_equal(pyframes__addr2line(TABLE_ALL, sizeof(TABLE_ALL) - 5, 100, 20), 142);
}

static void open__version_3_12__refused(void **state)
{
	struct fake *f = *state;

	fake_thread(f, 1);
	put64(f, f->py.version_at, 0x030c01f0);
	assert_int_equal(pyframes__open(&f->py), -1);
	assert_false(f->py.usable);
	assert_true(f->py.version == 0x030c01f0);
	assert_non_null(strstr(f->py.note, "3.12"));
	assert_non_null(strstr(f->py.note, pyframes__built_version()));
}

static void open__other_3_11_micro__usable(void **state)
{
	struct fake *f = *state;

	fake_thread(f, 1);
	put64(f, f->py.version_at, (PY_BUILT_VERSION & ~0xffffULL) | 0x09f0);
	assert_int_equal(pyframes__open(&f->py), 0);
	assert_true(f->py.usable);
	assert_string_equal(pyframes__built_version(), "3.11");
}

static void open__no_py_version__refused(void **state)
{
	struct fake *f = *state;

	fake_thread(f, 1);
	f->py.version_at = 0;
	assert_int_equal(pyframes__open(&f->py), -1);
	assert_false(f->py.usable);
	assert_non_null(strstr(f->py.note, "Py_Version"));
	pyframes__close(&f->py);

	/* a symbol address that cannot be read says the same */
	f->py.version_at = UNMAPPED;
	assert_int_equal(pyframes__open(&f->py), -1);
	assert_false(f->py.usable);
	assert_non_null(strstr(f->py.note, "Py_Version"));
}

static void open__no_thread_state__refused(void **state)
{
	struct fake *f = *state;

	assert_int_equal(pyframes__open(&f->py), -1);
	assert_false(f->py.usable);
	assert_non_null(strstr(f->py.note, "no thread state"));
	pyframes__close(&f->py);

	f->py.runtime = UNMAPPED;
	assert_int_equal(pyframes__open(&f->py), -1);
	assert_non_null(strstr(f->py.note, "_PyRuntime"));
}

static void open__thread_list_loops__bounded(void **state)
{
	struct fake *f = *state;
	uint64_t ts;

	fake_thread(f, 1);
	fake_thread(f, 2);
	/* the head's next is the head */
	memcpy(&ts, at(f, f->interp + PY_OFF_INTERP_THREADS_HEAD, 8), 8);
	put64(f, ts + PY_OFF_TSTATE_NEXT, ts);
	/* and the interpreter is its own next */
	put64(f, f->interp + PY_OFF_INTERP_NEXT, f->interp);
	assert_int_equal(pyframes__open(&f->py), 0);
	assert_true(f->py.ntstates >= 1 && f->py.ntstates <= PY_TSTATES_MAX);
	assert_true(f->py.tstates[0].tid == 2);
	assert_true(f->reads < 10 * PY_TSTATES_MAX);
}

static void open__interp_list_loops__each_thread_once(void **state)
{
	struct fake *f = *state;

	fake_thread(f, 1);
	fake_thread(f, 2);
	put64(f, f->interp + PY_OFF_INTERP_NEXT, f->interp);
	assert_int_equal(pyframes__open(&f->py), 0);
	assert_int_equal(f->py.ntstates, 2);
}

static void thread__frame_is_its_own_previous__loops(void **state)
{
	struct fake *f = *state;
	uint64_t cf = fake_thread(f, 9);
	uint64_t code = fake_code(f, "spin", "/x.py", TABLE_3, sizeof(TABLE_3), 5, 6);
	uint64_t fr = fake_frame(f, code, 0, 0, false);
	struct py_frame out[PY_FRAMES_MAX];
	bool trunc;
	char err[128];
	int n;

	put64(f, fr + PY_OFF_FRAME_PREVIOUS, fr);
	set_frame(f, cf, fr);
	assert_int_equal(pyframes__open(&f->py), 0);
	f->reads = 0;
	n = pyframes__thread(&f->py, 9, out, PY_FRAMES_MAX, &trunc, err, sizeof(err));
	assert_int_equal(n, 1);
	assert_string_equal(out[0].func, "spin");
	assert_non_null(strstr(err, "loops"));
	assert_true(f->reads < 100);
}

static void thread__two_frame_cycle__loops(void **state)
{
	struct fake *f = *state;
	uint64_t cf = fake_thread(f, 9);
	uint64_t code = fake_code(f, "ping", "/x.py", TABLE_3, sizeof(TABLE_3), 5, 6);
	uint64_t a = fake_frame(f, code, 0, 0, false);
	uint64_t b = fake_frame(f, code, 0, a, false);
	struct py_frame out[PY_FRAMES_MAX];
	bool trunc;
	char err[128];

	put64(f, a + PY_OFF_FRAME_PREVIOUS, b);
	set_frame(f, cf, b);
	assert_int_equal(pyframes__open(&f->py), 0);
	assert_int_equal(pyframes__thread(&f->py, 9, out, PY_FRAMES_MAX, &trunc, err,
					  sizeof(err)), 2);
	assert_non_null(strstr(err, "loops"));
	assert_non_null(strstr(err, "depth 2"));
}

static void thread__previous_unmapped__frames_before_kept(void **state)
{
	struct fake *f = *state;
	uint64_t cf = fake_thread(f, 9);
	uint64_t code = fake_code(f, "g", "/g.py", TABLE_3, sizeof(TABLE_3), 20, 6);
	uint64_t f1 = fake_frame(f, code, 2, UNMAPPED, false);
	uint64_t f0 = fake_frame(f, code, 0, f1, true);
	struct py_frame out[PY_FRAMES_MAX];
	bool trunc = true;
	char err[128];

	set_frame(f, cf, f0);
	assert_int_equal(pyframes__open(&f->py), 0);
	assert_int_equal(pyframes__thread(&f->py, 9, out, PY_FRAMES_MAX, &trunc, err,
					  sizeof(err)), 2);
	assert_false(trunc);
	assert_non_null(strstr(err, "cannot be read"));
	assert_non_null(strstr(err, "depth 2"));
	assert_int_equal(out[0].line, 21);
	assert_int_equal(out[1].line, 26);
	assert_true(out[0].entry);
	assert_false(out[1].entry);
}

static void thread__code_not_a_code_object__stops(void **state)
{
	struct fake *f = *state;
	uint64_t cf = fake_thread(f, 9);
	uint64_t code = fake_code(f, "g", "/g.py", TABLE_3, sizeof(TABLE_3), 20, 6);
	uint64_t not_code = fake_alloc(f, R_HEAP, PY_OFF_CODE_CODE + 64);
	uint64_t f1 = fake_frame(f, not_code, 0, 0, false);
	uint64_t f0 = fake_frame(f, code, 0, f1, true);
	struct py_frame out[PY_FRAMES_MAX];
	bool trunc;
	char err[128];
	char want[64];

	/* a str where the code object should be */
	put64(f, not_code + PY_OFF_OB_TYPE, UNICODE_TYPE);
	set_frame(f, cf, f0);
	assert_int_equal(pyframes__open(&f->py), 0);
	assert_int_equal(pyframes__thread(&f->py, 9, out, PY_FRAMES_MAX, &trunc, err,
					  sizeof(err)), 1);
	assert_non_null(strstr(err, "not a code object"));
	snprintf(want, sizeof(want), "%#llx", (unsigned long long)not_code);
	assert_non_null(strstr(err, want));

	/* and an f_code that cannot be read at all */
	put64(f, f1 + PY_OFF_FRAME_CODE, UNMAPPED);
	assert_int_equal(pyframes__thread(&f->py, 9, out, PY_FRAMES_MAX, &trunc, err,
					  sizeof(err)), 1);
	assert_non_null(strstr(err, "not a code object"));
}

static void thread__100_frames__truncated_at_max(void **state)
{
	struct fake *f = *state;
	uint64_t cf = fake_thread(f, 9);
	uint64_t code = fake_code(f, "deep", "/d.py", TABLE_3, sizeof(TABLE_3), 1, 6);
	uint64_t fr = 0;
	struct py_frame out[128];
	bool trunc = false;
	char err[128];
	int i;

	for (i = 0; i < 100; i++)
		fr = fake_frame(f, code, 0, fr, i == 0);
	set_frame(f, cf, fr);
	assert_int_equal(pyframes__open(&f->py), 0);
	/* room for more: PY_FRAMES_MAX still caps it */
	assert_int_equal(pyframes__thread(&f->py, 9, out, 128, &trunc, err, sizeof(err)),
			 PY_FRAMES_MAX);
	assert_true(trunc);
	assert_string_equal(err, "");
	for (i = 0; i < PY_FRAMES_MAX; i++) {
		assert_string_equal(out[i].func, "deep");
		assert_false(out[i].entry);
	}

	/* a caller's smaller max */
	trunc = false;
	assert_int_equal(pyframes__thread(&f->py, 9, out, 5, &trunc, err, sizeof(err)), 5);
	assert_true(trunc);
}

static void thread__bad_strings__question_mark(void **state)
{
	struct fake *f = *state;
	uint64_t cf = fake_thread(f, 9);
	uint64_t c_huge = fake_code(f, "huge", "/h.py", TABLE_3, sizeof(TABLE_3), 30, 6);
	uint64_t c_legacy = fake_code(f, "legacy", "/l.py", TABLE_3, sizeof(TABLE_3), 50, 6);
	uint64_t c_type = fake_code(f, "typed", "/t.py", TABLE_3, sizeof(TABLE_3), 70, 6);
	uint64_t f2 = fake_frame(f, c_type, 0, 0, true);
	uint64_t f1 = fake_frame(f, c_legacy, 0, f2, false);
	uint64_t f0 = fake_frame(f, c_huge, 3, f1, false);
	uint64_t s;
	struct py_frame out[PY_FRAMES_MAX];
	bool trunc;
	char err[128];

	/* a length of 2^40 */
	memcpy(&s, at(f, c_huge + PY_OFF_CODE_QUALNAME, 8), 8);
	put64(f, s + PY_OFF_STR_LENGTH, 1ULL << 40);
	memcpy(&s, at(f, c_huge + PY_OFF_CODE_FILENAME, 8), 8);
	put64(f, s + PY_OFF_STR_LENGTH, 1ULL << 40);
	/* not compact (a legacy string, whose text is elsewhere) */
	memcpy(&s, at(f, c_legacy + PY_OFF_CODE_QUALNAME, 8), 8);
	put32(f, s + PY_OFF_STR_STATE, 1u << PY_STR_KIND_SHIFT | 1u << PY_STR_ASCII_BIT);
	/* not a str */
	memcpy(&s, at(f, c_type + PY_OFF_CODE_QUALNAME, 8), 8);
	put64(f, s + PY_OFF_OB_TYPE, BYTES_TYPE);
	/* 2-byte characters, so many that the address of the last ones wraps around to
	 * readable memory: 2 * (2^63 + 4) is 8 */
	memcpy(&s, at(f, c_type + PY_OFF_CODE_FILENAME, 8), 8);
	put32(f, s + PY_OFF_STR_STATE, 2u << PY_STR_KIND_SHIFT | 1u << PY_STR_COMPACT_BIT);
	put64(f, s + PY_OFF_STR_LENGTH, (1ULL << 63) + (sizeof(out[0].file) - 1) + 4);
	set_frame(f, cf, f0);
	assert_int_equal(pyframes__open(&f->py), 0);
	assert_int_equal(pyframes__thread(&f->py, 9, out, PY_FRAMES_MAX, &trunc, err,
					  sizeof(err)), 3);
	assert_string_equal(err, "");
	assert_string_equal(out[0].func, "?");
	assert_string_equal(out[0].file, "");
	assert_int_equal(out[0].line, 36);
	assert_string_equal(out[1].func, "?");
	assert_string_equal(out[1].file, "/l.py");
	assert_int_equal(out[1].line, 51);
	assert_string_equal(out[2].func, "?");
	assert_string_equal(out[2].file, "");
	assert_int_equal(out[2].line, 71);
}

static void thread__bad_linetable__line_zero(void **state)
{
	struct fake *f = *state;
	uint64_t cf = fake_thread(f, 9);
	uint64_t c_type = fake_code(f, "a", "/a.py", TABLE_3, sizeof(TABLE_3), 30, 6);
	uint64_t c_size = fake_code(f, "b", "/b.py", TABLE_3, sizeof(TABLE_3), 50, 6);
	uint64_t c_gone = fake_code(f, "c", "/c.py", TABLE_3, sizeof(TABLE_3), 70, 6);
	uint64_t f2 = fake_frame(f, c_gone, 0, 0, true);
	uint64_t f1 = fake_frame(f, c_size, 0, f2, false);
	uint64_t f0 = fake_frame(f, c_type, 0, f1, false);
	uint64_t t;
	struct py_frame out[PY_FRAMES_MAX];
	bool trunc;
	char err[128];

	/* co_linetable a str, not bytes */
	memcpy(&t, at(f, c_type + PY_OFF_CODE_LINETABLE, 8), 8);
	put64(f, t + PY_OFF_OB_TYPE, UNICODE_TYPE);
	/* a size just over what pyframes reads of a table (64 KiB), all of it readable */
	memcpy(&t, at(f, c_size + PY_OFF_CODE_LINETABLE, 8), 8);
	at(f, t + PY_OFF_BYTES_DATA, (64 << 10) + 1);
	put64(f, t + PY_OFF_VAR_SIZE, (64 << 10) + 1);
	/* unmapped */
	put64(f, c_gone + PY_OFF_CODE_LINETABLE, UNMAPPED);
	set_frame(f, cf, f0);
	assert_int_equal(pyframes__open(&f->py), 0);
	assert_int_equal(pyframes__thread(&f->py, 9, out, PY_FRAMES_MAX, &trunc, err,
					  sizeof(err)), 3);
	assert_string_equal(err, "");
	assert_string_equal(out[0].func, "a");
	assert_int_equal(out[0].line, 0);
	assert_string_equal(out[1].func, "b");
	assert_int_equal(out[1].line, 0);
	assert_string_equal(out[2].func, "c");
	assert_int_equal(out[2].line, 0);
}

static void thread__unknown_tid__no_frames(void **state)
{
	struct fake *f = *state;
	uint64_t cf = fake_thread(f, 9);
	uint64_t code = fake_code(f, "g", "/g.py", TABLE_3, sizeof(TABLE_3), 20, 6);
	struct py_frame out[PY_FRAMES_MAX];
	bool trunc = true;
	char err[128] = "junk";

	set_frame(f, cf, fake_frame(f, code, 0, 0, true));
	assert_int_equal(pyframes__open(&f->py), 0);
	assert_int_equal(pyframes__thread(&f->py, 10, out, PY_FRAMES_MAX, &trunc, err,
					  sizeof(err)), 0);
	assert_false(trunc);
	assert_string_equal(err, "");
	/* the known one has its frame: the 0 above is the tid's doing */
	assert_int_equal(pyframes__thread(&f->py, 9, out, PY_FRAMES_MAX, &trunc, err,
					  sizeof(err)), 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(thread__three_frames__innermost_first),
		T(thread__long_filename__keeps_its_end),
		cmocka_unit_test(addr2line__every_form__lines),
		cmocka_unit_test(addr2line__bad_tables__zero),
		T(open__version_3_12__refused),
		T(open__other_3_11_micro__usable),
		T(open__no_py_version__refused),
		T(open__no_thread_state__refused),
		T(open__thread_list_loops__bounded),
		T(open__interp_list_loops__each_thread_once),
		T(thread__frame_is_its_own_previous__loops),
		T(thread__two_frame_cycle__loops),
		T(thread__previous_unmapped__frames_before_kept),
		T(thread__code_not_a_code_object__stops),
		T(thread__100_frames__truncated_at_max),
		T(thread__bad_strings__question_mark),
		T(thread__bad_linetable__line_zero),
		T(thread__unknown_tid__no_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
