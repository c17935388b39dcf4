#!/usr/bin/env bash
# bench.sh - what rankscope costs a traced job, side by side with the bare uprobe floor and
# bpftrace. Run by `make bench` (after `make all fixtures`), as root; exits 77 otherwise.
#
#   1. per-call cost on MPI_Allreduce (1 rank, ~60 ns calls, so the probes dominate):
#      (a) no probes, (b) empty uprobe+uretprobe (build/bench/uprobe_floor),
#      (c) rankscope attach --json, (d) bpftrace enter/exit latency histogram;
#      alternating a,b,c,d rounds; probe cost = t(x) - t(a); reported over the floor t(b) - t(a).
#   2. loop-iteration time of a 4-rank mpi_loop job with rankscope on all ranks vs without,
#      alternating runs; overhead in %.
#   5. the same job with rankscope attached vs recording a capture (every syscall and off-CPU
#      interval, phase runs, stack samples with 16 KiB stack copies) for the whole run, and vs
#      a capture whose samples copy no stack (--sample-stack-kb 0); overheads in %.
#   6. the accuracy matrix (tests/workloads/matrix.py --subset full): every workload structure
#      x fault x attach time, verdict and phases scored against the workload's own clock.
#   7. rankscope hub over synthetic node daemons: CPU, RSS and verdict latency at 128 to 2048
#      ranks (tests/bench/hub_scale.py).
#   8. the zoo's faults on a job across two cgroup "nodes", judged by rankscope hub
#      (tests/bench/hub_faults.py).
#   9. 200 `rankscope stacks` snapshots of a running 2-rank MPI job against the same job alone
#      (tests/e2e/stacks_harmless.sh): steps and checksums, step time, each thread's stop.
#  10. (selected by "0") what processes rankscope does not track pay: `perf bench sched pipe`
#      and build/bench/hookcost with nothing attached, with empty tp_btf programs on the same
#      hooks (build/bench/hook_floor), with `rankscope attach` on one sleeping process, and
#      with libbpf-tools' runqlat; alternating rounds, then each program's run time from
#      bpf_stats (tests/bench/untracked.py writes the section).
#  11. (selected by "u") rankscope's own CPU by thread, records/s and RSS with 8 ranks at
#      ~1,000 collectives/s each, for attach --json and the daemon (tests/bench/userspace.sh).
#  12. (selected by "s") an event storm: the most records rankscope drains with the default
#      ring buffer, exact loss accounting, and the stage that limits (tests/bench/storm.sh).
#  14. (selected by "r") diagnose --replay on one core: records/s on a large op trace and on a
#      live recording (tests/bench/replay.sh).
#  15. (selected by "m") the shape simulator on BENCH_SIM_SEEDS (default 5000) fresh seeds:
#      verdicts, steps and phases scored against each draw's own truth (tests/sim/run).
#
# Knobs (environment): BENCH_ROUNDS, BENCH_CALLS, BENCH_COUNT, BENCH_RUNS, BENCH_NP,
# BENCH_ITERS, BENCH_COMPUTE_US, BENCH_RUN_TIMEOUT (s), BENCH_RESULTS (markdown output),
# BENCH_PARTS ("12": which parts to run; "0" is part 10, "u" 11, "s" 12, "r" 14, "m" 15), BENCH_UNTRACKED_ROUNDS, BENCH_RS_ARGS (extra `rankscope attach` options, e.g. "--no-sched", to find a cost's source).
set -u -o pipefail

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: bench: needs root to attach uprobes and load BPF; run 'sudo make bench'" >&2
	exit 77
fi

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$TOP" || exit 1

ROUNDS=${BENCH_ROUNDS:-7}
CALLS=${BENCH_CALLS:-200000}
COUNT=${BENCH_COUNT:-1}
RUNS=${BENCH_RUNS:-7}
# 2 ranks on the 2 vCPUs here: with 4, oversubscription makes iterations flip between
# ~2.1 and ~3.5 ms from run to run, a spread far above the 0.3% being measured.
NP=${BENCH_NP:-2}
ITERS=${BENCH_ITERS:-400}
COMPUTE_US=${BENCH_COMPUTE_US:-1000}
RUN_TIMEOUT=${BENCH_RUN_TIMEOUT:-90}
RESULTS=${BENCH_RESULTS:-tests/bench/results.md}
PARTS=${BENCH_PARTS:-1234567890usrm}
UNTRACKED_ROUNDS=${BENCH_UNTRACKED_ROUNDS:-10}
P2_ZOO_STEPS=${BENCH_ZOO_STEPS:-2000}	# ~2.4 ms steps: ~5 s a run
P2_DDP_STEPS=${BENCH_DDP_STEPS:-600}
P2_DDP_RUNS=${BENCH_DDP_RUNS:-3}
read -r -a RS_ARGS <<<"${BENCH_RS_ARGS:-}"

RS=build/rankscope
LOOP=build/fixtures/mpi_loop
FLOOR=build/bench/uprobe_floor
ARNS=build/bench/allreduce_ns
PY=/usr/bin/python3
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)

die() { echo "bench: $*" >&2; exit 1; }
log() { echo "bench: $*" >&2; }

for f in "$RS" "$LOOP"; do
	[ -x "$f" ] || die "missing $f; run 'make all fixtures' first (or 'make bench')"
done
command -v mpirun >/dev/null || die "mpirun not found; run 'make deps'"
[ -x "$PY" ] || die "$PY not found; run 'make deps'"
[ -r /sys/kernel/btf/vmlinux ] || { echo "SKIP: bench: kernel has no BTF" >&2; exit 77; }
make -s -f tests/bench/bench.mk BENCHDIR=build/bench >&2 ||
	die "failed to build the bench helpers; see the make output above"
HAVE_BPFTRACE=1
command -v bpftrace >/dev/null || { HAVE_BPFTRACE=0; log "bpftrace not found: condition d skipped"; }

