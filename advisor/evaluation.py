"""How good are the advisor's numbers? Hold published results out, answer them through the same
``Advisor.predict`` a user calls (queries written as users write them: the published accelerator
name, the framework as free text), and score per slice against the truth — next to the simple
lookup (the median per-accelerator value of the same canonical accelerator, benchmark and
scenario in its latest training round, times the count) on the rows it covers.

Protocols:
- ``by-round``: train on every round up to ``train_until`` (default: the one before the test
  round), test on the closed-division throughput results of ``test_round`` (default: the latest)
  whose benchmark was seen in training; results of benchmarks never seen are asked too, and must
  all be refused.
- ``loao``: leave one accelerator out — each accelerator of the latest round in turn is removed
  from the knowledge base and its closed-division throughput results of that round predicted
  from everything else.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import numpy as np

from advisor.estimate import EvidenceIndex, canonical_accelerator
from advisor.results import Basis, EvaluationReport, EvaluationSlice, Prediction
from advisor.table import Column, ObservationTable, _round_key
from advisor.transfer import METHODS
from graph_schema.errors import InvalidInput

PROTOCOLS = ("by-round", "loao")


def subset(table: ObservationTable, rows: np.ndarray, generation: int = 0) -> ObservationTable:
    """A table of ``rows`` only (vocabularies rebuilt, so e.g. the latest round is the subset's)."""
    def col(c: Column) -> Column:
        return Column.build(c.values(rows))

    return ObservationTable(
        generation=generation, n=len(rows), value=table.value[rows], count=table.count[rows],
        timestamp=table.timestamp[rows], higher_is_better=table.higher_is_better[rows],
        metric=col(table.metric), unit=col(table.unit), benchmark=col(table.benchmark), family=col(table.family),
        bench_name=col(table.bench_name), scenario=col(table.scenario), division=col(table.division),
        round=col(table.round), source=col(table.source), submitter=col(table.submitter),
        accelerator=col(table.accelerator), physical=col(table.physical), placement=col(table.placement),
        stack=col(table.stack), candidate=col(table.candidate), system=col(table.system), keys=[table.keys[i] for i in rows.tolist()],
        benchmarks=table.benchmarks, stacks=table.stacks, images=table.images)


def user_query(table: ObservationTable, r: int) -> dict[str, Any]:
    """The query a user would write for row ``r``: the published accelerator name and the
    framework field as published (free text)."""
    stack = table.stacks[table.stack.vocab[int(table.stack.codes[r])]]
    framework = None
    raw = stack.raw or ""
    for part in raw.split(" | "):
        if part.startswith("framework:"):
            framework = part.removeprefix("framework:").strip() or None
    if framework is None and stack.framework:
        framework = f"{stack.framework} {stack.framework_version or ''}".strip()
    return {
        "accelerator": table.accelerator.vocab[int(table.accelerator.codes[r])],
        "accelerator_count": int(table.count[r]),
        "placement": table.placement.vocab[int(table.placement.codes[r])],
        "framework": framework,
        "family": table.family.vocab[int(table.family.codes[r])],
        "benchmark": table.bench_name.vocab[int(table.bench_name.codes[r])],
        "scenario": table.scenario.vocab[int(table.scenario.codes[r])],
        "parameters": {"division": table.division.vocab[int(table.division.codes[r])]},
        "metric": table.metric.vocab[int(table.metric.codes[r])],
    }


def simple_lookup(train: ObservationTable, table: ObservationTable, rows: np.ndarray) -> np.ndarray:
    """The baseline: median per-accelerator value of the same canonical accelerator, benchmark,
    scenario, metric and division in its latest training round, times the count (NaN where the
    training data has none)."""
    index = EvidenceIndex(train)
    out = np.full(len(rows), np.nan)
    for i, r in enumerate(rows.tolist()):
        key = (table.family.vocab[int(table.family.codes[r])], table.bench_name.vocab[int(table.bench_name.codes[r])],
               table.scenario.vocab[int(table.scenario.codes[r])], table.metric.vocab[int(table.metric.codes[r])],
               table.division.vocab[int(table.division.codes[r])])
        acc_rows = index.slices.get(key, {}).get(canonical_accelerator(table.accelerator.vocab[int(table.accelerator.codes[r])]))
        if acc_rows is None:
            continue
        value = float(np.median(index.unit[index.latest(acc_rows)]))
        out[i] = value * (table.count[r] if table.higher_is_better[r] else 1)
    return out


def _regret(groups: np.ndarray, actual: np.ndarray, pred: np.ndarray, count: np.ndarray) -> tuple[float | None, int]:
    """Mean share of the best per-accelerator result lost by picking the predicted best, over
    groups (benchmark, scenario, metric) with at least two results."""
    regrets = []
    for g in np.unique(groups):
        sel = np.flatnonzero(groups == g)
        if len(sel) < 2:
            continue
        per_actual = actual[sel] / count[sel]
        per_pred = pred[sel] / count[sel]
        regrets.append(1 - per_actual[np.argmax(per_pred)] / per_actual.max())
    return (float(np.mean(regrets) * 100) if regrets else None), len(regrets)


def _slice(sel: np.ndarray, actual: np.ndarray, pred: np.ndarray, lo: np.ndarray, hi: np.ndarray,
           lookup: np.ndarray, groups: np.ndarray, count: np.ndarray) -> EvaluationSlice:
    answered = sel & ~np.isnan(pred)
    refused = int((sel & np.isnan(pred)).sum())
    out: dict[str, Any] = {"predictions": int(answered.sum()), "refused": refused, "mape": None}
    if answered.any():
        ape = np.abs(pred[answered] - actual[answered]) / actual[answered] * 100
        regret, n_groups = _regret(groups[answered], actual[answered], pred[answered], count[answered])
        out.update(mape=float(ape.mean()), median_ape=float(np.median(ape)),
                   interval_coverage=float(np.mean((actual[answered] >= lo[answered]) & (actual[answered] <= hi[answered]))),
                   top1_regret=regret, groups=n_groups)
    covered = answered & ~np.isnan(lookup)
    out["lookup_rows"] = int((sel & ~np.isnan(lookup)).sum())
    if covered.any():
        ape = np.abs(pred[covered] - actual[covered]) / actual[covered] * 100
        lape = np.abs(lookup[covered] - actual[covered]) / actual[covered] * 100
        regret, _ = _regret(groups[covered], actual[covered], pred[covered], count[covered])
        lregret, _ = _regret(groups[covered], actual[covered], lookup[covered], count[covered])
        out.update(mape_on_lookup_rows=float(ape.mean()), median_ape_on_lookup_rows=float(np.median(ape)),
                   top1_regret_on_lookup_rows=regret, lookup_mape=float(lape.mean()),
                   lookup_median_ape=float(np.median(lape)), lookup_top1_regret=lregret)
    return EvaluationSlice(**out)


class _Scored:
    """Truth, prediction and slice labels of every held-out row, accumulated across folds."""

    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = defaultdict(list)

    def add(self, table: ObservationTable, rows: np.ndarray, predictions: list[Prediction],
            lookup: np.ndarray, seen: set[str]) -> None:
        for r, p, lk in zip(rows.tolist(), predictions, lookup.tolist()):
            acc = canonical_accelerator(table.accelerator.vocab[int(table.accelerator.codes[r])])
            self.cols["actual"].append(float(table.value[r]))
            self.cols["pred"].append(np.nan if p.value is None else p.value)
            self.cols["lo"].append(np.nan if p.interval is None else p.interval.low)
            self.cols["hi"].append(np.nan if p.interval is None else p.interval.high)
            self.cols["lookup"].append(lk)
            self.cols["count"].append(float(table.count[r]))
            self.cols["basis"].append(p.basis.value)
            self.cols["reason"].append((p.reason or "").split(":")[0])
            self.cols["seen"].append("seen accelerator" if acc in seen else "unseen accelerator")
            self.cols["benchmark"].append(f"{p.query.benchmark} {p.query.scenario}")
            self.cols["metric"].append(p.query.metric)
            self.cols["group"].append(f"{p.query.benchmark}|{p.query.scenario}|{p.query.metric}")

    def report(self) -> dict[str, Any]:
        arrays = {k: np.asarray(v, dtype=np.float64 if k in ("actual", "pred", "lo", "hi", "lookup", "count") else object)
                  for k, v in self.cols.items()}
        if not arrays:
            raise InvalidInput("evaluation: no held-out results to score")
        args = (arrays["actual"], arrays["pred"], arrays["lo"], arrays["hi"], arrays["lookup"],
                arrays["group"], arrays["count"])
        every = np.ones(len(arrays["actual"]), dtype=bool)

        def by(name: str) -> dict[str, EvaluationSlice]:
            return {str(v): _slice(arrays[name] == v, *args) for v in sorted(set(arrays[name].tolist()))}

        reasons: dict[str, int] = defaultdict(int)
        for b, reason in zip(arrays["basis"], arrays["reason"]):
            if b == Basis.UNSUPPORTED.value:
                reasons[str(reason)] += 1
        return {"overall": _slice(every, *args), "by_basis": by("basis"), "by_seen": by("seen"),
                "by_benchmark": by("benchmark"), "by_metric": by("metric"), "refused_reasons": dict(reasons),
                "holdout_count": len(arrays["actual"])}


def _closed_throughput(table: ObservationTable, rows: np.ndarray) -> np.ndarray:
    closed = table.division.codes[rows] == table.division.code("closed")
    return rows[closed & table.higher_is_better[rows] & (table.value[rows] > 0)]


def _advisor_over(table: ObservationTable, rules: Any, prices: Any, transfer_method: str) -> Any:
    from advisor.engine import Advisor

    class _Pinned(Advisor):
        """An advisor whose knowledge base is this table (the training split)."""

        persist_calibration = False

        def __init__(self) -> None:
            super().__init__(None, rules=rules, prices=prices, memo_answers=False)  # type: ignore[arg-type]
            self.transfer_method = transfer_method

        def store_generation(self) -> int:
            return table.generation

        def table(self, generation: int | None = None) -> ObservationTable:
            return table

        def _known_failures(self, table: ObservationTable | None = None) -> set[Any]:
            return set()

    return _Pinned()


def evaluate(table: ObservationTable, protocol: str = "by-round", *, train_until: str | None = None,
             test_round: str | None = None, rules: Any = None, prices: Any = None,
             transfer_method: str = "roofline") -> EvaluationReport:
    """Score ``predict`` on held-out published results (see the module docstring), transferring
    by ``transfer_method`` (``advisor.transfer.METHODS``).

    Raises:
        InvalidInput: an unknown protocol or round, or a split with nothing to train or test on.
    """
    start = time.perf_counter()
    if protocol not in PROTOCOLS:
        raise InvalidInput(f"protocol: {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    if transfer_method not in METHODS:
        raise InvalidInput(f"transfer method: {transfer_method!r} is not one of {', '.join(METHODS)}")
    rounds = sorted({r for r in table.round.vocab if r}, key=_round_key)
    if not rounds:
        raise InvalidInput("evaluation needs published results with rounds (import MLPerf results first)")
    # default: the latest round with closed-division throughput results to score (a newer
    # training round holds times to train, which the protocols do not score)
    scorable = {table.round.vocab[int(c)] for c in table.round.codes[_closed_throughput(table, np.arange(table.n))]}
    test_round = test_round or max((r for r in rounds if r in scorable), key=_round_key, default=rounds[-1])
    if test_round not in rounds:
        raise InvalidInput(f"test round: {test_round!r} is not in the knowledge base; rounds: {', '.join(rounds)}")
    scored = _Scored()
    notes: list[str] = []
    all_rows = np.arange(table.n)
    round_of = [_round_key(r) if r else (0,) for r in table.round.vocab]
    keys = [round_of[int(c)] for c in table.round.codes]
    if protocol == "by-round":
        earlier = [r for r in rounds if _round_key(r) < _round_key(test_round)]
        train_until = train_until or (earlier[-1] if earlier else None)
        if train_until is None or train_until not in rounds:
            raise InvalidInput(f"train_until: {train_until!r} must be a round before {test_round}; rounds: {', '.join(rounds)}")
        limit = _round_key(train_until)
        train_rows = all_rows[np.array([k <= limit for k in keys], dtype=bool)]
        test_rows = _closed_throughput(table, all_rows[table.round.codes == table.round.code(test_round)])
        train = subset(table, train_rows)
        # (family, name): Training's rgat is not Inference's rgat
        every = np.arange(train.n)
        known = set(zip(train.family.values(every), train.bench_name.values(every)))
        test_names = zip(table.family.values(test_rows), table.bench_name.values(test_rows))
        seen_bench = np.array([n in known for n in test_names], dtype=bool)
        unseen_rows = test_rows[~seen_bench]
        test_rows = test_rows[seen_bench]
        advisor = _advisor_over(train, rules, prices, transfer_method)
        predictions = advisor.predict([user_query(table, r) for r in test_rows.tolist()])
        seen = {canonical_accelerator(a) for a in train.accelerator.vocab}
        scored.add(table, test_rows, predictions, simple_lookup(train, table, test_rows), seen)
        unseen_preds = advisor.predict([user_query(table, r) for r in unseen_rows.tolist()])
        unseen_refused = sum(p.basis is Basis.UNSUPPORTED for p in unseen_preds)
        description = f"train rounds <= {train_until}, test {test_round} closed-division throughput"
        train_count = len(train_rows)
    else:
        in_round = all_rows[table.round.codes == table.round.code(test_round)]
        candidates = _closed_throughput(table, in_round)
        accs = np.array([canonical_accelerator(a) for a in table.accelerator.vocab], dtype=object)[table.accelerator.codes]
        upto = all_rows[np.array([k <= _round_key(test_round) for k in keys], dtype=bool)]
        train_count = 0
        for acc in sorted(set(accs[candidates].tolist())):
            held = candidates[accs[candidates] == acc]
            train_rows = upto[accs[upto] != acc]
            train = subset(table, train_rows)
            advisor = _advisor_over(train, rules, prices, transfer_method)
            predictions = advisor.predict([user_query(table, r) for r in held.tolist()])
            scored.add(table, held, predictions, simple_lookup(train, table, held), set())
            train_count = max(train_count, len(train_rows))
        unseen_preds, unseen_refused = [], 0
        description = f"leave one accelerator out: each accelerator of {test_round} held out, closed-division throughput"
    parts = scored.report()
    if protocol == "by-round":
        notes.append(f"{len(unseen_preds)} results of benchmarks never seen in training asked: "
                     f"{unseen_refused} refused")
    return EvaluationReport(
        protocol=protocol, description=description, train_count=train_count,
        holdout_count=parts["holdout_count"], overall=parts["overall"], by_basis=parts["by_basis"],
        by_seen=parts["by_seen"], by_benchmark=parts["by_benchmark"], by_metric=parts["by_metric"],
        refused_reasons=parts["refused_reasons"], unseen_benchmark_queries=len(unseen_preds),
        unseen_benchmark_refused=unseen_refused, notes=notes, elapsed_s=time.perf_counter() - start)
