#!/usr/bin/env bash
# The real libnccl.so.2 from the CUDA toolkit: attach and decode all seven ncclAllReduce
# arguments (the stream is the 7th, on the stack). No GPU: the call returns an error, but
# the probe sees it with the arguments the program passed.
. "$(dirname "$0")/../lib.sh"
need_root
[ -e /usr/local/cuda/lib/libnccl.so.2 ] || skip "no CUDA toolkit NCCL at /usr/local/cuda/lib/libnccl.so.2"
[ -x "$FIX/nccl_call" ] || fail "fixture missing: make fixtures"
bg job "$FIX/nccl_call" --go-file "$T/go" --calls 3
wait_lines "$T/job.out" '^ready rank=' 1 20 || fail "job did not start"
PID=$(ready_pids "$T/job.out")
rs_attach rs -p "$PID" --json --events
touch "$T/go"
wait_exit "$PID_job" 30 || fail "nccl_call failed"
wait_exit "$PID_rs" 60 || fail "rankscope did not exit"
$PY - "$T/job.out" "$T/rs.out" <<'PY' || exit 1
import json, re, sys
args = dict(re.findall(r'(\w+)=(\S+)', [l for l in open(sys.argv[1]) if l.startswith('args ')][0]))
ret = int(re.search(r' ret=(-?\d+)', open(sys.argv[1]).read())[1])
colls = [json.loads(l) for l in open(sys.argv[2]) if '"type":"collective"' in l]
assert len(colls) == 3, f"expected 3 ncclAllReduce calls, saw {len(colls)}"
for i, c in enumerate(colls):
    want = dict(sendbuf=int(args['send'], 16), recvbuf=int(args['recv'], 16), count=int(args['count']),
                dtype=int(args['dtype']), redop=int(args['op']), comm_handle=int(args['comm'], 16),
                stream=int(args['stream'], 16), ret=ret, seq=i)
    got = {k: c[k] for k in want}
    assert got == want, f"call {i}: decoded {got}, program passed {want}"
    assert c['lib'] == 'nccl' and c['op'] == 'allreduce' and c['bytes'] == int(args['count']) * 4, c
print("decoded:", {k: colls[0][k] for k in ('sendbuf', 'recvbuf', 'count', 'dtype', 'redop', 'comm_handle', 'stream', 'ret')})
PY
pass "all seven ncclAllReduce arguments decoded from the real libnccl.so.2"
