#!/usr/bin/env bash
# The rest of deploy/: the Kubernetes manifests, the Dockerfile and the Grafana dashboard.
#   - yamllint over deploy/ with deploy/.yamllint, when yamllint is installed;
#   - the manifests render with `kubectl kustomize` (with and without the privileged/,
#     gpu-only/, networkpolicy/, prometheus-operator/, token/, hub/, tracefs/ and k8s-pods/
#     components,
#     and the cupti-inject/ component on examples/cupti-job/), when kubectl is installed.
#     `kubectl apply --dry-run=client` is no use here: it asks an API server for its resource
#     types and fails without a cluster, and no kind or k3s cluster is available to the tests:
#     what is checked is structure, not admission. Without kubectl, the files
#     kustomization.yaml lists are read as they are;
#   - the DaemonSet's structure (python3 and its yaml module): hostPID, the exact capabilities
#     with a comment each, the host paths and their mounts (no bpffs; tracefs only with
#     tracefs/), /healthz startup, readiness and liveness probes, requests and limits, the
#     listen address and the API on loopback (--api-listen), tolerations for every NoSchedule
#     and NoExecute taint, the amd64 nodeSelector, gpu-only/'s three GPU labels, NODE_NAME,
#     FallbackToLogsOnError, seLinuxOptions spc_t, a fleet rollout (a percentage without
#     surge, or OnDelete) with the choice explained, and the scrape annotations;
#   - k8s-pods/: absent from the default install; with it, --k8s-pods on a kubectl proxy
#     native sidecar bound to loopback (not hostNetwork), its port the URL's and nobody
#     else's, hosts, paths and methods narrowed (each regex tried on what it must and must
#     not let through), non-root, read-only, no capabilities, small resources, the API token
#     as a projected volume in the sidecar alone, and RBAC of get and list on core pods only,
#     bound to the rankscope service account;
#   - the training Job that cupti-inject/ patches: an init container copying the library into
#     an emptyDir, CUDA_INJECTION64_PATH in it, the socket through a claim, and nothing the
#     "baseline" Pod Security standard refuses;
#   - the dashboard is valid JSON, uses ${DS_PROMETHEUS} everywhere, and every PromQL
#     expression in it (panel targets and the selectors of its variables) passes
#     `promtool check rules`, with the Grafana variables replaced by plain values;
#   - the Dockerfile: two or more stages on debian:bookworm, `make all` only, a runtime
#     package for every library the Makefile links; hadolint when installed. Dockerfile.cupti:
#     a CUDA devel build stage that builds only the library, a busybox runtime stage with the
#     library alone, not root.
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
	comps="privileged gpu-only networkpolicy prometheus-operator token hub tracefs k8s-pods"
	printf 'components:\n' >>"$T/k/kustomization.yaml"
	for c in $comps; do
		[ -f "$K/$c/kustomization.yaml" ] || bad "$K/$c: no such component"
		printf '  - %s\n' "$c" >>"$T/k/kustomization.yaml"
	done
	echo "== kubectl kustomize $K with components ${comps// /, }"
	if kubectl kustomize "$T/k" >"$T/components.yaml"; then
		rendered+=("components=$T/components.yaml")
	else
		bad "kubectl kustomize with the components"
	fi
	echo "== kubectl kustomize $K/examples/cupti-job (the cupti-inject component)"
	if kubectl kustomize "$K/examples/cupti-job" >"$T/cupti.yaml"; then
		rendered+=("cupti=$T/cupti.yaml")
	else
		bad "kubectl kustomize $K/examples/cupti-job"
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
import os, re, sys, yaml

errs = []
def err(msg):
    errs.append(msg)
    print("  FAIL: " + msg)

