#!/usr/bin/env bash
# Builds the CNI plugins the test node's pod network needs (bridge, host-local, loopback) from the Go
# module proxy (github.com/containernetworking/plugins), cached under
# ~/.cache/stack-advisor/cni/<version>/. Idempotent: does nothing when the binaries exist.
#
# Why these three: containerd's CRI reports the node's network ready only once a CNI config loads,
# and the kubelet keeps a node NotReady (tainted not-ready, so nothing is scheduled on it) until
# then. `bridge` gives each pod its own network namespace on a Linux bridge whose address is the
# node's, `host-local` hands out the pod addresses, `loopback` brings up each pod's `lo`. portmap
# (hostPort) is left out: no plan pod asks for a host port.
#
# Environment: CNI_PLUGINS_VERSION (default v1.9.1), STACK_ADVISOR_CACHE (default ~/.cache/stack-advisor),
# GOFLAGS (default -p=2: the build machines are shared).
set -euo pipefail

CNI_PLUGINS_VERSION=${CNI_PLUGINS_VERSION:-v1.9.1}
CACHE=${STACK_ADVISOR_CACHE:-$HOME/.cache/stack-advisor}
OUT="$CACHE/cni/$CNI_PLUGINS_VERSION"
PLUGINS="main/bridge ipam/host-local main/loopback"
export GOFLAGS=${GOFLAGS:--p=2}
export CGO_ENABLED=0

log() { echo "[cni-plugins] $*" >&2; }

missing=()
for p in $PLUGINS; do
  [ -x "$OUT/$(basename "$p")" ] || missing+=("github.com/containernetworking/plugins/plugins/$p@$CNI_PLUGINS_VERSION")
done
if [ ${#missing[@]} -eq 0 ]; then
  log "bridge, host-local, loopback $CNI_PLUGINS_VERSION already built in $OUT"
  exit 0
fi
command -v go >/dev/null || { log "go is required (https://go.dev/dl/)"; exit 1; }
mkdir -p "$OUT"
log "building ${#missing[@]} CNI plugin(s) $CNI_PLUGINS_VERSION into $OUT (go install)"
start=$SECONDS
# a temporary GOBIN, then moved: an interrupted build never leaves a half-set in the cache
tmp=$(mktemp -d "$OUT/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" go install -trimpath \
  -ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_PLUGINS_VERSION" \
  "${missing[@]}"
mv "$tmp"/* "$OUT/"
log "built in $((SECONDS - start))s: $(cd "$OUT" && echo *)"
"$OUT/bridge" --version 2>&1 | sed -n 1p >&2 || true
