"""``advisor recommend | predict | evaluate | compare``: the advisor engine on the command line.

Thin: flags become a ``Workload`` (or queries), the engine answers, ``cli.render`` prints a table
or JSON. The JSON is the pydantic result's ``model_dump`` — a contract scripts parse.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.options import PLACEMENTS, FormatOpt, JsonOpt, StoreOpt, choose

if TYPE_CHECKING:
    from advisor.engine import Advisor
    from advisor.remote import RemoteAdvisor

PricesOpt = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        help="Price table YAML (cost per accelerator-hour per placement) for --objective cost.",
    ),
]
RulesOpt = Annotated[
    Path | None,
    typer.Option(
        "--rules",
        help="Compatibility rules: a YAML file or a directory of them (default: packaged).",
    ),
]


@contextmanager
def _advisor(
    store_uri: str | None, prices: Path | None = None, rules: Path | None = None
) -> Iterator[Advisor | RemoteAdvisor]:
    """The engine over the store, or a served API's answer endpoints (``cli.stores.answering``)."""
    from cli.stores import answering, open_store

    store = open_store(store_uri, create=False)
    try:
        yield answering(store, prices=prices, rules=rules)
    finally:
        store.close()


def _parse_params(items: list[str] | None) -> dict[str, Any]:
    from graph_schema.errors import InvalidInput

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"--param: {item!r} is not key=value (e.g. --param division=closed)")
        text = value.strip()
        out[key.strip()] = int(text) if text.isdigit() else text
    return out


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def _value(value: float | None, low: float | None, high: float | None) -> str:
    """'91,826' when the interval is one point, else '91,826 (88,000..93,100)'."""
    text = _fmt(value)
    if low is None or high is None or (_fmt(low) == text and _fmt(high) == text):
        return text
    return f"{text} ({_fmt(low)}..{_fmt(high)})"