CAPS = {"BPF", "PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH", "SYS_RESOURCE", "CHECKPOINT_RESTORE"}
HOST = {  # host path: (hostPath type, mounted read only)
    "/sys/kernel/btf": ("Directory", True),
    "/run/rankscope": ("DirectoryOrCreate", None),
}
# Nothing pins maps (no bpffs); tracefs only through tracefs/, for kernels without the uprobe
# PMU, and writable there (legacy uprobes are made by writing uprobe_events).
UNUSED_HOST = ("/sys/fs/bpf",)
TRACEFS = "/sys/kernel/tracing"
GPU_LABELS = {  # gpu-only/: one nodeSelectorTerm each (ORed)
    ("nvidia.com/gpu.present", "In", ("true",)),
    ("cloud.google.com/gke-accelerator", "Exists", ()),
    ("feature.node.kubernetes.io/pci-10de.present", "In", ("true",)),
}
# Pod Security "baseline": what a training pod must not have (the checks that apply here)
BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                 "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

def loopback(addr):
    host = addr.rsplit(":", 1)[0].strip("[]")
    return host.startswith("127.") or host == "::1" or host == "localhost"

def baseline_refuses(pod):
    """What in a pod spec the baseline Pod Security standard refuses (its checks that can
    apply to a training pod)."""
    why = []
    for k in ("hostPID", "hostIPC", "hostNetwork"):
        if pod.get(k):
            why.append(k)
    for v in pod.get("volumes", []):
        if "hostPath" in v:
            why.append(f"hostPath volume {v['name']}")
    for c in pod.get("containers", []) + pod.get("initContainers", []):
        sc = c.get("securityContext", {})
        if sc.get("privileged"):
            why.append(f"{c['name']}: privileged")
        extra = set(sc.get("capabilities", {}).get("add", [])) - BASELINE_CAPS
        if extra:
            why.append(f"{c['name']}: capabilities {sorted(extra)}")
        for prof in ("seccompProfile", "appArmorProfile"):
            if sc.get(prof, {}).get("type") == "Unconfined":
                why.append(f"{c['name']}: {prof} Unconfined")
        if sc.get("seLinuxOptions", {}).get("type") not in (None, "container_t",
                                                            "container_init_t",
                                                            "container_kvm_t"):
            why.append(f"{c['name']}: seLinuxOptions type")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            why.append(f"{c['name']}: hostPort")
        if sc.get("procMount", "Default") != "Default":
            why.append(f"{c['name']}: procMount")
    return why

