#!/usr/bin/env bash
# The policy for odd library layouts (README, "Libraries"), against what the process did:
#  1. two copies of libnccl in one process (dlopen RTLD_LOCAL from two directories), calls
#     through both: the copy mapped lowest is the one probed and named; its calls are counted
#     exactly, the other copy's not at all (nothing counted twice);
#  2. a stripped copy (strip --strip-all: .symtab gone, .dynsym kept): probed, calls exact;
#  3. a "libnccl.so.2" whose NCCL functions have hidden visibility, stripped (so no table
#     names them: with .symtab they would be probed there): not probed, and its rank line
#     says symbol_not_found.
# TEST DOUBLE: NCCL collectives need a GPU (see e2e/nccl_double.sh).
. "$(dirname "$0")/../lib.sh"
need_root
[ -x "$FIX/dl_calls" ] && [ -e "$FIX/double/libnccl.so.2" ] || skip "no NCCL double (no CUDA toolkit nccl.h)"
mkdir -p "$T/a" "$T/b" "$T/s" "$T/h"
strip --strip-all -o "$T/h/libnccl.so.2" "$FIX/hidden/libnccl.so.2"
cp "$FIX/double/libnccl.so.2" "$T/a/"
cp "$FIX/double/libnccl.so.2" "$T/b/"
strip --strip-all -o "$T/s/libnccl.so.2" "$FIX/double/libnccl.so.2"
readelf -S "$T/s/libnccl.so.2" | grep -q '\.symtab' && fail "strip left .symtab"

# run NAME LIB:N...: the job, attached, to its end; prints the rank line and the counts
run() {
	local name=$1
	shift
	bg "job_$name" "$FIX/dl_calls" --go-file "$T/go_$name" "$@"
	wait_lines "$T/job_$name.out" '^ready rank=0' 1 20 || fail "$name: job did not start: $(cat "$T/job_$name.out")"
	local p=$(sed -n 's/^ready rank=0 pid=//p' "$T/job_$name.out")
	cp /proc/$p/maps "$T/maps_$name"
	rs_attach "rs_$name" -p "$p" --json --events
	touch "$T/go_$name"
	wait_exit "$(eval echo "\$PID_job_$name")" 30 || fail "$name: job failed"
	wait_exit "$(eval echo "\$PID_rs_$name")" 30 || fail "$name: rankscope did not exit"
}
run copies "$T/a/libnccl.so.2:30" "$T/b/libnccl.so.2:50"
run stripped "$T/s/libnccl.so.2:40"
run hidden "$T/h/libnccl.so.2:0"
$PY - "$T" <<'PY' || exit 1
import json, re, sys
t = sys.argv[1]
def result(name):
    done = {m[1]: int(m[2]) for m in re.finditer(r'^done lib=(\S+) calls=(\d+)', open(f'{t}/job_{name}.out').read(), re.M)}
    rank, calls = None, 0
    for l in open(f'{t}/rs_{name}.out'):
        if l.startswith('{'):
            d = json.loads(l)
            if d['type'] == 'rank':
                rank = d
            elif d['type'] == 'collective' and d['op'] == 'allreduce':
                calls += 1
    return done, rank, calls
# 1: the lowest mapping of a libnccl.so.2 is the copy probed
lows = {}
for l in open(f'{t}/maps_copies'):
    f = l.split()
    if len(f) >= 6 and f[5].endswith('/libnccl.so.2'):
        lo = int(f[0].split('-')[0], 16)
        lows[f[5]] = min(lo, lows.get(f[5], lo))
low = min(lows, key=lows.get)
done, rank, calls = result('copies')
assert rank['libs']['nccl'] == low, (rank['libs'], low)
assert rank['collective_probes']['nccl']['sites'] > 0, rank
assert calls == done[low], f'{calls} counted, {done[low]} made through {low} ({done})'
print(f'two copies: {low} probed (lowest), {calls} calls counted = its {done[low]}; the other copy\'s {sum(done.values()) - done[low]} not counted')
done, rank, calls = result('stripped')
assert rank['collective_probes']['nccl']['sites'] > 0 and calls == sum(done.values()), (rank, calls, done)
print(f'stripped: {calls} of {sum(done.values())} calls counted')
done, rank, calls = result('hidden')
p = rank['collective_probes']['nccl']
assert p['sites'] == 0 and p.get('reason') == 'symbol_not_found', p
print(f'hidden visibility: {p}')
PY
pass "two copies: the lowest probed, no double count; stripped probed; hidden: symbol_not_found"
