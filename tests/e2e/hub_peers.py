#!/usr/bin/env python3
"""hub_peers.py - stand-ins for node daemons, good and bad, for tests/e2e/hub_bad_peers.sh.

A test double: real daemons cannot be made to misbehave on purpose. Serves, each on its own
port of 127.0.0.1 (printed as "PORT kind N" lines, then "ready"):

  good (2 of them): a job "good" of 4 ranks, 2 per node, making a step every 50 ms whose
      lengths jitter; rank 3 computes 8 ms more. Answers /api/v1/ranks, /api/v1/steps?since=
      and /api/v1/diagnosis as a daemon does. The second one's clock is a day ahead.
  dup: claims rank 3 of job "good" too (a duplicate (job, rank)).
  garbage: 200 with an HTML page.
  huge: 200 announcing 100 MiB.
  endless: 200 without a length, then 20 MiB of "[" until the hub hangs up.
  slow: 200, headers, then one byte a second.
  token: 401, as a daemon with --token-file answers a wrong token.
"""

import json
import random
import re
import socket
import sys
import threading
import time

STEP_S = 0.05


class Good:
    def __init__(self, node, t0):
        self.node, self.t0 = node, t0
        self.rnd = random.Random(node)

    def lines(self):
        n = int((time.monotonic() - self.t0) / STEP_S)
        rnd = random.Random(11)
        out, clock = [], 10**15
        for g in range(n):
            base = int(20e6 * (1 + rnd.uniform(-0.1, 0.1)))
            works = [base + (8_000_000 if r == 3 else 0) for r in range(4)]
            dur = max(works) + 500_000
            for r in (2 * self.node, 2 * self.node + 1):
                out.append(json.dumps({
                    "type": "step", "job": "good", "rank": r, "pid": 100 + r, "step": g + 1,
                    "start_ns": clock + self.node * 86400 * 10**9, "dur_ns": dur,
                    "phases": {"compute": works[r], "comm": dur - works[r]}}))
            clock += dur
        return out

    def answer(self, path):
        if path == "/api/v1/ranks":
            return json.dumps([{"type": "rank", "job": "good", "rank": r, "pid": 100 + r,
                                "world_size": 4} for r in (2 * self.node, 2 * self.node + 1)])
        if path == "/api/v1/diagnosis":
            return "[]"
        m = re.match(r"/api/v1/steps\?since=(\d+)", path)
        if m:
            lines = self.lines()
            since = int(m[1])
            return '{"cursor":%d,"lost":0,"more":false,"steps":[%s]}' % (
                len(lines), ",".join(lines[since:]))
        return None


def http(conn, status, body, extra=b""):
    conn.sendall(b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                 b"Connection: close\r\n%s\r\n" % (status, len(body), extra) + body)


def handle(kind, obj, conn):
    try:
        conn.settimeout(30)
        req = b""
        while b"\r\n\r\n" not in req:
            chunk = conn.recv(4096)
            if not chunk:
                return
            req += chunk
        path = req.split(b" ", 2)[1].decode()
        if kind == "good":
            body = obj.answer(path)
            http(conn, b"200 OK" if body is not None else b"404 Not Found",
                 (body or "").encode())
        elif kind == "dup":
            if path == "/api/v1/ranks":
                http(conn, b"200 OK", b'[{"type":"rank","job":"good","rank":3,"pid":7,'
                                      b'"world_size":4}]')
            elif path.startswith("/api/v1/steps"):
                http(conn, b"200 OK", b'{"cursor":0,"lost":0,"more":false,"steps":[]}')
            else:
                http(conn, b"200 OK", b"[]")
        elif kind == "garbage":
            http(conn, b"200 OK", b"<html><body>502 Bad Gateway</body></html>")
        elif kind == "huge":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 104857600\r\n\r\n[")
        elif kind == "endless":
            conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
            for _ in range(20 * 16):
                conn.sendall(b"[" * 65536)
        elif kind == "slow":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
            for _ in range(100):
                conn.sendall(b" ")
                time.sleep(1)
        elif kind == "token":
            http(conn, b"401 Unauthorized", b"unauthorized: a bearer token is needed\n",
                 b'WWW-Authenticate: Bearer realm="rankscope"\r\n')
    except OSError:
        pass
    finally:
        conn.close()


def serve(kind, obj):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)

    def loop():
        while True:
            c, _ = s.accept()
            threading.Thread(target=handle, args=(kind, obj, c), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
    return s.getsockname()[1]


def main():
    t0 = time.monotonic()
    peers = [("good", Good(0, t0)), ("good", Good(1, t0)), ("dup", None), ("garbage", None),
             ("huge", None), ("endless", None), ("slow", None), ("token", None)]
    for i, (kind, obj) in enumerate(peers):
        print(serve(kind, obj), kind, i, flush=True)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
