#!/usr/bin/env bash
# A job that was already stuck when rankscope came: a real 4-rank OpenMPI job (zoo_mpi, 3
# buckets a step) whose rank R (random) stops itself at step 30 (SIGSTOP, zoo_mpi's sigstop
# fault); its peers block in MPI_Allreduce before any probe exists. Then
# `rankscope diagnose -p PIDS --duration 6 --hang-timeout 2`:
#  - the verdict is hang on rank R within --hang-timeout + 1 s of the attach, its detail the
#    laggard's state (stopped) and the peers that wait;
#  - the text report of the same run says hang on rank R, not "none yet";
# (the peers entered their collectives before the probes existed: nothing is in flight for
# rankscope, so this is what each rank's process is doing, not a collective's wait).
# Then two stuck jobs whose ranks all merely wait, judged by their stacks:
#  - rank R enters MPI_Barrier where its peers enter MPI_Allreduce (zoo_mpi's divhang), all
#    of it before the attach: divergent on R, barrier against allreduce;
#  - rank R sleeps 60 s inside its step (zoo_mpi's sleep fault) while its peers wait in
#    MPI_Allreduce: hang on R, the frames it is in named (clock_nanosleep <- main: not a
#    collective).
# Each verdict carries the stacks it was judged by: the rank's (where it can be read) and a
# waiting peer's.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"

R=$((RANDOM % 4))
bg job mpirun --allow-run-as-root --oversubscribe -np 4 "$TOP/build/workloads/zoo_mpi" \
	--buckets 3 --steps 100000 --fault "sigstop:$R:30"
wait_lines "$T/job.out" '^ready rank=' 4 60 || fail "the MPI job did not start"
read -r -a PIDS <<<"$(ready_pids "$T/job.out" | tr , ' ')"
[ "${#PIDS[@]}" = 4 ] || fail "expected 4 rank pids, got: ${PIDS[*]}"
stopped=
for ((i = 0; i < 100; i++)); do
	[ "$(awk '{print $3}' "/proc/${PIDS[R]}/stat" 2>/dev/null)" = T ] && { stopped=1; break; }
	sleep 0.1
done
[ -n "$stopped" ] || fail "rank $R did not stop itself"
sleep 1		# its peers are inside MPI_Allreduce, waiting
PIDLIST=$(IFS=,; echo "${PIDS[*]}")

t0=$($PY -c 'import time; print(time.monotonic_ns())')
"$RS" diagnose -p "$PIDLIST" --duration 6 --hang-timeout 2 --json >"$T/diag.json" 2>"$T/diag.err" ||
	fail "diagnose failed: $(tail -3 "$T/diag.err")"
"$RS" diagnose -p "$PIDLIST" --duration 5 --hang-timeout 2 >"$T/diag.txt" 2>&1 ||
	fail "diagnose (text) failed: $(tail -3 "$T/diag.txt")"
# the daemon serves the stuck job's stacks at /api/v1/stacks once the hang timeout has passed
PORT=$(free_port)
bg rsd "$RS" daemon -p "$PIDLIST" --listen "127.0.0.1:$PORT" --hang-timeout 2 \
	--lock-file "$T/daemon.lock" --capture-dir "$T/cap"
got=
for ((i = 0; i < 40; i++)); do
	sleep 0.5
	http_get "http://127.0.0.1:$PORT/api/v1/stacks?rank=$R" >"$T/st_r" || continue
	[ "$(head -1 "$T/st_r")" = 200 ] && [ "$(tail -n +2 "$T/st_r")" != "[]" ] && { got=1; break; }
done
[ -n "$got" ] || fail "the daemon served no stacks of the stuck job: $(tail -3 "$T/rsd.out")"
http_get "http://127.0.0.1:$PORT/api/v1/stacks" >"$T/st_all" || fail "GET /api/v1/stacks"
http_get "http://127.0.0.1:$PORT/api/v1/stacks?classes=1" >"$T/st_cls" ||
	fail "GET /api/v1/stacks?classes=1"
kill -TERM "$PID_rsd"
$PY - "$T/st_r" "$T/st_all" "$T/st_cls" "$R" "${PIDS[@]}" <<'PY' || exit 1
import json, sys
one = json.loads(open(sys.argv[1]).read().split("\n", 1)[1])
every = json.loads(open(sys.argv[2]).read().split("\n", 1)[1])
cls = json.loads(open(sys.argv[3]).read().split("\n", 1)[1])
r, pids = int(sys.argv[4]), [int(x) for x in sys.argv[5:]]
assert len(one) == 1 and one[0]["rank"] == r and one[0]["state"] == "T", one
# the classes, as the live view gets them: rank R alone and the odd one out
assert [x["type"] for x in cls] == ["stack_classes"], cls
byr = {tuple(c["ranks"]): c for c in cls[0]["classes"]}
assert (r,) in byr and byr[(r,)]["outlier"] and "stopped" in byr[(r,)]["main_stack"], byr
rest = [c for k, c in byr.items() if k != (r,)]
assert len(rest) == 1 and len(rest[0]["ranks"]) == 3 and not rest[0]["outlier"], rest
assert "MPI_Allreduce" in rest[0]["main_stack"], rest[0]
assert [x["type"] for x in every].count("stack_classes") == 1, [x["type"] for x in every]
every = [x for x in every if x["type"] == "stacks"]
assert sorted(x["pid"] for x in every) == sorted(pids), [x["pid"] for x in every]
peers = [x for x in every if x["rank"] != r]
assert all(any("MPI_Allreduce" in (f["func"] or "") for t in x["threads"] for f in t["frames"])
           for x in peers), "a peer's stacks lack MPI_Allreduce"
