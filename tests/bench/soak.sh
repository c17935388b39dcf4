#!/usr/bin/env bash
# make soak: one daemon under a churning mix for SOAK_MINUTES (default 60), sampled each minute.
#   - real 2-rank OpenMPI jobs start every ~20 s and run 10-40 s; one in three has a rank
#     killed (SIGKILL) partway, which ends the job as OpenMPI does;
#   - ranks of the NCCL test double (TEST DOUBLE: NCCL needs a GPU) come and go, 10 at a time,
#     each living 0.1-5 s;
#   - a 2 s capture is asked for every 2 minutes;
#   - the HTTP API is hammered: /metrics, /api/v1/ranks, /api/v1/steps, /api/v1/jobs,
#     /api/v1/diagnosis and /healthz, ~20 requests a second.
# Each minute: the daemon's RSS, fds, entries of its hash maps, /metrics series, and its
# counters. Writes soak.tsv, soak.md (the table) and soak.png (gnuplot) under SOAK_OUT
# (default build/soak), and part 13 of tests/bench/results.md (SOAK_RESULTS). Pass: after a 10-minute warm-up (5 when shorter than 30), the median of
# each resource over the last third is within 10% (plus a small absolute slack) of its median
# over the first third after warm-up, and no counter ever goes backwards.
. "$(dirname "$0")/../lib.sh"
need_root
MIN=${SOAK_MINUTES:-60}
OUT=${SOAK_OUT:-$TOP/build/soak}
mkdir -p "$OUT"
[ -x "$FIX/short_rank" ] || fail "fixtures missing: make fixtures"
command -v mpirun >/dev/null || fail "OpenMPI missing: make deps"
[ "$(rs_progs_left)" = 0 ] || fail "rs_ programs of another rankscope are loaded: stop it first"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg rsd "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/lock" --retain 5 \
	--capture-dir "$T/caps" --capture-max-count 3
for i in $(seq 100); do
	http_get $URL/healthz >/dev/null 2>&1 && break
	sleep 0.1
done
echo "soak: $MIN minutes, daemon PID $PID_rsd on $URL; samples in $OUT/soak.tsv"
END=$(($(date +%s) + MIN * 60))

# the load, all in one python process (threads), until END
cat >"$T/load.py" <<'PY'
import os, random, signal, subprocess, sys, threading, time, urllib.request
url, end, fix, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
stats = {'mpi_jobs': 0, 'mpi_killed': 0, 'nccl_ranks': 0, 'captures': 0, 'requests': 0,
         'http_errors': 0}
lock = threading.Lock()
def bump(k, n=1):
    with lock:
        stats[k] += n
def mpi_jobs():
    n = 0
    while time.time() < end - 45:
        n += 1
        go = f'{tmp}/go{n}'
        iters = random.randint(2000, 8000)      # ~5 ms an iteration: 10-40 s
        p = subprocess.Popen(['mpirun', '--allow-run-as-root', '--oversubscribe', '-np', '2',
                              f'{fix}/mpi_loop', '--go-file', go, '--iters', str(iters),
                              '--compute-us', '3000', '--slow-rank', '1', '--slow-us', '1000'],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             start_new_session=True)
        pids = []
        while len(pids) < 2:
            l = p.stdout.readline()
            if not l:
                break
            if l.startswith('ready rank='):
                pids.append(int(l.split('pid=')[1]))
        open(go, 'w').close()
        bump('mpi_jobs')
        if pids and random.random() < 1 / 3:
            time.sleep(random.uniform(3, 8))
            try:
                os.kill(random.choice(pids), signal.SIGKILL)
                bump('mpi_killed')
            except ProcessLookupError:
                pass
        try:
            p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        time.sleep(random.uniform(2, 10))
def nccl_ranks():
    env = dict(os.environ, WORLD_SIZE='10', TORCHELASTIC_RUN_ID='soak-nccl')
    slots = [None] * 10
    while time.time() < end - 10:
        for s, p in enumerate(slots):
            if p is not None and p.poll() is None:
                continue
            slots[s] = subprocess.Popen([f'{fix}/short_rank', str(random.randint(100, 5000))],
                                        env=dict(env, RANK=str(s)))
            bump('nccl_ranks')
        time.sleep(0.05)
    for p in slots:
        if p:
            p.wait()
def get(path, method='GET'):
    try:
        with urllib.request.urlopen(urllib.request.Request(url + path, method=method),
                                    timeout=10) as r:
            r.read()
        bump('requests')
    except urllib.error.HTTPError as e:
        bump('requests')
        if e.code >= 500 and path != '/healthz':
            bump('http_errors')
    except OSError:
        bump('http_errors')
def hammer():
    paths = ['/metrics', '/api/v1/ranks', '/api/v1/steps', '/api/v1/jobs', '/api/v1/diagnosis',
             '/healthz']
    while time.time() < end:
        get(random.choice(paths))
        time.sleep(0.05)
def captures():
    while time.time() < end - 30:
        time.sleep(120)
        get('/api/v1/capture?seconds=2', 'POST')
        bump('captures')
ts = [threading.Thread(target=f) for f in (mpi_jobs, nccl_ranks, hammer, captures)]
for t in ts:
    t.start()
while any(t.is_alive() for t in ts):
    time.sleep(5)
    with lock:
        print(' '.join(f'{k}={v}' for k, v in stats.items()), flush=True)
PY
bg load $PY "$T/load.py" "$URL" "$END" "$FIX" "$T"

