"""The advisor engine: recommend a stack and placement, predict unobserved combinations, compare,
detect regressions, evaluate the predictions.

It answers from memory: a columnar table of every observation (``ObservationTable``) and its
evidence index (``advisor.estimate``) are built once per store generation and rebuilt when the
store's generation moves, so stale evidence is never served silently. Both are persisted on disk
(``advisor.table_file``, keyed by store and generation; ``advisor.calibration_file``, the index's
calibration keyed by the table's content), so a fresh CLI process neither rereads the store nor
replays its history.
"""

from __future__ import annotations

import difflib
import logging
import threading
import time
from typing import Any

import numpy as np
from pydantic import ValidationError
from threadpoolctl import ThreadpoolController

from advisor import analysis, calibration_file, table_file
from advisor.estimate import EvidenceIndex
from advisor.prediction import predict_one
from advisor.ranking import rank
from advisor.results import (
    Comparison,
    EvaluationReport,
    PlacementOverhead,
    Prediction,
    PredictQuery,
    RecommendationSet,
    Regression,
    basis_note,
    this_node,
)
from advisor.rules import RuleSet, load_rules, parse_version, stack_components
from advisor.specs import PriceTable, load_prices
from advisor.table import ObservationTable
from advisor.workload import Objective, Workload
from graph_schema import progress
from graph_schema.errors import InvalidInput, NotFound
from graph_schema.models import PlacementKind, SoftwareStack
from graph_schema.store import Store, validation_message

log = logging.getLogger(__name__)


