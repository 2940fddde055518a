# A collector image: one CUDA/cuDNN base and one framework version per image, as a plan's
# `images:` entry declares them. Examples (from the repository root):
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
ARG BASE_IMAGE=nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04
FROM ${BASE_IMAGE}

ARG FRAMEWORK=torch
ARG TORCH_VERSION=2.5.1
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu124
ARG TF_VERSION=2.17.0
# tf_cnn_benchmarks (tensorflow/benchmarks, Apache-2.0): the commit the runner and the shared copy pin
ARG TF_BENCHMARKS_COMMIT=8fb79079265933ad39bea628b777af662f5bf15d

ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-pip ca-certificates git \
 && rm -rf /var/lib/apt/lists/*

RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp

# TensorFlow >= 2.16 ships Keras 3; tf_cnn_benchmarks needs Keras 2 (tf-keras of the same minor).
RUN case "$FRAMEWORK" in \
      torch) pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX_URL}" ;; \
      tensorflow) pip install --no-cache-dir "tensorflow[and-cuda]==${TF_VERSION}" \
                  && pip install --no-cache-dir --no-deps "tf-keras~=${TF_VERSION%.*}.0" ;; \
      none) ;; \
      *) echo "FRAMEWORK must be torch, tensorflow or none, got '$FRAMEWORK'" >&2; exit 1 ;; \
    esac

# tf_cnn_benchmarks at the pinned commit, where the tf-cnn runner looks first
RUN git init -q /opt/benchmarks \
 && git -C /opt/benchmarks fetch -q --depth 1 https://github.com/tensorflow/benchmarks.git "${TF_BENCHMARKS_COMMIT}" \
 && git -C /opt/benchmarks checkout -q FETCH_HEAD \
 && rm -rf /opt/benchmarks/.git \
 && test -f /opt/benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py

WORKDIR /src
COPY pyproject.toml README.md ./
COPY advisor ./advisor
COPY cli ./cli
COPY collectors ./collectors
COPY graph_schema ./graph_schema
COPY microbench ./microbench
RUN pip install --no-cache-dir ".[loadgen]" && rm -rf /src

WORKDIR /tmp
# Numeric non-root user; the Jobs run with a read-only root filesystem and /tmp as an emptyDir
# (sweep cells' environments and uv's cache go there too).
ENV ADVISOR_SWEEP_CACHE=/tmp/stack-advisor/sweep
USER 65532:65532
ENTRYPOINT []
CMD ["advisor", "collect", "--help"]
