#!/usr/bin/env bash
# Drop accounting: a deliberately tiny ring buffer (4 KiB), every I/O syscall streamed
# (--io-min-us 0) and a slow drain, against a storm of 1-byte pipe reads/writes. Events
# attempted == received + dropped exactly, drops happen, and the job is not blocked.
. "$(dirname "$0")/../lib.sh"
need_root
CALLS=100000
bg job "$FIX/storm" --go-file "$T/go" --calls $CALLS
wait_lines "$T/job.out" '^ready rank=' 1 20 || fail "storm did not start"
PID=$(ready_pids "$T/job.out")
rs_attach rs -p "$PID" --json --ringbuf-kb 4 --io-min-us 0 --drain-ms 500
touch "$T/go"
wait_exit "$PID_job" 120 || fail "storm was blocked or failed"
wait_exit "$PID_rs" 60 || fail "rankscope did not exit"
$PY - "$T/job.out" "$T/rs.out" $CALLS <<'PY' || exit 1
import json, re, sys
calls = int(sys.argv[3])
m = re.search(r'done rank=0 pid=\d+ read_calls=(\d+) write_calls=(\d+)', open(sys.argv[1]).read())
assert m and int(m[1]) == calls, "storm did not complete its calls"
final = [json.loads(l) for l in open(sys.argv[2]) if '"type":"self"' in l and '"final":true' in l]
assert final, "no final self line"
f = final[-1]
print({k: f[k] for k in ('events_attempted', 'events_received', 'events_dropped')})
assert f['events_attempted'] == f['events_received'] + f['events_dropped'], f
for fam, v in f['families'].items():
    assert v['attempted'] == v['received'] + v['dropped'], (fam, v)
assert f['families']['io']['dropped'] > 0, "a 4 KiB ring buffer under a storm must drop"
assert f['families']['io']['attempted'] >= 2 * calls, f['families']['io']
PY
pass "attempted == received + dropped with drops, job not blocked"
