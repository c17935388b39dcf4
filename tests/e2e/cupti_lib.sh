#!/usr/bin/env bash
# TEST DOUBLES: NCCL and CUPTI need a GPU, so librankscope_cupti.so runs here on stand-ins built
# from tests/fixtures/cupti_double: libcupti.so (the CUPTI activity API, real record structs,
# its own clock 1000 s ahead of CLOCK_MONOTONIC) and libcuda.so.1 (cuDriverGetVersion only).
# build/fixtures/cupti_host plays the driver's injection step and a training loop; a fake daemon
# (tests/fixtures/cupti_double/fake_daemon.py) parses the wire format of cupti/rs_cupti_wire.h.
# Checked: every record exactly once with its name, bytes and direction; the clock conversion
# against the windows the host saw; zero timestamps dropped and counted; NCCL names intact;
# only the kinds asked for; another CUPTI subscriber; dormant before RSC_ENABLE and without a
# driver; a stuck, absent or starved pipeline drops (counted) and never slows the application.
# No root needed.
. "$(dirname "$0")/../lib.sh"
CUDA_INC=/usr/local/cuda/include
[ -e "$CUDA_INC/cupti.h" ] || skip "no CUPTI headers ($CUDA_INC/cupti.h): the CUPTI doubles are built against them"
LIB="$TOP/build/librankscope_cupti.so"
DBL="$FIX/cupti_double"
HOST="$FIX/cupti_host"
DAEMON="$TOP/tests/fixtures/cupti_double/fake_daemon.py"
[ -e "$LIB" ] || fail "library missing: make"
[ -e "$DBL/libcupti.so" ] && [ -e "$DBL/libcuda.so.1" ] && [ -x "$HOST" ] ||
	fail "fixture missing: make fixtures (CUPTI_FIXTURES)"
# the library and the host must find the doubles, nothing else
unset RANKSCOPE_CUPTI_LIB CUDA_INJECTION64_PATH RSDOUBLE_OTHER_SUBSCRIBER RSDOUBLE_COMPLETE_ON_FLUSH \
	RSDOUBLE_FOREIGN_BUFFER \
	RSDOUBLE_CLOCK_OFFSET_NS

# Far more records than the socket and the library's queue (RSC_QUEUE_RECS) hold: 1000 steps of
# 104 activities, bursts of 100 short kernels then 2 ms idle, like a small-kernel training step.
STRESS=(--steps 1000 --kernels 100 --kernel-us 0 --nccl-us 0 --copy-us 0 --sync-us 0
	--idle-us 2000 --quiet)
FAST=("${STRESS[@]}" --idle-us 300)

# daemon NAME ARGS...: the fake daemon on $T/NAME.sock, its summary in $T/NAME.json
daemon() {
	local name=$1
	shift
	bg "d_$name" "$PY" "$DAEMON" --wire "$TOP/cupti" --sock "$T/$name.sock" \
		--out "$T/$name.json" "$@"
	wait_lines "$T/d_$name.out" '^listening' 1 10 || fail "fake daemon '$name' did not start"
}

# host NAME LIBDIR ARGS...: cupti_host against $T/NAME.sock, with the doubles found in LIBDIR
host() {
	local name=$1 dir=$2
	shift 2
	LD_LIBRARY_PATH="$dir" RANKSCOPE_CUPTI_SOCKET="$T/$name.sock" RSDOUBLE_LOG="$T/$name.log" \
		bg "h_$name" "$HOST" "$@" "$LIB"
}

# finish NAME [nodaemon]: the host exits 0, then the daemon writes its summary
finish() {
	local name=$1 h="PID_h_$1" d="PID_d_$1" rc
	wait_exit "${!h}" 120
	rc=$?
	[ "$rc" -eq 0 ] || { tail -5 "$T/h_$name.out"; fail "cupti_host ($name) exited $rc"; }
	[ "${2:-}" = nodaemon ] && return 0
	wait_exit "${!d}" 30 || { tail -5 "$T/d_$name.out"; fail "fake daemon ($name) did not finish"; }
	[ -s "$T/$name.json" ] || { cat "$T/d_$name.out"; fail "no summary from the fake daemon ($name)"; }
}

