# Shared helpers for the root and end-to-end tests. Source it; each test is its own script.
# Exit codes: 0 pass, 1 fail, 77 skipped (the last "SKIP: reason" line says why).
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RS="${RS_BIN:-$TOP/build/rankscope}"	# tests/run.sh --sanitize: the ASan build
FIX="$TOP/build/fixtures"
ZOO_DDP="$TOP/tests/workloads/zoo_ddp_launch.sh"	# PyTorch DDP (gloo) ranks of zoo_ddp.py
PY=/usr/bin/python3
T=$(mktemp -d /tmp/rankscope-test.XXXXXX)
BG_PIDS=()
# every process this test starts inherits it: cleanup finds them all, whatever process group
# or session they moved to (mpirun's ranks are not in its group)
export RS_TEST_TREE=$$

cleanup() {
	local p
	[ -n "${CHROME_USED:-}" ] && chrome_reap
	for p in "${BG_PIDS[@]}"; do
		kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null
	done
	sleep 0.2
	for p in "${BG_PIDS[@]}"; do
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
	done
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		[ "$p" = $$ ] || [ "$p" = "$BASHPID" ] && continue
		grep -qsxz "RS_TEST_TREE=$$" "/proc/$p/environ" && kill -KILL "$p" 2>/dev/null
	done
	# RS_TEST_KEEP=DIR: keep the test's files there (a failure's outputs, to read)
	[ -n "${RS_TEST_KEEP:-}" ] && rm -rf "$RS_TEST_KEEP" && cp -r "$T" "$RS_TEST_KEEP"
	rm -rf "$T"
}
trap cleanup EXIT

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "PASS: $*"; exit 0; }

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (eBPF attach)"
	[ -r /sys/kernel/btf/vmlinux ] || skip "kernel has no BTF"
}

