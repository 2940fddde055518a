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
# Further arguments go to pytest (a file, -k EXPR, ...; the full tier then runs one pytest process
# over them, once everything is built, instead of its three parts). The lint step fails the run.
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

# Debian packages first, in one apt transaction (the steps below find them and skip their own
# apt-get: two apt-gets at once would fight over dpkg's lock): etcd for the kube tier, docker.io,
# containerd and mmdebstrap for the container tier, chromium and chromedriver for the browser tier.
apt_missing=()
command -v etcd >/dev/null 2>&1 || apt_missing+=(etcd-server)
command -v dockerd >/dev/null 2>&1 || apt_missing+=(docker.io)
command -v containerd >/dev/null 2>&1 || apt_missing+=(containerd)
command -v mmdebstrap >/dev/null 2>&1 || apt_missing+=(mmdebstrap)
command -v chromium >/dev/null 2>&1 || apt_missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || apt_missing+=(chromium-driver)
if [ ${#apt_missing[@]} -gt 0 ]; then
  echo "== installing from Debian: ${apt_missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${apt_missing[@]}" >/dev/null
  # etcd-server's package starts a system etcd on 2379; the tests run their own on loopback ports.
  $sudo systemctl disable --now etcd >/dev/null 2>&1 || true
fi

# The Go builds (kube-apiserver, kube-controller-manager, kubelet, kube-scheduler, CNI plugins:
# CPU-bound, ~20 minutes on 2 cores from an empty cache) and the Neo4j assembly (Maven downloads)
# run in the background while pip downloads and installs the Python side (network-bound).
SETUP_LOGS=$(mktemp -d)
echo "== preparing kube-apiserver, etcd, the kubelet, kube-scheduler and CNI plugins (background; log $SETUP_LOGS/kube.log)" >&2
# Each in a process group of its own (setsid), so an early exit stops the whole build.
setsid bash -c 'bash deploy/kube-local/build.sh \
  && KUBE_COMPONENTS="kubelet kube-scheduler" bash deploy/kube-local/build.sh \
  && bash deploy/kube-local/cni-plugins.sh' >"$SETUP_LOGS/kube.log" 2>&1 &
KUBE_PID=$!
echo "== preparing the local Neo4j 5.26 server (background; log $SETUP_LOGS/neo4j.log)" >&2
setsid bash deploy/neo4j-local/setup.sh >"$SETUP_LOGS/neo4j.log" 2>&1 &
NEO4J_PID=$!
# The container tier's images (deploy/docker/build.sh: the Debian base by mmdebstrap, then the API
# and collector images with their pip installs; mostly downloads, ~100 s) are built now too, in our
# own Docker engine (started here, in the foreground: a few seconds), so the tier's `images` fixture
# later re-runs build.sh on a warm layer cache (seconds) instead of building inside the test run.
# Same image names as the fixture's (API_IMAGE, COLLECTOR_IMAGE; tests/support/containers.py).
# (the test run below widens this trap to its own pytest processes)
IMAGES_PID=""
trap 'kill -- "-$KUBE_PID" "-$NEO4J_PID" ${IMAGES_PID:+"-$IMAGES_PID"} 2>/dev/null || true' EXIT
echo "== preparing a Docker engine of ours and building the container tier's images (background; log $SETUP_LOGS/images.log)" >&2
bash deploy/docker/engine.sh >/dev/null
setsid bash deploy/docker/build.sh >"$SETUP_LOGS/images.log" 2>&1 &
IMAGES_PID=$!

finish_background() {  # name pid: wait for a background step; its log, and a failure, on stderr
  local name=$1 pid=$2
  if wait "$pid"; then
    tail -n 3 "$SETUP_LOGS/$name.log" >&2
  else
    echo "== $name setup failed; its log:" >&2
    cat "$SETUP_LOGS/$name.log" >&2
    return 1
  fi
}

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

chromium --version 2>/dev/null | sed -n 1p >&2

images_done() {  # a failed image build does not stop the run: the container tier's fixture runs
  # build.sh again and fails its tests with the build's own message
  if ! wait "$IMAGES_PID"; then
    echo "== the early image build failed (the container tier will build again); its log tail:" >&2
    tail -n 20 "$SETUP_LOGS/images.log" >&2
  else
    tail -n 3 "$SETUP_LOGS/images.log" >&2
  fi
}

if [ $# -gt 0 ]; then  # a file, -k EXPR ...: one pytest process, as asked, once everything is built
  echo "== waiting for Neo4j, the Kubernetes builds and the images" >&2
  finish_background neo4j "$NEO4J_PID"
  finish_background kube "$KUBE_PID"
  images_done
  echo "== running the test suite" >&2
  exec .venv/bin/python -m pytest -q -ra --durations=30 "$@"
fi

# The whole suite as three pytest processes, each started as soon as what it needs is ready: the
# tests that need no server at once (while the Kubernetes builds still run), the Neo4j, container
# and browser tiers once Neo4j and the images are ready, the Kubernetes tier once its binaries are
# built. On a 2-core machine the waits of one (servers, pods, a Go link step) leave a core that
# another fills. Each has its own base temp folder, its own Neo4j server and no cache folder
# (nothing shared between them but the read-only caches under ~/.cache; deploy/docker/build.sh
# takes a lock); each prints its log whole when it ends, and the run fails when any does. A setup
# step that fails skips the parts that need it; the others run to their end. With NEO4J_URI set
# (one external database, which the tests clear) the Kubernetes part waits for the Neo4j part.
PARTS=$(mktemp -d /tmp/t.XXXXXX)
PART_PIDS=()
stop_parts() {  # each part's process group: an interrupt (pytest tears its fixtures down), then
  # a kill of what is left after 60 s
  local pid
  for pid in ${PART_PIDS[@]+"${PART_PIDS[@]}"}; do kill -INT -- "-$pid" 2>/dev/null || true; done
  for _ in $(seq 60); do
    pgrep -f -- "--basetemp $PARTS/" >/dev/null || return 0
    sleep 1
  done
  for pid in ${PART_PIDS[@]+"${PART_PIDS[@]}"}; do kill -KILL -- "-$pid" 2>/dev/null || true; done
}
trap 'kill -- "-$KUBE_PID" "-$NEO4J_PID" ${IMAGES_PID:+"-$IMAGES_PID"} 2>/dev/null || true
  stop_parts' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
set -m  # job control: each part in a process group of its own (stop_parts signals it)
run_part() {  # name label marker-expression
  local name=$1 label=$2 marks=$3 started=$SECONDS rc=0
  .venv/bin/python -m pytest -q -ra --durations=15 -p no:cacheprovider \
    --basetemp "$PARTS/$name" -m "$marks" >"$PARTS/$name.log" 2>&1 || rc=$?
  {
    echo "== $label: exit $rc after $((SECONDS - started)) s (-m \"$marks\")"
    cat "$PARTS/$name.log"
  } >&2
  return "$rc"
}
start_part() {  # name label marker-expression
  echo "== starting the tests of $2 (-m \"$3\"; its log is printed whole when it ends)" >&2
  run_part "$1" "$2" "$3" &
  PART_PIDS+=($!)
}
rc=0
SERVER_TIERS="neo4j or kube or containers or browser"
start_part plain "no server" "not ($SERVER_TIERS)"
echo "== waiting for Neo4j and the images" >&2
neo4j_ok=1
finish_background neo4j "$NEO4J_PID" || { neo4j_ok=0; rc=1; }
images_done
if [ "$neo4j_ok" = 1 ]; then
  start_part servers "Neo4j, containers, browser" "($SERVER_TIERS) and not kube"
  SERVERS_PART=$!
else
  echo "== skipping the Neo4j, container and browser tiers: Neo4j's setup failed" >&2
fi
echo "== waiting for the Kubernetes builds" >&2
if ! finish_background kube "$KUBE_PID"; then
  echo "== skipping the Kubernetes tier: its build failed" >&2
  rc=1
elif [ "$neo4j_ok" = 0 ]; then
  echo "== skipping the Kubernetes tier: it needs Neo4j, whose setup failed" >&2
else
  if [ -n "${NEO4J_URI:-}" ]; then
    echo "== NEO4J_URI is set: the Kubernetes tier waits for the Neo4j tier (one database)" >&2
    wait "$SERVERS_PART" || rc=$?
    keep=()  # waited for: not again below
    for pid in "${PART_PIDS[@]}"; do [ "$pid" = "$SERVERS_PART" ] || keep+=("$pid"); done
    PART_PIDS=("${keep[@]}")
  fi
  start_part kube "Kubernetes" "kube"
fi
for pid in "${PART_PIDS[@]}"; do
  wait "$pid" || rc=$?
done
rm -rf "$PARTS"
exit "$rc"