T=$(mktemp -d /tmp/rankscope-bench.XXXXXX)
SAMPLES=$T/samples.tsv
: >"$SAMPLES"
BG=()		# process-group leaders started here (setsid), killed as groups on exit
RANK_PIDS=()	# MPI ranks, in case mpirun moved them out of our groups

cleanup() {
	local p
	for p in "${BG[@]}"; do
		kill -TERM -- "-$p" 2>/dev/null
	done
	# Only ranks still running our command line (their go-file lies in $T): PIDs get reused.
	for p in "${RANK_PIDS[@]}"; do
		grep -qF "$T/" "/proc/$p/cmdline" 2>/dev/null && kill -TERM "$p" 2>/dev/null
	done
	sleep 0.3
	for p in "${BG[@]}"; do
		kill -KILL -- "-$p" 2>/dev/null
	done
	for p in "${RANK_PIDS[@]}"; do
		grep -qF "$T/" "/proc/$p/cmdline" 2>/dev/null && kill -KILL "$p" 2>/dev/null
	done
	[ -n "${BENCH_KEEP:-}" ] && echo "bench: kept $T" >&2 || rm -rf "$T"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# bg OUT ERR CMD...: CMD in its own session, under a timeout; sets BG_PID (= its group id).
bg() {
	local out=$1 err=$2
	shift 2
	setsid timeout -k 5 "$RUN_TIMEOUT" "$@" >"$out" 2>"$err" &
	BG_PID=$!
	BG+=("$BG_PID")
}

# wait_lines FILE REGEX N TIMEOUT_S [PID]: 0 once FILE has N lines matching REGEX; 1 on
# timeout; 2 if PID ended first (a tool that failed to attach).
wait_lines() {
	local f=$1 re=$2 n=$3 t=$4 pid=${5:-} i
	for ((i = 0; i < t * 20; i++)); do
		[ "$(grep -cE "$re" "$f" 2>/dev/null)" -ge "$n" ] && return 0
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			[ "$(grep -cE "$re" "$f" 2>/dev/null)" -ge "$n" ] && return 0
			return 2
		fi
		sleep 0.05
	done
	return 1
}

# stop PID TIMEOUT_S: wait for a bg group to end by itself, then SIGINT, then SIGKILL.
# Returns the command's exit status (124/137: the run's own timeout fired).
stop() {
	local pid=$1 t=$2 i
	for ((i = 0; i < t * 20; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -INT -- "-$pid" 2>/dev/null
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL -- "-$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	i=$?
	forget "$pid"
	return $i
}

# forget PID: a reaped group leader's PID may be reused by anyone: never signal it again.
forget() {
	local p keep=()
	for p in "${BG[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	BG=("${keep[@]}")
}

# rank_pids FILE: rank PIDs from "ready rank=R pid=P" lines, in rank order, one per line
rank_pids() {
	grep -E '^ready rank=' "$1" | sort -t= -k2 -n | sed 's/.*pid=\([0-9]*\).*/\1/'
}

# rs_check_attached OUT PID...: every PID has a rank line with MPI collective probes.
rs_check_attached() {
	local out=$1 pid line
	shift
	for pid in "$@"; do
		line=$(grep -E "^\{\"type\":\"rank\".*\"pid\":$pid," "$out" | head -1)
		[ -n "$line" ] || { log "rankscope printed no rank line for pid $pid"; return 1; }
		if ! grep -qE '"collective_probes":\{[^}]*"mpi":\{"sites":[1-9][0-9]*,' <<<"$line" ||
		   grep -qE '"mpi":\{[^}]*"error"' <<<"$line"; then
			log "rankscope attached no MPI collective probes to pid $pid: $line"
			return 1
		fi
	done
}

# rs_coll_attempted OUT: collective events the BPF side attempted, from the final self line.
rs_coll_attempted() {
	grep -E '^\{"type":"self".*"final":true' "$1" | tail -1 |
		sed -n 's/.*"collectives":{"attempted":\([0-9]*\).*/\1/p'
}

# bt_hist_total OUT: sum of the bucket counts of bpftrace's printed histogram
bt_hist_total() {
	awk '/^\[/ { for (i = 1; i < NF; i++) if ($i ~ /[)\]]$/) { s += $(i + 1); break } }
	     END { print s + 0 }' "$1"
}

# abort_run: ends the caller's job and tool (its locals $job, $tool) after a failed step.
abort_run() {
	[ -n "${tool:-}" ] && stop "$tool" 1
	[ -n "${job:-}" ] && stop "$job" 1
	return 0
}

# p1_run COND ROUND: one 1-rank allreduce_ns run under condition a|b|c|d; appends a sample.
p1_run() {
	local cond=$1 round=$2 d="$T/p1.$2.$1" job pid lib tool="" rc seen line
	[ -d "$d" ] && mv "$d" "$d.failed.$(date +%s%N)"	# a retry starts clean
	mkdir -p "$d"
	bg "$d/job.out" "$d/job.err" "${MPIRUN[@]}" -np 1 "$ARNS" --go-file "$d/go" \
		--calls "$CALLS" --count "$COUNT"
	job=$BG_PID
	wait_lines "$d/job.out" '^ready rank=' 1 30 "$job" ||
		{ log "p1 $cond/$round: allreduce_ns did not start"; tail -5 "$d/job.err" >&2; abort_run; return 1; }
	pid=$(rank_pids "$d/job.out")
	RANK_PIDS+=("$pid")
	lib=$(awk '$6 ~ /\/libmpi\.so\.40/ { print $6; exit }' "/proc/$pid/maps")
	[ -n "$lib" ] || { log "p1: pid $pid maps no libmpi.so.40"; abort_run; return 1; }

	case $cond in
	b)	bg "$d/tool.out" "$d/tool.err" "$FLOOR" -p "$pid" -l "$lib" -s MPI_Allreduce
		tool=$BG_PID
		wait_lines "$d/tool.out" '^uprobe_floor: attached' 1 20 "$tool" ||
			{ log "p1 b/$round: uprobe_floor did not attach:"; cat "$d/tool.err" >&2; abort_run; return 1; } ;;
	c)	bg "$d/tool.out" "$d/tool.err" "$RS" attach -p "$pid" --json "${RS_ARGS[@]}"
		tool=$BG_PID
		wait_lines "$d/tool.out" '^\{"type":"rank"' 1 30 "$tool" ||
			{ log "p1 c/$round: rankscope did not attach:"; tail -5 "$d/tool.err" >&2; abort_run; return 1; }
		rs_check_attached "$d/tool.out" "$pid" || { abort_run; return 1; } ;;
	d)	bg "$d/tool.out" "$d/tool.err" bpftrace -p "$pid" -e "
			uprobe:$lib:MPI_Allreduce { @s[tid] = nsecs; }
			uretprobe:$lib:MPI_Allreduce /@s[tid]/ {
				@h = hist(nsecs - @s[tid]); delete(@s[tid]); }"
		tool=$BG_PID
		wait_lines "$d/tool.out" '^Attaching' 1 30 "$tool" ||
			{ log "p1 d/$round: bpftrace did not attach:"; tail -5 "$d/tool.err" >&2; abort_run; return 1; }
		sleep 1 ;;
	esac

	touch "$d/go"
	stop "$job" "$RUN_TIMEOUT"
	rc=$?
	job=""
	line=$(grep -E '^done rank=0 ' "$d/job.out")
	if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
		log "p1 $cond/$round: allreduce_ns failed (exit $rc):"
		tail -5 "$d/job.err" >&2
		abort_run
		return 1
	fi

	for fl in "${floors[@]}"; do
		stop "$fl" 15
	done
	seen=""
	if [ -n "$tool" ]; then
		stop "$tool" 15
		tool=""
		case $cond in
		c)	seen=$(rs_coll_attempted "$d/tool.out") ;;
		d)	seen=$(bt_hist_total "$d/tool.out") ;;
		esac
		if [ "$cond" != b ] && [ "${seen:-0}" -lt "$CALLS" ]; then
			log "p1 $cond/$round: the tool saw ${seen:-no} calls of $CALLS: not measuring it"
			return 1
		fi
	fi
	# part cond round mean_ns median_ns calls_seen
	printf 'p1\t%s\t%s\t%s\t%s\t%s\n' "$cond" "$round" \
		"$(sed -n 's/.* mean_ns=\([0-9.]*\).*/\1/p' <<<"$line")" \
		"$(sed -n 's/.* median_ns=\([0-9]*\).*/\1/p' <<<"$line")" "${seen:--}" >>"$SAMPLES"
	log "p1 round $round cond $cond: $(sed 's/.*calls=/calls=/' <<<"$line")${seen:+ tool_saw=$seen}"
}

