#!/usr/bin/env python
"""Regenerate docs/accuracy.md: how good ``advisor predict`` is on held-out MLPerf results.

    python scripts/accuracy_report.py [MLPERF_DIR] [--store URI] [--out docs/accuracy.md]

Imports every ``inference_v*.tar.gz`` of MLPERF_DIR (default ../shared/data/mlperf) and every
``training_v*.tar.gz`` of --training-dir into a fresh embedded store through the real importers (or
uses --store as it is), then runs ``advisor evaluate`` — by round on the latest round and on the one
before it, leaving each accelerator out, Training by round, LLM latency by round — through
``Advisor.evaluate``, which answers every held-out result with ``Advisor.predict`` on a query
written as a user writes it. Prints the tables and writes them.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOALS = (
    "throughput by round (the latest round, and the round before it within a few "
    "points): MAPE <= 12%, "
    "median APE <= 7%, no worse than the previous-round lookup on the rows it covers, "
    "transferred MAPE <= 25% "
    "with no result off by 3x or more, 80% intervals covering 0.75-0.85 for each basis; "
    "Training by round: "
    ">= 90% of known-benchmark results answered, MAPE <= 15%, coverage 0.75-0.85; LLM "
    "TTFT/TPOT: MAPE <= 20% "
    "where answered; results of benchmarks never seen in training: 100% refused (issue 28)."
)


def _fmt(v: float | None, digits: int = 1) -> str:
    return "" if v is None or v != v else f"{v:.{digits}f}"  # v != v: NaN, none to show


def table(report) -> list[str]:  # type: ignore[no-untyped-def]
    head = (
        "| slice | answered | refused | MAPE % | median APE % | 80% coverage | worst x | "
        "off >= 3x | top-1 regret % | "
        "lookup rows | MAPE % on lookup rows | lookup MAPE % | median % on lookup rows | "
        "lookup median % | "
        "regret % on lookup rows | lookup regret % |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    slices = [("**overall**", report.overall)]
    for group in ("by_basis", "by_seen", "by_kind", "by_metric", "by_benchmark"):
        slices.extend(
            (f"{group.removeprefix('by_')}: {name}", s)
            for name, s in getattr(report, group).items()
        )
    for name, s in slices:
        lines.append(
            f"| {name} | {s.predictions} | {s.refused} | {_fmt(s.mape)} | {_fmt(s.median_ape)} | "
            f"{_fmt(s.interval_coverage, 2)} | {_fmt(s.worst_ratio, 2)} | {s.off_3x} | "
            f"{_fmt(s.top1_regret)} | {s.lookup_rows} | "
            f"{_fmt(s.mape_on_lookup_rows)} | {_fmt(s.lookup_mape)} | "
            f"{_fmt(s.median_ape_on_lookup_rows)} | "
            f"{_fmt(s.lookup_median_ape)} | {_fmt(s.top1_regret_on_lookup_rows)} | "
            f"{_fmt(s.lookup_top1_regret)} |"
        )
    return lines


def _check(out: list[str], ok: bool, text: str) -> None:
    out.append(f"- {'met' if ok else '**missed**'}: {text}")


def throughput_goals(name: str, rep) -> list[str]:  # type: ignore[no-untyped-def]
    """Issue 28's throughput goals on one by-round split."""
    o, out = rep.overall, []
    _check(
        out,
        o.mape is not None and o.mape <= 12,
        f"{name}: MAPE {_fmt(o.mape)}% (goal <= 12%) on {o.predictions} answered",
    )
    _check(
        out,
        o.median_ape is not None and o.median_ape <= 7,
        f"{name}: median APE {_fmt(o.median_ape)}% (goal <= 7%)",
    )
    if o.mape_on_lookup_rows is not None and o.lookup_mape is not None:
        _check(
            out,
            o.mape_on_lookup_rows <= o.lookup_mape + 1e-9,
            f"{name}: on the {o.lookup_rows} rows the previous-round lookup covers, MAPE "
            f"{_fmt(o.mape_on_lookup_rows, 2)}% "
            f"vs lookup {_fmt(o.lookup_mape, 2)}% (median "
            f"{_fmt(o.median_ape_on_lookup_rows, 2)}% vs {_fmt(o.lookup_median_ape, 2)}%)",
        )
    t = rep.by_basis.get("transferred")
    if t is not None and t.mape is not None:
        _check(
            out,
            t.mape <= 25 and t.off_3x == 0,
            f"{name}: transferred MAPE {_fmt(t.mape)}% (goal <= 25%), "
            f"{t.off_3x} off by 3x or more (worst {_fmt(t.worst_ratio, 2)}x)",
        )
    for basis, s in rep.by_basis.items():
        if s.interval_coverage is not None:
            _check(
                out,
                0.75 <= s.interval_coverage <= 0.85,
                f"{name}: 80% coverage, {basis}: {_fmt(s.interval_coverage, 2)}",
            )
    _check(
        out,
        rep.unseen_benchmark_refused == rep.unseen_benchmark_queries,
        f"{name}: results of benchmarks never seen in training refused: "
        f"{rep.unseen_benchmark_refused} of "
        f"{rep.unseen_benchmark_queries}",
    )
    total = o.predictions + o.refused
    out.append(
        f"- {name}: {o.predictions} of {total} results answered "
        f"({o.predictions / total * 100 if total else 0:.0f}%); "
        "refused: " + ", ".join(f"{k} ({v})" for k, v in sorted(rep.refused_reasons.items()))
    )
    unseen = rep.by_kind.get("scenario never seen in training")
    if unseen is not None and unseen.predictions + unseen.refused:
        known = total - unseen.predictions - unseen.refused
        answered = o.predictions - unseen.predictions
        out.append(
            f"- {name}: of the {known} results whose benchmark and scenario training "
            f"holds, {answered} answered "
            f"({answered / known * 100 if known else 0:.1f}%); the other "
            f"{unseen.predictions + unseen.refused} "
            "are of a scenario no training round has (Interactive before v5.0)"
        )
    return out


