#!/usr/bin/env bash
# rankscope stacks on processes that make the unwinder's life hard.
#  - 5,000 threads (build/fixtures/deep_stack --threads 5000): bounded time and memory (the
#    first UNWIND_THREADS threads are read, the rest counted and said, in the JSON and the
#    text); the process runs on afterwards.
#  - A process killed while it is being unwound (2,000 threads, SIGKILL 10-150 ms into the
#    snapshot): rankscope neither crashes nor hangs, and says what it got.
#  - Threads that come and go all the time (deep_stack --churn) while 20 snapshots are taken:
#    the process is never left stopped or traced, and goes on making threads.
#  - A data file the process maps is never opened (strace shows no open of it): only the
#    files of its code mappings, through /proc/PID/map_files.
#  - A CPython other than 3.11 (pyenv's, when there is one): native frames only, and a note
#    that names both versions.
. "$(dirname "$0")/../lib.sh"
need_root
[ -x "$FIX/deep_stack" ] || fail "build/fixtures/deep_stack is missing: make fixtures"

# run_stacks NAME ARGS...: rankscope stacks with its peak memory and wall time in NAME.usage
run_stacks() {
	local name=$1
	shift
	$PY - "$T/$name" "$RS" stacks "$@" <<'PY'
import resource, subprocess, sys, time
out = sys.argv[1]
t0 = time.monotonic()
with open(out + ".json", "w") as f, open(out + ".err", "w") as e:
    try:
        rc = subprocess.run(sys.argv[2:], stdout=f, stderr=e, timeout=30).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
open(out + ".usage", "w").write(f"{rc} {time.monotonic() - t0:.3f} {ru.ru_maxrss}\n")
PY
}

# 1. 5,000 threads
bg many "$FIX/deep_stack" --threads 5000
wait_lines "$T/many.out" '^ready pid=' 1 60 || fail "deep_stack --threads 5000 did not start"
run_stacks many --json -p "$PID_many"
run_stacks many_txt -p "$PID_many"
read -r rc secs rss <"$T/many.usage"
[ "$rc" = 0 ] || fail "stacks on 5,000 threads: rc $rc: $(tail -3 "$T/many.err")"
grep -q "thread(s) past the first 256 not read" "$T/many_txt.json" ||
	fail "the text output does not say threads were left out: $(tail -3 "$T/many_txt.json")"
$PY - "$T/many.json" "$secs" "$rss" "$PID_many" <<'PY' || exit 1
import json, sys
x = json.loads(open(sys.argv[1]).readline())
secs, rss, pid = float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
n = len(x["threads"])
assert n == 256 and x["threads_cut"] >= 4700, (n, x.get("threads_cut"))
main = [t for t in x["threads"] if t["tid"] == pid]
assert main and any(f["func"] == "deep_12" for f in main[0]["frames"]), "main thread not unwound"
# generous sanity bounds, not a benchmark
assert secs < 20 and rss < 256 * 1024, (secs, rss)
print(f"5,000 threads: {n} read, {x['threads_cut']} counted, {secs:.2f} s, {rss / 1024:.0f} MB")
PY
[ "$(awk '{print $3}' "/proc/$PID_many/stat")" != T ] || fail "the 5,000-thread process is stopped"
kill "$PID_many"

# 2. killed mid-unwind
for d in 10 40 80 150; do
	bg gone$d "$FIX/deep_stack" --threads 2000
	wait_lines "$T/gone$d.out" '^ready pid=' 1 60 || fail "deep_stack --threads 2000 did not start"
	pid=$(eval echo "\$PID_gone$d")
	( sleep "0.$(printf %03d $d)"; kill -KILL "$pid" ) &
	run_stacks gone$d --json -p "$pid"
	wait
	read -r rc secs rss <"$T/gone$d.usage"
	case $rc in
	0|1) ;;
	*) fail "stacks on a process killed ${d} ms in: rc $rc: $(tail -3 "$T/gone$d.err")" ;;
	esac
	$PY - "$T/gone$d.json" "$d" "$rc" <<'PY' || exit 1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]	# whatever came out is whole JSON
st = [x for x in lines if x["type"] == "stacks"]
if st and st[0]["threads"]:
    th = st[0]["threads"]
    read = sum(1 for t in th if t["frames"])
    # cut short: said, for the process or for each thread without frames
    if read < len(th):
        assert "exited while it was read" in st[0].get("note", "") or \
            all(t.get("note") for t in th if not t["frames"]), st[0].get("note")
    got = f"{read} of {len(th)} threads with frames; {st[0].get('note') or 'whole'}"
