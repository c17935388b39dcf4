#!/usr/bin/env bash
# Attach/detach churn under a daemon: CHURN_CYCLES (default 10000) short-lived ranks, 50 at a
# time, each mapping the NCCL test double (TEST DOUBLE: NCCL needs a GPU) and exiting 20-400 ms
# after its start: before the daemon saw it, during its attach (from reading /proc to the
# probes), or after:
#  - the daemon never dies, /healthz answers throughout, every candidate's attach ends in a
#    named result (rankscope_attach_total{result}), most are attached, and every failure it
#    logs names its cause (a rank gone during its attach: "gone");
#  - once the job is gone, its fds, its map entries (rs_tracked, rs_threads, rs_coll_seq,
#    rs_io_inflight) and its RSS (within 5%) are back at the baseline taken after a warm-up
#    round of 2000, and it holds no probe;
#  - then 1,000 more exit 1-50 ms after their start (uniform), which is inside the daemon's
#    attach for most of them (it starts when the exec record is read): the same holds.
# The ranks are one job (TORCHELASTIC_RUN_ID), RANK the slot: a new process takes the rank of
# the one that exited, as a restarted rank does.
. "$(dirname "$0")/../lib.sh"
need_root
[ -x "$FIX/short_rank" ] || skip "no NCCL double (no CUDA toolkit nccl.h)"
command -v bpftool >/dev/null || skip "bpftool not installed (make deps)"
[ "$(rs_progs_left)" = 0 ] || skip "rs_ programs of another rankscope are loaded"
CYCLES=${CHURN_CYCLES:-10000}
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg rsd "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/lock" --retain 1 --rescan 1
for i in $(seq 100); do
	http_get $URL/healthz >/dev/null 2>&1 && break
	sleep 0.1
done

