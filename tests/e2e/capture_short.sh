#!/usr/bin/env bash
# rankscope capture -p for 10 s on a job that ends after about 2 s: the file is written, the
# exit is 0, and one line says how long was recorded of what was asked, and why.
# TEST DOUBLE: NCCL collectives need a GPU (see e2e/nccl_double.sh).
. "$(dirname "$0")/../lib.sh"
need_root
[ -e "$FIX/double/libnccl.so.2" ] || skip "no NCCL double (no CUDA toolkit nccl.h)"
bg job "$FIX/nccl_ranks" --go-file "$T/go" --nranks 2 --iters 200 --sleep-us 10000
wait_lines "$T/job.out" '^ready rank=' 2 30 || fail "job did not start"
bg rs "$RS" capture -p "$(ready_pids "$T/job.out")" --seconds 10 -o "$T/c.json"
wait_lines "$T/rs.out" 'attached to 2 ranks' 1 30 || fail "no attach: $(cat "$T/rs.out")"
touch "$T/go"
wait_exit "$PID_rs" 60
rc=$?
[ $rc = 0 ] || fail "exit $rc (124: still running): $(tail -3 "$T/rs.out")"
line=$(grep -E 'capture [^ ]+: [0-9.]+ s recorded of the 10 s asked: every rank exited' "$T/rs.out") ||
	fail "no line on the short capture: $(cat "$T/rs.out")"
echo "$line"
s=$(echo "$line" | sed 's/.*: \([0-9.]*\) s recorded.*/\1/')
$PY -c "import sys; sys.exit(0 if 1.0 <= $s < 9.0 else 1)" || fail "recorded $s s for a job of about 2 s"
[ -s "$T/c.json" ] || fail "no file"
$PY -c 'import json, sys; json.load(open(sys.argv[1]))' "$T/c.json" || fail "the file is not JSON"
pass "a 10 s capture of a 2 s job: written, exit 0, and it says $s s were recorded, and why"
