#!/usr/bin/env bash
# The rest of deploy/: the Kubernetes manifests, the Dockerfile and the Grafana dashboard.
#   - yamllint over deploy/ with deploy/.yamllint, when yamllint is installed;
#   - the manifests render with `kubectl kustomize` (with and without the privileged/,
#     prometheus-operator/ and token/ components), when kubectl is installed. `kubectl apply
#     --dry-run=client` is no use here: it asks an API server for its resource types and fails
#     without a cluster. Without kubectl, the files kustomization.yaml lists are read as they
#     are;
#   - the DaemonSet's structure (python3 and its yaml module): hostPID, the exact capabilities
#     with a comment each, the host paths and their mounts, /healthz probes, requests and
#     limits, the listen address and the scrape annotations;
#   - the dashboard is valid JSON, uses ${DS_PROMETHEUS} everywhere, and every PromQL
#     expression in it (panel targets and the selectors of its variables) passes
#     `promtool check rules`, with the Grafana variables replaced by plain values;
#   - the Dockerfile: two or more stages on debian:bookworm, `make all` only, a runtime
#     package for every library the Makefile links; hadolint when installed.
# Exit codes: 0 pass, 1 fail, 77 skipped (the last "SKIP: reason" line says why).
set -u
cd "$(dirname "$0")/../.." || exit 1

T=$(mktemp -d /tmp/rankscope-deploy.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT

rc=0
checked=()
have() { command -v "$1" >/dev/null 2>&1; }
bad() { echo "  FAIL: $*"; rc=1; }
note() { echo "note: $*"; }

HAVE_PYYAML=0
have python3 && python3 -c 'import yaml' 2>/dev/null && HAVE_PYYAML=1
if [ "$HAVE_PYYAML" = 0 ] && ! have promtool; then
	echo "SKIP: neither python3's yaml module (apt-get install python3-yaml) nor promtool" \
	     "(apt-get install prometheus) is installed"
	exit 77
fi

# --- yamllint ---
if have yamllint; then
	echo "== yamllint -c deploy/.yamllint --strict deploy/"
	if yamllint -c deploy/.yamllint --strict deploy/; then
		checked+=(yamllint)
	else
		bad "yamllint"
	fi
else
	note "yamllint is not installed (apt-get install yamllint): lint not run"
fi

# --- render the manifests ---
K=deploy/kubernetes
rendered=()
if have kubectl; then
	echo "== kubectl kustomize $K"
	if kubectl kustomize "$K" >"$T/base.yaml"; then
		rendered+=("base=$T/base.yaml")
	else
		bad "kubectl kustomize $K"
	fi
	# The components, as a user enables them: a copy with `components:` added.
	cp -r "$K" "$T/k"
	printf 'components:\n  - privileged\n  - prometheus-operator\n  - token\n  - hub\n' \
		>>"$T/k/kustomization.yaml"
	echo "== kubectl kustomize $K with components privileged, prometheus-operator, token, hub"
	if kubectl kustomize "$T/k" >"$T/components.yaml"; then
		rendered+=("components=$T/components.yaml")
	else
		bad "kubectl kustomize with the components"
	fi
	checked+=(kustomize)
elif [ "$HAVE_PYYAML" = 1 ]; then
	note "kubectl is not installed: reading the files $K/kustomization.yaml lists, without" \
	     "kustomize and without the components"
	python3 - "$K" >"$T/base.yaml" <<'EOF' && rendered+=("base=$T/base.yaml") || bad "reading $K"
import os, sys, yaml
d = sys.argv[1]
k = yaml.safe_load(open(os.path.join(d, "kustomization.yaml")))
docs = []
for r in k.get("resources", []):
    docs += [x for x in yaml.safe_load_all(open(os.path.join(d, r))) if x]
for img in k.get("images", []):
    for x in docs:
        for c in (x.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])):
            name, _, tag = c["image"].partition(":")
            if name == img["name"]:
                c["image"] = img.get("newName", name) + ":" + img.get("newTag", tag)
yaml.safe_dump_all(docs, sys.stdout)
EOF
fi

