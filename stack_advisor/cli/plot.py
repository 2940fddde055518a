"""``advisor plot``: PNG/SVG charts from the store's observations.

Thin: the rows come from ``stack_advisor.advisor.charts.data`` (the same numbers ``--json`` prints),
the figure from ``stack_advisor.advisor.charts.figures``. ``plot overhead`` shows exactly what
``compare placement`` reports.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from stack_advisor.cli.options import PLACEMENTS, ApiOpt, JsonOpt, StoreOpt, choose

if TYPE_CHECKING:
    from stack_advisor.advisor.charts.data import Chart

plot_app = typer.Typer(
    name="plot",
    help="Charts (PNG or SVG) from the observations in the store.",
    no_args_is_help=True,
)

OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output file, .png or .svg.")]
BenchmarkOpt = Annotated[
    str | None,
    typer.Option(
        help="Benchmark: its name (resnet50), family/name, or id (needed when several match)."
    ),
]
ScenarioOpt = Annotated[
    str | None, typer.Option(help="Scenario: Offline, Server, SingleStream, MultiStream.")
]
MetricOpt = Annotated[str | None, typer.Option(help="Metric, e.g. samples_per_second.")]
AcceleratorOpt = Annotated[
    list[str] | None,
    typer.Option(
        help="Only this accelerator: part of its name or its canonical name, as recommend "
        "takes it (repeatable)."
    ),
]
FrameworkOpt = Annotated[str | None, typer.Option(help="Only this framework.")]
SourceOpt = Annotated[str | None, typer.Option(help="Only observations from this source.")]
TitleOpt = Annotated[
    str | None, typer.Option(help="Chart title (default: benchmark, scenario, metric, unit).")
]
PlacementOpt = Annotated[
    str | None, typer.Option(help="Only this placement: bare-metal, passthrough, vgpu, unknown.")
]


TopOpt = Annotated[
    int,
    typer.Option(
        "--top",
        help="How many stacks per accelerator (throughput) or "
        "accelerators (trend) to show; the rest are named in a note.",
    ),
]


def _observations(store_uri: str | None, api: str | None, **filters: Any) -> list[Any]:
    from stack_advisor.advisor.names import canonical_metric
    from stack_advisor.cli.stores import open_store
    from stack_advisor.schema.models import ObservationFilter

    if filters.get("metric"):  # as users write it: ttft, tokens/s
        filters["metric"] = canonical_metric(filters["metric"])
    flt = ObservationFilter(**{k: v for k, v in filters.items() if v is not None})
    with open_store(api or store_uri, create=False) as store:
        return list(store.iter_observations(flt))


def _finish(
    chart: Chart, draw: Callable[..., Path], out: Path, title: str | None, as_json: bool
) -> None:
    from stack_advisor.cli.render import info, print_json

    path = draw(chart, out, title)
    if as_json:
        print_json({"out": str(path), **chart.as_dict()})
        return
    info(f"wrote {path}: {title or chart.title} ({len(chart.rows)} data points)")
    for note in chart.notes:
        info(f"note: {note}")


@plot_app.command("throughput")
def throughput(
    out: OutOpt,
    benchmark: BenchmarkOpt = None,
    scenario: ScenarioOpt = None,
    metric: MetricOpt = None,
    accelerator: AcceleratorOpt = None,
    framework: FrameworkOpt = None,
    placement: PlacementOpt = None,
    source: SourceOpt = None,
    top: TopOpt = 8,
    title: TitleOpt = None,
    store: StoreOpt = None,
    api: ApiOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A metric per accelerator by software stack: one panel per accelerator, p10–p90 whiskers."""
    from stack_advisor.advisor.charts import data as plot_data
    from stack_advisor.advisor.charts import figures as plots

    plots.check_out(out)
    kind = plot_data.parse_placement(choose(placement, PLACEMENTS, "--placement"))
    obs = _observations(store, api, framework=framework, placement=kind, source=source)
    chart = plot_data.throughput_chart(
        obs,
        benchmark=benchmark,
        scenario=scenario,
        metric=metric,
        accelerators=accelerator,
        top=top,
    )
    _finish(chart, plots.draw_throughput, out, title, as_json)


