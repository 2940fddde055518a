"""p99 TTFT of an accelerator never measured on a benchmark: the specs transfer against the share
of the published limit (stack_advisor/advisor/estimate/latency_limit.py), on the rounds up to
``--until``.

Each (accelerator, model and scenario) cell of the latest latency round is left out in turn (its
rows on the model's accuracy variants removed, nothing else), and its results predicted from
the rest both ways through the evidence index. Prints MAPE, median APE, the share within 3x,
and 80% coverage per method on the cells both answer, and each cell's figures. Then each
accelerator left out whole (as if never measured: its vendor's term), with and without the move
for its peak compute: MAPE, median APE and the rank correlation within each model.

    python bench/ttft_limit_share.py --store embedded:PATH [--until v4.1]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr  # type: ignore[import-untyped]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.latency_limit import (
    LimitShares,
    limit_share_estimate,
    model_of,
    shares,
)
from stack_advisor.advisor.estimate.query import Estimate, Query
from stack_advisor.advisor.estimate.transferred import transferred_estimate
from stack_advisor.advisor.knowledge.table import ObservationTable, round_number
from stack_advisor.advisor.verbs.evaluate import subset
from stack_advisor.store.registry import open_store

METRIC = "ttft_p99_ms"


def cells(table: ObservationTable, index: EvidenceIndex) -> dict[tuple[str, str], list[int]]:
    """(model and scenario, canonical accelerator) → closed-division TTFT rows of the latest
    latency round."""
    t = table
    sel = np.flatnonzero(
        (t.metric.codes == t.metric.code(METRIC))
        & (t.division.codes == t.division.code("closed"))
        & (t.value > 0)
    )
    latest = index.round_no[sel].max()
    out: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in sel[index.round_no[sel] == latest].tolist():
        fam, bench = (
            t.family.vocab[int(t.family.codes[r])],
            t.bench_name.vocab[int(t.bench_name.codes[r])],
        )
        out[
            (
                f"{model_of(fam, bench)} {t.scenario.vocab[int(t.scenario.codes[r])]}",
                str(index.accel[r]),
            )
        ].append(r)
    return out


def query(t: ObservationTable, r: int, acc: str) -> Query:
    return Query(
        family=t.family.vocab[int(t.family.codes[r])],
        benchmark=t.bench_name.vocab[int(t.bench_name.codes[r])],
        scenario=t.scenario.vocab[int(t.scenario.codes[r])],
        metric=METRIC,
        division="closed",
        accelerator=acc,
        count=int(t.count[r]),
        placement=t.placement.vocab[int(t.placement.codes[r])],
        raw_accelerator=t.accelerator.vocab[int(t.accelerator.codes[r])],
    )


def score(name: str, got: list[tuple[float, Estimate]]) -> None:
    actual = np.array([a for a, _ in got])
    pred = np.array([e.value for _, e in got], dtype=float)
    ape = np.abs(pred - actual) / actual * 100
    ratio = np.maximum(pred / actual, actual / pred)
    inside = np.mean([(e.low or 0) <= a <= (e.high or math.inf) for a, e in got])
    print(
        f"  {name:<12} n={len(got):3d}  MAPE {ape.mean():5.1f}%  median APE "
        f"{np.median(ape):5.1f}%  "
        f"off 3x+ {int((ratio >= 3).sum())}  80% coverage {inside:.2f}"
    )


def vendor_terms(found: LimitShares) -> None:
    """Each accelerator's cells predicted with the accelerator left out whole, from its vendor's
    term with (``compute``) and without (``median``) the move for its peak compute: APE per
    result, and Spearman's rank correlation (ties at their mean rank) of the prediction against
    each accelerator's median share within a model."""
    print("each accelerator left out whole (its vendor's term), shares of the limit:")
    for name, speed in (("median", {}), ("compute", found.speed)):
        ape: list[float] = []
        cells: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for (model, acc), values in found.rows.items():
            rest = LimitShares(
                {c: v for c, v in found.rows.items() if c[1] != acc}, found.vendor, dict(speed)
            )
            hit = rest.predict((model, acc), vendor=found.vendor.get(acc), speed=speed.get(acc))
            if hit is not None:
                ape.extend(abs(math.exp(hit[0] - v) - 1) * 100 for v in values)
                cells[model].append((hit[0], float(np.median(values))))
        rhos = [
            f"{model} {spearmanr(*zip(*pairs)).statistic:+.2f} ({len(pairs)} accelerators)"
            for model, pairs in sorted(cells.items())
            if len(pairs) > 2
        ]
        print(
            f"  {name:<8} n={len(ape):3d}  MAPE {np.mean(ape):5.1f}%  median APE "
            f"{np.median(ape):5.1f}%  "
            f"rank correlation: {', '.join(rhos) or '-'}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument(
        "--until", default="v4.1", help="last round used (default v4.1: the training rounds)"
    )
    args = parser.parse_args()
    with open_store(args.store) as store:
        full = Advisor(store).table()
    keep = np.array(
        [
            round_number(full.round.vocab[int(c)]) <= round_number(args.until)
            for c in full.round.codes
        ]
    )
    table = subset(full, np.flatnonzero(keep))
    base = EvidenceIndex(table)
    both: dict[str, list[tuple[float, Estimate]]] = {"specs": [], "limit share": []}
    for (model, acc), rows in sorted(cells(table, base).items()):
        t = table
        ttft = (t.metric.codes == t.metric.code(METRIC)) & (base.accel == acc)
        gone = ttft & np.isin(
            [
                f"{model_of(t.family.vocab[int(f)], t.bench_name.vocab[int(b)])} "
                f"{t.scenario.vocab[int(s)]}"
                for f, b, s in zip(t.family.codes, t.bench_name.codes, t.scenario.codes)
            ],
            [model],
        )
        index = EvidenceIndex(subset(t, np.flatnonzero(~gone)))
        line = []
        for r in rows:
            q = query(t, r, acc)
            if (
                q.slice not in index.slices
            ):  # the only accelerator of the slice: nothing to transfer from
                continue
            specs = transferred_estimate(index, q, index.slices.get(q.slice, {}), False)
            share = limit_share_estimate(index, q)
            if specs.value is not None and share is not None and share.value is not None:
                both["specs"].append((float(t.value[r]), specs))
                both["limit share"].append((float(t.value[r]), share))
                line.append(f"{t.value[r]:.0f}: {specs.value:.0f} / {share.value:.0f}")
        print(
            f"{model:<32} {acc:<24} actual: specs / limit share  "
            f"{'; '.join(line) or 'not both answered'}"
        )
    print(
        f"p99 TTFT, rounds <= {args.until}, each cell of the latest round left out (rows "
        "both methods answer):"
    )
    for name, got in both.items():
        if got:
            score(name, got)
    found, _ = shares(base, "mlperf-inference", METRIC, "closed")
    vendor_terms(found)


if __name__ == "__main__":
    main()
