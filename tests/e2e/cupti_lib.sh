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
# Then the ways a real process differs (issue 16): a CUPTI older than API 27 that crashes on a
# NULL buffer (the double crashes; the library hands it a spare); 10^2, 10^4 and 10^5 records/s
# all delivered within the daemon's 2 s settle window; CUPTI's clock stepping by an hour or
# switched to another client's TSC mid-run; a Kineto-like client taking CUPTI over and letting
# go; cuptiActivityEnable failing; a CUPTI newer than the driver; the last step's records at
# exit; and the glibc floor of the built library. No root needed.
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
	RSDOUBLE_FOREIGN_BUFFER RSDOUBLE_API_VERSION RSDOUBLE_HOLD_MS RSDOUBLE_ENABLE_FAIL \
	RSDOUBLE_NO_TS_CALLBACK RSDOUBLE_DRIVER_VERSION RSDOUBLE_CLOCK_OFFSET_NS

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
    queries = [l for l in L if l['kind'] == 'query']
    L = [l for l in L if l['kind'] != 'query']
    assert queries and not {q['corr'] for q in queries} & set(by), \
        'event/stream query records arrived: cuptiActivityEnableAllSyncRecords(0) not in effect'
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
    assert last(s, 'records') == done['launches'] - len(queries), \
        f'status.records {last(s, "records")} != {done["launches"] - len(queries)} launched'
    lg = log('parse')
    for want in ('attr 5=1', 'allsync=0', 'timestamp callback'):
        assert want in lg, f'{want!r} not among the CUPTI calls: {lg}'
    assert done['dirty_buffers'] == 0, f'{done["dirty_buffers"]} buffers were not zeroed'
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
    # one call at InitializeInjection, before CUDA makes a context: the device buffer cap
    lg = log('dormant')
    assert lg == [f'attr 2={W["RSC_DEVICE_POOL_MAX"]}'], f'CUPTI calls while dormant: {lg}'
    print(f'dormant: {done["launches"]} launches, states {states(s)}, no CUPTI call but the '
          f'device buffer cap ({lg[0]}), 0 records')

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

def accounted(name, s, done, launched=None):
    """Every record launched is received or counted as dropped somewhere."""
    launched = done['launches'] if launched is None else launched
    drops = {k: last(s, k) for k in ('dropped_queue', 'dropped_cupti', 'dropped_clock')}
    assert s['nrec'] + sum(drops.values()) == launched, \
        f'{name}: received {s["nrec"]} + dropped {drops} != {launched} launched'
    return drops

def old_cupti():
    L, done, s = stress('old', 'fread')
    dc = last(s, 'dropped_cupti')
    assert done['dropped_cupti'] == 0, 'a buffer request was declined: the double would crash'
    assert dc > 0, 'no record went to the spare buffer: the pool never ran out'
    drops = accounted('old', s, done)
    print(f'old CUPTI (API 26): the pool ran out, {dc} records written to the spare buffer and '
          f'counted, no NULL handed out; {drops}')

def rates(*names):
    for name in names:
        L, done, info = host(name)
        s = summary(name)
        rate = int(name[4:])
        drops = accounted(name, s, done)
        steps = [l for l in open(f'{T}/h_{name}.out').read().splitlines()
                 if l.startswith('rate step=')]
        assert s['lag_over_2s'] == 0 and s['lag_max_ns'] < 2e9, \
            f'{name}: a record reached the daemon {s["lag_max_ns"] / 1e9:.2f} s after it ' \
            f'ended (settle window 2 s)'
        got = done['launches'] / (done['loop_ns'] / 1e9)
        assert got > 0.5 * rate, f'{name}: the host managed {got:.0f} records/s'
        if rate <= 10000:
            assert not any(drops.values()), f'{name}: dropped {drops} at {rate} records/s'
        print(f'{name}: {done["launches"]} kernels in {len(steps)} steps of 100 ms '
              f'({got:.0f}/s); received {s["nrec"]}, latest {s["lag_max_ns"] / 1e6:.0f} ms '
              f'after its end; dropped {drops}')

