"""Plot rows and files from observations built in memory (the store-backed path is covered in
test_remote_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor import plots
from graph_schema.errors import InvalidInput, NotFound
from graph_schema.models import ResultDocument
from tests.advisor.api.conftest import document


def _obs(**kw: object) -> list:
    return ResultDocument.model_validate(document(**kw)).to_batch().observations  # type: ignore[arg-type]


def test_overhead_is_relative_to_bare_metal_on_the_same_stack(tmp_path: Path) -> None:
    obs = _obs(run_id="bm", value=200.0) + _obs(run_id="vm", value=190.0, placement="vgpu")
    rows = plots.overhead_rows(obs)
    assert [(r["placement"], r["overhead_pct"], r["pairs"]) for r in rows] == [("vgpu", pytest.approx(5.0), 1)]
    out = plots.draw_overhead(rows, tmp_path / "o.svg")
    assert out.read_text().startswith("<?xml")
    with pytest.raises(NotFound, match="bare metal"):
        plots.overhead_rows(_obs(run_id="bm", value=200.0))


def test_throughput_needs_one_series_and_draws_png(tmp_path: Path) -> None:
    obs = _obs(run_id="a", n=2) + _obs(run_id="b", accelerator="NVIDIA L4", n=2)
    with pytest.raises(InvalidInput, match="2 benchmark/metric series match"):
        plots.throughput_rows(obs)
    bench = obs[0].benchmark.benchmark_id
    rows = plots.throughput_rows(obs, bench)
    assert {r["accelerator"] for r in rows} == {"NVIDIA A100-SXM4-80GB", "NVIDIA L4"}
    assert plots.draw_throughput(rows, tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(InvalidInput, match=r"\.png or \.svg"):
        plots.draw_throughput(rows, tmp_path / "t.jpg")


def test_trend_orders_versions_numerically() -> None:
    obs = [o for v in ("2.10.0", "2.9.1", "2.2.0")
           for o in _obs(run_id=v, framework_version=v, value=float(v.split(".")[1]))]
    rows = plots.trend_rows(obs, "framework_version", obs[0].benchmark.benchmark_id)
    assert [r["version"] for r in rows] == ["2.2.0", "2.9.1", "2.10.0"]
    assert [r["value"] for r in rows] == [2.0, 9.0, 10.0]
