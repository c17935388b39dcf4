#!/usr/bin/env python3
"""Checks of the live view (user/serve/view.html) for live_view.sh; each exits 1 with the reason.

  page PAGE                    the page is self-contained, inserts no markup, stays small
  dom DUMP JOB NRANKS SLOW     a Chromium --dump-dom of a real straggler job: a phase bar and a
                               step-time line for every rank, the verdict names rank SLOW and
                               compute, the status line shows no fetch error
  stacks DUMP JOB SLOW         a dump of the same job stuck (rank SLOW stopped): its stack classes
                               shown, rank SLOW's the odd one out, the other in MPI_Allreduce
  hostile DUMP JOB             a dump over the proxy's hostile answers: no markup got in
  life DUMP STATES EVENTS TEXT a dump of a job the daemon saw fail (?job=ID): its lifecycle
                               band's segments are STATES (comma-separated: running, failed,
                               abandoned), its marks EVENTS (failed, recovered, abandoned), and
                               the text under it contains TEXT
  click CHROMIUM URL DIR       load URL in CHROMIUM over --remote-debugging-pipe, wait for the
                               bars, press "Capture 10 s" (twice); prints what the page showed
                               as JSON: [{"status": TEXT, "link": HREF|null}, ...] and pwned
"""
import fcntl
import html.parser
import json
import os
import re
import select
import subprocess
import sys
import time


def die(msg):
    print("check: " + msg)
    sys.exit(1)


class Dom(html.parser.HTMLParser):
    """Elements as (tag, attrs, text inside); html.parser unescapes text and attributes."""

    VOID = {"meta", "link", "br", "img", "input", "hr", "source", "wbr"}

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.els, self.open = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.handle_data(" ")   # <p>a</p><p>b</p> reads "a b"
        e = [tag, dict(attrs), ""]
        self.els.append(e)
        if tag not in self.VOID:
            self.open.append(e)

    def handle_startendtag(self, tag, attrs):
        self.els.append([tag, dict(attrs), ""])

    def handle_endtag(self, tag):
        while self.open:
            if self.open.pop()[0] == tag:
                break

    def handle_data(self, data):
        for e in self.open:
            e[2] += data

    def find(self, pred):
        return [e for e in self.els if pred(e[0], e[1])]

    def by_id(self, i):
        found = self.find(lambda t, a: a.get("id") == i)
        if not found:
            die(f"no element id={i}")
        return found[0]


def classes(a):
    return (a.get("class") or "").split()


def check_page(path):
    src = open(path, encoding="utf-8").read()
    n = src.count("\n")
    if n >= 600:
        die(f"{path}: {n} lines, keep it under 600")
    # no fetch leaves the origin: the SVG namespace is a name, not a load
    for m in re.finditer(r"(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s\"'<>)]*", src):
        if m.group(0) != "http://www.w3.org/2000/svg":
            die(f"{path}: external reference {m.group(0)!r}")
    for bad in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                "new Function", "@import", "<iframe", "<link rel=\"stylesheet"):
        if bad in src:
            die(f"{path}: uses {bad}")
    if len(re.findall(r"<script\b", src)) != 1 or re.search(r"<script[^>]*\bsrc=", src):
        die(f"{path}: expected one inline script")
    print(f"page: {n} lines, self-contained, no markup insertion")


