#!/usr/bin/env bash
# A CPU taken offline under load and brought back (echo 0, then 1, > .../cpuN/online): the
# daemon lives; records keep coming while it is away; once it is back, a rank pinned to it
# (taskset) has its records received (they come from that CPU); and the per-CPU event counters
# stay consistent (received + dropped never above attempted, none of them going backwards).
# The CPU is put back online at exit, whatever happens.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
CPU=$(($(nproc --all) - 1))
ONLINE=/sys/devices/system/cpu/cpu$CPU/online
[ "$CPU" -ge 1 ] && [ -w "$ONLINE" ] || skip "no CPU that can be taken offline here"
trap 'echo 1 >"$ONLINE" 2>/dev/null; cleanup' EXIT
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg rsd "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/lock"
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 || fail "daemon did not start"
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go" \
	--iters 100000 --compute-us 1000
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start"
wait_lines "$T/rsd.out" 'attached to PID' 2 20 || fail "the daemon did not attach"
touch "$T/go"
counters() {	# attempted received dropped, over every family
	http_get $URL/metrics | tail -n +2 >"$T/m"
	for k in attempted received dropped; do
		grep -E "^rankscope_events_${k}_total" "$T/m" | awk '{s += $NF} END {printf "%d ", s}'
	done
}
sleep 2
read -r A0 R0 D0 <<<"$(counters)"
echo 0 >"$ONLINE" || skip "CPU $CPU cannot be taken offline"
echo "CPU $CPU offline"
sleep 3
read -r A1 R1 D1 <<<"$(counters)"
echo 1 >"$ONLINE" || fail "CPU $CPU did not come back"
echo "CPU $CPU online again"
for p in $(ready_pids "$T/job.out" | tr , ' '); do
	taskset -a -p -c "$CPU" "$p" >/dev/null || fail "cannot pin PID $p to CPU $CPU"
done
sleep 3
read -r A2 R2 D2 <<<"$(counters)"
kill -0 "$PID_rsd" 2>/dev/null || fail "the daemon died"
echo "records attempted/received/dropped: $A0/$R0/$D0 before, $A1/$R1/$D1 offline, $A2/$R2/$D2 back on CPU $CPU"
[ "$R1" -gt "$R0" ] || fail "no record while CPU $CPU was offline"
[ "$R2" -gt "$R1" ] || fail "no record from the ranks pinned to CPU $CPU"
for s in "$A0 $R0 $D0" "$A1 $R1 $D1" "$A2 $R2 $D2"; do
	set -- $s
	[ $(($2 + $3)) -le "$1" ] || fail "received $2 + dropped $3 > attempted $1"
done
[ "$A1" -ge "$A0" ] && [ "$A2" -ge "$A1" ] && [ "$D2" -ge "$D1" ] || fail "a counter went backwards"
[ "$(http_get $URL/healthz | sed -n 1p)" = 200 ] || fail "/healthz"
pass "CPU $CPU offline and back: records kept coming, the returning CPU's received, counters consistent"
