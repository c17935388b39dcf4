// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Python frames from CPython 3.11's frame chain: see pyframes.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "procfs.h"
#include "py311_offsets.h"
#include "pyframes.h"

#define PY_STR_MAX	512	/* characters read of a name or a path */
#define PY_TABLE_MAX	(64 << 10)	/* bytes read of a location table */
#define PY_INTERPS_MAX	16

static int vm_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	return procfs__read_mem((pid_t)(intptr_t)ctx, addr, buf, n);
}

static int rd(struct py_target *py, uint64_t addr, void *buf, size_t n)
{
	if (!addr || addr + n < addr)
		return -1;
	return py->read ? py->read(py->ctx, addr, buf, n) :
			  vm_read((void *)(intptr_t)py->pid, addr, buf, n);
}

static int rd_ptr(struct py_target *py, uint64_t addr, uint64_t *v)
{
	return rd(py, addr, v, sizeof(*v));
}

const char *pyframes__built_version(void)
{
	static char s[16];

	snprintf(s, sizeof(s), "%lu.%lu", (PY_BUILT_VERSION >> 24) & 0xff,
		 (PY_BUILT_VERSION >> 16) & 0xff);
	return s;
}

int pyframes__open(struct py_target *py)
{
	uint64_t interp, ts, seen_interp[PY_INTERPS_MAX];
	int ni = 0, n, i;

	py->usable = false;
	py->ntstates = 0;
	py->tstates = NULL;
	if (!py->version_at || rd_ptr(py, py->version_at, &py->version)) {
		snprintf(py->note, sizeof(py->note), "Python frames left out: the interpreter has "
			 "no Py_Version (older than 3.11), and the offsets are for %s",
			 pyframes__built_version());
		return -1;
	}
	if ((py->version >> 16) != (PY_BUILT_VERSION >> 16)) {
		snprintf(py->note, sizeof(py->note), "Python frames left out: the interpreter is "
			 "%lu.%lu.%lu, and the offsets are built for %s (native frames only)",
			 (unsigned long)(py->version >> 24) & 0xff,
			 (unsigned long)(py->version >> 16) & 0xff,
			 (unsigned long)(py->version >> 8) & 0xff, pyframes__built_version());
		return -1;
	}
	py->tstates = calloc(PY_TSTATES_MAX, sizeof(*py->tstates));
	if (!py->tstates) {
		snprintf(py->note, sizeof(py->note), "Python frames left out: out of memory");
		return -1;
	}
	if (rd_ptr(py, py->runtime + PY_OFF_RUNTIME_INTERP_HEAD, &interp)) {
		snprintf(py->note, sizeof(py->note), "Python frames left out: _PyRuntime cannot "
			 "be read");
		return -1;
	}
	/* every interpreter's thread states; a list that loops or goes on is cut */
	while (interp && ni < PY_INTERPS_MAX) {
		for (i = 0; i < ni; i++)
			if (seen_interp[i] == interp)
				goto done;
		seen_interp[ni++] = interp;
		if (rd_ptr(py, interp + PY_OFF_INTERP_THREADS_HEAD, &ts))
			break;
		for (n = 0; ts && py->ntstates < PY_TSTATES_MAX && n < PY_TSTATES_MAX; n++) {
			uint64_t tid;

			if (rd_ptr(py, ts + PY_OFF_TSTATE_NATIVE_ID, &tid))
				break;
			py->tstates[py->ntstates].tid = tid;
			py->tstates[py->ntstates++].tstate = ts;
			if (rd_ptr(py, ts + PY_OFF_TSTATE_NEXT, &ts))
				break;
		}
		if (rd_ptr(py, interp + PY_OFF_INTERP_NEXT, &interp))
			break;
	}
done:
	if (!py->ntstates) {
		snprintf(py->note, sizeof(py->note), "Python frames left out: the interpreter "
			 "has no thread state");
		return -1;
	}
	py->note[0] = 0;
	py->usable = true;
	return 0;
}

void pyframes__close(struct py_target *py)
{
	free(py->tstates);
	py->tstates = NULL;
	py->ntstates = 0;
}