# attach_floors DIR PID...: the empty uprobe+uretprobe on each PID's MPI_Allreduce; their
# group ids go into the caller's floors array. 1 when one did not attach.
attach_floors() {
	local d=$1 p lib
	shift
	for p in "$@"; do
		lib=$(awk '$6 ~ /\/libmpi\.so\.40/ { print $6; exit }' "/proc/$p/maps")
		bg "$d/fl.$p.out" "$d/fl.$p.err" "$FLOOR" -p "$p" -l "$lib" -s MPI_Allreduce
		floors+=("$BG_PID")
		wait_lines "$d/fl.$p.out" '^uprobe_floor: attached' 1 20 "$BG_PID" || return 1
	done
}

# p2_run COND RUN: one NP-rank mpi_loop run, rankscope on all ranks (on), the empty
# uprobe+uretprobe on every rank's MPI_Allreduce (floor), or nothing (off).
p2_run() {
	local cond=$1 run=$2 d="$T/${P2_TAG:-p2}.$2.$1" job tool="" rc pids seen med p lib fl floors=()
	# a retry starts clean: a go-file left by the failed try would start the loop at once
	[ -d "$d" ] && mv "$d" "$d.failed.$(date +%s%N)"
	mkdir -p "$d"
	bg "$d/job.out" "$d/job.err" "${MPIRUN[@]}" -np "$NP" "$LOOP" --go-file "$d/go" \
		--iters "$ITERS" --compute-us "$COMPUTE_US"
	job=$BG_PID
	wait_lines "$d/job.out" '^ready rank=' "$NP" 60 "$job" ||
		{ log "p2 $cond/$run: mpi_loop did not start"; tail -5 "$d/job.err" >&2; abort_run; return 1; }
	mapfile -t pids < <(rank_pids "$d/job.out")
	RANK_PIDS+=("${pids[@]}")
	if [ "$cond" = cap ] || [ "$cond" = capfp ]; then	# a capture of every rank, the whole run
		# capfp: stack samples with frame-pointer chains only (no stack copies to unwind)
		bg "$d/tool.out" "$d/tool.err" "$RS" capture -p "$(IFS=,; echo "${pids[*]}")" \
			--seconds 120 -o "$d/capture.json" \
			$([ "$cond" = capfp ] && echo --sample-stack-kb 0)
		tool=$BG_PID
		wait_lines "$d/tool.err" 'recording for' 1 30 "$tool" ||
			{ log "p5 $cond/$run: rankscope capture did not start:"; tail -5 "$d/tool.err" >&2; abort_run; return 1; }
	elif [ "$cond" = on ]; then
		bg "$d/tool.out" "$d/tool.err" "$RS" attach -p "$(IFS=,; echo "${pids[*]}")" --json \
			"${RS_ARGS[@]}"
		tool=$BG_PID
		wait_lines "$d/tool.out" '^\{"type":"rank"' "$NP" 30 "$tool" ||
			{ log "p2 on/$run: rankscope did not attach:"; tail -5 "$d/tool.err" >&2; abort_run; return 1; }
		rs_check_attached "$d/tool.out" "${pids[@]}" || { abort_run; return 1; }
	elif [ "$cond" = floor ]; then
		attach_floors "$d" "${pids[@]}" ||
			{ log "p2 floor/$run: uprobe_floor did not attach"; abort_run; return 1; }
	fi

	touch "$d/go"
	stop "$job" "$RUN_TIMEOUT"
	rc=$?
	job=""
	if [ "$rc" -ne 0 ] || [ "$(grep -cE '^done rank=' "$d/job.out")" -ne "$NP" ]; then
		log "p2 $cond/$run: mpi_loop failed (exit $rc):"
		tail -5 "$d/job.err" >&2
		abort_run
		return 1
	fi
	for fl in "${floors[@]}"; do
		stop "$fl" 15
	done
	seen=""
	if [ "$cond" = cap ] || [ "$cond" = capfp ]; then
		stop "$tool" 60		# it writes the capture once the ranks are gone
		tool=""
		[ -s "$d/capture.json" ] || { log "p5 $cond/$run: no capture written"; return 1; }
		seen=$(stat -c %s "$d/capture.json")
	elif [ -n "$tool" ]; then
		stop "$tool" 15
		tool=""
		seen=$(rs_coll_attempted "$d/tool.out")
		if [ "${seen:-0}" -lt $((NP * ITERS)) ]; then
			log "p2 on/$run: rankscope saw ${seen:-no} calls of $((NP * ITERS)): not measuring it"
			return 1
		fi
	fi
	# part cond run median-over-ranks(iter_ns_median) per-rank-values calls_seen
	med=$(sed -n 's/.*iter_ns_median=\([0-9]*\).*/\1/p' "$d/job.out" | sort -n |
		awk '{ v[NR] = $1 }
		 END { printf "%.0f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
	p=$(grep -E '^done rank=' "$d/job.out" | sort -t= -k2 -n |
		sed -n 's/.*iter_ns_median=\([0-9]*\).*/\1/p' | paste -sd,)
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "${P2_TAG:-p2}" "$cond" "$run" "$med" "$p" "${seen:--}" >>"$SAMPLES"
	log "p2 run $run $cond: median iter ${med} ns (ranks: $p)${seen:+ rankscope_saw=$seen}"
}

# p2j_run KIND COND RUN: part 2's other shapes, judged by the workload's own step clock (its
# "truth" lines): KIND zoo is the 2-rank OpenMPI job with three equal buckets a step
# (tests/workloads/zoo_mpi.c, both vCPUs busy), KIND ddp the 2-rank PyTorch DDP (gloo) job
# (tests/workloads/zoo_ddp.py). COND off, floor (zoo: the empty uprobe+uretprobe on every
# rank's MPI_Allreduce) or on. Per run: the median over ranks of each rank's median step_ns
# after the first 5 steps.
p2j_run() {
	local kind=$1 cond=$2 run=$3 d="$T/p2$1.$3.$2" job tool="" rc pids p lib med fl floors=()
	local cpu cpu0 cpu1="" t0 t1
	[ -d "$d" ] && mv "$d" "$d.failed.$(date +%s%N)"
	mkdir -p "$d"
	if [ "$kind" = zoo ]; then
		bg "$d/job.out" "$d/job.err" "${MPIRUN[@]}" -np 2 build/workloads/zoo_mpi \
			--buckets 3 --steps "$P2_ZOO_STEPS" --go-file "$d/go"
	else
		bg "$d/job.out" "$d/job.err" tests/workloads/zoo_ddp_launch.sh 2 --go-file "$d/go" \
			--steps "$P2_DDP_STEPS" --data-dir "$T/ddp-data"
	fi
	job=$BG_PID
	wait_lines "$d/job.out" '^ready rank=' 2 120 "$job" ||
		{ log "p2$kind $cond/$run: the job did not start"; tail -5 "$d/job.err" >&2; abort_run; return 1; }
	mapfile -t pids < <(rank_pids "$d/job.out")
	RANK_PIDS+=("${pids[@]}")
	if [ "$cond" = on ]; then
		bg "$d/tool.out" "$d/tool.err" "$RS" attach -p "$(IFS=,; echo "${pids[*]}")" --json \
			"${RS_ARGS[@]}"
		tool=$BG_PID
		wait_lines "$d/tool.out" '^\{"type":"rank"' 2 30 "$tool" ||
			{ log "p2$kind on/$run: rankscope did not attach"; tail -5 "$d/tool.err" >&2; abort_run; return 1; }
	elif [ "$cond" = floor ]; then
		attach_floors "$d" "${pids[@]}" ||
			{ log "p2$kind floor/$run: uprobe_floor did not attach"; abort_run; return 1; }
	fi
	touch "$d/go"
	cpu0=$(tool_cpu_ticks "$tool")
	t0=$(date +%s%N)
	# rankscope's own CPU while the job runs (its drain and model): % of one core
	while kill -0 "$job" 2>/dev/null; do
		cpu1=$(tool_cpu_ticks "$tool")
		t1=$(date +%s%N)
		sleep 0.5
	done
	stop "$job" "$RUN_TIMEOUT"
	rc=$?
	job=""
	cpu=-
	[ -n "$tool" ] && [ -n "${cpu1:-}" ] && [ "$t1" -gt "$t0" ] &&
		cpu=$(awk -v c=$((cpu1 - cpu0)) -v hz="$(getconf CLK_TCK)" -v ns=$((t1 - t0)) \
			'BEGIN { printf "%.3f", c / hz / (ns / 1e9) * 100 }')
	for fl in "${floors[@]}"; do
		stop "$fl" 15
	done
	[ -n "$tool" ] && { stop "$tool" 15; tool=""; }
	if [ "$rc" -ne 0 ]; then
		log "p2$kind $cond/$run: the job failed (exit $rc)"
		tail -5 "$d/job.err" >&2
		return 1
	fi
	med=$("$PY" - "$d/job.out" <<'PY'
import json, statistics, sys
steps = {}
for l in open(sys.argv[1]):
    if l.startswith('{"type":"truth"'):
        t = json.loads(l)
        if t["step"] >= 5:
            steps.setdefault(t["rank"], []).append(t["step_ns"])
meds = [statistics.median(v) for _, v in sorted(steps.items())]
print(f"{statistics.median(meds):.0f}" if len(meds) == 2 else "", ",".join(f"{m:.0f}" for m in meds))
PY
)
	[ -n "${med%% *}" ] || { log "p2$kind $cond/$run: no truth lines from both ranks"; return 1; }
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "p2$kind" "$cond" "$run" "${med%% *}" "${med#* }" "$cpu" \
		>>"$SAMPLES"
	log "p2$kind run $run $cond: median step ${med%% *} ns (ranks: ${med#* })" \
		"$([ "$cpu" != - ] && echo "rankscope_cpu=$cpu%")"
}

# tool_cpu_ticks PID: utime + stime of the rankscope under the `timeout` at PID (empty: none)
tool_cpu_ticks() {
	local p
	[ -n "$1" ] || return 0
	p=$(pgrep -P "$1" | head -1)
	[ -n "$p" ] && awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null
}

# retry FN ARGS...: a run may fail on a loaded machine (a slow start); one more try, then give up.
retry() {
	"$@" && return 0
	log "retrying $*"
	"$@" || die "$* failed twice; the logs above say why"
}

START=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
CONDS=(a b c)
[ "$HAVE_BPFTRACE" = 1 ] && CONDS+=(d)

if [[ $PARTS == *1* ]]; then
	log "part 1: $ROUNDS rounds of ${CONDS[*]}, $CALLS MPI_Allreduce calls of $COUNT double(s), 1 rank"
	p1_run a 0 && sed -i '$d' "$SAMPLES"	# warm-up: page cache, first mpirun; not counted
	for ((r = 1; r <= ROUNDS; r++)); do
		for c in "${CONDS[@]}"; do
			retry p1_run "$c" "$r"
		done
	done
fi

P1_S=$(( $(date +%s) - START ))
log "part 1 took ${P1_S}s"
if [[ $PARTS == *2* ]]; then
	log "part 2: $RUNS alternating runs off/floor/on, $NP ranks, $ITERS iterations of ${COMPUTE_US} us compute"
	for ((r = 1; r <= RUNS; r++)); do
		retry p2_run off "$r"
		retry p2_run floor "$r"
		retry p2_run on "$r"
	done
	log "part 2: $RUNS alternating runs off/floor/on of the 3-bucket OpenMPI job ($P2_ZOO_STEPS steps)"
	for ((r = 1; r <= RUNS; r++)); do
		for c in off floor on; do
			retry p2j_run zoo "$c" "$r"
		done
	done
	if "$PY" -c 'import torch' 2>/dev/null; then
		log "part 2: $P2_DDP_RUNS alternating runs off/on of the 2-rank DDP (gloo) job ($P2_DDP_STEPS steps)"
		for ((r = 1; r <= P2_DDP_RUNS; r++)); do
			retry p2j_run ddp off "$r"
			retry p2j_run ddp on "$r"
		done
	else
		log "part 2: python3-torch missing: the DDP rows are skipped (make deps)"
	fi
fi

if [[ $PARTS == *5* ]]; then
	log "part 5: $RUNS alternating runs on/cap/capfp (attached, recording a capture, and one"
	log "        whose stack samples copy no stack)"
	P2_TAG=p5
	for ((r = 1; r <= RUNS; r++)); do
		retry p2_run on "$r"
		retry p2_run cap "$r"
		retry p2_run capfp "$r"
	done
	P2_TAG=p2
fi

# p3_run: where rankscope's time goes. Per-program BPF run time (kernel.bpf_stats_enabled)
# over a 2 s window of the same job with rankscope attached.
p3_run() {
	local d="$T/p3" job tool pids stats_was t0 t1
	mkdir -p "$d"
	stats_was=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null) || { log "p3: no bpf_stats"; return 1; }
	bg "$d/job.out" "$d/job.err" "${MPIRUN[@]}" -np "$NP" "$LOOP" --go-file "$d/go" \
		--iters $((ITERS * 10)) --compute-us "$COMPUTE_US"
	job=$BG_PID
	wait_lines "$d/job.out" '^ready rank=' "$NP" 60 "$job" || { abort_run; return 1; }
	mapfile -t pids < <(rank_pids "$d/job.out")
	RANK_PIDS+=("${pids[@]}")
	sysctl -q kernel.bpf_stats_enabled=1
	bg "$d/tool.out" "$d/tool.err" "$RS" attach -p "$(IFS=,; echo "${pids[*]}")" --json "${RS_ARGS[@]}"
	tool=$BG_PID
	wait_lines "$d/tool.out" '^\{"type":"rank"' "$NP" 30 "$tool" || { sysctl -q kernel.bpf_stats_enabled="$stats_was"; abort_run; return 1; }
	touch "$d/go"
	sleep 0.5
	t0=$(date +%s%N)
	bpftool -j prog show >"$d/before.json"
	sleep 2
	bpftool -j prog show >"$d/after.json"
	t1=$(date +%s%N)
	sysctl -q kernel.bpf_stats_enabled="$stats_was"
	"$PY" - "$d/before.json" "$d/after.json" $((t1 - t0)) >>"$SAMPLES" <<'PY'
import json, sys
def progs(path):
    return {p["id"]: p for p in json.load(open(path)) if p.get("name", "").startswith("rs_")}
a, b, window = progs(sys.argv[1]), progs(sys.argv[2]), sys.argv[3]
for i, p in sorted(b.items(), key=lambda kv: kv[1]["name"]):
    runs = p.get("run_cnt", 0) - a.get(i, {}).get("run_cnt", 0)
    ns = p.get("run_time_ns", 0) - a.get(i, {}).get("run_time_ns", 0)
    if runs > 0:
        print(f"p3\t{p['name']}\t0\t{runs}\t{ns}\t{window}")
PY
	stop "$job" "$RUN_TIMEOUT"
	stop "$tool" 15
	log "p3: BPF run time sampled over 2 s"
}

if [[ $PARTS == *3* ]]; then
	retry p3_run
fi

# p4_run RUN: detection latency. A 2-rank job runs healthy, then one rank starts sleeping
# 4 ms before each allreduce at iteration 150; rankscope diagnose is never told which.
p4_run() {
	local run=$1 d="$T/p4.$1" job tool victim=$((RANDOM % 2))
	mkdir -p "$d"
	bg "$d/job.out" "$d/job.err" "${MPIRUN[@]}" -np 2 "$LOOP" --go-file "$d/go" \
		--iters 400 --compute-us "$COMPUTE_US" --slow-rank $victim --slow-us 4000 --slow-from 150
	job=$BG_PID
	wait_lines "$d/job.out" '^ready rank=' 2 60 "$job" || { abort_run; return 1; }
	mapfile -t pids < <(rank_pids "$d/job.out")
	RANK_PIDS+=("${pids[@]}")
	bg "$d/tool.out" "$d/tool.err" "$RS" diagnose -p "$(IFS=,; echo "${pids[*]}")" --json
	tool=$BG_PID
	wait_lines "$d/tool.out" '^\{"type":"rank"' 2 30 "$tool" || { abort_run; return 1; }
	touch "$d/go"
	stop "$job" "$RUN_TIMEOUT"
	stop "$tool" 30
	"$PY" - "$d/job.out" "$d/tool.out" "$victim" "$run" >>"$SAMPLES" <<'PY'
import json, re, sys
job, tool, victim, run = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3]), sys.argv[4]
m = re.search(r'^fault rank=(\d+) iter=(\d+) t_ns=(\d+)', job, re.M)
t_fault = int(m[3])
lines = [json.loads(l) for l in open(tool) if l.startswith('{')]
pid = [d['pid'] for d in lines if d['type'] == 'rank' and d['rank'] == victim][0]
fault_step = min(d['step'] for d in lines if d['type'] == 'step' and d['pid'] == pid and
                 d['start_ns'] + d['dur_ns'] > t_fault)
