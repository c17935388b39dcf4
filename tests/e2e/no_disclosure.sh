#!/usr/bin/env bash
# What the daemon serves never holds a rank's secrets: a real 2-rank OpenMPI job whose
# environment has a secret variable, whose command line holds a secret (in its go-file path)
# and which reads a file of secret bytes every iteration. Nothing the daemon serves holds any
# of them: /metrics, /api/v1/ranks, /api/v1/steps, /api/v1/diagnosis, /api/v1/stacks, a
# capture (Perfetto JSON, every string in it), nor what it prints. The job id, which comes from
# the environment by design (the README lists the variables read), is the one value of it
# that appears, and only that one. Clients that cut the capture's download short do not hurt
# the daemon.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
S_ENV=envsecret$RANDOM$RANDOM
S_ARG=argsecret$RANDOM$RANDOM
S_FILE=filesecret$RANDOM$RANDOM
S_JOB=job-id-$$
mkdir -p "$T/d-$S_ARG"
for i in $(seq 4096); do echo "$S_FILE"; done >"$T/data"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
bg rsd "$RS" daemon --listen 127.0.0.1:$PORT --lock-file "$T/lock" --json
wait_lines "$T/rsd.out" 'watching for training processes' 1 30 || fail "the daemon did not start"
bg job env RS_TEST_SECRET="$S_ENV" TORCHELASTIC_RUN_ID="$S_JOB" mpirun --allow-run-as-root \
	--oversubscribe -x RS_TEST_SECRET -x TORCHELASTIC_RUN_ID -np 2 "$FIX/mpi_loop" \
	--go-file "$T/d-$S_ARG/go" --iters 3000 --slow-rank 1 --slow-us 2000 --read-file "$T/data"
wait_lines "$T/job.out" '^ready rank=' 2 60 || fail "the MPI job did not start"
for p in $(ready_pids "$T/job.out" | tr , ' '); do
	tr '\0' '\n' <"/proc/$p/environ" | grep -q "^RS_TEST_SECRET=$S_ENV$" ||
		fail "rank $p does not carry the secret variable (the test would prove nothing)"
	wait_lines "$T/rsd.out" "attached to PID $p:" 1 20 || fail "the daemon did not attach to $p"
done
touch "$T/d-$S_ARG/go"
sleep 4
r=$(http_get "$URL/api/v1/capture?seconds=2" POST)
ID=$(echo "$r" | tail -n +2 | $PY -c 'import json, sys; print(json.load(sys.stdin)["id"])') ||
	fail "POST capture: $r"
for i in $(seq 60); do
	[ "$(http_get "$URL/api/v1/captures/$ID" | head -1)" = 200 ] && break
	sleep 0.5
done
# clients that go away in the middle of the capture's download (SIGPIPE on the server's
# side): the daemon carries on
$PY - "$PORT" "$ID" <<'PY' || fail "a cut download"
import socket, sys
for _ in range(5):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    s.sendall(f"GET /api/v1/captures/{sys.argv[2]} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    s.recv(64)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")  # RST
    s.close()
PY
[ "$(http_get "$URL/healthz" | head -1)" = 200 ] || fail "the daemon stopped answering after cut downloads"
kill -0 "$PID_rsd" || fail "the daemon died after cut downloads"
mkdir -p "$T/served"
for path in /metrics /api/v1/ranks /api/v1/steps?last=4096 /api/v1/diagnosis /api/v1/stacks \
	"/api/v1/captures/$ID"; do
	http_get "$URL$path" >"$T/served/$(echo "$path" | tr '/?=' '___')"
done
kill -STOP "$(ready_pids "$T/job.out" | cut -d, -f2)"	# a stuck job: /api/v1/stacks has stacks
sleep 8
http_get "$URL/api/v1/stacks" >"$T/served/stacks_stuck"
kill -CONT "$(ready_pids "$T/job.out" | cut -d, -f2)"
grep -q '"frames"\|"stack"' "$T/served/stacks_stuck" ||
	echo "note: /api/v1/stacks had no stack yet: $(head -c 200 "$T/served/stacks_stuck")"
grep -q "$S_JOB" "$T/served/_metrics" || fail "the job id did not reach /metrics (no job seen?)"
kill -TERM "$PID_job"
wait_exit "$PID_job" 30
kill -TERM "$PID_rsd"
wait_exit "$PID_rsd" 30
cp "$T/rsd.out" "$T/served/stdout"
for s in "$S_ENV" "$S_ARG" "$S_FILE"; do
	if grep -rl "$s" "$T/served"; then
		fail "a secret ($s) was served: $(grep -rho ".\{60\}$s.\{20\}" "$T/served" | head -3)"
	fi
done
# the capture's strings, decoded (escapes could hide a secret from grep)
$PY - "$T/served/_api_v1_captures_$ID" "$S_ENV" "$S_ARG" "$S_FILE" <<'PY' || exit 1
import gzip, json, sys
raw = open(sys.argv[1], "rb").read().split(b"\n", 1)[1]
if raw[:2] == b"\x1f\x8b":
    raw = gzip.decompress(raw)
doc = json.loads(raw)
def strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for k, v in x.items():
            yield k
            yield from strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from strings(v)
n = 0
for s in strings(doc):
    n += 1
    for secret in sys.argv[2:]:
        assert secret not in s, f"the capture holds a secret in {s[:80]!r}"
print(f"capture: {n} strings, no secret")
PY
pass "no environment value but the job id, no argument and no file content in anything served"
