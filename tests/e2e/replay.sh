#!/usr/bin/env bash
# diagnose --replay of live recordings: a real 2-rank OpenMPI job with a slow rank (picked at
# random) and a real PyTorch DDP (gloo) job with a slow data loader, each recorded with
# diagnose --json --events, then replayed with no root and no BPF. The replay must give the
# same step count, the same verdict classes and ranks, and in fact the very same step, rule,
# verdict and cost lines: both runs feed the model through one path (model/feed.c). Then a
# TP+DP recording cut inside a step, the replay's own report and its bad-input errors.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"

record() {	# record NAME: diagnose --json --events of the job started as NAME
	bg "${1}rs" "$RS" diagnose -p "$(ready_pids "$T/$1.out")" --json --events
	wait_lines "$T/${1}rs.out" '"type":"rank"' 2 30 || fail "$1: rankscope did not attach"
	touch "$T/$1.go"
	wait_exit "$(eval echo "\$PID_$1")" 180 || fail "$1: the job failed"
	wait_exit "$(eval echo "\$PID_${1}rs")" 60 || fail "$1: rankscope did not exit"
}

# the replay runs as nobody: it needs neither root nor the kernel
replay() {	# replay NAME ARGS...: the recording NAME replayed into $T/NAME.rp
	local name=$1
	shift
	chmod 755 "$T"
	chmod 644 "$T/${name}rs.out"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$RS" diagnose --replay \
		"$T/${name}rs.out" "$@" >"$T/$name.rp" 2>"$T/$name.rperr" ||
		fail "$name: replay failed: $(cat "$T/$name.rperr")"
}

SLOW=$((RANDOM % 2))
bg mpi mpirun --allow-run-as-root --oversubscribe -np 2 "$FIX/mpi_loop" --go-file "$T/mpi.go" \
	--compute-us 1000 --iters 150 --slow-rank $SLOW --slow-us 4000
wait_lines "$T/mpi.out" '^ready rank=' 2 60 || fail "MPI job did not start"
record mpi
replay mpi --json

if $PY -c 'import torch' 2>/dev/null; then
	bg ddp "$ZOO_DDP" 2 --go-file "$T/ddp.go" --steps 40 --data-dir "$T/data" \
		--fault slowdata:1:40
	wait_lines "$T/ddp.out" '^ready rank=' 2 120 || fail "DDP job did not start"
	record ddp
	replay ddp --json
	JOBS="mpi ddp"
else
	echo "python3-torch not installed: the DDP recording is left out"
	JOBS=mpi
fi

$PY - "$T" $SLOW $JOBS <<'PY' || exit 1
import json, sys, collections
T, slow, jobs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
MODEL = ('rule', 'step', 'verdict', 'cost', 'cost_total')
for name in jobs:
    live = [l for l in open(f"{T}/{name}rs.out") if l.startswith('{')
            and json.loads(l)['type'] in MODEL]
    rp = [l for l in open(f"{T}/{name}.rp")]
    kinds = collections.Counter(json.loads(l)['type'] for l in live)
    assert kinds['step'] >= 40 and kinds['verdict'] >= 1, (name, kinds)
    lv = [json.loads(l) for l in live]
    rv = [json.loads(l) for l in rp]
    steps = lambda v: collections.Counter(d['rank'] for d in v if d['type'] == 'step')
    verdicts = lambda v: [(d['class'], d['rank']) for d in v if d['type'] == 'verdict']
    assert steps(lv) == steps(rv), (name, steps(lv), steps(rv))
    assert verdicts(lv) == verdicts(rv), (name, verdicts(lv)[:5], verdicts(rv)[:5])
    diff = [(a, b) for a, b in zip(live, rp) if a != b]
    assert len(live) == len(rp) and not diff, \
        f"{name}: {len(live)} live lines, {len(rp)} replayed; first difference {diff[:1]}"
    print(f"{name}: {kinds['step']} rank-steps, {kinds['verdict']} verdicts "
          f"({collections.Counter(verdicts(lv)).most_common(2)}): replayed line for line")
mpi = [json.loads(l) for l in open(f"{T}/mpi.rp")]
assert any(d['type'] == 'verdict' and d['class'] == 'compute' and d['rank'] == slow
           and d['persistent'] for d in mpi), f"no persistent compute verdict on rank {slow}"
PY

