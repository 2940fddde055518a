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
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from cli.options import JsonOpt, StoreOpt

if TYPE_CHECKING:
    from advisor.engine import Advisor

PricesOpt = Annotated[Optional[Path], typer.Option(
    "--prices", help="Price table YAML (cost per accelerator-hour per placement) for --objective cost.")]
RulesOpt = Annotated[Optional[Path], typer.Option(
    "--rules", help="Compatibility rules: a YAML file or a directory of them (default: packaged).")]


@contextmanager
def _advisor(store_uri: str | None, prices: Path | None = None,
             rules: Path | None = None) -> Iterator[Advisor]:
    from advisor.engine import Advisor
    from graph_schema.registry import open_store

    store = open_store(store_uri)
    try:
        yield Advisor(store, prices=prices, rules=rules)
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


def recommend(
    benchmark: Annotated[Optional[str], typer.Option(help="Benchmark name, e.g. resnet50, bert-99.")] = None,
    family: Annotated[str, typer.Option(help="Benchmark family: mlperf-inference, cnn, pi, ...")] = "mlperf-inference",
    task: Annotated[Optional[str], typer.Option(help="A task standing for a benchmark, e.g. image-classification.")] = None,
    scenario: Annotated[Optional[str], typer.Option(help="Offline, Server, SingleStream, MultiStream.")] = None,
    model: Annotated[Optional[str], typer.Option(help="Model (benchmark parameter).")] = None,
    batch_size: Annotated[Optional[int], typer.Option(help="Batch size (benchmark parameter).")] = None,
    precision: Annotated[Optional[str], typer.Option(help="Precision (benchmark parameter).")] = None,
    param: Annotated[Optional[list[str]], typer.Option(help="Other benchmark parameter key=value (repeatable).")] = None,
    metric: Annotated[Optional[str], typer.Option(help="Metric to rank on (default: from the objective).")] = None,
    framework: Annotated[Optional[list[str]], typer.Option(
        help="Component constraint NAME[SPEC], e.g. 'tensorrt>=8.5' or 'pytorch==2.1.*' (repeatable).")] = None,
    accelerator: Annotated[Optional[list[str]], typer.Option(
        help="Allowed accelerator (substring of the model, repeatable).")] = None,
    count: Annotated[Optional[int], typer.Option(help="Exact accelerator count.")] = None,
    min_count: Annotated[Optional[int], typer.Option(help="Minimum accelerator count.")] = None,
    max_count: Annotated[Optional[int], typer.Option(help="Maximum accelerator count.")] = None,
    placement: Annotated[Optional[list[str]], typer.Option(
        help="Allowed placement: bare-metal, passthrough, vgpu, unknown (repeatable).")] = None,
    no_cpu: Annotated[bool, typer.Option("--no-cpu", help="Leave CPU-only systems out.")] = False,
    driver: Annotated[Optional[str], typer.Option(help="Driver on your nodes; stacks needing newer are excluded.")] = None,
    objective: Annotated[str, typer.Option(help="throughput, latency or cost.")] = "throughput",
    min_evidence: Annotated[int, typer.Option(help="Observations needed to count as observed.")] = 1,
    observed_only: Annotated[bool, typer.Option("--observed-only", help="Rank observed candidates only.")] = False,
    workload_file: Annotated[Optional[Path], typer.Option(
        "--workload", help="Workload as YAML or JSON (flags are ignored when given).")] = None,
    top: Annotated[int, typer.Option("--top", help="How many recommendations.")] = 5,
    snippets: Annotated[bool, typer.Option("--snippets", help="Also print each Kubernetes snippet (table mode).")] = False,
    cluster: Annotated[Optional[str], typer.Option(
        "--cluster", help="Rank this cluster's node pools (an inventory recorded by `advisor nodes sync`).")] = None,
    nodes_file: Annotated[Optional[str], typer.Option(
        "--nodes", help="Rank the node pools of `kubectl get nodes -o json` output (a file, or - for stdin).")] = None,
    pool_label: Annotated[Optional[str], typer.Option(
        "--pool-label", help="The label that names node pools (default: the GKE/EKS/AKS/Karpenter ones).")] = None,
    what_if_driver: Annotated[Optional[list[str]], typer.Option(
        "--what-if-driver", help="POOL=VERSION: re-rank as if that pool ran this driver (repeatable).")] = None,
    gpus: Annotated[Optional[int], typer.Option(
        "--gpus", min=1, help="GPUs (or MIG slices) the job needs; more than a node holds makes a gang.")] = None,
    nodes_count: Annotated[Optional[int], typer.Option(
        "--nodes-count", min=1, help="Nodes the job spans (a gang when > 1).")] = None,
    image: Annotated[Optional[str], typer.Option(
        "--image", help="Image for stacks the knowledge base records none for.")] = None,
    per_pool: Annotated[int, typer.Option("--per-pool", min=1, help="Stacks per pool (cluster mode).")] = 3,
    prices: PricesOpt = None,
    rules: RulesOpt = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Rank software stacks and placements for a workload, with evidence and a Kubernetes snippet.

    With --cluster or --nodes, rank (node pool, stack) pairs of your own cluster instead."""
    from advisor.workload import Workload

    if workload_file is not None:
        workload = Workload.from_file(workload_file)
    else:
        data: dict[str, Any] = {
            "family": family, "benchmark": benchmark, "task": task, "scenario": scenario,
            "model": model, "batch_size": batch_size, "precision": precision,
            "parameters": _parse_params(param), "metric": metric, "objective": objective,
            "min_evidence": min_evidence, "include_predicted": not observed_only,
            "frameworks": [_framework(f) for f in framework or []],
            "hardware": {"accelerators": accelerator or None, "count": count, "min_count": min_count,
                         "max_count": max_count, "placements": placement or None,
                         "include_cpu": not no_cpu, "driver": driver},
        }
        workload = Workload.from_dict({k: v for k, v in data.items() if v is not None}, where="flags")
    cluster_only = {"--pool-label": pool_label, "--what-if-driver": what_if_driver, "--gpus": gpus,
                    "--nodes-count": nodes_count, "--image": image}
    if cluster is None and nodes_file is None:
        given = [flag for flag, value in cluster_only.items() if value]
        if given:
            from graph_schema.errors import InvalidInput

            raise InvalidInput(f"{', '.join(given)} need the nodes: add --cluster NAME or --nodes FILE")
    else:
        from cli.cluster_recommend import run

        with _advisor(store, prices, rules) as adv:
            run(adv, workload, cluster=cluster, nodes_file=nodes_file, pool_label=pool_label,
                what_if=what_if_driver, gpus=gpus, nodes_count=nodes_count, image=image, per_pool=per_pool,
                top=top, as_json=as_json, snippets=snippets)
        return
    with _advisor(store, prices, rules) as adv:
        result = adv.recommend(workload, top=top)
    if as_json:
        from cli.render import print_json

        print_json(result)
        return
    _print_recommendations(result, snippets)


def _framework(text: str) -> dict[str, Any]:
    from advisor.workload import FrameworkConstraint

    return FrameworkConstraint.parse(text).model_dump(exclude_none=True)


def _print_recommendations(result: Any, snippets: bool) -> None:
    from cli.render import info, render, stdout

    rows = []
    for r in result.recommendations:
        c = r.candidate
        rows.append({
            "#": r.rank,
            "basis": r.basis.value,
            "accelerator": f"{c.accelerator} x{c.accelerator_count}",
            "placement": c.placement.value,
            "stack": c.stack_label,
            "value": f"{_fmt(r.value)} [{_fmt(r.interval.low)}..{_fmt(r.interval.high)}]",
            "evidence": f"{r.evidence.count} obs {'/'.join(r.evidence.rounds)}".strip(),
            "overhead": r.placement_overhead.text if r.placement_overhead else "",
            "warnings": len(r.warnings) or "",
        })
    per = " per accelerator" if result.recommendations and result.recommendations[0].per_accelerator else ""
    unit = result.recommendations[0].unit if result.recommendations else ""
    render(rows, as_json=False, title=f"{result.workload.get('benchmark')} — {result.metric} "
                                       f"({unit}{per}), objective {result.objective}")
    for r in result.recommendations:
        for w in r.warnings:
            stdout.print(f"  #{r.rank} {w}", highlight=False, markup=False)
        if r.factors:
            moved = ", ".join(f"{f.name} x{f.effect:.2f}" for f in r.factors)
            stdout.print(f"  #{r.rank} moved most by: {moved}", highlight=False, markup=False)
    for note in result.notes:
        info(f"note: {note}")
    if result.excluded:
        info("excluded: " + ", ".join(f"{k}: {v}" for k, v in sorted(result.excluded.items())))
    info(f"{result.candidates_considered} candidates, generation {result.generation}, "
         f"{result.elapsed_ms:.0f} ms")
    if snippets:
        for r in result.recommendations:
            stdout.print(f"# --- #{r.rank} ---")
            stdout.print(r.snippet_yaml, highlight=False, markup=False)


def predict(
    query: Annotated[str, typer.Option("--query", help="JSON list of configurations: a file, or - for stdin.")],
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Predict (or report the observed) metric for configurations given as a JSON list."""
    from graph_schema.errors import InvalidInput

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
    from cli.render import print_json, render

    if as_json:
        print_json(predictions)
        return
    rows = [{
        "accelerator": f"{p.query.accelerator} x{p.query.accelerator_count}",
        "placement": p.query.placement.value,
        "benchmark": f"{p.query.benchmark} {p.query.scenario or ''}".strip(),
        "metric": p.query.metric,
        "value": _fmt(p.value),
        "interval": f"{_fmt(p.interval.low)}..{_fmt(p.interval.high)}",
        "basis": p.basis.value,
        "warnings": "; ".join(p.warnings),
    } for p in predictions]
    render(rows, as_json=False, title="predictions")


def evaluate(
    holdout_filter: Annotated[Optional[str], typer.Option(
        "--holdout-filter", help="Slice to hold out, e.g. round=v3.0 (default: a random fifth of the systems).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random holdout.")] = 0,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Hold out part of the knowledge base, train on the rest; print MAPE and top-1 regret."""
    with _advisor(store) as adv:
        report = adv.evaluate(holdout_filter, seed=seed)
    from cli.render import info, print_json, render

    if as_json:
        print_json(report)
        return
    rows = []
    for name, s in (("overall", report.overall), ("unseen accelerators", report.unseen_accelerators),
                    ("seen accelerators", report.seen_accelerators), *report.by_metric.items()):
        rows.append({"slice": name, "predictions": s.predictions,
                     "MAPE %": None if s.mape is None else round(s.mape, 1),
                     "median APE %": None if s.median_ape is None else round(s.median_ape, 1),
                     "top-1 regret %": None if s.top1_regret is None else round(s.top1_regret, 1),
                     "groups": s.groups,
                     "interval coverage": None if s.interval_coverage is None else round(s.interval_coverage, 2)})
    render(rows, as_json=False, title=f"evaluation (holdout: {report.holdout_filter or 'random systems'})")
    info(f"trained on {report.train_count}, held out {report.holdout_count}; "
         f"{len(report.unseen_accelerator_names)} accelerators unseen in training; {report.elapsed_s:.1f} s")


compare_app = typer.Typer(name="compare", help="Compare stacks and placements; find regressions.",
                          no_args_is_help=True)


@compare_app.command("stacks")
def compare_stacks(
    a: Annotated[str, typer.Option("--a", help="Stack A: a stack id (stk-...) or component=version,...")],
    b: Annotated[str, typer.Option("--b", help="Stack B, same form.")],
    benchmark: Annotated[str, typer.Option(help="Benchmark name, e.g. resnet50.")],
    accelerator: Annotated[Optional[str], typer.Option(help="Only this accelerator (substring).")] = None,
    scenario: Annotated[Optional[str], typer.Option()] = None,
    metric: Annotated[Optional[str], typer.Option()] = None,
    family: Annotated[str, typer.Option()] = "mlperf-inference",
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Stack A against stack B on the same benchmark (and accelerator), paired within a round."""
    with _advisor(store) as adv:
        result = adv.compare(a, b, benchmark=benchmark, accelerator=accelerator,
                             scenario=scenario, metric=metric, family=family)
    from cli.render import print_json, render

    if as_json:
        print_json(result)
        return
    render([result.model_dump(mode="json")], as_json=False, title="stack comparison",
           columns=["benchmark", "accelerator", "metric", "pairs", "ratio", "p_value", "a_count",
                    "b_count", "a_median", "b_median", "verdict"])


@compare_app.command("placement")
def compare_placement(
    accelerator: Annotated[Optional[str], typer.Option(help="Only this accelerator (substring).")] = None,
    placement: Annotated[Optional[str], typer.Option(help="passthrough or vgpu.")] = None,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Virtualised placements against bare metal per accelerator, from paired results."""
    with _advisor(store) as adv:
        items = adv.placement_overhead(accelerator, placement)
    from cli.render import info, print_json, render

    if as_json:
        print_json(items)
        return
    if not items:
        info("no paired bare-metal/virtualised results in the knowledge base")
        return
    render([{"accelerator": o.accelerator, "placement": o.placement.value, "ratio": round(o.ratio, 3),
             "pairs": o.pairs, "summary": o.text} for o in items], as_json=False,
           title="placement overhead (speed vs bare metal)")


@compare_app.command("regressions")
def compare_regressions(
    component: Annotated[str, typer.Option(help="driver, cuda, cudnn, tensorrt, framework_version.")] = "driver",
    benchmark: Annotated[Optional[str], typer.Option()] = None,
    accelerator: Annotated[Optional[str], typer.Option()] = None,
    alpha: Annotated[float, typer.Option(help="Significance level (Mann-Whitney U).")] = 0.05,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
) -> None:
    """Newer component versions that are slower, with statistical support."""
    with _advisor(store) as adv:
        items = adv.regressions(component, accelerator=accelerator, benchmark=benchmark,
                                alpha=alpha)
    from cli.render import info, print_json, render

    if as_json:
        print_json(items)
        return
    if not items:
        info(f"no regression of {component} at alpha={alpha}")
        return
    render([i.model_dump(mode="json") for i in items], as_json=False, title=f"{component} regressions",
           columns=["accelerator", "benchmark", "scenario", "metric", "older", "newer", "change",
                    "older_count", "newer_count", "p_value"])


def register(app: typer.Typer) -> None:
    panel = "Advice"
    app.command("recommend", rich_help_panel=panel)(recommend)
    app.command("predict", rich_help_panel=panel)(predict)
    app.command("evaluate", rich_help_panel=panel)(evaluate)
    app.add_typer(compare_app, rich_help_panel=panel)
