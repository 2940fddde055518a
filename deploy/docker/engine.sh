#!/usr/bin/env bash
# Starts a Docker engine of our own for the image builds and the container tests: Debian's
# docker.io (dockerd 20.10) with its data under ~/.cache/stack-advisor/docker and its socket at
# $STACK_ADVISOR_DOCKER_SOCK (default /run/stack-advisor/docker.sock), never the machine's default
# socket, so nothing else on the machine starts using it by accident. Idempotent: does nothing
# when that socket already answers. Prints `export DOCKER_HOST=unix://...` on stdout (eval it).
#
# Installs docker.io from Debian when dockerd is missing (root or sudo). Nothing is ever pulled
# from a registry: images are built from a base made of Debian packages (base-image.sh).
#
# Environment: STACK_ADVISOR_CACHE (default ~/.cache/stack-advisor), STACK_ADVISOR_DOCKER_SOCK.
set -euo pipefail

CACHE=${STACK_ADVISOR_CACHE:-$HOME/.cache/stack-advisor}
SOCK=${STACK_ADVISOR_DOCKER_SOCK:-/run/stack-advisor/docker.sock}
ROOT="$CACHE/docker"
export DOCKER_HOST="unix://$SOCK"

log() { echo "[docker-engine] $*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

ensure_packages() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v containerd >/dev/null 2>&1 || missing+=(containerd)
  command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} from Debian"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

answers() { docker info >/dev/null 2>&1; }

start_dockerd() {
  as_root mkdir -p "$(dirname "$SOCK")" "$ROOT/data" "$ROOT/exec"
  log "starting dockerd (data root $ROOT/data, socket $SOCK; log $ROOT/dockerd.log)"
  # --iptables/--ip-masq off and no bridge: containers use the host's network (or none).
  as_root setsid dockerd --host "unix://$SOCK" --data-root "$ROOT/data" --exec-root "$ROOT/exec" \
    --pidfile "$ROOT/dockerd.pid" --storage-driver overlay2 --bridge none --iptables=false \
    --ip-masq=false --userland-proxy=false >>"$ROOT/dockerd.log" 2>&1 < /dev/null &
  local i
  for i in $(seq 1 60); do
    if answers; then return; fi
    sleep 1
  done
  log "dockerd did not answer on $SOCK in 60 s; log tail:"
  tail -20 "$ROOT/dockerd.log" >&2
  exit 1
}

ensure_packages
if ! answers; then
  start_dockerd
fi
docker version --format '[docker-engine] client {{.Client.Version}}, server {{.Server.Version}}' >&2
echo "export DOCKER_HOST=$DOCKER_HOST"
