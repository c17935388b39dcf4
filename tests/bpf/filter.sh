#!/usr/bin/env bash
# Root: the tgid filter every global hook asks first (rs_tgid_bits) is exact where it says
# "not ours": a tracked rank's bit is set, an untracked process's is clear and none of its
# syscalls is recorded, a forked worker's bit is set by the fork program and cleared at its
# exit, and a detached rank's bit is cleared by user space.
. "$(dirname "$0")/../lib.sh"
need_root
head -c 4M /dev/urandom >"$T/data"
READS=50
for n in a b c; do
	case $n in
	a) env=(RANK=0 WORLD_SIZE=2) ;;
	b) env=(RANK=1 WORLD_SIZE=2) ;;
	c) env=() ;;		# the process nobody tracks, doing the same reads
	esac
	bg "$n" env "${env[@]}" "$FIX/fork_reader" --go-file "$T/go_$n" --read-file "$T/data" --reads $READS
	wait_lines "$T/$n.out" '^ready rank=' 1 20 || fail "fixture $n did not start"
done
A=$(ready_pids "$T/a.out") B=$(ready_pids "$T/b.out") C=$(ready_pids "$T/c.out")
rs_attach rs -p "$A,$B" --json --events --io-min-us 0

# bits PID...: "PID:BIT" for each, read from the kernel's copy of rs_tgid_bits
bits() {
	local p out=""
	for p in "$@"; do
		out+="$p:$(bpftool -j map lookup name rs_tgid_bits key $($PY -c '
import sys; w = int(sys.argv[1]) >> 6
print(" ".join(str(b) for b in w.to_bytes(4, "little")))' "$p") | $PY -c '
import json, sys
v = json.load(sys.stdin)["value"]
word = int.from_bytes(bytes(int(b, 16) for b in v), "little")
print((word >> (int(sys.argv[1]) & 63)) & 1)' "$p") "
	done
	echo "$out"
}
got=$(bits "$A" "$B" "$C")
[ "$got" = "$A:1 $B:1 $C:0 " ] || fail "bits while attached: '$got', want $A:1 $B:1 $C:0"

touch "$T/go_a" "$T/go_c"
wait_exit "$PID_a" 30 || fail "fixture a failed"
wait_exit "$PID_c" 30 || fail "fixture c failed"
wait_lines "$T/rs.out" "\"type\":\"exit\".*\"tgid\":$A" 1 20 || fail "no exit record of rank 0"
sleep 0.5	# the loop handles the rank's exit after the record
AC=$(sed -n 's/.*child_pid=\([0-9]*\).*/\1/p' "$T/a.out")
CC=$(sed -n 's/.*child_pid=\([0-9]*\).*/\1/p' "$T/c.out")
[ -n "$AC" ] && [ -n "$CC" ] || fail "no child pids in the fixtures' output"
got=$(bits "$A" "$AC" "$B" "$CC")
[ "$got" = "$A:0 $AC:0 $B:1 $CC:0 " ] ||
	fail "bits after rank 0 and its worker exited: '$got', want $A:0 $AC:0 $B:1 $CC:0"

touch "$T/go_b"
wait_exit "$PID_b" 30 || fail "fixture b failed"
wait_exit "$PID_rs" 60 || fail "rankscope did not exit"
BC=$(sed -n 's/.*child_pid=\([0-9]*\).*/\1/p' "$T/b.out")
$PY - "$T/rs.out" $READS "$A,$AC,$B,$BC" "$C,$CC" <<'PY' || exit 1
import json, sys
reads = int(sys.argv[2])
ours = [int(x) for x in sys.argv[3].split(",")]
theirs = {int(x) for x in sys.argv[4].split(",")}
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
stray = [d for d in lines if d.get('tgid') in theirs]
assert not stray, f"records of the untracked process: {stray[:3]}"
for child, rank in ((ours[1], 0), (ours[3], 1)):
    n = sum(1 for d in lines if d['type'] == 'io' and d['tgid'] == child and d['syscall'] == 'pread64')
    assert n == reads, f"rank {rank}'s worker {child}: {n} pread64 records, want {reads}"
PY
pass "bits exact for ranks, forked workers, exits and an untracked process; its reads unrecorded"
