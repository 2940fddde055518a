"""``advisor predict | evaluate`` (registered by ``cli.recommend``): a figure for given
configurations, and the held-out evaluation of those figures.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from stack_advisor.advisor.proxy.predictions import proxy_predictions, serving_scenario
from stack_advisor.cli.options import FormatOpt, JsonOpt, StoreOpt
from stack_advisor.cli.proxy import proxy_workload
from stack_advisor.cli.recommend_options import (
    AcceleratorOpt,
    AsOfOpt,
    BenchmarkOpt,
    ConcurrencyOpt,
    CountOpt,
    FamilyOpt,
    IslOpt,
    ModelOpt,
    OslOpt,
    PredictMetricOpt,
    ScenarioOpt,
    StackTextOpt,
    checked_as_of,
)
from stack_advisor.cli.recommend_table import BASIS_MARK, with_interval
from stack_advisor.cli.stores import answering_store

if TYPE_CHECKING:
    from stack_advisor.advisor.results import Prediction
    from stack_advisor.cli.render import OutputFormat


def predict(
    query: Annotated[
        str | None,
        typer.Option(
            "--query",
            help="JSON list of configurations: a file, or - for stdin (or --model instead).",
        ),
    ] = None,
    model: ModelOpt = None,
    family: FamilyOpt = "mlperf-inference",
    benchmark: BenchmarkOpt = None,
    scenario: ScenarioOpt = None,
    isl: IslOpt = None,
    osl: OslOpt = None,
    concurrency: ConcurrencyOpt = None,
    accelerator: AcceleratorOpt = None,
    count: CountOpt = None,
    metric: PredictMetricOpt = None,
    stack: StackTextOpt = None,
    placement: Annotated[
        str | None,
        typer.Option(
            help="With --benchmark/--accelerator/--count: where the accelerators run, "
            "bare-metal (default), passthrough, vgpu or unknown (as a ranking's row names it)."
        ),
    ] = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
    store: StoreOpt = None,
    as_of: AsOfOpt = None,
) -> None:
    """Predict (or report the observed) metric for configurations given as a JSON list.

    Exits 1 when no configuration was answered (each refusal says why), 2 on a usage error."""
    from stack_advisor.cli.render import output_format

    chosen = output_format(fmt, as_json)
    if as_of is not None:  # a round it names none of is a usage error, as recommend's (exit 2)
        as_of = checked_as_of(as_of)
    flags = query is None and model is None and benchmark and accelerator and count
    _only_with_flags(bool(flags), metric=metric, stack=stack, placement=placement)
    if flags:
        assert benchmark and accelerator and count
        asked = benchmark_queries(
            family, benchmark, scenario, accelerator, count, as_of, stack, placement
        )
        answered = _predict_benchmark(store, asked, metric)
        if answered is not None:
            return _show_predictions(answered, chosen)
        # a catalogued model without results: by proxy at that count, as without --count
    if query is None:  # a described model, by proxy (stack_advisor.cli.proxy)
        spec = proxy_workload(
            model=model,
            benchmark=benchmark,
            scenario=scenario,
            isl=isl,
            osl=osl,
            concurrency=concurrency,
            accelerators=accelerator,
            family=family,
        )
        if as_of is not None:
            _as_of_not_for_models(as_of, "a described model")
        with answering_store(store) as adv:
            predictions = proxy_predictions(adv, spec, count=count, asked=accelerator)
        _show_predictions(predictions, chosen)
        return
    _show_predictions(_predict_file(query, as_of, store), chosen)


def _predict_file(query: str, as_of: str | None, store: str | None) -> list[Prediction]:
    """The configurations of a ``--query`` file answered (a described model by proxy, as the API
    answers it); ``--as-of`` for each that names none."""
    data = _read_queries(query)
    described = [isinstance(q, dict) and "model" in q for q in data]
    if as_of is not None:
        data = [
            {"as_of": as_of, **q} if isinstance(q, dict) and not d else q
            for q, d in zip(data, described)
        ]
        if any(described):
            _as_of_not_for_models(as_of, f"{sum(described)} described model(s) of --query")
    with answering_store(store) as adv:
        if any(described):
            from stack_advisor.api.prediction_batch import predict_batch

            return predict_batch(adv, data)
        return adv.predict(data)


def _as_of_not_for_models(as_of: str, what: str) -> None:
    """The warning that ``--as-of`` does not apply to ``what``: a described model is estimated
    by proxy from its architecture and the parts' published figures, which name no round."""
    from stack_advisor.cli.render import warning

    warning(
        f"--as-of {as_of}: not applied to {what}: estimated by proxy from the architecture and "
        "the parts' published figures, which name no round"
    )


