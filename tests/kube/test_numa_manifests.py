"""Against a REAL kube-apiserver: nodes with NFD's NodeResourceTopology objects (CRD served) are
synced, `advisor recommend --cluster` advises NUMA alignment for the two-socket pool, its Pods
pass a server-side dry run as Guaranteed QoS, and the KubeletConfiguration fragment passes the
kubelet's own strict decoding and validation (deploy/kube-local/kubelet-config-check)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stack_advisor.advisor.cluster.numa import kubelet_fragment
from stack_advisor.advisor.manifests.pod import to_yaml
from stack_advisor.cli.main import app
from tests.support.control_plane import ControlPlane, cache_dir
from tests.support.numa_nodes import NRTS, NUMA_NODES, SELECTOR

pytestmark = pytest.mark.kube
NAMESPACE = "numa-advice"
IMAGE = "registry.example.org/team/resnet50:1"
WORKLOAD = ["--benchmark", "resnet50", "--scenario", "Offline", "--image", IMAGE]
NRT_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    # a *.k8s.io group: the apiserver requires the API-review annotation (the upstream CRD carries
    # it)
    "metadata": {
        "name": "noderesourcetopologies.topology.node.k8s.io",
        "annotations": {
            "api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1870"
        },
    },
    "spec": {
        "group": "topology.node.k8s.io",
        "scope": "Cluster",
        "names": {
            "kind": "NodeResourceTopology",
            "plural": "noderesourcetopologies",
            "singular": "noderesourcetopology",
            "listKind": "NodeResourceTopologyList",
            "shortNames": ["node-res-topo"],
        },
        "versions": [
            {
                "name": "v1alpha2",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def _exists_ok(call: Any, *args: Any, **kwargs: Any) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        call(*args, **kwargs)
    except ApiException as exc:
        if exc.status != 409:
            raise


@pytest.fixture(scope="module")
def numa_cluster(control_plane: ControlPlane, api_client: Any) -> Iterator[ControlPlane]:
    """The numa-* nodes and their NodeResourceTopologies, removed afterwards: the apiserver is
    shared by the whole session, and other modules list every node (issue 44: file order)."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    for node in NUMA_NODES:
        _exists_ok(core.create_node, {k: v for k, v in node.items() if k != "status"})
        core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})
    _exists_ok(core.create_namespace, {"metadata": {"name": NAMESPACE}})
    _exists_ok(core.create_namespaced_service_account, NAMESPACE, {"metadata": {"name": "default"}})
    _exists_ok(client.ApiextensionsV1Api(api_client).create_custom_resource_definition, NRT_CRD)
    custom = client.CustomObjectsApi(api_client)
    deadline = time.monotonic() + 30
    for obj in NRTS:
        while True:
            try:
                _exists_ok(
                    custom.create_cluster_custom_object,
                    "topology.node.k8s.io",
                    "v1alpha2",
                    "noderesourcetopologies",
                    obj,
                )
                break
            except client.exceptions.ApiException:
                assert time.monotonic() < deadline, "noderesourcetopologies not served after 30s"
                time.sleep(0.5)
    yield control_plane
    for obj in NRTS:
        custom.delete_cluster_custom_object(
            "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", obj["metadata"]["name"]
        )
    for node in NUMA_NODES:
        core.delete_node(node["metadata"]["name"])


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, starter_kb: Path) -> str:
    from tests.support.starter_kb import copy_starter_kb

    return copy_starter_kb(starter_kb, tmp_path_factory.mktemp("numa-kb") / "kb")


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


def _pods_of(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    if manifest["kind"] == "Pod":
        return [manifest]
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{manifest['metadata']['name']}-{role.lower()}",
                **r["template"]["metadata"],
            },
            "spec": r["template"]["spec"],
        }
        for role, r in (manifest["spec"].get("pytorchReplicaSpecs") or {}).items()
    ]


def _dry_run_qos(api_client: Any, pod: dict[str, Any]) -> str:
    """A server-side dry run with strict field validation (an unknown field is a 400); the
    apiserver's QoS class for the pod."""
    from kubernetes import dynamic

    # The dynamic client sends the Pod as written (the typed one validates and coerces it first)
    # but knows no fieldValidation parameter: it goes in as a raw query parameter.
    pods = dynamic.DynamicClient(api_client).resources.get(api_version="v1", kind="Pod")
    body = {**pod, "metadata": {**pod["metadata"], "namespace": NAMESPACE}}
    created = pods.create(
        body=body, namespace=NAMESPACE, dry_run="All", query_params=[("fieldValidation", "Strict")]
    )
    return str(created.status.qosClass)


