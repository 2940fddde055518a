"""Issue 44's goal on real answers: every target's snippets for a sample of >= 50 recommendations
of the starter knowledge base (inference and training, single- and multi-node systems, every
vendor it ranks) pass server-side dry-run on the real kube-apiserver; placeholders only in the
targets whose fields a recommendation cannot know (Kueue's queue and rack level, KubeVirt's VM
resources, a runtime for a framework Trainer publishes none for)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.advisor.manifests.target_kind import SnippetTarget
from tests.support.crd_dry_run import dry_run
from tests.support.snippet_targets import PLACEHOLDER, objects

pytestmark = [pytest.mark.kube, pytest.mark.slow]

IMAGE = "registry.example/bench:1.0"
WORKLOADS = (
    {"benchmark": "llama2-70b-99", "scenario": "Offline"},
    {"benchmark": "llama3.1-405b", "scenario": "Offline"},
    {"benchmark": "resnet50", "scenario": "Offline"},
    {"family": "mlperf-training", "benchmark": "llama2_70b_lora"},
    {"family": "mlperf-training", "benchmark": "bert"},
)
KNOWN_EVERYWHERE = (
    SnippetTarget.POD,
    SnippetTarget.DEPLOYMENT,
    SnippetTarget.DRA,
    SnippetTarget.LWS,
    SnippetTarget.JOBSET,
)


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory, starter_kb: Path) -> Iterator[Any]:
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.store.registry import open_store
    from tests.support.starter_kb import copy_starter_kb

    store = open_store(copy_starter_kb(starter_kb, tmp_path_factory.mktemp("starter") / "kb"))
    try:
        yield Advisor(store)
    finally:
        store.close()


def test_snippets_of_real_recommendations_passdry_run(
    starter: Any,
    served: tuple[Any, str],
) -> None:
    from kubernetes.client.rest import ApiException

    dyn, namespace = served
    rows, checked, errors, accelerators = 0, 0, [], set()
    for target in SnippetTarget:
        for workload in WORKLOADS:
            answer = starter.recommend({**workload, "image": IMAGE, "target": target}, top=12)
            for row in answer.recommendations:
                rows += target is SnippetTarget.POD
                accelerators.add(row.candidate.accelerator)
                if row.snippet is None:
                    assert row.snippet_missing, (target, row.rank)
                    continue
                if target in KNOWN_EVERYWHERE:
                    assert not PLACEHOLDER.findall(str(row.snippet)), (target, row.rank)
                for obj in objects(row.snippet):
                    try:
                        dry_run(dyn, namespace, obj)
                    except ApiException as exc:
                        errors.append(f"{target} {workload} #{row.rank} {obj['kind']}: {exc.body}")
                    checked += 1
    assert not errors, "\n".join(errors[:5])
    assert rows >= 50 and checked >= 300, (rows, checked)
    print(
        f"{rows} recommendations x {len(SnippetTarget)} targets: {checked} objects accepted; "
        f"{len(accelerators)} accelerators"
    )
