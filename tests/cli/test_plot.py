"""Chart rows and figures from observations built in memory: per-accelerator values, canonical
names, scenario and units in the labels, a bounded palette, visible p10–p90 whiskers, and the
figure drawing exactly the rows' numbers (read back from the axes). The store-backed path and
the comparison with `compare placement` and `recommend` are in tests/advisor/test_plots.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer

from stack_advisor.advisor.charts import data as plot_data
from stack_advisor.advisor.charts import figures as plots
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.models import Observation


def make_obs(
    model: str = "NVIDIA A100-SXM4-80GB",
    value: float = 100.0,
    *,
    count: int = 1,
    scenario: str | None = "Offline",
    metric: str = "samples_per_second",
    unit: str = "samples/s",
    tensorrt: str = "8.6.0",
    driver: str = "525.60.13",
    framework: str = "tensorrt",
    placement: str = "bare-metal",
    name: str = "resnet50",
    division: str | None = "closed",
    p10: float | None = None,
    p90: float | None = None,
    host: str = "sys",
    higher_is_better: bool = True,
) -> Observation:
    params: dict[str, Any] = {}
    if scenario:
        params["scenario"] = scenario
    if division:
        params["division"] = division
    return Observation.model_validate(
        {
            "benchmark": {"family": "mlperf-inference", "name": name, "parameters": params},
            "metric": metric,
            "value": value,
            "unit": unit,
            "p10": p10,
            "p90": p90,
            "higher_is_better": higher_is_better,
            "stack": {
                "tensorrt": tensorrt,
                "cuda": "12.0",
                "driver": driver,
                "framework": framework,
                "framework_version": tensorrt,
            },
            "accelerator": {"model": model, "count": count},
            "placement": {"kind": placement},
            "host": {"name": host},
            "provenance": {"kind": "published", "source": "mlperf-inference"},
        }
    )


def test_whole_system_totals_become_per_accelerator_under_one_canonical_name() -> None:
    """Reproducer: 1-GPU and 8-GPU systems on one axis; the same GPU under several names."""
    obs = [
        make_obs("NVIDIA A100-SXM-80GB", 800.0, count=8, host="a"),
        make_obs("NVIDIA A100-SXM4-80GB CTS", 110.0, count=1, host="b"),
        make_obs("NVIDIA A100-SXM-80GB", 820.0, count=8, host="c"),
    ]
    chart = plot_data.throughput_chart(obs, benchmark="resnet50", scenario="Offline")
    (row,) = chart.rows
    assert row["accelerator"] == "A100-SXM4-80GB"
    assert row["accelerator_names"] == ["NVIDIA A100-SXM-80GB", "NVIDIA A100-SXM4-80GB CTS"]
    assert row["accelerator_counts"] == [1, 8]
    per_gpu = sorted([800 / 8, 110.0, 820 / 8])
    assert row["value"] == pytest.approx(per_gpu[1])
    assert row["low"] == pytest.approx(plot_data.quantile(per_gpu, 0.1))
    assert row["high"] == pytest.approx(plot_data.quantile(per_gpu, 0.9))
    assert row["interval"] == "p10-p90 across observations" and row["observations"] == 3


def test_latencies_are_not_divided() -> None:
    obs = [
        make_obs(
            value=2.0,
            count=8,
            scenario="SingleStream",
            metric="p90_latency_ms",
            unit="ms",
            higher_is_better=False,
        )
    ]
    chart = plot_data.throughput_chart(obs)
    assert chart.rows[0]["value"] == 2.0
    assert chart.series is not None and not chart.series.per_accelerator
    assert "lower is better" in chart.series.value_label and "per accelerator" not in chart.title


def test_title_and_axis_name_scenario_metric_and_unit(tmp_path: Path) -> None:
    obs = [make_obs(value=v, host=str(v)) for v in (90.0, 100.0, 110.0)]
    chart = plot_data.throughput_chart(obs, benchmark="resnet50", scenario="offline")
    fig = plots.throughput_figure(chart)
    title = fig._suptitle.get_text()  # type: ignore[union-attr]
    for part in ("resnet50", "Offline", "samples_per_second", "per accelerator", "samples/s"):
        assert part in title
    xlabel = fig.axes[0].get_xlabel() or fig.axes[-1].get_xlabel()
    assert "samples/s" in xlabel and "higher is better" in xlabel
    assert "stk-" not in title and "/8ca7" not in title  # no hash ids in titles
    out = plots.draw_throughput(chart, tmp_path / "t.png")
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_several_series_name_the_options_that_choose_one() -> None:
    """Reproducer: `plot throughput` with no filter matched 484 series named by hash ids."""
    obs = [
        make_obs(scenario="Offline"),
        make_obs(scenario="Server", metric="queries_per_second", unit="queries/s"),
    ]
    with pytest.raises(
        InvalidInput, match="--benchmark resnet50 --scenario Offline --metric samples_per_second"
    ):
        plot_data.throughput_chart(obs)
    with pytest.raises(
        InvalidInput, match="Benchmark: resnet50, Scenario: Offline, Metric: samples_per_second"
    ):
        plot_data.throughput_chart(obs, spelling=plot_data.FORM)  # the web form's fields
    chart = plot_data.throughput_chart(obs, scenario="Server")
    assert chart.series is not None and chart.series.metric == "queries_per_second"
    with pytest.raises(NotFound, match="recorded: Offline, Server"):
        plot_data.throughput_chart(obs, scenario="MultiStream")
    with pytest.raises(NotFound, match="did you mean: resnet50"):
        plot_data.throughput_chart(obs, benchmark="resnet5")


def test_closed_division_is_kept_as_recommend_does() -> None:
    obs = [make_obs(value=100.0), make_obs(value=500.0, division="open", host="o")]
    chart = plot_data.throughput_chart(obs)
    assert [r["value"] for r in chart.rows] == [100.0]
    assert chart.series is not None and chart.series.division == "closed"
    assert any("closed division" in n for n in chart.notes)


def test_accelerators_match_as_recommend_matches() -> None:
    """Reproducer: the plot took only exact names while `recommend` takes substrings."""
    obs = [make_obs("NVIDIA A100-SXM-80GB", 800.0, count=8), make_obs("NVIDIA L4", 30.0, host="l4")]
    assert {
        r["accelerator"] for r in plot_data.throughput_chart(obs, accelerators=["a100"]).rows
    } == {"A100-SXM4-80GB"}
    assert {
        r["accelerator"]
        for r in plot_data.throughput_chart(obs, accelerators=["A100-SXM4-80GB"]).rows
    } == {"A100-SXM4-80GB"}
    assert len(plot_data.throughput_chart(obs, accelerators=["L4", "A100"]).rows) == 2
    with pytest.raises(
        NotFound, match="matches no accelerator in the selection; did you mean: A100-SXM4-80GB"
    ):
        plot_data.throughput_chart(obs, accelerators=["A100-SXM4-40GB"])
    with pytest.raises(
        InvalidInput, match="unknown accelerator 'A100-SXM5-80GB'; did you mean"
    ):  # the catalogue's
        plot_data.throughput_chart(obs, accelerators=["A100-SXM5-80GB"])


def test_many_stacks_are_cut_to_top_n_with_a_note_and_at_most_ten_colours() -> None:
    """Reproducer: 36 series shared 20 colours."""
    obs = [
        make_obs(
            value=100.0 + i,
            tensorrt=f"8.{i}.0",
            framework=("tensorrt", "onnxruntime")[i % 2],
            host=str(i),
        )
        for i in range(36)
    ]
    chart = plot_data.throughput_chart(obs, top=8)
    assert len(chart.rows) == 8
    assert [r["value"] for r in chart.rows] == sorted(
        (r["value"] for r in chart.rows), reverse=True
    )
    assert chart.rows[0]["value"] == 135.0
    assert any("best 8 of 36 stacks" in n for n in chart.notes)
    fig = plots.throughput_figure(chart)
    colours = {to_hex(p.get_facecolor()) for ax in fig.axes for p in ax.patches}
    assert len(colours) <= 10


def test_figure_draws_the_rows_numbers_with_visible_whiskers() -> None:
    """The bars and whiskers read back from the axes are the rows' numbers; whiskers are black."""
    obs = [
        make_obs(value=v, count=c, host=f"{v}-{c}", tensorrt=t)
        for v, c, t in (
            (100.0, 1, "8.6.0"),
            (880.0, 8, "8.6.0"),
            (120.0, 1, "8.6.0"),
            (95.0, 1, "8.5.0"),
        )
    ]
    obs.append(
        make_obs("NVIDIA L4", 40.0, p10=36.0, p90=43.0, host="l4")
    )  # one run with its own spread
    chart = plot_data.throughput_chart(obs)
    fig = plots.throughput_figure(chart)
    drawn = []
    for ax in fig.axes:
        bars = [c for c in ax.containers if isinstance(c, BarContainer)]
        if not bars:
            continue
        whiskers = bars[0].errorbar.lines[2][0]
        assert to_hex(whiskers.get_colors()[0]) == "#000000"
        for patch, seg in zip(bars[0].patches, whiskers.get_segments(), strict=True):
            drawn.append(
                (ax.get_title(loc="left").split()[0], patch.get_width(), seg[0][0], seg[1][0])
            )
    expected = [(r["accelerator"], r["value"], r["low"], r["high"]) for r in chart.rows]
    assert [
        (a, pytest.approx(v), pytest.approx(lo), pytest.approx(hi)) for a, v, lo, hi in drawn
    ] == expected
    l4 = next(r for r in chart.rows if r["accelerator"] == "L4")
    assert (l4["low"], l4["high"], l4["interval"]) == (36.0, 43.0, "measured p10-p90 of the run")
    a100 = next(r for r in chart.rows if r["stack"].startswith("tensorrt 8.6.0"))
    assert a100["high"] > a100["low"]  # a visible interval