# A recording that ends inside a step: a real 4-rank TP+DP job (zoo_mpi --tp: the tensor-
# parallel all-reduces, then the 2 data-parallel ones that end each step), recorded whole,
# then cut just before one of rank 0's data-parallel all-reduces (the first or the second) at 6
# places, each cut closed by the final tick a run that ends writes. Rank 0's last step never
# ended there: no rank's last step may lack the collectives of the steps before it.
bg tp mpirun --allow-run-as-root --oversubscribe -np 4 "$TOP/build/workloads/zoo_mpi" --tp 2 \
	--buckets 2 --steps 300 --go-file "$T/tp.go" --data-dir "$T/tpdata"
wait_lines "$T/tp.out" '^ready rank=' 4 60 || fail "TP job did not start"
bg tprs "$RS" diagnose -p "$(ready_pids "$T/tp.out")" --json --events
wait_lines "$T/tprs.out" '"type":"rank"' 4 30 || fail "tp: rankscope did not attach"
touch "$T/tp.go"
wait_exit "$PID_tp" 180 || fail "tp: the job failed"
wait_exit "$PID_tprs" 60 || fail "tp: rankscope did not exit"
$PY - "$T" "$RS" <<'PY' || exit 1
import json, subprocess, sys
T, rs = sys.argv[1], sys.argv[2]
lines = open(f"{T}/tprs.out").read().splitlines(True)
job = next(json.loads(l)["job"] for l in lines if l.startswith('{"type":"tick"'))
dp = [i for i, l in enumerate(lines) if l.startswith('{"type":"collective","rank":0,')
      and '"bytes":65536' in l]
assert len(dp) > 500, f"{len(dp)} data-parallel all-reduces recorded on rank 0"
for cut in dp[100:600:83]:
    # the latest return among the collectives recorded just before the cut (other records,
    # off-CPU and run-queue ones, can fill the 40 lines before it)
    prev = [l for l in lines[:cut] if l.startswith('{"type":"collective"')][-40:]
    end = max(json.loads(l)["exit_ns"] for l in prev)
    tick = '{"type":"tick","job":"%s","t_ns":%d,"final":true}\n' % (job, end + 10**9)
    open(f"{T}/cut.jsonl", "w").writelines(lines[:cut] + [tick])
    out = subprocess.run([rs, "diagnose", "--replay", f"{T}/cut.jsonl", "--json"],
                         capture_output=True, text=True, check=True).stdout
    st = [json.loads(l) for l in out.splitlines() if l.startswith('{"type":"step"')]
    for r in range(4):
        s = [d for d in st if d["rank"] == r]
        assert len(s) > 30 and s[-1]["collectives"] == s[-2]["collectives"] == 6, \
            (cut, r, [d["collectives"] for d in s[-3:]])
print(f"tp: cut inside a step at 6 places: every rank's last step whole (6 collectives)")
PY

# the human report, from the recording alone
setpriv --reuid=65534 --regid=65534 --clear-groups "$RS" diagnose --replay "$T/mpirs.out" \
	>"$T/report.txt" 2>&1 || fail "replay report failed: $(cat "$T/report.txt")"
grep -q "^verdict: compute on rank $SLOW (persistent)" "$T/report.txt" ||
	fail "replay report: $(cat "$T/report.txt")"

# bad input: one line that names the file (and line) and the fix; nothing else runs
"$RS" diagnose --replay "$T/none.jsonl" >"$T/e1" 2>&1
[ $? = 1 ] && grep -q "failed to open '$T/none.jsonl'" "$T/e1" || fail "missing file: $(cat "$T/e1")"
printf '{"type":"op","rank":0,"op":"allredcue","start_ns":1,"dur_ns":2}\n' >"$T/bad.jsonl"
"$RS" diagnose --replay "$T/bad.jsonl" >"$T/e2" 2>&1
[ $? = 1 ] && grep -q "bad.jsonl:1: unknown op 'allredcue'" "$T/e2" || fail "bad op: $(cat "$T/e2")"
"$RS" diagnose --replay "$T/bad.jsonl" -p 1 >"$T/e3" 2>&1
[ $? = 2 ] && grep -q -- "--replay reads recorded input" "$T/e3" || fail "-p: $(cat "$T/e3")"
pass "recordings replay line for line; one cut inside a step has no partial last step; the report and bad input hold"