# sample: minute rss_kib fds map_entries series counters...
sample() {
	local m n=0 c
	for m in rs_tracked rs_threads rs_coll_seq rs_io_inflight rs_sock_owner; do
		c=$(bpftool -j map dump name "$m" 2>/dev/null | $PY -c '
import json, sys
try:
    print(len(json.load(sys.stdin)))
except ValueError:
    print(0)')
		n=$((n + c))
	done
	http_get $URL/metrics | tail -n +2 >"$T/metrics"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" \
		"$(awk '/^VmRSS/ {print $2}' /proc/$PID_rsd/status)" "$(ls /proc/$PID_rsd/fd | wc -l)" \
		"$n" "$(grep -vc '^#' "$T/metrics")" \
		"$(grep -E '^rankscope_events_received_total' "$T/metrics" | awk '{s += $NF} END {printf "%d", s}')" \
		"$(grep -E '^rankscope_events_dropped_total' "$T/metrics" | awk '{s += $NF} END {printf "%d", s}')" \
		"$(grep -E '^rankscope_attach_total' "$T/metrics" | awk '{s += $NF} END {printf "%d", s}')" \
		"$(grep -E '^train_step_seconds_count' "$T/metrics" | awk '{s += $NF} END {printf "%d", s}')"
}
printf 'minute\trss_kib\tfds\tmap_entries\tseries\treceived\tdropped\tattached\tsteps\n' >"$OUT/soak.tsv"
for ((m = 0; m <= MIN; m++)); do
	kill -0 "$PID_rsd" 2>/dev/null || fail "the daemon died at minute $m: $(tail -5 "$T/rsd.out")"
	sample "$m" >>"$OUT/soak.tsv"
	echo "minute $m/$MIN: $(tail -1 "$OUT/soak.tsv" | cut -f2-5 | tr '\t' ' ') (rss fds maps series); load: $(tail -1 "$T/load.out")"
	[ "$m" -lt "$MIN" ] && sleep $((60 - $(date +%s) % 60 > 5 ? 60 - $(date +%s) % 60 : 60))
done
wait_exit "$PID_load" 180 || fail "the load did not end"
cp "$T/rsd.out" "$OUT/daemon.log"
LOAD=$(tail -1 "$T/load.out")
$PY - "$OUT" "$MIN" "$LOAD" <<'PY' || exit 1
import statistics, sys
out, minutes, load = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [l.rstrip('\n').split('\t') for l in open(f'{out}/soak.tsv')]
head, rows = rows[0], [[int(x) for x in r] for r in rows[1:]]
warm = 10 if minutes >= 30 else 5
after = [r for r in rows if r[0] >= warm]
assert after, f'no sample after the {warm}-minute warm-up: give SOAK_MINUTES over {warm}'
third = max(1, len(after) // 3)
first, last = after[:third], after[-third:]
slack = {'rss_kib': 2048, 'fds': 8, 'map_entries': 64, 'series': 200}
verdicts = []
for col in ('rss_kib', 'fds', 'map_entries', 'series'):
    i = head.index(col)
    a, b = statistics.median(r[i] for r in first), statistics.median(r[i] for r in last)
    ok = b <= a * 1.10 + slack[col]
    verdicts.append((col, a, b, ok))
backwards = []
# steps: summed over the jobs watched, falls when a finished job's series go (--retain)
for col in ('received', 'dropped', 'attached'):
    i = head.index(col)
    backwards += [(col, p[0], q[0]) for p, q in zip(rows, rows[1:]) if q[i] < p[i]]
with open(f'{out}/soak.md', 'w') as f:
    f.write(f'{minutes} minutes; load at the end: {load}\n\n')
    f.write('| ' + ' | '.join(head) + ' |\n|' + '---|' * len(head) + '\n')
    for r in rows:
        f.write('| ' + ' | '.join(str(x) for x in r) + ' |\n')
    f.write(f'\nAfter a {warm}-minute warm-up, median of the first third vs the last third:\n\n')
    for col, a, b, ok in verdicts:
        f.write(f'- {col}: {a:.0f} -> {b:.0f} ({"flat" if ok else "GROWS"})\n')
    f.write(f'- counters going backwards: {backwards or "none"}\n')
print(open(f'{out}/soak.md').read())
assert all(ok for *_, ok in verdicts), verdicts
assert not backwards, backwards
PY
if command -v gnuplot >/dev/null; then
	gnuplot <<EOF || fail "gnuplot failed"
set terminal png size 1200,800
set output "$OUT/soak.png"
set multiplot layout 2,2 title "rankscope daemon, $MIN-minute soak (x: minute)"
set key off
set title "RSS (KiB)"; plot "$OUT/soak.tsv" using 1:2 every ::1 with linespoints
set title "open fds"; plot "$OUT/soak.tsv" using 1:3 every ::1 with linespoints
set title "entries in its hash maps"; plot "$OUT/soak.tsv" using 1:4 every ::1 with linespoints
set title "/metrics series"; plot "$OUT/soak.tsv" using 1:5 every ::1 with linespoints
unset multiplot
EOF
	echo "plot: $OUT/soak.png"
else
	echo "no gnuplot (make soak installs it): no plot"
fi
REV=$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$TOP" diff --quiet HEAD 2>/dev/null || REV="$REV+dirty"
$PY "$TOP/tests/bench/soak_record.py" "$OUT" "${SOAK_RESULTS:-$TOP/tests/bench/results.md}" "$REV" &&
	echo "recorded in ${SOAK_RESULTS:-tests/bench/results.md} (part 13)"
kill -TERM "$PID_rsd"
wait_exit "$PID_rsd" 60 || fail "the daemon did not exit on SIGTERM"
[ "$(rs_progs_left)" = 0 ] || fail "rs_ programs left after the daemon exited"
pass "soak: $MIN minutes, resources flat after warm-up, counters monotonic"