def windows(name, min_kept=0.9):
    """Records land inside the host windows they were launched in, or are counted dropped."""
    L, done, info = host(name)
    s = summary(name)
    by = {r['corr']: r for r in s['records']}
    L = [l for l in L if l['kind'] in KIND]
    kept = 0
    for l in L:
        r = by.get(l['corr'])
        if not r:
            continue
        tol = r['calib_err'] + SLACK_NS
        assert l['t0'] - tol <= r['start'] <= r['end'] <= l['t1'] + tol, \
            f'{name}: corr {l["corr"]} step {l["step"]}: [{r["start"]}, {r["end"]}] ' \
            f'outside the host window [{l["t0"]}, {l["t1"]}] +- {tol} ns'
        kept += 1
    dclk = last(s, 'dropped_clock')
    drops = accounted(name, s, done, len(L))
    assert kept >= min_kept * len(L), f'{name}: only {kept} of {len(L)} records kept'
    return kept, len(L), dclk, s

def clockstep():
    kept, n, dclk, s = windows('clockstep')
    assert 'clock step 3600000000000 ns' in log('clockstep')
    assert 'timestamp callback' not in log('clockstep')
    print(f'clock step: CUPTI without a timestamp callback, its clock 1 h ahead mid-run: '
          f'{kept} of {n} records inside their host windows, {dclk} outside every calibrated '
          f'window (counted)')

def tsc():
    kept, n, dclk, s = windows('tsc')
    lg = log('tsc')
    assert 'timestamp callback' in lg and 'clock tsc' in lg, lg
    print(f'TSC: our CLOCK_MONOTONIC callback, then another client\'s TSC clock (2.1 ticks/ns) '
          f'mid-run: {kept} of {n} records inside their host windows, {dclk} counted out')

def kineto(name, teardown):
    L, done, info = host(name)
    s = summary(name)
    st = s['statuses']
    seq = [x['state'] for x in st]
    taken = [x for x in st if x['state'] == W['RSC_ST_TAKEN_OVER']]
    assert taken, f'{name}: the takeover was never reported: states {seq}'
    t_taken = taken[0]['t']
    assert 'another CUPTI client' in taken[0]['detail'], taken[0]
    ev = {l.split()[2]: l for l in open(f'{T}/h_{name}.out').read().splitlines()
          if l.startswith('event ')}
    kr, ku = (int(x.split('=')[1]) for x in
              [l for l in open(f'{T}/h_{name}.out').read().splitlines()
               if l.startswith('kineto ')][0].split()[1:])
    assert kr > 0, 'the Kineto double recorded nothing'
    if teardown:
        back = [x for x in st if x['state'] == W['RSC_ST_ACTIVE'] and x['t'] > t_taken]
        assert back, f'{name}: CUPTI never taken back after the other client finalized: {seq}'
        assert back[-1]['detail'].startswith('recording again'), back[-1]
        assert st[-1]['state'] == W['RSC_ST_ACTIVE'], seq
        lg = log(name)
        i = lg.index('kineto: stop and finalize')
        assert 'register' in lg[i:], 'the library did not register its callbacks again'
        late = [l for l in L if l['step'] >= done['steps'] - 20 and l['kind'] == 'kernel']
        got = {r['corr'] for r in s['records']}
        miss = sorted({l['step'] for l in late if l['corr'] not in got})
        assert late and not miss, \
            f'{name}: kernels of the last 20 steps, after CUPTI came back, are missing: ' \
            f'steps {miss[:10]}{"..." if len(miss) > 10 else ""} of {done["steps"]}; ' \
            f'recording again at {back[-1]["t"]} s; {s["nrec"]} records received'
    else:
        assert st[-1]['state'] == W['RSC_ST_TAKEN_OVER'], \
            f'{name}: state after a client that kept CUPTI: {seq[-5:]} (stale active?)'
    print(f'{name}: states {sorted(set(seq), key=seq.index)}; taken over at {t_taken} s '
          f'({taken[0]["detail"]!r}); Kineto double: {kr} records, {ku} of our buffers kept '
          f'as unknown; {s["nrec"]} records received')

def failed():
    L, done, info = host('failed')
    s = summary('failed')
    st = s['statuses'][-1]
    assert st['state'] == W['RSC_ST_FAILED'], st
    assert st['detail'] == 'GPU timing off: cuptiActivityEnable(10): CUPTI_ERROR_NOT_COMPATIBLE', st
    assert s['nrec'] == 0
    lg = log('failed')
    assert not [x for x in lg if x.startswith('enable kind=') and 'failed' not in x and
                not any(y == 'disable ' + x[len('enable '):] for y in lg)], \
        f'a kind left on after the failure: {lg}'
    print(f'enable fails: state failed, detail {st["detail"]!r}, 0 records, no kind left on')

