#!/usr/bin/env bash
# Never harm the job: gloo::allreduce throws when a peer dies, and the rank catches it. With a
# return probe on it the unwinder would meet the uretprobe trampoline and the process would die
# in std::terminate. TEST DOUBLE: build/fixtures/gloo/libgloo.so.0 has the real mangled
# gloo::allreduce and always throws (a real gloo needs a dead peer to throw).
. "$(dirname "$0")/../lib.sh"
need_root
CALLS=200
bg job "$FIX/gloo_throw" --go-file "$T/go" --calls $CALLS
wait_lines "$T/job.out" '^ready rank=' 1 20 || fail "fixture did not start"
rs_attach rs -p "$(ready_pids "$T/job.out")" --json --events
touch "$T/go"
wait_exit "$PID_job" 30 || fail "the job died under rankscope: $(tail -3 "$T/job.out")"
grep -q "caught=$CALLS" "$T/job.out" || fail "the job did not catch every exception: $(cat "$T/job.out")"
wait_exit "$PID_rs" 60 || fail "rankscope did not exit"
$PY - "$T/rs.out" $CALLS <<'PY' || exit 1
import json, sys
calls = int(sys.argv[2])
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
rank = [d for d in lines if d['type'] == 'rank'][0]
assert rank['collective_probes']['gloo']['sites'] >= 1, rank
got = [d for d in lines if d['type'] == 'collective' and d['lib'] == 'gloo' and d['op'] == 'allreduce']
assert len(got) == calls, f"saw {len(got)} gloo allreduce calls of {calls}"
assert all(d['exit_ns'] is None for d in got), "gloo calls must be entry-only"
PY
pass "$CALLS exceptions thrown through a probed gloo::allreduce, all caught; every call seen"
