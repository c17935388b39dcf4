#!/usr/bin/env bash
# --all finds the ranks of a real OpenMPI job by itself: the 4 rank processes, not mpirun.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
bg job mpirun --allow-run-as-root --oversubscribe -np 4 "$FIX/mpi_loop" --go-file "$T/go" --iters 10
wait_lines "$T/job.out" '^ready rank=' 4 60 || fail "MPI job did not start"
"$RS" attach --all --json --duration 1 >"$T/rs.out" 2>"$T/rs.err" || fail "attach --all failed: $(cat "$T/rs.err")"
touch "$T/go"
$PY - "$T/job.out" "$T/rs.out" <<'PY' || exit 1
import json, re, sys
want = {int(p): int(r) for r, p in re.findall(r'^ready rank=(\d+) pid=(\d+)', open(sys.argv[1]).read(), re.M)}
got = {d['pid']: d for d in map(json.loads, open(sys.argv[2])) if d['type'] == 'rank'}
# other jobs on the host may be found too; ours must all be there, with their ranks
mine = {p: got[p]['rank'] for p in want if p in got}
assert mine == want, f"--all found {mine} of the job's ranks {want}"
assert not [d for d in got.values() if d['comm'] in ('mpirun', 'orterun')], "took the launcher as a rank"
PY
pass "--all found exactly the 4 MPI ranks"
