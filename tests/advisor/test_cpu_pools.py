"""CPU-only node pools in recommend --cluster: labelled nodes with no GPU are a pool for CPU
benchmarks; their figure is only ever one our collector measured on their own nodes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.advisor.cluster.advice import ClusterAdvisor
from stack_advisor.advisor.cluster.cpu_pools import UNMEASURED_REASON, all_pools
from stack_advisor.advisor.cluster.pools import nodes_from_json
from stack_advisor.advisor.cluster.results import PoolBasis
from stack_advisor.store.registry import open_store
from tests.support.api import document
from tests.support.gfd_nodes import A100_BARE_METAL, node

WORKLOAD = {"family": "pi", "benchmark": "mem_triad"}


def _cpu_document(host: str) -> dict[str, Any]:
    """A PI-suite document as our collector writes it on a CPU-only host."""
    doc = document(
        f"cpu-run-{host}",
        value=3.65,
        metric="gbps",
        accelerator="CPU AMD EPYC",
        placement="unknown",
    )
    doc["accelerator"] = {
        "model": "CPU AMD EPYC",
        "vendor": "cpu",
        "count": 1,
        "memory_mib": None,
        "compute_capability": None,
    }
    doc["stack"] = {"framework": "numpy", "framework_version": "2.4.6", "python": "3.11.7"}
    doc["host"]["name"] = host
    doc["provenance"]["details"]["host"] = host
    for m in doc["measurements"]:
        m["benchmark"] = {"family": "pi", "name": "mem_triad", "parameters": {"n": 1 << 24}}
        m["unit"] = "GB/s"
    return doc


@pytest.fixture(scope="module")
def advisor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from stack_advisor.advisor.engine import Advisor

    store = open_store(f"embedded:{Path(tmp_path_factory.mktemp('cpu-kb')) / 'kb'}")
    store.ingest_document(_cpu_document("cpu-node-1"))
    yield Advisor(store)
    store.close()


NODES = [
    node("cpu-node-1", {"stack-advisor.io/pool": "cpu-a"}, cpu="2", memory="24Gi"),
    node("cpu-node-2", {"stack-advisor.io/pool": "cpu-b"}, cpu="2", memory="24Gi"),
    node("control-plane", {"node.kubernetes.io/instance-type": "m6i.large"}, cpu="2", memory="8Gi"),
    A100_BARE_METAL,
]


def test_a_labelled_cpu_pool_is_measured_on_its_own_nodes(advisor: Any) -> None:
    pools = all_pools(nodes_from_json(NODES))
    kinds = {p.name: p.kind for p in pools}
    assert kinds["cpu-a"] == kinds["cpu-b"] == "cpu"
    assert [p.kind for p in pools if p.kind == "gpu"], pools  # the A100 node: still a GPU pool
    assert not any("control-plane" in p.nodes for p in pools)  # the instance type makes no CPU pool
    result = ClusterAdvisor(advisor).recommend(
        WORKLOAD, pools, source="test", image="stack-advisor/collector:cpu-dev"
    )
    [measured] = [r for r in result.recommendations if r.pool == "cpu-a"]
    assert measured.basis is PoolBasis.MEASURED and measured.evidence.submitters == ["cpu-node-1"]
    assert measured.value == pytest.approx(3.65) and measured.unit == "GB/s"
    [pod] = measured.manifests
    assert pod["spec"]["nodeSelector"] == {"stack-advisor.io/pool": "cpu-a"}
    assert "resources" not in pod["spec"]["containers"][0]  # no GPU (or CPU limit) to request
    assert result.excluded_pools["cpu-b"] == UNMEASURED_REASON  # never transferred from cpu-a


def test_a_gpu_job_excludes_cpu_pools(advisor: Any) -> None:
    pools = all_pools(nodes_from_json(NODES))
    result = ClusterAdvisor(advisor).recommend(WORKLOAD, pools, source="test", gpus=1)
    assert result.excluded_pools["cpu-a"] == "CPU-only pool: the job asks for 1 GPU(s)"
    assert not [r for r in result.recommendations if r.pool.startswith("cpu-")]
