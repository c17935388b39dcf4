#!/usr/bin/env bash
# Bad input gets one clear line and the right exit status. (No BTF and no tracefs cannot be
# staged on a running kernel; tests/unit/test_preflight covers their messages.)
. "$(dirname "$0")/../lib.sh"
need_root
expect() {	# expect WANT_RC REGEX CMD...
	local want=$1 re=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	[ "$rc" = "$want" ] || fail "'$*' exited $rc, want $want: $out"
	echo "$out" | grep -qE -e "$re" || fail "'$*' said '$out', want /$re/"
	echo "ok: $* -> $(echo "$out" | grep -E -e "$re" | head -1)"
}
expect 1 'no process with PID 4194000; is it still running' "$RS" attach -p 4194000 --duration 1
expect 2 "invalid PID list 'abc'" "$RS" attach -p abc
expect 2 "invalid PID list '1,,2'" "$RS" attach -p 1,,2
expect 2 'must be a power of two' "$RS" attach -p 1 --ringbuf-kb 6
expect 2 'no target; give -p' "$RS" attach
expect 2 "unknown command 'frobnicate'" "$RS" frobnicate
expect 2 'events needs --json' "$RS" attach -p 1 --events
expect 2 "invalid --duration 'x'" "$RS" attach -p 1 --duration x
expect 2 'attach: --max-ranks is a daemon option' "$RS" attach -p 1 --max-ranks 3
expect 2 "invalid --max-ranks '0': expected a whole number from 1 to 256" "$RS" daemon --max-ranks 0
expect 2 "invalid --lock-file 'rel': give an absolute path" "$RS" daemon --lock-file rel
expect 2 "invalid --listen 'nope'" "$RS" daemon --listen nope --lock-file "$T/l" --duration 1
expect 1 "failed to create $T/missing/dir for the lock file" "$RS" daemon --lock-file "$T/missing/dir/lock"
expect 2 'give -p PIDS or --all, not both' "$RS" attach -p 1 --all
expect 2 '--planned-steps applies to what --listen serves' "$RS" attach -p 1 --planned-steps 5
expect 2 '--max-series applies to what --listen serves' "$RS" diagnose -p 1 --max-series 10
expect 2 '--capture-dir applies to what --listen serves' "$RS" attach -p 1 --capture-dir /tmp
# a capture's output is checked before anything is recorded: at once, exit 2
expect 2 "cannot write -o $T/nodir/x.json: $T/nodir: No such file or directory; nothing was recorded" \
	timeout 5 "$RS" capture -p 1 --seconds 1 -o "$T/nodir/x.json"
expect 2 'cannot write -o /etc/passwd/x.json: /etc/passwd: Not a directory' \
	timeout 5 "$RS" capture -p 1 --seconds 1 -o /etc/passwd/x.json
expect 1 'every probe family was turned off \(--no-sched, --no-io, --no-net, --no-collectives\)' \
	"$RS" attach -p $$ --no-sched --no-io --no-net --no-collectives --duration 1
# a port in use: one line, with the address given (libmicrohttpd's own says port 0)
$PY -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(60)' >"$T/busy" &
BG_PIDS+=($!)
wait_lines "$T/busy" '^[0-9]+$' 1 10 || fail "no busy port"
BUSY=$(cat "$T/busy")
expect 1 "failed to listen on 127.0.0.1:$BUSY \\(port in use" "$RS" attach -p $$ --listen 127.0.0.1:$BUSY --duration 1
n=$("$RS" attach -p $$ --listen "127.0.0.1:$BUSY" --duration 1 2>&1 | grep -ciE 'bind|listen')
[ "$n" = 1 ] || fail "a busy port gave $n lines about it, want 1"
# host names resolve: --server and --listen take localhost
expect 1 'cannot connect to localhost:1: Connection refused' "$RS" capture --server http://localhost:1 -o "$T/x.json"
expect 1 "failed to listen on localhost:$BUSY" "$RS" attach -p $$ --listen localhost:$BUSY --duration 1
# help VERB is that verb's help
expect 0 '^Usage: rankscope attach ' "$RS" help attach
expect 0 '^Usage: rankscope daemon ' "$RS" help daemon
# a process that is not a training job: attach, say so, keep the other families
sleep 30 &
SLEEPER=$!
BG_PIDS+=($SLEEPER)
expect 0 'no collective library' "$RS" attach -p $SLEEPER --duration 2.5 --json
# a process blocked the whole time is ~100% off CPU, not "no data" (the open interval counts)
"$RS" attach -p $SLEEPER -p $SLEEPER --duration 2.5 --json 2>/dev/null | $PY -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin]
ranks = [d for d in lines if d["type"] == "rank"]
assert len(ranks) == 1, f"-p PID -p PID attached {len(ranks)} times"
shares = [d["offcpu_share"] for d in lines if d["type"] == "stats" and d["interval_s"] > 0.5]
assert shares and all(s is not None and s > 0.95 for s in shares), shares
print("ok: blocked process off-CPU share per interval:", shares)' || fail "off-CPU share of a blocked process"
# not root: drop every capability; then root without CAP_SYS_ADMIN and one capability it
# needs: the message names what is missing, and only that
if command -v setpriv >/dev/null; then
	expect 1 'missing CAP_BPF, CAP_PERFMON \(or CAP_SYS_ADMIN\)' setpriv --reuid=65534 \
		--regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
		"$RS" attach -p $SLEEPER --duration 1
	expect 1 'missing CAP_BPF, CAP_PERFMON \(or CAP_SYS_ADMIN\)' setpriv --reuid=65534 \
		--regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
		"$RS" attach --all --duration 1
	# kernel.perf_event_paranoid=3 (Debian's level: no perf event without CAP_SYS_ADMIN): named
	OLD_PARANOID=$(cat /proc/sys/kernel/perf_event_paranoid)
	if echo 3 >/proc/sys/kernel/perf_event_paranoid 2>/dev/null; then
		trap 'echo "$OLD_PARANOID" >/proc/sys/kernel/perf_event_paranoid; cleanup' EXIT
		expect 1 'kernel.perf_event_paranoid is 3: at 3 or more the kernel opens no perf event' \
			setpriv --inh-caps=-sys_admin,-perfmon --bounding-set=-sys_admin,-perfmon \
			"$RS" attach -p $SLEEPER --duration 1
		echo "$OLD_PARANOID" >/proc/sys/kernel/perf_event_paranoid
	fi
	for c in bpf perfmon; do
		C=$(echo "$c" | tr a-z A-Z)
		expect 1 "missing CAP_$C \\(or CAP_SYS_ADMIN\\)" setpriv \
			--inh-caps=-sys_admin,-$c --bounding-set=-sys_admin,-$c \
			"$RS" attach -p $SLEEPER --duration 1
	done
fi
pass "errors are one line with the fix"