check() { $PY "$T/check.py" "$@" || fail "$1: see above"; }

cat >"$T/check.py" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, os.environ['DBLSRC'])
from fake_daemon import read_wire
W = read_wire(os.environ['WIRE'])
T = os.environ['T']
SLACK_NS = 50000
CUPTI_API_VERSION = 130001
COPY = {1: W['RSC_COPY_HTOD'], 2: W['RSC_COPY_DTOH'], 8: W['RSC_COPY_DTOD'], 10: W['RSC_COPY_PEER']}
KIND = {'kernel': W['RSC_REC_KERNEL'], 'memcpy': W['RSC_REC_MEMCPY'],
        'memset': W['RSC_REC_MEMSET'], 'sync': W['RSC_REC_SYNC']}

def host(name):
    launches, done, info = [], None, {}
    for l in open(f'{T}/h_{name}.out', errors='replace').read().splitlines():
        if l.startswith('launch '):
            head, sep, nm = l.partition(' name=')
            d = dict(kv.split('=', 1) for kv in head.split()[1:])
            for k in ('corr', 't0', 't1', 'bytes', 'copykind', 'type', 'stream', 'step'):
                if k in d:
                    d[k] = int(d[k])
            if sep:
                d['name'] = nm
            launches.append(d)
        elif l.startswith('done '):
            done = {k: int(v) for k, v in (x.split('=') for x in l.split()[1:])}
        elif l.startswith('injected '):
            info.update(x.split('=') for x in l.split()[1:])
        elif l.startswith('cupti '):
            info['loaded_by'] = l.split('=')[1]
    assert done, f'{name}: the host never finished its loop'
    return launches, done, info

def summary(name):
    s = json.load(open(f'{T}/{name}.json'))
    assert not s['bad'], f'{name}: malformed messages from the library: {s["bad"][:5]}'
    assert s['connected'], f'{name}: the library never connected'
    return s

def last(s, key):
    return max((st[key] for st in s['statuses']), default=0)

def log(name):
    p = f'{T}/{name}.log'
    return open(p).read().splitlines() if os.path.exists(p) else []

def states(s):
    return [st['state'] for st in s['statuses']]