def recommend(
    benchmark: Annotated[
        str | None, typer.Option(help="Benchmark name, e.g. resnet50, bert-99.")
    ] = None,
    family: Annotated[
        str, typer.Option(help="Benchmark family: mlperf-inference, mlperf-training, cnn, pi, ...")
    ] = "mlperf-inference",
    task: Annotated[
        str | None,
        typer.Option(help="A task standing for a benchmark, e.g. image-classification."),
    ] = None,
    scenario: Annotated[
        str | None, typer.Option(help="Offline, Server, SingleStream, MultiStream.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model (benchmark parameter).")] = None,
    batch_size: Annotated[
        int | None, typer.Option(help="Batch size (benchmark parameter).")
    ] = None,
    precision: Annotated[
        str | None, typer.Option(help="Precision (benchmark parameter).")
    ] = None,
    param: Annotated[
        list[str] | None, typer.Option(help="Other benchmark parameter key=value (repeatable).")
    ] = None,
    metric: Annotated[
        str | None, typer.Option(help="Metric to rank on (default: from the objective).")
    ] = None,
    framework: Annotated[
        list[str] | None,
        typer.Option(
            help="Component constraint NAME[SPEC], e.g. 'tensorrt>=8.5' or 'pytorch==2.1.*' "
                 "(repeatable)."
        ),
    ] = None,
    accelerator: Annotated[
        list[str] | None,
        typer.Option(
            help="Allowed accelerator: a board (A100-SXM4-80GB), family (H100), generation "
                 "(hopper) or vendor; repeatable."
        ),
    ] = None,
    count: Annotated[int | None, typer.Option(help="Exact accelerator count.")] = None,
    min_count: Annotated[int | None, typer.Option(help="Minimum accelerator count.")] = None,
    max_count: Annotated[int | None, typer.Option(help="Maximum accelerator count.")] = None,
    placement: Annotated[
        list[str] | None,
        typer.Option(
            help="Allowed placement: bare-metal, passthrough, vgpu, unknown (repeatable)."
        ),
    ] = None,
    no_cpu: Annotated[bool, typer.Option("--no-cpu", help="Leave CPU-only systems out.")] = False,
    driver: Annotated[
        str | None, typer.Option(help="Driver on your nodes; stacks needing newer are excluded.")
    ] = None,
    objective: Annotated[str, typer.Option(help="throughput, latency or cost.")] = "throughput",
    min_evidence: Annotated[
        int, typer.Option(help="Observations needed to count as observed.")
    ] = 1,
    max_ttft_ms: Annotated[
        float | None,
        typer.Option(
            help="Serving limit: exclude candidates whose observed p99 time to first token is "
                 "above it (ms)."
        ),
    ] = None,
    max_tpot_ms: Annotated[
        float | None,
        typer.Option(
            help="Serving limit: exclude candidates whose observed p99 time per output token is "
                 "above it (ms)."
        ),
    ] = None,
    observed_only: Annotated[
        bool, typer.Option("--observed-only", help="Rank observed candidates only.")
    ] = False,
    min_confidence: Annotated[
        float,
        typer.Option(
            "--min-confidence",
            min=0.0,
            max=1.0,
            help="Drop rows whose 80% interval low/high ratio is below this (0..1).",
        ),
    ] = 0.0,
    workload_file: Annotated[
        Path | None,
        typer.Option("--workload", help="Workload as YAML or JSON (flags are ignored when given)."),
    ] = None,
    top: Annotated[int, typer.Option("--top", help="How many recommendations.")] = 5,
    snippets: Annotated[
        bool, typer.Option("--snippets", help="Also print each Kubernetes snippet (table mode).")
    ] = False,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            help="Rank this cluster's node pools (an inventory recorded by `advisor nodes sync`).",
        ),
    ] = None,
    nodes_file: Annotated[
        str | None,
        typer.Option(
            "--nodes",
            help="Rank the node pools of `kubectl get nodes -o json` output (a file, or - for "
                 "stdin).",
        ),
    ] = None,
    pool_label: Annotated[
        str | None,
        typer.Option(
            "--pool-label",
            help="The label that names node pools (default: the GKE/EKS/AKS/Karpenter ones).",
        ),
    ] = None,
    what_if_driver: Annotated[
        list[str] | None,
        typer.Option(
            "--what-if-driver",
            help="POOL=VERSION: re-rank as if that pool ran this driver (repeatable).",
        ),
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option(
            "--gpus",
            min=1,
            help="GPUs (or MIG slices) the job needs; more than a node holds makes a gang. "
                 "With --family mlperf-training and no cluster: the accelerator budget (rank what "
                 "fits it).",
        ),
    ] = None,
    nodes_count: Annotated[
        int | None,
        typer.Option("--nodes-count", min=1, help="Nodes the job spans (a gang when > 1)."),
    ] = None,
    image: Annotated[
        str | None,
        typer.Option(
            "--image",
            help="Container image for the Kubernetes snippets, for stacks the knowledge base "
                 "records "
            "none for (without one there is no snippet).",
        ),
    ] = None,
    per_pool: Annotated[
        int, typer.Option("--per-pool", min=1, help="Stacks per pool (cluster mode).")
    ] = 3,
    prices: PricesOpt = None,
    rules: RulesOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    store: StoreOpt = None,
) -> None:
    """Rank software stacks and placements for a workload, with evidence and a Kubernetes snippet.

    With --cluster or --nodes, rank (node pool, stack) pairs of your own cluster instead."""
    from advisor.workload import Workload
    from cli.render import OutputFormat, output_format

    chosen = output_format(fmt, as_json)
    for p in placement or []:
        choose(p, PLACEMENTS, "--placement")
    training = family == "mlperf-training" and workload_file is None
    if training and scenario is not None:
        raise typer.BadParameter(
            f"MLPerf Training has no scenarios ({scenario!r} is an MLPerf Inference scenario); "
            "leave --scenario out (and give the accelerator budget as --gpus N)",
            param_hint="--scenario",
        )
    if training and gpus is not None and cluster is None and nodes_file is None:
        if max_count is not None or count is not None:
            raise typer.BadParameter(
                "give the budget once: --gpus N (or --max-count N), not with --count/--max-count",
                param_hint="--gpus",
            )
        max_count, gpus = gpus, None  # the budget: each candidate runs on the most nodes that fit

    if workload_file is not None:
        workload = Workload.from_file(workload_file)
        if image is not None:  # an output choice, so it applies to a workload file too
            workload = Workload.from_dict(
                {**workload.model_dump(mode="json", exclude_none=True), "image": image},
                where="--image",
            )
    else:
        data: dict[str, Any] = {
            "family": family,
            "benchmark": benchmark,
            "task": task,
            "scenario": scenario,
            "model": model,
            "batch_size": batch_size,
            "precision": precision,
            "parameters": _parse_params(param),
            "metric": metric,
            "objective": objective,
            "min_evidence": min_evidence,
            "include_predicted": not observed_only,
            "image": image,
            "max_ttft_ms": max_ttft_ms,
            "max_tpot_ms": max_tpot_ms,
            "min_confidence": min_confidence,
            "frameworks": [_framework(f) for f in framework or []],
            "hardware": {
                "accelerators": accelerator or None,
                "count": count,
                "min_count": min_count,
                "max_count": max_count,
                "placements": placement or None,
                "include_cpu": not no_cpu,
                "driver": driver,
            },
        }
        workload = Workload.from_dict(
            {k: v for k, v in data.items() if v is not None}, where="flags"
        )
    cluster_only = {
        "--pool-label": pool_label,
        "--what-if-driver": what_if_driver,
        "--gpus": gpus,
        "--nodes-count": nodes_count,
    }
    if cluster is None and nodes_file is None:
        given = [flag for flag, value in cluster_only.items() if value]
        if given:
            from graph_schema.errors import InvalidInput

            raise InvalidInput(
                f"{', '.join(given)} need the nodes: add --cluster NAME or --nodes FILE"
            )
    else:
        from cli.cluster_recommend import run

        with _advisor(store, prices, rules) as adv:
            run(
                adv,
                workload,
                cluster=cluster,
                nodes_file=nodes_file,
                pool_label=pool_label,
                what_if=what_if_driver,
                gpus=gpus,
                nodes_count=nodes_count,
                image=image,
                per_pool=per_pool,
                top=top,
                as_json=as_json,
                snippets=snippets,
            )
        return
    with _advisor(store, prices, rules) as adv:
        result = adv.recommend(workload, top=top)
    if chosen is OutputFormat.json:
        from cli.render import print_json

        print_json(result)
        return
    _print_recommendations(result, snippets, chosen)