# --- the structure of what was rendered ---
if [ "$HAVE_PYYAML" = 1 ] && [ ${#rendered[@]} -gt 0 ]; then
	echo "== structure of the DaemonSet and its companions"
	if python3 - "$K/daemonset.yaml" "${rendered[@]}" <<'EOF'; then
import re, sys, yaml

errs = []
def err(msg):
    errs.append(msg)
    print("  FAIL: " + msg)

CAPS = {"BPF", "PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH", "SYS_RESOURCE", "CHECKPOINT_RESTORE"}
HOST = {  # host path: (hostPath type, mounted read only)
    "/sys/kernel/btf": ("Directory", True),
    "/sys/kernel/tracing": ("Directory", None),
    "/sys/fs/bpf": ("Directory", None),
    "/run/rankscope": ("DirectoryOrCreate", None),
}

def qty(s):
    """A CPU or memory quantity as a float (cores or bytes)."""
    m = re.fullmatch(r"([0-9.]+)(m|Ki|Mi|Gi|k|M|G)?", str(s))
    if not m:
        raise ValueError(s)
    mult = {None: 1, "m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 1e3, "M": 1e6,
            "G": 1e9}[m.group(2)]
    return float(m.group(1)) * mult

# A comment above every added capability, in the source file.
src = open(sys.argv[1]).read().splitlines()
in_add = False
ncaps = 0
for i, line in enumerate(src):
    s = line.strip()
    if s == "add:":
        in_add, indent = True, len(line) - len(line.lstrip())
        continue
    if in_add:
        cur = len(line) - len(line.lstrip())
        if s and not s.startswith("#") and cur <= indent and not s.startswith("- "):
            in_add = False
            continue
        if s.startswith("- "):
            ncaps += 1
            prev = src[i - 1].strip()
            if not prev.startswith("#"):
                err(f"{sys.argv[1]}:{i + 1}: capability {s[2:]} has no comment saying what uses it")
if ncaps == 0:
    err(f"{sys.argv[1]}: no capabilities.add list found")

for arg in sys.argv[2:]:
    variant, _, path = arg.partition("=")
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    kinds = {}
    for d in docs:
        kinds.setdefault(d["kind"], []).append(d)
    for k in ("Namespace", "ServiceAccount", "DaemonSet"):
        if len(kinds.get(k, [])) != 1:
            err(f"{variant}: expected one {k}, found {len(kinds.get(k, []))}")
    if errs:
        continue
    ns = kinds["Namespace"][0]
    if ns["metadata"].get("labels", {}).get("pod-security.kubernetes.io/enforce") != "privileged":
        err(f"{variant}: namespace must enforce the 'privileged' pod security level")
    ds = kinds["DaemonSet"][0]
    if ds["metadata"].get("namespace") != ns["metadata"]["name"]:
        err(f"{variant}: the DaemonSet is not in namespace {ns['metadata']['name']}")
    tmpl = ds["spec"]["template"]
    pod = tmpl["spec"]
    if pod.get("hostPID") is not True:
        err(f"{variant}: hostPID must be true (the ranks' /proc entries)")
    if pod.get("serviceAccountName") != kinds["ServiceAccount"][0]["metadata"]["name"]:
        err(f"{variant}: serviceAccountName is not the ServiceAccount")
    if len(pod["containers"]) != 1:
        err(f"{variant}: expected one container")
        continue
    c = pod["containers"][0]
    args = c.get("args", [])
    if "--all" not in args:
        err(f"{variant}: args lack --all")
    listen = [a.split("=", 1)[1] for a in args if a.startswith("--listen=")]
    if len(listen) != 1:
        err(f"{variant}: args need one --listen=ADDR:PORT")
        continue
    port = int(listen[0].rsplit(":", 1)[1])
    if pod.get("hostNetwork") and listen[0].startswith(("0.0.0.0:", "[::]:")):
        err(f"{variant}: with hostNetwork, --listen={listen[0]} serves on every interface of "
            "the node; listen on $(POD_IP)")
    # Both default to the shared host path; given, they must stay on it.
    for opt in ("--lock-file=", "--cupti-socket="):
        for a in args:
            if a.startswith(opt) and not a[len(opt):].startswith("/run/rankscope"):
                err(f"{variant}: {a} is not on the shared host path /run/rankscope")
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    if port not in ports.values():
        err(f"{variant}: --listen port {port} is not a containerPort")
    for probe in ("readinessProbe", "livenessProbe"):
        g = c.get(probe, {}).get("httpGet", {})
        pp = ports.get(g.get("port"), g.get("port"))
        if g.get("path") != "/healthz" or pp != port:
            err(f"{variant}: {probe} must be httpGet /healthz on port {port}")
    res = c.get("resources", {})
    for kind in ("cpu", "memory"):
        try:
            r, l = qty(res["requests"][kind]), qty(res["limits"][kind])
        except (KeyError, ValueError) as e:
            err(f"{variant}: resources need requests and limits for {kind} ({e})")
            continue
        if r > l:
            err(f"{variant}: {kind} request above its limit")
    ann = tmpl["metadata"].get("annotations", {})
    if (ann.get("prometheus.io/scrape") != "true" or ann.get("prometheus.io/port") != str(port)
            or ann.get("prometheus.io/path") != "/metrics"):
        err(f"{variant}: the pod needs prometheus.io/scrape, port ({port}) and path annotations")

    # Host paths: the required ones, mounted where they are on the host; no host /proc.
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
    byhost = {}
    for name, v in vols.items():
        hp = v.get("hostPath")
        if not hp:
            continue
        if hp["path"].rstrip("/") in ("", "/proc") or hp["path"].startswith("/proc/"):
            err(f"{variant}: volume {name} mounts the host's {hp['path']}; hostPID already "
                "gives the host's /proc")
        byhost[hp["path"]] = (name, hp.get("type"))
    for hpath, (typ, ro) in HOST.items():
        if hpath not in byhost:
            err(f"{variant}: no hostPath volume for {hpath}")
            continue
        name, t = byhost[hpath]
        if t != typ:
            err(f"{variant}: hostPath {hpath} has type {t}, expected {typ}")
        m = mounts.get(name)
        if not m or m["mountPath"] != hpath:
            err(f"{variant}: {hpath} must be mounted at {hpath}")
        elif ro and not m.get("readOnly"):
            err(f"{variant}: {hpath} must be mounted read only")

    sc = c.get("securityContext", {})
    if variant == "base":
        if sc.get("privileged"):
            err("base: the default DaemonSet must not be privileged")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            err("base: capabilities must drop ALL")
        added = set(caps.get("add", []))
        if added != CAPS:
            err(f"base: capabilities.add is {sorted(added)}, expected exactly {sorted(CAPS)}")
        if sc.get("allowPrivilegeEscalation") is not False:
            err("base: allowPrivilegeEscalation must be false")
        if sc.get("readOnlyRootFilesystem") is not True:
            err("base: readOnlyRootFilesystem must be true")
    else:
        if sc.get("privileged") is not True:
            err(f"{variant}: the privileged component must set privileged: true")
        if sc.get("allowPrivilegeEscalation") is False:
            err(f"{variant}: allowPrivilegeEscalation: false is invalid with privileged: true")
        pms = kinds.get("PodMonitor", [])
        if len(pms) != 1:
            err(f"{variant}: expected one PodMonitor")
        else:
            pm = pms[0]["spec"]
            sel = pm["selector"]["matchLabels"]
            labels = tmpl["metadata"]["labels"]
            if any(labels.get(k) != v for k, v in sel.items()):
                err(f"{variant}: the PodMonitor selector does not match the pod labels")
            eps = pm.get("podMetricsEndpoints", [])
            if not eps or ports.get(eps[0].get("port")) != port or eps[0].get("path") != "/metrics":
                err(f"{variant}: the PodMonitor must scrape /metrics on port {port}")
        # token/: the Secret read only at 0400 (the daemon refuses more), --token-file on it,
        # a headless Service and a NetworkPolicy on the daemon's port
        labels = tmpl["metadata"]["labels"]
        vols = {v["name"]: v for v in pod.get("volumes", [])}
        sec = vols.get("token", {}).get("secret", {})
        if sec.get("secretName") != "rankscope-token" or sec.get("defaultMode") != 0o400:
            err(f"{variant}: the token volume must be Secret rankscope-token, defaultMode 0400")
        mnt = {m["name"]: m for m in c.get("volumeMounts", [])}.get("token", {})
        if not mnt.get("readOnly") or \
           f"--token-file={mnt.get('mountPath')}/token" not in args:
            err(f"{variant}: --token-file must name the read-only token mount")
        svc = next((x for x in kinds.get("Service", []) if x["metadata"]["name"] == "rankscope"),
                   {}).get("spec", {})
        if svc.get("clusterIP") != "None" or \
           any(labels.get(k) != v for k, v in svc.get("selector", {}).items()) or \
           [p.get("port") for p in svc.get("ports", [])] != [port]:
            err(f"{variant}: the Service must be headless, select the pods, on port {port}")
        np = kinds.get("NetworkPolicy", [{}])[0].get("spec", {})
        nports = [p.get("port") for r in np.get("ingress", []) for p in r.get("ports", [])]
        if np.get("podSelector", {}).get("matchLabels", {}).items() - labels.items() or \
           nports != [port] or len(np.get("ingress", [{}])[0].get("from", [])) != 2:
            err(f"{variant}: the NetworkPolicy must let Prometheus and the hub reach port {port}")
        # hub/: a Deployment without privileges that polls the headless Service, its token
        # from the same Secret, its /healthz probed on its own port; the NetworkPolicy lets it in
        hubs = kinds.get("Deployment", [])
        if len(hubs) != 1:
            err(f"{variant}: expected one hub Deployment, found {len(hubs)}")
        else:
            hp = hubs[0]["spec"]["template"]["spec"]
            hl = hubs[0]["spec"]["template"]["metadata"]["labels"]
            hc = hp["containers"][0]
            ha = hc.get("args", [])
            hport = {p.get("name"): p["containerPort"] for p in hc.get("ports", [])}
            hlisten = [a.split("=", 1)[1] for a in ha if a.startswith("--listen=")]
            if ha[:1] != ["hub"] or \
               f"--peers=rankscope.{ns['metadata']['name']}.svc:{port}" not in ha:
                err(f"{variant}: the hub must run `hub --peers=rankscope.NS.svc:{port}`")
            if len(hlisten) != 1 or int(hlisten[0].rsplit(":", 1)[1]) not in hport.values():
                err(f"{variant}: the hub's --listen port must be its containerPort")
            for probe in ("readinessProbe", "livenessProbe"):
                g = hc.get(probe, {}).get("httpGet", {})
                if g.get("path") != "/healthz" or hport.get(g.get("port"), g.get("port")) \
                   not in hport.values():
                    err(f"{variant}: the hub's {probe} must be httpGet /healthz on its port")
            sc = hc.get("securityContext", {})
            if hp.get("hostPID") or hp.get("hostNetwork") or sc.get("privileged") or \
               sc.get("allowPrivilegeEscalation") is not False or \
               sc.get("capabilities", {}).get("drop") != ["ALL"]:
                err(f"{variant}: the hub needs no privileges: no hostPID/hostNetwork, "
                    "capabilities dropped, no privilege escalation")
            hv = {v["name"]: v for v in hp.get("volumes", [])}.get("token", {}).get("secret", {})
            hm = {m["name"]: m for m in hc.get("volumeMounts", [])}.get("token", {})
            if hv.get("secretName") != "rankscope-token" or hv.get("defaultMode") != 0o400 or \
               f"--token-file={hm.get('mountPath')}/token" not in ha:
                err(f"{variant}: the hub's --token-file must name Secret rankscope-token (0400)")
            froms = [f.get("podSelector", {}).get("matchLabels", {})
                     for r in np.get("ingress", []) for f in r.get("from", [])]
            if not any(f and not (f.items() - hl.items()) for f in froms):
                err(f"{variant}: the NetworkPolicy does not let the hub's pods in")
    if not errs:
        print(f"  {variant}: ok ({', '.join(sorted(kinds))})")
sys.exit(1 if errs else 0)
EOF
		checked+=(manifests)
	else
		bad "DaemonSet structure"
	fi
elif [ "$HAVE_PYYAML" = 0 ]; then
	note "python3's yaml module is not installed (apt-get install python3-yaml): the" \
	     "manifests' structure is not checked"
fi

# --- the Grafana dashboard ---
D=deploy/grafana/rankscope.json
echo "== $D"
if have jq && ! jq empty "$D"; then
	bad "$D is not valid JSON (jq)"
fi
if ! have promtool; then
	note "promtool is not installed (apt-get install prometheus): dashboard PromQL not checked"
elif python3 - "$D" "$T/dashboard_rules.yaml" <<'EOF'; then
import json, re, sys

errs = []
def err(msg):
    errs.append(msg)
    print("  FAIL: " + msg)

d = json.load(open(sys.argv[1]))
DS = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
if d.get("schemaVersion", 0) < 36:
    err(f"schemaVersion {d.get('schemaVersion')} is older than Grafana 9's 36")
tvars = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
if tvars.get("DS_PROMETHEUS", {}).get("type") != "datasource" or \
        tvars["DS_PROMETHEUS"].get("query") != "prometheus":
    err("no DS_PROMETHEUS datasource variable of type prometheus")

exprs = []   # (where, PromQL)
for name in ("job_id", "rank"):
    v = tvars.get(name)
    q = v.get("query") if v else None
    q = q.get("query") if isinstance(q, dict) else q
    m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", q or "")
    if not v or v.get("type") != "query" or not m or m.group(2) != name:
        err(f"variable {name} must be a query label_values(..., {name})")
    else:
        if v.get("datasource") != DS:
            err(f"variable {name} does not use ${{DS_PROMETHEUS}}")
        exprs.append((f"variable {name}", m.group(1)))

def walk(panels):
    for p in panels:
        yield p
        yield from walk(p.get("panels", []))

ids = set()
npanels = 0
for p in walk(d.get("panels", [])):
    if p["id"] in ids:
        err(f"panel id {p['id']} used twice")
    ids.add(p["id"])
    if p["type"] == "row":
        continue
    npanels += 1
    where = f"panel {p['id']} '{p.get('title')}'"
    if p.get("datasource") != DS:
        err(f"{where}: datasource is not ${{DS_PROMETHEUS}}")
    if not p.get("targets"):
        err(f"{where}: no targets")
    for t in p.get("targets", []):
        if t.get("datasource", DS) != DS:
            err(f"{where}: target {t.get('refId')} datasource is not ${{DS_PROMETHEUS}}")
        if not t.get("expr", "").strip():
            err(f"{where}: target {t.get('refId')} has no expr")
        else:
            exprs.append((f"{where} {t['refId']}", t["expr"]))

# Grafana's variables, as plain values promtool can parse.
SUBST = [(r"\$__rate_interval|\$\{__rate_interval\}", "5m"),
         (r"\$__interval|\$\{__interval\}", "1m"),
         (r"\$__range|\$\{__range\}", "1h"),
         (r"\$\{?job_id(:\w+)?\}?", "job"),
         (r"\$\{?rank(:\w+)?\}?", "0")]
rules = []
for i, (where, e) in enumerate(exprs):
    for pat, val in SUBST:
        e = re.sub(pat, val, e)
    if "$" in e:
        err(f"{where}: unknown Grafana variable left in: {e}")
    rules.append({"record": f"grafana:expr_{i}", "expr": e,
                  "labels": {"where": where}})
# JSON is YAML: promtool reads this as a rules file.
json.dump({"groups": [{"name": "grafana-dashboard", "rules": rules}]},
          open(sys.argv[2], "w"), indent=1)

# Metric names the dashboard reads that user/ does not export: a panel that would stay empty.
import glob
src = "".join(open(f).read() for f in glob.glob("user/*/*.c"))
names = set()
for _, e in exprs:
    for n in re.findall(r"\b((?:train|nccl|rankscope|checkpoint)_[a-z0-9_]+)", e):
        names.add(re.sub(r"_(bucket|count|sum)$", "", n))
missing = sorted(n for n in names if f'"{n}"' not in src)
if missing:
    print("the dashboard reads metrics user/ does not export: " + ", ".join(missing))
    errs.append("dashboard metrics not exported")
print(f"  {npanels} panels, {len(exprs)} PromQL expressions")
sys.exit(1 if errs else 0)
EOF
	echo "== promtool check rules (the dashboard's expressions)"
	if promtool check rules "$T/dashboard_rules.yaml"; then
		checked+=(dashboard)
	else
		bad "a dashboard expression does not parse"
	fi
else
	bad "dashboard structure"
fi

# --- the Dockerfile ---
F=deploy/Dockerfile
echo "== $F"
froms=$(grep -Ec '^FROM[[:space:]]' "$F")
bookworm=$(grep -Ec '^FROM[[:space:]]+debian:bookworm(-slim)?([[:space:]]|$)' "$F")
[ "$froms" -ge 2 ] || bad "$F: $froms FROM stage(s), expected a build and a runtime stage"
[ "$froms" = "$bookworm" ] || bad "$F: every stage must be FROM debian:bookworm[-slim]"
grep -Eq '^FROM[[:space:]]+debian:bookworm-slim([[:space:]]|$)' <(grep -E '^FROM' "$F" | tail -1) ||
	bad "$F: the runtime (last) stage must be debian:bookworm-slim"
grep -Eq '^RUN .*make( -j[^ ]*)? all$' "$F" || bad "$F: the build stage must run make all"
grep -Eq '^RUN .*make.* (check|demo|bench|fixtures)' "$F" && bad "$F: the image builds make all only"
grep -Eq '^COPY --from=[a-z]+ /src/build/rankscope /usr/local/bin/rankscope$' "$F" ||
	bad "$F: the runtime stage must copy build/rankscope to /usr/local/bin"
grep -Eq '^ENTRYPOINT \["/usr/local/bin/rankscope", "daemon"\]$' "$F" ||
	bad "$F: ENTRYPOINT must be rankscope daemon"
# Every library the Makefile links has its runtime package in the last stage, and its -dev
# package in the build stage (-lm and -lpthread are libc6).
runtime=$(awk '/^FROM/ { s = "" } { s = s $0 "\n" } END { printf "%s", s }' "$F")
build=$(awk '/^FROM/ { n++ } n == 1' "$F")
for l in $(sed -n 's/^LDLIBS[[:space:]]*[:+]\?=//p' Makefile); do
	case $l in
	-lbpf) rt=libbpf1 dev=libbpf-dev ;;
	-lelf) rt=libelf1 dev=libelf-dev ;;
	-ldw) rt=libdw1 dev=libdw-dev ;;
	-lz) rt=zlib1g dev=zlib1g-dev ;;
	-lmicrohttpd) rt=libmicrohttpd12 dev=libmicrohttpd-dev ;;
	-lm | -lpthread) continue ;;
	*) bad "Makefile links $l: add its packages to $F and to this map"; continue ;;
	esac
	grep -Eq "^[[:space:]]*$rt( |\\\\|$)" <<<"$runtime" || bad "$F: runtime stage lacks $rt ($l)"
	grep -Eq "^[[:space:]]*$dev( |\\\\|$)" <<<"$build" || bad "$F: build stage lacks $dev ($l)"
done
# python3.11-dev: the Makefile generates CPython's struct offsets from its headers
for tool in clang bpftool make gcc python3.11-dev; do
	grep -Eq "^[[:space:]]*$tool( |\\\\|$)" <<<"$build" || bad "$F: build stage lacks $tool"
done
for p in build .git; do
	grep -qx "$p/\?" .dockerignore 2>/dev/null || bad ".dockerignore must leave out $p"
done
if have hadolint; then
	echo "== hadolint $F"
	hadolint "$F" || bad "hadolint"
else
	note "hadolint is not installed: Dockerfile lint not run"
fi
note "the image itself is not built here (needs a container engine)"
checked+=(dockerfile)

if [ "$rc" -ne 0 ]; then
	echo "FAIL: deploy/ manifests, dashboard or Dockerfile"
	exit 1
fi
echo "PASS: ${checked[*]}"