# churn N TAG [LO_MS HI_MS]: N ranks, 50 at a time, each living LO-HI ms (20-400); checks
# /healthz every 500
churn() {
	local lo=${3:-20} hi=${4:-400}
	$PY - "$FIX/short_rank" "$1" "$URL" "$2" "$PID_rsd" "$lo" "$hi" <<'PY' || fail "churn failed"
import os, random, subprocess, sys, time, urllib.request
exe, n, url, tag, daemon = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
lo, hi = int(sys.argv[6]), int(sys.argv[7])
def rss():
    for l in open(f'/proc/{daemon}/status'):
        if l.startswith('VmRSS'):
            return int(l.split()[1])
env = dict(os.environ, WORLD_SIZE='50', TORCHELASTIC_RUN_ID='churn-job')
slots, started, t0, peak = [None] * 50, 0, time.time(), 0
while started < n or any(slots):
    for s, p in enumerate(slots):
        if p is not None and p.poll() is None:
            continue
        slots[s] = None
        if started < n:
            slots[s] = subprocess.Popen([exe, str(random.randint(lo, hi))],
                                        env=dict(env, RANK=str(s), LOCAL_RANK=str(s)))
            started += 1
            if started % 50 == 0:
                peak = max(peak, rss())
            if started % 500 == 0:
                with urllib.request.urlopen(url + '/healthz', timeout=10) as r:
                    assert r.status == 200, r.status
            if started % 2000 == 0:
                print(f'{tag}: {started}/{n} started, {time.time() - t0:.0f} s, '
                      f'daemon RSS {rss()} KiB', flush=True)
    time.sleep(0.002)
print(f'{tag}: {n} ranks in {time.time() - t0:.1f} s, peak daemon RSS {peak} KiB', flush=True)
PY
}
metric() {
	http_get $URL/metrics | tail -n +2 | grep -E "$1" | awk '{s += $NF} END {print s + 0}'
}
# settle: the daemon watches no rank (each exit seen, the job dropped after --retain), and
# its fds and map entries have stopped changing (links closed, trims done)
settle() {
	local i prev="" cur
	for i in $(seq 150); do
		[ "$(metric '^rankscope_ranks ')" = 0 ] && break
		sleep 0.2
	done
	[ "$(metric '^rankscope_ranks ')" = 0 ] ||
		fail "the daemon still watches $(metric '^rankscope_ranks ') ranks 30 s after the churn"
	for i in $(seq 120); do
		sleep 1
		cur=$(state | awk '{print $1, $3}')
		[ "$cur" = "$prev" ] && echo "settled in $i s" && return 0
		prev=$cur
	done
	fail "the daemon's fds and map entries keep changing 2 min after its last rank: $cur"
}
# state: "FDS RSS_KB ENTRIES" of the daemon
state() {
	local pid=$PID_rsd m n=0 c
	for m in rs_tracked rs_threads rs_coll_seq rs_io_inflight; do
		c=$(bpftool -j map dump name "$m" 2>/dev/null | $PY -c '
import json, sys
try:
    print(len(json.load(sys.stdin)))
except ValueError:
    print(0)')
		n=$((n + c))
	done
	echo "$(ls /proc/$pid/fd | wc -l) $(awk '/^VmRSS/ {print $2}' /proc/$pid/status) $n"
}

churn 2000 warm-up
settle
read -r FD0 RSS0 MAP0 <<<"$(state)"
echo "baseline after 2000: $FD0 fds, $RSS0 KiB RSS, $MAP0 map entries"
churn "$CYCLES" churn
settle
read -r FD1 RSS1 MAP1 <<<"$(state)"
echo "after $CYCLES more: $FD1 fds, $RSS1 KiB RSS, $MAP1 map entries"
kill -0 "$PID_rsd" 2>/dev/null || fail "the daemon died: $(tail -5 "$T/rsd.out")"
[ "$FD1" = "$FD0" ] || fail "fds $FD0 -> $FD1"
[ "$MAP1" = "$MAP0" ] || fail "map entries $MAP0 -> $MAP1: $(for m in rs_tracked rs_threads rs_coll_seq rs_io_inflight; do echo "$m:"; bpftool map dump name $m; done)"
[ $((RSS1 * 100)) -le $((RSS0 * 105)) ] || fail "RSS $RSS0 -> $RSS1 KiB (over 5%)"
churn 1000 exit-during-attach 1 50
settle
read -r FD2 RSS2 MAP2 <<<"$(state)"
echo "after 1000 exiting at 1-50 ms: $FD2 fds, $RSS2 KiB RSS, $MAP2 map entries"
kill -0 "$PID_rsd" 2>/dev/null || fail "the daemon died: $(tail -5 "$T/rsd.out")"
[ "$FD2" = "$FD0" ] || fail "fds $FD0 -> $FD2 after the exits during attach"
[ "$MAP2" = "$MAP0" ] || fail "map entries $MAP0 -> $MAP2 after the exits during attach"
[ $((RSS2 * 100)) -le $((RSS0 * 105)) ] || fail "RSS $RSS0 -> $RSS2 KiB (over 5%)"
http_get $URL/metrics | tail -n +2 | grep '^rankscope_attach_total' >"$T/results"
cat "$T/results"
$PY - "$T/results" "$((CYCLES + 3000))" "$T/rsd.out" <<'PY' || exit 1
import re, sys
res = {m[1]: float(m[2]) for m in re.finditer(r'result="(\w+)"\} (\S+)', open(sys.argv[1]).read())}
n = int(sys.argv[2])
total = sum(res.values())
assert res.get('attached', 0) > 0.3 * n, res
assert 0.5 * n <= total <= n, f'{total} results for {n} ranks: {res}'
log = open(sys.argv[3], errors='replace').read()
assert 'AddressSanitizer' not in log and 'runtime error' not in log, 'sanitizer report'
# each failure logged names its cause
odd = [l for l in log.splitlines() if 'failed to' in l and not re.search(
    r'No such process|No such file|\(gone\)|\(not_mapped_file\)|\(symbol_not_found\)', l)]
assert not odd, odd[:5]
gone = sum(1 for l in log.splitlines() if '(gone)' in l) + res.get('gone', 0)
print(f'{total:.0f} candidates of {n} ranks, each with a result: {res}; {gone:.0f} exited during their attach')
PY
kill -TERM "$PID_rsd"
wait_exit "$PID_rsd" 20 || fail "the daemon did not exit on SIGTERM"
left=$(rs_progs_left)
[ "$left" = 0 ] || fail "$left rs_ programs left"
pass "$CYCLES ranks churned: daemon alive, results named, fds/maps at baseline, RSS within 5%"
