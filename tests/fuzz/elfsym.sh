#!/usr/bin/env bash
# libFuzzer on the ELF symbol reader (user/sys/elfsym.c) given bytes as a library from a
# container: seeded with a real small shared library and its truncations, with ASan and
# UBSan and a 1 GiB memory limit, for a bounded time (FUZZ_SECONDS, default 20). Any crash,
# leak, sanitizer report or memory blow-up fails the test.
. "$(dirname "$0")/../lib.sh"
mkdir -p "$T/seed"
lib=
for f in "$TOP/build/fixtures/double/libnccl.so.2" /usr/lib/x86_64-linux-gnu/libdl.so.2 \
	/usr/lib/x86_64-linux-gnu/libpthread.so.0; do
	[ -f "$f" ] && [ "$(stat -L -c %s "$f")" -le 65536 ] && lib=$f && break
done
[ -n "$lib" ] || skip "no shared library of at most 64 KiB to seed with"
cp -L "$lib" "$T/seed/lib"
$PY - "$T/seed" <<'PY' || fail "seed corpus"
import sys
d = sys.argv[1]
b = open(f"{d}/lib", "rb").read()
for n in (16, 52, 64, 200, len(b) // 2, len(b) - 1):
    open(f"{d}/trunc{n}", "wb").write(b[:n])
PY
fuzz_target elfsym "the ELF symbol reader" "$T/seed"
pass "the ELF symbol reader fuzzed for ${FUZZ_SECONDS:-20} s without a finding"
