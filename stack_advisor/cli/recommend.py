"""``advisor recommend | predict | evaluate`` (and the ``compare`` group, ``cli.compare``): the
advisor engine on the command line.

Thin: flags become a ``Workload`` (or queries), the engine answers, ``cli.render`` prints a table
or JSON. The JSON is the pydantic result's ``model_dump`` — a contract scripts parse.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from stack_advisor.cli.compare import compare_app
from stack_advisor.cli.options import PLACEMENTS, FormatOpt, JsonOpt, StoreOpt, choose
from stack_advisor.cli.proxy import ALL_ROWS as PROXY_ROWS
from stack_advisor.cli.proxy import as_predictions, described_model, proxy_fields, proxy_workload
from stack_advisor.cli.recommend_options import (
    AcceleratorOpt,
    AsOfOpt,
    BatchSizeOpt,
    BenchmarkOpt,
    ClusterOpt,
    ConcurrencyOpt,
    CountOpt,
    DriverOpt,
    FamilyOpt,
    FrameworkOpt,
    GpusOpt,
    ImageOpt,
    IslOpt,
    MaxCountOpt,
    MaxTpotOpt,
    MaxTtftOpt,
    MetricOpt,
    MinConfidenceOpt,
    MinCountOpt,
    MinEvidenceOpt,
    ModelOpt,
    NoCpuOpt,
    NodesCountOpt,
    NodesFileOpt,
    ObjectiveOpt,
    ObservedOnlyOpt,
    OslOpt,
    ParamOpt,
    PerPoolOpt,
    PlacementOpt,
    PoolLabelOpt,
    PrecisionOpt,
    PricesOpt,
    RulesOpt,
    ScenarioOpt,
    SnippetsOpt,
    TargetOpt,
    TaskOpt,
    TopOpt,
    WhatIfDriverOpt,
    WorkloadFileOpt,
    checked_as_of,
)
from stack_advisor.cli.recommend_table import BASIS_MARK, print_recommendations, with_interval
from stack_advisor.cli.stores import answering_store

if TYPE_CHECKING:
    from stack_advisor.advisor.results import Prediction, RecommendationSet
    from stack_advisor.advisor.workload import Workload
    from stack_advisor.cli.render import OutputFormat


def _parse_params(items: list[str] | None) -> dict[str, Any]:
    from stack_advisor.schema.errors import InvalidInput

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"--param: {item!r} is not key=value (e.g. --param division=closed)")
        text = value.strip()
        out[key.strip()] = int(text) if text.isdigit() else text
    return out


def recommend(
    benchmark: BenchmarkOpt = None,
    family: FamilyOpt = "mlperf-inference",
    task: TaskOpt = None,
    scenario: ScenarioOpt = None,
    model: ModelOpt = None,
    isl: IslOpt = None,
    osl: OslOpt = None,
    concurrency: ConcurrencyOpt = None,
    batch_size: BatchSizeOpt = None,
    precision: PrecisionOpt = None,
    param: ParamOpt = None,
    metric: MetricOpt = None,
    framework: FrameworkOpt = None,
    accelerator: AcceleratorOpt = None,
    count: CountOpt = None,
    min_count: MinCountOpt = None,
    max_count: MaxCountOpt = None,
    placement: PlacementOpt = None,
    no_cpu: NoCpuOpt = False,
    driver: DriverOpt = None,
    objective: ObjectiveOpt = "throughput",
    min_evidence: MinEvidenceOpt = 1,
    max_ttft_ms: MaxTtftOpt = None,
    max_tpot_ms: MaxTpotOpt = None,
    observed_only: ObservedOnlyOpt = False,
    min_confidence: MinConfidenceOpt = 0.0,
    workload_file: WorkloadFileOpt = None,
    top: TopOpt = 5,
    all_rows: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Every ranked row; default: one per (accelerator, count, placement, stack "
            "family), its best evidence, with how many more results it folds in.",
        ),
    ] = False,
    snippets: SnippetsOpt = False,
    cluster: ClusterOpt = None,
    nodes_file: NodesFileOpt = None,
    pool_label: PoolLabelOpt = None,
    what_if_driver: WhatIfDriverOpt = None,
    gpus: GpusOpt = None,
    nodes_count: NodesCountOpt = None,
    image: ImageOpt = None,
    target: TargetOpt = None,
    per_pool: PerPoolOpt = 3,
    prices: PricesOpt = None,
    rules: RulesOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    store: StoreOpt = None,
    as_of: AsOfOpt = None,
) -> None:
    """Rank software stacks and placements for a workload, with evidence and a Kubernetes snippet.

    With --cluster or --nodes, rank (node pool, stack) pairs of your own cluster instead."""
    from stack_advisor.cli.render import output_format

    chosen = output_format(fmt, as_json)
    for p in placement or []:
        choose(p, PLACEMENTS, "--placement")
    in_cluster = cluster is not None or nodes_file is not None
    training = family == "mlperf-training" and workload_file is None
    max_count, gpus = _training_budget(
        training, scenario, gpus=gpus, count=count, max_count=max_count, in_cluster=in_cluster
    )
    if workload_file is not None:
        workload = _file_workload(workload_file, image)
    else:
        workload = _flags_workload(
            family=family,
            benchmark=benchmark,
            task=task,
            scenario=scenario,
            model=None if described_model(model) else model,
            proxy=proxy_fields(model, isl, osl, concurrency),
            batch_size=batch_size,
            precision=precision,
            param=param,
            metric=metric,
            objective=objective,
            min_evidence=min_evidence,
            observed_only=observed_only,
            image=image,
            max_ttft_ms=max_ttft_ms,
            max_tpot_ms=max_tpot_ms,
            min_confidence=min_confidence,
            framework=framework,
            hardware={
                "accelerators": accelerator or None,
                "count": count,
                "min_count": min_count,
                "max_count": max_count,
                "placements": placement or None,
                "include_cpu": not no_cpu,
                "driver": driver,
            },
        )
    if target is not None:
        workload = workload.model_copy(update={"target": target})
    if as_of is not None:
        workload = workload.model_copy(update={"as_of": checked_as_of(as_of)})
    if all_rows:
        workload = workload.model_copy(update={"all_rows": True})
    if not in_cluster:
        _refuse_cluster_flags(
            {
                "--pool-label": pool_label,
                "--what-if-driver": what_if_driver,
                "--gpus": gpus,
                "--nodes-count": nodes_count,
            }
        )
        with answering_store(store, prices, rules) as adv:
            _show(adv.recommend(workload, top=top), chosen, snippets)
        return
    from stack_advisor.cli.cluster_recommend import run

    with answering_store(store, prices, rules) as adv:
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


def _training_budget(
    training: bool,
    scenario: str | None,
    *,
    gpus: int | None,
    count: int | None,
    max_count: int | None,
    in_cluster: bool,
) -> tuple[int | None, int | None]:
    """(max_count, gpus): for MLPerf Training without a cluster, ``--gpus N`` is the accelerator
    budget (each candidate runs on the most nodes that fit), so it becomes the maximum count.

    Raises:
        typer.BadParameter: a scenario for Training, or the budget given twice.
    """
    if training and scenario is not None:
        raise typer.BadParameter(
            f"MLPerf Training has no scenarios ({scenario!r} is an MLPerf Inference scenario); "
            "leave --scenario out (and give the accelerator budget as --gpus N)",
            param_hint="--scenario",
        )
    if not (training and gpus is not None and not in_cluster):
        return max_count, gpus
    if max_count is not None or count is not None:
        raise typer.BadParameter(
            "give the budget once: --gpus N (or --max-count N), not with --count/--max-count",
            param_hint="--gpus",
        )
    return gpus, None


def _file_workload(path: Path, image: str | None) -> Workload:
    """The workload of a YAML or JSON file; ``--image`` is an output choice, so it applies too."""
    from stack_advisor.advisor.workload import Workload

    workload = Workload.from_file(path)
    if image is None:
        return workload
    data = {**workload.model_dump(mode="json", exclude_none=True), "image": image}
    return Workload.from_dict(data, where="--image")


def _flags_workload(
    *,
    family: str,
    benchmark: str | None,
    task: str | None,
    scenario: str | None,
    model: str | None,
    batch_size: int | None,
    precision: str | None,
    param: list[str] | None,
    metric: str | None,
    objective: str,
    min_evidence: int,
    observed_only: bool,
    image: str | None,
    max_ttft_ms: float | None,
    max_tpot_ms: float | None,
    min_confidence: float,
    framework: list[str] | None,
    hardware: dict[str, Any],
    proxy: dict[str, Any] | None = None,
) -> Workload:
    """The workload the flags describe (a flag left out is left to the workload's default)."""
    from stack_advisor.advisor.workload import Workload

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
        "hardware": hardware,
        **(proxy or {}),
    }
    return Workload.from_dict({k: v for k, v in data.items() if v is not None}, where="flags")


