#!/usr/bin/env bash
# A rank under a seccomp filter that allows only the system calls of its own loop (anything
# else kills it): with rankscope's uprobe and uretprobe on its ncclAllReduce, it lives, and
# every call is seen with its return (exit after enter). The return probe must add no system
# call the filter kills for (Linux 6.11+ returns from uretprobes through a uretprobe() system
# call, which seccomp passes since 6.14). On 6.11 to 6.13 rankscope puts no collective probe
# on such a process (unit/test_preflight has the window); there the rank must still live, and
# its rank line must say why.
# TEST DOUBLE: NCCL collectives need a GPU (see e2e/nccl_double.sh).
. "$(dirname "$0")/../lib.sh"
need_root
[ -x "$FIX/seccomp_rank" ] || skip "no NCCL double (no CUDA toolkit nccl.h)"
CALLS=200
bg job "$FIX/seccomp_rank" --go-file "$T/go" --calls $CALLS
wait_lines "$T/job.out" '^ready rank=0' 1 20 || fail "job did not start: $(cat "$T/job.out")"
P=$(sed -n 's/^ready rank=0 pid=//p' "$T/job.out")
grep -q '^Seccomp:[[:space:]]*2' /proc/$P/status || fail "PID $P is not under a seccomp filter"
rs_attach rs -p "$P" --json --events
touch "$T/go"
wait_exit "$PID_job" 60
grep -q "^done calls=$CALLS" "$T/job.out" ||
	fail "the rank died under rankscope's probes: $(cat "$T/job.out"); $(grep -i seccomp /var/log/kern.log 2>/dev/null | tail -1)"
wait_exit "$PID_rs" 30 || fail "rankscope did not exit after the rank"
if $PY -c 'import platform, sys; v = tuple(int(x) for x in platform.release().split(".")[:2]); sys.exit(0 if (6, 11) <= v < (6, 14) else 1)'; then
	grep -q '"reason":"seccomp"' "$T/rs.out" || fail "no seccomp reason on the rank line"
	pass "a rank under seccomp on $(uname -r): kept alive, no collective probes, reason given"
fi
$PY - "$T/rs.out" "$P" "$CALLS" <<'PY' || exit 1
import json, sys
out, pid, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ev = [json.loads(l) for l in open(out) if l.startswith('{')]
co = [d for d in ev if d['type'] == 'collective' and d['pid'] == pid and d['op'] == 'allreduce']
assert len(co) == calls, f'{len(co)} allreduces seen, {calls} made'
assert all(d['exit_ns'] > d['enter_ns'] for d in co), 'a call without its return'
print(f'{len(co)} allreduces under seccomp, each with its return')
PY
pass "a rank under a strict seccomp filter lives under uprobes and uretprobes, every call seen"