hit = [d for d in lines if d['type'] == 'verdict' and d['class'] == 'compute' and
       d['rank'] == victim and d['t_ns'] > t_fault]
if hit:
    print(f"p4\tcompute\t{run}\t{hit[0]['step'] - fault_step}\t{hit[0]['t_ns'] - t_fault}\t-")
PY
	log "p4 run $run: $(tail -1 "$SAMPLES")"
}

if [[ $PARTS == *4* ]]; then
	for ((r = 1; r <= 3; r++)); do
		retry p4_run "$r"
	done
fi

if [[ $PARTS == *6* ]]; then
	P6_START=$(date +%s)
	log "part 6: the accuracy matrix (tests/workloads/matrix.py --subset full; a few minutes)"
	"$PY" tests/workloads/matrix.py --subset full --out "$T/matrix" --md "$T/matrix.md" \
		--json "$T/matrix.json" 2>&1 | tee "$T/matrix.log" | grep -E '^\[' >&2
	log "part 6 took $(( $(date +%s) - P6_START ))s"
fi

if [[ $PARTS == *7* ]]; then
	P7_START=$(date +%s)
	log "part 7: rankscope hub over synthetic node daemons, 128, 512 and 2048 ranks (~3 min)"
	: >"$T/hub_scale.jsonl"
	for n in 128 512 2048; do
		"$PY" tests/bench/hub_scale.py --rs "$RS" --ranks "$n" --port $((19000 + n)) \
			>>"$T/hub_scale.jsonl" 2>"$T/hub_scale_$n.err" ||
			log "part 7: $n ranks: the hub named no straggler ($(tail -2 "$T/hub_scale_$n.err"))"
		log "part 7: $(tail -1 "$T/hub_scale.jsonl")"
	done
	log "part 7 took $(( $(date +%s) - P7_START ))s"