def _refuse_cluster_flags(flags: dict[str, Any]) -> None:
    """Flags that only mean something for a cluster's nodes, given without --cluster or --nodes."""
    given = [flag for flag, value in flags.items() if value]
    if given:
        from stack_advisor.schema.errors import InvalidInput

        raise InvalidInput(f"{', '.join(given)} need the nodes: add --cluster NAME or --nodes FILE")


def _show(result: RecommendationSet, chosen: OutputFormat, snippets: bool) -> None:
    from stack_advisor.cli.render import OutputFormat, print_json

    if chosen is OutputFormat.json:
        print_json(result)
        return
    print_recommendations(result, snippets, chosen)


def _framework(text: str) -> dict[str, Any]:
    from pydantic import ValidationError

    from stack_advisor.advisor.workload import FrameworkConstraint
    from stack_advisor.schema.errors import InvalidInput

    try:
        return FrameworkConstraint.parse(text).model_dump(exclude_none=True)
    except ValidationError as exc:
        reasons = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise InvalidInput(f"--framework {text!r}: {reasons}") from None


def predict(
    query: Annotated[
        str | None,
        typer.Option(
            "--query",
            help="JSON list of configurations: a file, or - for stdin (or --model instead).",
        ),
    ] = None,
    model: ModelOpt = None,
    benchmark: BenchmarkOpt = None,
    scenario: ScenarioOpt = None,
    isl: IslOpt = None,
    osl: OslOpt = None,
    concurrency: ConcurrencyOpt = None,
    accelerator: AcceleratorOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    store: StoreOpt = None,
    as_of: AsOfOpt = None,
) -> None:
    """Predict (or report the observed) metric for configurations given as a JSON list."""
    from stack_advisor.cli.render import output_format
    from stack_advisor.schema.errors import InvalidInput

    chosen = output_format(fmt, as_json)
    if query is None:  # a described model, by proxy (stack_advisor.cli.proxy)
        spec = proxy_workload(
            model=model,
            benchmark=benchmark,
            scenario=scenario,
            isl=isl,
            osl=osl,
            concurrency=concurrency,
            accelerators=accelerator,
        )
        with answering_store(store) as adv:
            answer = adv.recommend(spec, top=PROXY_ROWS)
        _show_predictions(as_predictions(answer, spec["scenario"]), chosen)
        return

    try:
        text = sys.stdin.read() if query == "-" else Path(query).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"--query: cannot read {query!r}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"--query: {query!r} is not text (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start} is not UTF-8); give a JSON list of configurations"
        ) from None
    if not text.strip():
        raise InvalidInput(f"--query: {query!r} is empty; give a JSON list of configurations")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--query: not valid JSON: {exc}") from None
    if isinstance(data, dict):
        data = data.get("queries", [data])
    if not isinstance(data, list):
        raise InvalidInput("--query: expected a JSON list of configurations")
    if as_of is not None:
        data = [{"as_of": as_of, **q} if isinstance(q, dict) else q for q in data]
    with answering_store(store) as adv:
        predictions = adv.predict(data)
    _show_predictions(predictions, chosen)


