#!/usr/bin/env python
"""Print issue 28's stack-effect checks, on pairs held out (items 1 and 2).

The stack effects (``stack_advisor.advisor.estimate.stack_effect``) are learned from the pairs of
rounds up to ``--train-until`` and checked on the pairs whose newer side is ``--test-round``:

1. Upgrades: each held-out pair (the same accelerator and benchmark slice, an older version of
   the framework in a training round, a newer one in the test round) carried forward by the
   factor learned up to the training round, against carrying it forward as it is (factor 1, the
   previous-round lookup): MAPE, median APE and how often the pairs' p10..p90 held the change;
   per family, vendor and metric direction. Beside it, scikit-learn's Ridge on one-hot pair
   features (vendor, framework, benchmark, metric, scenario) fitted on the same training pairs:
   kept only where it wins on the same rows.
2. Software class: same-round pairs of a reference implementation and an optimised runtime in
   the test round, predicted by the crossing factor learned up to the training round (or
   refused), against borrowing across classes as if they were the same (factor 1).
3. The issue's example kind: the held-out throughput pairs where the same accelerator got at
   least 1.5x faster through its stack between rounds: what the factor predicted, and the share
   of the (log) change it explains.

4. The issue's B200 deepseek-r1 case (next round, outside our data): the factor learned from
   everything imported, applied to the issue's own prediction, against the issue's measured figures.
5. (``--evaluate``) ``advisor evaluate --protocol by-round`` with and without the stack rules.

    python bench/stack_effect.py [--store embedded:PATH] [--train-until v4.1] [--test-round v5.1]
    [--evaluate]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.stack_effect import StackEffects, StackFactor, StackPair
from stack_advisor.advisor.knowledge.table import round_number
from stack_advisor.store.registry import open_store

ROOT = Path(__file__).resolve().parents[1]


def ape(pred_log: np.ndarray, actual_log: np.ndarray) -> np.ndarray:
    """|predicted - actual| / actual of a figure carried by exp(pred_log) where it moved by
    exp(actual_log)."""
    return np.abs(np.exp(pred_log - actual_log) - 1) * 100


def summary(name: str, pairs: list[StackPair], factors: list[StackFactor | None]) -> None:
    actual = np.asarray([p.log_ratio for p in pairs])
    has = np.asarray([f is not None for f in factors])
    pred = np.asarray([math.log(f.ratio) if f else 0.0 for f in factors])
    held = np.asarray(
        [bool(f and f.spread_low <= math.exp(a) <= f.spread_high) for f, a in zip(factors, actual)]
    )
    print(f"  {name:<42} pairs {len(pairs):>5}  with a factor {int(has.sum()):>5}", end="")
    if has.any():
        f_ape, n_ape = ape(pred[has], actual[has]), ape(np.zeros(int(has.sum())), actual[has])
        print(
            f"  MAPE factor {f_ape.mean():6.1f}% vs none {n_ape.mean():6.1f}%  median "
            f"{np.median(f_ape):5.1f}% vs "
            f"{np.median(n_ape):5.1f}%  p10..p90 held {held[has].mean():.2f}"
        )
    else:
        print()


def upgrades(train: StackEffects, held: list[StackPair]) -> None:
    print(
        f"1. upgrades carried forward: {len(held)} held-out pairs (learned on "
        f"{len(train.upgrade_pairs)} pairs)"
    )
    factors = [
        train.upgrade(
            p.family,
            p.vendor,
            p.framework,
            p.benchmark,
            p.metric,
            p.direction.startswith("throughput"),
        )
        for p in held
    ]
    summary("all", held, factors)
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for i, p in enumerate(held):
        groups[(p.family, p.vendor, p.direction)].append(i)
    for key, idx in sorted(groups.items()):
        summary(" ".join(key), [held[i] for i in idx], [factors[i] for i in idx])
    learned(train.upgrade_pairs, held, factors)


def features(pairs: list[StackPair]) -> list[dict[str, str]]:
    return [
        {
            "vendor": p.vendor,
            "framework": p.framework,
            "benchmark": p.benchmark,
            "metric": p.metric,
            "scenario": p.scenario,
            "direction": p.direction,
            "family": p.family,
        }
        for p in pairs
    ]


def learned(
    train_pairs: list[StackPair], held: list[StackPair], factors: list[StackFactor | None]
) -> None:
    """scikit-learn's Ridge on one-hot pair features against the pooled median, on the same rows."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import Ridge

    vec = DictVectorizer()
    x = vec.fit_transform(features(train_pairs))
    model = Ridge(alpha=1.0).fit(x, [p.log_ratio for p in train_pairs])
    pred = model.predict(vec.transform(features(held)))
    actual = np.asarray([p.log_ratio for p in held])
    has = np.asarray([f is not None for f in factors])
    median_pred = np.asarray([math.log(f.ratio) if f else 0.0 for f in factors])
    if has.any():
        directions = np.asarray([p.direction for p in held])
        for name, sel in (
            ("all", has),
            ("throughput", has & np.char.startswith(directions.astype(str), "throughput")),
            ("latency", has & np.char.startswith(directions.astype(str), "latency")),
        ):
            if not sel.any():
                continue
            r, m = ape(pred[sel], actual[sel]), ape(median_pred[sel], actual[sel])
            verdict = (
                "the learned model wins"
                if r.mean() < m.mean() and np.median(r) < np.median(m)
                else "the pooled median is kept (the learned model does not win on both MAPE "
                "and median)"
            )
            print(
                "  scikit-learn Ridge (one-hot "
                f"vendor/framework/benchmark/metric/scenario), {name}, same "
                f"{int(sel.sum())} rows: MAPE {r.mean():.1f}% (median "
                f"{np.median(r):.1f}%) vs pooled median "
                f"{m.mean():.1f}% (median {np.median(m):.1f}%): {verdict}"
            )


