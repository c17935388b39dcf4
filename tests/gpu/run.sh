#!/usr/bin/env bash
# GPU checks for librankscope_cupti.so, for a machine with an NVIDIA GPU, PyTorch and NCCL (the
# device machine of tests/gpu; `make check` does not run this). One short run:
#   1) a real single-GPU PyTorch loop launched with CUDA_INJECTION64_PATH;
#   2) the same loop with the library injected at run time by `rankscope inject`, when
#      rankscope builds there and ptrace is allowed (else reported as not run, with why).
# A stand-in for the daemon (tests/fixtures/cupti_double/fake_daemon.py, the real wire format)
# asks for kernels, copies, syncs and the runtime API records, and the checks are:
#   - kernel and memcpy records arrive;
#   - clocks are sane: each kernel starts after its launch call started (the runtime API record
#     with its correlation id), within the calibration error reported with it, and ends after it
#     starts; every record lies inside the loop's host window;
#   - NCCL kernels are recognised by the daemon's classifier (user/gpu/gpu.c);
#   - the library's own clock is in (batch error 0), nothing dropped, the final state active.
# Then the real-process cases of issue 16, each tested here only on the CUPTI double:
#   3) torch.profiler (Kineto) takes CUPTI over mid-run: no crash, and the library reports
#      taken_over (or keeps recording, if this CUPTI lets both work), never a stale active;
#   4) cost on a launch-bound step (2000 tiny kernels): median step time bare, with the library
#      dormant, recording, and after RSC_DISABLE (kinds off, CUPTI not finalized); the goal is
#      recording <= 1% over bare, and after_disable says whether a disabled CUPTI still costs.
# Writes $OUT/report.json and $OUT/run.log (OUT defaults to build/gpu). Exit 0 when every check
# that ran passed, 1 otherwise, 77 without a GPU.
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$PWD
OUT=${OUT:-$TOP/build/gpu}
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
PY=${PY:-python3}
W=$(mktemp -d /tmp/rankscope-gpu.XXXXXX)
trap 'rm -rf "$W"; jobs -p | xargs -r kill 2>/dev/null' EXIT
note() { echo "== $*"; }

command -v nvidia-smi >/dev/null && nvidia-smi -L || { echo "SKIP: no GPU (nvidia-smi)"; exit 77; }
$PY -c 'import torch; assert torch.cuda.is_available(); print("torch", torch.__version__, "cuda", torch.version.cuda)' ||
	{ echo "SKIP: PyTorch without CUDA"; exit 77; }

# CUPTI's headers: the toolkit's, or the CUDA wheel's that PyTorch brought
INC=""
for d in "${CUDA_HOME:-/usr/local/cuda}/include" /usr/local/cuda/extras/CUPTI/include; do
	[ -f "$d/cupti.h" ] && INC="-I$d" && break
done
if [ -z "$INC" ]; then
	d=$($PY -c 'import nvidia.cuda_cupti, os; print(os.path.join(list(nvidia.cuda_cupti.__path__)[0], "include"))' 2>/dev/null)
	rt=$($PY -c 'import nvidia.cuda_runtime, os; print(os.path.join(list(nvidia.cuda_runtime.__path__)[0], "include"))' 2>/dev/null)
	[ -n "$d" ] && [ -f "$d/cupti.h" ] && INC="-I$d -I$rt"
fi
[ -n "$INC" ] || { echo "FAIL: no cupti.h (CUDA toolkit or nvidia-cuda-cupti wheel)"; exit 1; }
note "building the library with $INC"
LIB=$OUT/librankscope_cupti.so
gcc -std=gnu11 -O2 -g -fPIC -fvisibility=hidden -shared -D_GNU_SOURCE -iquote cupti $INC \
	-Wl,--version-script=cupti/exports.map cupti/lib.c cupti/records.c cupti/timeline.c \
	cupti/pool.c -Wl,--no-as-needed -l:libdl.so.2 -l:libpthread.so.0 -o "$LIB" ||
	{ echo "FAIL: library build"; exit 1; }
gcc -std=gnu11 -O2 -iquote user/gpu -iquote cupti tests/gpu/classify.c user/gpu/gpu.c -o "$W/classify" ||
	{ echo "FAIL: classifier build"; exit 1; }
KINDS=$((1 << 1 | 1 << 2 | 1 << 3 | 1 << 4 | 1 << 5))	# kernel, memcpy, memset, sync, api

daemon() {	# daemon NAME [ARGS]: the fake daemon on $W/NAME.sock, summary in $OUT/NAME.json
	local name=$1
	shift
	$PY tests/fixtures/cupti_double/fake_daemon.py --wire cupti --sock "$W/$name.sock" \
		--out "$OUT/$name.json" --kinds $KINDS --max-s 240 "$@" >"$W/$name.d.out" 2>&1 &
	set -- "$name"
	for _ in $(seq 50); do grep -q listening "$W/$1.d.out" && return 0; sleep 0.1; done
	echo "fake daemon did not start: $(cat "$W/$1.d.out")"
	return 1
}