def drift_goals(runs: dict) -> list[str]:  # type: ignore[type-arg]
    """Issue 41's goals: round-ahead coverage per basis and step, the newest round within."""
    out: list[str] = []
    fc = runs.get("forecast")
    if fc is not None:
        for name, sl in fc.by_step_basis.items():
            if sl.interval_coverage is not None:
                _check(
                    out,
                    0.75 <= sl.interval_coverage <= 0.85,
                    f"round ahead {name}: 80% coverage {_fmt(sl.interval_coverage, 2)} "
                    f"(goal 0.75-0.85) on {sl.predictions}",
                )
        out.extend(one_calibration(fc.coverage_by_width_scale))
    wr = runs.get("within-round")
    if wr is not None and wr.overall.median_ape is not None:
        _check(
            out,
            wr.overall.median_ape <= 12,
            f"within the newest round, one accelerator out (older rounds kept): median APE "
            f"{_fmt(wr.overall.median_ape)}% (goal <= 12%), coverage "
            f"{_fmt(wr.overall.interval_coverage, 2)}",
        )
    tr = runs.get("training")
    if tr is not None:
        o = tr.overall
        total = o.predictions + o.refused
        _check(
            out,
            total > 0 and o.predictions / total >= 0.95,
            f"Training {tr.description.split(', ')[0]}: {o.predictions} of {total} answered "
            "(goal >= 95%)",
        )
    return out


def goals(runs: dict) -> list[str]:  # type: ignore[type-arg]
    out = [
        *throughput_goals("by round, latest", runs["by-round"]),
        *throughput_goals("by round, the round before", runs["by-round-previous"]),
    ]
    lo = runs["loao"].overall
    _check(
        out,
        lo.mape is not None and lo.mape <= 25,
        f"leave one accelerator out: MAPE {_fmt(lo.mape)}% (goal <= 25%) on "
        f"{lo.predictions} answered",
    )
    tr = runs.get("training")
    if tr is not None:
        o = tr.overall
        total = o.predictions + o.refused
        _check(
            out,
            total > 0 and o.predictions / total >= 0.9,
            f"Training: {o.predictions} of {total} known-benchmark results answered "
            f"({o.predictions / total * 100 if total else 0:.1f}%, goal >= 90%)",
        )
        _check(
            out,
            o.mape is not None and o.mape <= 15,
            f"Training: MAPE {_fmt(o.mape)}% (goal <= 15%), median {_fmt(o.median_ape)}%",
        )
        _check(
            out,
            o.interval_coverage is not None and 0.75 <= o.interval_coverage <= 0.85,
            f"Training: 80% coverage {_fmt(o.interval_coverage, 2)} (goal 0.75-0.85)",
        )
    out.extend(drift_goals(runs))
    lat = runs.get("latency")
    if lat is not None:
        for metric, s in lat.by_metric.items():
            _check(
                out,
                s.mape is not None and s.mape <= 20,
                f"LLM latency {metric}: MAPE {_fmt(s.mape)}% (goal <= 20%) on "
                f"{s.predictions} answered, "
                f"{s.refused} refused; coverage {_fmt(s.interval_coverage, 2)}",
            )
    return out


CHALLENGER = "learned"


def sklearn_section(method: str, answers: dict, challenger: dict) -> list[str]:  # type: ignore[type-arg]
    """What scikit-learn does, and the transferred figures of answers and challenger side by
    side."""
    head = (
        "| protocol | transfers by | transferred answered | MAPE % | median APE % | 80% "
        "coverage | top-1 regret % |"
    )
    lines = [
        (
            "**What scikit-learn does: the transfer challenger.** A transfer scales the "
            "nearest measured "
            "accelerators of the same vendor by published peak compute and bandwidth. "
            "Answers use the "
            "roofline blend (compute^a x bandwidth^(1-a), `a` picked from a grid by "
            "leaving one accelerator out). "
            "The challenger (`stack_advisor/advisor/estimate/transfer.py`, method "
            "`learned`) is fitted per benchmark slice and accelerator "
            "class at calibration time: scikit-learn's `Ridge` fits the log of the "
            "percent-of-roofline "
            "efficiency on log peak compute and log bandwidth (shrunk towards the blend), "
            "`LeaveOneGroupOut` (one group per accelerator) scores it against the blend "
            "on the same held-out "
            "accelerators, and it is kept only for the slices where its error is lower. "
            "The fitted exponents "
            "are persisted with the calibration and applied with numpy (`advisor "
            "recommend` and `predict` "
            "never import scikit-learn). The report runs both protocols with each, on "
            "the same rows:"
        ),
        "",
        head,
        "|" + "---|" * (head.count("|") - 1),
    ]
    verdict = []
    for protocol in ("by-round", "loao"):
        for name, rep in (
            (f"{method} (answers)", answers[protocol]),
            (f"{CHALLENGER} (scikit-learn)", challenger[protocol]),
        ):
            s = rep.by_basis.get("transferred")
            if s is None:
                continue
            lines.append(
                f"| {protocol} | {name} | {s.predictions} | {_fmt(s.mape)} | "
                f"{_fmt(s.median_ape)} | "
                f"{_fmt(s.interval_coverage, 2)} | {_fmt(s.top1_regret)} |"
            )
        a, c = (
            answers[protocol].by_basis.get("transferred"),
            challenger[protocol].by_basis.get("transferred"),
        )
        if a is not None and c is not None and a.mape is not None and c.mape is not None:
            verdict.append(
                (c.mape <= a.mape)
                and (c.median_ape or 0) <= (a.median_ape or 0)
                and 0.75 <= (c.interval_coverage or 0) <= 0.85
            )
    wins = bool(verdict) and all(verdict)
    lines += [
        "",
        (
            "The rule for letting the challenger answer: no worse on both protocols' "
            "transferred MAPE "
            "and median APE, and its coverage in 0.75-0.85. "
            + (
                "**It now is** on these rows; the default (`Advisor.transfer_method`) stays "
                "`roofline` until the challenger is also measured on the round-ahead steps "
                "below, which the rule does not read: a switch moves every transfer's answer."
                if wins
                else "It is not, so answers keep the roofline blend."
            )
        ),
    ]
    lines += [
        "",
        (
            "Variants measured once on 2026-11-23, each as transferred MAPE / median APE "
            "/ coverage by "
            "round, then leaving accelerators out (the blend: 20.6 / 17.1 / 0.77, 18.5 / "
            "12.0 / 0.83): "
            "a log-linear model of all of a slice's references answering on its own, for "
            "every slice, "
            "instead of scaling the nearest references: ridge 47.4 / 28.9 / 0.63, 22.9 / "
            "13.5 / 0.68, least squares 49.4 / 29.5 / "
            "0.57, 24.4 / 15.2 / 0.65; the challenger chosen by median instead of mean "
            "error 21.5 / "
            "20.0 / 0.67, 17.6 / 12.1 / 0.82; `RidgeCV` choosing the penalty 21.5 / 19.8 / 0.75, "
            "18.1 / 12.5 / 0.81; penalty 3: 21.8 / 19.4 / 0.78, 18.0 / 12.7 / 0.81; kept "
            "only where it "
            "beats the blend by a standard error 20.6 / 17.8 / 0.77, 17.8 / 12.7 / 0.81 "
            "(penalty 0.3: "
            "20.0 / 18.2 / 0.77, 17.6 / 12.5 / 0.80); kept only where both its mean and "
            "median error "
            "are lower 20.6 / 17.1 / 0.77, 17.8 / 12.2 / 0.81. `HuberRegressor` was too "
            "slow to refit "
            "per held-out accelerator. None is better on every figure."
        ),
    ]
    lines += [
        "",
        (
            "Before it, a gradient-boosted model (`advisor/predictor.py`, removed on "
            "2026-11-23) was "
            "measured once on the same by-round rows: MAPE 12.1% (median 11.8%) where the nearest "
            "evidence interpolates (5.7%, median 3.3%) and 143.8% (median 22.5%) where "
            "it transfers "
            "(20.6%, median 17.1%)."
        ),
    ]
    return lines


