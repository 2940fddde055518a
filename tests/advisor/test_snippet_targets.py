"""Every snippet target for a row of each vendor, without a cluster: the vendor's resource is
requested, a multi-node row never becomes one Pod, every field the recommendation cannot know is a
named placeholder (listed with its meaning) and nothing else is, DRA selectors and Kueue topology
come from the catalogue's facts. The same snippets pass server-side dry-run in
tests/kube/test_snippet_targets.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stack_advisor.advisor.manifests.shape import PLACEHOLDERS
from stack_advisor.advisor.manifests.target_kind import SnippetTarget
from stack_advisor.advisor.manifests.targets import KUEUE_PREFERRED, KUEUE_REQUIRED
from stack_advisor.catalog import load_catalog
from stack_advisor.catalog.device_plugins import device_facts, plugins
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import PlacementKind
from tests.support.snippet_targets import PARTS, PLACEHOLDER, Case, build, cases, objects


def _pod_specs(node: Any) -> list[dict[str, Any]]:
    """Every pod spec inside an object (a Pod's spec, templates' specs)."""
    if isinstance(node, dict):
        found = [node] if "containers" in node else []
        return found + [s for v in node.values() for s in _pod_specs(v)]
    if isinstance(node, list):
        return [s for v in node for s in _pod_specs(v)]
    return []


def test_every_vendor_part_has_its_device_plugin_resource_in_the_catalogue() -> None:
    catalog = load_catalog()
    for part, resource in PARTS:
        facts = device_facts(catalog.accelerators[part])
        assert facts is not None and facts.plugin.resource == resource, part
    assert {p.resource for p in plugins()} >= {r for _, r in PARTS}


def test_pods_request_the_vendors_resource_and_select_known_products() -> None:
    for part, resource in PARTS:
        case = Case(part, resource, SnippetTarget.POD, 1, 8, False, PlacementKind.BARE_METAL)
        pod, why = build(case)
        assert why is None and pod is not None and pod["kind"] == "Pod"
        assert pod["spec"]["containers"][0]["resources"]["limits"] == {resource: 8}, part
    amd, _ = build(
        Case("MI300X", "amd.com/gpu", SnippetTarget.POD, 1, 8, False, PlacementKind.BARE_METAL)
    )
    assert amd is not None
    assert amd["spec"]["nodeSelector"]["amd.com/gpu.product-name"] == "AMD_Instinct_MI300X_OAM"
    unknown, _ = build(
        Case("MI325X", "amd.com/gpu", SnippetTarget.POD, 1, 8, False, PlacementKind.BARE_METAL)
    )
    assert unknown is not None
    assert "amd.com/gpu.product-name" not in unknown["spec"].get("nodeSelector", {})
    assert "MI325X" in unknown["metadata"]["annotations"]["stack-advisor/select-part"]


def test_a_multi_node_row_never_yields_a_single_pod() -> None:
    seen = 0
    for case in cases():
        if case.nodes == 1:
            continue
        manifest, why = build(case)
        if manifest is None:
            assert why, case.label
            continue
        kinds = [o["kind"] for o in objects(manifest)]
        assert "Pod" not in kinds, (case.label, kinds)
        # every pod of the gang asks one node's worth
        for spec in _pod_specs(manifest):
            resources = spec["containers"][0].get("resources", {})
            assert resources.get("limits", {}).get(case.resource, 8) == 8 or "claims" in resources
        seen += 1
    assert seen > 50


def test_placeholders_are_named_and_listed_and_only_where_unknown() -> None:
    for case in cases():
        manifest, _ = build(case)
        if manifest is None:
            continue
        text = json.dumps(manifest)
        used = set(PLACEHOLDER.findall(text.replace(PLACEHOLDERS, "")))
        listed = {
            name
            for o in objects(manifest)
            for name in PLACEHOLDER.findall(
                o["metadata"].get("annotations", {}).get(PLACEHOLDERS, "")
            )
        }
        assert used <= listed, (case.label, used - listed)
        if case.target in (SnippetTarget.POD, SnippetTarget.DEPLOYMENT, SnippetTarget.DRA):
            assert not used, (case.label, used)  # the recommendation knows every field
        if case.target is SnippetTarget.KUEUE and case.nodes == 1:
            assert used == {"REPLACE_LOCAL_QUEUE"}, case.label


def test_dra_selects_by_the_catalogues_product_memory_and_compute_capability() -> None:
    case = Case(
        "H100-SXM5-80GB", "nvidia.com/gpu", SnippetTarget.DRA, 1, 8, False, PlacementKind.BARE_METAL
    )
    manifest, _ = build(case)
    assert manifest is not None
    claim, pod = objects(manifest)
    request = claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert (request["deviceClassName"], request["count"]) == ("gpu.nvidia.com", 8)
    exprs = [s["cel"]["expression"] for s in request["selectors"]]
    entry = load_catalog().accelerators["H100-SXM5-80GB"]
    assert any(f'productName == "{entry.nvml_names[0]}"' in e for e in exprs)
    assert any(f'quantity("{entry.memory_gb:g}G")' in e for e in exprs)
    assert any('cudaComputeCapability.compareTo(semver("9.0.0")) == 0' in e for e in exprs)
    assert any('driverVersion.compareTo(semver("550.54.15")) >= 0' in e for e in exprs)
    assert (
        pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == claim["metadata"]["name"]
    )
    assert "limits" not in pod["spec"]["containers"][0]["resources"]
    gaudi, _ = build(
        Case("Gaudi3", "habana.ai/gaudi", SnippetTarget.DRA, 1, 8, False, PlacementKind.BARE_METAL)
    )
    assert gaudi is not None
    exprs = [
        s["cel"]["expression"]
        for s in objects(gaudi)[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
    ]
    assert exprs == ['device.driver == "gaudi.intel.com"']  # nothing more is published for it


def _template_annotations(manifest: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "spec" in node and "containers" in node.get("spec", {}):
                found.update(node.get("metadata", {}).get("annotations", {}))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(manifest)
    return found


@pytest.mark.parametrize(
    ("part", "nodes", "required", "preferred"),
    [
        ("H100-SXM5-80GB", 1, "kubernetes.io/hostname", None),
        ("GB200", 4, "nvidia.com/gpu.clique", None),  # 4 x 8 GPUs inside one NVL72 domain
        ("H100-SXM5-80GB", 4, None, "REPLACE_RACK_TOPOLOGY_LEVEL"),
    ],
)
def test_kueue_topology_follows_node_count_and_nvlink_domain(
    part: str, nodes: int, required: str | None, preferred: str | None
) -> None:
    manifest, _ = build(
        Case(part, "nvidia.com/gpu", SnippetTarget.KUEUE, nodes, 8, True, PlacementKind.BARE_METAL)
    )
    assert manifest is not None
    assert manifest["kind"] == ("Job" if nodes == 1 else "JobSet")
    assert manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "REPLACE_LOCAL_QUEUE"
    annotations = _template_annotations(manifest)
    assert annotations.get(KUEUE_REQUIRED) == required
    assert annotations.get(KUEUE_PREFERRED) == preferred


def test_targets_that_cannot_hold_a_row_say_why() -> None:
    bare = Case(
        "MI300X", "amd.com/gpu", SnippetTarget.KUBEVIRT, 1, 8, False, PlacementKind.BARE_METAL
    )
    assert build(bare)[0] is None and "passthrough or vgpu" in str(build(bare)[1])
    wide = Case(
        "H100-SXM5-80GB",
        "nvidia.com/gpu",
        SnippetTarget.DEPLOYMENT,
        2,
        8,
        False,
        PlacementKind.BARE_METAL,
    )
    assert build(wide)[0] is None and "lws" in str(build(wide)[1])
    vm, _ = build(
        Case(
            "H100-SXM5-80GB",
            "nvidia.com/gpu",
            SnippetTarget.KUBEVIRT,
            1,
            8,
            False,
            PlacementKind.PASSTHROUGH,
        )
    )
    assert vm is not None and vm["kind"] == "VirtualMachineInstance"
    assert vm["spec"]["nodeSelector"]["nvidia.com/gpu.workload.config"] == "vm-passthrough"
    assert len(vm["spec"]["domain"]["devices"]["gpus"]) == 8


def test_names_are_unique_per_row() -> None:
    names = set()
    for case in (c for c in cases() if c.target is SnippetTarget.POD):
        manifest, _ = build(case, rank=1)  # same rank, different rows
        assert manifest is not None
        names.add(objects(manifest)[-1]["metadata"]["name"])
        assert len(objects(manifest)[-1]["metadata"]["name"]) <= 63
    assert len(names) == sum(1 for c in cases() if c.target is SnippetTarget.POD)


def test_the_workloads_target_goes_through_the_engine(tmp_path: Any) -> None:
    """The path users call (Advisor.recommend with workload.target) on a real embedded store."""
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.schema.models import ResultDocument
    from stack_advisor.store.registry import open_store
    from tests.support.api import document

    store = open_store(f"embedded:{tmp_path / 'kb'}")
    store.ensure_schema()
    store.ingest_document(ResultDocument.model_validate(document("run-x", value=1000.0)))
    try:
        workload = {
            "family": "cnn",
            "benchmark": "resnet50-train",
            "include_predicted": False,
            "image": "registry.example/train:1.0",
        }
        advisor = Advisor(store)
        for target, kinds in (("pod", ["Pod"]), ("dra", ["ResourceClaimTemplate", "Pod"])):
            (row,) = advisor.recommend({**workload, "target": target}).recommendations
            assert row.snippet is not None
            assert [o["kind"] for o in objects(row.snippet)] == kinds
            assert row.snippet_yaml is not None and row.snippet_yaml.count("kind:") >= len(kinds)
        with pytest.raises(InvalidInput, match=r"target: Input should be 'pod'.*statefulset"):
            advisor.recommend({**workload, "target": "statefulset"})
    finally:
        store.close()
