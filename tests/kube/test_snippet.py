"""Against a REAL kube-apiserver + etcd: the placement snippets `recommend` emits for bare-metal,
MIG, vGPU and passthrough candidates pass server-side dry-run (create and server-side apply, as
`kubectl apply --dry-run=server` does), and their scheduling constraints select exactly the right
GFD/NFD-labelled nodes.

Node selection is evaluated by the API server itself: each ORed node-affinity term (with the
nodeSelector) becomes a label selector, parsed and matched by apimachinery's ``labels`` package,
the code node affinity is built on (``In``/``NotIn``/``Gt``/``Lt`` alike); then the node must
tolerate-match its taints and have the requested extended resources allocatable. There is no
kube-scheduler here, so those last two checks are done in the test, from the nodes as stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.manifests.pod import placement_snippet
from stack_advisor.catalog import resolve_accelerator
from stack_advisor.schema.models import IngestBatch, PlacementKind, SoftwareStack
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot
from tests.support.gfd_nodes import DRIVER_NODES, SNIPPET_NODES, SNIPPET_SUITE

pytestmark = pytest.mark.kube
NAMESPACE = "snippet-test"
IMAGE = "nvcr.io/nvidia/tensorrt:23.04-py3"


@pytest.fixture(scope="module")
def core(api_client: Any) -> Iterator[Any]:
    """The CoreV1 API with the snippet namespace and the GFD-labelled snippet nodes registered."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api = client.CoreV1Api(api_client)
    # the namespace, and its default ServiceAccount (Pod admission needs it; without the
    # controller manager nothing else creates it)
    for create, body in (
        (
            api.create_namespace,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        ),
        (
            lambda b: api.create_namespaced_service_account(NAMESPACE, b),
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
        ),
    ):
        try:
            create(body)
        except ApiException as exc:
            if exc.status != 409:
                raise
    for node in SNIPPET_NODES:
        name = node["metadata"]["name"]
        api.create_node({k: v for k, v in node.items() if k != "status"})
        api.patch_node_status(name, {"status": node["status"]})
        # The TaintNodesByCondition admission plugin taints every new node
        # node.kubernetes.io/not-ready:NoSchedule; the node lifecycle controller lifts it once the
        # node reports Ready. That controller does not run here, so lift it as it would.
        api.patch_node(name, {"spec": {"taints": node["spec"].get("taints") or None}})
        stored = api.api_client.sanitize_for_serialization(api.read_node(name))
        assert (stored["spec"].get("taints") or []) == (node["spec"].get("taints") or []), name
    yield api
    for node in SNIPPET_NODES:
        api.delete_node(node["metadata"]["name"])


@pytest.fixture(scope="module")
def advisor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Advisor]:
    """A real embedded store with published resnet50 and bert-99 Offline results (bare metal,
    MIG, vGPU) and the project's own H100 GEMM runs in a passthrough VM."""
    keep = {("mlperf-inference", "resnet50"), ("mlperf-inference", "bert-99"), ("pi", "gemm")}
    rows = [
        o
        for o in load_snapshot().observations
        if (o.benchmark.family, o.benchmark.name) in keep
        and o.benchmark.parameters.get("scenario") in (None, "Offline")
    ]
    store = open_store(f"embedded:{tmp_path_factory.mktemp('snippet-kb') / 'kb'}")
    store.ensure_schema()
    store.ingest(IngestBatch(observations=rows))
    yield Advisor(store)
    store.close()


def _requirement(expr: dict[str, Any]) -> str:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    return {
        "In": f"{key} in ({','.join(values)})",
        "NotIn": f"{key} notin ({','.join(values)})",
        "Exists": key,
        "DoesNotExist": f"!{key}",
        "Gt": f"{key}>{values[0] if values else ''}",
        "Lt": f"{key}<{values[0] if values else ''}",
    }[op]


def _tolerated(taint: dict[str, Any], tolerations: list[dict[str, Any]]) -> bool:
    return any(
        t.get("key") == taint.get("key")
        and (t.get("operator") == "Exists" or t.get("value") == taint.get("value"))
        and t.get("effect") in (None, taint.get("effect"))
        for t in tolerations
    )


