#!/usr/bin/env bash
# Libraries as a container shows them. Each phase runs a 2-rank job in its own mount namespace
# (unshare -m + pivot_root into a scratch rootfs), linked to the NCCL test double at
# /opt/ctr/bin/double/libnccl.so.2: a path the host does not have. Then the container turns
# hostile before rankscope attaches:
#   root     nothing: the library is opened through /proc/PID/root;
#   escape   the library's directory is covered by a bind mount whose libnccl.so.2 is a symlink
#            to /etc/shadow (the maps path is unchanged; the container has no /etc/shadow):
#            the host's /etc/shadow is never opened (strace -y names every file rankscope
#            opened), the path is refused as unresolved, and the mapping itself (map_files)
#            is probed;
#   fifo     the library file is covered by a bind-mounted FIFO: refused at once, no hang;
#   replaced the file is replaced on disk (an upgrade under a running job; maps says
#            "(deleted)"): the old contents, the ones that run, are probed.
# In every phase each rank's collectives are counted exactly, which probes on any other file
# than the one mapped would not give.
# TEST DOUBLE: NCCL collectives need a GPU (see e2e/nccl_double.sh).
. "$(dirname "$0")/../lib.sh"
need_root
[ -e /usr/local/cuda/include/nccl.h ] || skip "no CUDA toolkit nccl.h: the NCCL double is built against it"
[ -e "$FIX/double/libnccl.so.2" ] || fail "fixture missing: make fixtures"
command -v strace >/dev/null || fail "strace missing: run make deps"
[ -e /opt/ctr ] && skip "/opt/ctr exists on the host: the test needs a path only the container has"

# make_rootfs DIR: the job's binary and the double at a container-only path, /usr from the host
make_rootfs() {
	local r=$1
	mkdir -p "$r"/{usr,proc,dev/shm,tmp,old,etc,opt/ctr/bin/double,decoy}
	ln -s usr/lib "$r/lib"
	ln -s usr/lib64 "$r/lib64"
	ln -s usr/bin "$r/bin"
	cp "$FIX/nccl_ranks" "$r/opt/ctr/bin/"
	cp "$FIX/double/libnccl.so.2" "$r/opt/ctr/bin/double/"
	ln -s /etc/shadow "$r/decoy/libnccl.so.2"
	mkfifo "$r/fifo"
}

# phase NAME: one container, sabotaged as NAME says, one attach under strace; checks its lines
phase() {
	local name=$1 r="$T/$1/rootfs" pids p0 t0 t1
	mkdir -p "$T/$name"
	make_rootfs "$r"
	bg "job_$name" unshare -m --propagation private sh -c '
		set -e
		r=$1; shift
		mount --bind "$r" "$r"
		mount --bind /usr "$r/usr"
		mount -t tmpfs tmpfs "$r/dev/shm"
		mount -t proc proc "$r/proc"
		cd "$r"
		pivot_root . old
		cd /
		umount -l /old
		exec "$@"' sh "$r" /opt/ctr/bin/nccl_ranks --go-file /tmp/go --nranks 2 --iters 60 \
		--slow-rank 1 --slow-us 2000
	wait_lines "$T/job_$name.out" '^ready rank=' 2 30 || fail "$name: job did not start: $(cat "$T/job_$name.out")"
	pids=$(grep -E '^ready rank=' "$T/job_$name.out" | sed 's/.*pid=//' | paste -sd,)
	p0=${pids%%,*}
	grep -q ' /opt/ctr/bin/double/libnccl.so.2$' "/proc/$p0/maps" ||
		fail "$name: the rank does not map the double at its container path: $(grep nccl "/proc/$p0/maps")"
	case $name in
	escape) nsenter -t "$p0" -m mount --bind /decoy /opt/ctr/bin/double ;;
	fifo) nsenter -t "$p0" -m mount --bind /fifo /opt/ctr/bin/double/libnccl.so.2 ;;
	replaced)
		cp "$r/opt/ctr/bin/double/libnccl.so.2" "$r/new.so"
		mv "$r/new.so" "$r/opt/ctr/bin/double/libnccl.so.2"
		grep -q 'libnccl.so.2 (deleted)$' "/proc/$p0/maps" || fail "replaced: maps does not say deleted"
		;;
	esac
	t0=$(date +%s%N)
	bg "rs_$name" strace -f -y -qq -e trace=open,openat,openat2 -o "$T/$name/strace.out" \
		"$RS" attach -p "$pids" --json --events
	wait_lines "$T/rs_$name.out" '"type":"rank"' 2 30 || fail "$name: rankscope did not attach: $(tail -5 "$T/rs_$name.out")"
	t1=$(date +%s%N)
	echo "$name: attached to 2 ranks in $(((t1 - t0) / 1000000)) ms (under strace)"
	touch "$r/tmp/go"
	wait_exit "$(eval echo "\$PID_job_$name")" 60 || fail "$name: job failed: $(tail -3 "$T/job_$name.out")"
	wait_exit "$(eval echo "\$PID_rs_$name")" 60 || fail "$name: rankscope did not exit after the ranks"
	$PY - "$name" "$T/job_$name.out" "$T/rs_$name.out" "$T/$name/strace.out" <<'PY' || exit 1
import json, re, sys, collections
name, job, out, trace = sys.argv[1:]
want = {'root': ('root', None), 'escape': ('map_files', 'unresolved'),
        'fifo': ('map_files', 'not_regular'), 'replaced': ('map_files', 'deleted')}[name]
done = {}
for l in open(job):
    m = re.match(r'done rank=(\d+) pid=(\d+) allreduce_calls=(\d+) allgather_calls=(\d+)', l)
    if m:
        done[int(m[2])] = int(m[3]) + int(m[4])
assert len(done) == 2, done
probes, calls = {}, collections.Counter()
for l in open(out):
    if not l.startswith('{'):
        continue
    d = json.loads(l)
    if d['type'] == 'rank':
        probes[d['pid']] = d['collective_probes']['nccl']
    elif d['type'] == 'collective':
        calls[d['pid']] += 1
for pid, n in done.items():
    p = probes[pid]
    assert p['sites'] > 0 and 'error' not in p, (name, pid, p)
    assert (p['via'], p.get('path_refused')) == want, (name, pid, p, 'want', want)
    assert calls[pid] == n, f"{name}: pid {pid}: {calls[pid]} collectives seen, {n} made"
# every file rankscope opened, as strace -y names it: never the host's /etc/shadow
opened = re.findall(r'= \d+<([^>]*)>', open(trace).read())
assert opened, "strace saw no open"
bad = [f for f in opened if f == '/etc/shadow' or f.endswith('/decoy/libnccl.so.2')]
assert not bad, (name, bad)
print(f"{name}: via {want[0]}, refused {want[1]}, collectives {dict(calls)}, {len(opened)} opens checked")
PY
}

for ph in root escape fifo replaced; do
	phase "$ph"
done
pass "container-only library via /proc/PID/root; symlink, FIFO and replaced file refused and the mapping probed, host file never opened"
