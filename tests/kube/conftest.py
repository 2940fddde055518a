"""Fixtures for the Kubernetes tier: a real kube-apiserver + etcd (see
tests/support/control_plane.py).

Outside CI a missing build skips with the reason; under CI=true it must run."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.control_plane import ControlPlane, find_binaries, find_controller_manager
from tests.support.crd_dry_run import serve_target_crds
from tests.support.kube import REPO, kustomize_command, pin_stand_in_digests


def _ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def _missing(reason: str) -> None:
    if _ci():
        pytest.fail(f"CI=true but the Kubernetes tier cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    apiserver, etcd, why = find_binaries()
    if apiserver is None or etcd is None:
        _missing(f"no kube-apiserver/etcd: {why}")
    assert apiserver is not None and etcd is not None
    manager = find_controller_manager()
    if manager is None and _ci():
        pytest.fail(
            "CI=true but kube-controller-manager is not built: run deploy/kube-local/build.sh"
        )
    cp = ControlPlane(
        apiserver=apiserver,
        etcd=etcd,
        controller_manager=manager,
        workdir=tmp_path_factory.mktemp("kube"),
    )
    try:
        cp.start()
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def api_client(control_plane: ControlPlane):  # -> kubernetes.client.ApiClient
    from kubernetes import config

    client = config.new_client_from_config(config_file=str(control_plane.kubeconfig))
    yield client
    client.close()


@pytest.fixture(scope="session")
def kustomize() -> list[str]:
    cmd = kustomize_command()
    if cmd is None:
        _missing("no kustomize (deploy/kube-local/build.sh installs one) and no kubectl")
    assert cmd is not None
    return cmd


@pytest.fixture(scope="session")
def overlay_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """deploy/ copied with the example overlay's secret files filled in (they stay out of git)."""
    import secrets

    root = tmp_path_factory.mktemp("deploy") / "deploy"
    shutil.copytree(
        REPO / "deploy", root, ignore=shutil.ignore_patterns("neo4j-local", "kube-local")
    )
    example = root / "overlays" / "example"
    password = secrets.token_urlsafe(18)
    token = secrets.token_urlsafe(24)
    (example / "secrets.env").write_text(
        f"NEO4J_USER=neo4j\nNEO4J_PASSWORD={password}\nNEO4J_AUTH=neo4j/{password}\n"
    )
    planner = secrets.token_urlsafe(24)
    (example / "collector-token.env").write_text(f"token={token}\n")
    (example / "planner-token.env").write_text(f"token={planner}\n")
    (example / "api-tokens.txt").write_text(f"{token} write collector\n{planner} read planner\n")
    pin_stand_in_digests(example / "kustomization.yaml")
    return root


@pytest.fixture(scope="module")
def served(api_client: Any) -> Iterator[tuple[Any, str]]:
    """(dynamic client, namespace) with the snippet targets' CRDs Established; what the module
    created is removed afterwards (tests/support/crd_dry_run.py)."""
    yield from serve_target_crds(api_client)


# ---- isolation ----------------------------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def _leaves_no_nodes_or_crds(request: pytest.FixtureRequest) -> Iterator[None]:
    """Nodes and CRDs a module registers on the shared apiserver are removed when it ends (the
    CRDs waited out), so the next module, in whatever order, sees the apiserver as before.
    Modules that use no apiserver start none."""
    uses = any(
        item.path == request.path and "control_plane" in getattr(item, "fixturenames", ())
        for item in request.session.items
    )
    if not uses:
        yield
        return
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api_client = request.getfixturevalue("api_client")
    core, ext = client.CoreV1Api(api_client), client.ApiextensionsV1Api(api_client)
    nodes = {n.metadata.name for n in core.list_node().items}
    crds = {c.metadata.name for c in ext.list_custom_resource_definition().items}
    yield
    for node in core.list_node().items:
        if node.metadata.name not in nodes:
            try:
                core.delete_node(node.metadata.name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
    added = {c.metadata.name for c in ext.list_custom_resource_definition().items} - crds
    for name in added:
        try:
            ext.delete_custom_resource_definition(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
    deadline = time.monotonic() + 60
    while added & {c.metadata.name for c in ext.list_custom_resource_definition().items}:
        assert time.monotonic() < deadline, f"CRDs not gone after 60 s: {sorted(added)}"
        time.sleep(0.2)


# ---- order --------------------------------------------------------------------------------------
# The tier shares one apiserver, so a test that leaves objects behind can break a later file. Each
# run takes the tier's files in a shuffled order (tests within a file keep theirs: module fixtures
# stay built once); the seed is in the report header, and KUBE_ORDER_SEED=N replays an order.
ORDER_SEED = int(os.environ.get("KUBE_ORDER_SEED") or int.from_bytes(os.urandom(2), "big"))


def pytest_report_header() -> str:
    return f"tests/kube file order: shuffled with KUBE_ORDER_SEED={ORDER_SEED}"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    import random

    here = Path(__file__).parent
    ours = [i for i in items if Path(str(i.path)).parent == here]
    if len(ours) < 2:
        return
    files = sorted({str(i.path) for i in ours})
    random.Random(ORDER_SEED).shuffle(files)
    rank = {f: n for n, f in enumerate(files)}
    ordered = iter(sorted(ours, key=lambda i: rank[str(i.path)]))  # stable: keeps in-file order
    items[:] = [next(ordered) if Path(str(i.path)).parent == here else i for i in items]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The seed again at the end (``-q`` hides the header): a failure's order can be replayed."""
    if terminalreporter.stats.get("failed"):
        terminalreporter.write_line(f"tests/kube file order: KUBE_ORDER_SEED={ORDER_SEED}")
