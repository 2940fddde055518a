"""The placement snippet's pieces without a cluster: exact driver thresholds as ORed node-affinity
terms, VM exclusion, MIG resources, the image rule (the user's, else the knowledge base's, else
no snippet) through the engine on a real embedded store. The same snippets go through a real
kube-apiserver in tests/kube/test_snippet.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.manifests.pod import (
    HYPERVISOR,
    VGPU_PRESENT,
    driver_terms,
    placement_snippet,
)
from stack_advisor.advisor.workload import Workload
from stack_advisor.catalog import resolve_accelerator
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import PlacementKind, ResultDocument, SoftwareStack
from stack_advisor.store.registry import open_store
from tests.support.api import document

IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"
STACK = SoftwareStack(
    driver="550.54.15", cuda="12.4", cudnn="9.1.0", framework="pytorch", framework_version="2.3.1"
)


def _terms(manifest: dict[str, Any]) -> list[list[dict[str, Any]]]:
    affinity = manifest["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    return [t["matchExpressions"] for t in affinity["nodeSelectorTerms"]]


def test_driver_threshold_is_exact_on_major_minor_and_revision() -> None:
    """Reproducer: a minimum driver of 525.60.13 was expressed as "major > 524"."""
    new, old = "nvidia.com/cuda.driver-version.", "nvidia.com/cuda.driver."
    assert driver_terms("525.60.13") == [
        [{"key": new + "major", "operator": "Gt", "values": ["525"]}],
        [
            {"key": new + "major", "operator": "Gt", "values": ["524"]},
            {"key": new + "major", "operator": "Lt", "values": ["526"]},
            {"key": new + "minor", "operator": "Gt", "values": ["60"]},
        ],
        [
            {"key": new + "major", "operator": "Gt", "values": ["524"]},
            {"key": new + "major", "operator": "Lt", "values": ["526"]},
            {"key": new + "minor", "operator": "Gt", "values": ["59"]},
            {"key": new + "minor", "operator": "Lt", "values": ["61"]},
            {"key": new + "revision", "operator": "Gt", "values": ["12"]},
        ],
        [{"key": old + "major", "operator": "Gt", "values": ["525"]}],
        [
            {"key": old + "major", "operator": "Gt", "values": ["524"]},
            {"key": old + "major", "operator": "Lt", "values": ["526"]},
            {"key": old + "minor", "operator": "Gt", "values": ["60"]},
        ],
        [
            {"key": old + "major", "operator": "Gt", "values": ["524"]},
            {"key": old + "major", "operator": "Lt", "values": ["526"]},
            {"key": old + "minor", "operator": "Gt", "values": ["59"]},
            {"key": old + "minor", "operator": "Lt", "values": ["61"]},
            {"key": old + "rev", "operator": "Gt", "values": ["12"]},
        ],
    ]
    assert driver_terms("455.23")[:2] == [
        [{"key": new + "major", "operator": "Gt", "values": ["455"]}],
        [
            {"key": new + "major", "operator": "Gt", "values": ["454"]},
            {"key": new + "major", "operator": "Lt", "values": ["456"]},
            {"key": new + "minor", "operator": "Gt", "values": ["22"]},
        ],
    ]
    with pytest.raises(InvalidInput, match="not a driver version"):
        driver_terms("r535")


def _snippet(
    accelerator: str = "NVIDIA A100-SXM4-80GB",
    placement: PlacementKind = PlacementKind.BARE_METAL,
    count: int = 1,
    **kw: Any,
) -> dict[str, Any]:
    return placement_snippet(
        workload_name="w",
        stack=STACK,
        accelerator=accelerator,
        count=count,
        placement=placement,
        image=kw.pop("image", IMAGE),
        **kw,
    )


def test_bare_metal_excludes_vms_and_passthrough_requires_one() -> None:
    """Reproducer: "bare-metal" did not exclude VMs (NFD's hypervisor CPUID label)."""
    (bare,) = _terms(_snippet())
    assert {"key": HYPERVISOR, "operator": "NotIn", "values": ["true"]} in bare
    assert {"key": VGPU_PRESENT, "operator": "NotIn", "values": ["true"]} in bare
    (passthrough,) = _terms(_snippet(placement=PlacementKind.PASSTHROUGH))
    assert {"key": HYPERVISOR, "operator": "In", "values": ["true"]} in passthrough
    vgpu = _snippet("NVIDIA A100-SXM-80C", PlacementKind.VGPU)
    assert vgpu["spec"]["nodeSelector"][VGPU_PRESENT] == "true"
    assert vgpu["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    # every driver term keeps the placement's expressions
    for term in _terms(_snippet(min_driver="525.60.13")):
        assert {"key": HYPERVISOR, "operator": "NotIn", "values": ["true"]} in term


def test_mig_asks_for_the_mig_resource_and_the_count_scales_it() -> None:
    pod = _snippet("NVIDIA A100-SXM-80GB (7x1g.10gb MIG)", count=4)
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": 28}
    assert pod["spec"]["nodeSelector"]["nvidia.com/mig.strategy"] == "mixed"
    assert (
        "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb" in pod["metadata"]["annotations"]["stack-advisor/mig"]
    )
    assert _snippet(count=8)["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": 8
    }


def test_image_is_required_and_checked() -> None:
    assert _snippet()["spec"]["containers"][0]["image"] == IMAGE
    for bad in ("", "  ", "nvcr.io/a b"):
        with pytest.raises(InvalidInput, match="--image"):
            _snippet(image=bad)
    with pytest.raises(ValueError, match="not a container image reference"):
        Workload(benchmark="resnet50", image="two words")


@pytest.fixture
def collector_kb(tmp_path: Path) -> Any:
    """Two collector runs: one from a plan Job (its stack records the image), one without."""
    with_image = document("run-plan", value=1000.0)
    with_image["stack"]["image"] = "ghcr.io/stack-advisor/collector:torch2.3.1-cuda12.4"
    without = document("run-local", value=900.0, accelerator="NVIDIA L4")
    without["stack"]["framework_version"] = "2.2.0"
    store = open_store(f"embedded:{tmp_path / 'kb'}")
    store.ensure_schema()
    for doc in (with_image, without):
        store.ingest_document(ResultDocument.model_validate(doc))
    yield store
    store.close()


def test_the_knowledge_bases_image_is_used_else_none_is_emitted(collector_kb: Any) -> None:
    advisor = Advisor(collector_kb)
    workload = {"family": "cnn", "benchmark": "resnet50-train", "include_predicted": False}
    a100, l4 = (
        resolve_accelerator(n).key for n in ("NVIDIA A100-SXM4-80GB", "NVIDIA L4")
    )  # canonical names
    recs = {r.candidate.accelerator: r for r in advisor.recommend(workload).recommendations}
    planned = recs[a100]
    assert (
        planned.snippet["spec"]["containers"][0]["image"]
        == "ghcr.io/stack-advisor/collector:torch2.3.1-cuda12.4"
    )
    assert (
        planned.snippet["metadata"]["annotations"]["stack-advisor/image-source"]
        == "recorded with this stack"
    )
    local = recs[l4]
    assert local.snippet is None and "pass --image" in (local.snippet_missing or "")
    # --image fills in where the knowledge base has none; the recorded image stays where it has one
    given = {
        r.candidate.accelerator: r
        for r in advisor.recommend({**workload, "image": IMAGE}).recommendations
    }
    assert given[l4].snippet["spec"]["containers"][0]["image"] == IMAGE
    assert (
        given[l4].snippet["metadata"]["annotations"]["stack-advisor/image-source"]
        == "given (--image)"
    )
    assert (
        given[a100].snippet["spec"]["containers"][0]["image"]
        == "ghcr.io/stack-advisor/collector:torch2.3.1-cuda12.4"
    )
