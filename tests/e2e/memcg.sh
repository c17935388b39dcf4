#!/usr/bin/env bash
# The daemon in a memory cgroup too small for its probes: it says so at start and exits 1,
# naming the map that does not fit, its size, the limit and the file that sets it; it is never
# OOM-killed (no kill in the cgroup's counters). In 64 MiB it runs and serves /healthz.
. "$(dirname "$0")/../lib.sh"
need_root
PORT=$(free_port)
# mkcg NAME BYTES: a memory cgroup (v2 memory.max, else v1 memory.limit_in_bytes); prints its dir
mkcg() {
	local d
	if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		d=/sys/fs/cgroup/rs-test-$1-$$
		mkdir "$d" && echo "$2" >"$d/memory.max" && echo "$d"
	elif [ -d /sys/fs/cgroup/memory ]; then
		d=/sys/fs/cgroup/memory/rs-test-$1-$$
		mkdir "$d" && echo "$2" >"$d/memory.limit_in_bytes" && echo "$d"
	fi
}
ooms() {	# OOM kills in cgroup dir $1
	if [ -e "$1/memory.events" ]; then
		awk '/^oom_kill / {print $2}' "$1/memory.events"
	else
		awk '/^oom_kill / {print $2}' "$1/memory.oom_control"
	fi
}
CGS=()
trap 'for d in "${CGS[@]}"; do rmdir "$d" 2>/dev/null; done; cleanup' EXIT
small=$(mkcg small $((16 << 20))) || true
[ -n "$small" ] || skip "no memory cgroup controller to put the daemon in"
CGS+=("$small")
sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" daemon --listen 127.0.0.1:$3 --lock-file "$4"' \
	sh "$small" "$RS" "$PORT" "$T/lock" >"$T/small.out" 2>&1
rc=$?
cat "$T/small.out"
[ $rc = 1 ] || fail "exit $rc in 16 MiB, want 1 (137: OOM-killed)"
grep -qE 'not loading .*the largest, rs_[a-z_]+, [0-9.]+ MiB.*memory limit of 16.0 MiB \('"$small"'/memory\.(max|limit_in_bytes)\); raise it' "$T/small.out" ||
	fail "no line names the map, its size, the limit and its file"
[ "$(ooms "$small")" = 0 ] || fail "OOM kills in the cgroup: $(ooms "$small")"

big=$(mkcg big $((64 << 20)))
CGS+=("$big")
bg rsd sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" daemon --listen 127.0.0.1:$3 --lock-file "$4"' \
	sh "$big" "$RS" "$PORT" "$T/lock"
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 || fail "no start in 64 MiB: $(cat "$T/rsd.out")"
sleep 2
[ "$(http_get http://127.0.0.1:$PORT/healthz | sed -n 1p)" = 200 ] || fail "/healthz in 64 MiB"
kill -TERM "$PID_rsd"
wait_exit "$PID_rsd" 20 || fail "no exit on SIGTERM"
[ "$(ooms "$big")" = 0 ] || fail "OOM kills in 64 MiB"
pass "16 MiB: a clear start error naming the map, exit 1, no OOM kill; 64 MiB: runs and serves"
