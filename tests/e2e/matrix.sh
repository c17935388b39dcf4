#!/usr/bin/env bash
# The accuracy matrix's representative subset (make bench runs all of it): real OpenMPI and
# PyTorch DDP (gloo) jobs from tests/workloads/, each with one fault on one rank that
# rankscope is not told about, attached before the job starts or while it runs. Each cell's
# verdict must name the fault's class and rank within 10 steps, its phases must match the
# workload's own clock (10% of the phase or 5% of the step), and healthy runs of 300 steps
# must get no verdict at all. Structures: 3 and 25 equal buckets, FSDP's all-gathers and
# reduce-scatters, tensor parallel groups; faults: extra compute, a sleep, input through a
# slow pipe, a CPU quota; DDP attached mid-run with its loader worker starved by a quota.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
ls /sys/fs/cgroup/cpu/cpu.cfs_quota_us >/dev/null 2>&1 || grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null ||
	skip "no cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2 cpu.max): the quota cells cannot run"
# a cell that loses to the VM's noise (a vCPU taken by the host for a few steps) runs again
# once; its first result is in the log
$PY "$TOP/tests/workloads/matrix.py" --subset check --out "$T/matrix" --json "$T/m1.json"
rc=$?
[ $rc -eq 77 ] && skip "the matrix could not run a cell here"
if [ $rc -ne 0 ]; then
	again=$($PY - "$T/m1.json" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[0])
r = json.load(open(sys.argv[1]))
bad = [x["name"] for x in r if not (x["right"] and (not isinstance(x.get("detect"), int) or
       x["detect"] <= 10) and x["phase_ok"] is not False)]
print("|".join("^" + b.replace("/", "/") + "$" for b in bad))
PY
)
	echo "again: $again"
	[ -n "$again" ] || fail "the matrix failed"
	$PY "$TOP/tests/workloads/matrix.py" --subset check --only "$again" --out "$T/matrix2" ||
		fail "accuracy matrix: wrong twice: $again"
fi
pass "accuracy matrix subset: right verdicts, within 10 steps, phases within 10%"