class Advisor:
    """Ranks, predicts and explains over one store.

    Args:
        store: any ``Store`` (embedded, Neo4j, REST).
        generation_ttl: seconds an observed store generation is trusted before it is read
            again (0: read on every answer). Bounds how late a write by another process is seen.
        prices: price table (path, dict or ``PriceTable``); default: the packaged example table.
        rules: compatibility rules (directory, file, list or ``RuleSet``); default: packaged.
    """

    # False: calibrate in memory only (evaluation's advisors over training splits)
    persist_calibration = True
    # how a benchmark transfers to an accelerator that never ran it (``advisor.transfer.METHODS``)
    transfer_method = "roofline"

    def __init__(self, store: Store, *, prices: Any = None, rules: Any = None,
                 memo_answers: bool = True, generation_ttl: float = 0.0) -> None:
        self.store = store
        # > 0: the store's generation is re-read at most this often (a server answering many
        # requests); writes made through ``forget_generation``'s caller are seen at once
        self.generation_ttl = generation_ttl
        self._generation: tuple[float, int] | None = None
        self.memo_answers = memo_answers  # False: compute every answer (benchmarks of the path)
        self.prices: PriceTable = load_prices(prices)
        self.rules: RuleSet = load_rules(rules)
        self._lock = threading.RLock()
        self._table: ObservationTable | None = None
        self._index: EvidenceIndex | None = None
        self._overheads: dict[tuple[str, str], PlacementOverhead] | None = None
        # what the calibration file holds for the table held (loaded once per table)
        self._prepared: tuple[ObservationTable, calibration_file.Prepared | None] | None = None
        self._failures: set[tuple[str, str, str, str | None]] | None = None
        self._rule_cache: dict[str, list[Any]] = {}
        self._min_drivers: dict[str | None, str | None] = {}
        self._answers: dict[tuple[int, str, int], RecommendationSet] = {}
        self._images: tuple[int, dict[tuple[str | None, ...], str]] | None = None

    # ---- data and evidence, per store generation ------------------------------------------
    def store_generation(self) -> int:
        if self.generation_ttl > 0:
            seen = self._generation
            if seen is not None and time.monotonic() - seen[0] < self.generation_ttl:
                return seen[1]
        generation = int(self.store.generation())
        self._generation = (time.monotonic(), generation)
        return generation

    def forget_generation(self) -> None:
        """The store was just written through us: read its generation again on the next answer."""
        self._generation = None

    def table(self, generation: int | None = None) -> ObservationTable:
        """The observation table of the store's current generation (reloaded when it moved):
        from its persisted file when one matches the store and generation, else the table held
        (or persisted) for an earlier generation with what was written since added, else read
        from the store; persisted (``advisor.table_file``).
        ``generation``: one the caller has just read, so one answer reads it once."""
        generation = self.store_generation() if generation is None else generation
        with self._lock:
            if self._table is None or self._table.generation != generation:
                start = time.perf_counter()
                self._table = table_file.load_table(self.store, generation, self._read_generation,
                                                    previous=self._table)
                self._overheads = None
                self._prepared = None
                self._failures = None
                self._index = None
                log.info("loaded %d observations (generation %d) in %.2fs", self._table.n, generation,
                         time.perf_counter() - start)
            return self._table

    def _read_generation(self) -> int:
        self._generation = None
        return self.store_generation()

    def evidence(self, table: ObservationTable | None = None) -> EvidenceIndex:
        """The evidence index of the current table, calibrated: the calibration persisted with
        the table's content (``advisor.calibration_file``) when there is one, else computed now
        and persisted, with the index's slices and the placement overheads."""
        table = table or self.table()
        with self._lock:
            if self._index is None or self._index.table is not table:
                prepared = self._persisted(table)
                slices = prepared.slices if prepared is not None else None
                index = EvidenceIndex(table, self.overheads(table), self.transfer_method, slices=slices)
                if self.persist_calibration and table.n:
                    if prepared is None:
                        start = time.perf_counter()
                        with progress.phase("calibrating the intervals on the knowledge base's history"):
                            calibration = index.calibration()
                        log.info("calibrated in %.2fs", time.perf_counter() - start)
                    else:
                        calibration = prepared.calibration
                    if prepared is None or slices is None:
                        # the rows in another order than the file's (or none yet): the file
                        # follows the table held now
                        calibration_file.save(table, calibration, self.transfer_method,
                                              slices=index.slices, overheads=self.overheads(table))
                    index.adopt(calibration)
                self._index = index
            return self._index

    def _persisted(self, table: ObservationTable) -> calibration_file.Prepared | None:
        """What the calibration file holds for ``table`` (read once per table); None when
        nothing is, or this advisor does not persist."""
        if not self.persist_calibration or not table.n:
            return None
        if self._prepared is None or self._prepared[0] is not table:
            self._prepared = (table, calibration_file.load_prepared(table, self.transfer_method))
        return self._prepared[1]

    def warm(self) -> None:
        """Load the table, index the evidence and calibrate it (e.g. at API start-up)."""
        self.evidence(self.table()).calibration()

    def overheads(self, table: ObservationTable | None = None) -> dict[tuple[str, str], PlacementOverhead]:
        """(physical accelerator, placement) → overhead against bare metal: persisted with the
        calibration when the table's rows are the file's, else computed from paired results."""
        table = table or self.table()
        with self._lock:
            if self._overheads is None:
                prepared = self._persisted(table)
                if prepared is not None and prepared.overheads is not None:
                    self._overheads = prepared.overheads
                else:
                    self._overheads = analysis.placement_overheads(table)
            return self._overheads

    def _known_failures(self, table: ObservationTable | None = None) -> set[tuple[str, str, str, str | None]]:
        table = table or self.table()
        with self._lock:
            if self._failures is None:
                out = set()
                try:
                    rows = self.store.list_entities("failures")
                except NotImplementedError:
                    rows = []
                for f in rows:
                    if f.get("stage") == "unsupported":  # this node could not run it: not the stack's fault
                        continue
                    place = str(f.get("placement_id") or "").split("|")[0] or PlacementKind.UNKNOWN.value
                    out.add((str(f.get("stack_id")), str(f.get("accelerator")), place, f.get("benchmark_id")))
                self._failures = out
            return self._failures

    def _stack_violations(self, stack_id: str, stack: SoftwareStack, driver: str | None) -> list[Any]:
        key = f"{stack_id}|{driver}"
        hit = self._rule_cache.get(key)
        if hit is None:
            comps = stack_components(stack)
            if driver:
                comps["driver"] = driver
            hit = self.rules.check_components(comps)
            self._rule_cache[key] = hit
        return hit

    # ---- recommend ---------------------------------------------------------------------------
    def _choose_metric(self, table: ObservationTable, rows: np.ndarray, workload: Workload) -> str:
        metrics = table.metric.codes[rows]
        if workload.metric:
            if table.metric.code(workload.metric) not in set(metrics.tolist()):
                available = sorted({table.metric.vocab[m] for m in set(metrics.tolist())})
                raise InvalidInput(f"metric: {workload.metric!r} is not recorded for this benchmark; "
                                   f"recorded: {', '.join(available) or 'none'}")
            return workload.metric
        want_hib = workload.objective is not Objective.LATENCY
        ok = metrics[table.higher_is_better[rows] == want_hib]
        if len(ok) == 0:
            available = sorted({table.metric.vocab[m] for m in set(metrics.tolist())})
            raise InvalidInput(
                f"objective: {workload.objective.value!r} needs a "
                f"{'higher' if want_hib else 'lower'}-is-better metric, and this benchmark/scenario "
                f"records only {', '.join(available)}; pick another scenario or objective")
        values, counts = np.unique(ok, return_counts=True)
        return table.metric.vocab[int(values[np.argmax(counts)])]

    def _benchmark_rows(self, table: ObservationTable, workload: Workload) -> tuple[np.ndarray, list[str]]:
        assert workload.benchmark is not None
        params = workload.parameter_filters()
        if "division" not in params:
            # MLPerf's open division allows changed models: only closed results compare.
            closed, unrecorded = table.benchmark_mask(workload.family, workload.benchmark, {**params, "division": "closed"})
            if "division" not in unrecorded and closed.any():
                params["division"] = "closed"
        mask, ignored = table.benchmark_mask(workload.family, workload.benchmark, params)
        if not mask.any():
            names = sorted({b.name for b in table.benchmarks.values() if b.family == workload.family})
            if not names:
                families = sorted({b.family for b in table.benchmarks.values()})
                raise NotFound(f"family: no benchmarks of family {workload.family!r} in the knowledge base; "
                               f"families: {', '.join(families) or 'none'}")
            if workload.benchmark not in names:
                close = difflib.get_close_matches(workload.benchmark, names, n=6, cutoff=0.5)
                raise NotFound(f"benchmark: {workload.benchmark!r} is not in the knowledge base for "
                               f"{workload.family}; similar: {', '.join(close) or ', '.join(names[:8])}")
            raise NotFound(f"no observations of {workload.family}/{workload.benchmark} with "
                           f"{workload.parameter_filters()}")
        return np.flatnonzero(mask), ignored

    def recommend(self, workload: Workload | dict[str, Any], top: int = 5) -> RecommendationSet:
        """Rank candidates for a workload: one row per (canonical accelerator, placement, stack),
        each with its basis, the score the ranking uses and an 80% interval (see
        ``advisor.ranking``).

        Raises:
            InvalidInput: a malformed workload or an objective the benchmark has no metric for.
            NotFound: the benchmark is not in the knowledge base.
        """
        start = time.perf_counter()
        if not isinstance(workload, Workload):
            workload = Workload.from_dict(workload)
        # The answer is a function of the workload and the data: memoised per store generation
        # (the generation is read on every call, so new data is never answered from the memo).
        generation = self.store_generation()
        key = (generation, workload.model_dump_json(), top)
        cached = self._answers.get(key) if self.memo_answers else None
        if cached is None:
            with _one_thread():
                cached = self._recommend(workload, top, generation)
            if len(self._answers) > 512:
                self._answers.clear()
            self._answers[key] = cached
        return cached.model_copy(update={"elapsed_ms": (time.perf_counter() - start) * 1000})

    def _recommend(self, workload: Workload | dict[str, Any], top: int,
                   generation: int | None = None) -> RecommendationSet:
        if not isinstance(workload, Workload):
            workload = Workload.from_dict(workload)
        if top < 1:
            raise InvalidInput(f"top must be >= 1, got {top}")
        table = self.table(generation)
        answer = rank(self, workload, top, table, self.evidence(table))
        here = this_node()
        for r in answer.recommendations:
            r.basis_note = basis_note(r.basis, r.evidence.measured_on, here)
        return answer

    def _min_driver(self, stack: SoftwareStack) -> str | None:
        """The per-release minimum driver for the stack's CUDA (from the rules), if any."""
        if stack.cuda not in self._min_drivers:
            self._min_drivers[stack.cuda] = self._min_driver_uncached(stack)
        return self._min_drivers[stack.cuda]

    def _min_driver_uncached(self, stack: SoftwareStack) -> str | None:
        cuda = parse_version(stack.cuda)
        if cuda is None:
            return None
        best = None
        for rule in self.rules.rules:
            if set(rule.when) == {"cuda"} and "driver" in rule.require and rule.applies({"cuda": cuda}):
                spec = rule.require["driver"]
                if spec.startswith(">="):
                    candidate = spec[2:]
                    if best is None or (parse_version(candidate) or 0) > (parse_version(best) or 0):  # type: ignore[operator]
                        best = candidate
        return best

    # ---- predict -----------------------------------------------------------------------------
    def predict(self, queries: list[PredictQuery] | list[dict[str, Any]]) -> list[Prediction]:
        """Value with interval for each configuration, from the nearest evidence outward
        (``advisor.estimate``), each labelled with its basis.

        Raises:
            InvalidInput: a malformed query (the message names queries.N.field).
        """
        with _one_thread():
            return self._predict(queries)

    def _predict(self, queries: list[PredictQuery] | list[dict[str, Any]]) -> list[Prediction]:
        parsed: list[PredictQuery] = []
        for i, q in enumerate(queries):
            if isinstance(q, PredictQuery):
                parsed.append(q)
                continue
            try:
                parsed.append(PredictQuery.model_validate(q))
            except ValidationError as exc:
                raise InvalidInput(validation_message(exc, prefix=f"queries.{i}")) from None
        table = self.table()
        index = self.evidence(table)
        return [predict_one(index, self.rules, q) for q in parsed]

    # ---- compare, overhead, regressions, evaluate ----------------------------------------------
    def placement_overhead(self, accelerator: str | None = None,
                           placement: PlacementKind | str | None = None) -> list[PlacementOverhead]:
        """Overheads of non-bare-metal placements against bare metal, from paired results."""
        return analysis.select_overheads(self.overheads(), accelerator, placement)

    def compare(self, stack_a: str | dict[str, str], stack_b: str | dict[str, str], *,
                benchmark: str, accelerator: str | None = None, scenario: str | None = None,
                metric: str | None = None, family: str = "mlperf-inference") -> Comparison:
        from advisor.compare import compare_stacks

        return compare_stacks(self.table(), stack_a, stack_b, benchmark=benchmark, accelerator=accelerator,
                              scenario=scenario, metric=metric, family=family)

    def regressions(self, component: str = "driver", *, accelerator: str | None = None,
                    benchmark: str | None = None, alpha: float = 0.05, min_count: int = 3) -> list[Regression]:
        from advisor.compare import find_regressions

        return find_regressions(self.table(), component, accelerator=accelerator, benchmark=benchmark,
                                alpha=alpha, min_count=min_count)

    def evaluate(self, protocol: str = "by-round", *, train_until: str | None = None,
                 test_round: str | None = None, transfer_method: str | None = None) -> EvaluationReport:
        """Accuracy of ``predict`` on held-out published results (see ``advisor.evaluation``);
        ``transfer_method``: another than this advisor's (the accuracy report's challenger)."""
        from advisor.evaluation import evaluate

        return evaluate(self.table(), protocol, train_until=train_until, test_round=test_round,
                        rules=self.rules, prices=self.prices,
                        transfer_method=transfer_method or self.transfer_method)


_CONTROLLER: ThreadpoolController | None = None


def _one_thread() -> Any:
    """Limit BLAS/OpenMP to one thread (small answers from many request threads would
    oversubscribe the cores). The controller is built once: ``threadpool_limits(1)`` inspects
    every loaded library on each call, tens of milliseconds."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1)