def _framework(text: str) -> dict[str, Any]:
    from pydantic import ValidationError

    from advisor.workload import FrameworkConstraint
    from graph_schema.errors import InvalidInput

    try:
        return FrameworkConstraint.parse(text).model_dump(exclude_none=True)
    except ValidationError as exc:
        reasons = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise InvalidInput(f"--framework {text!r}: {reasons}") from None


BASIS_MARK = {
    "observed": "● observed",
    "interpolated": "◐ interpolated",
    "transferred": "○ transferred",
    "unsupported": "✗ unsupported",
}


def _print_recommendations(result: Any, snippets: bool, fmt: Any) -> None:
    from cli.render import note, render

    rows = []
    with_system = any(
        "nodes" in r.system or "interconnect" in r.system for r in result.recommendations
    )
    with_hours = any(r.accelerator_hours is not None for r in result.recommendations)
    for r in result.recommendations:
        c = r.candidate
        rows.append(
            {
                "#": r.rank,
                "basis": BASIS_MARK.get(r.basis.value, r.basis.value)
                + (f" ({r.basis_note})" if r.basis_note else ""),
                "accelerator": f"{c.accelerator} x{c.accelerator_count}",
                "placement": c.placement.value,
                "score": _fmt(r.score),
                "value": _value(r.value, r.interval.low, r.interval.high),
                "observed range": f"{_fmt(r.observed_range.low)}..{_fmt(r.observed_range.high)}"
                if r.observed_range
                else None,
                **(
                    {
                        "acc-hours": _value(
                            r.value * r.candidate.accelerator_count / 60,
                            r.accelerator_hours.low,
                            r.accelerator_hours.high,
                        )
                    }
                    if r.accelerator_hours is not None
                    else {"acc-hours": None} if with_hours else {}
                ),
                "evidence": (
                    f"{r.evidence.count} obs x{','.join(map(str, r.observed_counts))} "
                    f"{'/'.join(r.evidence.rounds)}"
                ).strip()
                if r.evidence.count
                else None,
                "conf": f"{r.confidence:.2f}",
                "stack": c.stack_label,
                "overhead": r.placement_overhead.text if r.placement_overhead else None,
                **(
                    {
                        "nodes": r.system.get("nodes") or None,
                        "interconnect": r.system.get("interconnect") or None,
                    }
                    if with_system
                    else {}
                ),
                "warnings": "; ".join(r.warnings) or None,
                "how it was made": "; ".join(
                    f"{f.name}: {f.value}" + (f" (x{f.effect:.2f})" if f.effect != 1.0 else "")
                    for f in r.factors
                )
                or None,
            }
        )
    per = (
        " per accelerator"
        if result.recommendations and result.recommendations[0].per_accelerator
        else ""
    )
    unit = result.recommendations[0].unit if result.recommendations else ""
    score_unit = result.recommendations[0].score_unit if result.recommendations else ""
    render(
        rows,
        fmt=fmt,
        title=f"{result.workload.get('benchmark')}: {result.metric} "
        + (
            f"({unit}{per}), objective {result.objective}; ranked by score ({score_unit})"
            if result.recommendations
            else f"— objective {result.objective}; nothing ranked (see the notes)"
        ),
        columns=[
            "#",
            "basis",
            "accelerator",
            "placement",
            "score",
            "value",
            *(["acc-hours"] if with_hours else []),
            "observed range",
            "evidence",
            "conf",
        ],
        details=[
            "stack",
            "overhead",
            *(["nodes", "interconnect"] if with_system else []),
            "warnings",
            "how it was made",
        ],
    )
    for text in result.notes:
        note(text, prefix="note: ")
    note(
        "the value for observed rows, the pessimistic end of the 80% interval for the others",
        prefix="score: ",
    )
    if result.excluded:
        note(
            ", ".join(f"{k}: {v}" for k, v in sorted(result.excluded.items())), prefix="excluded: "
        )
        for e in result.excluded_candidates[:10]:
            note(f"{e.accelerator} ({e.placement.value}): {e.reason}", prefix="  ")
    note(
        f"{result.candidates_considered} candidates, generation {result.generation}, "
        f"{result.elapsed_ms:.0f} ms"
    )
    missing = [r.rank for r in result.recommendations if r.snippet_yaml is None]
    if missing and not snippets:
        note(
            f"no Kubernetes snippet for #{', #'.join(map(str, missing))}: the knowledge base "
            "records no "
            "container image for those stacks; pass --image IMAGE",
            prefix="note: ",
        )
    if snippets:
        import sys

        for r in result.recommendations:
            if r.snippet_yaml is None:
                note(f"# --- #{r.rank}: {r.snippet_missing} ---")
                continue
            sys.stdout.write(f"# --- #{r.rank} ---\n{r.snippet_yaml.rstrip()}\n")


