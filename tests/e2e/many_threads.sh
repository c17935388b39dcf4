#!/usr/bin/env bash
# One rank with 5,000 threads (each waking twice a second) and a main thread that calls
# ncclAllReduce 300 times, watched twice:
#  - default --max-threads (65,536): every thread gets its entry in rs_threads, none is
#    evicted (the final self line's lru_maps says 0), nothing is dropped, every allreduce is
#    counted, and rankscope exits cleanly with the rank;
#  - --max-threads 2048: the LRU map is full and pushes entries out; the evictions are
#    counted (at least 5,000 - 2,048: every thread got an entry, at most 2,048 are there) in
#    the self line and in rankscope_map_evictions_total, and the rank's other data stays
#    right (every allreduce counted, nothing dropped).
# Then a rank (RANK=0 in its environ) forks 40 workers under --max-processes 16: the 25 that
# find rs_tracked full are counted in rankscope_map_full_total{family="sched"}, every fork is
# still reported (40 fork records), and nothing crashes.
# TEST DOUBLE: NCCL collectives need a GPU (see e2e/nccl_double.sh).
. "$(dirname "$0")/../lib.sh"
need_root
[ -x "$FIX/threads_rank" ] || skip "no NCCL double (no CUDA toolkit nccl.h)"
command -v bpftool >/dev/null || skip "bpftool not installed (make deps)"
N=5000
CALLS=300
CAP=2048

# run NAME RANKSCOPE_ARGS...: start the rank, attach, go; sets P
run() {
	local name=$1
	shift
	bg "job$name" "$FIX/threads_rank" --go-file "$T/go$name" --threads $N --calls $CALLS
	wait_lines "$T/job$name.out" '^ready rank=0' 1 60 ||
		fail "job did not start: $(cat "$T/job$name.out")"
	P=$(sed -n 's/^ready rank=0 pid=//p' "$T/job$name.out")
	[ "$(ls /proc/$P/task | wc -l)" -gt $N ] ||
		fail "the rank has $(ls /proc/$P/task | wc -l) threads"
	rs_attach "rs$name" -p "$P" --json --events "$@"
	touch "$T/go$name"
}

# finish NAME: the rank and rankscope end; every allreduce counted, nothing dropped
finish() {
	local name=$1 pj pr
	pj=$(eval echo "\$PID_job$name")
	pr=$(eval echo "\$PID_rs$name")
	wait_exit "$pj" 120 || fail "job failed"
	grep -q "^done calls=$CALLS threads=$N" "$T/job$name.out" ||
		fail "job: $(cat "$T/job$name.out")"
	wait_exit "$pr" 30 || fail "rankscope did not exit after the rank"
}

# check OUT MIN_EVICTED MAX_EVICTED: the final self line and the collectives
check() {
	$PY - "$@" "$CALLS" "$N" <<'PY' || exit 1
import json, sys
out, lo, hi, calls, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ev = [json.loads(l) for l in open(out) if l.startswith('{')]
ar = sum(1 for d in ev if d['type'] == 'collective' and d['op'] == 'allreduce')
final = [d for d in ev if d['type'] == 'self' and d.get('final')]
assert final, 'no final self line'
dropped = final[-1]['events_dropped']
assert ar == calls, f'{ar} allreduces seen, {calls} made'
assert dropped == 0, final[-1]['families']
th = final[-1]['lru_maps']['rs_threads']
assert th['entries'] <= th['capacity'], th
assert lo <= th['evicted'] <= hi, (lo, hi, th)
peak = max(d['lru_maps']['rs_threads']['entries'] for d in ev if d['type'] == 'self')
print(f'{ar} allreduces counted, nothing dropped; rs_threads: peak {peak} entries of '
      f'{th["capacity"]}, {th["evicted"]} evicted')
PY
}

# default capacity: each thread gets its entry when it first wakes or runs after the attach
run a
for i in $(seq 30); do
	sleep 0.5
	ENTRIES=$(bpftool -j map dump name rs_threads 2>/dev/null | $PY -c '
import json, sys
print(len(json.load(sys.stdin)))')
	[ "$ENTRIES" -ge "$N" ] && break
done
echo "rs_threads holds $ENTRIES entries with $N threads running ($((i / 2)) s after the go)"
[ "$ENTRIES" -ge "$N" ] || fail "only $ENTRIES of $N threads in rs_threads after 15 s"
finish a
check "$T/rsa.out" 0 0

# a map smaller than the rank: evictions, counted
PORT=$(free_port)
run b --max-threads $CAP --listen 127.0.0.1:$PORT
for i in $(seq 60); do
	sleep 0.5
	http_get "http://127.0.0.1:$PORT/metrics" | tail -n +2 >"$T/metrics.txt"
	EV=$(sed -n 's/^rankscope_map_evictions_total{map="rs_threads"} //p' "$T/metrics.txt")
	[ "${EV:-0}" -ge $((N - CAP)) ] && break
done
echo "rankscope_map_evictions_total{map=\"rs_threads\"} $EV after $((i / 2)) s"
[ "${EV:-0}" -ge $((N - CAP)) ] ||
	fail "evictions not counted: $(grep 'rankscope_map_' "$T/metrics.txt")"
TRAP=$(sed -n 's/^rankscope_probe_trap_seconds //p' "$T/metrics.txt")
$PY -c "import sys; t = float(sys.argv[1]); sys.exit(not 0 < t < 5e-5)" "${TRAP:-0}" ||
	fail "rankscope_probe_trap_seconds is '${TRAP:-missing}': not measured at start"
echo "a probed call's traps, measured at start: $TRAP s"
grep -q '^rankscope_map_capacity{map="rs_threads"} '$CAP'$' "$T/metrics.txt" ||
	fail "capacity: $(grep 'rankscope_map_capacity' "$T/metrics.txt")"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/metrics.txt" >"$T/promtool.txt" 2>&1 ||
		fail "promtool check metrics: $(head -3 "$T/promtool.txt")"
fi
finish b
check "$T/rsb.out" $((N - CAP)) 100000000
# rs_tracked full: forked workers past --max-processes
PORT=$(free_port)
RANK=0 bg forker $PY -c '
import os, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
kids = []
for i in range(40):
    pid = os.fork()
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
print("forked", len(kids), flush=True)
time.sleep(1.5)' "$T/gof"
rs_attach rsf -p "$PID_forker" --json --events --max-processes 16 --listen 127.0.0.1:$PORT
touch "$T/gof"
wait_lines "$T/forker.out" '^forked 40' 1 30 || fail "the forker: $(cat "$T/forker.out")"
http_get "http://127.0.0.1:$PORT/metrics" | tail -n +2 >"$T/metricsf.txt"
FULL=$(sed -n 's/^rankscope_map_full_total{family="sched"} //p' "$T/metricsf.txt")
FORKS=$(grep -c '"type":"fork"' "$T/rsf.out")
echo "40 workers, rs_tracked of 16 (the rank holds 1): map_full $FULL, $FORKS fork records"
[ "$FORKS" = 40 ] || fail "$FORKS fork records of 40 forks"
[ "${FULL:-0}" -ge 25 ] && [ "${FULL:-0}" -le 40 ] ||
	fail "rankscope_map_full_total{family=\"sched\"} is ${FULL:-missing}, expected 25-40"
wait_exit "$PID_rsf" 30 || fail "rankscope did not exit after the rank"
pass "5000 threads in one rank: all in rs_threads; in a 2048-entry map the evictions are counted; nothing dropped, every allreduce counted"
