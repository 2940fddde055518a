"""``advisor plot``: PNG/SVG charts from the store's observations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.options import PLACEMENTS, ApiOpt, JsonOpt, StoreOpt, choose

plot_app = typer.Typer(
    name="plot",
    help="Charts (PNG or SVG) from the observations in the store.",
    no_args_is_help=True,
)

OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output file, .png or .svg.")]
BenchmarkOpt = Annotated[
    str | None,
    typer.Option(help="Benchmark: its id, family/name, or name (needed when several match)."),
]
MetricOpt = Annotated[str | None, typer.Option(help="Metric, e.g. throughput.")]
AcceleratorOpt = Annotated[str | None, typer.Option(
    help="Only this accelerator (any name the catalogue knows), family (H100), generation or vendor.")]
FrameworkOpt = Annotated[str | None, typer.Option(help="Only this framework.")]
SourceOpt = Annotated[str | None, typer.Option(help="Only observations from this source.")]
TitleOpt = Annotated[str | None, typer.Option(help="Chart title.")]


def _observations(store_uri: str | None, api: str | None, **filters: Any) -> list[Any]:
    from graph_schema.models import ObservationFilter
    from graph_schema.registry import open_store

    # The accelerator is resolved through the catalogue: one board or slice filters in the
    # store; a family, generation or vendor ("H100", "hopper", "amd") is applied here.
    selector = None
    if filters.get("accelerator"):
        from advisor.names import accelerator_selector
        from graph_schema.errors import InvalidInput

        try:
            selector = accelerator_selector(filters["accelerator"])
        except ValueError as exc:
            raise InvalidInput(f"--accelerator: {exc}") from None
        filters["accelerator"] = selector.value if selector.kind == "key" and "(" not in selector.value else None
    flt = ObservationFilter(**{k: v for k, v in filters.items() if v is not None})
    with open_store(api or store_uri, create=False) as store:
        found = list(store.iter_observations(flt))
    if selector is not None:
        found = [o for o in found if selector.matches(o.accelerator.model)]
    return found


def _finish(rows: list[dict[str, Any]], draw: Callable[..., Path], out: Path,
            title: str | None, as_json: bool) -> None:
    from cli.render import info, print_json

    path = draw(rows, out, title)
    if as_json:
        print_json({"out": str(path), "rows": rows})
    else:
        info(f"wrote {path} ({len(rows)} data points)")


@plot_app.command("throughput")
def throughput(
    out: OutOpt,
    benchmark: BenchmarkOpt = None,
    metric: MetricOpt = None,
    accelerator: AcceleratorOpt = None,
    framework: FrameworkOpt = None,
    placement: Annotated[str | None, typer.Option(
        help="Only this placement: bare-metal, passthrough, vgpu.")] = None,
    source: SourceOpt = None,
    title: TitleOpt = None,
    store: StoreOpt = None,
    api: ApiOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Throughput (or any metric) by software stack, grouped per accelerator."""
    from advisor import plots

    plots._check_out(out)
    placement = choose(placement, PLACEMENTS, "--placement")
    obs = _observations(store, api, accelerator=accelerator, framework=framework,
                        placement=placement, source=source)
    _finish(plots.throughput_rows(obs, benchmark, metric), plots.draw_throughput, out, title,
            as_json)


@plot_app.command("overhead")
def overhead(
    out: OutOpt,
    benchmark: BenchmarkOpt = None,
    metric: MetricOpt = None,
    accelerator: AcceleratorOpt = None,
    framework: FrameworkOpt = None,
    source: SourceOpt = None,
    title: TitleOpt = None,
    store: StoreOpt = None,
    api: ApiOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Passthrough and vGPU overhead against bare metal, per accelerator."""
    from advisor import plots

    plots._check_out(out)
    obs = _observations(store, api, accelerator=accelerator, framework=framework, source=source,
                        metric=metric)
    if benchmark:
        obs = [o for o in obs if benchmark in (o.benchmark.benchmark_id, o.benchmark.name,
                                               f"{o.benchmark.family}/{o.benchmark.name}")]
    _finish(plots.overhead_rows(obs), plots.draw_overhead, out, title, as_json)


@plot_app.command("trend")
def trend(
    out: OutOpt,
    component: Annotated[str, typer.Option(
        help="Version axis: framework_version, cuda, cudnn, driver, tensorrt, nccl.")
    ] = "framework_version",
    benchmark: BenchmarkOpt = None,
    metric: MetricOpt = None,
    accelerator: AcceleratorOpt = None,
    framework: FrameworkOpt = None,
    source: SourceOpt = None,
    title: TitleOpt = None,
    store: StoreOpt = None,
    api: ApiOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A metric across versions of one component, one line per accelerator."""
    from advisor import plots

    plots._check_out(out)
    obs = _observations(store, api, accelerator=accelerator, framework=framework, source=source)
    _finish(plots.trend_rows(obs, component, benchmark, metric), plots.draw_trend, out, title,
            as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(plot_app, rich_help_panel="Analysis")