def predict(
    query: Annotated[
        str, typer.Option("--query", help="JSON list of configurations: a file, or - for stdin.")
    ],
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    store: StoreOpt = None,
) -> None:
    """Predict (or report the observed) metric for configurations given as a JSON list."""
    from cli.render import output_format
    from graph_schema.errors import InvalidInput

    chosen = output_format(fmt, as_json)

    try:
        text = sys.stdin.read() if query == "-" else Path(query).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"--query: cannot read {query!r}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--query: not valid JSON: {exc}") from None
    if isinstance(data, dict):
        data = data.get("queries", [data])
    if not isinstance(data, list):
        raise InvalidInput("--query: expected a JSON list of configurations")
    with _advisor(store) as adv:
        predictions = adv.predict(data)
    from cli.render import render

    rows = [
        {
            "accelerator": f"{p.accelerator or p.query.accelerator} x{p.query.accelerator_count}",
            "placement": p.query.placement.value,
            "benchmark": f"{p.query.benchmark} {p.query.scenario or ''}".strip(),
            "basis": BASIS_MARK.get(p.basis.value, p.basis.value),
            "value": _value(
                p.value,
                p.interval.low if p.interval else None,
                p.interval.high if p.interval else None,
            ),
            "conf": f"{p.confidence:.2f}" if p.value is not None else None,
            "metric": p.query.metric,
            "warnings": "; ".join(p.warnings) or None,
        }
        for p in predictions
    ]
    render(
        rows,
        fmt=chosen,
        title="predictions",
        json_data=predictions,
        columns=["accelerator", "placement", "benchmark", "value", "basis"],
        details=["metric", "warnings"],
    )


