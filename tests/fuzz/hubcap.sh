#!/usr/bin/env bash
# libFuzzer on what the hub merges of a node's capture (user/hub/hubcap.c, user/util/jsonp.c),
# with ASan and UBSan: node B's whole trace is the input, next to a valid trace of node A.
# Seeded with a valid trace; bounded in time (FUZZ_SECONDS, default 20). Any crash, leak or
# sanitizer report fails the test.
. "$(dirname "$0")/../lib.sh"
BIN=$TOP/build/fuzz/fuzz_hubcap
[ -x "$BIN" ] || skip "no libFuzzer build (clang with -fsanitize=fuzzer; make fuzz)"
mkdir -p "$T/corpus"
$PY - "$T/corpus" <<'PY' || fail "seed corpus"
import sys
d = sys.argv[1]
ev = ['{"ph":"M","name":"process_name","pid":200,"tid":0,"args":{"name":"rank 1"}}']
for k in range(8):
    ev.append('{"ph":"X","name":"allreduce","cat":"collective","pid":200,"tid":200,'
              f'"ts":{1000 + 1000 * k}.500,"dur":60.250,"args":{{"comm":"mpi:world","seq":{k + 7}}}}}')
    ev.append('{"ph":"s","name":"x","cat":"collective","pid":200,"tid":200,"id":3,"ts":1.0}')
doc = '{"displayTimeUnit":"ms","traceEvents":[\n' + ",\n".join(ev) + "\n]}\n"
for b in (0, 1, 3, 5, 255):
    open(f"{d}/seed{b}", "wb").write(bytes([b]) + doc.encode())
PY
run_fuzz "$BIN" "the hub's merge of node captures" -rss_limit_mb=1024
