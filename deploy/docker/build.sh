#!/usr/bin/env bash
# Builds the API image and the CPU collector image here, with no registry pull: FROM the base made
# of Debian packages (base-image.sh), Python packages from PyPI (through the machine's CA bundle,
# handed to the build as a BuildKit secret: it stays out of the layers), host networking.
# BuildKit's layer cache (in the engine's data root, under ~/.cache/stack-advisor/docker) makes a
# rebuild after a code change re-run only the source layers. Prints each image's size and the time
# each step took.
#
# Usage: deploy/docker/build.sh            (starts our engine when needed: engine.sh)
# Environment: API_IMAGE (stack-advisor/api:dev), COLLECTOR_IMAGE (stack-advisor/collector:cpu-dev),
# COLLECTOR_FRAMEWORK (none: the PI suite on numpy; torch needs TORCH_INDEX_URL reachable, e.g.
# https://download.pytorch.org/whl/cpu), CA_BUNDLE (default $SSL_CERT_FILE or Debian's bundle).
set -euo pipefail
cd "$(dirname "$0")/../.."

API_IMAGE=${API_IMAGE:-stack-advisor/api:dev}
COLLECTOR_IMAGE=${COLLECTOR_IMAGE:-stack-advisor/collector:cpu-dev}
COLLECTOR_FRAMEWORK=${COLLECTOR_FRAMEWORK:-none}
TORCH_INDEX_URL=${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}
CA_BUNDLE=${CA_BUNDLE:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}

log() { echo "[images] $*" >&2; }

eval "$(bash deploy/docker/engine.sh)"
# One build at a time per cache (two test sessions may run this at once, scripts/test.sh): the base
# tarball and the build logs below are shared paths.
LOCK_DIR=${STACK_ADVISOR_CACHE:-$HOME/.cache/stack-advisor}/docker
mkdir -p "$LOCK_DIR"
exec 9>"$LOCK_DIR/build.lock"
flock 9
# Debian's docker CLI (20.10) carries BuildKit's client; a newer CLI without the buildx plugin
# would fall back to the legacy builder, which knows neither secrets nor cache mounts.
DOCKER=docker
if ! docker buildx version >/dev/null 2>&1 && [ -x /usr/bin/docker ]; then DOCKER=/usr/bin/docker; fi
export DOCKER_BUILDKIT=1

secret=()
if [ -s "$CA_BUNDLE" ]; then secret=(--secret "id=ca,src=$CA_BUNDLE"); fi

total=$SECONDS
start=$SECONDS
BASE=$(bash deploy/docker/base-image.sh)
log "base $BASE: $((SECONDS - start)) s"

build() {  # name, image, dockerfile, build args...
  local name=$1 image=$2 file=$3
  shift 3
  local t=$SECONDS
  $DOCKER build --network host --progress plain "${secret[@]}" --build-arg "BASE_IMAGE=$BASE" "$@" \
    -f "$file" -t "$image" . > "${BUILD_LOG_DIR:-/tmp}/stack-advisor-build-$name.log" 2>&1 \
    || { log "$name build failed; log tail:"; tail -40 "${BUILD_LOG_DIR:-/tmp}/stack-advisor-build-$name.log" >&2; exit 1; }
  log "$name $image: $((SECONDS - t)) s"
}

build api "$API_IMAGE" deploy/docker/api.Dockerfile
build collector "$COLLECTOR_IMAGE" deploy/docker/collector.Dockerfile \
  --build-arg "FRAMEWORK=$COLLECTOR_FRAMEWORK" --build-arg "TORCH_INDEX_URL=$TORCH_INDEX_URL" \
  --build-arg TF_BENCHMARKS_COMMIT=
log "all images: $((SECONDS - total)) s"
for image in "$BASE" "$API_IMAGE" "$COLLECTOR_IMAGE"; do
  docker image inspect --format "[images] size {{.Size}} bytes: $image" "$image" \
    | awk '{ printf "[images] size %.0f MB: %s\n", $3 / 1e6, $NF }' >&2
done
