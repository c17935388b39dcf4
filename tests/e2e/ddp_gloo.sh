#!/usr/bin/env bash
# Real PyTorch DDP (gloo) with 2 ranks and a file-reading DataLoader (num_workers=1): the gloo
# allreduce and the DDP step markers are seen for each rank, data-loader worker reads are
# charged to their own rank, and loopback TCP stats are reported per rank.
. "$(dirname "$0")/../lib.sh"
need_root
$PY -c 'import torch' 2>/dev/null || skip "python3-torch not installed (make deps)"
STEPS=25
bg job "$ZOO_DDP" 2 --go-file "$T/go" --steps $STEPS --data-dir "$T/data"
wait_lines "$T/job.out" '^ready rank=' 2 120 || fail "DDP job did not start"
PIDS=$(ready_pids "$T/job.out")
rs_attach rs -p "$PIDS" --json --events
touch "$T/go"
wait_exit "$PID_job" 120 || fail "DDP job failed"
wait_exit "$PID_rs" 60 || fail "rankscope did not exit after the ranks exited"
$PY - "$T/job.out" "$T/rs.out" $STEPS <<'PY' || exit 1
import json, re, sys, collections
steps = int(sys.argv[3])
text = open(sys.argv[1]).read()
rank_pid = {int(r): int(p) for r, p in re.findall(r'^ready rank=(\d+) pid=(\d+)', text, re.M)}
worker_rank = {int(p): int(r) for r, p in re.findall(r'^worker rank=(\d+) pid=(\d+)', text, re.M)}
assert len(rank_pid) == 2 and len(worker_rank) >= 2, (rank_pid, worker_rank)
ops, io_by_worker, last_stats, ranks = collections.Counter(), collections.Counter(), {}, {}
tcp_ranks = set()
for l in open(sys.argv[2]):
    if not l.startswith('{'):
        continue
    d = json.loads(l)
    t = d['type']
    if t == 'rank':
        ranks[d['pid']] = d
    elif t == 'collective':
        ops[(d['rank'], d['lib'], d['op'])] += 1
    elif t == 'io' and d['tgid'] in worker_rank:
        assert d['rank'] == worker_rank[d['tgid']], f"worker {d['tgid']} io charged to rank {d['rank']}"
        assert d['worker'] == 1, d
        io_by_worker[d['tgid']] += 1
    elif t == 'stats':
        last_stats.setdefault(d['rank'], []).append(d)
    elif t == 'tcp':
        tcp_ranks.add(d['rank'])
for r, pid in rank_pid.items():
    rk = ranks[pid]
    assert rk['rank'] == r and rk['rank_source'] == 'environ' and rk['job'].startswith('zoo-ddp-'), rk
    assert rk['libs']['gloo'] and rk['libs']['torch'], rk
    assert ops[(r, 'gloo', 'allreduce')] >= steps, (r, ops)
    assert ops[(r, 'torch', 'ddp_prepare_for_forward')] == steps, (r, ops)
    assert ops[(r, 'torch', 'ddp_finalize_backward')] == steps, (r, ops)
    st = last_stats[r]
    sock = sum(s['io_read']['socket']['calls'] for s in st)
    srtt = [s['tcp_srtt_us'] for s in st if s['tcp_srtt_us']]
    files = sum(s['io_read']['file']['calls'] for s in st)
    print(f"rank {r}: socket reads {sock}, srtt samples {srtt[:3]}, file reads {files}")
    assert sock > 0, f"rank {r}: no socket reads reported"
    assert srtt, f"rank {r}: no TCP srtt reported"
    assert files > 0, f"rank {r}: no file reads (the data loader reads files) reported"
assert any(io_by_worker.values()), f"no streamed io from the data-loader workers {worker_rank}"
print("gloo/ddp calls:", dict(ops))
PY
pass "gloo allreduce and DDP markers per rank, worker reads charged to their rank, TCP per rank"
