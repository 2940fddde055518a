# The stack-advisor API (and the planner: `advisor plan submit` runs from this image too).
# Build from the repository root with BuildKit (Docker >= 20.10: DOCKER_BUILDKIT=1; the engine's
# built-in Dockerfile frontend, nothing pulled for it):
#   docker build -f deploy/docker/api.Dockerfile -t ghcr.io/stack-advisor/api:0.1.0 .
# With no registry at all, FROM a base made of Debian packages (deploy/docker/build.sh does this):
#   --build-arg BASE_IMAGE=$(deploy/docker/base-image.sh)
# Behind a TLS-intercepting proxy, hand pip the proxy's CA bundle as a build secret (it stays out
# of every layer):  --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

# The same first layers in the API and the collector images, so one build's dependency layer serves
# the other. A CUDA base has no Python; the Debian-packages base has it (and no apt) already.
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN if ! python3 -m venv --help >/dev/null 2>&1; then \
      apt-get update \
   && apt-get install -y --no-install-recommends python3 python3-venv python3-pip ca-certificates git \
   && rm -rf /var/lib/apt/lists/*; \
    fi
RUN python3 -m venv /opt/venv
# The dependencies first, read from pyproject.toml alone, so a code change re-runs only the last
# layer. The CA bundle (a BuildKit secret, optional) is for pip behind a TLS-intercepting proxy.
COPY pyproject.toml /src/pyproject.toml
RUN --mount=type=secret,id=ca,required=false --mount=type=cache,target=/root/.cache/pip \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
 && python3 -c 'import tomllib; print("\n".join(tomllib.load(open("/src/pyproject.toml", "rb"))["project"]["dependencies"]))' \
      > /tmp/requirements.txt \
 && /opt/venv/bin/pip install "setuptools>=77" wheel -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
# The source: bound from the build context (no layer of its own), installed into the venv.
RUN --mount=type=bind,target=/src,rw \
    pip install --no-cache-dir --no-deps --no-build-isolation /src && advisor --version

# A numeric non-root user, so runAsNonRoot can be verified by the kubelet. Everything writable
# lives under /tmp (an emptyDir in the manifests): the root filesystem can be read-only.
USER 65532:65532
WORKDIR /tmp
EXPOSE 8000
ENTRYPOINT []
CMD ["advisor", "serve", "--host", "0.0.0.0", "--port", "8000"]