def newer():
    L, done, info = host('newer')
    s = summary('newer')
    st = s['statuses'][-1]
    assert st['state'] == W['RSC_ST_CUPTI_VERSION'], st
    assert st['detail'].startswith('GPU timing unavailable: CUPTI 130001 is for CUDA 13, the '
                                   'driver is CUDA 12.8') or 'is for CUDA 13' in st['detail'], st
    assert s['nrec'] == 0 and done['enables'] == 0
    print(f'CUPTI newer than the driver: state cupti_version, detail {st["detail"]!r}')

def atexit_flush():
    L, done, info = host('exitflush')
    s = summary('exitflush')
    got = {r['corr'] for r in s['records']}
    want = [l for l in L if l['kind'] in KIND]
    missing = [l for l in want if l['corr'] not in got]
    assert not missing, f'{len(missing)} records of the last steps lost at exit: {missing[:3]}'
    print(f'exit with no linger: all {len(want)} records sent, the last buffer forced out and '
          f'sent from the exiting thread')

globals()[sys.argv[1]](*sys.argv[2:])
PY
export T DBLSRC="$TOP/tests/fixtures/cupti_double" WIRE="$TOP/cupti" PYTHONDONTWRITEBYTECODE=1

# 1. parsing, the clock, zero timestamps, NCCL names
daemon parse --poke-ms 250
host parse "$DBL" --steps 50 --kernels 4 --kernel-us 300 --nccl-us 800 --copy-us 100 \
	--sync-us 50 --idle-us 1000 --zero-ts --queries 2 --wait-enable-ms 5000 --linger-ms 2000
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

# 9. CUPTI short of buffers: with a slow CUPTI worker (full buffers come back 1 s after they
# fill) and ~190k records/s, the 32 buffers the library lends run out. First the same load on a
# CUPTI that completes buffers at once, as the reference.
daemon fread --no-records --poke-ms 250
host fread "$DBL" "${FAST[@]}" --wait-enable-ms 5000 --linger-ms 2500
finish fread
check stress fread
daemon starve --no-records --poke-ms 250
RSDOUBLE_COMPLETE_ON_FLUSH=1 RSDOUBLE_HOLD_MS=1000 host starve "$DBL" "${FAST[@]}" \
	--wait-enable-ms 5000 --linger-ms 2500
finish starve
check starve

# 10. a CUPTI before API version 27 crashes on a NULL buffer: the double does too (a client that
# has none), and the library, starved as in 9, hands it the spare instead
RSDOUBLE_API_VERSION=26 LD_LIBRARY_PATH="$DBL" RSDOUBLE_LOG="$T/null26.log" \
	"$HOST" --null-buffers >"$T/null26.out" 2>&1
rc=$?
[ "$rc" -ge 128 ] && [ $((rc - 128)) -eq 11 ] ||
	fail "the double at API 26 did not crash (SIGSEGV) on a NULL buffer: exit $rc"
RSDOUBLE_API_VERSION=27 LD_LIBRARY_PATH="$DBL" "$HOST" --null-buffers >"$T/null27.out" 2>&1 ||
	fail "the double at API 27 crashed on a NULL buffer: $(tail -1 "$T/null27.out")"
grep -q 'survived requests=[1-9]' "$T/null27.out" || fail "null27: no buffer request was made"
echo "double: a NULL buffer crashes API 26 (exit $rc, SIGSEGV), not API 27"
daemon old --no-records --poke-ms 250
RSDOUBLE_API_VERSION=26 RSDOUBLE_COMPLETE_ON_FLUSH=1 RSDOUBLE_HOLD_MS=1000 host old "$DBL" \
	"${FAST[@]}" --wait-enable-ms 5000 --linger-ms 2500
finish old
check old_cupti

# 11. 10^2, 10^4 and 10^5 kernel records a second: each reaches the daemon within its 2 s
# settle window, and none is dropped at 10^4
for r in 100 10000 100000; do
	daemon "rate$r" --no-records --poke-ms 250
	host "rate$r" "$DBL" --rate "$r" --seconds 3 --wait-enable-ms 5000 --linger-ms 1500
	finish "rate$r"
