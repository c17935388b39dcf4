#!/usr/bin/env bash
# Divergent collectives across nodes: a real 4-rank OpenMPI job (zoo_mpi, 3 equal buckets a
# step) in which, at one step, rank R posts a broadcast of twice the bytes its peers post
# (zoo_mpi's divergent fault: same sequence number, different signature; the job goes on).
# Ranks 0 and 1 run in one cgroup ("node" A), 2 and 3 in another ("node" B), a daemon scoped
# to each. R is drawn from 0..3, so the odd rank is on either node.
#  - the hub, pulling both, names R and divergent (its majority is 3 of 4 ranks);
#  - no other rank is ever called divergent (a healthy step's sequences match on every rank:
#    no false divergence from how each node cut its steps);
#  - neither daemon alone names a wrong rank (B sees a tie of 1 to 1 when R is on it);
#  - later, rank H (the next one) enters MPI_Barrier where its peers enter MPI_Allreduce
#    (zoo_mpi's divhang fault): the job hangs, no step ends, and the hub, from what each
#    node says its ranks wait in, names H divergent (barrier against allreduce).
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
test_cgroups a b

ODD=$((RANDOM % 4))
HANG=$(((ODD + 1) % 4))
# ~3 ms a step: the fault comes some 20 s after go, once the hub is lined up and judging (10 s
# was too little once on a busy host: the hub had lined up 2 of the 4 ranks)
AT=6000
bg job mpirun --allow-run-as-root --oversubscribe -np 4 "$TOP/build/workloads/zoo_mpi" \
	--buckets 3 --steps 100000 --go-file "$T/go" --fault "divergent:$ODD:$AT" \
	--fault "divhang:$HANG:$((AT + 1500))"
wait_lines "$T/job.out" '^ready rank=' 4 60 || fail "the MPI job did not start"
read -r -a PIDS <<<"$(ready_pids "$T/job.out" | tr , ' ')"
[ "${#PIDS[@]}" = 4 ] || fail "expected 4 rank pids, got: ${PIDS[*]}"
for i in 0 1; do echo "${PIDS[$i]}" >"$ROOT/$CG-a/cgroup.procs"; done &&
	for i in 2 3; do echo "${PIDS[$i]}" >"$ROOT/$CG-b/cgroup.procs"; done ||
	fail "cannot move the ranks into the cgroups"

PORT_a=$(free_port)
PORT_b=$(free_port)
for n in a b; do
	port=PORT_$n
	mkdir -p "$T/$n"
	bg "rsd_$n" "$RS" daemon --all --cgroup "/$CG-$n" --listen 127.0.0.1:${!port} \
		--lock-file "$T/$n/daemon.lock" --json --hang-timeout 2
	wait_lines "$T/rsd_$n.out" 'watching for training processes' 1 30 ||
		fail "daemon $n did not start: $(tail -3 "$T/rsd_$n.out")"
done
for i in 0 1 2 3; do
	n=$([ "$i" -lt 2 ] && echo a || echo b)
	wait_lines "$T/rsd_$n.out" "attached to PID ${PIDS[$i]}:" 1 20 ||
		fail "daemon $n did not attach to ${PIDS[$i]}"
done
PORT_h=$(free_port)
bg hub "$RS" hub --peers "127.0.0.1:$PORT_a,127.0.0.1:$PORT_b" --listen 127.0.0.1:$PORT_h \
	--interval 0.5 --json --hang-timeout 2
touch "$T/go"
wait_lines "$T/hub.out" '"class":"divergent"' 1 60 ||
	fail "the hub named no divergence (rank $ODD): $(grep -v '^{' "$T/hub.out" | tail -5)"
wait_lines "$T/hub.out" '"class":"divergent".*barrier' 1 90 ||
	fail "the hub named no divergence in the hung job (rank $HANG): $(tail -3 "$T/hub.out")"
kill -TERM "$PID_job"
wait_exit "$PID_job" 30
$PY - "$T" "$ODD" "$HANG" <<'PY' || exit 1
import json, sys
t, odd, hang = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def lines(name):
    return [json.loads(l) for l in open(f"{t}/{name}") if l.startswith("{")]
v = [x for x in lines("hub.out") if x.get("class") == "divergent"]
step = [x for x in v if "barrier" not in x["evidence"]["detail"]]
inflight = [x for x in v if "barrier" in x["evidence"]["detail"]]
if not step:
    # what the hub judged instead: the step, the ranks it had lined up, the class
    print("hub verdicts:", [(x.get("step"), x.get("ranks_seen"), x.get("class"), x.get("rank"))
                            for x in lines("hub.out") if x.get("type") == "verdict"][:40],
          file=sys.stderr)
assert step and all(x["rank"] == odd for x in step), [(x["rank"], x["evidence"]) for x in step]
d = step[0]["evidence"]["detail"]
assert "broadcast:128" in d and "broadcast:64" in d and "3 other rank(s)" in d, d
print(f"hub: divergent on rank {odd}: {d}")
assert inflight and all(x["rank"] == hang for x in inflight), \
    [(x["rank"], x["evidence"]) for x in inflight]
d = inflight[0]["evidence"]["detail"]
assert "in barrier" in d and "3 other rank(s)" in d and "wait in allreduce" in d, d
print(f"hub: hung job, divergent on rank {hang}: {d}")
for n in ("a", "b"):
    wrong = [x["rank"] for x in lines(f"rsd_{n}.out")
             if x.get("type") == "verdict" and x.get("class") == "divergent" and x["rank"] != odd]
    assert not wrong, f"daemon {n} called rank(s) {wrong} divergent; the odd one is {odd}"
PY
pass "hub: divergent collectives named across 2 nodes"
