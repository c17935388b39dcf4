#!/usr/bin/env bash
# The daemon beyond loopback (as a DaemonSet pod, for the hub and Prometheus): listening on
# this host's own non-loopback address, so requests come from beyond loopback,
#  - /metrics and /healthz are open;
#  - the API (per-rank data), a capture request and the live view need the bearer token of
#    --token-file: none or a wrong one is 401, the right one 200;
#  - rankscope capture --server with --token-file sends the token;
#  - without --token-file those are refused (403), saying how to allow them;
#  - a token file others can read, or a short token, stops the daemon with a line naming the fix.
. "$(dirname "$0")/../lib.sh"
need_root
IP=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1)
[ -n "$IP" ] || skip "no non-loopback IPv4 address on this host"

code() {	# code URL [METHOD] [TOKEN]: the HTTP status
	$PY - "$@" <<'PY'
import sys, urllib.request, urllib.error
url, method = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "GET"
req = urllib.request.Request(url, method=method)
if len(sys.argv) > 3:
    req.add_header("Authorization", "Bearer " + sys.argv[3])
try:
    print(urllib.request.urlopen(req, timeout=5).status)
except urllib.error.HTTPError as e:
    print(e.code)
PY
}

TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
umask 077
echo "$TOKEN" >"$T/token"
umask 022

# refused token files
cp "$T/token" "$T/open-token" && chmod 644 "$T/open-token"
"$RS" daemon --listen "$IP:$(free_port)" --lock-file "$T/x.lock" --token-file "$T/open-token" \
	>"$T/bad.out" 2>&1
rc=$?
[ $rc = 2 ] || fail "a world-readable token file: exit $rc, not 2"
grep -q "chmod 600" "$T/bad.out" || fail "no fix named: $(cat "$T/bad.out")"
echo short >"$T/short" && chmod 600 "$T/short"
"$RS" daemon --listen "$IP:$(free_port)" --lock-file "$T/x.lock" --token-file "$T/short" \
	>"$T/bad.out" 2>&1 && fail "a short token was taken"
grep -q "printable characters" "$T/bad.out" || fail "short token: $(cat "$T/bad.out")"

# with a token
PORT=$(free_port)
URL=http://$IP:$PORT
bg rsd "$RS" daemon --listen "$IP:$PORT" --lock-file "$T/a.lock" --token-file "$T/token"
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 ||
	fail "the daemon did not start: $(tail -3 "$T/rsd.out")"
sleep 1.5	# the first publish
[ "$(code "$URL/metrics")" = 200 ] || fail "/metrics is not open"
[ "$(code "$URL/healthz")" = 200 ] || fail "/healthz is not open"
for path in /api/v1/ranks /api/v1/diagnosis "/api/v1/steps?last=1" /; do
	[ "$(code "$URL$path")" = 401 ] || fail "$path without a token: not 401"
	[ "$(code "$URL$path" GET "${TOKEN}x")" = 401 ] || fail "$path, a wrong token: not 401"
	[ "$(code "$URL$path" GET "${TOKEN:0:10}")" = 401 ] || fail "$path, a prefix: not 401"
	[ "$(code "$URL$path" GET "$TOKEN")" = 200 ] || fail "$path with the token: not 200"
done
[ "$(code "$URL/api/v1/capture?seconds=1" POST)" = 401 ] || fail "a capture without a token"
# rankscope capture --server from beyond loopback: refused without the token, done with it
"$RS" capture --server "$URL" --seconds 1 -o "$T/cap.json" >"$T/cap.out" 2>&1 &&
	fail "a remote capture without the token was taken"
grep -q "said 401" "$T/cap.out" || fail "no 401 from a capture without the token: $(cat "$T/cap.out")"
"$RS" capture --server "$URL" --seconds 1 -o "$T/cap.json" --token-file "$T/token" \
	>"$T/cap.out" 2>&1 || fail "a capture with the token failed: $(tail -2 "$T/cap.out")"
$PY -c 'import json, sys; json.load(open(sys.argv[1]))' "$T/cap.json" ||
	fail "the capture is not JSON"
kill "$PID_rsd"
wait_exit "$PID_rsd" 30 || fail "the daemon did not exit on SIGTERM"

# without one: the API is not served beyond loopback
PORT=$(free_port)
bg rsd2 "$RS" daemon --listen "$IP:$PORT" --lock-file "$T/b.lock"
wait_lines "$T/rsd2.out" 'watching for training processes' 1 30 ||
	fail "the daemon did not start: $(tail -3 "$T/rsd2.out")"
sleep 1.5
[ "$(code "http://$IP:$PORT/metrics")" = 200 ] || fail "/metrics without a token file"
[ "$(code "http://$IP:$PORT/api/v1/ranks")" = 403 ] || fail "the API beyond loopback, no token file"
[ "$(code "http://$IP:$PORT/api/v1/ranks" GET "$TOKEN")" = 403 ] ||
	fail "a token taken with no token file"
pass "beyond loopback: /metrics and /healthz open, the API and captures only with the bearer token; refused without --token-file; bad token files stop the daemon"