/* A str object's text, printable ASCII (others as '?'); false when it is not a str. */
static bool read_str(struct py_target *py, uint64_t obj, char *out, size_t nout)
{
	uint8_t hdr[PY_STR_COMPACT_SIZE], raw[PY_STR_MAX * 4];
	uint64_t type, len, data;
	unsigned int state, kind;
	size_t n, i, keep, skip;

	out[0] = 0;
	if (rd(py, obj, hdr, sizeof(hdr)))
		return false;
	memcpy(&type, hdr + PY_OFF_OB_TYPE, sizeof(type));
	if (py->unicode_type && type != py->unicode_type)
		return false;
	memcpy(&len, hdr + PY_OFF_STR_LENGTH, sizeof(len));
	memcpy(&state, hdr + PY_OFF_STR_STATE, sizeof(state));
	kind = (state >> PY_STR_KIND_SHIFT) & PY_STR_KIND_MASK;
	if (!(state >> PY_STR_COMPACT_BIT & 1) || (kind != 1 && kind != 2 && kind != 4) ||
	    len > (1u << 30))
		return false;
	data = obj + ((state >> PY_STR_ASCII_BIT & 1) ? PY_STR_ASCII_SIZE : PY_STR_COMPACT_SIZE);
	/* a long path keeps its end: the file name */
	keep = nout - 1 < PY_STR_MAX ? nout - 1 : PY_STR_MAX;
	skip = len > keep ? len - keep : 0;
	n = len - skip;
	if (n && rd(py, data + skip * kind, raw, n * kind))
		return false;
	for (i = 0; i < n; i++) {
		uint32_t c = 0;

		memcpy(&c, raw + i * kind, kind);	/* little-endian: the low bytes */

		out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[n] = 0;
	if (skip && n >= 3)
		memcpy(out, "...", 3);
	return true;
}

static int read_varint(const uint8_t **p, const uint8_t *end)
{
	unsigned int b, v, shift = 0;

	if (*p >= end)
		return 0;
	b = *(*p)++;
	v = b & 63;
	while (b & 64 && *p < end && shift < 24) {
		b = *(*p)++;
		shift += 6;
		v |= (b & 63) << shift;
	}
	return (int)v;
}

static int read_svarint(const uint8_t **p, const uint8_t *end)
{
	unsigned int v = (unsigned int)read_varint(p, end);

	return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
}

/*
 * 3.11's location table: entries of a first byte 1CCCCLLL (code C, L+1 code units) and
 * the bytes that follow it. The line moves by: 0 for the short forms (codes 0-9) and for
 * "no location" (15, which has no line), C-10 for the one-line forms (10-12), and a signed
 * varint for "no columns" (13) and the long form (14).
 */
int pyframes__addr2line(const uint8_t *t, size_t len, int firstlineno, int64_t addr)
{
	const uint8_t *p = t, *end = t + len;
	int64_t start = 0, line = firstlineno;	/* deltas from hostile memory: no int overflow */

	if (addr < 0)
		return firstlineno > 0 ? firstlineno : 0;
	while (p < end) {
		unsigned int b = *p, code = (b >> 3) & 15;
		int64_t units = (b & 7) + 1;
		const uint8_t *q = p + 1;

		if (!(b & 0x80))
			return 0;	/* not the start of an entry: a table we cannot read */
		if (code == 13 || code == 14)
			line += read_svarint(&q, end);
		else if (code >= 10 && code <= 12)
			line += code - 10;
		if (addr < start + units * 2)
			return code == 15 || line < 0 || line > INT32_MAX ? 0 : (int)line;
		start += units * 2;
		for (p = p + 1; p < end && !(*p & 0x80); p++)
			;
	}
	return 0;
}

static int frame_line(struct py_target *py, uint64_t code, const uint8_t *co, uint64_t prev)
{
	uint64_t table, size;
	int32_t first;
	uint8_t *buf;
	int line;

	memcpy(&table, co + PY_OFF_CODE_LINETABLE, sizeof(table));
	memcpy(&first, co + PY_OFF_CODE_FIRSTLINENO, sizeof(first));
	if (rd_ptr(py, table + PY_OFF_VAR_SIZE, &size) || size > PY_TABLE_MAX)
		return 0;
	if (py->bytes_type) {
		uint64_t type;

		if (rd_ptr(py, table + PY_OFF_OB_TYPE, &type) || type != py->bytes_type)
			return 0;
	}
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	line = rd(py, table + PY_OFF_BYTES_DATA, buf, size) ? 0 :
	       pyframes__addr2line(buf, size, first,
				   (int64_t)(prev - (code + PY_OFF_CODE_CODE)));
	free(buf);
	return line;
}

/* A frame of code object code (its first bytes in co) at prev, named. */
static void code_frame(struct py_target *py, uint64_t code, const uint8_t *co, uint64_t prev,
		       bool entry, struct py_frame *f)
{
	uint64_t str;

	memset(f, 0, sizeof(*f));
	memcpy(&str, co + PY_OFF_CODE_QUALNAME, sizeof(str));
	if (!read_str(py, str, f->func, sizeof(f->func)) || !f->func[0])
		snprintf(f->func, sizeof(f->func), "?");
	memcpy(&str, co + PY_OFF_CODE_FILENAME, sizeof(str));
	if (!read_str(py, str, f->file, sizeof(f->file)))
		f->file[0] = 0;
	f->line = frame_line(py, code, co, prev);
	f->entry = entry;
}

int pyframes__code(struct py_target *py, uint64_t code, uint64_t prev_instr, bool entry,
		   struct py_frame *out)
{
	uint8_t co[PY_OFF_CODE_CODE];
	uint64_t type;

	if (rd(py, code, co, sizeof(co)))
		return -1;
	memcpy(&type, co + PY_OFF_OB_TYPE, sizeof(type));
	if (type != py->code_type)
		return -1;
	code_frame(py, code, co, prev_instr, entry, out);
	return 0;
}

int pyframes__thread(struct py_target *py, pid_t tid, struct py_frame *out, int max,
		     bool *truncated, char *err, size_t nerr)
{
	uint64_t ts = 0, cframe, frame, seen[2 * PY_FRAMES_MAX];
	uint8_t fr[PY_FRAME_SIZE], co[PY_OFF_CODE_CODE];
	int i, n = 0, k, depth;
	int32_t first;

	*truncated = false;
	err[0] = 0;
	for (i = 0; i < py->ntstates; i++)
		if (py->tstates[i].tid == (uint64_t)tid)
			ts = py->tstates[i].tstate;
	if (!ts)
		return 0;
	if (rd_ptr(py, ts + PY_OFF_TSTATE_CFRAME, &cframe) ||
	    rd_ptr(py, cframe + PY_OFF_CFRAME_CURRENT, &frame))
		return 0;
	/* depth counts the frames walked, n those kept: a frame still setting up is skipped */
	for (depth = 0; frame; depth++) {
		uint64_t code, prev, type;
		bool entry;

		if (n == max || n == PY_FRAMES_MAX || depth == 2 * PY_FRAMES_MAX) {
			*truncated = true;
			break;
		}
		for (k = 0; k < depth; k++)
			if (seen[k] == frame) {
				snprintf(err, nerr, "corrupt frame chain at depth %d: it loops", depth);
				return n;
			}
		seen[depth] = frame;
		if (rd(py, frame, fr, sizeof(fr))) {
			snprintf(err, nerr, "corrupt frame chain at depth %d: frame %#llx cannot "
				 "be read", depth, (unsigned long long)frame);
			return n;
		}
		memcpy(&code, fr + PY_OFF_FRAME_CODE, sizeof(code));
		memcpy(&prev, fr + PY_OFF_FRAME_PREV_INSTR, sizeof(prev));
		if (rd(py, code, co, sizeof(co)) ||
		    (memcpy(&type, co + PY_OFF_OB_TYPE, sizeof(type)), type != py->code_type)) {
			snprintf(err, nerr, "corrupt frame chain at depth %d: %#llx is not a code "
				 "object", depth, (unsigned long long)code);
			return n;
		}
		entry = fr[PY_OFF_FRAME_IS_ENTRY] != 0;
		memcpy(&first, co + PY_OFF_CODE_FIRSTTRACEABLE, sizeof(first));
		/* a frame still setting up (before its first traceable instruction) is left out,
		 * as CPython's tracebacks leave it out; not an entry frame, which marks where an
		 * evaluation loop's frames end */
		if (!entry && fr[PY_OFF_FRAME_OWNER] != PY_FRAME_OWNED_BY_GENERATOR &&
		    first >= 0 && prev < code + PY_OFF_CODE_CODE + (uint64_t)first * 2) {
			memcpy(&frame, fr + PY_OFF_FRAME_PREVIOUS, sizeof(frame));
			continue;
		}
		code_frame(py, code, co, prev, entry, &out[n++]);
		memcpy(&frame, fr + PY_OFF_FRAME_PREVIOUS, sizeof(frame));
	}
	return n;
}
