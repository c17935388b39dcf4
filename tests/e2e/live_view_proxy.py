#!/usr/bin/env python3
"""Serve user/serve/view.html at / and the daemon's API behind it, same-origin, for live_view.sh.

  live_view_proxy.py PORT PAGE UPSTREAM   UPSTREAM is the daemon's HOST:PORT: /api/v1/*,
                                          /metrics and /healthz are passed to it (GET, HEAD, POST)
  live_view_proxy.py PORT PAGE --hostile  no daemon: answers built from hostile strings, to
                                          check that the page inserts API text as text only
  live_view_proxy.py --evil-job           print the hostile job id

Prints "proxy listening on 127.0.0.1:PORT" once it accepts connections.
"""
import http.server
import json
import sys
import urllib.error
import urllib.request

# Markup, attribute breakers and script in every string the API can carry.
EVIL = '"><img src=x onerror="window.pwned=1"><script>window.pwned=2</script>\'&amp;'
EVIL_JOB = "job" + EVIL
if sys.argv[1] == "--evil-job":     # for the test's checks
    print(EVIL_JOB)
    sys.exit(0)
PORT, PAGE, UPSTREAM = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def hostile(path):
    ranks = [{"type": "rank", "rank": r, "pid": 100 + r, "job": EVIL_JOB, "comm": "<b>c" + EVIL,
              "gpu": {"state": EVIL, "detail": EVIL}} for r in (0, 1)]
    steps = []
    for k in range(120, 0, -1):
        for r in (1, 0):
            d = 5_000_000 if r == 1 else 1_200_000
            steps.append({"type": "step", "job": EVIL_JOB, "rank": r, "pid": 100 + r, "step": k,
                          "start_ns": k * 6_000_000, "dur_ns": d + k * 1000, "rule": EVIL,
                          "phases": {"compute": d - 200_000, "sched_delay": 0, "comm": 200_000 + k * 1000,
                                     "comm_wait": 150_000, "comm_transfer": 50_000 + k * 1000,
                                     "gpu_wait": 0, "io": 0, "input_wait": 0, "other": 0}})
    diag = [{"type": "verdict", "job": EVIL_JOB, "class": "compute", "rank": 1, "pid": 101,
             "persistent": True, "skew_ns": 3_800_000, "phase": "compute" + EVIL,
             "phase_excess_ns": 3_800_000, "evidence": {"late_phase_ns": 4_800_000,
             "peer_median_phase_ns": 1_000_000, "median_step_ns": 5_000_000, "steps": 8,
             "detail": EVIL}, "experiment": EVIL},
            {"type": "verdict", "job": "other" + EVIL, "class": "none", "detail": EVIL}]
    if path == "/api/v1/ranks":
        return 200, ranks
    if path == "/api/v1/steps":
        return 200, steps
    if path == "/api/v1/diagnosis":
        return 200, diag
    if path == "/api/v1/stacks":
        return 200, [{"type": "stack_classes", "job": EVIL_JOB, "classes": [
            {"ranks": [0], "main_stack": "_start;main;" + EVIL, "stack": EVIL, "outlier": False},
            {"ranks": [1, "x" + EVIL], "main_stack": EVIL + ";" + EVIL, "stack": "",
             "outlier": True}]}]
    if path == "/api/v1/jobs":
        return 200, [{"type": "job", "job": EVIL_JOB, "state": EVIL, "recoveries": 1,
                      "failures": {"signal": 1, EVIL: 2},
                      "last_failure": {"reason": EVIL, "detail": EVIL, "lost_steps": EVIL},
                      "last_recovery": {"seconds": 2.5, "in_place": EVIL},
                      "timeline": [{"t": 1e9, "event": "started", "detail": EVIL},
                                   {"t": 1e9 + 10, "event": "failed", "detail": EVIL},
                                   {"t": 1e9 + 12, "event": EVIL, "detail": EVIL},
                                   {"t": EVIL, "event": "recovered", "detail": EVIL},
                                   {"t": 1e9 + 14, "event": "recovered", "detail": EVIL}]}]
    if path == "/api/v1/capture":
        return 202, {"id": "../" + EVIL, "seconds": 10}
    return 404, None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *args):
        sys.stderr.write("proxy: " + fmt % args + "\n")

    def send(self, code, ctype, body):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def forward(self):
        path = self.path.split("?")[0]
        if path in ("/", "/index.html"):
            with open(PAGE, "rb") as f:
                return self.send(200, "text/html; charset=utf-8", f.read())
        if not (path.startswith("/api/v1/") or path in ("/metrics", "/healthz")):
            return self.send(404, "text/plain", b"not found: the proxy serves /, /api/v1/*, /metrics\n")
        if UPSTREAM == "--hostile":
            code, obj = hostile(path)
            return self.send(code, "application/json", json.dumps(obj).encode())
        n = int(self.headers.get("Content-Length") or 0)
        req = urllib.request.Request("http://" + UPSTREAM + self.path, method=self.command,
                                     data=self.rfile.read(n) if self.command == "POST" else None)
        try:
            r = urllib.request.urlopen(req, timeout=10)
            code, ctype, body = r.status, r.headers.get("Content-Type", "text/plain"), r.read()
        except urllib.error.HTTPError as e:
            code, ctype, body = e.code, e.headers.get("Content-Type", "text/plain"), e.read()
        except OSError as e:
            code, ctype, body = 502, "text/plain", f"proxy: daemon unreachable: {e}\n".encode()
        self.send(code, ctype, body)

    do_GET = do_HEAD = do_POST = forward


srv = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
print(f"proxy listening on 127.0.0.1:{PORT}", flush=True)
srv.serve_forever()
