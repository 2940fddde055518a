#!/usr/bin/env bash
# The README's test command. Two tiers:
#
#   bash scripts/test.sh           the full tier CI runs: installs everything the suite needs on a
#                                  fresh machine (cached under ~/.cache and pip's cache), builds the
#                                  local Neo4j server and the kube-apiserver, then lints (ruff, mypy)
#                                  and runs the whole suite. Under CI=true the Neo4j, Kubernetes and
#                                  browser tiers must run, not skip.
#   bash scripts/test.sh --fast    the edit-test loop: the same lint, then the tests that need no
#                                  server and no build (not neo4j, kube, browser, gpu or slow:
#                                  see pyproject's markers); installs and builds nothing (run the
#                                  full tier once first, or `pip install -e '.[dev]'`).
#
# Further arguments go to pytest (a file, -k EXPR, ...). The lint step fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

FAST=0
if [ "${1:-}" = "--fast" ]; then
  FAST=1
  shift
fi

lint() {
  echo "== ruff (the rule set and its scope: pyproject.toml [tool.ruff]; no per-file exemptions)" >&2
  .venv/bin/ruff check .
  echo "== ruff format --check (the formatter's verdict; fix with: ruff format <files>)" >&2
  .venv/bin/ruff format --check .
  echo "== mypy --strict (the checked packages: pyproject.toml [tool.mypy])" >&2
  .venv/bin/mypy
}

if [ "$FAST" = 1 ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "no .venv: run the full tier once (bash scripts/test.sh) or pip install -e '.[dev]'" >&2
    exit 2
  fi
  lint
  echo "== running the fast tier (no servers, no builds)" >&2
  exec .venv/bin/python -m pytest -q -ra -m "not neo4j and not kube and not browser and not containers and not gpu and not slow" "$@"
fi

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

lint

echo "== preparing the local Neo4j 5.26 server" >&2
bash deploy/neo4j-local/setup.sh >&2
echo "== preparing kube-apiserver and etcd" >&2
bash deploy/kube-local/build.sh >&2
echo "== preparing the kubelet, kube-scheduler and CNI plugins (the container tier's real node)" >&2
KUBE_COMPONENTS="kubelet kube-scheduler" bash deploy/kube-local/build.sh >&2
bash deploy/kube-local/cni-plugins.sh >&2
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
exec .venv/bin/python -m pytest -q -ra --durations=30 "$@"
