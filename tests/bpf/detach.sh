#!/usr/bin/env bash
# Clean detach: after SIGTERM, and after the targets exit, no rankscope program, link or
# uprobe remains in the kernel.
. "$(dirname "$0")/../lib.sh"
need_root
command -v bpftool >/dev/null || skip "bpftool not installed (make deps)"
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ "$(leftovers)" = 0 ] || fail "rs_ programs held by no process before the test: $(leftovers)"

# 1) SIGTERM while the targets still run
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go" --iters 1000000
wait_lines "$T/job.out" '^ready rank=' 2 20 || fail "job did not start"
rs_attach rs -p "$(ready_pids "$T/job.out")" --json
touch "$T/go"
sleep 1
[ "$(leftovers "$PID_rs")" -gt 0 ] || fail "no rs_ programs held by rankscope while attached (test cannot see them)"
kill -TERM "$PID_rs"
wait_exit "$PID_rs" 60 || fail "rankscope did not exit on SIGTERM"
# gone from the kernel, not only from rankscope's fds (which are gone with the process anyway)
[ "$(rs_progs_left)" = 0 ] || fail "rs_ programs left after SIGTERM: $(bpftool prog show | grep rs_)"
grep -q '"final":true' "$T/rs.out" || fail "no final self line after SIGTERM"
kill -TERM -- "-$PID_job" 2>/dev/null
wait_exit "$PID_job" 30
for p in $(ready_pids "$T/job.out" | tr ',' ' '); do	# ranks may outlive mpirun briefly
	kill -KILL "$p" 2>/dev/null
done

# 2) the targets exit by themselves
bg job2 mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go2" --iters 50
wait_lines "$T/job2.out" '^ready rank=' 2 20 || fail "job did not start"
rs_attach rs2 -p "$(ready_pids "$T/job2.out")" --json
touch "$T/go2"
wait_exit "$PID_job2" 30 || fail "job failed"
wait_exit "$PID_rs2" 60 || fail "rankscope did not exit after the targets"
[ "$(rs_progs_left)" = 0 ] || fail "rs_ programs left after the targets exited: $(bpftool prog show | grep rs_)"
if [ -r /sys/kernel/tracing/uprobe_events ] && grep -q . /sys/kernel/tracing/uprobe_events; then
	fail "uprobe_events not empty: $(head -3 /sys/kernel/tracing/uprobe_events)"
fi
pass "nothing left after SIGTERM nor after the targets exited"
