"""``advisor compare stacks | rank-stacks | placement | regressions`` (and ``sweep``, added by
``stack_advisor.cli.sweep``): the engine's comparisons on the command line, each a table or JSON."""

from __future__ import annotations

from typing import Annotated

import typer

from stack_advisor.cli.options import PLACEMENTS, FormatOpt, JsonOpt, StoreOpt, choose
from stack_advisor.cli.recommend_options import checked_as_of
from stack_advisor.cli.stores import answering_store

compare_app = typer.Typer(
    name="compare", help="Compare stacks and placements; find regressions.", no_args_is_help=True
)


@compare_app.command("stacks")
def compare_stacks(
    a: Annotated[
        str, typer.Option("--a", help="Stack A: a stack id (stk-...) or component=version,...")
    ],
    b: Annotated[str, typer.Option("--b", help="Stack B, same form.")],
    benchmark: Annotated[str, typer.Option(help="Benchmark name, e.g. resnet50.")],
    accelerator: Annotated[
        str | None, typer.Option(help="Only this accelerator (substring).")
    ] = None,
    scenario: Annotated[str | None, typer.Option()] = None,
    metric: Annotated[str | None, typer.Option()] = None,
    family: Annotated[str, typer.Option()] = "mlperf-inference",
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    store: StoreOpt = None,
) -> None:
    """Stack A against stack B on the same benchmark (and accelerator), paired within a round."""
    from stack_advisor.cli.render import output_format, render

    chosen = output_format(fmt, as_json)
    with answering_store(store) as adv:
        result = adv.compare(
            a,
            b,
            benchmark=benchmark,
            accelerator=accelerator,
            scenario=scenario,
            metric=metric,
            family=family,
        )
    row = result.model_dump(mode="json")
    render(
        [row],
        fmt=chosen,
        title="stack comparison",
        json_data=result,
        columns=["benchmark", "accelerator", "pairs", "ratio", "p_value", "verdict"],
        details=["metric", "a_count", "b_count", "a_median", "b_median", "stack_effect"],
    )


@compare_app.command("rank-stacks")
def compare_rank_stacks(
    benchmark: Annotated[str, typer.Option(help="Benchmark name, e.g. llama2-70b-99.")],
    accelerator: Annotated[str, typer.Option(help="The accelerator (any published spelling).")],
    scenario: Annotated[
        str | None,
        typer.Option(help="Scenario, e.g. Offline (llama2-70b-interactive-99 names its own)."),
    ] = None,
    metric: Annotated[
        str | None,
        typer.Option(help="Metric, e.g. tokens_per_second; default: the slice's throughput."),
    ] = None,
    family: Annotated[str, typer.Option()] = "mlperf-inference",
    division: Annotated[str, typer.Option()] = "closed",
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="The stacks as of a round: its results and older ones (a round name, a date, "
            "today, now or next; a stack's figure does not move with the rounds).",
        ),
    ] = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    store: StoreOpt = None,
) -> None:
    """The stacks one accelerator ran a benchmark with, fastest first; older versions carried
    forward by the upgrade factor learned from pairs (shown), never silently."""
    from stack_advisor.cli.render import output_format, render

    chosen = output_format(fmt, as_json)
    with answering_store(store) as adv:
        rows = adv.rank_stacks(
            benchmark=benchmark,
            scenario=scenario,
            metric=metric,
            accelerator=accelerator,
            family=family,
            division=division,
            as_of=None if as_of is None else checked_as_of(as_of),
        )
    unit = next((r["unit"] for r in rows if r.get("unit")), None)
    render(
        [{**r, "counts": ",".join(f"x{n}" for n in r.get("counts", []))} for r in rows]
        if chosen.value != "json"
        else rows,
        fmt=chosen,
        title=f"stacks on {accelerator} for {benchmark} {scenario or ''}".rstrip()
        + (f" ({unit})" if unit else ""),
        json_data=rows,
        columns=[
            "framework",
            "version",
            "software_class",
            "round",
            "counts",
            "value",
            "carried_forward",
        ],
        details=["results", "factor"],
    )


@compare_app.command("placement")
def compare_placement(
    accelerator: Annotated[
        str | None, typer.Option(help="Only this accelerator (substring).")
    ] = None,
    placement: Annotated[str | None, typer.Option(help="passthrough or vgpu.")] = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    store: StoreOpt = None,
) -> None:
    """Virtualised placements against bare metal per accelerator, from paired results."""
    from stack_advisor.cli.render import OutputFormat, note, output_format, render

    chosen = output_format(fmt, as_json)
    placement = choose(placement, PLACEMENTS, "--placement")
    with answering_store(store) as adv:
        items = adv.placement_overhead(accelerator, placement)
    if not items and chosen is not OutputFormat.json:
        note("no paired bare-metal/virtualised results in the knowledge base")
        return
    render(
        [
            {
                "accelerator": o.accelerator,
                "placement": o.placement.value,
                "ratio": round(o.ratio, 3),
                "pairs": o.pairs,
                "summary": o.text,
            }
            for o in items
        ],
        fmt=chosen,
        json_data=items,
        title="placement overhead (speed vs bare metal)",
        columns=["accelerator", "placement", "ratio", "pairs"],
        details=["summary"],
    )


@compare_app.command("regressions")
def compare_regressions(
    component: Annotated[
        str, typer.Option(help="driver, cuda, cudnn, tensorrt, framework_version.")
    ] = "driver",
    benchmark: Annotated[str | None, typer.Option()] = None,
    accelerator: Annotated[str | None, typer.Option()] = None,
    alpha: Annotated[float, typer.Option(help="Significance level (Mann-Whitney U).")] = 0.05,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    store: StoreOpt = None,
) -> None:
    """Newer component versions that are slower, with statistical support: compared within one
    submitter's results of a round, benchmark, accelerator and count."""
    from stack_advisor.cli.render import OutputFormat, note, output_format, render

    chosen = output_format(fmt, as_json)
    with answering_store(store) as adv:
        items = adv.regressions(
            component, accelerator=accelerator, benchmark=benchmark, alpha=alpha
        )
    if not items and chosen is not OutputFormat.json:
        note(f"no regression of {component} at alpha={alpha}")
        return
    render(
        [i.model_dump(mode="json") for i in items],
        fmt=chosen,
        json_data=items,
        title=f"{component} regressions",
        columns=["accelerator", "benchmark", "older", "newer", "change", "p_value"],
        details=["scenario", "metric", "older_count", "newer_count", "submitter"],
    )
