#!/usr/bin/env bash
# --api-listen, as the DaemonSet runs it: --listen 0.0.0.0:P for Prometheus and the kubelet's
# probes, the API on loopback only (--api-listen 127.0.0.1:Q), no token:
#  - on P, from this host's non-loopback address and from loopback alike, /metrics and
#    /healthz answer 200 and the API, the live view and POST /api/v1/capture answer 403;
#    the start line says P serves /metrics and /healthz, not the API;
#  - on Q the API answers, and rankscope capture --server records through it;
#  - without --api-listen the daemon warns that the API is served nowhere;
#  - with --token-file, P serves the API to a client with the token (the hub's path);
#  - an --api-listen that is not loopback without a token, on --listen's port, not an address,
#    or without --listen stops the daemon (exit 2) with a line naming the fix.
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

refused() {	# refused REGEX ARGS...: exit 2 and a line matching REGEX
	"$RS" "${@:2}" >"$T/bad.out" 2>&1
	local rc=$?
	[ $rc = 2 ] || fail "rankscope ${*:2}: exit $rc, not 2: $(cat "$T/bad.out")"
	grep -qE "$1" "$T/bad.out" || fail "rankscope ${*:2}: no fix named: $(cat "$T/bad.out")"
	[ "$(wc -l <"$T/bad.out")" = 1 ] || fail "rankscope ${*:2}: not one line: $(cat "$T/bad.out")"
}

P=$(free_port)
Q=$(free_port)
[ "$P" != "$Q" ] || Q=$(free_port)
refused 'not a loopback address.*--token-file.*127\.0\.0\.1' daemon --listen "0.0.0.0:$P" \
	--api-listen "0.0.0.0:$Q" --lock-file "$T/x.lock"
refused 'not a loopback address.*--token-file' daemon --listen "127.0.0.1:$P" \
	--api-listen "$IP:$Q" --lock-file "$T/x.lock"
refused 'same port as --listen' daemon --listen "0.0.0.0:$P" --api-listen "127.0.0.1:$P" \
	--lock-file "$T/x.lock"
refused 'invalid --api-listen .*HOST:PORT' daemon --listen "0.0.0.0:$P" --api-listen nonsense \
	--lock-file "$T/x.lock"
refused 'give --listen' attach -p $$ --api-listen "127.0.0.1:$Q"
refused 'option of rankscope daemon and attach' capture --server "http://127.0.0.1:$Q" \
	--api-listen "127.0.0.1:$Q" -o "$T/c.json"

# the DaemonSet's way: metrics on every address, the API on loopback
bg rsd "$RS" daemon --listen "0.0.0.0:$P" --api-listen "127.0.0.1:$Q" --lock-file "$T/a.lock"
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 ||
	fail "the daemon did not start: $(tail -3 "$T/rsd.out")"
grep -q "serving the API on http://127.0.0.1:$Q (--api-listen)" "$T/rsd.out" ||
	fail "no line says where the API is: $(cat "$T/rsd.out")"
grep -q "0.0.0.0:$P serves /metrics and /healthz only" "$T/rsd.out" ||
	fail "no line says what --listen serves: $(cat "$T/rsd.out")"
grep -q "serving /metrics and /healthz on http://0.0.0.0:$P\$" "$T/rsd.out" ||
	fail "the start line claims the API on --listen: $(cat "$T/rsd.out")"
sleep 1.5	# the first publish
for base in "http://$IP:$P" "http://127.0.0.1:$P"; do
	[ "$(code "$base/metrics")" = 200 ] || fail "$base/metrics is not 200"
	[ "$(code "$base/healthz")" = 200 ] || fail "$base/healthz is not 200"
	for path in /api/v1/ranks /api/v1/diagnosis "/api/v1/steps?last=1" /api/v1/stacks /; do
		[ "$(code "$base$path")" = 403 ] || fail "$base$path: not 403"
	done
	[ "$(code "$base/api/v1/capture?seconds=1" POST)" = 403 ] || fail "$base: a capture taken"
done
"$RS" capture --server "http://127.0.0.1:$P" --seconds 1 -o "$T/no.json" >"$T/cap.out" 2>&1 &&
	fail "a capture through --listen was taken"
grep -q "403" "$T/cap.out" || fail "a capture through --listen: $(cat "$T/cap.out")"
A=http://127.0.0.1:$Q
for path in /api/v1/ranks /api/v1/diagnosis "/api/v1/steps?last=1" / /metrics /healthz; do
	[ "$(code "$A$path")" = 200 ] || fail "$A$path (--api-listen): not 200"
done
"$RS" capture --server "$A" --seconds 1 -o "$T/cap.json" >"$T/cap.out" 2>&1 ||
	fail "a capture through --api-listen failed: $(tail -2 "$T/cap.out")"
$PY -c 'import json, sys; json.load(open(sys.argv[1]))' "$T/cap.json" ||
	fail "the capture is not JSON"
kill "$PID_rsd"
wait_exit "$PID_rsd" 30 || fail "the daemon did not exit on SIGTERM"

# no --api-listen: the daemon says the API is nowhere, and how to serve it
P=$(free_port)
bg rsd2 "$RS" daemon --listen "0.0.0.0:$P" --lock-file "$T/b.lock"
wait_lines "$T/rsd2.out" 'watching for training processes' 1 30 ||
	fail "the daemon did not start: $(tail -3 "$T/rsd2.out")"
grep -q "the API is served nowhere.*--api-listen 127.0.0.1:PORT" "$T/rsd2.out" ||
	fail "no warning that the API is served nowhere: $(cat "$T/rsd2.out")"
sleep 1.5
[ "$(code "http://127.0.0.1:$P/api/v1/ranks")" = 403 ] || fail "the API on 0.0.0.0 from loopback"
kill "$PID_rsd2"
wait_exit "$PID_rsd2" 30 || fail "the daemon did not exit on SIGTERM"

# with a token (the token/ component): the hub's requests on --listen, the API on loopback too
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
(umask 077 && echo "$TOKEN" >"$T/token")
P=$(free_port)
Q=$(free_port)
bg rsd3 "$RS" daemon --listen "0.0.0.0:$P" --api-listen "127.0.0.1:$Q" --token-file "$T/token" \
	--lock-file "$T/c.lock"
wait_lines "$T/rsd3.out" 'watching for training processes' 1 30 ||
	fail "the daemon did not start: $(tail -3 "$T/rsd3.out")"
sleep 1.5
[ "$(code "http://$IP:$P/api/v1/ranks")" = 401 ] || fail "the API beyond loopback without the token"
[ "$(code "http://$IP:$P/api/v1/ranks" GET "$TOKEN")" = 200 ] ||
	fail "the API beyond loopback with the token (the hub's path)"
[ "$(code "http://127.0.0.1:$Q/api/v1/ranks")" = 200 ] || fail "--api-listen with a token file"
kill "$PID_rsd3"
wait_exit "$PID_rsd3" 30 || fail "the daemon did not exit on SIGTERM"
pass "--listen 0.0.0.0 without a token: /metrics and /healthz only (403 for the API, from loopback too); the API and captures on --api-listen; with a token the hub's path still works; bad --api-listen refused with the fix"