fi

if [[ $PARTS == *8* ]]; then
	P8_START=$(date +%s)
	log "part 8: the zoo's faults across two nodes, judged by rankscope hub (~4 min)"
	"$PY" tests/bench/hub_faults.py --out "$T/hub_faults" >"$T/hub_faults.md" \
		2>"$T/hub_faults.err" || log "part 8: a cell was wrong: $(grep WRONG "$T/hub_faults.err")"
	log "part 8 took $(( $(date +%s) - P8_START ))s"
fi

# p10_tool COND: start what condition COND attaches (nothing for "none"), wait until it is
# live; sets P10_TOOL (empty for none). Returns 1 when it could not start.
p10_tool() {
	local d="$T/p10" c=$1
	P10_TOOL=
	case $c in
	none) return 0 ;;
	floor) bg "$d/$c.out" "$d/$c.err" build/bench/hook_floor
		P10_TOOL=$BG_PID
		wait_lines "$d/$c.out" '^hook_floor: attached' 1 30 "$P10_TOOL" ;;
	rs) bg "$d/$c.out" "$d/$c.err" "$RS" attach -p "$P10_SLEEPER" --json "${RS_ARGS[@]}"
		P10_TOOL=$BG_PID
		wait_lines "$d/$c.err" 'attached to 1 rank' 1 30 "$P10_TOOL" ;;
	runqlat) bg "$d/$c.out" "$d/$c.err" stdbuf -oL runqlat 3600
		P10_TOOL=$BG_PID
		wait_lines "$d/$c.out" '^Tracing' 1 30 "$P10_TOOL" ;;
	esac || { log "part 10: $c did not start: $(tail -1 "$d/$c.err")"; stop "$P10_TOOL" 0; return 1; }
}

