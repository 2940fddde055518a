"""Fixtures for the container tier: our own Docker engine (deploy/docker/engine.sh), the images
built once per session (deploy/docker/build.sh: nothing pulled from a registry), the API image
serving on the session's real Neo4j, and a runner for the collector image. Everything talks over the
host's loopback (host networking: there is no bridge or CNI here).

Outside CI a missing engine skips with the reason; under CI=true it must run."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.support.containers import (
    API_IMAGE,
    BUILD_TIMEOUT_S,
    COLLECTOR_IMAGE,
    REPO,
    Api,
    Images,
    start_api,
    tier_missing,
)
from tests.support.kubelet_cluster import Cluster
from tests.support.kubelet_cluster import kubelet_cluster as start_kubelet_cluster


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[str]:
    """DOCKER_HOST of our engine (started when needed); testcontainers' reaper is off (its image
    would be pulled), every container here is removed by its fixture or test."""
    proc = subprocess.run(
        ["bash", str(REPO / "deploy" / "docker" / "engine.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        tier_missing(f"deploy/docker/engine.sh failed ({proc.returncode}): {proc.stderr[-2000:]}")
    host = proc.stdout.strip().rsplit("=", 1)[-1]
    saved = {k: os.environ.get(k) for k in ("DOCKER_HOST", "TESTCONTAINERS_RYUK_DISABLED")}
    os.environ["DOCKER_HOST"] = host
    os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"
    yield host
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def images(docker_engine: str) -> Images:
    """Both images, built once per session (a warm layer cache makes this seconds)."""
    start = time.monotonic()
    proc = subprocess.run(
        ["bash", str(REPO / "deploy" / "docker" / "build.sh")],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
        env={**os.environ, "API_IMAGE": API_IMAGE, "COLLECTOR_IMAGE": COLLECTOR_IMAGE},
    )
    if proc.returncode != 0:
        pytest.fail(
            f"deploy/docker/build.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}",
            pytrace=False,
        )
    print(f"\n{proc.stderr.strip()}\n[images] build.sh took {time.monotonic() - start:.0f} s")
    return Images(API_IMAGE, COLLECTOR_IMAGE, proc.stderr)


@pytest.fixture(scope="session")
def api(images: Images, neo4j_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """The API image on the session's real Neo4j (the local server of tests/neo4j_server.py,
    reached over loopback). Its data is cleared first: the tier reads back what it sent."""
    from stack_advisor.store.registry import open_store

    with open_store(neo4j_uri, migrate=False) as store:
        store.clear()  # type: ignore[attr-defined]
        # as a deployment's first start leaves it: no schema work in the first POST
        store.ensure_schema()
    server = start_api(images, neo4j_uri, tmp_path_factory.mktemp("api-tokens"))
    yield server
    server.container.stop()


@pytest.fixture(scope="session")
def kubelet_cluster(
    images: Images, neo4j_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """The one-node cluster of tests/support/kubelet_cluster.py, started once for the modules
    that run pods on the real kubelet (its image import is most of its start)."""
    with start_kubelet_cluster(images, neo4j_uri, tmp_path_factory.mktemp("kubelet")) as cluster:
        yield cluster
