#!/usr/bin/env bash
# A rank killed inside a collective, then its PID taken by another process:
#  - 3 ranks of the NCCL test double; rank 2 sleeps 2 s before its first ncclAllReduce, so
#    ranks 0 and 1 wait inside theirs; rank 0 is killed (SIGKILL) 1 s in, with no allreduce
#    finished (checked from the events);
#  - its exit is reported (signal 9), and within 3 s no kernel map rankscope owns holds a key
#    of it: not rs_tracked, not rs_threads, not rs_io_inflight, not rs_coll_seq (the in-flight
#    frame is task storage, freed with the task);
#  - a new process is made to take the same PID (ns_last_pid) and reads files for 2 s: it is not
#    in rs_tracked, and no event is charged to that PID after the exit;
#  - nowhere, in any line rankscope printed, a negative or huge (> 1 h) duration;
#  - once the other ranks are killed, rankscope exits and leaves no rs_ program.
# TEST DOUBLE: NCCL collectives need a GPU (see e2e/nccl_double.sh).
. "$(dirname "$0")/../lib.sh"
need_root
[ -e "$FIX/double/libnccl.so.2" ] || skip "no NCCL double (no CUDA toolkit nccl.h)"
command -v bpftool >/dev/null || skip "bpftool not installed (make deps)"
[ "$(rs_progs_left)" = 0 ] || skip "rs_ programs of another rankscope are loaded"

NCCL_DOUBLE_TIMEOUT_S=300 bg job "$FIX/nccl_ranks" --go-file "$T/go" --nranks 3 --iters 5 \
	--slow-rank 2 --slow-us 2000000
wait_lines "$T/job.out" '^ready rank=' 3 30 || fail "job did not start"
P0=$(sed -n 's/^ready rank=0 pid=//p' "$T/job.out")
PIDS=$(ready_pids "$T/job.out")
rs_attach rs -p "$PIDS" --json --events
touch "$T/go"
wait_lines "$T/rs.out" '"type":"comm_init"' 3 20 || fail "no comm init seen"
sleep 1
kill -KILL "$P0"
wait_lines "$T/rs.out" "\"type\":\"exit\".*\"pid\":$P0[,}]" 1 10 ||
	wait_lines "$T/rs.out" "\"pid\":$P0[,}].*\"type\":\"exit\"" 1 1 || fail "no exit line for PID $P0"
# keys_of PID: "map:key" for every rs_ hash map entry whose key starts with PID (tgid or tid)
keys_of() {
	local m
	for m in rs_tracked rs_threads rs_io_inflight rs_coll_seq; do
		bpftool -j map dump name "$m" 2>/dev/null | $PY -c '
import json, sys
want, name = int(sys.argv[1]), sys.argv[2]
try:
    entries = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
for e in entries:
    k = e.get("key")
    if isinstance(k, list) and len(k) >= 4:
        if int.from_bytes(bytes(int(b, 16) for b in k[:4]), "little") == want:
            print(f"{name}:{k}")
' "$1" "$m"
	done
}
left=""
for i in $(seq 30); do
	left=$(keys_of "$P0")
	[ -z "$left" ] && break
	sleep 0.1
done
[ -z "$left" ] || fail "3 s after rank 0 (PID $P0) died, maps still hold it: $left"
echo "rank 0 (PID $P0) killed inside ncclAllReduce: no map entry left"

# the PID is free once the parent reaped it; make a reader take it
for i in $(seq 50); do
	[ -e /proc/$P0 ] || break
	sleep 0.1
done
[ -e /proc/$P0 ] && fail "PID $P0 not reaped"
$PY - "$P0" "$T/reuse.pid" <<'PY' || fail "could not make a process take PID $P0"
import os, subprocess, sys
want, out = int(sys.argv[1]), sys.argv[2]
reader = ['python3', '-c', 'import time\nt = time.time() + 2\n'
          'while time.time() < t:\n    open("/etc/passwd").read()\n    time.sleep(0.001)']
for _ in range(5000):
    with open('/proc/sys/kernel/ns_last_pid', 'w') as f:
        f.write(str(want - 1))
    p = subprocess.Popen(reader)
    if p.pid == want:
        open(out, 'w').write(str(p.pid))
        p.wait()
        sys.exit(0)
    p.kill()
    p.wait()
sys.exit(1)
PY
echo "PID $P0 taken by a new process that read /etc/passwd for 2 s"
tracked=$(keys_of "$P0" | grep rs_tracked)
[ -z "$tracked" ] || fail "the new process with PID $P0 is tracked: $tracked"

kill -KILL $(ready_pids "$T/job.out" | tr , ' ') 2>/dev/null
wait_exit "$PID_rs" 30 || fail "rankscope did not exit after the ranks died"
left=$(rs_progs_left)
[ "$left" = 0 ] || fail "$left rs_ programs left"
$PY - "$T/rs.out" "$P0" <<'PY' || exit 1
import json, sys
out, p0 = sys.argv[1], int(sys.argv[2])
exited, after, allreduce0, bad, lines = False, [], 0, [], 0
STAMPS = ('enter_ns', 'exit_ns', 't_ns', 'start_ns', 'end_ns', 'ts_ns', 'time_ns', 'join_ns')
def durations(o, path=''):
    if isinstance(o, dict):
        for k, v in o.items():
            p = f'{path}.{k}'
            if isinstance(v, (int, float)) and not isinstance(v, bool) and \
               k.endswith(('_ns', '_us', '_ms', '_s')) and k not in STAMPS and not k.endswith('_at_ns'):
                yield p, v
            else:
                yield from durations(v, p)
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from durations(v, f'{path}[{i}]')
for l in open(out):
    if not l.startswith('{'):
        continue
    d = json.loads(l)
    lines += 1
    if d.get('type') == 'collective':
        if d['exit_ns'] < d['enter_ns'] or d['exit_ns'] - d['enter_ns'] > 3600e9:
            bad.append(('collective', d))
        if d.get('pid') == p0 and d.get('op') == 'allreduce':
            allreduce0 += 1
    for p, v in durations(d):
        if v < 0 or v > 3600e9 * (1 if p.endswith('_ns') else 1e-3 if p.endswith('_us') else 1e-6 if p.endswith('_ms') else 1e-9):
            bad.append((d.get('type'), p, v))
    if d.get('pid') == p0:
        if exited:
            after.append(d)
        if d.get('type') == 'exit':
            exited = True
            assert d.get('exit_code') == 9, d
assert exited, "no exit line"
assert allreduce0 == 0, f"rank 0 finished {allreduce0} allreduces: it was not killed inside one"
assert not bad, bad[:5]
# after its exit: the verdict on it, and stats lines of an exited rank that count nothing
# (the new process with its PID read /etc/passwd a thousand times)
for d in after:
    if d['type'] == 'verdict':
        assert d['class'] == 'rank_exited' and 'signal 9' in d['evidence']['detail'], d
        continue
    assert d['type'] == 'stats' and d['exited'] and not d['collectives'], d
    calls = sum(v['calls'] for k in ('io_read', 'io_write') for v in d[k].values())
    assert calls == 0, ('charged to the dead rank', d)
print(f"{lines} lines: no negative or huge duration; rank 0 exit code 9; nothing charged to PID {p0} after")
PY
pass "killed inside a collective: exit reported, maps clean, reused PID not tracked or charged, nothing negative"
