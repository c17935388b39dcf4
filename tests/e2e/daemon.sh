#!/usr/bin/env bash
# rankscope daemon, node-wide:
#  - a second daemon on the same lock file refuses to start, naming the first;
#  - a real OpenMPI job started after the daemon is found (exec records) and attached within
#    2 s of each rank's start; its straggler shows in /metrics, which passes promtool; its
#    checkpoints (bursts of 1 MiB writes) fill the checkpoint series;
#  - a real PyTorch DDP (gloo) job started while the MPI job runs is a second job: its own
#    job_id, 2 ranks (the data-loader workers are not ranks), DDP steps; its launcher, which
#    carries a rank variable itself, is let go once it launches the ranks;
#  - a rank that execs another program is detached from, and the new program, with the same
#    rank variable, is the rank again;
#  - BPF run time is exported while kernel.bpf_stats_enabled=1;
#  - after SIGTERM the daemon exits 0 and leaves no program, link or uprobe behind;
#  - --max-ranks and --max-series refuse the excess and count it;
#  - rankscope attach --listen serves the same series for the ranks it is given.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
command -v promtool >/dev/null || skip "promtool not installed (make deps installs prometheus)"
command -v bpftool >/dev/null || skip "bpftool not installed (make deps)"
$PY -c 'import torch' 2>/dev/null || skip "python3-torch not installed (make deps)"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
LOCK=$T/daemon.lock
metric() {	# metric REGEX: the value of the first /metrics line matching REGEX
	http_get $URL/metrics | tail -n +2 | grep -E "$1" | head -1 | awk '{print $NF}'
}

bg rsd "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$LOCK" --retain 600
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 ||
	fail "the daemon did not start: $(tail -3 "$T/rsd.out")"

# 1) one daemon per node
"$RS" daemon --listen 127.0.0.1:$((PORT + 1)) --lock-file "$LOCK" >"$T/second.out" 2>&1
rc=$?
[ $rc = 1 ] || fail "a second daemon exited $rc, not 1"
grep -q "another rankscope daemon (PID $PID_rsd) is running" "$T/second.out" ||
	fail "a second daemon did not say why: $(cat "$T/second.out")"
echo "second daemon refused: $(cat "$T/second.out")"

