#!/usr/bin/env bash
# The README's test command: installs everything the suite needs on a fresh machine (cached under
# ~/.cache and pip's cache), builds the local Neo4j server and the kube-apiserver, then runs the
# whole suite. Under CI=true the Neo4j and Kubernetes tiers must run, not skip.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev,torch,tensorflow,loadgen]'
# tf_cnn_benchmarks needs Keras 2 with TensorFlow >= 2.16: tf-keras of the installed TF's minor.
# --no-deps: tf-keras requires the `tensorflow` distribution and would pull a second, 600 MB copy
# of TensorFlow beside tensorflow-cpu (same files).
TF_MINOR=$(.venv/bin/python -c 'from importlib.metadata import version; print(".".join(version("tensorflow-cpu").split(".")[:2]))')
.venv/bin/python -m pip install -q --no-deps "tf-keras~=${TF_MINOR}.0"

echo "== preparing the local Neo4j 5.26 server" >&2
bash deploy/neo4j-local/setup.sh >&2
echo "== preparing kube-apiserver and etcd" >&2
bash deploy/kube-local/build.sh >&2
echo "== preparing the kubelet (the container tier's real node)" >&2
KUBE_COMPONENTS=kubelet bash deploy/kube-local/build.sh >&2
echo "== preparing a Docker engine of ours (the container tier builds its images in it)" >&2
# installs docker.io, containerd and mmdebstrap from Debian when missing; data under ~/.cache
bash deploy/docker/engine.sh >/dev/null

echo "== preparing Chromium and chromedriver for the web explorer's browser tests" >&2
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >/dev/null
fi
chromium --version 2>/dev/null | sed -n 1p >&2

echo "== running the test suite" >&2
exec .venv/bin/python -m pytest -q -ra "$@"
