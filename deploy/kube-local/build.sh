#!/usr/bin/env bash
# Builds a real kube-apiserver and kube-controller-manager from the Go module proxy, installs etcd
# from Debian and kustomize from the Go proxy, for the Kubernetes tests (tests/kube/). Idempotent:
# does nothing when the binaries exist. Measured on a shared 2-core machine: kube-apiserver 8m39s
# from an empty Go cache (475s of it compiling), then kube-controller-manager 3m57s, kustomize 1m12s.
#
# k8s.io/kubernetes is not meant to be required as a module: its go.mod pins every k8s.io/<staging>
# module at v0.0.0 and replaces it by ./staging/src/k8s.io/<name>. We generate a throwaway go.mod
# (in the cache, never in git) that requires k8s.io/kubernetes and replaces each staging module by
# its published v0.N.P release, the list being derived from k8s.io/kubernetes' own go.mod.
#
# Environment: KUBE_VERSION (default v1.35.4), KUSTOMIZE_VERSION (v5.5.0), STACK_ADVISOR_CACHE (default ~/.cache/stack-advisor),
# GOFLAGS (default -p=2: the build machines are shared).
set -euo pipefail
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

KUBE_VERSION=${KUBE_VERSION:-v1.35.4}
KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-v5.5.0}
# kube-controller-manager runs the real Job controller in the tests (Job -> pods -> status).
KUBE_COMPONENTS=${KUBE_COMPONENTS:-kube-apiserver kube-controller-manager}
CACHE=${STACK_ADVISOR_CACHE:-$HOME/.cache/stack-advisor}
OUT="$CACHE/kube/$KUBE_VERSION"
WORK="$CACHE/kube/build-$KUBE_VERSION"
export GOFLAGS=${GOFLAGS:--p=2}
export CGO_ENABLED=0

log() { echo "[kube-local] $*" >&2; }

# The first proxy URL Go itself would use: `go env` knows the default when GOPROXY is not exported
# (a fresh machine exports nothing), and the list may hold "direct"/"off" entries (| or , separated).
module_proxy() {
  local entry
  for entry in $(go env GOPROXY | tr ',|' '  '); do
    case "$entry" in
      direct|off) ;;
      *) echo "${entry%/}"; return ;;
    esac
  done
  echo "https://proxy.golang.org"
}

ensure_etcd() {
  if command -v etcd >/dev/null 2>&1; then
    return
  fi
  log "installing etcd from Debian's etcd-server package"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq etcd-server >/dev/null
  # The package starts a system etcd on 2379; the tests run their own on loopback ports.
  $sudo systemctl disable --now etcd >/dev/null 2>&1 || true
}

build_components() {
  local missing=()
  for c in $KUBE_COMPONENTS; do
    [ -x "$OUT/$c" ] || missing+=("$c")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "$KUBE_COMPONENTS $KUBE_VERSION already built in $OUT"
    return
  fi
  command -v go >/dev/null || { log "go is required (https://go.dev/dl/)"; exit 1; }
  mkdir -p "$WORK" "$OUT"
  local minor=${KUBE_VERSION#v1.}
  minor=${minor%%.*}
  local patch=${KUBE_VERSION##*.}
  local staging_version="v0.$minor.$patch"

  log "deriving the staging module list from k8s.io/kubernetes@$KUBE_VERSION's go.mod"
  local upstream_mod
  upstream_mod=$(curl -fsSL "$(module_proxy)/k8s.io/kubernetes/@v/$KUBE_VERSION.mod")
  local staging
  staging=$(printf '%s\n' "$upstream_mod" | sed -nE 's#^\s*(k8s\.io/[a-z0-9-]+) => \./staging/.*#\1#p' | sort -u)
  if [ -z "$staging" ]; then
    log "found no staging replace directives in k8s.io/kubernetes@$KUBE_VERSION's go.mod"; exit 1
  fi
  local go_line
  go_line=$(printf '%s\n' "$upstream_mod" | sed -nE 's/^go ([0-9.]+)$/\1/p')

  {
    echo "module stackadvisor.local/kubebuild"
    echo
    echo "go $go_line"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    for m in $staging; do echo "	$m => $m $staging_version"; done
    echo ")"
  } > "$WORK/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "package kubebuild"
    echo
    echo "import ("
    for c in $KUBE_COMPONENTS; do echo "	_ \"k8s.io/kubernetes/cmd/$c\""; done
    echo ")"
  } > "$WORK/tools.go"
  cd "$WORK"
  log "resolving modules (go mod tidy)"
  go mod tidy
  local date
  date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local ldflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitCommit=module-proxy -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  for c in "${missing[@]}"; do
    log "building $c $KUBE_VERSION (GOFLAGS=$GOFLAGS; this takes a long time on 2 cores)"
    local start=$SECONDS
    go build -trimpath -ldflags "-s -w $ldflags" -o "$OUT/$c.tmp" "k8s.io/kubernetes/cmd/$c"
    mv "$OUT/$c.tmp" "$OUT/$c"
    log "built $OUT/$c in $((SECONDS - start))s"
  done
}

# The kubelet's own config validation (deploy/kube-local/kubelet-config-check), in the same module
# as the components: the tests check the KubeletConfiguration fragments the advisor emits with it.
build_kubelet_config_check() {
  local bin="$OUT/kubelet-config-check"
  if [ -x "$bin" ]; then
    return
  fi
  if [ ! -f "$WORK/go.mod" ]; then
    log "no $WORK/go.mod (the components were not built here): kubelet-config-check not built"
    return
  fi
  mkdir -p "$WORK/cmd/kubelet-config-check"
  cp "$SCRIPT_DIR/kubelet-config-check/main.go" "$WORK/cmd/kubelet-config-check/main.go"
  log "building kubelet-config-check $KUBE_VERSION"
  (cd "$WORK" && go build -mod=mod -trimpath -ldflags "-s -w" -o "$bin.tmp" ./cmd/kubelet-config-check)
  mv "$bin.tmp" "$bin"
}

ensure_kustomize() {
  local bin="$CACHE/bin"
  if [ -x "$bin/kustomize" ]; then
    return
  fi
  log "installing kustomize $KUSTOMIZE_VERSION into $bin (go install)"
  mkdir -p "$bin"
  GOBIN="$bin" go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
}

ensure_etcd
build_components
build_kubelet_config_check
ensure_kustomize
for c in $KUBE_COMPONENTS; do "$OUT/$c" --version >&2; done
etcd --version 2>&1 | sed -n 1p >&2  # sed reads all its input: no SIGPIPE under pipefail
"$CACHE/bin/kustomize" version >&2
