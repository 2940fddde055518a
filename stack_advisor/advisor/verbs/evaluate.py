"""How good are the advisor's numbers? Hold published results out, answer them through the same
``predict`` a user calls (queries written as users write them: the published accelerator
name, the framework as free text), and score per slice against the truth — next to the simple
lookup (the median per-accelerator value of the same canonical accelerator, benchmark and
scenario in its latest training round, times the count) on the rows it covers.

Protocols:
- ``by-round``: train on every round up to ``train_until`` (default: the one before the test
  round), test on the closed-division throughput results of ``test_round`` (default: the latest)
  whose benchmark was seen in training; results of benchmarks never seen are asked too, and must
  all be refused.
- ``training``: by round for MLPerf Training: train on every round up to ``train_until``, test on
  the closed-division times to train of ``test_round`` (default: the latest round with Training
  results) whose benchmark was seen; the lookup is the same accelerator at the same count in its
  latest training round.
- ``latency``: by round for LLM serving latency: the closed-division p99 time to first token
  and time per output token of ``test_round`` (default: the latest round with them).
- ``forecast``: every held round-ahead step (train on rounds <= k, test the next round with
  results), closed-division throughput and times to train, scored per step and benchmark group.
  By-round protocols ask each result as of its test round (``as_of``: a forecast carried by the
  round drift of ``stack_advisor.advisor.estimate.drift``).
- ``within-round``: as ``loao``, but only the accelerator's results of the latest round are held
  out; its older results stay (carried to the round by the drift the other parts show).
- ``loao``: leave one accelerator out — each accelerator of the latest round in turn is removed
  from the knowledge base and its closed-division throughput results of that round predicted
  from everything else.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.facts import canonical_accelerator
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.transfer import METHODS
from stack_advisor.advisor.knowledge.columns import Column
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.results import Basis, EvaluationReport
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.verbs.evaluate_scoring import Scored
from stack_advisor.advisor.verbs.predict import predict
from stack_advisor.catalog.rounds import round_key
from stack_advisor.schema.errors import InvalidInput

PROTOCOLS = ("by-round", "loao", "training", "latency", "forecast", "within-round")
LATENCY = ("ttft_p99_ms", "tpot_p99_ms")  # LLM serving: time to first token, time per output token
TIME_TO_TRAIN = "time_to_train_min"  # the headline MLPerf Training figure a user asks for


def subset(table: ObservationTable, rows: np.ndarray, generation: int = 0) -> ObservationTable:
    """A table of ``rows`` only (vocabularies rebuilt, so e.g. the latest round is the subset's)."""

    def col(c: Column) -> Column:
        return Column.build(c.values(rows))

    return ObservationTable(
        generation=generation,
        n=len(rows),
        value=table.value[rows],
        count=table.count[rows],
        timestamp=table.timestamp[rows],
        higher_is_better=table.higher_is_better[rows],
        metric=col(table.metric),
        unit=col(table.unit),
        benchmark=col(table.benchmark),
        family=col(table.family),
        bench_name=col(table.bench_name),
        scenario=col(table.scenario),
        division=col(table.division),
        round=col(table.round),
        source=col(table.source),
        submitter=col(table.submitter),
        accelerator=col(table.accelerator),
        physical=col(table.physical),
        placement=col(table.placement),
        stack=col(table.stack),
        candidate=col(table.candidate),
        system=col(table.system),
        keys=[table.keys[i] for i in rows.tolist()],
        benchmarks=table.benchmarks,
        stacks=table.stacks,
        images=table.images,
    )


def user_query(table: ObservationTable, r: int) -> dict[str, Any]:
    """The query a user would write for row ``r``: the published accelerator name and the
    framework field as published (free text), and the implementation where the result says it
    ran MLCommons' reference code."""
    stack = table.stacks[table.stack.vocab[int(table.stack.codes[r])]]
    framework = None
    raw = stack.raw or ""
    for part in raw.split(" | "):
        if part.startswith("framework:"):
            framework = part.removeprefix("framework:").strip() or None
    if framework is None and stack.framework:
        framework = f"{stack.framework} {stack.framework_version or ''}".strip()
    # a result of MLCommons' reference code says so (its system folder): as its user would ask
    implementation = (
        {"implementation": stack.extra["implementation"]} if "implementation" in stack.extra else {}
    )
    return {
        "components": implementation,
        "accelerator": table.accelerator.vocab[int(table.accelerator.codes[r])],
        "accelerator_count": int(table.count[r]),
        "placement": table.placement.vocab[int(table.placement.codes[r])],
        "framework": framework,
        "family": table.family.vocab[int(table.family.codes[r])],
        "benchmark": table.bench_name.vocab[int(table.bench_name.codes[r])],
        "scenario": table.scenario.vocab[int(table.scenario.codes[r])] or None,  # Training has none
        "parameters": {"division": table.division.vocab[int(table.division.codes[r])]},
        "metric": table.metric.vocab[int(table.metric.codes[r])],
    }


def simple_lookup(train: ObservationTable, table: ObservationTable, rows: np.ndarray) -> np.ndarray:
    """The baseline: median per-accelerator value of the same canonical accelerator, benchmark,
    scenario, metric and division in its latest training round, times the count (NaN where the
    training data has none)."""

    def value(index: EvidenceIndex, r: int, acc_rows: np.ndarray) -> float:
        unit = float(np.median(index.unit[index.latest(acc_rows)]))
        return unit * float(table.count[r] if table.higher_is_better[r] else 1)

    return _lookup(train, table, rows, value)


def count_lookup(train: ObservationTable, table: ObservationTable, rows: np.ndarray) -> np.ndarray:
    """The Training baseline: the median time of the same canonical accelerator at the same count
    in its latest training round (NaN where the training data has none)."""

    def value(index: EvidenceIndex, r: int, acc_rows: np.ndarray) -> float:
        same = acc_rows[train.count[acc_rows] == table.count[r]]
        return float(np.median(train.value[index.latest(same)])) if len(same) else math.nan

    return _lookup(train, table, rows, value)


def _lookup(
    train: ObservationTable,
    table: ObservationTable,
    rows: np.ndarray,
    value: Callable[[EvidenceIndex, int, np.ndarray], float],
) -> np.ndarray:
    """``value(index, row, the training rows of its slice and canonical accelerator)`` for each of
    ``rows`` of ``table``; NaN where the training data has no such rows."""
    index = EvidenceIndex(train)
    out = np.full(len(rows), np.nan)
    for i, r in enumerate(rows.tolist()):
        key = (
            table.family.vocab[int(table.family.codes[r])],
            table.bench_name.vocab[int(table.bench_name.codes[r])],
            table.scenario.vocab[int(table.scenario.codes[r])],
            table.metric.vocab[int(table.metric.codes[r])],
            table.division.vocab[int(table.division.codes[r])],
        )
        acc_rows = index.slices.get(key, {}).get(
            canonical_accelerator(table.accelerator.vocab[int(table.accelerator.codes[r])])
        )
        if acc_rows is not None:
            out[i] = value(index, r, acc_rows)
    return out


def _closed_throughput(table: ObservationTable, rows: np.ndarray) -> np.ndarray:
    closed = table.division.codes[rows] == table.division.code("closed")
    kept: np.ndarray = rows[closed & table.higher_is_better[rows] & (table.value[rows] > 0)]
    return kept


def _training_times(table: ObservationTable, rows: np.ndarray) -> np.ndarray:
    """The closed-division MLPerf Training times to train among ``rows``."""
    if TIME_TO_TRAIN not in table.metric.vocab or "mlperf-training" not in table.family.vocab:
        return rows[:0]
    keep = (
        (table.division.codes[rows] == table.division.code("closed"))
        & (table.family.codes[rows] == table.family.code("mlperf-training"))
        & (table.metric.codes[rows] == table.metric.code(TIME_TO_TRAIN))
        & (table.value[rows] > 0)
    )
    kept: np.ndarray = rows[keep]
    return kept


def _latency_rows(table: ObservationTable, rows: np.ndarray) -> np.ndarray:
    """The closed-division LLM p99 TTFT/TPOT results among ``rows``."""
    codes = [table.metric.code(m) for m in LATENCY]
    keep = (
        (table.division.codes[rows] == table.division.code("closed"))
        & np.isin(table.metric.codes[rows], codes)
        & (table.value[rows] > 0)
    )
    kept: np.ndarray = rows[keep]
    return kept


# the held-out rows each protocol scores (by-round, loao, forecast, within-round: throughputs)
SELECT = {"by-round": _closed_throughput, "training": _training_times, "latency": _latency_rows}


def scorable_rounds(table: ObservationTable, protocol: str = "by-round") -> list[str]:
    """The rounds holding results the protocol scores (closed-division throughput; times to
    train for ``training``; LLM TTFT/TPOT for ``latency``), oldest first."""
    select = SELECT.get(protocol, _closed_throughput)
    codes = set(table.round.codes[select(table, np.arange(table.n))].tolist())
    return sorted(
        (table.round.vocab[int(c)] for c in codes if table.round.vocab[int(c)]), key=round_key
    )


def _rounds(
    table: ObservationTable, protocol: str, test_round: str | None
) -> tuple[list[str], str]:
    """The table's rounds, oldest first, and the test round: the one asked, or by default the
    latest round with results the protocol scores (a newer training round holds times to train,
    which the throughput protocols do not score)."""
    rounds = sorted({r for r in table.round.vocab if r}, key=round_key)
    if not rounds:
        raise InvalidInput(
            "evaluation needs published results with rounds (import MLPerf results first)"
        )
    select = SELECT.get(protocol, _closed_throughput)
    scorable = {
        table.round.vocab[int(c)] for c in table.round.codes[select(table, np.arange(table.n))]
    }
    test_round = test_round or max(
        (r for r in rounds if r in scorable), key=round_key, default=rounds[-1]
    )
    if test_round not in rounds:
        raise InvalidInput(
            f"test round: {test_round!r} is not in the knowledge base; rounds: {', '.join(rounds)}"
        )
    return rounds, test_round


def evaluate(
    table: ObservationTable,
    protocol: str = "by-round",
    *,
    train_until: str | None = None,
    test_round: str | None = None,
    rules: Any = None,
    prices: Any = None,
    transfer_method: str = "roofline",
) -> EvaluationReport:
    """Score ``predict`` on held-out published results (see the module docstring), transferring
    by ``transfer_method`` (``stack_advisor.advisor.estimate.transfer.METHODS``).

    Raises:
        InvalidInput: an unknown protocol or round, or a split with nothing to train or test on.
    """
    start = time.perf_counter()
    if protocol not in PROTOCOLS:
        raise InvalidInput(f"protocol: {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    if transfer_method not in METHODS:
        raise InvalidInput(
            f"transfer method: {transfer_method!r} is not one of {', '.join(METHODS)}"
        )
    rounds, test_round = _rounds(table, protocol, test_round)
    split = _Split(
        table, rounds, test_round, dict(rules=rules, prices=prices, transfer_method=transfer_method)
    )
    if protocol == "forecast":
        run = split.every_step()
    elif protocol in ("by-round", "training", "latency"):
        run = split.by_round(train_until, protocol=protocol)
    else:
        run = split.leave_one_accelerator_out(keep_older=protocol == "within-round")
    return EvaluationReport(
        protocol=protocol,
        description=run.description,
        train_count=run.train_count,
        **split.scored.report(),  # holdout count, overall, by_* slices, refused reasons
        unseen_benchmark_queries=run.unseen_asked,
        unseen_benchmark_refused=run.unseen_refused,
        notes=run.notes,
        elapsed_s=time.perf_counter() - start,
    )


def _seen_benchmarks(
    train: ObservationTable, table: ObservationTable, test_rows: np.ndarray
) -> tuple[np.ndarray, set[tuple[str, str, str]]]:
    """Which test rows' benchmarks (family, name: Training's rgat is not Inference's rgat) the
    training split holds, and the (family, benchmark, scenario) it recorded."""
    every = np.arange(train.n)
    known = set(zip(train.family.values(every), train.bench_name.values(every)))
    recorded = set(
        zip(
            train.family.values(every),
            train.bench_name.values(every),
            train.scenario.values(every),
        )
    )
    test_names = zip(table.family.values(test_rows), table.bench_name.values(test_rows))
    return np.array([n in known for n in test_names], dtype=bool), recorded


@dataclass
class _Run:
    description: str
    train_count: int
    unseen_asked: int = 0
    unseen_refused: int = 0
    notes: list[str] = field(default_factory=list)


class _Split:
    """One evaluation's table, rounds and test round; each protocol fills ``scored``."""

    def __init__(
        self,
        table: ObservationTable,
        rounds: list[str],
        test_round: str,
        knowledge_args: dict[str, Any],
    ) -> None:
        self.table, self.rounds, self.test_round = table, rounds, test_round
        self.knowledge_args = knowledge_args
        self.scored = Scored()
        self.all_rows = np.arange(table.n)
        round_of = [round_key(r) if r else (0,) for r in table.round.vocab]
        self.keys = [round_of[int(c)] for c in table.round.codes]

    def _knowledge(self, train: ObservationTable) -> Knowledge:
        return Knowledge.from_table(train, **self.knowledge_args)

    def _train_until(
        self, train_until: str | None, select: Callable[[ObservationTable, np.ndarray], np.ndarray]
    ) -> str:
        """The last training round: the one asked, or by default the round before the test round
        that has results of the protocol's kind; InvalidInput naming a round not before it."""
        table, rounds, test_round = self.table, self.rounds, self.test_round
        with_tests = {
            table.round.vocab[int(c)] for c in table.round.codes[select(table, self.all_rows)]
        }
        earlier = [r for r in rounds if round_key(r) < round_key(test_round) and r in with_tests]
        train_until = train_until or (earlier[-1] if earlier else None)
        if (
            train_until is None
            or train_until not in rounds
            or round_key(train_until) >= round_key(test_round)
        ):
            raise InvalidInput(
                f"train_until: {train_until!r} must be a round before {test_round}; "
                f"rounds: {', '.join(rounds)}"
            )
        return train_until

    def by_round(self, train_until: str | None, *, protocol: str = "by-round") -> _Run:
        """Train up to the previous round that has results of the protocol's kind (a round of
        Training results only is no inference round); ``training``: test the closed-division
        times to train (baseline: the same count's lookup); ``latency``: the LLM p99 TTFT/TPOT."""
        table, test_round = self.table, self.test_round
        select = SELECT.get(protocol, _closed_throughput)
        lookup = count_lookup if protocol == "training" else simple_lookup
        train_until = self._train_until(train_until, select)
        limit = round_key(train_until)
        train_rows = self.all_rows[np.array([k <= limit for k in self.keys], dtype=bool)]
        test_rows = select(table, self.all_rows[table.round.codes == table.round.code(test_round)])
        what = {
            "training": "closed-division times to train (MLPerf Training)",
            "latency": "closed-division LLM p99 TTFT/TPOT",
        }.get(protocol, "closed-division throughput")
        if not len(test_rows):
            raise InvalidInput(f"test round {test_round} has no {what} results to score")
        train = subset(table, train_rows)
        seen_bench, recorded = _seen_benchmarks(train, table, test_rows)
        unseen_rows = test_rows[~seen_bench]
        test_rows = test_rows[seen_bench]
        knowledge = self._knowledge(train)
        # asked for the test round: a forecast from the training's newest rounds
        asked = [{**user_query(table, r), "as_of": test_round} for r in test_rows.tolist()]
        predictions = predict(knowledge, asked)
        seen = {canonical_accelerator(a) for a in train.accelerator.vocab}
        self.scored.add(
            table,
            test_rows,
            predictions,
            lookup(train, table, test_rows),
            seen,
            recorded,
            # a Training step apart from an Inference one between rounds of the same names
            step=("Training " if protocol == "training" else "") + f"{train_until} -> {test_round}",
        )
        unseen_preds = predict(knowledge, [user_query(table, r) for r in unseen_rows.tolist()])
        unseen_refused = sum(p.basis is Basis.UNSUPPORTED for p in unseen_preds)
        return _Run(
            description=f"train rounds <= {train_until}, test {test_round} {what}",
            train_count=len(train_rows),
            unseen_asked=len(unseen_preds),
            unseen_refused=unseen_refused,
            notes=[
                f"{len(unseen_preds)} results of benchmarks never seen in training asked: "
                f"{unseen_refused} refused"
            ],
        )

    def every_step(self) -> _Run:
        """``forecast``: every held round-ahead step (train on rounds <= k, ask the next round
        with results as of that round), closed-division throughput and times to train."""
        runs = []
        for protocol in ("by-round", "training"):
            held = scorable_rounds(self.table, protocol)
            for old, new in pairwise(held):
                self.test_round = new
                runs.append(self.by_round(old, protocol=protocol))
        if not runs:
            raise InvalidInput("forecast: the knowledge base holds no two rounds to step between")
        return _Run(
            description="round ahead, every step: train on rounds <= k, each result of the next "
            "round asked as of that round (closed-division throughput; times to train)",
            train_count=max(r.train_count for r in runs),
            unseen_asked=sum(r.unseen_asked for r in runs),
            unseen_refused=sum(r.unseen_refused for r in runs),
            notes=[f"{len(runs)} steps"],
        )

    def leave_one_accelerator_out(self, *, keep_older: bool = False) -> _Run:
        """``keep_older`` (``within-round``): only the accelerator's results of the test round
        are held out, its older rounds stay (what the round drift carries forward)."""
        table, test_round = self.table, self.test_round
        in_round = self.all_rows[table.round.codes == table.round.code(test_round)]
        candidates = _closed_throughput(table, in_round)
        accs = np.array([canonical_accelerator(a) for a in table.accelerator.vocab], dtype=object)[
            table.accelerator.codes
        ]
        upto = self.all_rows[np.array([k <= round_key(test_round) for k in self.keys], dtype=bool)]
        train_count = 0
        for acc in sorted(set(accs[candidates].tolist())):
            held = candidates[accs[candidates] == acc]
            out = accs[upto] == acc
            if keep_older:
                out &= table.round.codes[upto] == table.round.code(test_round)
            train_rows = upto[~out]
            train = subset(table, train_rows)
            asked = [{**user_query(table, r), "as_of": test_round} for r in held.tolist()]
            predictions = predict(self._knowledge(train), asked)
            # within-round: a part whose older rounds stay in training was seen there
            seen = {acc} if keep_older and bool((accs[train_rows] == acc).any()) else set()
            self.scored.add(table, held, predictions, simple_lookup(train, table, held), seen)
            train_count = max(train_count, len(train_rows))
        return _Run(
            description=f"leave one accelerator out: each accelerator of {test_round} held out"
            + (" (its older rounds kept)" if keep_older else "")
            + ", closed-division throughput",
            train_count=train_count,
        )
