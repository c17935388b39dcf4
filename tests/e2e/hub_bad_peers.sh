#!/usr/bin/env bash
# rankscope hub among bad peers (tests/e2e/hub_peers.py, stand-ins for node daemons: a real
# daemon cannot be made to misbehave). Two good peers serve a 4-rank job whose rank 3 computes
# 8 ms more a step; the others answer garbage, announce 100 MiB, stream 20 MiB without a
# length, trickle one byte a second, refuse the token, or claim a rank the good ones serve.
# The hub must name rank 3 all the same, count each bad peer with a reason that says what
# was wrong (/api/v1/nodes, /metrics), never take the duplicate rank, and stay up.
. "$(dirname "$0")/../lib.sh"
bg peers "$PY" "$TOP/tests/e2e/hub_peers.py"
wait_lines "$T/peers.out" '^ready' 1 20 || fail "the stand-in peers did not start"
PEERS=$(awk '$2 != "" && $1 ~ /^[0-9]+$/ { printf "%s127.0.0.1:%s", sep, $1; sep = "," }' "$T/peers.out")
port_of() { awk -v k="$1" -v n="${2:-0}" '$2 == k { if (i++ == n) print $1 }' "$T/peers.out"; }
PORT_h=$(free_port)
HUB=http://127.0.0.1:$PORT_h
bg hub "$RS" hub --peers "$PEERS" --listen 127.0.0.1:$PORT_h --interval 0.5 --timeout-ms 1000 --json
wait_lines "$T/hub.out" '"class":"compute","rank":3' 1 30 ||
	fail "no verdict on rank 3 among bad peers: $(grep -v '^{' "$T/hub.out" | tail -5)"
sleep 3
kill -0 "$PID_hub" 2>/dev/null || fail "the hub died: $(tail -5 "$T/hub.out")"
for doc in nodes ranks diagnosis; do
	http_get "$HUB/api/v1/$doc" >"$T/get" && [ "$(head -1 "$T/get")" = 200 ] ||
		fail "GET /api/v1/$doc: $(head -3 "$T/get")"
	tail -n +2 "$T/get" >"$T/$doc.json"
done
http_get "$HUB/metrics" | tail -n +2 >"$T/metrics.txt"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/metrics.txt" || fail "promtool check metrics"
fi
$PY - "$T" "$(port_of dup)" "$(port_of garbage)" "$(port_of huge)" "$(port_of endless)" \
	"$(port_of slow)" "$(port_of token)" "$(port_of good 1)" <<'PY' || exit 1
import json, sys
t = sys.argv[1]
dup, garbage, huge, endless, slow, token, good1 = sys.argv[2:]
nodes = {n["node"].rsplit(":", 1)[1]: n for n in json.load(open(f"{t}/nodes.json"))}
want = {
    garbage: ("JSON", True),            # "ranks: not a JSON array" or "steps: not JSON"
    huge: ("answer of 104857600 bytes, over", True),
    endless: ("answer over", True),
    slow: ("did not end within the timeout", False),
    token: ("HTTP 401 (a wrong or missing token", True),
}
for port, (why, bad) in want.items():
    n = nodes[port]
    print(f"{port}: up={n['up']} failed={n['failed_polls']} bad={n['bad_answers']} why={n['why']}")
    assert not n["up"] and n["failed_polls"] >= 3, n
    assert n["why"] and why in n["why"], (why, n)
    assert (n["bad_answers"] > 0) == bad, n
d = nodes[dup]
assert d["up"] and d["duplicate_ranks"] > 0, d
ranks = {r["rank"]: r["node"].rsplit(":", 1)[1] for r in json.load(open(f"{t}/ranks.json"))}
assert ranks[3] == good1, ranks     # the duplicate's claim was not taken
diag = [v for v in json.load(open(f"{t}/diagnosis.json")) if v["job"] == "good"]
assert diag and (diag[0]["class"], diag[0]["rank"], diag[0]["ranks_seen"]) == ("compute", 3, 4), diag
print("verdict:", diag[0]["class"], "on rank", diag[0]["rank"], "with", diag[0]["ranks_seen"], "ranks")
PY
grep -q '^rankscope_hub_bad_answers_total{node="127.0.0.1:'"$(port_of garbage)"'"} [1-9]' \
	"$T/metrics.txt" || fail "no bad-answer count for the garbage peer on /metrics"
n=$(grep -c "a bad answer" "$T/hub.out")
[ "$n" -le 8 ] || fail "bad answers were logged $n times: once a minute per node at most"
pass "hub among bad peers: straggler named, each bad peer counted with its reason, hub up"