def parse():
    L, done, info = host('parse')
    s = summary('parse')
    by = {}
    for r in s['records']:
        by.setdefault(r['corr'], []).append(r)
    launched = {l['corr'] for l in L if l['kind'] != 'kernel_zero_ts'}
    zero = [l for l in L if l['kind'] == 'kernel_zero_ts']
    extra = set(by) - launched
    assert not extra, f'records no launch made: corr {sorted(extra)[:10]}'
    lead, tail = [], []
    for l in L:
        rs = by.get(l['corr'], [])
        if l['kind'] == 'kernel_zero_ts':
            assert not rs, f'a zero-timestamp kernel arrived: {rs}'
            continue
        assert len(rs) == 1, f'launch {l} arrived {len(rs)} times'
        r = rs[0]
        assert r['kind'] == KIND[l['kind']], (l, r)
        if l['kind'] == 'kernel':
            want = l['name'].encode()[:W['RSC_NAME_MAX']].decode(errors='replace')
            assert r['name'] == want, f'kernel corr {l["corr"]}: name {r["name"]!r} != {want!r}'
            assert r['stream'] == l['stream'], (l, r)
        elif l['kind'] == 'memcpy':
            assert r['value'] == l['bytes'] and r['sub'] == COPY[l['copykind']], (l, r)
        elif l['kind'] == 'memset':
            assert r['value'] == l['bytes'], (l, r)
        elif l['kind'] == 'sync':
            assert r['sub'] == l['type'], (l, r)
        tol = r['calib_err'] + SLACK_NS
        assert l['t0'] - tol <= r['start'] <= r['end'] <= l['t1'] + tol, \
            f'corr {l["corr"]}: [{r["start"]}, {r["end"]}] outside the host window ' \
            f'[{l["t0"]}, {l["t1"]}] +- {tol} ns'
        lead.append(r['start'] - l['t0'])
        tail.append(l['t1'] - r['end'])
    nccl = [r['name'] for r in s['records'] if r['name'] and r['name'].startswith('nccl')]
    assert len(nccl) == done['steps'], f'{len(nccl)} NCCL kernels for {done["steps"]} steps'
    assert set(nccl) == {'ncclDevKernel_AllReduce_Sum_f32_RING_LL',
                         'ncclKernel_AllReduce_RING_LL_Sum_float'}, set(nccl)
    assert all(n.startswith(('ncclDevKernel_', 'ncclKernel_')) for n in nccl)
    assert s['unknown_name_refs'] == 0, f'{s["unknown_name_refs"]} records before their RSC_NAME'
    assert len(set(s['names'].values())) == len(s['names']), 'a name sent under two ids'
    st = s['statuses']
    assert st[0]['state'] == W['RSC_ST_READY'], st[0]
    assert st[-1]['state'] == W['RSC_ST_ACTIVE'] and st[-1]['detail'] == 'recording', st[-1]
    assert all(x['pid'] == int(info['pid']) for x in st), 'status pid is not the host pid'
    assert st[-1]['cupti_version'] == CUPTI_API_VERSION and st[-1]['lib_version'] == W['RSC_VERSION']
    assert last(s, 'dropped_clock') == len(zero) > 0, \
        f'dropped_clock {last(s, "dropped_clock")} for {len(zero)} zero-timestamp kernels'
    assert last(s, 'records') == done['launches'], \
        f'status.records {last(s, "records")} != {done["launches"]} launched'
    assert last(s, 'dropped_queue') == 0 and last(s, 'dropped_cupti') == 0
    assert info['loaded_by'] == 'library', 'the library did not load libcupti.so itself'
    kinds = sorted(int(x.split('=')[1]) for x in log('parse') if x.startswith('enable '))
    assert kinds == [1, 2, 10, 22, 38], f'kinds enabled: {kinds}'
    us = lambda v: round(v / 1e3, 1)
    print(f'parse: {len(L)} launches ({len(zero)} zero-timestamp), {s["nrec"]} records in '
          f'{s["batches"]} batches, {len(s["names"])} names; calib_err_ns max '
          f'{s["calib_err_max"]}; start-t0 us min/med/max {us(min(lead))}/'
          f'{us(statistics.median(lead))}/{us(max(lead))}; t1-end us min {us(min(tail))}; '
          f'dropped_clock {last(s, "dropped_clock")}')

def kinds():
    L, done, info = host('kinds')
    s = summary('kinds')
    kernels = {l['corr'] for l in L if l['kind'] == 'kernel'}
    assert s['counts'] == {str(W['RSC_REC_KERNEL']): len(kernels)}, (s['counts'], len(kernels))
    assert {r['corr'] for r in s['records']} == kernels
    lg = [x for x in log('kinds') if x.startswith('enable ')]
    assert lg == ['enable kind=10'], f'CUPTI kinds enabled for RSC_REC_KERNEL alone: {lg}'
    print(f'kinds: RSC_ENABLE kernels only: {len(kernels)} kernel records, no memcpy, memset '
          f'or sync; CUPTI kinds enabled {lg}')

def foreign():
    L, done, info = host('foreign')
    s = summary('foreign')
    kernels = {l['corr'] for l in L if l['kind'] == 'kernel'}
    got = {r['corr'] for r in s['records'] if r['kind'] == W['RSC_REC_KERNEL']}
    assert kernels and got == kernels, (len(kernels), len(got))   # ours: every one, once
    n = sum(1 for x in log('foreign') if x.startswith('foreign buffer'))
    assert n >= 1, n
    print(f'foreign: {n} buffers of another tool went through the callback, left to their '
          f'owner; {len(got)} of {len(kernels)} kernels recorded')

