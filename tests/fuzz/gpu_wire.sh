#!/usr/bin/env bash
# libFuzzer on the daemon's decoder for the CUPTI library's messages (user/gpu/gpu_wire.c), with
# ASan and UBSan, from a seed corpus of valid messages of every type, for a bounded time
# (FUZZ_SECONDS, default 20). Any crash, leak or sanitizer report fails the test.
. "$(dirname "$0")/../lib.sh"
BIN=$TOP/build/fuzz/fuzz_gpu_wire
[ -x "$BIN" ] || skip "no libFuzzer build (clang with -fsanitize=fuzzer; make fuzz)"
mkdir -p "$T/corpus"
$PY - "$T/corpus" <<'PY' || fail "seed corpus"
import struct, sys, os
d = sys.argv[1]
MAGIC, V = 0x31435352, 1
def hdr(t, n): return struct.pack("<IHHII", MAGIC, V, t, n, 0)
st = struct.pack("<IIII QQQQ", os.getpid(), 2, 130001, 1, 10, 1, 2, 3) + b"recording".ljust(96, b"\0")
open(f"{d}/status", "wb").write(hdr(1, 16 + len(st)) + st)
name = b"ncclDevKernel_AllReduce_Sum_f32_RING_LL"
open(f"{d}/name", "wb").write(hdr(2, 24 + len(name)) + struct.pack("<II", 1, len(name)) + name)
recs = b"".join(struct.pack("<BBHIQQQII", k, 1 if k == 2 else 0, 0, 7, 1000 * k, 1000 * k + 500, 1, 9, 0)
                for k in (1, 2, 3, 4, 5))
open(f"{d}/batch", "wb").write(hdr(3, 32 + len(recs)) + struct.pack("<IIQ", 5, 0, 250) + recs)
PY
run_fuzz "$BIN" "gpu_wire decoder"