def test_trend_orders_versions_numerically_per_accelerator() -> None:
    obs = [
        make_obs(value=float(v.split(".")[1]) * 8, count=8, tensorrt=v, host=v)
        for v in ("8.10.0", "8.9.1", "8.2.0")
    ]
    chart = plot_data.trend_chart(obs, "tensorrt")
    assert [r["version"] for r in chart.rows] == ["8.2.0", "8.9.1", "8.10.0"]
    assert [r["value"] for r in chart.rows] == [2.0, 9.0, 10.0]
    assert {r["series"] for r in chart.rows} == {"A100-SXM4-80GB"}
    fig = plots.trend_figure(chart)
    (points,) = fig.axes[0].containers  # one errorbar line: (data line, caps, whiskers)
    assert list(points.lines[0].get_ydata()) == [2.0, 9.0, 10.0]
    assert "tensorrt versions" in chart.title and "per accelerator" in chart.title


def test_trend_keeps_the_best_evidenced_lines() -> None:
    names = [f"NVIDIA A{i}" for i in range(12)]
    obs = [
        make_obs(n, 10.0, tensorrt=v, host=f"{n}{v}{k}")
        for i, n in enumerate(names)
        for v in ("8.5.0", "8.6.0")
        for k in range(1 + i)
    ]
    chart = plot_data.trend_chart(obs, "tensorrt", top=5)
    assert len({r["series"] for r in chart.rows}) == 5
    assert any("5 of 12 accelerators" in n for n in chart.notes)


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="unknown placement 'vm'; valid: bare-metal"):
        plot_data.parse_placement("vm")
    with pytest.raises(InvalidInput, match=r"\.png or \.svg"):
        plots.check_out(tmp_path / "t.jpg")
    with pytest.raises(InvalidInput, match="--component: unknown 'kernel'"):
        plot_data.trend_chart([make_obs()], "kernel")
    with pytest.raises(InvalidInput, match="--top: must be >= 1"):
        plot_data.throughput_chart([make_obs()], top=0)