def check_dom(dump, job, nranks, slow):
    d = Dom(open(dump, encoding="utf-8").read())
    bars = d.find(lambda t, a: "rank-bar" in classes(a) and a.get("data-job") == job)
    got = {}
    for _, a, _ in bars:
        got[int(a["data-rank"])] = int(float(a.get("data-dur-ns") or 0))
    want = set(range(nranks))
    if set(got) != want:
        die(f"bars for ranks {sorted(got)} of job {job}, want {sorted(want)}")
    if not all(got.values()):
        die(f"a rank's bar has no step: {got}")
    segs = d.find(lambda t, a: t == "rect" and a.get("data-phase"))
    if len(segs) < nranks:
        die(f"{len(segs)} phase segments for {nranks} ranks")
    lines = {int(a["data-rank"]) for _, a, _ in d.find(lambda t, a: "rank-line" in classes(a))}
    if lines != want:
        die(f"step-time lines for ranks {sorted(lines)}, want {sorted(want)}")
    v = " ".join(d.by_id("verdict")[2].split())
    if not re.search(rf"\brank {slow}\b", v) or "compute" not in v:
        die(f"verdict does not name rank {slow} and compute: {v!r}")
    # what the straggler costs, in words (issue 18)
    if not re.search(rf"cost: rank {slow} \(\w+\) slows", v):
        die(f"verdict has no cost line naming rank {slow}: {v!r}")
    for part in ("skew ", " ms", "evidence:", "experiment:"):
        if part not in v:
            die(f"verdict lacks {part!r}: {v!r}")
    st = " ".join(d.by_id("status")[2].split())
    if "error" in st or "updated" not in st:
        die(f"status line: {st!r}")
    print(f"dom: bars {sorted(got.items())}, {len(segs)} segments, lines {sorted(lines)}")
    print(f"dom: verdict: {v}")
    print(f"dom: status: {st}")


def check_life(dump, states, events, text):
    """A failed job's lifecycle band: its segments and marks in order, and its summary."""
    d = Dom(open(dump, encoding="utf-8").read())
    sec = d.by_id("life")
    if "hidden" in sec[1]:
        die("no lifecycle section shown")
    segs = [a.get("data-state") for t, a, _ in d.els
            if t == "rect" and any(c.startswith("life-") for c in classes(a))]
    marks = [a.get("data-event") for t, a, _ in d.els if "life-mark" in classes(a)]
    if segs != states.split(","):
        die(f"band segments {segs}, want {states}")
    if marks != events.split(","):
        die(f"band marks {marks}, want {events}")
    got = " ".join(d.by_id("life-text")[2].split())
    if text not in got:
        die(f"lifecycle text lacks {text!r}: {got!r}")
    note = " ".join(d.by_id("life-note")[2].split())
    print(f"life: {segs} marks {marks}; {note}; {got}")


def check_stacks(dump, job, slow):
    """A stuck job: its stack classes shown, rank SLOW's the odd one with its whole stack."""
    d = Dom(open(dump, encoding="utf-8").read())
    st = d.by_id("stacks")
    if "hidden" in st[1]:
        die("the stacks section is hidden")
    items = d.find(lambda t, a: t == "li" and "data-ranks" in a)
    odd = [e for e in items if "odd" in classes(e[1])]
    if len(odd) != 1 or odd[0][1]["data-ranks"] != str(slow):
        die(f"odd class {[e[1] for e in odd]}, want rank {slow}; all {[e[1] for e in items]}")
    if "the odd one out" not in odd[0][2] or "its whole main stack" not in odd[0][2]:
        die(f"the odd class lacks its marks: {odd[0][2][:300]!r}")
    others = [e for e in items if e not in odd]
    if not others or not any("MPI_Allreduce" in e[2] for e in others):
        die(f"no class waits in MPI_Allreduce: {[e[2][:200] for e in others]}")
    print(f"stacks: classes {[e[1]['data-ranks'] for e in items]}, rank {slow} the odd one out")