check() {	# check NAME TRAIN_OUT: the checks on a run's summary
	$PY - "$OUT/$1.json" "$2" "$W/classify" "$1" <<'PY'
import json, re, subprocess, sys
summ, train, classify, name = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), sys.argv[3], sys.argv[4]
KERNEL, MEMCPY, API = 1, 2, 5
recs = summ["records"]
steps = [(int(a), int(b)) for a, b in re.findall(r"^step \d+ t0=(\d+) t1=(\d+)", train, re.M)]
res = {"run": name, "statuses": [s["detail"] for s in summ["statuses"]][-3:], "steps": len(steps)}
kern = [r for r in recs if r["kind"] == KERNEL]
copies = [r for r in recs if r["kind"] == MEMCPY]
api = {r["corr"]: r for r in recs if r["kind"] == API}
res.update(kernels=len(kern), memcpys=len(copies), api_records=len(api),
           calib_err_max_ns=summ["calib_err_max"], bad=summ["bad"][:5])
names = sorted({r["name"] or "" for r in kern})
cls = subprocess.run([classify], input="\n".join(names) + "\n", capture_output=True,
                     text=True).stdout.split()
nccl_names = [n for n, c in zip(names, cls) if c == "nccl"]
nccl = [r for r in kern if r["name"] in set(nccl_names)]
res.update(nccl_kernels=len(nccl), nccl_names=nccl_names[:5], kernel_names=len(names))
# clocks: a kernel starts after its launch call started, within the calibration error
slack = 5000
late = [r for r in kern if r["corr"] in api and
        r["start"] + r["calib_err"] + slack < api[r["corr"]]["start"]]
paired = sum(1 for r in kern if r["corr"] in api)
lo = min(s[0] for s in steps) if steps else 0
hi = max(s[1] for s in steps) if steps else 0
outside = [r for r in kern + copies if steps and not (lo - 2e9 <= r["start"] <= hi + 2e9)]
res.update(kernels_paired_with_launch=paired, kernels_before_launch=len(late),
           records_outside_loop=len(outside))
checks = {
    "kernels arrive": len(kern) > 0,
    "memcpys arrive": len(copies) > 0,
    "kernels paired with their launch": paired >= len(kern) // 2,
    "no kernel starts before its launch": not late,
    "records inside the loop's window": not outside,
    "ends after starts": all(r["end"] >= r["start"] for r in recs),
    "NCCL kernels recognised": len(nccl) > 0,
    "no malformed message": not summ["bad"],
    "our CLOCK_MONOTONIC timestamp callback in (error 0)": summ["calib_err_max"] == 0,
    "nothing dropped": not any(summ["statuses"][-1][k] for k in
                               ("dropped_queue", "dropped_cupti", "dropped_clock")),
    "final state active": summ["statuses"][-1]["state"] == 2,
}
res["checks"] = checks
print(json.dumps(res, indent=1))
json.dump(res, open(sys.argv[1].replace(".json", ".checks.json"), "w"))
sys.exit(0 if all(checks.values()) else 1)
PY
}

rc=0
results=()

# 1) at launch, through CUDA_INJECTION64_PATH
note "run 1: CUDA_INJECTION64_PATH"
daemon launch || exit 1
CUDA_INJECTION64_PATH=$LIB RANKSCOPE_CUPTI_SOCKET=$W/launch.sock timeout 240 \
	$PY tests/gpu/train.py --steps 200 >"$W/launch.train" 2>&1
echo "train exit $?: $(tail -1 "$W/launch.train")"
wait
if check launch "$W/launch.train"; then results+=("launch: pass"); else results+=("launch: FAIL"); rc=1; fi

# 2) injected into the running loop
note "run 2: rankscope inject"
if make -j"$(nproc)" build/rankscope >"$W/make.log" 2>&1 && [ -x build/rankscope ]; then
	daemon inject || exit 1
	RANKSCOPE_CUPTI_SOCKET=$W/inject.sock timeout 240 $PY tests/gpu/train.py --steps 300 \
		--pause-at 20 --pause-file "$W/resume" >"$W/inject.train" 2>&1 &
	tp=$!
	for _ in $(seq 600); do grep -q '^paused' "$W/inject.train" && break; sleep 0.1; done
	pid=$(sed -n 's/^ready pid=//p' "$W/inject.train")
	if build/rankscope inject -p "$pid" --lib "$LIB"; then
		touch "$W/resume"
		wait $tp
		echo "train exit $?: $(tail -1 "$W/inject.train")"
		wait
		if check inject "$W/inject.train"; then results+=("inject: pass"); else results+=("inject: FAIL"); rc=1; fi
	else
		results+=("inject: not run (rankscope inject refused; see run.log)")
		touch "$W/resume"
		wait
	fi