def test_numa_pool_advice_and_guaranteed_pods_on_the_real_apiserver(
    numa_cluster: ControlPlane, api_client: Any, kb: str
) -> None:
    synced = _cli(
        "nodes",
        "sync",
        "--kubeconfig",
        str(numa_cluster.kubeconfig),
        "-l",
        SELECTOR,
        "--store",
        kb,
        "--cluster",
        "numa",
        "--json",
    )
    by_name = {n["name"]: n for n in synced}
    assert (
        by_name["numa-h100-0"]["numa"]["source"] == "NodeResourceTopology"
    )  # read from the served CRD
    assert by_name["numa-a100-0"]["numa"]["source"] == "NFD label"
    for gpus in ("1", "8", "16"):
        answer = _cli(
            "recommend",
            *WORKLOAD,
            "--cluster",
            "numa",
            "--store",
            kb,
            "--gpus",
            gpus,
            "--top",
            "50",
            "--json",
        )
        recs = [r for r in answer["recommendations"] if r["pool"] == "h100-numa"]
        assert recs, answer["excluded_pools"]
        for r in recs:
            numa = r["numa"]
            assert numa["applies"] and numa["kubelet_config"]["cpuManagerPolicy"] == "static"
            assert numa["topology_manager_policy"] == (
                "single-numa-node" if gpus == "1" else "restricted"
            )
            assert numa["gain_note"].startswith("unknown")  # the starter knowledge base has no pair
            pinned = gpus == "1"  # memory follows the GPU's node under single-numa-node only
            kubelet = numa["kubelet_config"]
            assert (kubelet.get("memoryManagerPolicy") == "Static") is pinned, kubelet
            if pinned:
                assert [m["numaNode"] for m in kubelet["reservedMemory"]] == [0, 1]
            for manifest in r["manifests"]:
                for pod in _pods_of(manifest):
                    assert _dry_run_qos(api_client, pod) == "Guaranteed"
                    for container in pod["spec"]["containers"]:
                        resources = container["resources"]
                        assert resources["requests"]["memory"] == resources["limits"]["memory"]
        t4 = [r for r in answer["recommendations"] if r["pool"] == "t4-pool"]
        for r in t4:
            assert r["numa"]["vm_pinning"] and r["numa"]["kubelet_config"] is None


def test_strict_dry_run_refuses_an_unknown_field(
    numa_cluster: ControlPlane, api_client: Any
) -> None:
    from kubernetes.client.exceptions import ApiException

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "typo"},
        "spec": {"containers": [{"name": "c", "image": IMAGE, "resourcez": {}}]},
    }
    with pytest.raises(ApiException) as caught:
        _dry_run_qos(api_client, pod)
    assert caught.value.status == 400 and "resourcez" in str(caught.value.body)


def _checker() -> Path | None:
    version = os.environ.get("KUBE_VERSION", "v1.35.4")
    path = cache_dir() / "kube" / version / "kubelet-config-check"
    return path if path.is_file() else None


@pytest.fixture(scope="module")
def kubelet_config_check() -> Path:
    path = _checker()
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(
                "CI=true but kubelet-config-check is not built: run deploy/kube-local/build.sh"
            )
        pytest.skip("kubelet-config-check not built (deploy/kube-local/build.sh builds it)")
    assert path is not None
    return path


@pytest.mark.parametrize(
    ("policy", "numa_nodes"),
    [("single-numa-node", None), ("single-numa-node", [0, 1]), ("restricted", None)],
)
def test_kubelet_fragment_passes_the_kubelets_own_validation(
    kubelet_config_check: Path, tmp_path: Path, policy: str, numa_nodes: list[int] | None
) -> None:
    """With NUMA node ids the fragment carries the Memory Manager (Static, reservedMemory per
    NUMA node); the kubelet's own validation accepts it. (That validation does not check the
    Memory Manager's policy name or the reservations' sum: the kubelet checks those when it
    starts, and tests/advisor/test_numa_advice.py holds the sum to the 100Mi eviction default.)"""
    path = tmp_path / "kubelet.yaml"
    path.write_text(to_yaml(kubelet_fragment(policy, numa_nodes)))
    done = subprocess.run(
        [str(kubelet_config_check), str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "valid", done.stdout + done.stderr


def test_the_validator_is_strict(kubelet_config_check: Path, tmp_path: Path) -> None:
    """A misspelt field and a policy the kubelet does not know are refused: the check is real."""
    for bad, why in (
        ({**kubelet_fragment("restricted"), "topologyManagerPolcy": "restricted"}, "unknown field"),
        (
            {**kubelet_fragment("restricted"), "topologyManagerPolicy": "numa-please"},
            "must be one of",
        ),
    ):
        path = tmp_path / "bad.yaml"
        path.write_text(to_yaml(bad))
        done = subprocess.run(
            [str(kubelet_config_check), str(path)], capture_output=True, text=True, check=False
        )
        assert done.returncode == 1 and why in done.stdout, done.stdout + done.stderr