# free_port: a loopback TCP port nothing uses now (a random pick can meet an ephemeral one)
free_port() {
	$PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# bg NAME CMD...: run CMD in its own process group, output to $T/NAME.out
bg() {
	local name=$1
	shift
	setsid "$@" >"$T/$name.out" 2>&1 &
	BG_PIDS+=($!)
	eval "PID_$name=$!"
}

# wait_lines FILE REGEX N TIMEOUT_S: wait until FILE has N lines matching REGEX
wait_lines() {
	local f=$1 re=$2 n=$3 t=$4 i
	local got
	for ((i = 0; i < t * 10; i++)); do
		got=$(grep -cE "$re" "$f" 2>/dev/null)
		[ "${got:-0}" -ge "$n" ] && return 0
		sleep 0.1
	done
	echo "timed out waiting for $n lines /$re/ in $f${5:+ (${5})}:"
	[ -n "${5:-}" ] || tail -20 "$f"
	return 1
}

# ready_pids FILE: rank pids from "ready rank=R pid=P" lines, ordered by rank, comma-separated
ready_pids() {
	grep -E '^ready rank=' "$1" | sort -t= -k2 -n | sed 's/.*pid=//' | paste -sd,
}

# wait_exit PID TIMEOUT_S: wait for a background process to end; returns its status
wait_exit() {
	local pid=$1 t=$2 i
	for ((i = 0; i < t * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || { wait "$pid"; return $?; }
		sleep 0.1
	done
	echo "process $pid still running after ${t}s"
	return 124
}

# diagnose_job NAME N CMD...: run the job CMD (N ranks that each print "ready rank=R pid=P",
# held until $T/NAME.go exists: give CMD --go-file "$T/NAME.go") under rankscope diagnose
# --json until both end: the job's lines in $T/NAME.out, rankscope's in $T/NAMErs.out
diagnose_job() {
	local name=$1 n=$2
	shift 2
	bg "$name" "$@"
	wait_lines "$T/$name.out" '^ready rank=' "$n" 60 || fail "$name: the job did not start"
	bg "${name}rs" "$RS" diagnose -p "$(ready_pids "$T/$name.out")" --json
	wait_lines "$T/${name}rs.out" '"type":"rank"' "$n" 30 || fail "$name: rankscope did not attach"
	touch "$T/$name.go"
	wait_exit "$(eval echo "\$PID_$name")" 120 || fail "$name: the job failed"
	wait_exit "$(eval echo "\$PID_${name}rs")" 60 || fail "$name: rankscope did not exit"
}

# rs_attach NAME ARGS...: start rankscope attach in the background, wait until every rank is
# attached (one rank line per PID given) and the loop runs.
rs_attach() {
	local name=$1 n
	shift
	bg "$name" "$RS" attach "$@"
	n=$(echo "$*" | sed -n 's/.*-p \([0-9,]*\).*/\1/p' | tr ',' '\n' | grep -c .)
	wait_lines "$T/$name.out" '"type":"rank"' "${n:-1}" 30 || fail "rankscope did not attach"
}

# leftovers [PID]: rs_ programs held open by PID, or (no PID) by no process at all. This
# bpftool has no pid column, so read prog_id from every process' fdinfo.
# rs_ programs in the kernel at all, held by anyone or by nothing (a leaked link or pin keeps
# one alive). The kernel frees them a moment after the last holder goes: waits up to 10 s
# for 0, then prints the count.
rs_progs_left() {
	local n i
	for i in $(seq 50); do
		n=$(bpftool -j prog show 2>/dev/null | $PY -c '
import json, sys
print(sum(1 for p in json.load(sys.stdin) if p.get("name", "").startswith("rs_")))')
		[ "$n" = 0 ] && break
		sleep 0.2
	done
	echo "$n"
}

leftovers() {
	bpftool -j prog show 2>/dev/null | $PY -c '
import glob, json, re, sys
want = sys.argv[1] if len(sys.argv) > 1 else None
held = {}
for f in glob.glob("/proc/[0-9]*/fdinfo/*"):
    try:
        m = re.search(r"^prog_id:\s*(\d+)", open(f).read(), re.M)
    except OSError:
        continue
    if m:
        held.setdefault(int(m[1]), set()).add(f.split("/")[2])
progs = [p["id"] for p in json.load(sys.stdin) if p.get("name", "").startswith("rs_")]
print(len([i for i in progs if (want in held.get(i, ()) if want else not held.get(i))]))' "$@"
}

# Chromium's crash handler leaves its process group: find what is left by our own user-data-dir
chrome_reap() {
	local p
	for p in /proc/[0-9]*; do
		{ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF -- "$T/chrome" &&
			kill -KILL "${p#/proc/}" 2>/dev/null
	done
	return 0
}

# chrome NAME ARGS...: one headless Chromium run in its own process group, output in $T/NAME.out
chrome() {
	local name=$1 pid rc
	shift
	CHROME_USED=1
	setsid timeout -k 5 60 chromium --headless --no-sandbox --disable-gpu \
		--disable-background-networking --disable-dev-shm-usage --disable-crash-reporter \
		--user-data-dir="$T/chrome-$name" "$@" >"$T/$name.out" 2>"$T/$name.err" &
	pid=$!
	BG_PIDS+=("$pid")
	wait "$pid"
	rc=$?
	kill -KILL -- "-$pid" 2>/dev/null
	chrome_reap
	[ $rc = 0 ] || echo "chromium $name: exit $rc: $(grep -v dbus "$T/$name.err" | tail -3)"
	return $rc
}

# http_get URL [METHOD]: the status line, then the body (HTTP errors too)
http_get() { $PY -c '
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(urllib.request.Request(sys.argv[1], method=sys.argv[2]), timeout=5)
    print(r.status); sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code); sys.stdout.write(e.read().decode())' "$1" "${2:-GET}"; }

# test_cgroups NAME...: a cgroup $ROOT/$CG-NAME for each NAME, in a writable hierarchy (v2, the
# v2 part of a hybrid setup, else v1 pids: a daemon's --cgroup matches the path in any), its
# processes moved out and it removed at exit. Skips without one.
test_cgroups() {
	local r n
	ROOT=
	for r in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/pids; do
		[ -w "$r/cgroup.procs" ] && { ROOT=$r; break; }
	done
	[ -n "$ROOT" ] || skip "no writable cgroup hierarchy (v2 /sys/fs/cgroup[/unified] or v1 pids)"
	CG=rankscope-test-$$
	CG_NAMES=("$@")
	for n in "${CG_NAMES[@]}"; do
		mkdir "$ROOT/$CG-$n" || fail "cannot make cgroup $ROOT/$CG-$n"
	done
	trap 'cleanup; cleanup_cgroups' EXIT
}

cleanup_cgroups() {
	local n p i
	for n in "${CG_NAMES[@]}"; do
		[ -d "$ROOT/$CG-$n" ] || continue
		while read -r p; do echo "$p" >"$ROOT/cgroup.procs" 2>/dev/null; done \
			<"$ROOT/$CG-$n/cgroup.procs"
		# killed ranks stay in it until they are reaped
		for ((i = 0; i < 50; i++)); do
			rmdir "$ROOT/$CG-$n" 2>/dev/null && break
			sleep 0.1
		done
		[ -d "$ROOT/$CG-$n" ] && echo "could not remove cgroup $ROOT/$CG-$n" >&2
	done
}

# test_netns A B: two "nodes", network namespaces NS_A and NS_B joined by a veth pair (rsn0 at
# both ends, addresses ADDR_A and ADDR_B), removed at exit; after test_cgroups when both are
# used. Skips where namespaces or veth pairs cannot be made.
test_netns() {
	local X=$(($$ % 200)) n ns addr
	command -v ip >/dev/null || skip "iproute2 (ip) not installed"
	NS_a=rs-a-$$ NS_b=rs-b-$$
	ADDR_a=10.213.$X.1 ADDR_b=10.213.$X.2
	trap 'cleanup; cleanup_cgroups; cleanup_netns' EXIT
	ip netns add "$NS_a" && ip netns add "$NS_b" ||
		skip "cannot make network namespaces (ip netns add)"
	ip link add "rsa$$" type veth peer name "rsb$$" || skip "cannot make a veth pair"
	for n in a b; do
		ns=NS_$n addr=ADDR_$n
		ip link set "rs$n$$" netns "${!ns}" &&
			ip -n "${!ns}" link set "rs$n$$" name rsn0 &&
			ip -n "${!ns}" addr add "${!addr}/24" dev rsn0 &&
			ip -n "${!ns}" link set rsn0 up &&
			ip -n "${!ns}" link set lo up || fail "cannot set up node $n's namespace"
	done
	# a port nobody listens on: refused (not timed out) means B answered across the veth
	ip netns exec "$NS_a" $PY -c '
import socket, sys
socket.create_connection((sys.argv[1], 22), timeout=2)' "$ADDR_b" 2>&1 |
		grep -q "refused" || fail "node A cannot reach node B across the veth"
}

cleanup_netns() {
	[ -n "${NS_a:-}" ] && ip netns del "$NS_a" 2>/dev/null
	[ -n "${NS_b:-}" ] && ip netns del "$NS_b" 2>/dev/null
	ip link del "rsa$$" 2>/dev/null	# only if it never moved into its namespace
}

# mpi_wrap_in_b RANK (after test_netns): $T/wrap.sh runs an OpenMPI rank (mpirun ... $T/wrap.sh
# PROGRAM) in namespace A, except rank RANK, in B. The launcher (PMIx) listens on loopback in A
# only: RANK reaches it through a TCP forwarder on A's veth address, started by its wrapper
# before it enters B.
mpi_wrap_in_b() {
	cat >"$T/fwd.py" <<'PY'
import socket, sys, threading
lh, lp, th, tp = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((lh, lp))
srv.listen(8)
def pump(a, b):
    try:
        while (d := a.recv(65536)):
            b.sendall(d)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
while True:
    c, _ = srv.accept()
    t = socket.create_connection((th, tp))
    for a, b in ((c, t), (t, c)):
        threading.Thread(target=pump, args=(a, b), daemon=True).start()
PY
	cat >"$T/wrap.sh" <<EOF
#!/bin/sh
# rank $1 runs in namespace B; the others stay in A, where mpirun is
[ "\$OMPI_COMM_WORLD_RANK" = $1 ] || exec "\$@"
port=\$(printenv PMIX_SERVER_URI4 | sed 's/.*://')
$PY "$T/fwd.py" $ADDR_a "\$port" 127.0.0.1 "\$port" &
for v in \$(env | grep '^PMIX_SERVER_URI' | cut -d= -f1); do
	export "\$v=\$(printenv "\$v" | sed 's/127\.0\.0\.1/$ADDR_a/g')"
done
sleep 0.5
exec ip netns exec $NS_b "\$@"
EOF
	chmod +x "$T/wrap.sh"
}

# mpi_two_ns RANK: the preconditions of a test of zoo_mpi over OpenMPI's TCP transport across
# two network namespaces (root, mpirun, tc, the workload), the namespaces, and $T/wrap.sh that
# runs rank RANK in B, the others in A (mpi_wrap_in_b).
mpi_two_ns() {
	need_root
	command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
	command -v tc >/dev/null || skip "iproute2 (tc) not installed"
	[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
	test_netns a b
	mpi_wrap_in_b "$1"
}

# mpi_two_ns_job NP ZOO_ARGS...: after mpi_two_ns, NP ranks of zoo_mpi as bg job (over the
# veth, --go-file $T/go, --data-dir $T/data); returns once every rank is ready.
mpi_two_ns_job() {
	local np=$1
	shift
	bg job ip netns exec "$NS_a" mpirun --allow-run-as-root --oversubscribe --mca btl self,tcp \
		--mca btl_tcp_if_include rsn0 --mca oob_tcp_if_include rsn0 -np "$np" "$T/wrap.sh" \
		"$TOP/build/workloads/zoo_mpi" "$@" --go-file "$T/go" --data-dir "$T/data"
	wait_lines "$T/job.out" '^ready rank=' "$np" 90 ||
		fail "the MPI job did not start: $(tail -3 "$T/job.out")"
}

# throttle_veth RATE: a tbf qdisc of RATE on both ends of the veth between A and B.
throttle_veth() {
	local ns
	for ns in "$NS_a" "$NS_b"; do
		ip netns exec "$ns" tc qdisc add dev rsn0 root tbf rate "$1" burst 32kb latency 400ms ||
			fail "cannot throttle rsn0 in $ns with tbf"
	done
}

# wait_class CLASS TIMEOUT_S: until rankscope's output ($T/rs.out) has a CLASS verdict; fails
# with the step rule's lines, every verdict as "step [window] class rank" and the last two whole.
wait_class() {
	wait_lines "$T/rs.out" "\"class\":\"$1\"" 1 "$2" "verdicts below" && return 0
	grep '"type":"rule"' "$T/rs.out"
	grep '"type":"verdict"' "$T/rs.out" |
		sed -E 's/.*"step":([0-9]+),"window":(\[[0-9]+,[0-9]+\]),"class":"([a-z_]+)","rank":(-?[0-9]+).*/\1 \2 \3 \4/' |
		tr '\n' ';' | tail -c 3000
	echo
	fail "no $1 verdict in $2 s: $(grep '"verdict"' "$T/rs.out" | tail -2 | cut -c1-600)"
}

# stop_rs_job: rankscope (bg rs) stopped, then the job's process group (bg job).
stop_rs_job() {
	kill -TERM "$PID_rs"
	wait_exit "$PID_rs" 30 >/dev/null
	kill -TERM -- "-$PID_job"
	wait_exit "$PID_job" 30 >/dev/null
}

# run_fuzz BIN WHAT [libFuzzer options...]: BIN over the seeds in $T/corpus for FUZZ_SECONDS
# (20); passes saying WHAT was fuzzed, or fails with the crash's log.
run_fuzz() {
	fuzz_only "$@"
	pass "$2 fuzzed for ${FUZZ_SECONDS:-20} s without a finding"
}

# fuzz_only BIN WHAT [ARGS...]: run_fuzz without the PASS, for a test that checks more after
fuzz_only() {
	local bin=$1 what=$2 secs=${FUZZ_SECONDS:-20} rc
	shift 2
	"$bin" -max_total_time="$secs" -max_len=65536 -print_final_stats=1 -artifact_prefix="$T/" \
		"$@" "$T/corpus" \
		>"$T/fuzz.log" 2>&1
	rc=$?
	grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$T/fuzz.log" |
		tail -3
	if [ $rc -ne 0 ]; then
		tail -30 "$T/fuzz.log"
		fail "the fuzzer found a crash in $what (exit $rc)"
	fi
	echo "$what fuzzed for ${secs} s without a finding"
}

# fuzz_target NAME WHAT [SEED_DIR]: fuzz build/fuzz/fuzz_NAME from its corpus kept in the tree
# (tests/fuzz/corpus/NAME, copied: the run's finds do not land there) and SEED_DIR's files.
# Returns after the run; the caller passes.
fuzz_target() {
	local bin=$TOP/build/fuzz/fuzz_$1
	[ -x "$bin" ] || skip "no libFuzzer build (clang with -fsanitize=fuzzer; make fuzz)"
	mkdir -p "$T/corpus"
	[ -d "$TOP/tests/fuzz/corpus/$1" ] && cp "$TOP/tests/fuzz/corpus/$1"/* "$T/corpus/"
	[ -n "${3:-}" ] && cp "$3"/* "$T/corpus/"
	fuzz_only "$bin" "$2" -rss_limit_mb=1024
}