print(f"daemon /api/v1/stacks: rank {r} stopped (T), its 3 peers in MPI_Allreduce; "
      f"classes {[c['ranks'] for c in cls[0]['classes']]}")
PY
kill -CONT "${PIDS[R]}"
$PY - "$T/diag.json" "$R" "${PIDS[R]}" "$t0" <<'PY' || exit 1
import json, sys
path, r, pid, t0 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
v = [json.loads(l) for l in open(path) if l.startswith('{"type":"verdict"')]
hang = [x for x in v if x["class"] == "hang"]
assert hang, f"no hang verdict: {[x['class'] for x in v]}"
h = hang[0]
assert h["rank"] == r and h["pid"] == pid, h
d = h["evidence"]["detail"]
assert "stopped" in d and "3 other rank(s) wait" in d, d
# evidence: a waiting peer's stack (the stopped rank's cannot be read without attaching)
st = {x["role"]: x for x in h["evidence"].get("stacks", [])}
assert "MPI_Allreduce" in st["peer"]["stack"] and st["peer"]["rank"] != r, h["evidence"]
# attach takes a moment; the verdict comes within the hang timeout + 1 s of it
late = (h["t_ns"] - t0) / 1e9
assert late < 2 + 1 + 1.5, f"the verdict came {late:.1f} s after diagnose started"
print(f"hang on rank {r} {late:.1f} s after diagnose started: {d}")
PY
grep -q "hang" "$T/diag.txt" && grep -qi "rank $R" "$T/diag.txt" ||
	fail "the text report does not say hang on rank $R: $(tail -5 "$T/diag.txt")"
grep -q "none yet" "$T/diag.txt" && fail "the text report says none yet: $(tail -5 "$T/diag.txt")"
kill -TERM "$PID_job"
wait_exit "$PID_job" 20 >/dev/null

# stuck_job NAME FAULT: a 4-rank job with FAULT on rank R from step 30; PIDLIST once stuck
stuck_job() {
	bg "$1" mpirun --allow-run-as-root --oversubscribe -np 4 "$TOP/build/workloads/zoo_mpi" \
		--buckets 3 --steps 100000 --fault-from 30 --fault "$2"
	wait_lines "$T/$1.out" '^ready rank=' 4 60 || fail "the MPI job $1 did not start"
	read -r -a PIDS <<<"$(ready_pids "$T/$1.out" | tr , ' ')"
	PIDLIST=$(IFS=,; echo "${PIDS[*]}")
	sleep 3		# step 30 is well past: stuck
}
verdict() {	# FILE CLASS RANK WORDS...: the first verdict not none
	$PY - "$@" <<'PY'
import json, sys
path, cls, r, words = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
v = [json.loads(l) for l in open(path) if l.startswith('{"type":"verdict"')]
v = [x for x in v if x["class"] != "none"]
assert v, "no verdict"
d = v[0]["evidence"]["detail"]
assert (v[0]["class"], v[0]["rank"]) == (cls, r), (v[0]["class"], v[0]["rank"], d)
assert all(w in d for w in words), (words, d)
# evidence: its stack and a peer's, the first word in its, the last in the peer's
st = {x["role"]: x for x in v[0]["evidence"].get("stacks", [])}
assert st["rank"]["rank"] == r and words[0] in st["rank"]["stack"], (words, st)
assert st["peer"]["rank"] != r and words[-1] in st["peer"]["stack"], (words, st)
print(f"{cls} on rank {r}: {d}")
PY
}
stuck_job div "divhang:$R:30"
"$RS" diagnose -p "$PIDLIST" --duration 6 --hang-timeout 2 --json >"$T/div.json" 2>"$T/div.err" ||
	fail "diagnose failed: $(tail -3 "$T/div.err")"
verdict "$T/div.json" divergent "$R" PMPI_Barrier "3 other rank(s)" PMPI_Allreduce || exit 1
kill -TERM "$PID_div"
wait_exit "$PID_div" 20 >/dev/null

stuck_job slp "sleep:$R:60000000"
"$RS" diagnose -p "$PIDLIST" --duration 6 --hang-timeout 2 --json >"$T/slp.json" 2>"$T/slp.err" ||
	fail "diagnose failed: $(tail -3 "$T/slp.err")"
verdict "$T/slp.json" hang "$R" nanosleep "no collective" "<- main" PMPI_Allreduce || exit 1
pass "jobs stuck before rankscope came: a stopped rank (hang), mismatched collectives" \
	"(divergent) and a rank outside any collective (hang), from the first look"
