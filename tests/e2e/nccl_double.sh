#!/usr/bin/env bash
# TEST DOUBLE: NCCL collectives need a GPU, so build/fixtures/double/libnccl.so.2 is a stand-in
# with the real nccl.h signatures (entries start with endbr64) and a shared-memory barrier.
# 4 ranks with no rank variables: ranks come from ncclCommInitRank, sequence numbers are
# consecutive per communicator, the communicator has one name on every rank, and the
# straggler (rank 1) shows as in the MPI test.
. "$(dirname "$0")/../lib.sh"
need_root
[ -e /usr/local/cuda/include/nccl.h ] || skip "no CUDA toolkit nccl.h: the NCCL double is built against it"
[ -e "$FIX/double/libnccl.so.2" ] || fail "fixture missing: make fixtures"
bg job "$FIX/nccl_ranks" --go-file "$T/go" --nranks 4 --iters 100 --slow-rank 1 --slow-us 4000
wait_lines "$T/job.out" '^ready rank=' 4 30 || fail "job did not start"
# give the PIDs in an order unrelated to the ranks
PIDS=$(grep -E '^ready rank=' "$T/job.out" | sort -t= -k3 -rn | sed 's/.*pid=//' | paste -sd,)
rs_attach rs -p "$PIDS" --json --events
touch "$T/go"
wait_exit "$PID_job" 60 || fail "job failed"
wait_exit "$PID_rs" 60 || fail "rankscope did not exit after the ranks exited"
$PY - "$T/job.out" "$T/rs.out" <<'PY' || exit 1
import json, re, sys, collections
done = {}
for l in open(sys.argv[1]):
    m = re.match(r'done rank=(\d+) pid=(\d+) allreduce_calls=(\d+) allgather_calls=(\d+)', l)
    if m:
        done[int(m[2])] = (int(m[1]), int(m[3]), int(m[4]))
assert len(done) == 4, done
rank_of, seqs, ops, inside, comms, inits = {}, collections.defaultdict(list), collections.Counter(), collections.defaultdict(list), set(), {}
for l in open(sys.argv[2]):
    if not l.startswith('{'):
        continue
    d = json.loads(l)
    if d['type'] == 'rank':
        rank_of[d['pid']] = d      # the last one wins: comm init refines the rank
    elif d['type'] == 'comm_init':
        inits[d['pid']] = d
    elif d['type'] == 'collective':
        ops[(d['pid'], d['op'])] += 1
        seqs[d['pid']].append(d['seq'])
        comms.add(d['comm'])
        if d['op'] == 'allreduce':
            inside[d['pid']].append(d['exit_ns'] - d['enter_ns'])
            assert d['count'] == 4096 and d['bytes'] == 4096 * 4 and d['redop'] == 0, d
for pid, (r, nar, nag) in done.items():
    rk = rank_of[pid]
    assert rk['rank_source'] == 'comm_init' and rk['rank'] == r and rk['world_size'] == 4, rk
    assert rk['collective_probes']['nccl']['after_endbr64'] == rk['collective_probes']['nccl']['sites'] > 0, rk
    assert inits[pid]['nranks'] == 4 and inits[pid]['comm_rank'] == r, inits[pid]
    assert ops[(pid, 'allreduce')] == nar and ops[(pid, 'allgather')] == nag, (pid, ops)
    assert seqs[pid] == list(range(nar + nag)), f"pid {pid}: seqs not consecutive from 0"
assert len(comms) == 1 and next(iter(comms)).startswith('nccl:'), comms
assert {d['comm'] for d in inits.values()} == comms
mean = {done[p][0]: sum(v) / len(v) for p, v in inside.items()}
print("mean inside ncclAllReduce (us):", {r: round(v / 1e3) for r, v in sorted(mean.items())})
for r in (0, 2, 3):
    assert mean[r] >= 5 * mean[1], (r, mean)
PY
pass "ranks from ncclCommInitRank, consecutive seqs, one communicator name, straggler visible"
