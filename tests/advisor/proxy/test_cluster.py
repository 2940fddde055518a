"""Cluster mode by proxy (issue 42 item 6): a described model over the user's node pools answers
per pool with basis proxy, in the shapes of every cluster answer; a pool whose part the proxy has
no reference on is excluded, saying why (the starter knowledge base)."""

from __future__ import annotations

from typing import Any

import pytest

from stack_advisor.advisor.cluster.advice import ClusterAdvisor
from stack_advisor.advisor.cluster.pools import group_pools, nodes_from_json
from stack_advisor.advisor.cluster.results import PoolBasis
from tests.support.gfd_pools import POOL_NODES, h100_nodes

WORKLOAD = {"model": {"name": "gpt-oss-120b"}, "scenario": "Offline", "isl": 2048, "osl": 512}


@pytest.mark.slow
def test_described_model_is_answered_by_proxy_per_pool(kb_advisor: Any) -> None:
    pools = group_pools(nodes_from_json([*POOL_NODES, *h100_nodes(2)]))
    answer = ClusterAdvisor(kb_advisor).recommend(WORKLOAD, pools, source="test", top=20)
    recs = answer.recommendations
    assert recs and {r.pool for r in recs} == {"h100-train"}
    for r in recs:
        assert r.basis is PoolBasis.PROXY and r.metric == "tokens_per_second"
        assert r.interval.low < r.value < r.interval.high
        assert r.job_value == pytest.approx(r.value * r.shape.total_units)
        assert r.based_on["basis"] == "proxy"
    assert answer.excluded_pools["a100-bm"].startswith("no proxy estimate")
    assert answer.excluded_pools["t4-pool"].startswith("no proxy estimate")