else:
    got = "nothing"
print(f"killed {sys.argv[2]} ms in: rc {sys.argv[3]}, {got}")
PY
done

# 3. threads that come and go
bg churn "$FIX/deep_stack" --churn
wait_lines "$T/churn.out" '^ready pid=' 1 20 || fail "deep_stack --churn did not start"
for i in $(seq 20); do
	"$RS" stacks -p "$PID_churn" --json >"$T/churn$i.json" 2>&1 ||
		fail "stacks on a churning process, snapshot $i: $(tail -3 "$T/churn$i.json")"
done
sleep 0.2
[ "$(awk '{print $3}' "/proc/$PID_churn/stat")" != T ] || fail "the churning process is stopped"
for s in /proc/"$PID_churn"/task/*/status; do
	awk '/^(State|TracerPid)/' "$s" 2>/dev/null
done | $PY -c '
import sys
bad = [l.strip() for l in sys.stdin if l.startswith("State:\tt") or l.startswith("State:\tT")
       or (l.startswith("TracerPid:") and l.split()[1] != "0")]
assert not bad, bad
' || fail "a thread of the churning process was left stopped or traced"
a=$(ls "/proc/$PID_churn/task" | sort | tr '\n' ' ')
sleep 0.3
b=$(ls "/proc/$PID_churn/task" | sort | tr '\n' ' ')
[ "$a" != "$b" ] || fail "the churning process stopped making threads"
kill "$PID_churn"
echo "20 snapshots of a churning process: never left stopped or traced, still churning"

# 4. a data file the process maps (a dataset on a mount that may hang) is never opened: only
#    the code mappings' files are, through /proc/PID/map_files
if command -v strace >/dev/null; then
	head -c 1048576 /dev/urandom >"$T/dataset.bin"
	bg mapper "$PY" -c 'import mmap, sys, time
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
print("ready", flush=True)
time.sleep(600)' "$T/dataset.bin"
	wait_lines "$T/mapper.out" '^ready' 1 20 || fail "the mapping process did not start"
	range=$(awk -v f="$T/dataset.bin" '$6 == f { print $1; exit }' "/proc/$PID_mapper/maps")
	[ -n "$range" ] || fail "the data file is not in the process's maps"
	strace -f -qq -e trace=openat -o "$T/opens.txt" "$RS" stacks -p "$PID_mapper" --json \
		>"$T/mapper.json" 2>&1 || fail "stacks on the mapping process: $(tail -3 "$T/mapper.json")"
	grep -q "map_files/" "$T/opens.txt" || fail "no code file was opened through map_files"
	grep -q "map_files/$range\|dataset.bin" "$T/opens.txt" &&
		fail "the data file was opened: $(grep -m1 "map_files/$range\|dataset.bin" "$T/opens.txt")"
	echo "a mapped data file ($range): not opened; $(grep -c map_files/ "$T/opens.txt") code files were"
	kill "$PID_mapper"
fi

# 5. another CPython: native frames only, with a note
OTHER=
for p in /root/.pyenv/versions/3.1[2-9]*/bin/python3 /usr/bin/python3.1[2-9] \
	/usr/local/bin/python3.1[2-9]; do
	[ -x "$p" ] && { OTHER=$p; break; }
done
[ -n "$OTHER" ] || skip "no CPython other than 3.11 on this machine (parts 1-4 passed)"
bg other "$OTHER" -c 'import time
print("ready", flush=True)
time.sleep(600)'
wait_lines "$T/other.out" '^ready' 1 20 || fail "$OTHER did not start"
"$RS" stacks -p "$PID_other" --json >"$T/other.json" 2>"$T/other.err" ||
	fail "stacks on $OTHER: $(tail -3 "$T/other.err")"
$PY - "$T/other.json" "$("$OTHER" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" <<'PY' || exit 1
import json, sys
x = json.loads(open(sys.argv[1]).readline())
ver = sys.argv[2]
note = x.get("python_note", "")
assert ver in note and "3.11" in note and "native frames only" in note, note
assert "python" not in x, x.get("python")
main = [t for t in x["threads"] if t["tid"] == x["pid"]][0]
assert main["frames"] and all(f["kind"] == "native" for f in main["frames"]), main["frames"][:3]
assert any("sleep" in (f["func"] or "") for f in main["frames"]), [f["func"] for f in main["frames"]]
print(f"CPython {ver}: {len(main['frames'])} native frames; '{note}'")
PY
kill "$PID_other"
pass "stacks: 5,000 threads bounded, a process killed mid-unwind, churning threads never" \
	"left stopped, another CPython read natively with a note"