def other():
    L, done, info = host('other')
    s = summary('other')
    st = s['statuses']
    assert st[0]['state'] == W['RSC_ST_READY'] and s['enables_sent'] >= 1, st
    assert st[-1]['state'] == W['RSC_ST_OTHER_SUBSCRIBER'], st[-1]
    assert st[-1]['detail'] == 'GPU timing unavailable: another CUPTI subscriber', st[-1]
    assert s['nrec'] == 0 and done['enables'] == 0, (s['nrec'], done)
    lg = log('other')
    assert any(x.startswith('subscribe rc=') and x != 'subscribe rc=0' for x in lg), lg
    assert not [x for x in lg if x.startswith(('enable ', 'register'))], lg
    print(f'other subscriber: states {states(s)}, detail {st[-1]["detail"]!r}, 0 records, '
          f'0 kinds enabled')

def dormant():
    L, done, info = host('dormant')
    s = summary('dormant')
    st = s['statuses']
    assert st and all(x['state'] == W['RSC_ST_READY'] for x in st), st
    assert st[-1]['detail'] == 'dormant: waiting for the daemon', st[-1]
    assert s['enables_sent'] == 0 and s['nrec'] == 0 and done['enables'] == 0, (s['nrec'], done)
    assert not log('dormant'), f'CUPTI calls while dormant: {log("dormant")}'
    print(f'dormant: {done["launches"]} launches, states {states(s)}, no CUPTI call, 0 records')

def nodriver():
    L, done, info = host('nodriver')
    s = summary('nodriver')
    st = s['statuses']
    assert st and all(x['state'] == W['RSC_ST_NO_DRIVER'] for x in st), st
    assert st[-1]['detail'].startswith('dormant: no CUDA driver'), st[-1]
    assert s['enables_sent'] >= 1, 'the fake daemon sent no RSC_ENABLE'
    assert s['nrec'] == 0 and done['enables'] == 0 and not log('nodriver')
    assert info['loaded_by'] == 'host', 'the library loaded libcupti.so with no driver'
    print(f'no driver: states {states(s)}, detail {st[-1]["detail"]!r}, RSC_ENABLE ignored')

def stress(name, ref=None):
    L, done, info = host(name)
    s = summary(name) if os.path.exists(f'{T}/{name}.json') else None
    loop = done['loop_ns']
    msg = f'{name}: loop {loop / 1e9:.3f} s for {done["launches"]} launches'
    if ref:
        ref_loop = host(ref)[1]['loop_ns']
        bound = 1.5 * ref_loop + 0.5e9
        msg += f' ({loop / ref_loop:.2f}x {ref}, bound {bound / 1e9:.3f} s)'
        assert loop < bound, msg + ': the application was slowed down'
    if s:
        msg += (f'; received {s["nrec"]}, status records {last(s, "records")} dropped_queue '
                f'{last(s, "dropped_queue")} dropped_cupti {last(s, "dropped_cupti")}; '
                f'unknown name refs {s["unknown_name_refs"]}')
    print(msg)
    return L, done, s

def stress_read():
    L, done, s = stress('sread')
    assert done['enables'] > 0 and s['nrec'] > 0

def stall():
    L, done, s = stress('stall', 'sread')
    assert s['stalled_s'] > 0, 'the fake daemon never stalled'
    assert done['launches'] > W['RSC_QUEUE_RECS'], 'too few records to fill the queue'
    dq = last(s, 'dropped_queue')
    assert dq > 0, 'no dropped_queue reported after the daemon resumed reading'
    assert last(s, 'records') == done['launches'], (last(s, 'records'), done)
    assert s['nrec'] + dq == done['launches'], \
        f'received {s["nrec"]} + dropped {dq} != {done["launches"]} launched'
    print(f'stall: stalled {s["stalled_s"]} s; every record accounted: received {s["nrec"]} + '
          f'dropped_queue {dq} = {done["launches"]}')

def nodaemon():
    L, done, s = stress('none', 'sread')
    assert done['enables'] == 0

def starve():
    L, done, s = stress('starve', 'fread')
    dc = last(s, 'dropped_cupti')
    assert done['dropped_cupti'] > 0, 'the CUPTI double never ran out of buffers'
    assert dc == done['dropped_cupti'], f'status dropped_cupti {dc} != {done["dropped_cupti"]}'
    assert s['nrec'] + dc + last(s, 'dropped_queue') == done['launches']

globals()[sys.argv[1]](*sys.argv[2:])
PY
export T DBLSRC="$TOP/tests/fixtures/cupti_double" WIRE="$TOP/cupti" PYTHONDONTWRITEBYTECODE=1

