#!/usr/bin/env bash
# libFuzzer on what node daemons send the hub (user/hub/hub.c, user/util/jsonp.c), with ASan and UBSan:
# ranks, step, diagnosis and jobs answers for four nodes, node failures, and every few inputs a
# judgement and every document rendered. Seeded with valid answers; bounded in time
# (FUZZ_SECONDS, default 20). Any crash, leak or sanitizer report fails the test.
. "$(dirname "$0")/../lib.sh"
BIN=$TOP/build/fuzz/fuzz_hub
[ -x "$BIN" ] || skip "no libFuzzer build (clang with -fsanitize=fuzzer; make fuzz)"
mkdir -p "$T/corpus"
$PY - "$T/corpus" <<'PY' || fail "seed corpus"
import json, sys
d = sys.argv[1]
def put(name, kind, node, doc):
    open(f"{d}/{name}", "wb").write(bytes([kind << 2 | node]) + json.dumps(doc).encode())
for node in range(2):
    put(f"ranks{node}", 0, node, [{"type": "rank", "job": "j", "rank": 2 * node + r, "pid": 9,
                                   "world_size": 4} for r in range(2)])
    steps = [{"type": "step", "job": "j", "rank": 2 * node + r, "step": k, "start_ns": 10**9 * k,
              "dur_ns": 10**7 + k * 997 % 3000000, "phases": {"compute": 6 * 10**6, "comm": 10**6}}
             for k in range(1, 40) for r in range(2)]
    put(f"steps{node}", 1, node, {"cursor": 80, "lost": 0, "more": False, "steps": steps})
    put(f"diag{node}", 3, node, [{"type": "verdict", "job": "j", "class": "hang", "rank": 1,
                                  "evidence": {"detail": "stopped"}}])
    put(f"jobs{node}", 4, node, [{"type": "job", "job": "j", "state": "running",
                                  "run_id": 1.7e9 + node, "failures": {"signal": 1 - node,
                                  "exit_code": node, "hang": 0}, "recoveries": 1,
                                  "lost_steps_total": 3, "lost_step_seconds_total": 0.9,
                                  "last_failure": {"reason": "signal", "rank": 1, "signal": 9,
                                                   "phase": "compute", "at": 1.7e9 + node,
                                                   "checkpoint_age_seconds": 1.5,
                                                   "checkpoint_seen": node == 0,
                                                   "lost_steps": 3, "detail": "x"},
                                  "last_recovery": {"seconds": 9, "at": 1.7e9 + 9,
                                                    "in_place": False},
                                  "timeline": [{"t": 1.7e9, "event": "failed", "detail": "x"}]}])
open(f"{d}/up", "wb").write(bytes([5 << 2]) + b"\0")
PY
run_fuzz "$BIN" "the hub's readers of node answers" -rss_limit_mb=1024
