"""Against a REAL kube-apiserver: nodes labelled as GFD/NFD/the GPU Operator label them are
registered, synced into a store, and `advisor recommend --cluster` ranks their pools; the answer
from an offline `kubectl get nodes -o json` file is the same; every manifest it gives passes a
server-side dry run (Pods, and the pods of a multi-node serving LeaderWorkerSet)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stack_advisor.cli.main import app
from tests.support.control_plane import ControlPlane
from tests.support.gfd_pools import POOL_NODES, SELECTOR

pytestmark = pytest.mark.kube
NAMESPACE = "cluster-advice"
IMAGE = "registry.example.org/team/resnet50-trt:1"  # the user's image: MLPerf records none
WORKLOAD = ["--benchmark", "resnet50", "--scenario", "Offline", "--image", IMAGE]
CRDS = (
    ("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs"),
    ("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups"),
)


def _crd(group: str, version: str, kind: str, plural: str) -> dict[str, Any]:
    """A structural-minimum CRD: the apiserver serves the kind (the operators' own CRDs carry the
    full schemas; the Pod template inside is dry-run as a Pod separately)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
            },
            "versions": [
                {
                    "name": version,
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
def pool_cluster(control_plane: ControlPlane, api_client: Any) -> ControlPlane:
    """The pool nodes registered (status included), a namespace with its ServiceAccount, and the
    gang CRDs served."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    for node in POOL_NODES:
        _exists_ok(core.create_node, {k: v for k, v in node.items() if k != "status"})
        core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})
    _exists_ok(core.create_namespace, {"metadata": {"name": NAMESPACE}})
    _exists_ok(core.create_namespaced_service_account, NAMESPACE, {"metadata": {"name": "default"}})
    ext = client.ApiextensionsV1Api(api_client)
    for spec in CRDS:
        _exists_ok(ext.create_custom_resource_definition, _crd(*spec))
    custom = client.CustomObjectsApi(api_client)
    deadline = time.monotonic() + 30
    for group, version, _, plural in CRDS:
        while True:
            try:
                custom.list_namespaced_custom_object(group, version, NAMESPACE, plural)
                break
            except client.exceptions.ApiException:
                assert time.monotonic() < deadline, f"{plural} not served after 30s"
                time.sleep(0.5)
    return control_plane


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, starter_kb: Path) -> Iterator[str]:
    """An embedded store holding the starter knowledge base (a copy, closed: the CLI opens it)."""
    from tests.support.starter_kb import copy_starter_kb

    yield copy_starter_kb(starter_kb, tmp_path_factory.mktemp("cluster-kb") / "kb")


def _cli(*args: str, stdin: str | None = None) -> Any:
    result = CliRunner().invoke(app, list(args), input=stdin)
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


def _nodes_file(api_client: Any, path: Path) -> Path:
    """What `kubectl get nodes -o json -l SELECTOR` writes."""
    from kubernetes import client

    listed = client.CoreV1Api(api_client).list_node(label_selector=SELECTOR)
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": api_client.sanitize_for_serialization(listed)["items"],
            }
        )
    )
    return path


def _dry_run(api_client: Any, manifest: dict[str, Any]) -> None:
    from kubernetes import client, dynamic

    # The dynamic client sends Pods as written (the typed client coerces, and rejects int
    # quantities).
    pods = dynamic.DynamicClient(api_client).resources.get(api_version="v1", kind="Pod")
    manifest = {**manifest, "metadata": {**manifest["metadata"], "namespace": NAMESPACE}}
    if manifest["kind"] == "Pod":
        pods.create(body=manifest, namespace=NAMESPACE, dry_run="All")
        return
    group, version = manifest["apiVersion"].split("/")
    plural = {"PyTorchJob": "pytorchjobs", "PodGroup": "podgroups"}[manifest["kind"]]
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        group, version, NAMESPACE, plural, manifest, dry_run="All"
    )
    for replica in (manifest["spec"].get("pytorchReplicaSpecs") or {}).values():
        template = replica["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{manifest['metadata']['name']}-check",
                **{k: v for k, v in template["metadata"].items()},
            },
            "spec": template["spec"],
        }
        pods.create(body=pod, namespace=NAMESPACE, dry_run="All")


def _without_timing(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in ("elapsed_ms", "source")}


def test_cluster_pools_ranked_with_manifests_the_apiserver_accepts(
    pool_cluster: ControlPlane, api_client: Any, kb: str, tmp_path: Path
) -> None:
    _cli(
        "nodes",
        "sync",
        "--kubeconfig",
        str(pool_cluster.kubeconfig),
        "-l",
        SELECTOR,
        "--store",
        kb,
        "--cluster",
        "prod",
        "--json",
    )
    answer = _cli(
        "recommend", *WORKLOAD, "--cluster", "prod", "--store", kb, "--top", "100", "--json"
    )
    pools = {p["name"]: p for p in answer["pools"]}
    assert set(pools) == {
        "a100-bm",
        "a100-mig",
        "gpupool/535.161.08",
        "gpupool/550.54.15",
        "h100-mig[mig-1g.10gb]",
        "h100-mig[mig-3g.40gb]",
        "kubevirt",
        "l4-vgpu",
        "t4-pool",
    }
    assert pools["a100-bm"]["nodes"] == ["p-a100-0", "p-a100-1"] and pools["t4-pool"]["nodes"] == [
        "p-t4-0",
        "p-t4-1",
    ]
    assert (
        pools["l4-vgpu"]["placement"] == "vgpu" and pools["t4-pool"]["placement"] == "passthrough"
    )
    assert answer["excluded_pools"].keys() == {"kubevirt"}
    recs = answer["recommendations"]
    assert {r["pool"] for r in recs} == set(pools) - {"kubevirt"}
    for r in recs:
        if r["pool"] == "t4-pool":
            cuda = r["stack"].get("cuda") or ""
            assert not cuda.startswith("12"), r["stack_label"]  # driver 470 runs no CUDA 12 stack
        limits = r["manifests"][0]["spec"]["containers"][0]["resources"]["limits"]
        assert limits == {r["resource"]: r["shape"]["units_per_pod"]}
        assert r["manifests"][0]["spec"]["nodeSelector"] == pools[r["pool"]]["node_selector"]
        for manifest in r["manifests"]:
            _dry_run(api_client, manifest)
    by_pool = {r["pool"]: r for r in reversed(recs)}
    assert by_pool["h100-mig[mig-3g.40gb]"]["resource"] == "nvidia.com/mig-3g.40gb"
    assert by_pool["l4-vgpu"]["resource"] == "nvidia.com/gpu"
    assert by_pool["a100-bm"]["manifests"][0]["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
    ]

    # the same nodes offline, from `kubectl get nodes -o json`: the same answer
    offline = _cli(
        "recommend",
        *WORKLOAD,
        "--nodes",
        str(_nodes_file(api_client, tmp_path / "nodes.json")),
        "--store",
        kb,
        "--top",
        "100",
        "--json",
    )
    assert _without_timing(offline) == _without_timing(answer)


def test_gang_and_what_if_on_the_real_apiserver(
    pool_cluster: ControlPlane, api_client: Any, kb: str, tmp_path: Path
) -> None:
    nodes = str(_nodes_file(api_client, tmp_path / "nodes.json"))
    answer = _cli(
        "recommend",
        *WORKLOAD,
        "--nodes",
        nodes,
        "--store",
        kb,
        "--gpus",
        "16",
        "--what-if-driver",
        "t4-pool=550.54.15",
        "--json",
    )
    top = answer["recommendations"][0]
    assert top["pool"] == "a100-bm" and top["shape"] == {
        "units_per_pod": 8,
        "pods": 2,
        "total_units": 16,
    }
    # serving across nodes is a LeaderWorkerSet (a training gang, PodGroup + PyTorchJob, is
    # dry-run by tests/kube/test_cluster_targets.py); its pods are dry-run as Pods here
    (lws,) = top["manifests"]
    assert lws["kind"] == "LeaderWorkerSet" and lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    template = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "lws-worker-check", **template.get("metadata", {})},
        "spec": template["spec"],
    }
    _dry_run(api_client, pod)
    (what_if,) = answer["what_if"]
    assert what_if["summary"].startswith(
        "t4-pool cannot take this job"
    )  # 16 GPUs do not fit 2 T4 nodes
    single = _cli(
        "recommend",
        *WORKLOAD,
        "--nodes",
        "-",
        "--store",
        kb,  # `kubectl get nodes -o json |`
        "--what-if-driver",
        "t4-pool=550.54.15",
        "--json",
        stdin=Path(nodes).read_text(),
    )
    (what_if,) = single["what_if"]
    assert what_if["driver_from"] == "470.82.01" and what_if["unlocked_candidates"] > 0
    assert what_if["gain"] is not None and what_if["best_after"]["driver"] == "550.54.15"