# p10_run COND ROUND: one perf bench sched pipe and one hookcost under COND.
p10_run() {
	local d="$T/p10" c=$1 r=$2 v
	p10_tool "$c" || return 1
	# every condition waits the same: rankscope keeps a CPU busy for ~1 s after it attaches
	# (BTF, /proc, the first ticks), which would be charged to its hooks otherwise
	sleep 2
	v=$(perf bench sched pipe -l 20000 2>/dev/null | awk '/usecs\/op/ {print $1}')
	[ -n "$v" ] && printf '%s\t%s\tpipe_bench_us\t%s\n' "$c" "$r" "$v" >>"$d/samples.tsv"
	build/bench/hookcost -k 5 -n 50000 |
		awk -v c="$c" -v r="$r" '{printf "%s\t%s\t%s_ns\t%s\n", c, r, $2, $3}' >>"$d/samples.tsv"
	[ -n "$P10_TOOL" ] && { stop "$P10_TOOL" 0 || true; }
	return 0
}

# p10_body COND: each program's mean run time (bpf_stats) over one hookcost run under COND.
p10_body() {
	local d="$T/p10" c=$1 was
	was=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null) || return 1
	p10_tool "$c" || return 1
	sleep 2
	bpftool -j prog show >"$d/body_$c.before.json"
	sysctl -q kernel.bpf_stats_enabled=1
	build/bench/hookcost -k 3 -n 100000 >/dev/null
	sysctl -q kernel.bpf_stats_enabled="$was"
	bpftool -j prog show >"$d/body_$c.after.json"
	stop "$P10_TOOL" 0 || true
}