@plot_app.command("overhead")
def overhead(
    out: OutOpt,
    accelerator: Annotated[
        str | None,
        typer.Option(help="Only this accelerator (part of its name or its canonical name)."),
    ] = None,
    placement: Annotated[
        str | None, typer.Option(help="Only this placement: passthrough or vgpu.")
    ] = None,
    benchmark: BenchmarkOpt = None,
    metric: MetricOpt = None,
    framework: FrameworkOpt = None,
    source: SourceOpt = None,
    title: TitleOpt = None,
    store: StoreOpt = None,
    api: ApiOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Speed in passthrough and vGPU VMs relative to bare metal, per accelerator: the figures of
    `advisor compare placement` (the other filters narrow the observations paired first)."""
    from stack_advisor.advisor.charts import data as plot_data
    from stack_advisor.advisor.charts import figures as plots
    from stack_advisor.advisor.estimate import analysis
    from stack_advisor.advisor.knowledge.table import ObservationTable

    plots.check_out(out)
    obs = _observations(store, api, framework=framework, source=source, metric=metric)
    if benchmark:
        obs = [o for o in obs if plot_data.benchmark_matches(benchmark, o)]
    overheads = analysis.placement_overheads(ObservationTable.from_observations(obs))
    chart = plot_data.overhead_chart(analysis.select_overheads(overheads, accelerator, placement))
    _finish(chart, plots.draw_overhead, out, title, as_json)


@plot_app.command("trend")
def trend(
    out: OutOpt,
    component: Annotated[
        str,
        typer.Option(help="Version axis: framework_version, cuda, cudnn, driver, tensorrt, nccl."),
    ] = "framework_version",
    benchmark: BenchmarkOpt = None,
    scenario: ScenarioOpt = None,
    metric: MetricOpt = None,
    accelerator: AcceleratorOpt = None,
    framework: FrameworkOpt = None,
    source: SourceOpt = None,
    top: TopOpt = 8,
    title: TitleOpt = None,
    store: StoreOpt = None,
    api: ApiOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A metric per accelerator across versions of one component, one line per accelerator."""
    from stack_advisor.advisor.charts import data as plot_data
    from stack_advisor.advisor.charts import figures as plots

    plots.check_out(out)
    obs = _observations(store, api, framework=framework, source=source)
    chart = plot_data.trend_chart(
        obs,
        component,
        benchmark=benchmark,
        scenario=scenario,
        metric=metric,
        accelerators=accelerator,
        top=top,
    )
    _finish(chart, plots.draw_trend, out, title, as_json)


@plot_app.command("sweep")
def sweep(
    name: Annotated[str, typer.Argument(help="The sweep matrix's name.")],
    out: OutOpt,
    host: Annotated[
        str | None, typer.Option(help="The node (needed when several ran the sweep).")
    ] = None,
    baseline: Annotated[
        str | None, typer.Option(help="Baseline cell (default: the first measured).")
    ] = None,
    store: StoreOpt = None,
    api: ApiOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Each sweep cell's speed vs the baseline cell per benchmark, with 95% intervals: what
    `advisor compare sweep` reports."""
    from dataclasses import asdict

    from stack_advisor.advisor.charts.figures import check_out, draw_sweep
    from stack_advisor.advisor.verbs.sweep import compare_sweep, sweep_observations
    from stack_advisor.cli.render import info, print_json
    from stack_advisor.cli.stores import open_store

    check_out(out)
    with open_store(api or store, create=False) as kb:
        node, observations = sweep_observations(kb, name, host)
    ratios = compare_sweep(observations, baseline)
    path = draw_sweep(ratios, out, f"sweep {name} on {node}")
    if as_json:
        print_json(
            {"out": str(path), "sweep": name, "host": node, "ratios": [asdict(r) for r in ratios]}
        )
        return
    info(f"wrote {path}: sweep {name} on {node} ({len(ratios)} ratios)")


def register(app: typer.Typer) -> None:
    app.add_typer(plot_app, rich_help_panel="Analysis")
