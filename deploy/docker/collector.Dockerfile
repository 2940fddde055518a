# A collector image: one CUDA/cuDNN base and one framework version per image, as a plan's
# `images:` entry declares them. Build with BuildKit (Docker >= 20.10, DOCKER_BUILDKIT=1; the
# engine's built-in Dockerfile frontend). Examples (from the repository root), where a CUDA base
# image can be pulled:
#   docker build -f deploy/docker/collector.Dockerfile \
#     --build-arg BASE_IMAGE=nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04 \
#     --build-arg FRAMEWORK=torch --build-arg TORCH_VERSION=2.5.1 \
#     --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu124 \
#     -t ghcr.io/stack-advisor/collector:torch2.5.1-cuda12.4.1-cudnn9 .
#   docker build -f deploy/docker/collector.Dockerfile \
#     --build-arg BASE_IMAGE=nvidia/cuda:12.3.2-cudnn9-runtime-ubuntu22.04 \
#     --build-arg FRAMEWORK=tensorflow --build-arg TF_VERSION=2.17.0 \
#     -t ghcr.io/stack-advisor/collector:tf2.17.0-cuda12.3.2 .
# The generic image for sweeps (`advisor sweep`: each cell's framework is installed inside the Job
# with uv, so one image serves every cell):
#   docker build -f deploy/docker/collector.Dockerfile --build-arg FRAMEWORK=none \
#     -t ghcr.io/stack-advisor/collector:sweep .
# The CPU collector with no registry (deploy/docker/build.sh): FROM the base made of Debian packages
# (deploy/docker/base-image.sh), FRAMEWORK=none (the PI suite on numpy) or FRAMEWORK=torch with
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu where that index is reachable (PyPI's torch
# wheel pulls the CUDA libraries: gigabytes), TF_BENCHMARKS_COMMIT= (empty: no tf_cnn_benchmarks,
# which needs github.com). Behind a TLS-intercepting proxy: --secret id=ca,src=<CA bundle>.
ARG BASE_IMAGE=nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04
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

ARG FRAMEWORK=torch
ARG TORCH_VERSION=2.5.1
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu124
ARG TF_VERSION=2.17.0
# tf_cnn_benchmarks (tensorflow/benchmarks, Apache-2.0): the commit the runner and the shared copy pin
ARG TF_BENCHMARKS_COMMIT=8fb79079265933ad39bea628b777af662f5bf15d
ARG EXTRAS=loadgen

# TensorFlow >= 2.16 ships Keras 3; tf_cnn_benchmarks needs Keras 2 (tf-keras of the same minor).
RUN --mount=type=secret,id=ca,required=false \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi; \
    case "$FRAMEWORK" in \
      torch) pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX_URL}" ;; \
      tensorflow) pip install --no-cache-dir "tensorflow[and-cuda]==${TF_VERSION}" \
                  && pip install --no-cache-dir --no-deps "tf-keras~=${TF_VERSION%.*}.0" ;; \
      none) ;; \
      *) echo "FRAMEWORK must be torch, tensorflow or none, got '$FRAMEWORK'" >&2; exit 1 ;; \
    esac

# tf_cnn_benchmarks at the pinned commit, where the tf-cnn runner looks first (none when
# TF_BENCHMARKS_COMMIT is empty: the tf-cnn runner then reports it missing)
RUN --mount=type=secret,id=ca,required=false \
    if [ -z "${TF_BENCHMARKS_COMMIT}" ]; then exit 0; fi; \
    if [ -s /run/secrets/ca ]; then export GIT_SSL_CAINFO=/run/secrets/ca; fi; \
    git init -q /opt/benchmarks \
 && git -C /opt/benchmarks fetch -q --depth 1 https://github.com/tensorflow/benchmarks.git "${TF_BENCHMARKS_COMMIT}" \
 && git -C /opt/benchmarks checkout -q FETCH_HEAD \
 && rm -rf /opt/benchmarks/.git \
 && test -f /opt/benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py

# The EXTRAS' dependencies (comma list of pyproject's optional-dependencies)
RUN --mount=type=secret,id=ca,required=false --mount=type=cache,target=/root/.cache/pip \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
 && python3 -c 'import sys, tomllib; extra = tomllib.load(open("/src/pyproject.toml", "rb"))["project"]["optional-dependencies"]; \
print("\n".join(d for e in sys.argv[1].split(",") if e for d in extra[e]))' "$EXTRAS" > /tmp/extras.txt \
 && if [ -s /tmp/extras.txt ]; then pip install -r /tmp/extras.txt; fi \
 && rm /tmp/extras.txt

# The source: bound from the build context (no layer of its own), installed into the venv.
RUN --mount=type=bind,target=/src,rw \
    pip install --no-cache-dir --no-deps --no-build-isolation /src && advisor --version

WORKDIR /tmp
# Numeric non-root user; the Jobs run with a read-only root filesystem and /tmp as an emptyDir
# (sweep cells' environments and uv's cache go there too; the spool under $XDG_STATE_HOME, or
# /tmp/.local/state: mount a volume there to keep it across runs).
ENV ADVISOR_SWEEP_CACHE=/tmp/stack-advisor/sweep
USER 65532:65532
ENTRYPOINT []
CMD ["advisor", "collect", "--help"]
