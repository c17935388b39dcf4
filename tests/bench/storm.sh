#!/usr/bin/env bash
# storm.sh - bench part 12: the most events rankscope drains, and what limits it.
#
# S processes of build/fixtures/storm (S = 1, then 2: one per vCPU) each make N 1-byte pipe
# write+read pairs as fast as they can, tracked by `rankscope attach --json --io-min-us 0`
# (every syscall streamed: 2 records a pair) with the default ring buffer (4 MiB) and drain
# (100 ms, read every 25 ms). Alone first, for the producers' bare speed. Reports records/s made and drained,
# drops (attempted == received + dropped is checked), rankscope's loop CPU per record, and the
# stage that limits: the producers (no drops) or the drain (drops). Markdown on stdout.
set -u -o pipefail
[ "$(id -u)" = 0 ] || { echo "SKIP: storm: needs root" >&2; exit 77; }
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$TOP" || exit 1
RS=build/rankscope
N=${STORM_CALLS:-1000000}
T=$(mktemp -d /tmp/rankscope-storm.XXXXXX)
trap 'pkill -TERM -f "$T/" 2>/dev/null; rm -rf "$T"' EXIT
log() { echo "storm: $*" >&2; }

# run S WITH_RS: prints "S with elapsed_ns_max attempted received dropped loop_cpu_s"
run() {
	local s=$1 with=$2 d="$T/$1.$2" i pids rs=""
	mkdir -p "$d"
	for ((i = 0; i < s; i++)); do
		build/fixtures/storm --go-file "$d/go" --calls "$N" >"$d/storm.$i.out" 2>&1 &
	done
	for ((i = 0; i < 200; i++)); do
		[ "$(cat "$d"/storm.*.out 2>/dev/null | grep -c '^ready')" -ge "$s" ] && break
		sleep 0.05
	done
	pids=$(cat "$d"/storm.*.out | sed -n 's/^ready rank=[0-9]* pid=\([0-9]*\).*/\1/p' | paste -sd,)
	if [ "$with" = 1 ]; then
		"$RS" attach -p "$pids" --json --io-min-us 0 ${STORM_RS_ARGS:-} >"$d/rs.out" 2>"$d/rs.err" &
		rs=$!
		for ((i = 0; i < 300; i++)); do
			[ "$(grep -c '"type":"rank"' "$d/rs.out")" -ge "$s" ] && break
			sleep 0.05
		done
	fi
	touch "$d/go"
	wait $(jobs -p | grep -v "^${rs:-x}$") 2>/dev/null
	[ -n "$rs" ] && wait "$rs"
	/usr/bin/python3 - "$d" "$s" "$with" <<'PY'
import glob, json, re, sys
d, s, w = sys.argv[1], sys.argv[2], sys.argv[3]
el = max(int(re.search(r"elapsed_ns=(\d+)", open(f).read())[1]) for f in glob.glob(f"{d}/storm.*.out"))
a = r = dr = 0
cpu = 0.0
if w == "1":
    self = [json.loads(l) for l in open(f"{d}/rs.out") if '"type":"self"' in l][-1]
    io = self["families"]["io"]
    a, r, dr = io["attempted"], io["received"], io["dropped"]
    cpu = self.get("cpu_s", {}).get("loop", 0.0)
print(s, w, el, a, r, dr, cpu)
PY
}

: >"$T/res"
for s in 1 2; do
	log "$s storm(s) of $N write+read pairs: alone, then tracked"
	run "$s" 0 >>"$T/res" || log "alone run failed"
	run "$s" 1 >>"$T/res" || log "tracked run failed"
done
/usr/bin/python3 - "$T/res" "$N" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
n = int(sys.argv[2])
alone = {r[0]: int(r[2]) for r in rows if r[1] == "0"}
print(f"""
## 12. Event storm: the most rankscope drains

`build/fixtures/storm`: 1 or 2 processes (one per vCPU), each {n:,} 1-byte pipe write+read
pairs as fast as they go, tracked by `rankscope attach --json --io-min-us 0` (every syscall
streamed: 2 records a pair, 56 bytes each plus an 8-byte ring header), default ring buffer (4 MiB) and drain (100 ms, read every 25 ms, sooner as it fills).
*Alone*: the same storm untracked. *Made* = attempted records over the storm's run; *drained*
= received over the same time; attempted == received + dropped holds in every run (checked).
""")
print("| storms | pairs/s alone | records/s made | records/s drained | dropped | loop CPU per record (µs) | limit |")
print("|---|---|---|---|---|---|---|")
bad = False
for s, w, el, a, r, dr, cpu in rows:
    if w != "1":
        continue
    el, a, r, dr, cpu = int(el), int(a), int(r), int(dr), float(cpu)
    if a != r + dr:
        bad = True
    pairs_alone = int(s) * n / (alone[s] / 1e9)
    made, drained = a / (el / 1e9), r / (el / 1e9)
    per = cpu / r * 1e6 if r else 0
    limit = ("the drain: rankscope's loop (decode, timelines) falls behind the producers"
             if dr else "the producers, slowed by the probes on each syscall: every record was drained")
    print(f"| {s} | {pairs_alone:,.0f} | {made:,.0f} | {drained:,.0f} | {dr:,} ({100 * dr / a:.1f}%) | "
          f"{per:.2f} | {limit} |")
if bad:
    print("\n**Accounting broken: attempted != received + dropped in a run above.**")
    sys.exit(1)
PY
