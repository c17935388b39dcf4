#!/usr/bin/env bash
# One rank with 5,000 threads (each waking twice a second) and a main thread that calls
# ncclAllReduce 300 times: every thread gets its entry in rs_threads (an LRU of 65,536: they
# fit, none is evicted), nothing is dropped, every allreduce is counted, and rankscope exits
# cleanly with the rank.
# TEST DOUBLE: NCCL collectives need a GPU (see e2e/nccl_double.sh).
. "$(dirname "$0")/../lib.sh"
need_root
[ -x "$FIX/threads_rank" ] || skip "no NCCL double (no CUDA toolkit nccl.h)"
command -v bpftool >/dev/null || skip "bpftool not installed (make deps)"
N=5000
CALLS=300
bg job "$FIX/threads_rank" --go-file "$T/go" --threads $N --calls $CALLS
wait_lines "$T/job.out" '^ready rank=0' 1 60 || fail "job did not start: $(cat "$T/job.out")"
P=$(sed -n 's/^ready rank=0 pid=//p' "$T/job.out")
[ "$(ls /proc/$P/task | wc -l)" -gt $N ] || fail "the rank has $(ls /proc/$P/task | wc -l) threads"
rs_attach rs -p "$P" --json --events
touch "$T/go"
# each thread gets its entry when it first wakes or runs after the attach
for i in $(seq 30); do
	sleep 0.5
	ENTRIES=$(bpftool -j map dump name rs_threads 2>/dev/null | $PY -c '
import json, sys
print(len(json.load(sys.stdin)))')
	[ "$ENTRIES" -ge "$N" ] && break
done
echo "rs_threads holds $ENTRIES entries with $N threads running ($((i / 2)) s after the go)"
[ "$ENTRIES" -ge "$N" ] || fail "only $ENTRIES of $N threads in rs_threads after 15 s"
wait_exit "$PID_job" 120 || fail "job failed"
grep -q "^done calls=$CALLS threads=$N" "$T/job.out" || fail "job: $(cat "$T/job.out")"
wait_exit "$PID_rs" 30 || fail "rankscope did not exit after the rank"
$PY - "$T/rs.out" "$P" "$CALLS" <<'PY' || exit 1
import json, sys
out, pid, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ev = [json.loads(l) for l in open(out) if l.startswith('{')]
ar = sum(1 for d in ev if d['type'] == 'collective' and d['op'] == 'allreduce')
final = [d for d in ev if d['type'] == 'self' and d.get('final')]
assert final, 'no final self line'
dropped = final[-1]['events_dropped']
assert ar == calls, f'{ar} allreduces seen, {calls} made'
assert dropped == 0, final[-1]['families']
offcpu = sum(1 for d in ev if d['type'] == 'offcpu')
print(f'{ar} allreduces counted, nothing dropped, {offcpu} off-CPU records')
PY
pass "5000 threads in one rank: all in rs_threads, nothing dropped, every allreduce counted"