# 1. parsing, the clock, zero timestamps, NCCL names
daemon parse --poke-ms 250
host parse "$DBL" --steps 50 --kernels 4 --kernel-us 300 --nccl-us 800 --copy-us 100 \
	--sync-us 50 --idle-us 1000 --zero-ts --wait-enable-ms 5000 --linger-ms 2000
finish parse
check parse

# 2. only the kinds the daemon asks for are turned on in CUPTI: 1 << RSC_REC_KERNEL
daemon kinds --kinds 0x2
host kinds "$DBL" --steps 10 --kernels 2 --kernel-us 100 --nccl-us 100 --copy-us 50 --sync-us 50 \
	--idle-us 500 --wait-enable-ms 5000 --linger-ms 1200
finish kinds
check kinds

# 3. another CUPTI subscriber: the library stays out
daemon other --poke-ms 250
RSDOUBLE_OTHER_SUBSCRIBER=1 host other "$DBL" --steps 5 --wait-enable-ms 1000 --linger-ms 1000
finish other
check other

# 3b. a buffer the library did not give CUPTI (another tool's, its callbacks registered first)
# reaches the completion callback: not read as ours, never freed (the double frees it itself,
# and glibc would abort on a second free)
daemon foreign
RSDOUBLE_FOREIGN_BUFFER=1 host foreign "$DBL" --steps 20 --kernels 2 --kernel-us 100 \
	--nccl-us 100 --idle-us 500 --wait-enable-ms 5000 --linger-ms 1200
finish foreign
grep -q "foreign buffer completed, then freed by its owner" "$T/foreign.log" ||
	fail "the double never completed a foreign buffer"
check foreign

# 4. dormant until RSC_ENABLE: not a single CUPTI call
daemon dormant --mode dormant
host dormant "$DBL" --steps 5 --linger-ms 1000
finish dormant
check dormant

# 5. no CUDA driver: dormant whatever the daemon says
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
	echo "no driver: skipped, this machine has a real libcuda.so.1"
else
	mkdir -p "$T/nodrv"
	cp "$DBL/libcupti.so" "$T/nodrv/"
	daemon nodriver --enable-any --poke-ms 250
	host nodriver "$T/nodrv" --steps 5 --wait-cupti-ms 500 --linger-ms 1000
	finish nodriver
	check nodriver
fi

# 6. a reading daemon under load: the reference wall time
daemon sread --no-records --poke-ms 250
host sread "$DBL" "${STRESS[@]}" --wait-enable-ms 5000 --linger-ms 1500
finish sread
check stress_read

# 7. a stuck daemon: the queue fills, records drop (counted), the loop runs at full speed
daemon stall --mode stall --resume-file "$T/resume" --no-records --poke-ms 200
host stall "$DBL" "${STRESS[@]}" --wait-enable-ms 5000 --linger-ms 4000
wait_lines "$T/h_stall.out" '^done ' 1 60 || fail "stall: the host did not finish its loop"
touch "$T/resume"
finish stall
check stall

# 8. no daemon at all: the library retries in the background, the host is unaffected
host none "$DBL" "${STRESS[@]}" --linger-ms 0
finish none nodaemon
check nodaemon

# 9. CUPTI short of buffers: with a slow CUPTI worker (full buffers wait for the library's flush,
# every 0.5 s) and ~190k records/s, the 8 buffers the library lends fill up. First the same load
# on a CUPTI that completes buffers at once, as the reference.
daemon fread --no-records --poke-ms 250
host fread "$DBL" "${FAST[@]}" --wait-enable-ms 5000 --linger-ms 2500
finish fread
check stress fread
daemon starve --no-records --poke-ms 250
RSDOUBLE_COMPLETE_ON_FLUSH=1 host starve "$DBL" "${FAST[@]}" --wait-enable-ms 5000 --linger-ms 2500
finish starve
check starve

pass "records once each with names and bytes, clock within calib_err, zero timestamps counted, only the kinds asked for, other subscriber and no driver dormant, stuck/absent/starved pipelines drop without slowing the host"
