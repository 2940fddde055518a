#!/usr/bin/env bash
# Builds the images' base from Debian packages, with no registry: a bookworm root filesystem made
# by mmdebstrap from the mirror apt already uses (/etc/apt/sources.list.d/debian.sources, or
# DEBIAN_MIRROR), with Python 3.11, venv and ca-certificates, imported with `docker import`.
# The root filesystem is cached as a tarball under ~/.cache/stack-advisor/images/, keyed by this
# script and the package list: a second run only imports it (or finds the image).
#
# Prints the image's name on stdout (stack-advisor/debian-python:bookworm-<key>).
#
# Environment: STACK_ADVISOR_CACHE, DEBIAN_SUITE (bookworm), DEBIAN_MIRROR (a URL or a
# sources.list/.sources file; default the host's), DOCKER_HOST (see engine.sh).
set -euo pipefail

CACHE=${STACK_ADVISOR_CACHE:-$HOME/.cache/stack-advisor}
SUITE=${DEBIAN_SUITE:-bookworm}
# libstdc++6 and libgomp1: the C++ and OpenMP runtimes numpy, scipy and scikit-learn wheels link
PACKAGES="python3,python3-venv,ca-certificates,tini,libstdc++6,libgomp1"
HOST_SOURCES=/etc/apt/sources.list.d/debian.sources
if [ -z "${DEBIAN_MIRROR:-}" ]; then
  if [ -f "$HOST_SOURCES" ]; then DEBIAN_MIRROR=$HOST_SOURCES; else DEBIAN_MIRROR=http://deb.debian.org/debian; fi
fi
REPO_NAME=stack-advisor/debian-python

log() { echo "[base-image] $*" >&2; }

key=$( { cat "$0"; echo "$SUITE $PACKAGES"; [ -f "$DEBIAN_MIRROR" ] && cat "$DEBIAN_MIRROR" || echo "$DEBIAN_MIRROR"; } \
       | sha256sum | cut -c1-12)
IMAGE="$REPO_NAME:$SUITE-$key"
TARBALL="$CACHE/images/debian-$SUITE-python-$key.tar"

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "$IMAGE already imported"
  echo "$IMAGE"
  exit 0
fi

if [ ! -f "$TARBALL" ]; then
  command -v mmdebstrap >/dev/null || { log "mmdebstrap is required (apt-get install mmdebstrap)"; exit 1; }
  mkdir -p "$(dirname "$TARBALL")"
  log "mmdebstrap $SUITE ($PACKAGES) from $DEBIAN_MIRROR"
  start=$SECONDS
  # No documentation, manuals or translations; an unprivileged user 65532 (the manifests'
  # runAsUser) with /tmp as its home; apt's lists dropped.
  mmdebstrap --variant=essential --format=tar --include="$PACKAGES" \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='echo "nonroot:x:65532:65532:nonroot:/tmp:/usr/sbin/nologin" >> "$1/etc/passwd"' \
    --customize-hook='echo "nonroot:x:65532:" >> "$1/etc/group"' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    "$SUITE" "$TARBALL.tmp" "$DEBIAN_MIRROR" >&2
  mv "$TARBALL.tmp" "$TARBALL"
  log "root filesystem $(du -h "$TARBALL" | cut -f1) in $((SECONDS - start)) s: $TARBALL"
fi
log "docker import $TARBALL as $IMAGE"
docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' "$TARBALL" "$IMAGE" >/dev/null
echo "$IMAGE"
