#!/usr/bin/env bash
# rankscope daemon --cgroup: two daemons on one machine, each scoped to its own cgroup (what
# two "nodes", a Slurm job or a share of a host need). Two real 2-rank OpenMPI jobs run, one
# in each cgroup; each daemon (its own lock file, port and CUPTI socket, --all) attaches to its
# own job's ranks only and says so in /api/v1/ranks. Bad --cgroup values are refused with a
# line that names the fix.
. "$(dirname "$0")/../lib.sh"
need_root
command -v mpirun >/dev/null || skip "OpenMPI not installed (make deps)"
[ -x "$TOP/build/workloads/zoo_mpi" ] || fail "build/workloads/zoo_mpi is missing: make fixtures"
test_cgroups a b

# bad values: one clear line each, exit 2
for bad in relative/path /a/../b /a//b; do
	"$RS" daemon --cgroup "$bad" --lock-file "$T/bad.lock" >"$T/bad.out" 2>&1
	rc=$?
	[ $rc = 2 ] || fail "--cgroup $bad: exit $rc, not 2"
	grep -q "invalid --cgroup" "$T/bad.out" || fail "--cgroup $bad: $(cat "$T/bad.out")"
done
"$RS" attach -p $$ --cgroup /x >"$T/bad.out" 2>&1 && fail "attach took --cgroup"
grep -q "daemon option" "$T/bad.out" || fail "attach --cgroup: $(cat "$T/bad.out")"

# the jobs, each started inside its cgroup (its ranks are born there)
for n in a b; do
	bg "job_$n" sh -c "echo \$\$ >$ROOT/$CG-$n/cgroup.procs && exec mpirun \
		--allow-run-as-root --oversubscribe -np 2 $TOP/build/workloads/zoo_mpi \
		--steps 100000 --compute-us 3000"
done
for n in a b; do
	wait_lines "$T/job_$n.out" '^ready rank=' 2 60 || fail "MPI job $n did not start"
done
# the daemons, after the jobs: --all adopts running ones
for n in a b; do
	mkdir -p "$T/$n"
	port=$(free_port)
	eval "PORT_$n=$port"
	bg "rsd_$n" "$RS" daemon --all --cgroup "/$CG-$n/" --listen 127.0.0.1:$port \
		--lock-file "$T/$n/daemon.lock"
	wait_lines "$T/rsd_$n.out" 'watching for training processes' 1 30 ||
		fail "daemon $n did not start: $(tail -3 "$T/rsd_$n.out")"
	grep -q "under cgroup /$CG-$n" "$T/rsd_$n.out" || fail "daemon $n does not state its scope"
done
sleep 4
for n in a b; do
	port=PORT_$n
	http_get "http://127.0.0.1:${!port}/api/v1/ranks" | tail -n +2 >"$T/ranks_$n.json" ||
		fail "GET /api/v1/ranks from daemon $n"
done
$PY - "$T/ranks_a.json" "$T/ranks_b.json" "$T/job_a.out" "$T/job_b.out" <<'PY' || exit 1
import json, re, sys
def pids(path):
    return sorted(int(m.group(1)) for m in re.finditer(r"^ready rank=\d+ pid=(\d+)", open(path).read(), re.M))
for n, rpath, jpath in (("a", sys.argv[1], sys.argv[3]), ("b", sys.argv[2], sys.argv[4])):
    seen = sorted(r["pid"] for r in json.load(open(rpath)))
    want = pids(jpath)
    assert seen == want, f"daemon {n} watches {seen}, its job's ranks are {want}"
    print(f"daemon {n}: ranks {seen}, its own job's only")
PY
pass "two daemons scoped by --cgroup each watch their own job's ranks; bad paths refused"