def evaluate(
    protocol: Annotated[
        str,
        typer.Option(
            help="by-round (train on earlier rounds, test the latest), loao (leave one "
                 "accelerator out), training (MLPerf Training times by round) or latency (LLM "
                 "TTFT/TPOT by round)."
        ),
    ] = "by-round",
    train_until: Annotated[
        str | None,
        typer.Option(
            help="Last training round (by-round; default: the one before the test round)."
        ),
    ] = None,
    test_round: Annotated[
        str | None, typer.Option(help="Round to test on (default: the latest).")
    ] = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    store: StoreOpt = None,
) -> None:
    """Hold published results out, answer them through predict, and score per slice against the
    simple lookup (MAPE, median APE, 80% coverage, top-1 regret)."""
    from cli.render import OutputFormat, note, output_format, print_json, render

    chosen = output_format(fmt, as_json)
    with _advisor(store) as adv:
        report = adv.evaluate(protocol, train_until=train_until, test_round=test_round)
    if chosen is OutputFormat.json:
        print_json(report)
        return
    render(evaluation_rows(report), fmt=chosen, title=f"evaluation: {report.description}")
    for text in report.notes:
        note(text, prefix="note: ")
    if report.refused_reasons:
        note(
            ", ".join(f"{k}: {v}" for k, v in sorted(report.refused_reasons.items())),
            prefix="refused: ",
        )
    note(
        f"trained on {report.train_count}, held out {report.holdout_count}; {report.elapsed_s:.1f} "
        "s"
    )


def evaluation_rows(report: Any) -> list[dict[str, Any]]:
    """One row per slice: the advisor's figures, then the simple lookup's on the rows it covers."""

    def pct(v: float | None) -> str:
        return "" if v is None else f"{v:.1f}"

    rows = []
    slices = [("overall", report.overall)]
    for group in ("by_basis", "by_seen", "by_kind", "by_metric", "by_benchmark"):
        slices.extend(
            (f"{group.removeprefix('by_')}: {name}", s)
            for name, s in getattr(report, group).items()
        )
    for name, s in slices:
        rows.append(
            {
                "slice": name,
                "answered": s.predictions,
                "refused": s.refused,
                "MAPE %": pct(s.mape),
                "median APE %": pct(s.median_ape),
                "80% cov": "" if s.interval_coverage is None else f"{s.interval_coverage:.2f}",
                "top-1 regret %": pct(s.top1_regret),
                "lookup rows": s.lookup_rows,
                "MAPE % (lookup rows)": pct(s.mape_on_lookup_rows),
                "lookup MAPE %": pct(s.lookup_mape),
                "median (lookup rows)": pct(s.median_ape_on_lookup_rows),
                "lookup median": pct(s.lookup_median_ape),
            }
        )
    return rows


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
    from cli.render import output_format, render

    chosen = output_format(fmt, as_json)
    with _advisor(store) as adv:
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
    scenario: Annotated[str, typer.Option(help="Scenario, e.g. Offline.")],
    metric: Annotated[str, typer.Option(help="Metric, e.g. tokens_per_second.")],
    accelerator: Annotated[str, typer.Option(help="The accelerator (any published spelling).")],
    family: Annotated[str, typer.Option()] = "mlperf-inference",
    division: Annotated[str, typer.Option()] = "closed",
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    store: StoreOpt = None,
) -> None:
    """The stacks one accelerator ran a benchmark with, fastest first; older versions carried
    forward by the upgrade factor learned from pairs (shown), never silently."""
    from cli.render import output_format, render

    chosen = output_format(fmt, as_json)
    with _advisor(store) as adv:
        rows = adv.rank_stacks(
            benchmark=benchmark,
            scenario=scenario,
            metric=metric,
            accelerator=accelerator,
            family=family,
            division=division,
        )
    render(
        rows,
        fmt=chosen,
        title=f"stacks on {accelerator} for {benchmark} {scenario}",
        json_data=rows,
        columns=["framework", "version", "software_class", "round", "value", "carried_forward"],
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
    from cli.render import OutputFormat, note, output_format, render

    chosen = output_format(fmt, as_json)
    placement = choose(placement, PLACEMENTS, "--placement")
    with _advisor(store) as adv:
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
    """Newer component versions that are slower, with statistical support."""
    from cli.render import OutputFormat, note, output_format, render

    chosen = output_format(fmt, as_json)
    with _advisor(store) as adv:
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
        details=["scenario", "metric", "older_count", "newer_count"],
    )


def register(app: typer.Typer) -> None:
    panel = "Advice"
    app.command("recommend", rich_help_panel=panel)(recommend)
    app.command("predict", rich_help_panel=panel)(predict)
    app.command("evaluate", rich_help_panel=panel)(evaluate)
    app.add_typer(compare_app, rich_help_panel=panel)
