"""Against a REAL kube-apiserver: every snippet target for a row of each vendor (NVIDIA, AMD, Intel
i915 and xe, Gaudi; one node and several; training and serving; bare metal and passthrough) passes
server-side dry-run with strict field validation. DRA is built in (``resource.k8s.io/v1``: the
apiserver compiles each CEL selector); LeaderWorkerSet, JobSet and Trainer's TrainJob are checked
against the CRDs their projects publish (fetched through the Go module proxy), KubeVirt's
VirtualMachineInstance against the OpenAPI schema virt-operator installs (kubevirt.io/kubevirt's
generated validations, through the same proxy); the training operator's kind is served without a
schema (tests.support.crds says why), so its pod templates are dry-run as Pods too."""

from __future__ import annotations

from typing import Any

import pytest

from stack_advisor.advisor.manifests.target_kind import SnippetTarget
from tests.support.crd_dry_run import dry_run
from tests.support.snippet_targets import build, cases, objects

pytestmark = [pytest.mark.kube, pytest.mark.slow]  # CRDs fetched and installed: ~2 min


@pytest.mark.parametrize("target", list(SnippetTarget), ids=str)
def test_every_vendor_snippet_passes_server_sidedry_run(
    served: tuple[Any, str], target: SnippetTarget
) -> None:
    from kubernetes.client.rest import ApiException

    dyn, namespace = served
    checked, refused, errors = 0, 0, []
    for case in (c for c in cases() if c.target is target):
        manifest, why = build(case)
        if manifest is None:
            assert why, case.label
            refused += 1
            continue
        for obj in objects(manifest):
            try:
                dry_run(dyn, namespace, obj)
            except ApiException as exc:
                errors.append(f"{case.label} {obj['kind']}: {exc.body}")
            checked += 1
    assert not errors, "\n".join(errors[:5])
    assert checked >= 14, (target, checked, refused)  # 7 parts x at least 2 shapes each


def test_the_dry_run_is_strict_for_published_schemas_and_cel(served: tuple[Any, str]) -> None:
    """The check above can fail: an unknown field in a published CRD's kind and a CEL selector
    that does not compile are refused by the same apiserver."""
    import copy

    from kubernetes.client.rest import ApiException

    from stack_advisor.schema.models import PlacementKind
    from tests.support.snippet_targets import Case

    dyn, namespace = served
    jobset, _ = build(
        Case(
            "H100-SXM5-80GB",
            "nvidia.com/gpu",
            SnippetTarget.JOBSET,
            2,
            8,
            True,
            PlacementKind.BARE_METAL,
        )
    )
    assert jobset is not None
    typo = copy.deepcopy(jobset)
    typo["spec"]["replicatedJobz"] = typo["spec"].pop("replicatedJobs")
    with pytest.raises(ApiException, match="replicatedJobz"):
        dry_run(dyn, namespace, typo)
    dra, _ = build(
        Case(
            "H100-SXM5-80GB",
            "nvidia.com/gpu",
            SnippetTarget.DRA,
            1,
            8,
            False,
            PlacementKind.BARE_METAL,
        )
    )
    assert dra is not None
    claim = copy.deepcopy(objects(dra)[0])
    selectors = claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
    selectors[0]["cel"]["expression"] = "device.driver ==="
    with pytest.raises(ApiException, match=r"compil|[Ss]yntax"):
        dry_run(dyn, namespace, claim)


def test_the_kubevirt_schema_is_the_published_one(served: tuple[Any, str]) -> None:
    """The VirtualMachineInstance kind is served with the schema virt-operator installs (not
    schema-less): a misspelt device list and a guest memory that is no quantity are refused."""
    import copy

    from kubernetes.client.rest import ApiException

    from stack_advisor.schema.models import PlacementKind
    from tests.support.snippet_targets import Case

    dyn, namespace = served
    vm, why = build(
        Case(
            "H100-SXM5-80GB",
            "nvidia.com/gpu",
            SnippetTarget.KUBEVIRT,
            1,
            2,
            False,
            PlacementKind.PASSTHROUGH,
        )
    )
    assert vm is not None, why
    dry_run(dyn, namespace, vm)
    typo = copy.deepcopy(vm)
    typo["spec"]["domain"]["devices"]["gpuz"] = typo["spec"]["domain"]["devices"].pop("gpus")
    with pytest.raises(ApiException, match="gpuz"):
        dry_run(dyn, namespace, typo)
    guessed = copy.deepcopy(vm)
    guessed["spec"]["domain"]["memory"] = {"guest": "REPLACE_GUEST_MEMORY"}
    with pytest.raises(ApiException, match=r"spec\.domain\.memory\.guest"):
        dry_run(dyn, namespace, guessed)
