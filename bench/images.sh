#!/usr/bin/env bash
# Times the image builds (deploy/docker/build.sh) and prints the figures:
#   cold:  base + API + CPU collector from an empty cache (a Docker engine of its own with an empty
#          data root, an empty ~/.cache/stack-advisor stand-in: mmdebstrap, pip downloads, every
#          layer) — goal ≤ 10 min;
#   warm:  the same after a one-line code change (in a copy of the checkout) — goal ≤ 60 s.
# The images are tagged :bench / :cpu-bench, never the tests' :dev ones.
# Usage: bench/images.sh [cold|warm|both]   (default both; warm alone uses our usual engine)
set -euo pipefail
cd "$(dirname "$0")/.."
WHAT=${1:-both}
REPO=$PWD
SCRATCH=$(mktemp -d /tmp/sa-images-bench.XXXXXX)

copy_checkout() {  # a copy of the checkout's build inputs, so the one-line change never touches it
  mkdir -p "$SCRATCH/repo"
  tar -C "$REPO" -cf - --exclude=__pycache__ pyproject.toml README.md .dockerignore stack_advisor deploy | tar -C "$SCRATCH/repo" -xf -
}

one_line_change() {
  echo "# bench/images.sh: a one-line change $(date +%s%N)" >> "$SCRATCH/repo/stack_advisor/advisor/__init__.py"
}

timed_build() {  # label, env...
  local label=$1
  shift
  local start
  start=$(date +%s.%N)
  env API_IMAGE=stack-advisor/api:bench COLLECTOR_IMAGE=stack-advisor/collector:cpu-bench "$@" \
    bash "$SCRATCH/repo/deploy/docker/build.sh" 2> "$SCRATCH/$label.log" || { tail -30 "$SCRATCH/$label.log"; exit 1; }
  awk -v s="$start" -v e="$(date +%s.%N)" -v l="$label" 'BEGIN { printf "%-34s %6.0f s\n", l, e - s }'
  grep '\[images\]' "$SCRATCH/$label.log" | sed 's/^/    /'
}

copy_checkout
if [ "$WHAT" = cold ] || [ "$WHAT" = both ]; then
  # An engine and a cache of its own, both empty; stopped and removed afterwards.
  COLD_CACHE="$SCRATCH/cache"
  COLD_SOCK=/run/sa-images-bench/docker.sock
  cold_env=(STACK_ADVISOR_CACHE="$COLD_CACHE" STACK_ADVISOR_DOCKER_SOCK="$COLD_SOCK")
  cleanup() {
    if [ -f "$COLD_CACHE/docker/dockerd.pid" ]; then
      kill "$(cat "$COLD_CACHE/docker/dockerd.pid")" 2>/dev/null || true
      sleep 5
    fi
    rm -rf "$SCRATCH"
  }
  trap cleanup EXIT
  timed_build "cold: base + api + collector" "${cold_env[@]}"
  one_line_change
  timed_build "after a one-line change" "${cold_env[@]}"
else
  trap 'rm -rf "$SCRATCH"' EXIT
fi
if [ "$WHAT" = warm ]; then
  timed_build "warm: no change" env
  one_line_change
  timed_build "after a one-line change" env
fi
