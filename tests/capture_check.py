#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Check a rankscope capture (Chrome trace-event JSON, plain or gzipped) for the structure
Perfetto and chrome://tracing rely on:
  - it parses, and has traceEvents;
  - every "B" has its "E" on the same track, properly nested (rankscope writes "X" slices,
    whose dur must be >= 0);
  - flows pair up: each flow id has exactly one "s" and at least one "f", same name and cat;
  - timestamps never go back within a track (pid, tid), in file order;
  - every rank named on the command line is present as a process track "rank R (pid P)".
Usage: capture_check.py FILE [--ranks 0,1] [--min-flows N] [--need CAT,...]
Prints a summary line; exits 1 with the first problems found."""
import argparse
import collections
import gzip
import json
import re
import sys

p = argparse.ArgumentParser()
p.add_argument("file")
p.add_argument("--ranks", default="")
p.add_argument("--min-flows", type=int, default=1)
p.add_argument("--need", default="", help="slice categories that must appear")
a = p.parse_args()
raw = open(a.file, "rb").read()
if raw[:2] == b"\x1f\x8b":
    raw = gzip.decompress(raw)
doc = json.loads(raw)
ev = doc["traceEvents"]
problems = []
last_ts = {}
open_b = collections.defaultdict(list)
flows = collections.defaultdict(lambda: {"s": 0, "f": 0, "names": set()})
cats = collections.Counter()
procs = {}
for i, e in enumerate(ev):
    ph = e.get("ph")
    if ph == "M":
        if e.get("name") == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        continue
    key = (e.get("pid"), e.get("tid"))
    ts = float(e["ts"])
    if key in last_ts and ts < last_ts[key]:
        problems.append(f"event {i}: ts {ts} before {last_ts[key]} on track {key}")
    last_ts[key] = ts
    cats[e.get("cat")] += 1
    if ph == "X":
        if float(e.get("dur", -1)) < 0:
            problems.append(f"event {i}: X without a duration")
    elif ph == "B":
        open_b[key].append(e.get("name"))
    elif ph == "E":
        if not open_b[key]:
            problems.append(f"event {i}: E without B on {key}")
        else:
            open_b[key].pop()
    elif ph in ("s", "f"):
        fl = flows[(e.get("cat"), e["id"])]
        fl[ph] += 1
        fl["names"].add(e.get("name"))
    elif ph not in ("i", "I", "C"):
        problems.append(f"event {i}: unexpected ph {ph!r}")
for key, st in open_b.items():
    if st:
        problems.append(f"track {key}: {len(st)} B without E")
paired = 0
for fid, fl in flows.items():
    if fl["s"] != 1 or fl["f"] < 1 or len(fl["names"]) != 1:
        problems.append(f"flow {fid}: {fl['s']} starts, {fl['f']} ends, names {fl['names']}")
    else:
        paired += 1
if paired < a.min_flows:
    problems.append(f"only {paired} flows paired, want at least {a.min_flows}")
ranks = {int(m[1]): pid for pid, name in procs.items()
         for m in [re.match(r"rank (\d+) \(pid (\d+)\)$", name)] if m}
for r in [int(x) for x in a.ranks.split(",") if x]:
    if r not in ranks:
        problems.append(f"rank {r} missing (process tracks: {sorted(procs.values())})")
for c in [x for x in a.need.split(",") if x]:
    if not cats[c]:
        problems.append(f"no slice of category {c!r} (have {dict(cats)})")
print(f"{a.file}: {len(ev)} events, {len(last_ts)} tracks, {paired} flows paired, "
      f"ranks {sorted(ranks)}, categories {dict(cats)}, dropped {doc.get('otherData', {}).get('dropped_events')}")
if problems:
    print("\n".join(problems[:20]))
    sys.exit(1)