def selected_nodes(core: Any, pod: dict[str, Any]) -> set[str]:
    """The snippet nodes this Pod can land on (see the module docstring)."""
    spec = pod["spec"]
    base = [f"{k}={v}" for k, v in {**spec.get("nodeSelector", {}), **SNIPPET_SUITE}.items()]
    affinity = (
        spec.get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    terms = [t["matchExpressions"] for t in affinity["nodeSelectorTerms"]] if affinity else [[]]
    nodes: dict[str, Any] = {}
    for term in terms:  # ORed
        selector = ",".join(base + [_requirement(e) for e in term])
        # as JSON, whichever object model this kubernetes client returns
        nodes.update(
            {
                n["metadata"]["name"]: n
                for n in core.api_client.sanitize_for_serialization(
                    core.list_node(label_selector=selector)
                )["items"]
            }
        )
    limits = spec["containers"][0].get("resources", {}).get("limits", {})
    out = set()
    for name, node in nodes.items():
        allocatable = node.get("status", {}).get("allocatable") or {}
        if any(
            int(allocatable.get(res, "0")) < int(amount)
            for res, amount in limits.items()
            if "/" in res
        ):
            continue
        taints = node.get("spec", {}).get("taints") or []
        if any(
            t.get("effect") == "NoSchedule" and not _tolerated(t, spec.get("tolerations", []))
            for t in taints
        ):
            continue
        out.add(name)
    return out


def dry_run(core: Any, api_client: Any, pod: dict[str, Any]) -> None:
    """Server-side dry-run: create, and server-side apply (what `kubectl apply --dry-run=server
    --server-side` sends); raises ApiException when the API server rejects the Pod."""
    del core  # the namespace and nodes exist once ``core`` does
    from kubernetes import dynamic

    # The dynamic client sends the manifest as written (the typed client would coerce it first).
    pods = dynamic.DynamicClient(api_client).resources.get(api_version="v1", kind="Pod")
    pods.create(body=pod, namespace=NAMESPACE, dry_run="All")
    pods.server_side_apply(
        body=pod,
        name=pod["metadata"]["name"],
        namespace=NAMESPACE,
        field_manager="stack-advisor-tests",
        dry_run="All",
    )


def _recommend(advisor: Advisor, **workload: Any) -> Any:
    result = advisor.recommend({"include_predicted": False, "image": IMAGE, **workload}, top=20)
    assert result.recommendations, result.excluded
    return result.recommendations


def test_the_api_server_rejects_a_pod_without_an_image(core: Any, api_client: Any) -> None:
    """Reproducer: the snippet had no container image and the API server rejected the Pod —
    and the dry-run here is strict enough to notice."""
    from kubernetes.client.rest import ApiException

    pod = placement_snippet(
        workload_name="no-image",
        stack=SoftwareStack(cuda="12.0"),
        accelerator="NVIDIA L4",
        count=1,
        placement=PlacementKind.BARE_METAL,
        image=IMAGE,
    )
    del pod["spec"]["containers"][0]["image"]
    with pytest.raises(ApiException) as caught:
        dry_run(core, api_client, pod)
    assert caught.value.status == 422 and "image" in caught.value.body


def test_bare_metal_snippet_is_accepted_and_selects_bare_metal_nodes_with_the_driver(
    core: Any, api_client: Any, advisor: Advisor
) -> None:
    """Reproducers: "major > 524" for a minimum of 525.60.13; bare metal did not exclude VMs."""
    recs = _recommend(
        advisor,
        benchmark="resnet50",
        scenario="Offline",
        frameworks=[{"name": "cuda", "version": "==12.0"}],
        hardware={"accelerators": ["A100-SXM4-80GB"], "placements": ["bare-metal"]},
    )
    rec = next(r for r in recs if "MIG" not in r.candidate.accelerator)
    pod = rec.snippet
    assert pod["metadata"]["annotations"]["stack-advisor/min-driver"] == "525.60.13"
    dry_run(core, api_client, pod)
    two_gpus = (
        {"snip-a100-2-gpus"} if rec.candidate.accelerator_count <= 2 else set()
    )  # gpu.count > count-1
    assert selected_nodes(core, pod) == {
        "snip-a100-525-60-13",
        "snip-a100-525-61-00",
        "snip-a100-525-105-17",
        "snip-a100-550-54-15",
        "snip-a100-old-525-60-13",
        *two_gpus,
    }  # not the VMs, the all-MIG node or older drivers


def test_driver_thresholds_select_exactly_the_nodes_at_or_above_the_minimum(
    core: Any, api_client: Any
) -> None:
    def version(node: dict[str, Any]) -> tuple[int, ...] | None:
        labels = node["metadata"]["labels"]
        if (
            "nvidia.com/cuda.driver-version.major" not in labels
            and "nvidia.com/cuda.driver.major" not in labels
        ):
            return None  # only the full version: affinity cannot compare it
        return tuple(
            int(p)
            for p in (
                labels.get("nvidia.com/cuda.driver-version.full")
                or ".".join(
                    labels[f"nvidia.com/cuda.driver.{p}"] for p in ("major", "minor", "rev")
                )
            ).split(".")
        )

    for minimum in ("525.60.13", "525.61", "470.82.01", "550.54.16", "525"):
        pod = placement_snippet(
            workload_name="driver",
            stack=SoftwareStack(cuda="12.0"),
            accelerator="NVIDIA A100-SXM4-80GB",
            count=1,
            placement=PlacementKind.BARE_METAL,
            image=IMAGE,
            min_driver=minimum,
        )
        dry_run(core, api_client, pod)
        want = tuple(int(p) for p in minimum.split("."))
        expected = {
            n["metadata"]["name"]
            for n in DRIVER_NODES
            if (v := version(n)) is not None and v[: len(want)] >= want
        }
        assert (
            selected_nodes(core, pod) & {n["metadata"]["name"] for n in DRIVER_NODES} == expected
        ), minimum


def test_mig_snippet_asks_for_mig_instances_and_lands_on_the_mixed_node(
    core: Any, api_client: Any, advisor: Advisor
) -> None:
    """Reproducer: a MIG candidate asked for nvidia.com/gpu: 4 instead of the MIG resource."""
    recs = _recommend(
        advisor,
        benchmark="resnet50",
        scenario="Offline",
        hardware={"accelerators": ["A100-SXM4-80GB (7x1g.10gb MIG)"]},
    )
    rec = recs[0]
    pod = rec.snippet
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/mig-1g.10gb": 7 * rec.candidate.accelerator_count
    }
    dry_run(core, api_client, pod)
    assert selected_nodes(core, pod) == {"snip-a100-mig-mixed"}


