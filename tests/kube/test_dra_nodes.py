"""Against a REAL kube-apiserver: `advisor nodes list` finds GPUs a cluster publishes only through
DRA (a ResourceSlice of the NVIDIA DRA driver's shape, resource.k8s.io/v1, on a node without GFD
labels or nvidia.com/gpu capacity). The node and slice are removed afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from stack_advisor.cli.main import app
from tests.support.control_plane import ControlPlane
from tests.support.dra_nodes import DRA_NODE, PRODUCT, node, resource_slice

pytestmark = pytest.mark.kube


@pytest.fixture
def dra_node(api_client: Any) -> Iterator[None]:
    from kubernetes import client, dynamic

    core = client.CoreV1Api(api_client)
    body = node()
    core.create_node({k: v for k, v in body.items() if k != "status"})
    core.patch_node_status(DRA_NODE, {"status": body["status"]})
    slices = dynamic.DynamicClient(api_client).resources.get(
        api_version="resource.k8s.io/v1", kind="ResourceSlice"
    )
    created = slices.create(body=resource_slice(8))
    try:
        yield
    finally:
        slices.delete(name=created.metadata.name)
        core.delete_node(DRA_NODE)


def test_nodes_list_reads_resource_slices(dra_node: None, control_plane: ControlPlane) -> None:
    result = CliRunner().invoke(
        app,
        [
            "nodes",
            "list",
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--json",
            "-l",
            f"kubernetes.io/hostname={DRA_NODE}",
        ],
    )
    assert result.exit_code == 0, result.output
    (found,) = json.loads(result.stdout)
    assert found["accelerator"]["model"] == PRODUCT.replace(" ", "-")
    assert found["accelerator"]["count"] == 8 and found["allocatable_gpus"] == 8
    assert found["driver"] == "570.124.6"