def training_challenger(table, train_until: str = "v4.1", test_round: str = "v5.0") -> dict:  # type: ignore[no-untyped-def,type-arg]
    """scikit-learn's ``Ridge`` on log time to train, on the same split as the Training protocol:
    features are the benchmark (one-hot), log count and its square, and log 16-bit peak compute
    and bandwidth; fitted on the training rounds, scored on the test round's results of known
    benchmarks beside the advisor's answers and the lookup (rows all three answer)."""
    import numpy as np
    from sklearn.linear_model import Ridge

    from stack_advisor.advisor.engine import Advisor  # noqa: F401  (the report's own path imports it first)
    from stack_advisor.advisor.estimate.facts import canonical_accelerator
    from stack_advisor.advisor.estimate.training import peaks
    from stack_advisor.advisor.snapshot import Knowledge
    from stack_advisor.advisor.verbs.evaluate import SELECT, count_lookup, subset, user_query
    from stack_advisor.advisor.verbs.predict import predict
    from stack_advisor.catalog.rounds import round_key

    keys = [round_key(r) if r else (0,) for r in table.round.vocab]
    every = np.arange(table.n)
    rows = SELECT["training"](table, every)
    in_train = np.array([keys[c] <= round_key(train_until) for c in table.round.codes[rows]])
    train_rows, test_rows = (
        rows[in_train],
        rows[table.round.codes[rows] == table.round.code(test_round)],
    )
    benches = sorted({table.bench_name.vocab[int(c)] for c in table.bench_name.codes[train_rows]})
    test_rows = test_rows[
        [table.bench_name.vocab[int(c)] in benches for c in table.bench_name.codes[test_rows]]
    ]

    def features(r: int) -> list[float] | None:
        p = peaks(canonical_accelerator(table.accelerator.vocab[int(table.accelerator.codes[r])]))
        if p is None:
            return None
        n = math.log(float(table.count[r]))
        one_hot = [
            float(table.bench_name.vocab[int(table.bench_name.codes[r])] == b) for b in benches
        ]
        return [*one_hot, n, n * n, math.log(p[0]), math.log(p[1])]

    fx = [(r, features(r)) for r in train_rows.tolist()]
    fx = [(r, f) for r, f in fx if f is not None]
    model = Ridge(alpha=1.0).fit(
        np.array([f for _, f in fx]), np.log(table.value[[r for r, _ in fx]])
    )
    train = subset(
        table, every[np.array([keys[c] <= round_key(train_until) for c in table.round.codes])]
    )
    answers = predict(
        Knowledge.from_table(train), [user_query(table, r) for r in test_rows.tolist()]
    )
    lookup = count_lookup(train, table, test_rows)
    got: dict[str, list[float]] = {
        "ridge": [],
        "advisor": [],
        "ridge_l": [],
        "lookup": [],
        "advisor_l": [],
    }
    for r, a, lk in zip(test_rows.tolist(), answers, lookup.tolist()):
        f = features(r)
        if f is None or a.value is None:
            continue
        truth = float(table.value[r])
        ridge = float(np.exp(model.predict(np.array([f]))[0]))
        got["ridge"].append(abs(ridge - truth) / truth * 100)
        got["advisor"].append(abs(a.value - truth) / truth * 100)
        if not math.isnan(lk):
            got["ridge_l"].append(got["ridge"][-1])
            got["advisor_l"].append(got["advisor"][-1])
            got["lookup"].append(abs(lk - truth) / truth * 100)
    return {k: (float(np.mean(v)) if v else None, len(v)) for k, v in got.items()}