done
check rates rate100 rate10000 rate100000

# 12. a CUPTI with no timestamp callback, whose clock (CLOCK_REALTIME) steps an hour ahead
# mid-run: each record converts by the calibration of its own time, or is counted out
CLOCKSTEP=(--steps 60 --kernels 2 --kernel-us 200 --nccl-us 300 --copy-us 50 --sync-us 50
	--idle-us 20000 --wait-enable-ms 5000 --linger-ms 1500)
daemon clockstep --poke-ms 250
RSDOUBLE_NO_TS_CALLBACK=1 host clockstep "$DBL" "${CLOCKSTEP[@]}" --clock-step 30:3600000000000
finish clockstep
check clockstep

# 13. our CLOCK_MONOTONIC callback, then another client's TSC clock mid-run
daemon tsc --poke-ms 250
host tsc "$DBL" "${CLOCKSTEP[@]}" --tsc-at 30
finish tsc
check tsc

# 14. a Kineto-like client takes CUPTI over (its callbacks, its kinds, per-thread buffers off),
# then stops: with cuptiFinalize the library takes CUPTI back; without, it stays taken_over.
# The library looks again every 5 s (RECHECK_NS): the 700 steps of ~10.5 ms after the stop
# leave it 2 s more than that before the last 20 (with 400, the look could fall after them)
KINETO=(--steps 1800 --kernels 2 --kernel-us 100 --nccl-us 100 --copy-us 20 --sync-us 20
	--idle-us 10000 --kineto-at 100 --wait-enable-ms 5000 --linger-ms 1000)
daemon kineto --poke-ms 500
host kineto "$DBL" "${KINETO[@]}" --kineto-stop-at 1100 --kineto-teardown --kineto-tsc
daemon kinetokeep --poke-ms 500
host kinetokeep "$DBL" "${KINETO[@]}" --kineto-stop-at 1100
finish kineto
finish kinetokeep
check kineto kineto 1
check kineto kinetokeep ''

# 15. cuptiActivityEnable fails (CUPTI_ERROR_NOT_COMPATIBLE, confidential computing): a state
# with the reason, not "recording" with no data
daemon failed --poke-ms 250
RSDOUBLE_ENABLE_FAIL=10:14 host failed "$DBL" --steps 10 --wait-enable-ms 1000 --linger-ms 1000
finish failed
check failed

# 16. a CUPTI newer than the driver (CUDA 13's with a 12.8 driver) is not used
daemon newer --enable-any --poke-ms 250
RSDOUBLE_DRIVER_VERSION=12080 host newer "$DBL" --steps 5 --wait-cupti-ms 500 --linger-ms 1000
finish newer
check newer

# 17. exit right after the last step: at_exit forces the last buffer out and sends it
daemon exitflush --poke-ms 250
host exitflush "$DBL" --steps 20 --kernels 2 --kernel-us 100 --nccl-us 100 --idle-us 500 \
	--wait-enable-ms 5000 --linger-ms 0
finish exitflush
check atexit_flush

# 18. the glibc floor: no symbol newer than GLIBC_2.17, and the old homes of the pthread and dl
# functions listed as needed (Ubuntu 20.04 and NGC images have glibc 2.31)
newest=$(objdump -T "$LIB" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
[ "$(printf '%s\n' "$newest" GLIBC_2.17 | sort -V | tail -1)" = GLIBC_2.17 ] ||
	fail "librankscope_cupti.so needs $newest: over the GLIBC_2.17 floor (cupti/glibc_compat.h)"
for so in libdl.so.2 libpthread.so.0; do
	readelf -d "$LIB" | grep -q "NEEDED.*\[$so\]" || fail "librankscope_cupti.so does not need $so"
done
echo "glibc: newest symbol version $newest; needs libdl.so.2 and libpthread.so.0"

pass "records once each with names and bytes, clock within calib_err, zero timestamps counted, only the kinds asked for, other subscriber and no driver dormant, stuck/absent/starved pipelines drop without slowing the host, old CUPTI never gets NULL, 10^2-10^5 records/s within the settle window, clock steps and TSC, Kineto takeover and return, enable failure, CUPTI newer than the driver, exit flush, glibc floor"
