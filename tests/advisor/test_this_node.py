"""The node that answers is a setting read at the edges (issue 30): ``NODE_NAME`` is read by the CLI
and the API's start-up and passed in (``Advisor(node=...)``); the advisor layer never reads it."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.results import this_node
from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from tests.support.cli import advisor, isolate_cli
from tests.support.samples import make_obs

WORKLOAD = {"family": "pi", "benchmark": "gemm"}


@pytest.fixture
def measured_on_node_a(embedded_store: Store) -> Store:
    """GEMM measured by our collector on host ``node-a``."""
    embedded_store.ingest(IngestBatch(observations=[make_obs(i, host="node-a") for i in range(4)]))
    return embedded_store


def notes(advisor: Advisor) -> list[str | None]:
    rows = advisor.recommend(WORKLOAD).recommendations
    assert rows and all(r.basis.value == "observed" for r in rows)
    return [r.basis_note for r in rows]


def test_this_node_reads_the_mapping_it_is_given() -> None:
    assert this_node({"NODE_NAME": "gpu-7"}) == "gpu-7"
    assert this_node({}) == socket.gethostname()
    assert this_node({"NODE_NAME": ""}) == socket.gethostname()  # an empty downward-API value


def test_the_advisor_says_measured_here_only_for_the_node_passed_in(
    measured_on_node_a: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert set(notes(Advisor(measured_on_node_a, node="node-a"))) == {"measured on this node"}
    assert set(notes(Advisor(measured_on_node_a, node="node-b"))) == {"measured on node node-a"}
    monkeypatch.setenv("NODE_NAME", "node-a")  # the advisor layer does not read it
    assert set(notes(Advisor(measured_on_node_a))) == {"measured on node node-a"}


def test_the_cli_edge_passes_node_name_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"embedded:{tmp_path / 'kb'}"
    with open_store(uri) as store:
        store.ingest(IngestBatch(observations=[make_obs(i, host="node-a") for i in range(4)]))
    isolate_cli(monkeypatch, tmp_path)
    args = ["recommend", "--family", "pi", "--benchmark", "gemm", "--store", uri, "--json"]
    for node, note in (("node-a", "measured on this node"), ("node-b", "measured on node node-a")):
        monkeypatch.setenv("NODE_NAME", node)
        code, out, _ = advisor(capsys, *args)
        rows = json.loads(out)["recommendations"]
        assert code == 0
        assert rows and {r["basis_note"] for r in rows} == {note}