def test_vgpu_snippet_lands_on_the_vgpu_node(core: Any, api_client: Any, advisor: Advisor) -> None:
    recs = _recommend(
        advisor,
        benchmark="bert-99",
        scenario="Offline",
        hardware={"accelerators": ["A100-SXM-80C"], "placements": ["vgpu"]},
    )
    pod = recs[0].snippet
    dry_run(core, api_client, pod)
    assert selected_nodes(core, pod) == {"snip-a100-vgpu"}


def test_passthrough_snippet_lands_on_a_vm_with_a_new_enough_driver(
    core: Any, api_client: Any, advisor: Advisor
) -> None:
    recs = _recommend(
        advisor,
        family="pi",
        benchmark="gemm",  # our H100 runs (an H200 was measured too)
        hardware={"placements": ["passthrough"], "accelerators": ["H100-SXM5-80GB"]},
    )
    rec = recs[0]
    assert (
        rec.candidate.accelerator == resolve_accelerator("NVIDIA H100 80GB HBM3").key
    )  # the catalogue's name
    pod = rec.snippet
    assert pod["metadata"]["annotations"]["stack-advisor/min-driver"] == "580.65.06"  # CUDA 13.0
    dry_run(core, api_client, pod)
    assert selected_nodes(core, pod) == {"snip-h100-passthrough"}


def test_the_users_count_is_requested(core: Any, api_client: Any, advisor: Advisor) -> None:
    recs = _recommend(
        advisor,
        benchmark="resnet50",
        scenario="Offline",
        hardware={"accelerators": ["A100-SXM4-80GB"], "count": 4},
    )
    pod = next(r for r in recs if "MIG" not in r.candidate.accelerator).snippet
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 4}
    dry_run(core, api_client, pod)
    selected = selected_nodes(core, pod)
    assert "snip-a100-550-54-15" in selected  # eight GPUs and a new driver
    assert "snip-a100-2-gpus" not in selected  # two GPUs: gpu.count > 3 fails