def check_cupti(variant, kinds):
    """The training Job cupti-inject/ patched (examples/cupti-job)."""
    jobs = kinds.get("Job", [])
    if len(jobs) != 1:
        err(f"{variant}: expected one Job, found {len(jobs)}")
        return
    pod = jobs[0]["spec"]["template"]["spec"]
    ns = kinds.get("Namespace", [{}])[0].get("metadata", {})
    if ns.get("labels", {}).get("pod-security.kubernetes.io/enforce") != "baseline":
        err(f"{variant}: the example namespace must enforce baseline (what is claimed)")
    why = baseline_refuses(pod)
    if why:
        err(f"{variant}: the baseline Pod Security standard refuses the training pod: "
            + ", ".join(why))
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    inits = pod.get("initContainers", [])
    init = next((c for c in inits if c["name"] == "rankscope-cupti"), None)
    if not init or not init.get("image", "").startswith("rankscope-cupti"):
        err(f"{variant}: no init container rankscope-cupti from the rankscope-cupti image")
        return
    imnt = init.get("volumeMounts", [])
    if len(imnt) != 1 or "emptyDir" not in vols.get(imnt[0]["name"], {}) or \
            imnt[0].get("readOnly") or init.get("args") != [imnt[0]["mountPath"].rstrip("/") + "/"]:
        err(f"{variant}: the init container must copy into its one emptyDir mount (args: it)")
        return
    lib_vol = imnt[0]["name"]
    isc = init.get("securityContext", {})
    if not isc.get("runAsNonRoot") or isc.get("allowPrivilegeEscalation") is not False or \
            isc.get("capabilities", {}).get("drop") != ["ALL"]:
        err(f"{variant}: the init container copies a file: non-root, no privileges")
    if len(pod["containers"]) != 1:
        err(f"{variant}: the patch added a container (its name is not the Job's): "
            f"{[c['name'] for c in pod['containers']]}")
        return
    c = pod["containers"][0]
    if not c.get("image"):
        err(f"{variant}: the training container has no image")
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    mnts = {m["name"]: m for m in c.get("volumeMounts", [])}
    lm = mnts.get(lib_vol)
    inj = env.get("CUDA_INJECTION64_PATH") or ""
    if not lm or not lm.get("readOnly") or \
            inj != lm["mountPath"].rstrip("/") + "/librankscope_cupti.so":
        err(f"{variant}: CUDA_INJECTION64_PATH must name librankscope_cupti.so in the "
            "emptyDir, mounted read only")
    sock_dir = os.path.dirname(env.get("RANKSCOPE_CUPTI_SOCKET") or
                               "/run/rankscope/cupti/cupti.sock")
    sm = next((m for m in c.get("volumeMounts", []) if m["mountPath"] == sock_dir), None)
    claim = vols.get(sm["name"], {}).get("persistentVolumeClaim", {}) if sm else {}
    if not sm or not sm.get("readOnly") or not claim.get("readOnly"):
        err(f"{variant}: the socket directory {sock_dir} must be a claim, mounted read only")
        return
    pvcs = [x for x in kinds.get("PersistentVolumeClaim", [])
            if x["metadata"]["name"] == claim.get("claimName")]
    if len(pvcs) != 1 or pvcs[0]["spec"].get("storageClassName") != "" or \
            pvcs[0]["spec"].get("accessModes") != ["ReadOnlyMany"]:
        err(f"{variant}: the claim {claim.get('claimName')} must be in the output, "
            "ReadOnlyMany, storageClassName \"\" (bound to the admin's hostPath volume)")
    pv = [x for x in yaml.safe_load_all(open("deploy/kubernetes/cupti-inject/socket-pv.yaml"))
          if x]
    hp = pv[0]["spec"].get("hostPath", {}) if len(pv) == 1 else {}
    ref = pv[0]["spec"].get("claimRef", {}) if len(pv) == 1 else {}
    if hp.get("path") != "/run/rankscope/cupti" or ref.get("name") != claim.get("claimName") \
            or pv[0]["spec"].get("storageClassName") != "" or \
            pv[0]["spec"].get("accessModes") != ["ReadOnlyMany"]:
        err("socket-pv.yaml: a hostPath PersistentVolume of /run/rankscope/cupti, "
            "pre-bound to the claim, ReadOnlyMany, no storage class")
    if not errs:
        print(f"  {variant}: ok ({', '.join(sorted(kinds))}; the pod passes baseline)")

# k8s-pods/: the kubectl proxy sidecar and what it may do
PROXY_TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# (pattern flag, texts it must match, texts it must not): Go's RE2 and Python's re agree on
# these anchored patterns
PROXY_FILTERS = {
    "--accept-hosts": (["127.0.0.1", "localhost"],
                       ["10.0.0.7", "rankscope.rankscope.svc", "127.0.0.1.evil.example",
                        "evil.localhost", "127.0.0.10", ""]),
    "--accept-paths": (["/api/v1/pods"],
                       ["/api/v1/secrets", "/api/v1/namespaces/x/pods/y/exec",
                        "/api/v1/namespaces/x/pods/y/log", "/api/v1/pods/../secrets",
                        "/apis/apps/v1/daemonsets", "/api/v1/podsx", "/"]),
    "--reject-methods": (["POST", "PUT", "PATCH", "DELETE"], ["GET"]),
}

