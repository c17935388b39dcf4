#!/usr/bin/env bash
# userspace.sh - bench part 11: what rankscope's own process costs at a steady load.
#
# 8 ranks of build/fixtures/nccl_ranks on the NCCL TEST DOUBLE (real collectives need a GPU;
# the double's calls go through the same uprobes), each ~1,000 collectives/s (a sleep per
# iteration stands in for device time), in two shapes (USERSPACE_SHAPES, BUCKETS:SLEEP_US):
# 25 all-reduces an iteration (the model finds a step an iteration, ~40 steps/s a rank), and 1
# (the worst case for per-step work: ~1,000 steps/s a rank), watched by `rankscope attach --json` and then by `rankscope
# daemon`, each with /metrics on loopback scraped every 5 s as Prometheus would.
# Over a WINDOW-second window: rankscope_cpu_seconds_total by thread, records received, RSS.
# USERSPACE_MODES ("attach daemon", and daemon_steady on the first shape) and USERSPACE_RS (the
# binary) pick what runs, to compare two builds side by side.
# Prints the markdown section on stdout; progress on stderr. Root only (exit 77 otherwise).
set -u -o pipefail
[ "$(id -u)" = 0 ] || { echo "SKIP: userspace: needs root" >&2; exit 77; }
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$TOP" || exit 1
RS=${USERSPACE_RS:-build/rankscope}
NR=${USERSPACE_RANKS:-8}
SHAPES=${USERSPACE_SHAPES:-25:22000 1:850}
WINDOW=${USERSPACE_WINDOW:-10}
# daemon_steady: the daemon past a rank's first 30 s (it looks at new ranks' maps every second
# then, for libraries loaded late), on the first shape only
STEADY_WARM_S=${USERSPACE_STEADY_WARM_S:-35}
RUNS=${USERSPACE_RUNS:-2}
T=$(mktemp -d /tmp/rankscope-userspace.XXXXXX)
PIDS_BG=()
cleanup() {
	local p
	for p in "${PIDS_BG[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
	sleep 0.2
	for p in "${PIDS_BG[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
log() { echo "userspace: $*" >&2; }

# scrape PORT FILE: /metrics to FILE
scrape() {
	/usr/bin/python3 - "$1" >"$2" <<'PY'
import sys, urllib.request
print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10).read().decode())
PY
}

# one MODE RUN BUCKETS SLEEP_US: appends "mode run key value" lines to $T/samples
one() {
	local mode=$1 run=$2 buckets=$3 sleep_us=$4 d="$T/$1.$2.$3" port job rs i pids
	mkdir -p "$d"
	port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	setsid build/fixtures/nccl_ranks --nranks "$NR" --iters 1000000 --compute-us 0 \
		--buckets "$buckets" --sleep-us "$sleep_us" --go-file "$d/go" >"$d/job.out" 2>&1 &
	job=$!
	PIDS_BG+=("$job")
	for ((i = 0; i < 200; i++)); do
		[ "$(grep -c '^ready' "$d/job.out")" -ge "$NR" ] && break
		sleep 0.1
	done
	pids=$(grep '^ready' "$d/job.out" | sed 's/.*pid=\([0-9]*\).*/\1/' | paste -sd,)
	if [ "$mode" != attach ]; then
		setsid "$RS" daemon -p "$pids" --listen "127.0.0.1:$port" --lock-file "$d/lock" \
			>"$d/rs.out" 2>"$d/rs.err" &
	else
		setsid "$RS" attach -p "$pids" --json --listen "127.0.0.1:$port" \
			>"$d/rs.out" 2>"$d/rs.err" &
	fi
	rs=$!
	PIDS_BG+=("$rs")
	for ((i = 0; i < 300; i++)); do
		scrape "$port" "$d/m0" 2>/dev/null && grep -q "^rankscope_ranks $NR\$" "$d/m0" && break
		sleep 0.1
	done
	touch "$d/go"
	# warm: steps learned, verdict windows full
	if [ "$mode" = daemon_steady ]; then sleep "$STEADY_WARM_S"; else sleep 3; fi
	scrape "$port" "$d/m0"
	t0=$(date +%s.%N)
	for ((i = 0; i < WINDOW / 5; i++)); do
		sleep 5
		scrape "$port" "$d/m1"
	done
	t1=$(date +%s.%N)
	/usr/bin/python3 - "$d/m0" "$d/m1" "$mode.$buckets" "$run" "$t0" "$t1" >>"$T/samples" <<'PY'
import re, sys
def parse(p):
    v = {}
    for l in open(p):
        m = re.match(r'^(\w+)(\{[^}]*\})? ([-+.\deE]+|NaN)$', l.strip())
        if m:
            v[(m[1], m[2] or "")] = float(m[3])
    return v
a, b = parse(sys.argv[1]), parse(sys.argv[2])
mode, run, dt = sys.argv[3], sys.argv[4], float(sys.argv[6]) - float(sys.argv[5])
def d(name, labels=""):
    return b.get((name, labels), 0) - a.get((name, labels), 0)
for th in ("loop", "http", "capture"):
    print(mode, run, f"cpu_{th}_pct", 100 * d("rankscope_cpu_seconds_total", f'{{thread="{th}"}}') / dt)
print(mode, run, "records_per_s", d("rankscope_events_received_total", '{family="collectives"}') / dt +
      d("rankscope_events_received_total", '{family="sched"}') / dt +
      d("rankscope_events_received_total", '{family="io"}') / dt +
      d("rankscope_events_received_total", '{family="net"}') / dt)
print(mode, run, "coll_per_s", d("rankscope_events_received_total", '{family="collectives"}') / dt)
print(mode, run, "dropped", sum(d("rankscope_events_dropped_total", f'{{family="{f}"}}')
                               for f in ("sched", "io", "net", "collectives")))
print(mode, run, "rss_mb", b.get(("process_resident_memory_bytes", ""), 0) / 1e6)
print(mode, run, "steps_per_s", sum(b[k] - a.get(k, 0) for k in b
                                    if k[0] == "train_step_seconds_count") / dt)
PY
	# the BPF maps' pages mapped into rankscope (the ring buffer's data twice): RSS, but the
	# kernel's memory, there whether or not it is mapped
	awk -v m="$mode.$buckets" -v r="$run" '/^[0-9a-f]+-/ { bpf = ($6 == "anon_inode:bpf-map") }
		/^Rss:/ && bpf { kb += $2 } END { printf "%s %s bpf_map_mb %.1f\n", m, r, kb / 1000 }' \
		"/proc/$rs/smaps" >>"$T/samples" 2>/dev/null
	kill -INT "$rs" 2>/dev/null
	wait "$rs" 2>/dev/null
	kill -TERM -- "-$job" 2>/dev/null
	wait "$job" 2>/dev/null
	return 0
}

