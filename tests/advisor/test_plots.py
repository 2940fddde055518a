"""Charts against the tables they must agree with, on published MLPerf results from the starter
knowledge base in a real embedded store: `plot overhead` against `compare placement`, `plot
throughput` against `recommend`'s observed per-accelerator values. Commands run in-process."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from matplotlib.container import BarContainer
from typer.testing import CliRunner

from stack_advisor.advisor.charts import data as plot_data
from stack_advisor.advisor.charts import figures as plots
from stack_advisor.advisor.charts.data import canonical_name
from stack_advisor.cli.main import app
from stack_advisor.schema.models import IngestBatch, Observation
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot

runner = CliRunner()


@pytest.fixture(scope="module")
def published() -> list[Observation]:
    """Every result on an accelerator that was also measured in a VM (for the same benchmark and
    round), and resnet50 Offline: a few hundred observations."""
    obs = load_snapshot().observations
    virtual = [o for o in obs if o.placement.kind.value in ("vgpu", "passthrough")]
    physical = {canonical_name(o.accelerator.model) for o in virtual}
    paired = {
        (
            o.benchmark.name,
            o.benchmark.parameters.get("scenario"),
            o.provenance.details.get("round"),
        )
        for o in virtual
    }
    return [
        o
        for o in obs
        if (
            canonical_name(o.accelerator.model) in physical
            and (
                o.benchmark.name,
                o.benchmark.parameters.get("scenario"),
                o.provenance.details.get("round"),
            )
            in paired
        )
        or (o.benchmark.name == "resnet50" and o.benchmark.parameters.get("scenario") == "Offline")
    ]


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, published: list[Observation]) -> str:
    uri = f"embedded:{tmp_path_factory.mktemp('plots-kb') / 'kb'}"
    with open_store(uri) as store:
        store.ensure_schema()
        store.ingest(IngestBatch(observations=published))
    return uri


def _json(args: list[str]) -> Any:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, f"{result.output} {result.exception or ''}"
    return json.loads(result.stdout)


def _bars(fig: Any) -> list[tuple[float, float, float]]:
    """(height, whisker low, whisker high) of every vertical bar, left to right per series."""
    out = []
    for ax in fig.axes:
        for bars in (c for c in ax.containers if isinstance(c, BarContainer)):
            whiskers = bars.errorbar.lines[2][0].get_segments()
            out.extend(
                (p.get_height(), seg[0][1], seg[1][1])
                for p, seg in zip(bars.patches, whiskers, strict=True)
            )
    return out


@pytest.mark.parametrize(
    "filters",
    [
        [],
        ["--accelerator", "A100"],
        ["--placement", "vgpu"],
        ["--accelerator", "h100", "--placement", "vgpu"],
    ],
)
def test_plot_overhead_shows_what_compare_placement_shows(
    kb: str, tmp_path: Path, filters: list[str]
) -> None:
    """Reproducer: `plot overhead` showed one accelerator where `compare placement` showed four."""
    table = _json(["compare", "placement", "--json", "--store", kb, *filters])
    out = tmp_path / "overhead.png"
    plotted = _json(["plot", "overhead", "--out", str(out), "--json", "--store", kb, *filters])
    assert out.read_bytes()[:4] == b"\x89PNG"
    want = [(o["accelerator"], o["placement"], o["ratio"], o["pairs"]) for o in table]
    assert [
        (r["accelerator"], r["placement"], r["ratio"], r["pairs"]) for r in plotted["rows"]
    ] == want
    if not filters:
        assert len(want) >= 4  # A10, A100-PCIE-40GB, A100-SXM4-80GB, H100-PCIE-80GB on vGPU
    # the figure's bars are those ratios, its whiskers the bootstrap interval
    chart = plot_data.Chart(title=plotted["title"], rows=plotted["rows"])
    drawn = _bars(plots.overhead_figure(chart))
    assert sorted(drawn) == sorted((r["ratio"], r["low"], r["high"]) for r in plotted["rows"])
    for o, r in zip(table, plotted["rows"], strict=True):
        if o["interval"]:
            assert (r["low"], r["high"]) == (o["interval"]["low"], o["interval"]["high"])


def test_plot_throughput_values_are_recommends_per_accelerator_values(
    kb: str, published: list[Observation]
) -> None:
    result = _json(
        [
            "recommend",
            "--benchmark",
            "resnet50",
            "--scenario",
            "Offline",
            "--observed-only",
            "--top",
            "6",
            "--json",
            "--store",
            kb,
        ]
    )
    recs = result["recommendations"]
    assert recs and all(r["per_accelerator"] for r in recs)
    for rec in recs:
        cand = rec["candidate"]
        # the candidate's own observations at the count its figure is for (recommend's observed
        # figure is the median of the latest round's results at that count)
        mine = [
            o
            for o in published
            if canonical_name(o.accelerator.model) == cand["accelerator"]
            and o.accelerator.count == cand["accelerator_count"]
            and o.placement.kind.value == cand["placement"]
        ]
        chart = plot_data.throughput_chart(mine, benchmark="resnet50", scenario="Offline", top=100)
        (row,) = [r for r in chart.rows if r["stack_id"] == cand["stack_id"]]
        # the same figure (median of the latest round's per-accelerator results), which
        # recommend carries to the benchmark's newest round by the drift it names (issue 41);
        # the whiskers are the spread of those results, inside the observed range it reports
        # (and on to today's round by the forecast it names)
        effect = math.prod(
            f["effect"] for f in rec["factors"] if f["name"] in ("round drift", "forecast")
        )
        assert row["value"] * effect == pytest.approx(rec["value"], rel=1e-4)
        observed = rec["observed_range"]
        assert (
            observed["low"] - 1e-9
            <= row["low"]
            <= row["value"]
            <= row["high"]
            <= observed["high"] + 1e-9
        )
        assert row["observations"] <= rec["evidence"]["count"]  # evidence: every count of this row


def test_plot_throughput_from_the_store_with_a_scenario(kb: str, tmp_path: Path) -> None:
    """Reproducer: `plot throughput --out throughput.png` matched 484 series and had no
    --scenario; the accelerator had to be spelled exactly."""
    out = tmp_path / "throughput.png"
    result = runner.invoke(app, ["plot", "throughput", "--out", str(out), "--store", kb])
    # each series listed with the options that choose it (the scenario among them); where two
    # share a name, scenario and metric (MLPerf's resnet50 Offline and our H100 LoadGen runs of it)
    # the benchmark id tells them apart
    message = str(result.exception)
    assert result.exit_code == 1 and "--scenario Offline --metric samples_per_second" in message
    assert "--benchmark mlperf-inference/resnet50/" in message
    body = _json(
        [
            "plot",
            "throughput",
            "--benchmark",
            "resnet50",
            "--scenario",
            "Offline",
            "--accelerator",
            "A100-SXM4-80GB",
            "--out",
            str(out),
            "--json",
            "--store",
            kb,
        ]
    )
    assert body["series"]["scenario"] == "Offline" and body["series"]["per_accelerator"]
    assert "Offline" in body["title"] and "samples/s" in body["title"]
    assert {r["accelerator"] for r in body["rows"]} <= {
        "A100-SXM4-80GB",
        "A100-SXM4-40GB",
        "A100-SXM4-80GB (1x1g.10gb MIG)",
        "A100-SXM4-80GB (7x1g.10gb MIG)",
    }
    assert "A100-SXM4-80GB" in {r["accelerator"] for r in body["rows"]}
    assert out.read_bytes()[:4] == b"\x89PNG"
