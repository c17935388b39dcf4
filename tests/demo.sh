#!/usr/bin/env bash
# make demo: a bundled 4-rank OpenMPI job where rank 2 is slow (it sleeps 3 ms before every
# allreduce), with rankscope attached by PID showing the live per-rank table.
set -u
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "demo: rankscope loads eBPF probes; run as root (sudo make demo)"; exit 1; }
T=$(mktemp -d /tmp/rankscope-demo.XXXXXX)
trap 'kill -TERM -- -$JOB 2>/dev/null; rm -rf "$T"' EXIT
head -c 16M /dev/urandom >"$T/data"
echo "demo: starting a 4-rank MPI job (rank 2 sleeps 5 ms before each MPI_Allreduce)..."
setsid mpirun --allow-run-as-root --oversubscribe -np 4 build/fixtures/mpi_loop \
	--go-file "$T/go" --iters 1000 --compute-us 2000 --slow-rank 2 --slow-us 5000 \
	--read-file "$T/data" >"$T/job.out" 2>&1 &
JOB=$!
for _ in $(seq 300); do
	[ "$(grep -c '^ready' "$T/job.out")" -ge 4 ] && break
	sleep 0.1
done
PIDS=$(grep '^ready' "$T/job.out" | sort -t= -k2 -n | sed 's/.*pid=//' | paste -sd,)
[ -n "$PIDS" ] || { echo "demo: the MPI job did not start:"; cat "$T/job.out"; exit 1; }
echo "demo: ranks are PIDs $PIDS; attaching: build/rankscope attach -p $PIDS"
(sleep 1; touch "$T/go") &
build/rankscope attach -p "$PIDS"
rc=$?
echo
echo "demo: rank 2 spends the least time inside MPI_Allreduce: the others wait for it there."
echo "demo: the verdict line above names it, the phase that explains it, and the experiment:"
echo "demo:   build/rankscope diagnose -p PIDS gives the same as a report (rankscope diagnose --help)."
echo "demo: the job said:"
grep '^done' "$T/job.out" | sort
exit $rc
