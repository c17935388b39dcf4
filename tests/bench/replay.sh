#!/usr/bin/env bash
# bench part 14: how fast `rankscope diagnose --replay` reads, on one core (taskset), median
# of BENCH_REPLAY_RUNS runs each:
#  (a) an op trace: 16 ranks on 2 "nodes" with clock offsets, shuffled lines, each step an
#      input wait, compute, four bucket all-reduces and some run-queue delay (~2M records);
#  (b) a live recording (diagnose --json --events) of a 2-rank OpenMPI job, replayed line for
#      line (the test that it equals the live run is tests/e2e/replay.sh; checked here too).
# Prints a markdown section on stdout. Needs root for (b) only.
set -u -o pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$TOP" || exit 1
RS=build/rankscope
PY=/usr/bin/python3
RUNS=${BENCH_REPLAY_RUNS:-5}
STEPS=${BENCH_REPLAY_STEPS:-20000}
T=$(mktemp -d /tmp/rankscope-bench-replay.XXXXXX)
trap 'rm -rf "$T"' EXIT

"$PY" - "$T/trace.jsonl" "$STEPS" <<'PY'
import json, random, sys
out, steps = sys.argv[1], int(sys.argv[2])
rnd = random.Random(14)
W = 16
off = [0 if r < 8 else 7_300_000_123 for r in range(W)]
lines = [json.dumps({"type": "meta", "world_size": W, "job": "bench"})]
t = [10_000_000_000] * W
for s in range(steps):
    for b in range(4):
        arr = []
        for r in range(W):
            if b == 0:
                lines.append(json.dumps({"type": "op", "rank": r, "op": "input_wait",
                                         "start_ns": t[r] + off[r], "dur_ns": 150_000}))
                t[r] += 150_000
            c = 600_000 + rnd.randint(0, 40_000) + (300_000 if r == 5 else 0)
            lines.append(json.dumps({"type": "op", "rank": r, "op": "compute",
                                     "start_ns": t[r] + off[r], "dur_ns": c}))
            if rnd.random() < 0.3:
                lines.append(json.dumps({"type": "op", "rank": r, "op": "sched_delay",
                                         "start_ns": t[r] + off[r] + c // 2, "dur_ns": 20_000}))
            arr.append(t[r] + c)
        done = max(arr) + 120_000
        for r in range(W):
            e = done + rnd.randint(0, 3000)
            lines.append(json.dumps({"type": "op", "rank": r, "op": "allreduce",
                                     "start_ns": arr[r] + off[r], "dur_ns": e - arr[r],
                                     "comm": "world", "bytes": (b + 1) << 20}))
            t[r] = e
body = lines[1:]
for i in range(0, len(body), 5000):	# shuffled in chunks, as merged per-rank files are
    chunk = body[i:i + 5000]
    rnd.shuffle(chunk)
    body[i:i + 5000] = chunk
with open(out, "w") as f:
    f.write(lines[0] + "\n" + "\n".join(body) + "\n")
PY

# median_time FILE ARGS...: the median wall seconds of RUNS replays, on CPU 0 only
median_time() {
	local f=$1 i
	shift
	for ((i = 0; i < RUNS; i++)); do
		/usr/bin/time -f %e -o "$T/time" taskset -c 0 "$RS" diagnose --replay "$f" "$@" \
			>/dev/null 2>&1
		tail -1 "$T/time"
	done | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p"
}

row() {	# row WHAT FILE RECORDS: a table row
	local s
	s=$(median_time "$2" --json)
	"$PY" -c 'import sys; w, f, lines, recs, s = sys.argv[1:6]; lines, recs, s = int(lines), int(recs), float(s)
print(f"| {w} | {lines:,} | {recs:,} | {s:.2f} | {recs / s / 1e6:.2f} | {lines / s / 1e6:.2f} |")' \
		"$1" "$2" "$(wc -l <"$2")" "$3" "$s"
}

TRACE_RECS=$(grep -vc -e '"compute"' -e '"meta"' "$T/trace.jsonl")
REC_ROW=
if [ "$(id -u)" = 0 ] && command -v mpirun >/dev/null; then
	setsid mpirun --allow-run-as-root --oversubscribe -np 2 build/fixtures/mpi_loop \
		--go-file "$T/go" --compute-us 300 --iters 30000 >"$T/job.out" 2>&1 &
	JOB=$!
	for _ in $(seq 100); do [ "$(grep -c '^ready rank=' "$T/job.out")" = 2 ] && break; sleep 0.1; done
	PIDS=$(grep -E '^ready rank=' "$T/job.out" | sed 's/.*pid=//' | paste -sd,)
	"$RS" diagnose -p "$PIDS" --json --events >"$T/rec.jsonl" 2>/dev/null &
	RSP=$!
	sleep 2
	touch "$T/go"
	wait "$JOB"
	wait "$RSP"
	"$RS" diagnose --replay "$T/rec.jsonl" --json >"$T/rec.rp" 2>/dev/null
	SAME=no
	cmp -s <(grep -E '"type":"(rule|step|verdict|cost|cost_total)"' "$T/rec.jsonl") "$T/rec.rp" &&
		SAME=yes
	REC_RECS=$(grep -cE '"type":"(collective|offcpu|io|rank_exit|gpu)"' "$T/rec.jsonl")
	REC_ROW=$(row "recording: 2-rank OpenMPI, 30,000 steps (replay equals live: $SAME)" \
		"$T/rec.jsonl" "$REC_RECS")
fi
TRACE_ROW=$(row "op trace: 16 ranks, 2 clocks, $STEPS steps, 4 buckets" "$T/trace.jsonl" \
	"$TRACE_RECS")

cat <<EOT

## 14. Replay: records read per second

\`rankscope diagnose --replay FILE --json\` on one core (\`taskset -c 0\`), the whole run: reading,
lining up clocks, the step model, verdicts and the output lines; median of $RUNS runs.
*Records* are what reaches the model (collectives, off-CPU, I/O, exits; an op trace's compute
ops are not records: on-CPU time is what no record claims).

| input | lines | records | seconds | M records/s | M lines/s |
|---|---|---|---|---|---|
$TRACE_ROW
${REC_ROW}
EOT
