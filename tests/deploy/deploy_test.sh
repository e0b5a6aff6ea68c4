#!/usr/bin/env bash
# ctest entry: the container and Kubernetes files in deploy/ stay true to the binary.
#  - the runtime image installs the Debian package of every shared library build/ridge links
#    (ldd, dpkg -S), beyond those debian:12-slim has;
#  - the build stage configures with only what it copies (CMakeLists.txt, src/);
#  - the manifests parse, and agree: the init container pulls the model the server serves, the
#    readiness probe asks /health on the served port, the Service and the InferencePool select the
#    Deployment's pods and target that port;
#  - where a Docker daemon answers, the image builds and its ridge runs (skipped otherwise).
# usage: deploy_test.sh RIDGE_BINARY. Exit 77 (skipped) without dpkg, python3 or its yaml module.
set -euo pipefail
ridge=$1
root="$(cd "$(dirname "$0")/../.." && pwd)"
command -v dpkg >/dev/null && python3 -c "import yaml" 2>/dev/null || { echo "SKIP: dpkg or python3-yaml missing"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runtime packages: the libraries the binary names (NEEDED; apt brings their own dependencies),
# resolved by ldd, by package, against the runtime stage's list.
runtime=$(sed -n '/^FROM debian:12-slim/,$p' "$root/deploy/Dockerfile" | tr -s ' \\\n' ' ')
needed=$(readelf -d "$ridge" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || fail "readelf found no NEEDED libraries in $ridge"
for name in $needed; do
  case $name in ld-linux*) continue ;; esac  # the dynamic loader (libc6), named by CUDA's static runtime
  lib=$(ldd "$ridge" | awk -v n="$name" '$1 == n { print $3 }')
  [ -n "$lib" ] || fail "ldd does not resolve $name"
  pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1) || true
  [ -n "$pkg" ] || pkg=$(dpkg -S "$lib" 2>/dev/null | head -1 | cut -d: -f1) || true
  [ -n "$pkg" ] || fail "no Debian package owns $lib"
  case $pkg in
    libc6|libgcc-s1|libstdc++6) continue ;;                    # in debian:12-slim
    libasan*|libubsan*|liblsan*|libtsan*) continue ;;          # a sanitizer build's runtime, not the image's
  esac
  [[ " $runtime " == *" $pkg "* ]] || fail "the runtime image lacks $pkg (for $lib)"
done

# The build stage: CMake configures from the files it copies, without tests and benchmarks.
mkdir -p "$tmp/src"
cp "$root/CMakeLists.txt" "$tmp/src/"
cp -r "$root/src" "$tmp/src/src"
cmake -S "$tmp/src" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRIDGE_TESTS=OFF -DRIDGE_BENCH=OFF >/dev/null ||
  fail "the Dockerfile's build stage does not configure"

python3 - "$root/deploy/k8s" <<'PY'
import sys, yaml
d = sys.argv[1]
docs = [x for f in ("ridge.yaml", "inference-pool.yaml") for x in yaml.safe_load_all(open(f"{d}/{f}")) if x]
by_kind = {x["kind"]: x for x in docs}
dep = by_kind["Deployment"]
labels = dep["spec"]["template"]["metadata"]["labels"]
assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items(), "Deployment selector"
pod = dep["spec"]["template"]["spec"]
init, main = pod["initContainers"][0], pod["containers"][0]
assert init["args"][0] == "pull", init["args"]
model = init["args"][1]
assert main["args"][0] == "serve" and main["args"][main["args"].index("-hf") + 1] == model, (main["args"], model)
port = int(main["args"][main["args"].index("--port") + 1])
assert main["ports"][0]["containerPort"] == port and main["ports"][0]["name"] == "http"
assert main["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
mounts = lambda c: {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
env = lambda c: {e["name"]: e.get("value") for e in c["env"]}
assert mounts(init) == mounts(main) and env(init)["RIDGE_MODELS"] == env(main)["RIDGE_MODELS"] == mounts(main)["models"]
assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == by_kind["PersistentVolumeClaim"]["metadata"]["name"]
svc = by_kind["Service"]
assert svc["spec"]["selector"].items() <= labels.items() and svc["spec"]["ports"][0]["targetPort"] == "http"
pool = by_kind["InferencePool"]
assert pool["spec"]["selector"]["matchLabels"].items() <= labels.items(), "InferencePool selector"
assert pool["spec"]["targetPorts"][0]["number"] == port
route = by_kind["HTTPRoute"]["spec"]["rules"][0]["backendRefs"][0]
assert route["kind"] == "InferencePool" and route["name"] == pool["metadata"]["name"]
PY

if command -v docker >/dev/null && timeout 10 docker info >/dev/null 2>&1; then
  docker build -q -f "$root/deploy/Dockerfile" -t ridge-deploy-test "$root" >/dev/null || fail "docker build"
  version=$(docker run --rm ridge-deploy-test --version) || fail "the image's ridge does not run"
  [[ "$version" == ridge* ]] || fail "the image's ridge printed '$version'"
  echo "deploy: image built and run"
else
  echo "deploy: no Docker daemon here; the image build was not tried (static checks only)"
fi
echo "deploy: OK"
