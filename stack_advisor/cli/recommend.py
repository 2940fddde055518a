"""``advisor recommend | predict | evaluate`` (predict and evaluate: ``cli.predict``; the
``compare`` group: ``cli.compare``): the advisor engine on the command line.

Thin: flags become a ``Workload`` (or queries), the engine answers, ``cli.render`` prints a table
or JSON. The JSON is the pydantic result's ``model_dump`` — a contract scripts parse.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import typer

from stack_advisor.advisor.results import DEFAULT_TOP, MAX_TOP
from stack_advisor.cli.compare import compare_app
from stack_advisor.cli.options import PLACEMENTS, FormatOpt, JsonOpt, StoreOpt, choose
from stack_advisor.cli.predict import evaluate, predict
from stack_advisor.cli.predict import evaluation_rows as evaluation_rows
from stack_advisor.cli.proxy import described_model, proxy_fields
from stack_advisor.cli.recommend_options import (
    AcceleratorOpt,
    AllRowsOpt,
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
from stack_advisor.cli.recommend_table import print_recommendations
from stack_advisor.cli.stores import answering_store

if TYPE_CHECKING:
    from stack_advisor.advisor.results import RecommendationSet
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
    top: TopOpt = None,
    all_rows: AllRowsOpt = False,
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

    With --cluster or --nodes, rank (node pool, stack) pairs of your own cluster instead.

    Exits 1 when nothing ranked (the notes say why), 2 on a usage error."""
    _recommend(SimpleNamespace(**locals()))


def _recommend(f: SimpleNamespace) -> None:
    """The recommend command on its flags (``recommend``'s parameters)."""
    from stack_advisor.cli.render import output_format

    chosen = output_format(f.fmt, f.as_json)
    for p in f.placement or []:
        choose(p, PLACEMENTS, "--placement")
    in_cluster = f.cluster is not None or f.nodes_file is not None
    training = f.family == "mlperf-training" and f.workload_file is None
    f.max_count, f.gpus = _training_budget(
        training,
        f.scenario,
        gpus=f.gpus,
        count=f.count,
        max_count=f.max_count,
        in_cluster=in_cluster,
    )
    workload = _recommend_workload(f)
    if not in_cluster:
        _refuse_cluster_flags(
            {
                "--pool-label": f.pool_label,
                "--what-if-driver": f.what_if_driver,
                "--gpus": f.gpus,
                "--nodes-count": f.nodes_count,
            }
        )
        with answering_store(f.store, f.prices, f.rules) as adv:
            top = f.top or (MAX_TOP if f.all_rows else DEFAULT_TOP)
            _show(adv.recommend(workload, top=top), chosen, f.snippets)
        return
    from stack_advisor.cli.cluster_recommend import run

    with answering_store(f.store, f.prices, f.rules) as adv:
        run(
            adv,
            workload,
            cluster=f.cluster,
            nodes_file=f.nodes_file,
            pool_label=f.pool_label,
            what_if=f.what_if_driver,
            gpus=f.gpus,
            nodes_count=f.nodes_count,
            image=f.image,
            per_pool=f.per_pool,
            top=f.top or DEFAULT_TOP,
            as_json=f.as_json,
            snippets=f.snippets,
        )


def _recommend_workload(f: SimpleNamespace) -> Workload:
    """The workload ``recommend``'s flags describe (or its --workload file), with --target,
    --as-of and --all applied."""
    if f.workload_file is not None:
        workload = _file_workload(f.workload_file, f.image)
        _warn_ignored_flags(f)
    else:
        workload = _flags_workload(
            family=f.family,
            benchmark=f.benchmark,
            task=f.task,
            scenario=f.scenario,
            model=None if described_model(f.model) else f.model,
            proxy=proxy_fields(f.model, f.isl, f.osl, f.concurrency),
            batch_size=f.batch_size,
            precision=f.precision,
            param=f.param,
            metric=f.metric,
            objective=f.objective,
            min_evidence=f.min_evidence,
            observed_only=f.observed_only,
            image=f.image,
            max_ttft_ms=f.max_ttft_ms,
            max_tpot_ms=f.max_tpot_ms,
            min_confidence=f.min_confidence,
            framework=f.framework,
            hardware={
                "accelerators": f.accelerator or None,
                "count": f.count,
                "min_count": f.min_count,
                "max_count": f.max_count,
                "placements": f.placement or None,
                "include_cpu": not f.no_cpu,
                "driver": f.driver,
            },
        )
    if f.target is not None:
        workload = workload.model_copy(update={"target": f.target})
    if f.as_of is not None:
        workload = workload.model_copy(update={"as_of": checked_as_of(f.as_of)})
    if f.all_rows:
        workload = workload.model_copy(update={"all_rows": True})
    return workload