def _only_with_flags(flags: bool, **given: str | None) -> None:
    """Raises: InvalidInput for ``--metric``/``--stack`` without the flags they describe (a
    ``--query`` names its own; a ``--model`` is answered by proxy)."""
    from stack_advisor.schema.errors import InvalidInput

    stray = [f"--{name}" for name, value in given.items() if value is not None]
    if stray and not flags:
        raise InvalidInput(
            f"{' and '.join(stray)}: only with --benchmark, --accelerator and --count (a --query "
            "names its own metric and framework per configuration)"
        )


def _predict_benchmark(
    store: str | None, queries: list[dict[str, Any]], metric: str | None = None
) -> list[Prediction] | None:
    """``benchmark_queries`` answered as ``--query`` answers them, in ``metric`` or else the
    metric a ranking of the benchmark reports (the queries need one); None where that ranking
    answers by proxy (a catalogued model without results: ``predict --model`` answers it)."""
    from stack_advisor.advisor.results import Basis

    first = queries[0]
    spec: dict[str, Any] = {k: first[k] for k in ("family", "benchmark", "scenario") if k in first}
    with answering_store(store) as adv:
        ranked = adv.recommend(spec, top=1)
        if ranked.recommendations and ranked.recommendations[0].basis is Basis.PROXY:
            return None
        return adv.predict([{**q, "metric": metric or ranked.metric} for q in queries])


def benchmark_queries(
    family: str,
    benchmark: str,
    scenario: str | None,
    accelerators: list[str],
    count: int,
    as_of: str | None,
    stack: str | None = None,
    placement: str | None = None,
) -> list[dict[str, Any]]:
    """``predict --benchmark B --accelerator A [--accelerator ...] --count N`` as the queries
    ``--query`` takes: one per accelerator, at that count (the rows of a ranking come at the
    counts their evidence has, which is not the count asked); an inference scenario defaults to
    Offline, as ``predict --model`` takes it."""
    base: dict[str, Any] = {"family": family, "benchmark": benchmark, "accelerator_count": count}
    asked = serving_scenario(family, scenario)
    if asked:
        base["scenario"] = asked
    if as_of is not None:
        base["as_of"] = as_of
    if stack is not None:  # --stack: the query's framework, as published
        base["framework"] = stack
    if placement is not None:
        base["placement"] = placement
    return [{**base, "accelerator": name} for name in accelerators]


def _read_queries(query: str) -> list[Any]:
    """The configurations in ``--query`` (a file, or - for stdin): a JSON list, one object, or
    an object with a ``queries`` list; InvalidInput naming what is wrong with the file."""
    from stack_advisor.schema.errors import InvalidInput

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
    if not data:
        raise InvalidInput(f"--query: {query!r} holds no configuration; give at least one")
    return data


def _asked(p: Prediction, field: str) -> bool:
    """Whether a prediction's row shows ``field``: an answer shows what it answered for, a
    refusal only what the query gave (not the defaults it was never answered with)."""
    return p.basis.value != "unsupported" or field in p.query.model_fields_set


def _show_predictions(predictions: list[Prediction], chosen: OutputFormat) -> None:
    """Prints the predictions; exits 1 when every one was refused."""
    from stack_advisor.cli.render import fail_if_empty, render

    rows = [
        {
            "accelerator": f"{p.accelerator or p.query.accelerator}"
            + (f" x{p.query.accelerator_count}" if _asked(p, "accelerator_count") else ""),
            "placement": p.query.placement.value if _asked(p, "placement") else None,
            "benchmark": f"{p.query.benchmark} {p.query.scenario or ''}".strip(),
            "basis": BASIS_MARK.get(p.basis.value, p.basis.value)
            # a measured figure carried to another round (a drift, a forecast): not as measured
            + (", carried" if p.basis.value == "observed" and not p.observed else ""),
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
        columns=["accelerator", "placement", "benchmark", "value", "basis", "round"],
        details=["metric", "warnings"],
    )
    fail_if_empty(
        bool(predictions) and all(p.basis.value == "unsupported" for p in predictions),
        f"no configuration answered: {len(predictions)} refused (each row's warnings say why)",
    )


def evaluate(
    protocol: Annotated[
        str,
        typer.Option(
            help="by-round (train on earlier rounds, test the latest), loao (leave one "
            "accelerator out), training (MLPerf Training times by round), latency (LLM "
            "TTFT/TPOT by round), forecast (every round ahead: train on rounds <= k, ask k+1 as "
            "of its round) or within-round (each accelerator of the newest round held out, its "
            "older rounds kept)."
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
    groups = ["by_basis", "by_seen", "by_kind", "by_metric", "by_benchmark"]
    if report.protocol in ("loao", "within-round"):  # which parts were held out, and how each did
        groups.append("by_accelerator")
    for group in groups:
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