def stack_effect_section() -> list[str]:
    """The stack-effect factors checked on held-out pairs
    (``stack_advisor.advisor.estimate.stack_check``)."""
    from stack_advisor.advisor.estimate.stack_check import held_out_check

    rows = held_out_check(STATE["table"])
    lines = [
        "## Stack-effect factors on held-out pairs",
        "",
        "Upgrade factors (`advisor compare stacks`, carried-forward estimates) learned "
        "from the rounds before the "
        "latest and applied to the upgrade pairs whose newer result is in the latest "
        "round: MAPE of the carried "
        "figure with the factor, and carrying the older figure unchanged, on the pairs a "
        "factor exists for; "
        "coverage: the pairs' own p10..p90 spread holding the measured ratio.",
        "",
    ]
    if not rows:
        return [*lines, "No upgrade pairs span the latest round.", ""]
    return [
        *lines,
        "| pool | pairs learned from | held out | with a factor | MAPE % | MAPE % "
        "unchanged | coverage |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['factor']} | {r['pairs']} | {r['held_out']} | {r['scored']} | "
            f"{_fmt(r['mape'])} | "
            f"{_fmt(r['mape_unchanged'])} | {_fmt(r['coverage'], 2)} |"
            for r in rows
        ),
        "",
    ]


STATE: dict = {}  # type: ignore[type-arg]


