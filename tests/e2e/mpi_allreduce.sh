#!/usr/bin/env bash
# Real OpenMPI 4-rank job: attach by PID before the loop, count every MPI_Allreduce per rank,
# and see the straggler: with rank 2 sleeping before each allreduce, every other rank's mean
# time inside MPI_Allreduce is at least 5x rank 2's.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
ITERS=80
head -c 8M /dev/urandom >"$T/data"
bg job mpirun --allow-run-as-root --oversubscribe -np 4 "$FIX/mpi_loop" --go-file "$T/go" \
	--iters $ITERS --slow-rank 2 --slow-us 10000 --read-file "$T/data"
wait_lines "$T/job.out" '^ready rank=' 4 60 || fail "MPI job did not start"
PIDS=$(ready_pids "$T/job.out")
rs_attach rs -p "$PIDS" --json --events
touch "$T/go"
wait_exit "$PID_job" 120 || fail "MPI job failed"
# rankscope must notice by itself that every rank exited
wait_exit "$PID_rs" 60 || fail "rankscope did not exit after the ranks exited"
$PY - "$T/job.out" "$T/rs.out" <<'PY' || exit 1
import json, re, sys, collections
done = {}
for l in open(sys.argv[1]):
    m = re.match(r'done rank=(\d+) pid=(\d+) allreduce_calls=(\d+)', l)
    if m:
        done[int(m[1])] = (int(m[2]), int(m[3]))
assert len(done) == 4, f"expected 4 done lines, got {done}"
ranks, calls, inside, final = {}, collections.Counter(), collections.defaultdict(list), None
comms = set()
for l in open(sys.argv[2]):
    if not l.startswith('{'):
        continue
    d = json.loads(l)
    if d['type'] == 'rank':
        ranks[d['pid']] = d
    elif d['type'] == 'collective' and d['op'] == 'allreduce':
        calls[d['rank']] += 1
        inside[d['rank']].append(d['exit_ns'] - d['enter_ns'])
        comms.add(d['comm'])
        assert d['lib'] == 'mpi' and d['count'] == 1024 and d['bytes'] == 8192, d
    elif d['type'] == 'self' and d['final']:
        final = d
for r, (pid, n) in done.items():
    rk = ranks[pid]
    assert rk['rank'] == r and rk['rank_source'] == 'environ', rk
    assert rk['libs']['mpi'] and rk['collective_probes']['mpi']['sites'] >= 8, rk
    assert calls[r] == n, f"rank {r}: saw {calls[r]} allreduce calls, program made {n}"
assert comms == {'MPI_COMM_WORLD'}, comms
assert len({d['job'] for d in ranks.values()}) == 1, "ranks disagree on the job id"
mean = {r: sum(v) / len(v) for r, v in inside.items()}
print("mean time inside MPI_Allreduce (us):", {r: round(v / 1e3) for r, v in sorted(mean.items())})
for r in (0, 1, 3):
    assert mean[r] >= 5 * mean[2], f"rank {r} {mean[r]:.0f}ns is not >= 5x slow rank 2 {mean[2]:.0f}ns"
assert final, "no final self line"
assert final['events_attempted'] == final['events_received'] + final['events_dropped'], final
print("final self:", final['events_attempted'], final['events_received'], final['events_dropped'])
PY
pass "4 ranks, $ITERS allreduce each, straggler rank 2 visible"