def _asked(p: Prediction, field: str) -> bool:
    """Whether a prediction's row shows ``field``: an answer shows what it answered for, a
    refusal only what the query gave (not the defaults it was never answered with)."""
    return p.basis.value != "unsupported" or field in p.query.model_fields_set


def _show_predictions(predictions: list[Prediction], chosen: OutputFormat) -> None:
    from stack_advisor.cli.render import render

    rows = [
        {
            "accelerator": f"{p.accelerator or p.query.accelerator}"
            + (f" x{p.query.accelerator_count}" if _asked(p, "accelerator_count") else ""),
            "placement": p.query.placement.value if _asked(p, "placement") else None,
            "benchmark": f"{p.query.benchmark} {p.query.scenario or ''}".strip(),
            "basis": BASIS_MARK.get(p.basis.value, p.basis.value),
            "value": with_interval(
                p.value,
                p.interval.low if p.interval else None,
                p.interval.high if p.interval else None,
            ),
            "conf": f"{p.confidence:.2f}" if p.value is not None else None,
            "metric": p.query.metric,
            "round": p.round,
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
    from stack_advisor.cli.render import OutputFormat, note, output_format, print_json, render

    chosen = output_format(fmt, as_json)
    with answering_store(store) as adv:
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


def register(app: typer.Typer) -> None:
    panel = "Advice"
    app.command("recommend", rich_help_panel=panel)(recommend)
    app.command("predict", rich_help_panel=panel)(predict)
    app.command("evaluate", rich_help_panel=panel)(evaluate)
    app.add_typer(compare_app, rich_help_panel=panel)