def test_a_named_benchmark_run_with_several_parameter_sets_plots_the_best_evidenced() -> None:
    """Reproducer: the README's `plot throughput --benchmark resnet50 --scenario Offline` met
    MLPerf's results and our own runs (other parameters) and answered "3 series match"."""
    ours = make_obs(value=90.0, host="own", division=None)
    ours = ours.model_copy(
        update={
            "benchmark": ours.benchmark.model_copy(
                update={"parameters": {"scenario": "Offline", "max_batch": 32}}
            )
        }
    )
    obs = [make_obs(value=100.0, host="a"), make_obs(value=120.0, host="b"), ours]
    chart = plot_data.throughput_chart(obs, benchmark="resnet50", scenario="Offline")
    assert [r["value"] for r in chart.rows] == [110.0]  # the median of the kept two, not 90
    (note,) = [n for n in chart.notes if "other series" in n]
    assert "1 other series of resnet50" in note and "(1 obs)" in note
    with pytest.raises(InvalidInput, match="choose one"):  # nothing named: the user chooses
        plot_data.throughput_chart(obs, scenario="Offline")


def test_unknown_benchmark_lists_benchmarks_not_scenario_named_runs() -> None:
    obs = [make_obs(), make_obs(name="Offline", host="loadgen")]
    with pytest.raises(NotFound) as caught:
        plot_data.throughput_chart(obs, benchmark="nothing-like-it")
    assert "known: resnet50" in str(caught.value) and "Offline" not in str(caught.value)


def test_an_llm_slice_is_plotted_in_its_throughput_when_no_metric_is_named() -> None:
    """A probe: ``plot throughput --benchmark llama2-70b-99 --scenario Server`` answered "15
    series match; choose one", listing ttft_mean_ms first: the slice's latency statistics
    beside its one throughput."""
    from stack_advisor.advisor.charts.data import select_series
    from stack_advisor.store.starter import load_snapshot

    rows = [
        o
        for o in load_snapshot().observations
        if o.benchmark.name == "llama2-70b-99"
        and o.benchmark.parameters.get("scenario") == "Server"
    ]
    assert len({o.metric for o in rows}) > 2
    _, series, notes = select_series(rows, benchmark="llama2-70b-99", scenario="Server")
    assert series.metric == "tokens_per_second"
    assert any(n.startswith("metric: none named; its throughput tokens_per_second") for n in notes)