def level_section(advisor) -> list[str]:  # type: ignore[no-untyped-def]
    """The level transfer's replays (``stack_advisor.advisor.estimate.level_transfer``) on the
    whole knowledge base, beside the simplest baseline on the same rows."""
    from stack_advisor.advisor.estimate.level_transfer import replay_summary

    index = advisor.evidence()
    lines = [
        "## Transfers by measured level (parts without a compute figure)",
        "",
        "A part the catalogue gives no peak compute figure is transferred by its measured "
        "level against the parts that ran the benchmark, read on the other benchmarks and "
        "scenarios of its kind (LLM, vision, ...) both ran in a round "
        "(`stack_advisor/advisor/estimate/level_transfer.py`). "
        "Its replays, every part's figure on every slice of a held round predicted from the "
        "round's other parts and its own other slices, are its interval's calibration (so no "
        "coverage is claimed here); the baseline is the median of the round's other parts on "
        "the slice, on the same rows. Parts' first results on a benchmark, each predicted "
        "from the rounds before it (what a level transfer answers), widen the interval where "
        "at least 20 are.",
        "",
        "| family | division | replays | MAPE % | median APE % | baseline MAPE % | "
        "baseline median APE % | first results | their median APE % |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for family in ("mlperf-inference",):
        for division in ("closed", "open"):
            got = replay_summary(index, family, division)
            if not got["replays"]:
                continue
            lines.append(
                f"| {family} | {division} | {int(got['replays'])} | {_fmt(got['mape'])} | "
                f"{_fmt(got['median_ape'])} | {_fmt(got['baseline_mape'])} | "
                f"{_fmt(got['baseline_median_ape'])} | {int(got['first_replays'])} | "
                f"{_fmt(got['first_median_ape'])} |"
            )
    return [*lines, "", *generation_section(index)]


def generation_section(index) -> list[str]:  # type: ignore[no-untyped-def]
    """The generation transfer's replays
    (``stack_advisor.advisor.estimate.generation_transfer``), beside the same baseline."""
    from stack_advisor.advisor.estimate.generation_transfer import replay_summary

    lines = [
        "## Transfers within a generation (parts without a compute figure or results of the kind)",
        "",
        "A part the catalogue gives no peak compute figure, with no results of the asked "
        "benchmark's kind to read a level on, is transferred from the parts of its vendor and "
        "generation that ran the benchmark, scaled by memory bandwidth to an exponent picked on "
        "the replays (`stack_advisor/advisor/estimate/generation_transfer.py`). Its replays "
        "(every part's figure on every slice of a held round from the round's other parts of "
        "its generation) and parts' first results on a benchmark (each predicted from its "
        "generation's results of the rounds before: what the transfer answers) are its "
        "interval's calibration; the baseline is the median of the round's other parts on the "
        "same rows.",
        "",
        "| family | division | replays | exponent | MAPE % | median APE % | baseline MAPE % | "
        "baseline median APE % | first results | their median APE % |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for division in ("closed", "open"):
        got = replay_summary(index, "mlperf-inference", division)
        if "exponent" not in got:
            continue
        lines.append(
            f"| mlperf-inference | {division} | {int(got['replays'])} | {got['exponent']:g} | "
            f"{_fmt(got['mape'])} | {_fmt(got['median_ape'])} | {_fmt(got['baseline_mape'])} | "
            f"{_fmt(got['baseline_median_ape'])} | {int(got['first_replays'])} | "
            f"{_fmt(got['first_median_ape'])} |"
        )
    return [*lines, ""]


def _import(store, mlperf_dir: Path, training_dir: Path) -> None:  # type: ignore[no-untyped-def]
    from stack_advisor.collectors.importers.mlperf import import_mlperf
    from stack_advisor.collectors.importers.mlperf_training import import_mlperf_training

    for path in sorted(mlperf_dir.glob("inference_v*.tar.gz")):
        started = time.perf_counter()
        summary = import_mlperf(path, store)
        print(
            f"imported {path.name}: {summary.imported} results in "
            f"{time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
    for path in sorted(training_dir.glob("training_v*.tar.gz")):
        started = time.perf_counter()
        import_mlperf_training(path, store)
        print(f"imported {path.name} in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def run_all(advisor) -> tuple[dict, dict]:  # type: ignore[no-untyped-def,type-arg]
    """Every protocol the report shows, through ``Advisor.evaluate``; and the challenger's."""
    from stack_advisor.advisor.verbs.evaluate import scorable_rounds

    table = advisor.table()
    STATE["table"] = table
    rounds = scorable_rounds(table)
    started = time.perf_counter()
    runs = {
        "by-round": advisor.evaluate("by-round"),
        "by-round-previous": advisor.evaluate(
            "by-round", train_until=rounds[-3], test_round=rounds[-2]
        ),
        "loao": advisor.evaluate("loao"),
    }
    for protocol in ("training", "latency"):
        if len(scorable_rounds(table, protocol)) >= 2:
            runs[protocol] = advisor.evaluate(protocol)
    runs["forecast"] = advisor.evaluate("forecast")
    runs["within-round"] = advisor.evaluate("within-round")
    print(
        f"evaluated ({advisor.transfer_method}) in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    started = time.perf_counter()
    challenger = {p: advisor.evaluate(p, transfer_method=CHALLENGER) for p in ("by-round", "loao")}
    print(f"evaluated ({CHALLENGER}) in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return runs, challenger


def goal_scales(by_scale: dict[str, float]) -> set[str]:
    """The common width scales at which one step's coverage is in the goal band 0.75-0.85 (the
    share of intervals beside their answer, ``beside``, is no scale)."""
    return {s for s, cov in by_scale.items() if s != "beside" and 0.75 <= cov <= 0.85}


def one_calibration(by_label: dict[str, dict[str, float]]) -> list[str]:
    """Whether one calibration could hold every round-ahead step: the common scales of every
    interval's width that put each step's basis (20 rows or more) in 0.75-0.85, intersected."""
    if not by_label:
        return []
    common = set.intersection(*(goal_scales(v) for v in by_label.values()))
    ranges = "; ".join(
        f"{label} {scale_range(goal_scales(v))}"
        + (f" ({v['beside']:.0%} of its intervals beside their answer)" if v.get("beside") else "")
        for label, v in sorted(by_label.items())
    )
    what = (
        f"scales {scale_range(common)} hold all of them"
        if common
        else "no common scale holds all of them"
    )
    return [
        f"- one calibration for every step: every interval's width times one common scale puts "
        f"each step's basis (20 rows or more) in 0.75-0.85 at: {ranges}; {what}"
    ]


def scale_range(scales: set[str]) -> str:
    """``0.80-1.10`` from the scales of a band (the grid's lowest and highest in it: coverage
    rises with the scale where every interval holds its answer), or none."""
    if not scales:
        return "none"
    values = sorted(float(s) for s in scales)
    return f"{values[0]:.2f}-{values[-1]:.2f}" if len(values) > 1 else f"{values[0]:.2f}"


def forecast_section(rep) -> list[str]:  # type: ignore[no-untyped-def]
    """Round ahead, every step (issue 41): per step, per benchmark group and per basis; each row
    asked as of its test round, beside the previous-round lookup on the rows it covers."""
    head = (
        "| slice | answered | refused | MAPE % | median APE % | 80% coverage | lookup rows | "
        "MAPE % on lookup rows | lookup MAPE % | median % on lookup rows | lookup median % |"
    )
    lines = [
        f"## Forecast: {rep.description}",
        "",
        "Goal: 80% coverage 0.75-0.85 per basis, every step.",
        "",
        head,
        "|" + "---|" * (head.count("|") - 1),
    ]
    groups = [("**overall**", rep.overall)]
    for group in ("by_step", "by_group", "by_basis", "by_step_basis"):
        groups.extend(
            (f"{group.removeprefix('by_')}: {k}", v) for k, v in getattr(rep, group).items()
        )
    for name, sl in groups:
        lines.append(
            f"| {name} | {sl.predictions} | {sl.refused} | {_fmt(sl.mape)} | "
            f"{_fmt(sl.median_ape)} | {_fmt(sl.interval_coverage, 2)} | {sl.lookup_rows} | "
            f"{_fmt(sl.mape_on_lookup_rows)} | {_fmt(sl.lookup_mape)} | "
            f"{_fmt(sl.median_ape_on_lookup_rows)} | {_fmt(sl.lookup_median_ape)} |"
        )
    return [*lines, "", ONE_CALIBRATION_TEXT, ""]


ONE_CALIBRATION_TEXT = (
    "**Why one calibration does not hold every step** (read on 2026-12-01 from this section's "
    "rows, the shared rounds up to Inference v5.1 and Training v5.1). The Goals line 'one "
    "calibration for every step' multiplies every interval's log distances from its answer by "
    "one common scale, as any single recalibration of these intervals would, and reads each "
    "step's coverage at scales 0.50-3.00: the interpolated answers of v1.1 -> v2.0 are in "
    "0.75-0.85 only at 0.50-0.60 (their intervals are wider than that step needed), those of "
    "v2.1 -> v3.0 only at 1.45-1.90; no scale serves both. What differs is a shift common to a "
    "step's results, which the rounds before it do not tell: the median log error of the "
    "transferred answers (truth above the answer where positive) was +0.075, -0.091, +0.255, "
    "-0.192 and +0.064 on the inference steps in order (v2.1 -> v3.0's is Ada's first parts, "
    "L4 +0.45 and L40 +0.41, transferred from Ampere by their peak figures) and -0.040, -0.250 "
    "on Training's; its sign flips from step to step, so no bias is there to learn. Calibrated "
    "once on every step, the intervals cover the steps' results together as the overall row "
    "says, and each step's own coverage reads that step's shift."
)


def split_section(title: str, rep, extra: str = "") -> list[str]:  # type: ignore[no-untyped-def]
    return [
        f"## {title}: {rep.description}",
        "",
        (
            f"Trained on {rep.train_count} results; {rep.holdout_count} held out. "
            + " ".join(rep.notes)
            + extra
        ).strip(),
        "",
        *table(rep),
        "",
    ]


DRIFT_TEXT = (
    "**How answers are carried to a round** (`stack_advisor/advisor/estimate/drift.py`). Every "
    "answer names its round. A query naming the very stack a result ran is answered with that "
    "stack's own results, as measured in their round (the drift is newer software, which that "
    "stack is not), and a held round asked is answered from its own results. "
    "Evidence of an older round is carried to the benchmark's newest "
    "round by the median log ratio of the parts measured in both rounds (same benchmark and "
    "scenario, same accelerators per node, single or multi-node; Training times at the same "
    "count), their spread in the interval (added to a transfer's; beside, as the wider of the "
    "two, an interval replayed on the same part round to round); where no part is in both rounds,"
    " and for a round beyond the newest (`as_of`: `today` where the catalogue dates a round the "
    "knowledge base lacks, `next` or a round name), by a prior of per-round improvement learned "
    "from every held round-to-round step of the closed divisions, throughputs, latencies, "
    "serving latencies (an LLM's TTFT and TPOT under a Server or Interactive load: where the "
    "load put them below the limit, not how fast a part answers one query; measured on "
    "2026-12-01, by round <= v4.1 -> v5.1, where single-stream latencies' drift had moved them "
    "0.955x: TTFT MAPE 27.7% -> 25.6%, TPOT 13.1% -> 12.6%, throughputs unchanged) and "
    "times to train each apart, by benchmark group, age (published rounds since the round the "
    "catalogue says introduced it, `introduced` in benchmarks.yaml; where it does not say, held "
    "rounds since its first, a benchmark in the oldest held round counting as mature; a forecast "
    "several rounds ahead takes each step at the age it will have) and vendor, with coarser "
    "cells where one has fewer than 8 pairs (a group with few steps at the benchmark's age takes "
    "every group's at that age before its own of every age), and a band at least as wide as "
    "every group's at that age. The prior's band is "
    "widened per benchmark group, the same log distance added to each side of every cell's "
    "band, the least that covers 80% of the group's pairs of every step when each step is "
    "predicted from the steps before it (one pad for all steps; added, not multiplied: a step "
    "far outside a narrow band would have scaled a wide cell's band a hundredfold); the observed "
    "and "
    "interpolated residual replays take out the drift a carry applies. Each row above is asked "
    "as of its test round. A forecast cannot foresee a move its history never showed: the prior "
    "for LLM throughput in a benchmark's first round is learned from every benchmark's first "
    "steps held (retinanet v2.1 -> v3.0 and mixtral-8x7b v4.1 -> v5.1: about 1.22x a round, "
    "80% 1.02-1.51x before the band's calibrated pad), where the round after v5.1 moved young "
    "LLM benchmarks 2-4x (issue 41)."
)

WITHIN_TEXT = (
    "Each accelerator's results of the newest round are held out in turn, its older results kept: "
    "the answer is its own older evidence carried to the round by the drift the other parts show "
    "(the `round drift` factor), or a transfer; goal: median APE <= 12%. The lookup beside it is "
    "the same accelerator's previous-round results, on the same rows."
)

TRAINING_TEXT = (
    "**How Training estimates are made** (`stack_advisor/advisor/estimate/training.py`). "
    "A time to train depends on the "
    "accelerator count, and not in proportion. Each benchmark's count scaling is learned "
    "from the published "
    "sizes: the same accelerator in the same round at two counts is a pair, whose slope "
    "d log(time) / d log(count) "
    "sits at the pair's midpoint; a line in log count fitted to a benchmark's pairs "
    "(shrunk towards the family's, "
    "clipped to the slopes pairs have shown) moves a figure from the nearest published "
    "count to the one asked (a count between two published sizes: from both, weighted by "
    "closeness in log count). "
    "Another accelerator of the same vendor is moved to the count, then scaled by 16-bit "
    "peak compute and bandwidth "
    "with a share and gain chosen by predicting each accelerator of a round from its "
    "peers, for the benchmark's kind (the LLMs apart from the small vision, graph and "
    "recommendation models, each where it has 40 such replays; measured on 2026-12-01, "
    "v5.0 -> v5.1: MAPE 15.1% -> 14.2%, transferred 33.1% -> 27.4%, coverage 0.80 -> 0.83; "
    "v4.1 -> v5.0, where neither kind has 40, unchanged). Intervals are "
    "split-conformal on those replays combined with the round-to-round movement of the "
    "same accelerator and "
    "count; where the knowledge base has one round of Training, that movement is "
    "borrowed from the other "
    "families' closed-division throughput (signed as a time), and the answer says so. "
    "The lookup beside it: "
    "the same accelerator at the same count in its latest round. No scikit-learn model "
    "is used here: the "
    "count scaling is a weighted least-squares line in numpy."
)

LATENCY_TEXT = (
    "**How TTFT/TPOT estimates are made.** The same hierarchy as throughput (observed, "
    "interpolated from the "
    "accelerator's other results, transferred, refused). A p99 latency under a Server "
    "limit is mostly a tuning "
    "choice (TPOT is the binding limit; p99 TTFT lands where the submitter's load and "
    "serving stack put it), so "
    "observed and interpolated intervals come from replays within each round (the same "
    "accelerator's other "
    "systems) where there is no round-to-round latency history "
    "(`stack_advisor/advisor/estimate/latency.py`), and the answer "
    "says so. An accelerator never measured on the benchmark gets its p99 TTFT as a "
    "share of the published "
    "limit, not scaled by specs: log(TTFT/limit) split into a term per model and "
    "scenario and one per "
    "accelerator (its own results on other models, else its vendor's median moved for "
    "the part's peak compute "
    "against the vendor's measured parts, by a slope learned on them, each vendor "
    "centred on its own: faster "
    "parts run a little further below the limit, and a vendor's unmeasured parts do not "
    "tie), the interval "
    "split-conformal on "
    "cells replayed left out (`stack_advisor/advisor/estimate/latency_limit.py`; "
    "`bench/ttft_limit_share.py`, measured on 2026-11-30 with same-vendor transfers "
    "answering at their scaling: left out cell by cell, the share against the specs "
    "transfer on rounds <= v4.1 reads MAPE 37.5% vs 37.2%, median 32.6% vs 29.3%, "
    "coverage 0.68 vs 0.70; on rounds <= v5.1 MAPE 41.3% vs 39.8%, median 33.5% vs "
    "19.0%, coverage 0.86 vs 0.45, 9 vs 18 answers off by 3x or more: the specs "
    "transfer's centre is closer, its interval holds less than half the results, so "
    "the share answers (their geometric mean, the share's interval moved with it, read "
    "better left out cell by cell, MAPE 37.5% -> 32.0% and 41.3% -> 38.2%, but by round, "
    "<= v4.1 -> v5.1 through `Advisor.evaluate`, the 37 TTFT transfers it moved went "
    "9.9% -> 18.1% MAPE, coverage 1.00 -> 0.78: not kept); each accelerator of rounds <= "
    "v4.1 left out whole, the "
    "move for peak compute takes MAPE 26.3% -> 25.2% and the rank correlation on "
    "llama2-70b Server -0.69 -> "
    "+0.40; on rounds <= v5.1 it is about neutral, 34.3% -> 35.2%). `recommend` breaks "
    "equal scores (two "
    "pessimistic ends at the limit) by the lower central estimate, not by name. The "
    "top-1 TTFT regret left "
    "below comes from a part of a vendor with no LLM latency at all (Intel's Arc Pro B60 "
    "in v5.1): the share "
    "has nothing to read, so the cross-vendor specs transfer answers (343-395 ms against "
    "1,850 measured) and "
    "its point estimate can rank first; `recommend` scores it by its interval's "
    "pessimistic end, the 2,000 "
    "ms limit, below every part whose interval stays under it. Closed-division estimates "
    "are cut at the published "
    "p99 limit (a valid result meets it); one wholly above it is kept, saying no valid "
    "run is expected. "
    "Interactive is estimated from Server only for throughput (a ratio learned from "
    "systems that ran both); "
    "its latencies are refused: one ratio predicted them at 28-95% MAPE "
    "(`stack_advisor/advisor/estimate/scenario.py`). "
    "What is left of the TTFT error is round-to-round drift on the accelerators measured "
    "before (a serving latency's drift is learned from serving latencies alone, and "
    "rounds <= v4.1 hold none: the carry applies nothing, the answer says so): the same "
    "accelerator's median llama2-70b Server p99 TTFT moved from v4.1 to v5.1 by 1.2x "
    "(B200, MI300X), 1.8x "
    "(H200) and 3.6x (H100, multi-node systems) with no hardware change, which one round "
    "of latency history "
    "cannot foretell (a per-accelerator constant fitted on v5.1 itself would score 9.5% "
    "on the rows answered). "
    "`recommend --max-ttft-ms/--max-tpot-ms` checks a candidate without an observed "
    "latency against this "
    "estimate: excluded when the interval's low end is above the limit, kept with a "
    "warning when the interval "
    "straddles it."
)


def kept_sections(path: Path) -> str:
    """The sections other scripts write into the same file between ``<!-- NAME-section:start
    -->`` and ``<!-- NAME-section:end -->`` (``scripts/proxy_accuracy.py``): kept as they are."""
    import re

    if not path.is_file():
        return ""
    found = re.finditer(
        r"<!-- ([\w-]+)-section:start -->.*?<!-- \1-section:end -->",
        path.read_text(encoding="utf-8"),
        flags=re.S,
    )
    return "".join("\n\n" + m.group(0) for m in found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "mlperf_dir", nargs="?", default=str(ROOT.parent / "shared" / "data" / "mlperf")
    )
    parser.add_argument(
        "--training-dir", default=str(ROOT.parent / "shared" / "data" / "mlperf-training")
    )
    parser.add_argument(
        "--store", help="use this store as it is instead of importing into a fresh one"
    )
    parser.add_argument("--out", default=str(ROOT / "docs" / "accuracy.md"))
    args = parser.parse_args()

    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.store.registry import open_store

    if not args.store and not list(Path(args.mlperf_dir).glob("inference_v*.tar.gz")):
        parser.error(
            f"no inference_v*.tar.gz in {args.mlperf_dir} (name the MLPerf directory or --store)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        uri = args.store or f"embedded:{Path(tmp) / 'kb'}"
        with open_store(uri) as store:
            store.ensure_schema()
            if not args.store:
                _import(store, Path(args.mlperf_dir), Path(args.training_dir))
            advisor = Advisor(store)
            runs, challenger = run_all(advisor)
            source = (
                "a store holding them, imported earlier through the same importers"
                if args.store
                else "a fresh embedded store, imported through the real importers"
            )
            stack_lines = stack_effect_section()
            level_lines = level_section(advisor)
            tc = training_challenger(STATE["table"]) if "training" in runs else None
    by_round, loao = runs["by-round"], runs["loao"]
    lines = [
        "# Accuracy of the advisor's predictions",
        "",
        (
            "Regenerated by `python scripts/accuracy_report.py` on "
            f"{datetime.now(UTC):%Y-%m-%d} from the MLPerf "
            f"Inference and Training results in `../shared/data/` ({source}). Every held-out "
            "result is asked through `Advisor.predict` — the path `advisor predict` and "
            "`POST /v1/predictions` "
            "use — with the query a user would write: the published accelerator name and "
            "the framework as "
            "published free text (e.g. `TensorRT 8.6.0, CUDA 12.0`), with "
            "`implementation: reference` where the "
            "result's system folder says MLCommons' reference code ran "
            "(`<system>-reference-<device>-<framework>-...`). "
            "`advisor evaluate --protocol "
            "by-round|loao|training|latency` runs each split alone."
        ),
        "",
        (
            "The **simple lookup** (previous-round lookup) is the median per-accelerator "
            "value of the same canonical "
            "accelerator, benchmark, scenario and metric in its latest training round, "
            "times the accelerator count "
            "(Training: the same accelerator at the same count). Its columns are on the "
            "rows it covers, beside the "
            "advisor's figures on the same rows. APE: absolute percentage error. Worst "
            "x: the farthest answer off, "
            "as a ratio. Top-1 regret: the share of the best result's per-accelerator "
            "speed lost by picking the "
            "predicted best within a (benchmark, scenario, metric) group. Coverage: the "
            "share of true values inside "
            "the 80% interval."
        ),
        "",
        f"Goals: {GOALS}",
        "",
        "## Goals",
        "",
        *goals(runs),
        "",
        (
            "**What the latest round's misses are made of** (measured once on 2026-11-27 "
            "on the by-round rows "
            "below, through `Advisor.predict`). The 112 interpolated LLM results "
            "(tokens/s) of v5.1 came out a "
            "median 1.131x their v4.1 evidence, nearly all of them faster: TensorRT and "
            "vLLM got faster "
            "between the rounds. Training up to v4.1 holds no pair to learn that from: "
            "llama2-70b's only round "
            "there is v4.1 (v4.0, its first, and v3.1 are not in `../shared/data`), no "
            "other LLM benchmark has "
            "two rounds, so the carry-forward says it has no pairs and applies nothing "
            "(never a silent "
            "factor). With that one factor known (taken from the test round, so not an "
            "answer: a diagnostic) "
            "the split reads MAPE 8.4% and median APE 5.1%, interpolated 4.1% / 2.5%: "
            "the LLM runtimes' drift "
            "is the gap to the median goal. The same holds for p99 TTFT: the 55 "
            "interpolated ones of v5.1 came "
            "out a median 1.26x their v4.1 evidence (the runtimes ran closer to the "
            "scenario's limit), and with "
            "each basis' drift known TTFT MAPE would be 19.4% (median 9.1%) instead of "
            "25.3%. Trained up to v5.1 the knowledge base holds those pairs (NVIDIA "
            "TensorRT LLM throughput: 1.055x per round from 3 stack changes, 14 pairs; "
            "AMD vLLM from 4 pairs), "
            "so on the next round the carry-forward applies them. A factor is the median "
            "over stack changes, "
            "each change counted once however many benchmarks showed it: over pairs, "
            "H100's one TensorRT 9.3 "
            "-> 10.8 step (8 pairs at 1.49x) made it 1.219x per round, where these "
            "rounds' LLM results moved "
            "1.06x per round; on the held-out upgrade pairs of `bench/stack_effect.py` "
            "the two agree within "
            "0.2 points (v4.1 -> v5.1 median APE 1.2% vs 1.3%, v3.0 -> v4.1 4.7% vs 4.5%)."
        ),
        "",
        (
            "**How the intervals are made.** Split-conformal per basis, on log residuals of "
            "the same estimator replayed on the training data's own history: observed and "
            "interpolated figures as every round predicted from the rounds before it, pooled per "
            "division and the way the metric runs (throughputs together: tokens per second has "
            "no history of its own). A transfer answers a part never measured on the benchmark, "
            "so a same-vendor transfer's bounds are the p10/p90 of parts' first results on the "
            "cell's benchmarks (every round after a benchmark's first), each predicted from its "
            "peers of the two rounds before (the round's drift and a new part's own software "
            "included), as MLPerf Training's transfers already were, read apart by what those "
            "transfers drew on (a part's catalogue siblings, the parts of its own design, which "
            "a transfer draws on alone where any ran the benchmark, or other parts: on the "
            "closed samples per second of the shared rounds, p10/p90 -13%/+22% from siblings "
            "against -30%/+40% from other parts); a same-vendor transfer "
            "answers at the scaling itself, so its bounds are that spread around both the "
            "answer and the replays' centre (measured on 2026-12-01, transferred coverage: "
            "within the newest round, one accelerator out, 0.64 -> 0.74, overall 0.73 -> 0.80; "
            "one accelerator out 0.76 -> 0.81, overall 0.77 -> 0.82; by round v4.1 -> v5.1 "
            "unchanged at 0.87; v3.0 -> v4.1 0.81 -> 0.89, now over the 0.75-0.85 goal: wider "
            "than it needs there. Around the centre alone the low end had sat at or above the "
            "answer wherever the centre was above the scaling); other kinds of transfer "
            "(other vendors' parts, bandwidth alone) are replayed within rounds, locally "
            "weighted (Lei et al., 2018: each residual divided by its benchmark's own spread), "
            "never narrower than those first results. A benchmark the catalogue says was "
            "redefined under its name (`redefined` in benchmarks.yaml: 3d-unet ran BraTS 2019 "
            "until v1.1, KiTS 2019 from v2.0) keeps its older results apart, as a slice of their "
            "own: never evidence, pairs or peers for the new workload. A transfer reads its "
            "references from results of the query's system class (one node for up to eight "
            "accelerators, several beyond) where a part of its vendor ran in that class, else "
            "from every result, saying so (the replays that calibrate transfers read every "
            "system size). Transfer pools are per "
            "family, division and metric; the calibration is a function of the data, persisted "
            "with it (`stack_advisor.advisor.estimate.calibration_file`)."
        ),
        "",
        *sklearn_section(advisor.transfer_method, {"by-round": by_round, "loao": loao}, challenger),
        "",
        *split_section("By round", by_round),
        *split_section("By round, the round before", runs["by-round-previous"]),
        f"## {loao.description[0].upper()}{loao.description[1:]}",
        "",
        f"{loao.holdout_count} held out in all; each fold trains on up to "
        f"{loao.train_count} results.",
        "",
        *table(loao),
        "",
    ]
    if "training" in runs:
        lines += [*split_section("MLPerf Training by round", runs["training"]), TRAINING_TEXT, ""]
        if tc is not None:
            r, a, rl, lk, al = (
                tc[k] for k in ("ridge", "advisor", "ridge_l", "lookup", "advisor_l")
            )
            wins = r[0] is not None and a[0] is not None and r[0] < a[0]
            lines += [
                (
                    "**scikit-learn for Training** (`training_challenger` in this "
                    "script): `Ridge` on log time "
                    "to train over the benchmark (one-hot), log count and its square and "
                    "log 16-bit peaks, fitted "
                    f"on the same training rounds: MAPE {_fmt(r[0])}% against the "
                    f"advisor's {_fmt(a[0])}% on the "
                    f"same {r[1]} results; on the {rl[1]} the lookup covers, "
                    f"{_fmt(rl[0])}% against the lookup's "
                    f"{_fmt(lk[0])}% and the advisor's {_fmt(al[0])}%. "
                    + (
                        "It wins: consider it for answers."
                        if wins
                        else "It does not win, so answers keep the count scaling."
                    )
                ),
                "",
            ]
    if "latency" in runs:
        lines += [
            *split_section("LLM latency (TTFT/TPOT) by round", runs["latency"]),
            LATENCY_TEXT,
            "",
        ]
    if "forecast" in runs:
        lines += [*forecast_section(runs["forecast"]), DRIFT_TEXT, ""]
    if "within-round" in runs:
        lines += [
            *split_section("Within the newest round", runs["within-round"]),
            WITHIN_TEXT,
            "",
        ]
    lines += level_lines
    lines += stack_lines
    text = "\n".join(lines) + kept_sections(Path(args.out))
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
