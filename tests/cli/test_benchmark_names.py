"""One name per benchmark in every layer: what the importers store is the catalogue's id, what a
user types resolves to it, and a store written before (raw Training names, keys that held the
stack) is migrated to it. Through the public CLI path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.cli.guard import run_guarded
from stack_advisor.cli.main import app
from tests.support.mlperf import TRAINING_SYSTEM, mllog, write


def _training_round(root: Path) -> Path:
    """A Training round with three results under MLPerf's own directory names: ``llama2_70b_lora``
    and ``dlrm_dcnv2`` (the names the issue saw refused) and v4.1's ``gnn`` (v5.0's ``rgat``)."""
    tree = root / "training_v9.9"
    write(tree, "Acme/systems/h100x16.json", json.dumps(TRAINING_SYSTEM))
    for b, bench in enumerate(("llama2_70b_lora", "dlrm_dcnv2", "gnn")):
        for i, minutes in enumerate([10.0, 12.0, 11.0]):
            start = 1_700_000_000_000 + (b * 10 + i) * 10**7
            write(tree, f"Acme/results/h100x16/{bench}/result_{i}.txt", mllog(start, minutes + b))
    return tree


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = run_guarded(app, list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, json.loads(out) if out.strip().startswith(("{", "[")) else out, err


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("llama2_70b_lora", "llama2_70b_lora"),
        ("llama2-70b-lora", "llama2_70b_lora"),
        ("dlrm_dcnv2", "dlrm_dcnv2"),
        ("dlrm-dcnv2", "dlrm_dcnv2"),
        ("rgat", "rgat"),
        ("gnn", "rgat"),
    ],
)
def test_training_benchmarks_answer_under_every_spelling(
    typed: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"embedded:{tmp_path / 'kb'}"
    code, summary, _ = _cli(
        capsys,
        "import",
        "mlperf-training",
        str(_training_round(tmp_path)),
        "--store",
        uri,
        "--json",
    )
    assert code == 0 and summary["scores"] == 3
    code, answer, err = _cli(
        capsys,
        "recommend",
        "--family",
        "mlperf-training",
        "--benchmark",
        typed,
        "--store",
        uri,
        "--json",
    )
    assert code == 0, err
    assert answer["workload"]["benchmark"] == expected
    rows = answer["recommendations"]
    assert rows and all(
        r["candidate"]["accelerator"] == "H100-SXM5-80GB" and r["basis"] == "observed" for r in rows
    )


def test_imported_names_are_the_catalogue_ids(tmp_path: Path) -> None:
    from stack_advisor.collectors.importers.mlperf_training import read_training_tree, to_batch

    batch = to_batch(read_training_tree(_training_round(tmp_path)))
    names = {o.benchmark.name for o in batch.observations}
    assert names == {"llama2_70b_lora", "dlrm_dcnv2", "rgat"}
    gnn = next(o for o in batch.observations if o.benchmark.name == "rgat")
    assert gnn.provenance.details["benchmark_raw"] == "gnn"


def test_a_store_written_before_is_migrated_to_the_ids_and_published_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A v6 store holds Training's raw names (``gnn``) and published results keyed with their stack;
    ``ensure_schema`` (v7) renames them and re-keys them, so a re-import adds nothing."""
    import stack_advisor.collectors.importers.mlperf_training as training
    from stack_advisor.catalog import canonical
    from stack_advisor.collectors.importers.mlperf_training import import_mlperf_training
    from stack_advisor.schema.models import Observation, observation_key_of
    from stack_advisor.store.embedded_store import EmbeddedStore

    def old_key(self: Observation, benchmark_id: str, stack_id: str) -> str:
        return observation_key_of(
            benchmark_id,
            self.metric,
            stack_id,
            self.accelerator.model,
            self.accelerator.count,
            self.placement.placement_id,
            self.host.name if self.host else None,
            self.run_id,
            self.provenance.source,
            self.source_key,
        )

    tree = _training_round(tmp_path)
    store = EmbeddedStore(str(tmp_path / "kb"))
    try:
        store.ensure_schema()
        with monkeypatch.context() as m:  # write as the code before v7 did
            m.setattr(canonical, "canonical_benchmark", lambda bench: bench)
            m.setattr(training, "catalogue_benchmark", lambda name: name)
            m.setattr(Observation, "key_with", old_key)
            written = import_mlperf_training(tree, store).imported
        assert {o.benchmark.name for o in store.iter_observations()} >= {"gnn"}
        store._write(lambda run: run("MATCH (s:SchemaInfo {name: 'graph'}) SET s.version = 6", {}))
        store.ensure_schema()
        stored = list(store.iter_observations())
        assert len(stored) == written
        assert {o.benchmark.name for o in stored} == {"llama2_70b_lora", "dlrm_dcnv2", "rgat"}
        assert all(o.key == o.observation_key for o in stored)
        assert import_mlperf_training(tree, store).imported == 0
    finally:
        store.close()