def check_hostile(dump, job):
    d = Dom(open(dump, encoding="utf-8").read())
    for tag in ("img", "b", "iframe"):
        if d.find(lambda t, a: t == tag):
            die(f"hostile text became a <{tag}> element")
    if len(d.find(lambda t, a: t == "script")) != 1:
        die("hostile text added a <script> element")
    if d.find(lambda t, a: any(k.startswith("on") for k in a)):
        die("an element carries an event handler attribute")
    bars = d.find(lambda t, a: "rank-bar" in classes(a))
    if sorted(a.get("data-job") for _, a, _ in bars) != [job, job]:
        die(f"data-job not the job id verbatim: {[a.get('data-job') for _, a, _ in bars]}")
    v = d.by_id("verdict")[2]
    if 'onerror="window.pwned=1"' not in v or "<script>" not in v:
        die(f"the hostile strings are not shown as text: {v!r}")
    st = d.by_id("stacks")
    if "hidden" in st[1] or 'onerror="window.pwned=1"' not in st[2]:
        die(f"the hostile stack classes are not shown as text: {st[1]} {st[2][:200]!r}")
    life = d.by_id("life")
    if "hidden" in life[1] or 'onerror="window.pwned=1"' not in life[2]:
        die(f"the hostile lifecycle is not shown as text: {life[1]} {life[2][:200]!r}")
    segs = [a.get("data-state") for t, a, _ in d.els
            if t == "rect" and any(c.startswith("life-") for c in classes(a))]
    if segs != ["running", "failed", "running"]:
        die(f"the hostile timeline's band: {segs} (unknown events and times are left out)")
    opts = [x[2] for x in d.find(lambda t, a: t == "option" and a.get("value", "").startswith(("job", "other")))]
    if job not in opts:
        die(f"job selector lacks the job id as text: {opts}")
    print("hostile: API text shown as text, no element or handler got in")


class Cdp:
    """The DevTools protocol over --remote-debugging-pipe: NUL-terminated JSON on fds 3 and 4."""

    def __init__(self, cmd):
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # above 4, so dup2 onto 3 and 4 in the child never hits its own source
        hi = [fcntl.fcntl(f, fcntl.F_DUPFD_CLOEXEC, 10) for f in (to_r, from_w)]
        for f in (to_r, from_w):
            os.close(f)

        def child():
            os.dup2(hi[0], 3)
            os.dup2(hi[1], 4)

        self.p = subprocess.Popen(cmd, preexec_fn=child, close_fds=False, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for f in hi:
            os.close(f)
        self.w, self.r, self.buf, self.n = to_w, from_r, b"", 0

    def call(self, method, params=None, session=None, timeout=20):
        self.n += 1
        msg = {"id": self.n, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        end = time.time() + timeout
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                m = json.loads(raw)
                if m.get("id") == self.n:
                    if "error" in m:
                        raise RuntimeError(f"{method}: {m['error']}")
                    return m["result"]
            left = end - time.time()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise TimeoutError(f"{method}: no answer in {timeout} s")
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, 9)
            self.p.wait()


def click(chromium, url, tmp):
    cdp = Cdp([chromium, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-dev-shm-usage",
               f"--user-data-dir={tmp}", "--remote-debugging-pipe", "about:blank"])
    try:
        tid = cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = cdp.call("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
        cdp.call("Page.navigate", {"url": url}, s)

        def js(expr):
            r = cdp.call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, s)
            return r["result"].get("value")

        def until(expr, t):
            end = time.time() + t
            while time.time() < end:
                v = js(expr)
                if v:
                    return v
                time.sleep(0.2)
            die(f"timed out waiting for {expr}")

        until("document.querySelectorAll('.rank-bar').length > 0", 20)
        out = []
        for _ in range(2):
            js("document.getElementById('capture-status').textContent = '';"
               "document.getElementById('capture').click()")
            status = until("(t => /^(HTTP|capture failed)/.test(t) && t)"
                           "(document.getElementById('capture-status').textContent)", 20)
            link = js("(a => a && a.href)(document.getElementById('capture-link'))")
            out.append({"status": status, "link": link})
        pwned = js("String(window.pwned)")
        print(json.dumps({"clicks": out, "pwned": pwned}))
    finally:
        cdp.close()


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "page":
        check_page(*args)
    elif cmd == "dom":
        check_dom(args[0], args[1], int(args[2]), int(args[3]))
    elif cmd == "stacks":
        check_stacks(args[0], args[1], int(args[2]))
    elif cmd == "hostile":
        check_hostile(*args)
    elif cmd == "life":
        check_life(*args)
    elif cmd == "click":
        click(*args)
    else:
        die(f"unknown check {cmd}")