def crossings(train: StackEffects, held: list[StackPair]) -> None:
    print(
        f"2. software class: {len(held)} held-out same-round pairs of both classes "
        f"(learned on {len(train.class_pairs)} pairs)"
    )
    factors = [train.crossing(p.family, p.vendor, p.old, p.new, p.direction) for p in held]
    summary("reference vs optimised", held, factors)
    for p, f in zip(held, factors):
        got = (
            f"{f.ratio:.3f}x ({f.scope}, p10..p90 {f.spread_low:.3f}..{f.spread_high:.3f})"
            if f
            else "refused: no pairs to learn from"
        )
        print(
            f"    {p.accelerator:<18} {p.benchmark:<14} {p.scenario:<12} {p.metric:<20} "
            f"{p.framework:<24} "
            f"measured {math.exp(p.log_ratio):.3f}x  factor {got}"
        )


def example_kind(train: StackEffects, held: list[StackPair]) -> None:
    big = [p for p in held if p.direction.startswith("throughput") and p.log_ratio >= math.log(1.5)]
    print(
        f"3. the issue's example kind: {len(big)} held-out throughput pairs at least "
        "1.5x faster through the stack"
    )
    for p in sorted(big, key=lambda p: -p.log_ratio):
        f = train.upgrade(
            p.family,
            p.vendor,
            p.framework,
            p.benchmark,
            p.metric,
            p.direction.startswith("throughput"),
        )
        share = f"{math.log(f.ratio) / p.log_ratio:5.0%} of the change" if f else "no factor"
        print(
            f"    {p.accelerator:<18} {p.benchmark:<16} {p.scenario:<8} {p.framework} "
            f"{p.old}->{p.new}: "
            f"measured {math.exp(p.log_ratio):.2f}x, factor "
            f"{f.ratio if f else float('nan'):.2f}x ({share})"
        )