for ((r = 1; r <= RUNS; r++)); do
	for shape in $SHAPES; do
		modes=${USERSPACE_MODES:-attach daemon}
		[ -z "${USERSPACE_MODES:-}" ] && [ "$shape" = "${SHAPES%% *}" ] &&
			modes+=" daemon_steady"
		for mode in $modes; do
			log "run $r: $mode, $NR ranks, ${shape%%:*} all-reduce(s) an iteration"
			one "$mode" "$r" "${shape%%:*}" "${shape#*:}" || log "run $r $mode failed"
		done
	done
done
/usr/bin/python3 - "$T/samples" "$NR" "$WINDOW" "$RUNS" "$STEADY_WARM_S" <<'PY'
import collections, statistics, sys
v = collections.defaultdict(list)
for l in open(sys.argv[1]):
    mode, run, k, x = l.split()
    v[(mode, k)].append(float(x))
nr, window, runs, steady = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
print(f"""
## 11. rankscope's own process at a steady load

{nr} ranks of `build/fixtures/nccl_ranks` on the NCCL **test double** (real collectives need a
GPU; the double's calls pass the same uprobes), each about 1,000 collectives/s, in two shapes:
25 all-reduces an iteration (the model finds a step an iteration: ~40 steps/s a rank), and 1
(~1,000 steps/s a rank: the worst case for per-step work). Watched by `rankscope attach --json` (a
step line per rank per step on stdout) and by `rankscope daemon` (steps kept for the API),
/metrics scraped every 5 s. Over a {window} s window from 3 s after the job starts
(*daemon_steady*: from {steady} s, when the daemon has stopped looking at the ranks' maps every
second for libraries loaded late), medians of {runs}
runs (range in brackets): rankscope's CPU from `rankscope_cpu_seconds_total` by thread, as % of
one core; records from `rankscope_events_received_total`; RSS from
`process_resident_memory_bytes`, and the part of it that is BPF maps mapped into rankscope
(mostly the 4 MiB ring buffer, whose data pages are mapped twice). Goal: at most 1% of a core
and 32 MB.
""")
print("| mode | all-reduces an iteration | collectives/s | steps/s | records/s | loop % | http % | total % of a core | µs per record | RSS MB | of it BPF maps MB | dropped |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
def m(mode, k):
    x = v.get((mode, k), [])
    return (statistics.median(x), min(x), max(x)) if x else (0, 0, 0)
for mode in sorted({k[0] for k in v}, key=lambda x: (x.split(".")[0], -int(x.split(".")[1]))):
    if not v.get((mode, "coll_per_s")):
        continue
    loop, http, cap = m(mode, "cpu_loop_pct"), m(mode, "cpu_http_pct"), m(mode, "cpu_capture_pct")
    tot = [a + b + c for a, b, c in zip(v[(mode, "cpu_loop_pct")], v[(mode, "cpu_http_pct")],
                                         v[(mode, "cpu_capture_pct")])]
    rec = m(mode, "records_per_s")
    per = [t / 100 / r * 1e6 for t, r in zip(tot, v[(mode, "records_per_s")]) if r]
    print(f"| {mode.split('.')[0]} | {mode.split('.')[1]} | {m(mode, 'coll_per_s')[0]:.0f} | "
          f"{m(mode, 'steps_per_s')[0]:.0f} | {rec[0]:.0f} | {loop[0]:.2f} | {http[0]:.2f} | "
          f"{statistics.median(tot):.2f} [{min(tot):.2f}, {max(tot):.2f}] | "
          f"{statistics.median(per):.2f} | {m(mode, 'rss_mb')[0]:.1f} | {m(mode, 'bpf_map_mb')[0]:.1f} | "
          f"{m(mode, 'dropped')[0]:.0f} |")
PY
