#!/usr/bin/env bash
# libFuzzer on the CPython 3.11 frame walker (user/sys/pyframes.c), with ASan and UBSan: the
# input is the whole memory of a target process (layout in tests/fuzz/fuzz_pyframes.c).
# Seeded with a valid memory image, laid out with the generated offsets, in which a thread
# runs a 2-frame chain, and with variants of it that take the other exits (another version,
# no Py_Version, unchecked types, a small max, a chain that loops). Bounded in time
# (FUZZ_SECONDS, default 20).
# Any crash, leak, sanitizer report or broken promise of pyframes.h fails the test.
. "$(dirname "$0")/../lib.sh"
BIN=$TOP/build/fuzz/fuzz_pyframes
OFFS=$TOP/build/obj/gen/py311_offsets.h
[ -x "$BIN" ] || skip "no libFuzzer build (clang with -fsanitize=fuzzer; make fuzz)"
[ -r "$OFFS" ] || skip "no $OFFS (make build/fuzz/fuzz_pyframes)"
mkdir -p "$T/corpus"
$PY - "$T/corpus" "$OFFS" <<'PY' || fail "seed corpus"
import re, struct, sys
d, offs = sys.argv[1], sys.argv[2]
O = {m[0]: int(m[1], 0)
     for m in re.findall(r"#define (PY_\w+) (\w+?)U?L?$", open(offs).read(), re.M)}
BASE, CODE_T, STR_T, BYTES_T = 0x10000000, 0x30000000, 0x30000100, 0x30000200
mem = bytearray(64)
def alloc(n):
    at = (len(mem) + 15) & ~15
    mem.extend(bytes(at + n - len(mem)))
    return at
def put(at, fmt, *v):
    struct.pack_into("<" + fmt, mem, at, *v)
def s(text):
    o = alloc(O["PY_STR_ASCII_SIZE"] + len(text) + 1)
    put(o + O["PY_OFF_OB_TYPE"], "Q", STR_T)
    put(o + O["PY_OFF_STR_LENGTH"], "Q", len(text))
    put(o + O["PY_OFF_STR_STATE"], "I", 1 << O["PY_STR_KIND_SHIFT"] |
        1 << O["PY_STR_COMPACT_BIT"] | 1 << O["PY_STR_ASCII_BIT"] | 1 << 7)
    mem[o + O["PY_STR_ASCII_SIZE"]:o + O["PY_STR_ASCII_SIZE"] + len(text)] = text.encode()
    return BASE + o
def b(data):
    o = alloc(O["PY_OFF_BYTES_DATA"] + len(data) + 1)
    put(o + O["PY_OFF_OB_TYPE"], "Q", BYTES_T)
    put(o + O["PY_OFF_VAR_SIZE"], "Q", len(data))
    mem[o + O["PY_OFF_BYTES_DATA"]:o + O["PY_OFF_BYTES_DATA"] + len(data)] = data
    return BASE + o
# a 3.11 location table: units 0-1 line + 1, 2-4 line + 5 (no columns), 5 line - 2 (long form)
TABLE = bytes([0x80 | 11 << 3 | 1, 2, 6, 0x80 | 13 << 3 | 2, 10, 0x80 | 14 << 3, 5, 0, 4, 8])
def code(qual, fn, first):
    o = alloc(O["PY_OFF_CODE_CODE"] + 12)
    put(o + O["PY_OFF_OB_TYPE"], "Q", CODE_T)
    put(o + O["PY_OFF_CODE_QUALNAME"], "Q", s(qual))
    put(o + O["PY_OFF_CODE_NAME"], "Q", s(qual.split(".")[-1]))
    put(o + O["PY_OFF_CODE_FILENAME"], "Q", s(fn))
    put(o + O["PY_OFF_CODE_LINETABLE"], "Q", b(TABLE))
    put(o + O["PY_OFF_CODE_FIRSTLINENO"], "i", first)
    return BASE + o
def frame(co, unit, prev, entry):
    o = alloc(O["PY_FRAME_SIZE"])
    put(o + O["PY_OFF_FRAME_CODE"], "Q", co)
    put(o + O["PY_OFF_FRAME_PREVIOUS"], "Q", prev)
    put(o + O["PY_OFF_FRAME_PREV_INSTR"], "Q", co + O["PY_OFF_CODE_CODE"] + 2 * unit)
    mem[o + O["PY_OFF_FRAME_IS_ENTRY"]] = entry
    return BASE + o
def thread(tid, current, nxt):
    ts = alloc(O["PY_OFF_TSTATE_NATIVE_ID"] + 8)
    cf = alloc(O["PY_OFF_CFRAME_CURRENT"] + 8)
    put(ts + O["PY_OFF_TSTATE_NEXT"], "Q", nxt)
    put(ts + O["PY_OFF_TSTATE_NATIVE_ID"], "Q", tid)
    put(ts + O["PY_OFF_TSTATE_CFRAME"], "Q", BASE + cf)
    put(cf + O["PY_OFF_CFRAME_CURRENT"], "Q", current)
    return BASE + ts
runtime = alloc(O["PY_OFF_RUNTIME_INTERP_HEAD"] + 8)
assert runtime == 64
outer = frame(code("<module>", "/srv/train.py", 1), 0, 0, 1)
inner = frame(code("Trainer.step", "/srv/trainer.py", 40), 3, outer, 0)
ts = thread(1001, inner, thread(1002, 0, 0))
interp = alloc(O["PY_OFF_INTERP_THREADS_HEAD"] + 8)
put(interp + O["PY_OFF_INTERP_THREADS_HEAD"], "Q", ts)
put(runtime + O["PY_OFF_RUNTIME_INTERP_HEAD"], "Q", BASE + interp)
put(12, "i", 10)			# firstlineno for the table decoder
put(16, "q", 6)				# and an address in it
put(24, "QQQ", 1001, 1002, 0xdead)	# the tids asked for (the thread states' too)
mem.extend(TABLE)			# a table at the end, for the decoder
def seed(name, flags, version=0, image=mem):
    m = bytearray(image)
    struct.pack_into("<QI", m, 0, version, flags)
    open(f"{d}/{name}", "wb").write(m)
loop = bytearray(mem)				# the outer frame's caller is the inner one
struct.pack_into("<Q", loop, outer - BASE + O["PY_OFF_FRAME_PREVIOUS"], inner)
seed("valid", 1)					# F_VERSION
seed("valid_raw", 0, O["PY_BUILT_VERSION"])		# Py_Version in the input itself
seed("py312", 0, 0x030C01F0)
seed("no_version", 2 | 1)
seed("no_types", 1 | 4 | 8)
seed("max1", 1 | 16 | 32 | 1 << 8 | 7 << 16)		# max 1, err of 8 bytes
seed("loop", 1, image=loop)
PY
run_fuzz "$BIN" "the CPython 3.11 frame walker" -rss_limit_mb=1024
