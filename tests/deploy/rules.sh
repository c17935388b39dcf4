#!/usr/bin/env bash
# The Prometheus rules in deploy/prometheus: promtool checks rules.yaml and runs the unit
# tests of rules_test.yaml (every alert both firing and not firing, and the recording rules'
# values); yamllint lints deploy/ with deploy/.yamllint, when yamllint is installed.
# Exit codes: 0 pass, 1 fail, 77 skipped (the last "SKIP: reason" line says why).
set -u
cd "$(dirname "$0")/../.." || exit 1

if ! command -v promtool >/dev/null 2>&1; then
	echo "SKIP: promtool is not installed (apt-get install prometheus)"
	exit 77
fi
promtool --version 2>&1 | head -1

rc=0
echo "== promtool check rules deploy/prometheus/rules.yaml"
promtool check rules deploy/prometheus/rules.yaml || rc=1
echo "== promtool test rules deploy/prometheus/rules_test.yaml"
promtool test rules deploy/prometheus/rules_test.yaml || rc=1

if command -v yamllint >/dev/null 2>&1; then
	echo "== yamllint -c deploy/.yamllint --strict deploy/"
	yamllint -c deploy/.yamllint --strict deploy/ && echo "  SUCCESS" || rc=1
else
	echo "note: yamllint is not installed (apt-get install yamllint): lint not run"
fi

if [ "$rc" -ne 0 ]; then
	echo "FAIL: deploy/prometheus rules"
	exit 1
fi
echo "PASS: rules check, rule unit tests$(command -v yamllint >/dev/null 2>&1 && echo ', yamllint')"
