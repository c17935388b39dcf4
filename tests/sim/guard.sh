#!/usr/bin/env bash
# The shape simulator in make check: its self-test (the truth and the scorer, no rankscope:
# phases sum to each step, a perfect answer scores right and a wrong one wrong), then 200
# fixed seeds replayed and scored against tests/sim/baseline.json. Fixed seeds only guard
# against regressions; generality is measured on fresh seeds (make bench, part 15).
# After a change that moves the scores up, write the baseline again:
#   tests/sim/run --seeds 0-199 --jobs 2 --write-baseline tests/sim/baseline.json
set -u
cd "$(dirname "$0")/../.." || exit 1
/usr/bin/python3 tests/sim/selftest.py || { echo "FAIL: the simulator's self-test"; exit 1; }
tests/sim/run --seeds 0-199 --jobs 2 --baseline tests/sim/baseline.json