# issue 28's own figures (advisor predict on main 7c8cd85, everything up to v5.1 imported, the next
# round asked): B200 deepseek-r1, predicted vs measured tokens/s
ISSUE_B200 = {"Server": (15.0e3, (55.9e3, 56.1e3)), "Offline": (30.8e3, (56.9e3, 58.9e3))}


def next_round(everything: StackEffects) -> None:
    """With everything imported: the factor a carry to the next round's TensorRT would use for
    an NVIDIA LLM throughput result, and how much of the issue's B200 deepseek-r1 jump it covers."""
    factor = everything.upgrade(
        "mlperf-inference", "nvidia", "tensorrt", "deepseek-r1", "tokens_per_second", True
    )
    print(
        "4. with everything imported: one TensorRT version step for an NVIDIA LLM throughput result"
    )
    if factor is None:
        print("    no pairs: nothing would be carried forward")
        return
    print(f"    {factor.describe()}")
    for scenario, (predicted, (low, high)) in ISSUE_B200.items():
        carried = predicted * factor.ratio
        share = math.log(factor.ratio) / math.log(math.sqrt(low * high) / predicted)
        print(
            f"    B200 deepseek-r1 {scenario:<8} issue's prediction "
            f"{predicted / 1e3:.1f}k tokens/s, carried "
            f"{carried / 1e3:.1f}k (pairs p10..p90 {predicted * factor.spread_low / 1e3:.1f}k.."
            f"{predicted * factor.spread_high / 1e3:.1f}k), measured "
            f"{low / 1e3:.1f}k..{high / 1e3:.1f}k: "
            f"{share:.0%} of the (log) change"
        )


def by_round(store: str, train_until: str, test_round: str) -> None:
    """``advisor evaluate --protocol by-round`` (queries as users write them, framework included)
    with the stack rules, and with ``stack_adjust.adjust`` turned off (this script only)."""
    from stack_advisor.advisor.estimate import stack_adjust

    print(
        f"5. by round {train_until} -> {test_round} through advisor evaluate "
        "(closed-division throughput)"
    )
    keep = stack_adjust.adjust
    for label, adjust in (("with the stack rules", keep), ("without", lambda index, q, est: est)):
        stack_adjust.adjust = adjust  # type: ignore[assignment]
        try:
            report = Advisor(open_store(store)).evaluate(
                "by-round", train_until=train_until, test_round=test_round
            )
        finally:
            stack_adjust.adjust = keep  # type: ignore[assignment]
        parts = {
            "overall": report.overall,
            **{
                b: report.by_basis[b]
                for b in ("interpolated", "transferred")
                if b in report.by_basis
            },
        }
        for name, part in parts.items():
            print(
                f"  {label:<22} {name:<13} answered {part.predictions:>4} refused "
                f"{part.refused:>4}  "
                f"MAPE {part.mape or float('nan'):5.1f}%  median "
                f"{part.median_ape or float('nan'):5.1f}%  "
                f"80% coverage {part.interval_coverage or float('nan'):.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", default="embedded:/tmp/stack-kb")
    parser.add_argument("--train-until", default="v4.1")
    parser.add_argument("--test-round", default="v5.1")
    parser.add_argument(
        "--evaluate",
        action="store_true",
        help="also run advisor evaluate by round, with and without the stack rules",
    )
    args = parser.parse_args()
    table = Advisor(open_store(args.store)).table()
    index = EvidenceIndex(table)
    until, test = round_number(args.train_until), round_number(args.test_round)
    train, everything = StackEffects(index, until=until), StackEffects(index)
    print(
        f"stack effects, learned up to {args.train_until}, checked on {args.test_round} "
        f"({table.n} observations)"
    )
    held_up = [p for p in everything.upgrade_pairs if p.round_new == test and p.round_old <= until]
    upgrades(train, held_up)
    crossings(train, [p for p in everything.class_pairs if p.round_new == test])
    example_kind(train, held_up)
    next_round(everything)
    if args.evaluate:
        by_round(args.store, args.train_until, args.test_round)


if __name__ == "__main__":
    main()