# the options that describe a workload, which a --workload file replaces (the attribute of
# ``recommend``'s namespace → the option as typed)
_WORKLOAD_FLAGS = {
    "benchmark": "--benchmark",
    "task": "--task",
    "scenario": "--scenario",
    "model": "--model",
    "batch_size": "--batch-size",
    "precision": "--precision",
    "param": "--param",
    "metric": "--metric",
    "framework": "--framework",
    "accelerator": "--accelerator",
    "count": "--count",
    "min_count": "--min-count",
    "max_count": "--max-count",
    "placement": "--placement",
    "driver": "--driver",
    "max_ttft_ms": "--max-ttft-ms",
    "max_tpot_ms": "--max-tpot-ms",
    "isl": "--isl",
    "osl": "--osl",
    "concurrency": "--concurrency",
}


NOT_GIVEN: tuple[object, ...] = (None, [])


def _warn_ignored_flags(f: SimpleNamespace) -> None:
    """A warning naming the workload options given beside --workload: the file describes the
    workload, so they are not applied (a probe's --count 2 was dropped without a word)."""
    from stack_advisor.cli.render import warning

    given = [o for attr, o in _WORKLOAD_FLAGS.items() if getattr(f, attr, None) not in NOT_GIVEN]
    if given:
        warning(
            f"--workload {f.workload_file}: the file describes the workload; "
            f"{', '.join(given)} not applied (put them in the file)"
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
    from stack_advisor.schema.errors import InvalidInput

    try:
        return Workload.from_dict({k: v for k, v in data.items() if v is not None}, where="")
    except InvalidInput as exc:
        raise InvalidInput(as_options(str(exc))) from None


# a workload field → the option that sets it, where the two are not spelt alike
OPTION_OF = {
    "frameworks": "--framework",
    "accelerators": "--accelerator",
    "placements": "--placement",
    "parameters": "--param",
    "include_predicted": "--observed-only",
    "include_cpu": "--no-cpu",
}


def as_options(message: str) -> str:
    """A workload's validation message in the options the user typed: ``max_ttft_ms: ...`` as
    ``--max-ttft-ms: ...``, ``hardware.min_count: ...`` as ``--min-count: ...``."""

    from stack_advisor.advisor.workload import Workload

    def option(found: re.Match[str]) -> str:
        if found.group(1).split(".")[0] not in Workload.model_fields:
            return found.group(0)  # a message's own words ("known: a, b"), not a field
        names = [p for p in found.group(1).split(".") if not p.isdigit()]
        name = names[-1] if names else found.group(1)
        if name == "hardware":  # a check across the hardware options names them itself
            return ""
        return OPTION_OF.get(name, "--" + name.replace("_", "-")) + ": "

    parts = [p.strip() for p in message.removeprefix(": ").split("; ")]
    return "; ".join(re.sub(r"^([a-z_][\w.]*): ", option, p) for p in parts)


def _refuse_cluster_flags(flags: dict[str, Any]) -> None:
    """Flags that only mean something for a cluster's nodes, given without --cluster or --nodes."""
    given = [flag for flag, value in flags.items() if value]
    if given:
        from stack_advisor.schema.errors import InvalidInput

        raise InvalidInput(f"{', '.join(given)} need the nodes: add --cluster NAME or --nodes FILE")


def _show(result: RecommendationSet, chosen: OutputFormat, snippets: bool) -> None:
    from stack_advisor.cli.render import OutputFormat, fail_if_empty, print_json

    if chosen is OutputFormat.json:
        print_json(result)
    else:
        print_recommendations(result, snippets, chosen)
    fail_if_empty(not result.recommendations, "nothing ranked (the notes and 'excluded' say why)")


def _framework(text: str) -> dict[str, Any]:
    from pydantic import ValidationError

    from stack_advisor.advisor.workload import FrameworkConstraint
    from stack_advisor.schema.errors import InvalidInput

    try:
        return FrameworkConstraint.parse(text).model_dump(exclude_none=True)
    except ValidationError as exc:
        reasons = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise InvalidInput(f"--framework {text!r}: {reasons}") from None


def register(app: typer.Typer) -> None:
    panel = "Advice"
    app.command("recommend", rich_help_panel=panel)(recommend)
    app.command("predict", rich_help_panel=panel)(predict)
    app.command("evaluate", rich_help_panel=panel)(evaluate)
    app.add_typer(compare_app, rich_help_panel=panel)
