#!/usr/bin/env bash
# Jobs that get stuck while rankscope watches them, every rank seen: real OpenMPI jobs
# (zoo_mpi) with `rankscope diagnose -p PIDS --hang-timeout 2` attached from the first step.
# With 3 buckets a step, at step 1500 rank R enters MPI_Barrier where its peers enter their
# first bucket's MPI_Allreduce (zoo_mpi's divhang: they wait for each other forever, as
# mismatched NCCL collectives do):
#  - 4 ranks: divergent on R, from the calls in flight (barrier against a majority's
#    all-reduce at the same seq on the world communicator);
#  - 2 ranks (no majority): divergent on R, from the calls each made the step before (its
#    barrier is none its step before made; its peer's all-reduce is one its own made).
# Tensor and data parallel (--tp 2: two communicators a rank), rank R asleep 60 s in its step
# from step 1500: a hang on R, the rank outside every collective, not a peer whose seq on
# another communicator is lower.
# Never a stuck verdict on another rank.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"

# stuck NP CLASS WORDS ARGS...: the job (zoo_mpi ARGS, rank r's fault FAULT with R for r) and
# rankscope until its stuck verdict (or 40 s), the job killed after; the first stuck verdict
# must be CLASS on rank r, its detail saying WORDS
stuck() {
	local np=$1 cls=$2 words=$3 r=$((RANDOM % $1))
	shift 3
	bg "job$np" mpirun --allow-run-as-root --oversubscribe -np "$np" \
		"$TOP/build/workloads/zoo_mpi" --steps 100000 --go-file "$T/go$np" "${@//R/$r}"
	wait_lines "$T/job$np.out" '^ready rank=' "$np" 60 || fail "the $np-rank job did not start"
	bg "rs$np" "$RS" diagnose -p "$(ready_pids "$T/job$np.out")" --json --duration 40 \
		--hang-timeout 2
	wait_lines "$T/rs$np.out" '"type":"rank"' "$np" 30 || fail "rankscope did not attach"
	touch "$T/go$np"
	wait_lines "$T/rs$np.out" '"class":"(hang|divergent|remote_wait)"' 1 60 ||
		fail "$np ranks: no stuck verdict: $(grep -v '^{' "$T/rs$np.out" | tail -3)"
	sleep 1
	kill -TERM "$(eval echo "\$PID_rs$np")"
	wait_exit "$(eval echo "\$PID_rs$np")" 30 >/dev/null
	kill -TERM "$(eval echo "\$PID_job$np")"
	wait_exit "$(eval echo "\$PID_job$np")" 30 >/dev/null
	$PY - "$T/rs$np.out" "$r" "$np" "$cls" "$words" <<'PY' || exit 1
import json, sys
path, r, np, cls, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
v = [json.loads(l) for l in open(path) if l.startswith('{"type":"verdict"')]
stuck = [x for x in v if x["class"] in ("hang", "divergent", "remote_wait")]
assert stuck, f"no stuck verdict: {[(x['class'], x['rank']) for x in v][-6:]}"
d = stuck[0]["evidence"]["detail"]
assert (stuck[0]["class"], stuck[0]["rank"]) == (cls, r), \
    (stuck[0]["class"], stuck[0]["rank"], r, d)
assert want in d, (want, d)
assert all(x["rank"] == r for x in stuck), [(x["class"], x["rank"]) for x in stuck]
steps = [x for x in open(path) if x.startswith('{"type":"step"')]
print(f"{np} ranks: {cls} on rank {r} after {len(steps)} step lines: {d}")
PY
}
stuck 4 divergent "waits in barrier" --buckets 3 --fault divhang:R:1500
stuck 2 divergent "the call each made the step before, where this one made none" --buckets 3 \
	--fault divhang:R:1500
stuck 4 hang "the laggard" --tp 2 --fault-from 1500 --fault sleep:R:60000000
pass "a job stuck while watched: mismatched collectives are divergent on the odd rank," \
	"from a majority in flight (4 ranks) and from the calls each made the step before" \
	"(2); a tensor- and data-parallel rank asleep outside them is the hang"