if [[ $PARTS == *0* ]]; then
	P10_START=$(date +%s)
	mkdir -p "$T/p10"
	if ! command -v perf >/dev/null || ! command -v runqlat >/dev/null; then
		log "part 10 skipped: needs perf (linux-perf) and runqlat (libbpf-tools); run 'make deps'"
	else
		log "part 10: $UNTRACKED_ROUNDS rounds of none/floor/rs/runqlat on untracked processes (~2 min)"
		bg "$T/p10/sleeper.out" "$T/p10/sleeper.err" sleep 3600
		P10_SLEEPER=$BG_PID
		for ((r = 1; r <= UNTRACKED_ROUNDS; r++)); do
			for c in none floor rs runqlat; do
				p10_run "$c" "$r" || break 2
			done
		done
		p10_body rs && p10_body floor
		stop "$P10_SLEEPER" 0
		"$PY" tests/bench/untracked.py "$T/p10" >"$T/untracked.md" ||
			log "part 10: failed to summarize $T/p10"
	fi
	log "part 10 took $(( $(date +%s) - P10_START ))s"
fi

# script_part N NAME WHAT: part N is tests/bench/NAME.sh, its markdown into $T/NAME.md
script_part() {
	local n=$1 name=$2 start
	start=$(date +%s)
	log "part $n: $3"
	"tests/bench/$name.sh" >"$T/$name.md" 2>"$T/$name.err" ||
		log "part $n failed: $(tail -2 "$T/$name.err")"
	log "part $n took $(( $(date +%s) - start ))s"
}

[[ $PARTS == *u* ]] && script_part 11 userspace \
	"rankscope's own process, 8 ranks at ~1,000 collectives/s, attach and daemon (~4 min)"
[[ $PARTS == *s* ]] && script_part 12 storm \
	"an event storm, 1 and 2 producers, alone and tracked (~1 min)"
[[ $PARTS == *r* ]] && script_part 14 replay "diagnose --replay throughput on one core (~3 min)"
if [[ $PARTS == *m* ]]; then
	P15_START=$(date +%s)
	log "part 15: the shape simulator on ${BENCH_SIM_SEEDS:-5000} fresh seeds (~30 min)"
	tests/sim/run --fresh "${BENCH_SIM_SEEDS:-5000}" --jobs "$(nproc)" --out "$T/sim.md" \
		>"$T/sim.out" 2>"$T/sim.err" || log "part 15: $(tail -2 "$T/sim.err")"
	log "part 15 took $(( $(date +%s) - P15_START ))s"
fi

if [[ $PARTS == *9* ]]; then
	P9_START=$(date +%s)
	log "part 9: 200 stack snapshots of a running job, against the job alone (~3 min)"
	STACKS_SNAPSHOTS=200 STACKS_STEPS=50000 bash tests/e2e/stacks_harmless.sh \
		>"$T/stacks_harmless.out" 2>&1 ||
		log "part 9 failed: $(tail -2 "$T/stacks_harmless.out")"
	log "part 9 took $(( $(date +%s) - P9_START ))s"
fi

LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$(( $(date +%s) - START ))
log "part 2 took $((ELAPSED - P1_S))s"

CPU=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1)
sed -n '/^## 13\. Soak/,$p' "$RESULTS" >"$T/soak_keep.md" 2>/dev/null
REV=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || REV="$REV+dirty"
"$PY" tests/bench/summarize.py "$SAMPLES" \
	--date "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" \
	--kernel "$(uname -r)" --cpu "${CPU:-unknown} ($(nproc) CPUs)" --rev "$REV" \
	--mpi "$(mpirun --version 2>/dev/null | head -1)" \
	--bpftrace "$( [ "$HAVE_BPFTRACE" = 1 ] && bpftrace --version 2>/dev/null | head -1 || echo none)" \
	--load "$LOAD0 -> $LOAD1" --elapsed "$ELAPSED" --rs-args "${BENCH_RS_ARGS:-}" \
	--calls "$CALLS" --count "$COUNT" --rounds "$ROUNDS" \
	--np "$NP" --iters "$ITERS" --compute-us "$COMPUTE_US" --runs "$RUNS" \
	--out "$RESULTS" || die "failed to summarize $SAMPLES"
if [ -s "$T/matrix.md" ]; then
	cat >>"$RESULTS" <<'EOT'

## 6. Accuracy matrix: structure x fault x attach

