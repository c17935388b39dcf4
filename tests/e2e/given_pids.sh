#!/usr/bin/env bash
# PIDs given to -p that are not a training process are refused with the reason, exit 2 (1 for
# a PID with no process), and nothing attached; a launcher is attached with a warning that
# lists its ranks:
#   a kernel thread (kthreadd), a thread id (names the process), a PID with no process;
#   a PID read inside a container (unshare -p: its ranks are 2 and 3 there, kernel threads
#   on the host): the error names the host PID, from NSpid, and that PID is right;
#   mpirun's PID: attached, and the warning lists exactly the ranks it started.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -e "$FIX/double/libnccl.so.2" ] || skip "no NCCL double (no CUDA toolkit nccl.h)"

# refused NAME PID REGEX [RC]: exit RC (2) at once, REGEX in the error, no rank attached
refused() {
	local name=$1 pid=$2 re=$3 want=${4:-2} rc
	timeout 20 "$RS" attach -p "$pid" --json >"$T/$name.out" 2>&1
	rc=$?
	[ $rc -eq "$want" ] || fail "$name: exit $rc, want $want: $(cat "$T/$name.out")"
	grep -qE "$re" "$T/$name.out" || fail "$name: no /$re/ in: $(cat "$T/$name.out")"
	grep -q '"type":"rank"' "$T/$name.out" && fail "$name: a rank was attached"
	echo "$name: $(grep -m1 attach: "$T/$name.out")"
}

refused kthread 2 'PID 2 \(kthreadd\) is a kernel thread'
bg thr $PY -c 'import threading, time, os
t = threading.Thread(target=time.sleep, args=(60,)); t.start()
print(os.getpid(), t.native_id, flush=True); t.join()'
wait_lines "$T/thr.out" '^[0-9]+ [0-9]+$' 1 10 || fail "thread workload did not start"
read -r TGID TID <"$T/thr.out"
refused thread "$TID" "PID $TID is a thread of process $TGID \\(python3\\).*give -p $TGID"
NOPID=$(($(cat /proc/sys/kernel/pid_max) - 1))
[ -e /proc/$NOPID ] || refused nopid "$NOPID" "no process with PID $NOPID; is it still running" 1

# a job in its own PID namespace: its ranks see PIDs 2 and 3
bg ctr unshare -p -f --mount-proc "$FIX/nccl_ranks" --go-file "$T/go" --nranks 2 --iters 5
wait_lines "$T/ctr.out" '^ready rank=' 2 30 || fail "container job did not start: $(cat "$T/ctr.out")"
for inner in $(grep -E '^ready rank=' "$T/ctr.out" | sed 's/.*pid=//'); do
	host=""
	for st in /proc/[0-9]*/status; do
		if grep -qE "^NSpid:\s+[0-9]+\s+$inner\$" "$st" 2>/dev/null &&
			grep -q nccl_ranks "${st%status}comm" 2>/dev/null; then
			p=${st#/proc/}
			host="$host ${p%/status}"
		fi
	done
	host=$(echo $host)
	[ -n "$host" ] || fail "no host process has NSpid ... $inner"
	[ "$(echo "$host" | wc -w)" -eq 1 ] || fail "several host processes for container PID $inner: $host"
	refused "ctr$inner" "$inner" "container \\(PID namespace\\) is host PID $host \\(nccl_ranks\\): give -p $host"
done
touch "$T/go"
wait_exit "$PID_ctr" 30 || fail "container job failed"

# mpirun: attached, with its ranks listed
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go2" --iters 20
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start"
RANKS=$(ready_pids "$T/job.out")
MPIRUN=$(pgrep -x -P "$PID_job" mpirun || echo "$PID_job")
[ "$(cat /proc/$MPIRUN/comm)" = mpirun ] || fail "no mpirun at $MPIRUN"
timeout 30 "$RS" attach -p "$MPIRUN" --json --duration 1 >"$T/launcher.out" 2>&1 ||
	fail "attach to mpirun failed: $(tail -3 "$T/launcher.out")"
LISTED=$(sed -n 's/.*processes it started do: give their PIDs (-p \([0-9,]*\)).*/\1/p' "$T/launcher.out")
[ -n "$LISTED" ] || fail "no launcher warning: $(grep attach: "$T/launcher.out")"
[ "$(echo "$LISTED" | tr , '\n' | sort -n | paste -sd,)" = "$(echo "$RANKS" | tr , '\n' | sort -n | paste -sd,)" ] ||
	fail "launcher warning lists $LISTED, the ranks are $RANKS"
echo "launcher: $(grep -m1 'processes it started' "$T/launcher.out")"
touch "$T/go2"
wait_exit "$PID_job" 60 || fail "MPI job failed"
pass "kernel thread, thread id, missing PID and container PIDs refused (host PID named); launcher warned with its ranks"
