#!/usr/bin/env bash
# libFuzzer on the JSON writer's string escaping (user/util/json.c), read back by the hub's
# parser, with ASan and UBSan, from tests/fuzz/corpus/json, for a bounded time (FUZZ_SECONDS,
# default 20). Then every input of the grown corpus is written out as a document and each must
# load with Python's json module, as a capture reader would.
. "$(dirname "$0")/../lib.sh"
fuzz_target json "the JSON string escaper"
mkdir -p "$T/out"
FUZZ_JSON_OUT=$T/out "$TOP/build/fuzz/fuzz_json" -runs=0 "$T/corpus" >"$T/replay.log" 2>&1 ||
	fail "replaying the corpus failed: $(tail -3 "$T/replay.log")"
$PY - "$T/out" <<'PY' || fail "Python's json could not read a document"
import json, os, sys
d = sys.argv[1]
files = os.listdir(d)
for f in files:
    doc = json.loads(open(os.path.join(d, f), "rb").read().decode("utf-8"))
    assert isinstance(doc.get("frame"), str), f
assert files, "no document written"
print(f"python json read all {len(files)} documents of the fuzzed corpus")
PY
pass "the JSON string escaper's documents read back"