Each cell is a real job from `tests/workloads/` (`zoo_mpi` on OpenMPI with 2 ranks, 4 where
marked np4; `zoo_ddp.py` on PyTorch DDP with gloo), one fault on one rank, and
`rankscope diagnose --json` attached before the job starts or 3 s into it (mid). *Right*: the
expected class and rank, and no other verdict but at most one transient one (reported in the
note). *Steps to detect*: from the first step rankscope saw with the fault to the verdict's step
(seconds for hang, rank_exited and divergent). *Phases*: each rank's mean phases against the
workload's own clock; an error counts over 10% of the phase and 5% of the step. Healthy runs
(`none`) are 300 steps (1500 when attached mid-run) and must get no verdict that the
workload's own clock does not show: a verdict whose rank did the most work by half the
threshold over its window, in the part its class names (a pipeline_bubble: a stage idling
over 1.5x its schedule's share), is a real imbalance of the job on two shared vCPUs, reported
as one in the note; any other is false.

EOT
	cat "$T/matrix.md" >>"$RESULTS"
fi
if [ -s "$T/hub_scale.jsonl" ]; then
	"$PY" - "$T/hub_scale.jsonl" >>"$RESULTS" <<'EOT'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("""
## 7. The hub at scale

`tests/bench/hub_scale.py`: synthetic node daemons (8 ranks each, one asyncio process on
127.0.X.Y addresses) serve `/api/v1/ranks`, `/api/v1/steps?since=` and `/api/v1/diagnosis` for
one job making one step a second; each node numbers its steps from its own attach and reads a
clock offset by up to a day. `rankscope hub --interval 1` polls them all. After 20 s one rank
computes 30% of a step more. *CPU*: the hub's user+system time over the run's wall time (share
of one core). *RSS*: its peak (VmHWM). *Latency*: from the moment every node serves a step's
lines to the hub's verdict line for that step naming the straggler; *steps*: from the fault's
first step to that verdict.

| ranks | nodes | CPU (share of a core) | RSS (MB) | verdict | latency (s) | latency (poll intervals) | steps to detect |
|---|---|---|---|---|---|---|---|""")
for r in rows:
    v = r.get("verdict") or {}
    lat = v.get("latency_s")
    print(f"| {r['ranks']} | {r['nodes']} | {r['cpu_core_share']:.4f} | {r['rss_mb']} | "
          f"{'compute on the slow rank' if v else '**none**'} | {lat if lat is not None else '-'} | "
          f"{round(lat / r['interval_s'], 1) if lat is not None else '-'} | "
          f"{v.get('steps_to_detect', '-')} |")
if len(rows) > 1:
    a, b = rows[0], rows[-1]
    g = b["ranks"] / a["ranks"]
    print(f"\nFrom {a['ranks']} to {b['ranks']} ranks ({g:.0f}x): CPU x"
          f"{b['cpu_core_share'] / max(a['cpu_core_share'], 1e-9):.1f}, RSS x"
          f"{b['rss_mb'] / max(a['rss_mb'], 1e-9):.1f}.")
EOT
fi
if [ -s "$T/hub_faults.md" ]; then
	cat >>"$RESULTS" <<'EOT'

## 8. The zoo's faults across two nodes, judged by the hub

`tests/bench/hub_faults.py`: a real OpenMPI job (`zoo_mpi`, 3 equal buckets a step) split
between two cgroups, a node daemon scoped to each (`--cgroup`), `rankscope hub` over both;
the fault on the last rank (node B). 2 ranks (one a node and a vCPU), 4 for the divergences
(a majority names the odd rank). *Right*: the hub's first verdict that is not `none` names the
fault's class and rank and most later ones agree, node A's daemon (which sees only its own
ranks) never says `communication`, and a healthy job gets no verdict after 20 s. *Seconds*:
from go to the first verdict naming it (hang, exit and divergences come at step 3000, ~8 s).

EOT
	cat "$T/hub_faults.md" >>"$RESULTS"
fi
if grep -q '^stacks_harmless: ' "$T/stacks_harmless.out" 2>/dev/null; then
	"$PY" - "$T/stacks_harmless.out" >>"$RESULTS" <<'EOT'
import json, sys
r = [json.loads(l.split(": ", 1)[1]) for l in open(sys.argv[1]) if l.startswith("stacks_harmless: ")][0]
print(f"""
## 9. Stack snapshots of a running job

`tests/e2e/stacks_harmless.sh` with 200 snapshots: a 2-rank OpenMPI job (`zoo_mpi`, 3 buckets a
step, 50000 steps) run alone, then again while `rankscope stacks -p PIDS` takes 200 snapshots
back to back. Both runs end with the same steps and the same checksum of the all-reduces'
results on every rank (the test fails otherwise).

| snapshots | median step alone (ms) | median step under snapshots (ms) | each thread held, median of medians (ms) | each thread held, most (ms) |
|---|---|---|---|---|
| {r['snapshots']} | {r['step_ms_alone']:.3f} | {r['step_ms_snapshots']:.3f} | {r['thread_held_median_ms']:.3f} | {r['thread_held_max_ms']:.3f} |""")
EOT
fi
[ -s "$T/untracked.md" ] && cat "$T/untracked.md" >>"$RESULTS"
[ -s "$T/userspace.md" ] && cat "$T/userspace.md" >>"$RESULTS"
[ -s "$T/storm.md" ] && cat "$T/storm.md" >>"$RESULTS"
[ -s "$T/replay.md" ] && cat "$T/replay.md" >>"$RESULTS"
if [ -s "$T/sim.md" ]; then
	printf '\n## 15. The shape simulator: fresh seeds\n\n' >>"$RESULTS"
	cat "$T/sim.md" >>"$RESULTS"
fi
# the last make soak run (part 13) is not bench's: kept as it was
[ -s "$T/soak_keep.md" ] && { echo; cat "$T/soak_keep.md"; } >>"$RESULTS"
cat "$RESULTS"
log "wrote $RESULTS in ${ELAPSED}s"
