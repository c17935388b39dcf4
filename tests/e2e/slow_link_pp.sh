#!/usr/bin/env bash
# One rank's link gets slower mid-run in a pipeline: a real 4-rank OpenMPI job
# (tests/workloads/zoo_mpi --pp 4: 2 stages, 2 replicas, GPipe, 4 micro-batches of 256 KiB
# MPI_Send/MPI_Recv, then each stage's all-reduce among its replicas) over the TCP transport.
# Ranks 0, 1 and 3 run in network namespace A, rank 2 in B, joined by a veth pair: rank 2's
# sends to its next stage (rank 3) and its all-reduce with its replica (rank 0) cross it. After
# ~15 s the veth is throttled (tbf) at both ends. No rank computes more; the step grows from
# transfers alone, and only where rank 2 is one end.
#  - before the throttle: never communication;
#  - after it: communication, on no rank, from the change, within 40 s. rankscope measures a
#    pipeline's transfers as the time both ends of a send and its receive were inside them, and
#    the replicas' all-reduce once all came; the slowest rank holds the step. Before that a
#    pipeline's transfer was read at its first call (a receive waiting for the previous stage),
#    and this job read no verdict or a compute blame on rank 3;
#  - the workload's own clock agrees: rank 2's time in MPI calls rises by most of the step's
#    rise, and no rank's compute rises by half of it.
# OpenMPI's launcher (PMIx) listens on loopback in A only: rank 2 reaches it through a TCP
# forwarder on A's veth address, started by rank 2's wrapper before it enters B.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
command -v tc >/dev/null || skip "iproute2 (tc) not installed"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
test_netns a b

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
# rank 2 runs in namespace B; the others stay in A, where mpirun is
[ "\$OMPI_COMM_WORLD_RANK" = 2 ] || exec "\$@"
port=\$(printenv PMIX_SERVER_URI4 | sed 's/.*://')
$PY "$T/fwd.py" $ADDR_a "\$port" 127.0.0.1 "\$port" &
for v in \$(env | grep '^PMIX_SERVER_URI' | cut -d= -f1); do
	export "\$v=\$(printenv "\$v" | sed 's/127\.0\.0\.1/$ADDR_a/g')"
done
sleep 0.5
exec ip netns exec $NS_b "\$@"
EOF
chmod +x "$T/wrap.sh"

bg job ip netns exec "$NS_a" mpirun --allow-run-as-root --oversubscribe --mca btl self,tcp \
	--mca btl_tcp_if_include rsn0 --mca oob_tcp_if_include rsn0 -np 4 "$T/wrap.sh" \
	"$TOP/build/workloads/zoo_mpi" --pp 4 --act-bytes 262144 --steps 100000 \
	--go-file "$T/go" --data-dir "$T/data"
wait_lines "$T/job.out" '^ready rank=' 4 60 || fail "the MPI job did not start: $(tail -3 "$T/job.out")"
bg rs "$RS" diagnose -p "$(ready_pids "$T/job.out")" --json
wait_lines "$T/rs.out" '"type":"rank"' 4 30 || fail "rankscope did not attach"
touch "$T/go"
sleep 15
t_throttle=$($PY -c 'import time; print(time.monotonic_ns())')
for ns in "$NS_a" "$NS_b"; do
	ip netns exec "$ns" tc qdisc add dev rsn0 root tbf rate 400mbit burst 32kb latency 400ms ||
		fail "cannot throttle rsn0 in $ns with tbf"
done
wait_lines "$T/rs.out" '"class":"communication"' 1 40 ||
	fail "no communication verdict after the throttle: $(grep '"verdict"' "$T/rs.out" |
		tail -2 | cut -c1-300)"
sleep 3		# throttled steps for the workload's own measure
kill -TERM "$PID_rs"
wait_exit "$PID_rs" 30 >/dev/null
kill -TERM -- "-$PID_job"
wait_exit "$PID_job" 30 >/dev/null
$PY - "$T" "$t_throttle" <<'PY' || exit 1
import json, statistics, sys
t, at = sys.argv[1], int(sys.argv[2])
def lines(name, ty):
    out = []
    for l in open(f"{t}/{name}"):
        try:    # mpirun forwards 4 ranks' output: killed, their last lines can run together
            out += [json.loads(l)] if l.startswith('{"type":"%s"' % ty) else []
        except ValueError:
            pass
    return out
truth = [x for x in lines("job.out", "truth") if x["step"] >= 10]
before = [x for x in truth if x["start_ns"] + x["step_ns"] < at]
after = [x for x in truth if x["start_ns"] > at + 1_000_000_000]
assert len(before) >= 200 and len(after) >= 40, (len(before), len(after))
med = lambda xs, k, r=None: statistics.median(x[k] for x in xs if r is None or x["rank"] == r)
rise = med(after, "step_ns") - med(before, "step_ns")
comm2 = med(after, "comm_ns", 2) - med(before, "comm_ns", 2)
print(f"workload: step {med(before, 'step_ns') / 1e6:.1f} -> {med(after, 'step_ns') / 1e6:.1f} ms; "
      f"rank 2 in MPI calls +{comm2 / 1e6:.1f} ms; compute by rank " +
      ", ".join(f"{med(before, 'compute_ns', r) / 1e6:.2f} -> {med(after, 'compute_ns', r) / 1e6:.2f}"
                for r in range(4)))
assert rise > 5e6 and comm2 > rise / 2, "the throttle did not slow the job by its transfers"
# the busy loops of the ranks at the shaped veth's ends run longer too (the softirqs of its
# transfers on the same 2 vCPUs), but the transfers are most of the rise
up = [med(after, "compute_ns", r) - med(before, "compute_ns", r) for r in range(4)]
assert max(up) < rise / 2, up
v = lines("rs.out", "verdict")
early = [x for x in v if x["class"] == "communication" and x["t_ns"] < at]
assert not early, f"communication before the throttle: {early[0]['evidence']['detail']}"
comm = [x for x in v if x["class"] == "communication"]
d = comm[0]["evidence"]["detail"]
assert comm[0]["rank"] == -1 and "more than in steps" in d, (comm[0]["rank"], d)
print(f"rankscope, {(comm[0]['t_ns'] - at) / 1e9:.1f} s after the throttle: {d}")
PY
pass "a pipeline rank's link throttled mid-run is communication, from the change"