def check_k8s_pods(variant, kinds, pod, c, port, aport):
    """k8s-pods/: absent from base; elsewhere a loopback kubectl proxy with the only token."""
    args = c.get("args", [])
    want = [a.split("=", 1)[1] for a in args if a.startswith("--k8s-pods=")]
    inits = pod.get("initContainers", [])
    proxies = [x for x in inits if x.get("name") == "kubectl-proxy"]
    roles = kinds.get("ClusterRole", []) + kinds.get("Role", [])
    binds = kinds.get("ClusterRoleBinding", []) + kinds.get("RoleBinding", [])
    if pod.get("automountServiceAccountToken") is not False:
        err(f"{variant}: automountServiceAccountToken must stay false (the daemon holds BPF; "
            "only the k8s-pods/ sidecar gets a token)")
    for x in pod["containers"] + [x for x in inits if x.get("name") != "kubectl-proxy"]:
        for m in x.get("volumeMounts", []):
            if m["mountPath"].rstrip("/").startswith("/var/run/secrets") or \
                    m["mountPath"].rstrip("/").startswith("/run/secrets"):
                err(f"{variant}: {x['name']} mounts {m['mountPath']}: no token but the sidecar's")
    if variant == "base":
        if want or inits or roles or binds:
            err("base: --k8s-pods, init containers and RBAC come only with k8s-pods/")
        return
    if len(want) != 1 or len(proxies) != 1:
        err(f"{variant}: k8s-pods/ needs one --k8s-pods=URL and one kubectl-proxy sidecar")
        return
    m = re.fullmatch(r"http://127\.0\.0\.1:([0-9]+)", want[0])
    if not m:
        err(f"{variant}: --k8s-pods={want[0]} must be http://127.0.0.1:PORT (a bare host: the "
            "daemon then lists this node's pods only)")
        return
    pport = int(m.group(1))
    if pod.get("hostNetwork"):
        err(f"{variant}: the kubectl proxy on loopback with hostNetwork is every host "
            "process's: k8s-pods/ needs the pod network")
    px = proxies[0]
    if px.get("restartPolicy") != "Always":
        err(f"{variant}: kubectl-proxy must be a native sidecar (restartPolicy: Always), so "
            "that the daemon starts after it")
    img = px.get("image", "")
    if not re.fullmatch(r"registry\.k8s\.io/kubectl:v1\.[0-9]+\.[0-9]+", img):
        err(f"{variant}: the sidecar image {img!r} must be registry.k8s.io/kubectl at a "
            "pinned v1.X.Y")
    pa = px.get("args", [])
    opts = {}
    for a in pa[1:]:
        k, eq, v = a.partition("=")
        if not k.startswith("--") or not eq or k in opts:
            err(f"{variant}: sidecar argument {a!r}: one --flag=value each")
        opts[k] = v
    if px.get("command") or pa[:1] != ["proxy"]:
        err(f"{variant}: the sidecar runs the image's kubectl with `proxy` (no command)")
    if opts.get("--address") != "127.0.0.1" or opts.get("--port") != str(pport):
        err(f"{variant}: kubectl proxy must listen on 127.0.0.1:{pport}, --k8s-pods' port")
    if pport in (port, aport) or any(p.get("containerPort") == pport or p.get("hostPort")
                                     for x in pod["containers"] + inits
                                     for p in x.get("ports", [])):
        err(f"{variant}: port {pport} must be the proxy's alone, and no containerPort")
    if px.get("ports"):
        err(f"{variant}: the sidecar exposes no port beyond loopback")
    for flag, (yes, no) in PROXY_FILTERS.items():
        pat = opts.get(flag)
        if pat is None or "," in pat:
            err(f"{variant}: the sidecar needs one {flag}=REGEX")
            continue
        rx = re.compile(pat)
        bad = [t for t in yes if not rx.search(t)] + [t for t in no if rx.search(t)]
        if bad:
            err(f"{variant}: {flag}={pat} is wrong for {bad}")
    for k in ("--disable-filter", "--www", "--unix-socket", "--reject-paths"):
        if k in opts:
            err(f"{variant}: the sidecar must not set {k}")
    # the kubelet's own probes reach the pod IP only: from inside, through the proxy
    g = px.get("startupProbe", {}).get("exec", {}).get("command", [])
    if not g or not g[0].endswith("kubectl") or f"--server=http://127.0.0.1:{pport}" not in g \
            or not any(x.startswith("--raw=/api/v1/pods?") for x in g) or \
            any(x.startswith(("--kubeconfig", "--token")) for x in g):
        err(f"{variant}: the sidecar's startupProbe must be kubectl get --raw=/api/v1/pods?... "
            f"through --server=http://127.0.0.1:{pport}, without credentials of its own")
    sc = px.get("securityContext", {})
    if sc.get("runAsNonRoot") is not True or not sc.get("runAsUser") or \
            sc.get("allowPrivilegeEscalation") is not False or sc.get("privileged") or \
            sc.get("readOnlyRootFilesystem") is not True or \
            sc.get("capabilities", {}).get("drop") != ["ALL"] or \
            sc.get("capabilities", {}).get("add") or \
            sc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        err(f"{variant}: the sidecar must be non-root, read only, without capabilities, "
            "privileges or escalation, under RuntimeDefault seccomp")
    res = px.get("resources", {})
    try:
        if qty(res["requests"]["cpu"]) > qty(res["limits"]["cpu"]) or \
                qty(res["requests"]["memory"]) > qty(res["limits"]["memory"]) or \
                qty(res["limits"]["memory"]) > 256 * 2**20 or qty(res["limits"]["cpu"]) > 0.5:
            err(f"{variant}: the sidecar's resources must be small (0.5 CPU, 256Mi at most), "
                "requests not above limits")
    except (KeyError, ValueError) as e:
        err(f"{variant}: the sidecar needs cpu and memory requests and limits ({e})")
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mnts = [mm for mm in px.get("volumeMounts", [])
            if mm["mountPath"].rstrip("/") == PROXY_TOKEN_DIR]
    proj = vols.get(mnts[0]["name"], {}).get("projected", {}) if mnts else {}
    src = {k: v for s_ in proj.get("sources", []) for k, v in s_.items()}
    sat = src.get("serviceAccountToken", {})
    if len(mnts) != 1 or not mnts[0].get("readOnly") or sat.get("path") != "token" or \
            not 600 <= sat.get("expirationSeconds", 3600) <= 86400 or sat.get("audience") or \
            src.get("configMap", {}).get("name") != "kube-root-ca.crt" or \
            [i.get("path") for i in src.get("downwardAPI", {}).get("items", [])] != ["namespace"]:
        err(f"{variant}: the sidecar needs a projected token (token, kube-root-ca.crt's "
            f"ca.crt, namespace) mounted read only at {PROXY_TOKEN_DIR}")
    elif len(px.get("volumeMounts", [])) != 1:
        err(f"{variant}: the sidecar mounts its token and nothing else")
    # RBAC: read pods, nothing more, for this service account alone
    sa = kinds["ServiceAccount"][0]["metadata"]
    if len(roles) != 1 or roles[0]["kind"] != "ClusterRole" or roles[0].get("aggregationRule"):
        err(f"{variant}: k8s-pods/ brings one ClusterRole, not {[r['kind'] for r in roles]}")
        return
    rules = roles[0].get("rules", [])
    if len(rules) != 1 or rules[0].get("apiGroups") != [""] or \
            rules[0].get("resources") != ["pods"] or \
            sorted(rules[0].get("verbs", [])) != ["get", "list"] or \
            set(rules[0]) - {"apiGroups", "resources", "verbs"}:
        err(f"{variant}: the ClusterRole must allow get and list on core pods only: {rules}")
    if len(binds) != 1 or binds[0]["kind"] != "ClusterRoleBinding" or \
            binds[0].get("roleRef") != {"apiGroup": "rbac.authorization.k8s.io",
                                        "kind": "ClusterRole",
                                        "name": roles[0]["metadata"]["name"]} or \
            binds[0].get("subjects") != [{"kind": "ServiceAccount", "name": sa["name"],
                                          "namespace": sa["namespace"]}]:
        err(f"{variant}: one ClusterRoleBinding of that role to ServiceAccount "
            f"{sa['namespace']}/{sa['name']} alone")
    if pod.get("serviceAccountName") != sa["name"]:
        err(f"{variant}: the pod's service account must be the bound one")

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
# The rollout choice is explained where it is made, the alternative named.
text = "\n".join(src)
m = re.search(r"((?:^ *#.*\n)+) *updateStrategy:", text, re.M)
if not m or "OnDelete" not in m.group(1) or "percent" not in m.group(1).lower():
    err(f"{sys.argv[1]}: updateStrategy needs a comment above it explaining the choice and "
        "naming OnDelete")

