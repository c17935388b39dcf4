#!/usr/bin/env bash
# What a straggler costs (issue 18), against the workload's own clock: real OpenMPI and PyTorch
# DDP (gloo) jobs, healthy and with a delay on a random rank, side by side. The wait charged to
# the late rank matches peers x its measured lateness (and the injected delay) within 10%, the
# what-if step the healthy run's within 10%, a healthy run charges no rank beyond its own
# lateness in the steps it led plus 2% of the rank-time, and /metrics (promtool) carries the
# wait, the dollars, the slowdown and the what-if steps.
# See straggler_cost.py.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
command -v promtool >/dev/null || skip "promtool not installed (make deps)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
RS_BIN="$RS" $PY "$TOP/tests/e2e/straggler_cost.py" "$T" || fail "straggler cost (above)"
pass "straggler cost: wait, what-if and healthy rank-time match the workloads' own clocks"
