#!/usr/bin/env bash
# The accuracy matrix's representative subset (make bench runs all of it): real OpenMPI and
# PyTorch DDP (gloo) jobs from tests/workloads/, each with one fault on one rank that
# rankscope is not told about, attached before the job starts or while it runs. Each cell's
# verdict must name the fault's class and rank within 10 steps, its phases must match the
# workload's own clock (MPI: 10% of the phase or 5% of the step; DDP: the step, and no more
# blocked input than the workload's input time), and healthy runs of 300 steps
# must get no verdict at all. Structures: 3 and 25 equal buckets, FSDP's all-gathers and
# reduce-scatters, tensor parallel groups; faults: extra compute, a sleep, input through a
# slow pipe, a CPU quota; MoE all-to-alls and FSDP that gathers again in its backward, each
# with a CPU quota on a rank busy-polling in its collectives; DDP attached mid-run with its
# loader worker starved by a quota.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
$PY -c 'import torch' 2>/dev/null || skip "python3-torch not installed (make deps): the DDP cells cannot run"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
# a cell that loses to the VM's noise (a vCPU taken by the host for a few steps) runs again
# once (--rerun); both results are in the log. Cells that need what is not here (a cgroup cpu
# controller, PyTorch) are listed as skipped by the matrix; 77 when none can run.
$PY "$TOP/tests/workloads/matrix.py" --subset check --rerun --out "$T/matrix"
rc=$?
[ $rc -eq 77 ] && skip "the matrix could not run a cell here (see its SKIP line)"
[ $rc -eq 0 ] || fail "accuracy matrix: a cell was wrong twice"
pass "accuracy matrix subset: right verdicts within 10 steps; MPI phases within 10%, DDP steps"
