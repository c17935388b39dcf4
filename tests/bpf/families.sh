#!/usr/bin/env bash
# Root: every family loads and attaches to a fixture process; a worker forked after attach
# inherits the rank (its reads are charged to it), and fork and exit are events.
. "$(dirname "$0")/../lib.sh"
need_root
head -c 4M /dev/urandom >"$T/data"
READS=100
RANK=0 WORLD_SIZE=1 bg job "$FIX/fork_reader" --go-file "$T/go" --read-file "$T/data" --reads $READS
wait_lines "$T/job.out" '^ready rank=' 1 20 || fail "fixture did not start"
PID=$(ready_pids "$T/job.out")
rs_attach rs -p "$PID" --json --events --io-min-us 0
touch "$T/go"
wait_exit "$PID_job" 30 || fail "fixture failed"
wait_exit "$PID_rs" 60 || fail "rankscope did not exit"
$PY - "$T/job.out" "$T/rs.out" $READS <<'PY' || exit 1
import json, re, sys
reads = int(sys.argv[3])
m = re.search(r'done rank=0 pid=(\d+) child_pid=(\d+)', open(sys.argv[1]).read())
parent, child = int(m[1]), int(m[2])
lines = [json.loads(l) for l in open(sys.argv[2]) if l.startswith('{')]
rank = [d for d in lines if d['type'] == 'rank'][0]
assert rank['probes'] == ['sched', 'io', 'net'], rank['probes']   # no collective library here
assert rank['rank'] == 0 and rank['rank_source'] == 'environ', rank
forks = [d for d in lines if d['type'] == 'fork']
assert any(d['child'] == child and d['tgid'] == parent for d in forks), forks
child_reads = [d for d in lines if d['type'] == 'io' and d['tgid'] == child and d['syscall'] == 'pread64']
assert len(child_reads) == reads, f"child pread64 events {len(child_reads)} != {reads}"
assert all(d['rank'] == 0 and d['fd_kind'] == 'file' and d['ret'] == 65536 for d in child_reads)
exits = {d['tgid']: d for d in lines if d['type'] == 'exit'}
assert child in exits and exits[child]['is_rank'] == 0, exits
assert parent in exits and exits[parent]['is_rank'] == 1, exits
offcpu = [d for d in lines if d['type'] == 'offcpu']
assert offcpu, "no off-CPU intervals (the parent waits for its child)"
PY
pass "sched, io and net loaded; forked worker inherits the rank; fork and exit seen"