else
	results+=("inject: not run (rankscope did not build here: $(tail -1 "$W/make.log"))")
fi

# 3) Kineto takes CUPTI over mid-run
note "run 3: torch.profiler mid-run"
daemon kineto --poke-ms 500 || exit 1
CUDA_INJECTION64_PATH=$LIB RANKSCOPE_CUPTI_SOCKET=$W/kineto.sock timeout 240 \
	$PY tests/gpu/train.py --steps 400 --profile-at 50 --profile-steps 100 >"$W/kineto.train" 2>&1
krc=$?
echo "train exit $krc: $(tail -1 "$W/kineto.train")"
wait
if $PY - "$OUT/kineto.json" "$W/kineto.train" "$krc" <<'PY'; then results+=("kineto: pass"); else results+=("kineto: FAIL"); rc=1; fi
import json, re, sys
s, train, rc = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), int(sys.argv[3])
TAKEN, ACTIVE = 7, 2
st = s["statuses"]
seq = [x["state"] for x in st]
stop = re.search(r"^profile stop step=\d+", train, re.M)
steps = {int(a): (int(b), int(c)) for a, b, c in re.findall(r"^step (\d+) t0=(\d+) t1=(\d+)", train, re.M)}
after = [r for r in s["records"] if r["kind"] == 1 and steps and r["start"] >= steps[max(steps)][0] - 2e9]
res = {"states": seq[-10:], "details": sorted({x["detail"] for x in st}), "records": s["nrec"],
       "kernels_in_last_2s": len(after)}
checks = {
    "the training process survived": rc == 0,
    "profiler ran": bool(stop),
    # taken over and said so, or recording on (this CUPTI served both): never active with no data
    "no stale active": TAKEN in seq or (seq[-1] == ACTIVE and len(after) > 0),
}
res["checks"] = checks
print(json.dumps(res, indent=1))
json.dump(res, open(sys.argv[1].replace(".json", ".checks.json"), "w"))
sys.exit(0 if all(checks.values()) else 1)
PY

# 4) what the library costs a launch-bound step
note "run 4: launch-bound cost (2000 tiny kernels a step)"
TINY=(tests/gpu/train.py --steps 80 --tiny-kernels 2000)
timeout 240 $PY "${TINY[@]}" >"$W/cost_bare.train" 2>&1
RANKSCOPE_CUPTI_SOCKET=$W/none.sock CUDA_INJECTION64_PATH=$LIB timeout 240 \
	$PY "${TINY[@]}" >"$W/cost_dormant.train" 2>&1
daemon cost_rec --no-records || exit 1
RANKSCOPE_CUPTI_SOCKET=$W/cost_rec.sock CUDA_INJECTION64_PATH=$LIB timeout 240 \
	$PY "${TINY[@]}" >"$W/cost_recording.train" 2>&1
wait
daemon cost_dis --no-records --disable-after-s 3 || exit 1
RANKSCOPE_CUPTI_SOCKET=$W/cost_dis.sock CUDA_INJECTION64_PATH=$LIB timeout 240 \
	$PY tests/gpu/train.py --steps 800 --tiny-kernels 2000 >"$W/cost_after_disable.train" 2>&1
wait
if $PY - "$W" "$OUT" <<'PY'; then results+=("cost: pass"); else results+=("cost: FAIL"); rc=1; fi
import json, re, statistics, sys
w, out = sys.argv[1], sys.argv[2]
def med(name, last=None):
    st = [(int(b) - int(a)) / 1e6 for a, b in
          re.findall(r"^step \d+ t0=(\d+) t1=(\d+)", open(f"{w}/cost_{name}.train").read(), re.M)]
    st = st[10:] if last is None else st[-last:]     # warm-up out; after_disable: its tail
    return statistics.median(st) if st else None
m = {n: med(n) for n in ("bare", "dormant", "recording")}
m["after_disable"] = med("after_disable", last=100)
res = {"median_step_ms": m,
       "ratio_to_bare": {k: round(v / m["bare"], 4) for k, v in m.items() if v and m["bare"]}}
checks = {"all four ran": all(m.values()),
          "recording within 1% of bare (goal)": bool(m["bare"] and m["recording"] and
                                                     m["recording"] <= 1.01 * m["bare"])}
res["checks"] = checks
print(json.dumps(res, indent=1))
json.dump(res, open(f"{out}/cost.checks.json", "w"))
sys.exit(0 if all(checks.values()) else 1)
PY

printf '%s\n' "${results[@]}"
$PY - "$OUT" "${results[@]}" <<'PY'
import json, os, sys
out, results = sys.argv[1], sys.argv[2:]
runs = {}
for n in ("launch", "inject", "kineto", "cost"):
    f = os.path.join(out, f"{n}.checks.json")
    if os.path.exists(f):
        runs[n] = json.load(open(f))
json.dump({"results": results, "runs": runs}, open(os.path.join(out, "report.json"), "w"), indent=1)
PY
exit $rc