for arg in sys.argv[2:]:
    variant, _, path = arg.partition("=")
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    kinds = {}
    for d in docs:
        kinds.setdefault(d["kind"], []).append(d)
    if variant == "cupti":
        check_cupti(variant, kinds)
        continue
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
    # The API (POST /api/v1/capture included) never on the pod network without a token: on
    # loopback through --api-listen, its own port, not a containerPort
    api = [a.split("=", 1)[1] for a in args if a.startswith("--api-listen=")]
    token = any(a.startswith("--token-file=") for a in args)
    if len(api) != 1 or not loopback(api[0]):
        err(f"{variant}: args need one --api-listen=127.0.0.1:PORT (the API on loopback)")
    else:
        aport = int(api[0].rsplit(":", 1)[1])
        if aport == port or aport in ports.values():
            err(f"{variant}: --api-listen's port {aport} must be its own, and no containerPort")
    check_k8s_pods(variant, kinds, pod, c, port,
                   int(api[0].rsplit(":", 1)[1]) if len(api) == 1 else None)
    if not loopback(listen[0]) and not token:
        print(f"  {variant}: --listen={listen[0]} without a token serves /metrics and /healthz "
              "only; the API is on " + (api[0] if api else "nothing"))
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        g = c.get(probe, {}).get("httpGet", {})
        pp = ports.get(g.get("port"), g.get("port"))
        if g.get("path") != "/healthz" or pp != port:
            err(f"{variant}: {probe} must be httpGet /healthz on port {port}")
    st = c.get("startupProbe", {})
    if st.get("periodSeconds", 10) * st.get("failureThreshold", 3) < 120:
        err(f"{variant}: the startupProbe must allow 2 minutes or more (a first attach)")
    for probe in ("readinessProbe", "livenessProbe"):
        if c.get(probe, {}).get("initialDelaySeconds"):
            err(f"{variant}: {probe} waits for the startupProbe, not initialDelaySeconds")
    if c.get("terminationMessagePolicy") != "FallbackToLogsOnError":
        err(f"{variant}: terminationMessagePolicy must be FallbackToLogsOnError")
    env = [e for e in c.get("env", []) if e.get("name") == "NODE_NAME"]
    if len(env) != 1 or env[0].get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") \
            != "spec.nodeName":
        err(f"{variant}: env NODE_NAME must come from fieldRef spec.nodeName")
    # GPU pools' taints: every NoSchedule and NoExecute one, whatever its key
    tols = pod.get("tolerations", [])
    for effect in ("NoSchedule", "NoExecute"):
        if not any(t.get("operator") == "Exists" and not t.get("key") and
                   t.get("effect") == effect for t in tols):
            err(f"{variant}: tolerations need {{operator: Exists, effect: {effect}}} (no key)")
    if pod.get("nodeSelector", {}).get("kubernetes.io/arch") != "amd64":
        err(f"{variant}: nodeSelector kubernetes.io/arch: amd64 (the image is x86_64 only)")
    us = ds["spec"].get("updateStrategy", {})
    ru = us.get("rollingUpdate", {})
    if us.get("type") == "RollingUpdate":
        mu = str(ru.get("maxUnavailable", ""))
        if not re.fullmatch(r"([1-9]|[1-4][0-9]|50)%", mu) or ru.get("maxSurge", 0) not in (0, "0"):
            err(f"{variant}: a fleet rollout is maxUnavailable 1% to 50% without maxSurge "
                f"(the lock), not {mu!r}")
    elif us.get("type") != "OnDelete":
        err(f"{variant}: updateStrategy must be RollingUpdate by percentage, or OnDelete")
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
    host = dict(HOST)
    if variant == "base":
        if TRACEFS in byhost:
            err(f"base: {TRACEFS} is mounted; the uprobe PMU needs no tracefs (tracefs/ does it)")
    else:
        host[TRACEFS] = ("Directory", None)
        m = mounts.get(byhost.get(TRACEFS, ("",))[0], {})
        if m.get("readOnly"):
            err(f"{variant}: tracefs/ must mount {TRACEFS} writable (uprobe_events)")
    for hpath in UNUSED_HOST:
        if hpath in byhost:
            err(f"{variant}: hostPath {hpath} is mounted, and nothing uses it")
    for hpath, (typ, ro) in host.items():
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
    if sc.get("seLinuxOptions", {}).get("type") != "spc_t":
        err(f"{variant}: securityContext.seLinuxOptions.type must be spc_t (SELinux nodes)")
    if variant == "base":
        if pod.get("affinity"):
            err("base: no affinity by default (gpu-only/ adds it)")
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
        # gpu-only/: GPU nodes by any of the three labels, each its own (ORed) term
        terms = pod.get("affinity", {}).get("nodeAffinity", {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
        got = set()
        for t in terms:
            ex = t.get("matchExpressions") or []
            if len(ex) != 1 or t.get("matchFields"):
                err(f"{variant}: each GPU nodeSelectorTerm holds one expression (terms are ORed)")
                continue
            got.add((ex[0].get("key"), ex[0].get("operator"), tuple(ex[0].get("values") or [])))
        if got != GPU_LABELS:
            err(f"{variant}: gpu-only/ must match exactly {sorted(GPU_LABELS)}, not {sorted(got)}")
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
# Dockerfile.cupti: the library alone, built where CUPTI's headers are, in a small image whose
# cp the init container of cupti-inject/ runs
F=deploy/Dockerfile.cupti
echo "== $F"
stages=$(grep -Ec '^FROM[[:space:]]' "$F")
[ "$stages" = 2 ] || bad "$F: $stages FROM stage(s), expected a build and a runtime stage"
grep -Eq '^ARG CUDA_VERSION=[0-9]+\.[0-9]+\.[0-9]+$' "$F" ||
	bad "$F: ARG CUDA_VERSION=X.Y.Z (the oldest CUDA the jobs run) before the first FROM"
grep -E '^FROM' "$F" | head -1 | grep -Eq '^FROM nvidia/cuda:\$\{CUDA_VERSION\}-devel-[a-z]+[0-9.]+ AS build$' ||
	bad "$F: the build stage must be nvidia/cuda:\${CUDA_VERSION}-devel-DISTRO AS build (CUPTI's headers)"
grep -E '^FROM' "$F" | tail -1 | grep -Eq '^FROM busybox:[0-9]+\.[0-9]+\.[0-9]+$' ||
	bad "$F: the runtime stage must be a pinned busybox (the library and a cp)"
grep -Eq '^RUN make CUDA_HOME=[^ ]+ build/librankscope_cupti\.so$' "$F" ||
	bad "$F: the build stage must make build/librankscope_cupti.so only"
grep -Eq '^COPY --from=build /src/build/librankscope_cupti\.so /opt/rankscope/librankscope_cupti\.so$' "$F" ||
	bad "$F: the runtime stage must hold the library at /opt/rankscope/librankscope_cupti.so"
[ "$(grep -Ec '^COPY' <(awk '/^FROM/ { n++ } n == 2' "$F"))" = 1 ] ||
	bad "$F: the runtime stage copies the library and nothing else"
grep -Eq '^USER [1-9][0-9]*(:[0-9]+)?$' "$F" || bad "$F: the image must not run as root"
grep -Eq '^ENTRYPOINT \["cp", "/opt/rankscope/librankscope_cupti\.so"\]$' "$F" ||
	bad "$F: ENTRYPOINT must copy the library (the init container names the destination)"
if have hadolint; then
	hadolint "$F" || bad "hadolint $F"
fi
note "the images themselves are not built here (needs a container engine)"
checked+=(dockerfile)

if [ "$rc" -ne 0 ]; then
	echo "FAIL: deploy/ manifests, dashboard or Dockerfile"
	exit 1
fi
echo "PASS: ${checked[*]}"