# 2) an MPI job started after the daemon, rank 1 slow, checkpoints every 300 steps (1.5 s)
SLOW=1
mkdir -p "$T/ckpt"
bg job mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go" \
	--iters 100000 --compute-us 1000 --slow-rank $SLOW --slow-us 4000 \
	--ckpt-dir "$T/ckpt" --ckpt-every 300 --ckpt-mb 24
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "MPI job did not start"
MPI_PIDS=$(ready_pids "$T/job.out")
for p in ${MPI_PIDS//,/ }; do
	wait_lines "$T/rsd.out" "attached to PID $p:" 1 10 || fail "the daemon did not attach to MPI rank PID $p"
done
grep -E "attached to PID (${MPI_PIDS//,/|}):" "$T/rsd.out"
$PY - "$T/rsd.out" "${MPI_PIDS}" <<'PY' || fail "attach latency"
import re, sys
pids = sys.argv[2].split(',')
lat = {p: float(s) for p, s in re.findall(r'attached to PID (\d+):.* ([0-9.]+) s after it started',
                                           open(sys.argv[1]).read()) if p in pids}
assert len(lat) == len(pids), lat
print("attach latency after process start (s):", lat)
assert max(lat.values()) < 2.0, f"attached later than 2 s after start: {lat}"
PY
touch "$T/go"
wait_lines "$T/job.out" '^checkpoint rank=' 4 120 || fail "no checkpoints written"
sleep 3	# the burst ends after 1 s of quiet; the verdict needs its window

http_get $URL/metrics | tail -n +2 >"$T/metrics"
promtool check metrics <"$T/metrics" || fail "promtool check metrics failed"
JOB_MPI=$(sed -n 's/.*job_id="\([^"]*\)",rank="0".*/\1/p' "$T/metrics" | head -1)
[ -n "$JOB_MPI" ] || fail "no job_id label in /metrics"
grep -q "^rankscope_straggler_verdict{job_id=\"$JOB_MPI\",class=\"compute\",rank=\"$SLOW\"" "$T/metrics" ||
	fail "no compute verdict on rank $SLOW: $(grep straggler_verdict "$T/metrics")"
grep -q "^train_step_seconds_count{job_id=\"$JOB_MPI\",rank=\"0\"} [1-9]" "$T/metrics" || fail "no steps"
for r in 0 1; do
	b=$(grep "^checkpoint_bytes_written_total{job_id=\"$JOB_MPI\",rank=\"$r\"}" "$T/metrics" | awk '{print $NF}')
	s=$(grep "^train_checkpoint_seconds_total{job_id=\"$JOB_MPI\",rank=\"$r\"}" "$T/metrics" | awk '{print $NF}')
	ts=$(grep "^train_checkpoint_timestamp_seconds{job_id=\"$JOB_MPI\",rank=\"$r\"}" "$T/metrics" | awk '{print $NF}')
	echo "rank $r checkpoints: bytes=$b seconds=$s last=$ts"
	$PY -c 'import sys, time
b, s, ts = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
assert b >= 24 << 20, b                      # at least one 24 MiB checkpoint
assert b % (24 << 20) == 0, b                # whole checkpoints, nothing else
assert 0 < s < 60, s
assert time.time() - 120 < ts <= time.time() + 1, ts' "${b:-0}" "${s:-0}" "${ts:-0}" ||
		fail "checkpoint series of rank $r"
done

# 2b) a job whose last act is a checkpoint: each rank writes 24 MiB at its last iteration and
# exits at once. The burst is still open at the exit (it ends after 1 s of quiet), so it counts
# only because a clean exit closes it.
mkdir -p "$T/ckpt2"
bg ck mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go-ck" \
	--iters 200 --compute-us 1000 --ckpt-dir "$T/ckpt2" --ckpt-every 200 --ckpt-mb 24
wait_lines "$T/ck.out" '^ready rank=' 2 60 || fail "the checkpoint-at-exit job did not start"
CK_PIDS=$(ready_pids "$T/ck.out")
for p in ${CK_PIDS//,/ }; do
	wait_lines "$T/rsd.out" "attached to PID $p:" 1 10 || fail "the daemon did not attach to PID $p"
done
sleep 1.5	# its libraries' probes: the rescan after the exec
touch "$T/go-ck"
wait_exit "$PID_ck" 60 || fail "the checkpoint-at-exit job failed: $(tail -3 "$T/ck.out")"
sleep 2
http_get $URL/api/v1/ranks | tail -n +2 >"$T/ck_ranks.json"
http_get $URL/metrics | tail -n +2 >"$T/ck_metrics"
$PY - "$T/ck_ranks.json" "$T/ck_metrics" "$CK_PIDS" <<'PY' || fail "checkpoint at exit"
import json, re, sys
ranks = json.load(open(sys.argv[1]))
pids = {int(p) for p in sys.argv[3].split(",")}
jobs = {x["job"] for x in ranks if x["pid"] in pids}
assert len(jobs) == 1, (jobs, ranks)
job = jobs.pop()
text = open(sys.argv[2]).read()
for r in (0, 1):
    m = re.search(r'^checkpoint_bytes_written_total\{job_id="%s",rank="%d"\} (\S+)$' % (re.escape(job), r),
                  text, re.M)
    assert m and float(m[1]) == 24 << 20, f"rank {r}: {m and m[1]} bytes, want one 24 MiB checkpoint"
print(f"job {job}: each rank's checkpoint written just before a clean exit was counted")
PY

# 3) a DDP job while the MPI job runs: a second job. zoo_ddp_launch.sh is a stand-in launcher (a bash
# torchrun: it sets the rank variables and starts one python per rank). It carries RANK=0 itself, as
# Kubeflow's node rank does: taken for a rank at first, it is let go once it launches ranks.
# Each rank runs a short-lived child (with its RANK) before it loads torch: the child takes the
# rank's number for a moment, and the rank must get it back.
bg ddp env RANK=0 ZOO_DDP_STARTUP_HELPER=1.5 ZOO_DDP_RUN_ID=ddp-daemon-$$ "$ZOO_DDP" 2 --go-file "$T/go-ddp" \
	--steps 40 --data-dir "$T/data"
wait_lines "$T/ddp.out" '^ready rank=' 2 120 || fail "DDP job did not start"
DDP_PIDS=$(ready_pids "$T/ddp.out")
for p in ${DDP_PIDS//,/ }; do
	wait_lines "$T/rsd.out" "attached to PID $p:" 1 10 || fail "the daemon did not attach to DDP rank PID $p: $(grep -v libbpf "$T/rsd.out" | tail -12)"
done
for p in ${DDP_PIDS//,/ }; do
	grep -q "was short-lived; PID $p, whose rank it took, is judged again" "$T/rsd.out" ||
		fail "DDP rank PID $p did not get its rank back from its startup child: $(grep -v libbpf "$T/rsd.out" | tail -8)"
done
touch "$T/go-ddp"
wait_exit "$PID_ddp" 120 || fail "DDP job failed: $(tail -5 "$T/ddp.out")"
sleep 2
http_get $URL/metrics | tail -n +2 >"$T/metrics2"
promtool check metrics <"$T/metrics2" || fail "promtool check metrics failed (two jobs)"
[ "$(grep '^rankscope_jobs ' "$T/metrics2" | awk '{print $2}')" -ge 2 ] ||
	fail "not 2 jobs: $(grep '^rankscope_jobs' "$T/metrics2")"
grep -q "^train_step_seconds_count{job_id=\"ddp-daemon-$$\",rank=\"1\"} [1-9]" "$T/metrics2" ||
	fail "no DDP steps for job ddp-daemon-$$: $(grep train_step_seconds_count "$T/metrics2")"
http_get $URL/api/v1/ranks | tail -n +2 | $PY -c '
import json, sys
r = json.load(sys.stdin)
ddp = sorted(x["pid"] for x in r if x["job"] == sys.argv[1])
want = sorted(int(p) for p in sys.argv[2].split(","))
assert ddp == want, (ddp, want)          # the ranks, not their data-loader workers
assert int(sys.argv[3]) not in [x["pid"] for x in r], r   # nor the launcher
assert len({x["job"] for x in r}) >= 2, r' "ddp-daemon-$$" "$DDP_PIDS" "$PID_ddp" ||
	fail "/api/v1/ranks for two jobs"
grep -q "PID $PID_ddp launched rank PID [0-9]*: a launcher, not a rank; detached" "$T/rsd.out" ||
	fail "the launcher was not let go: $(grep "PID $PID_ddp" "$T/rsd.out")"
http_get "$URL/api/v1/steps?job=ddp-daemon-$$&rank=0&last=2" | tail -n +2 | $PY -c '
import json, sys; s = json.load(sys.stdin)
assert len(s) == 2 and all(x["job"] == sys.argv[1] and x["rank"] == 0 for x in s), s' "ddp-daemon-$$" ||
	fail "/api/v1/steps?job="
http_get $URL/api/v1/diagnosis | tail -n +2 | $PY -c '
import json, sys; a = json.load(sys.stdin)
assert set(sys.argv[1:]) <= {v["job"] for v in a}, a' "$JOB_MPI" "ddp-daemon-$$" ||
	fail "/api/v1/diagnosis: one verdict per job"

# 4) a rank that execs: detached, then the new program is that rank again
bg execer env RANK=0 WORLD_SIZE=1 TORCHELASTIC_RUN_ID=exec-$$ $PY -c '
import os, sys, time
print("ready", os.getpid(), flush=True); time.sleep(2)
os.execv("/bin/sleep", ["sleep", "30"])'
wait_lines "$T/execer.out" '^ready' 1 30 || fail "exec test process did not start"
EPID=$(awk '/^ready/{print $2}' "$T/execer.out")
wait_lines "$T/rsd.out" "PID $EPID \(rank 0 of job 'exec-$$'\) exec'd another program; detached" 1 15 ||
	fail "no detach on exec"
sleep 2
http_get $URL/api/v1/ranks | tail -n +2 | $PY -c '
import json, sys
r = [x for x in json.load(sys.stdin) if x["job"] == sys.argv[1]]
assert len(r) == 1 and r[0]["pid"] == int(sys.argv[2]) and r[0]["comm"] == "sleep", r' "exec-$$" "$EPID" ||
	fail "the exec'd program is not the rank"
# 4b) the next exec lands while the daemon still attaches to the program before it (the real
# libnccl.so.2 preloaded makes that attach long): the last program is the rank all the same.
# Each of 12 ranks execs at its own delay, across the attach.
NCCL=/usr/local/cuda/lib/libnccl.so.2
if [ -e "$NCCL" ]; then
	for i in $(seq 0 11); do
		env LD_PRELOAD="$NCCL" RANK="$i" WORLD_SIZE=12 TORCHELASTIC_RUN_ID="exec2-$$" \
			/bin/sh -c "sleep $(printf 0.%03d $((i * 15))); exec env -u LD_PRELOAD sleep 20" \
			>/dev/null 2>&1 &
		EX_PIDS+=" $!"
		sleep 0.05
	done
	ok=
	for i in $(seq 40); do
		sleep 0.25
		http_get $URL/api/v1/ranks | tail -n +2 | $PY -c '
import json, sys
r = [x for x in json.load(sys.stdin) if x["job"] == sys.argv[1] and x["comm"] == "sleep"]
sys.exit(len(r) != 12)' "exec2-$$" && ok=1 && break
	done
	[ -n "$ok" ] || fail "ranks that exec'd during their attach were lost: $(http_get \
		$URL/api/v1/ranks | tail -n +2 | $PY -c 'import json, sys
print(sorted((x["rank"], x["comm"]) for x in json.load(sys.stdin) if x["job"] == sys.argv[1]))' \
		"exec2-$$")"
	kill $EX_PIDS 2>/dev/null
	echo "12 ranks that exec'd during their attach: each the new program's rank"
else
	echo "no $NCCL (CUDA toolkit): the exec-during-attach case is not run"
fi

# 5) BPF run time from bpf_stats, while kernel.bpf_stats_enabled=1 (restored at once)
BS=/proc/sys/kernel/bpf_stats_enabled
if [ -w $BS ]; then
	old=$(cat $BS)
	echo 1 >$BS
	sleep 2.5
	run=$(metric '^rankscope_bpf_run_seconds_total\{family="sched"\}')
	cnt=$(metric '^rankscope_bpf_runs_total\{family="sched"\}')
	echo "$old" >$BS
	echo "sched programs with bpf_stats on: ${cnt:-none} runs, ${run:-none} s"
	$PY -c 'import sys; assert float(sys.argv[1]) > 0 and float(sys.argv[2]) > 0' "${run:-0}" "${cnt:-0}" ||
		fail "no BPF run time while bpf_stats was on"
else
	echo "note: $BS not writable: BPF run time not checked"
fi

# 6) SIGTERM: exits 0, nothing left behind
[ "$(leftovers "$PID_rsd")" -gt 0 ] || fail "no rs_ programs held by the daemon (test cannot see them)"
kill -TERM "$PID_rsd"
wait_exit "$PID_rsd" 60
rc=$?
[ $rc = 0 ] || fail "daemon exited $rc after SIGTERM: $(tail -3 "$T/rsd.out")"
[ "$(rs_progs_left)" = 0 ] || fail "rs_ programs left in the kernel after SIGTERM: $(bpftool prog show | grep rs_)"
if [ -r /sys/kernel/tracing/uprobe_events ] && grep -q . /sys/kernel/tracing/uprobe_events; then
	fail "uprobe_events not empty: $(head -3 /sys/kernel/tracing/uprobe_events)"
fi
# 7) caps: one rank at most, and 40 series lines: the rest is counted, not served
bg rsc "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$LOCK" --max-ranks 1 --max-series 40
wait_lines "$T/rsc.out" 'watching for training processes' 1 30 || fail "capped daemon did not start"
bg job3 mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/go3" \
	--iters 100000 --compute-us 1000
wait_lines "$T/job3.out" '^ready rank=' 2 60 || fail "MPI job 3 did not start"
wait_lines "$T/rsc.out" 'not attaching to PID .*--max-ranks' 1 10 || fail "no rank cap message"
touch "$T/go3"
sleep 2
http_get $URL/metrics | tail -n +2 >"$T/metrics3"
promtool check metrics <"$T/metrics3" || fail "promtool check metrics failed (capped)"
grep -E '^rankscope_(attach_total\{result="(attached|rank_cap)"\}|ranks|series_overflow_total) ' "$T/metrics3"
grep -qE '^rankscope_attach_total\{result="rank_cap"\} [1-9]' "$T/metrics3" || fail "rank cap not counted"
grep -q '^rankscope_ranks 1$' "$T/metrics3" || fail "more than --max-ranks ranks"
grep -qE '^rankscope_series_overflow_total [1-9]' "$T/metrics3" || fail "series cap not counted"
[ "$(grep -cvE '^(#|rankscope_|process_)' "$T/metrics3")" -le 40 ] || fail "more than 40 series lines"
kill -TERM "$PID_rsc"
wait_exit "$PID_rsc" 60 || fail "capped daemon did not exit on SIGTERM"

# 8) the same series from rankscope attach --listen, on the job the capped daemon left
rs_attach rsa -p "$(ready_pids "$T/job3.out")" --json --listen 127.0.0.1:$PORT
sleep 2.5
http_get $URL/metrics | tail -n +2 >"$T/metrics4"
promtool check metrics <"$T/metrics4" || fail "promtool check metrics failed (attach --listen)"
for r in 0 1; do
	grep -qE "^rankscope_collective_duration_seconds_count\{job_id=\"[^\"]+\",rank=\"$r\",lib=\"mpi\",op=\"allreduce\",size_bucket=\"<64KB\"\} [1-9]" \
		"$T/metrics4" || fail "attach --listen: no allreduce of rank $r in /metrics"
done
grep -q '^rankscope_jobs 1$' "$T/metrics4" || fail "attach --listen: not one job"
kill -TERM "$PID_rsa"
wait_exit "$PID_rsa" 60 || fail "attach did not exit on SIGTERM"

pass "second daemon refused; MPI and DDP jobs found after start (<2 s) as two jobs; checkpoints; exec detach; bpf_stats; clean SIGTERM; caps; attach --listen"
