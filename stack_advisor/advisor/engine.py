"""The advisor engine: builds and caches what the advisor knows
(``stack_advisor.advisor.snapshot.Knowledge``), one snapshot per store generation, and answers each
verb by calling the verb's function (``stack_advisor.advisor.verbs``) on the snapshot of the store's
current generation.

It answers from memory: a columnar table of every observation (``ObservationTable``) and its
evidence index (``stack_advisor.advisor.estimate.index``) are built once per store generation and
rebuilt when the store's generation moves, so stale evidence is never served silently. Both are
persisted on disk (``stack_advisor.advisor.knowledge.table_file``, keyed by store and generation;
``stack_advisor.advisor.estimate.calibration_file``, the index's calibration keyed by the table's
content) in the folders it is given (``CacheFolders``: the CLI and the API build them from the
environment), so a fresh CLI process neither rereads the store nor replays its history. The verbs
other than ``recommend`` (predict, compare, evaluate) are imported by their methods: a CLI call
answers one.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from threadpoolctl import ThreadpoolController

from stack_advisor.advisor.budget import shared_work
from stack_advisor.advisor.estimate import analysis, calibration_file
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.knowledge import table_file
from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
from stack_advisor.advisor.knowledge.rules import RuleSet, load_rules
from stack_advisor.advisor.knowledge.specs import PriceTable, load_prices
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.results import (
    Comparison,
    EvaluationReport,
    PlacementOverhead,
    Prediction,
    PredictQuery,
    RecommendationSet,
    Regression,
)
from stack_advisor.advisor.snapshot import Knowledge, known_failures
from stack_advisor.advisor.verbs.recommend import recommend
from stack_advisor.advisor.workload import Workload
from stack_advisor.runtime import progress
from stack_advisor.schema.models import PlacementKind
from stack_advisor.store.base import Store

log = logging.getLogger(__name__)

T = TypeVar("T")
MEMO_SIZE = 512  # answers kept per advisor before the memo starts afresh


class Advisor:
    """Ranks, predicts and explains over one store: builds a ``Knowledge`` snapshot per store
    generation and keeps the one answer cache (recommendations per generation and workload).

    Args:
        store: any ``Store`` (embedded, Neo4j, REST).
        generation_ttl: seconds an observed store generation is trusted before it is read
            again (0: read on every answer). Bounds how late a write by another process is seen.
        prices: price table (path, dict or ``PriceTable``); default: the packaged example table.
        rules: compatibility rules (directory, file, list or ``RuleSet``); default: packaged.
        memo_answers: False computes every answer (benchmarks of the path).
        caches: where tables and calibrations are persisted (default ``Advisor.caches``: none).
        node: the name of the node that answers (``stack_advisor.advisor.results.this_node``, read
        at the
            edge); an observed row measured on it says so. None: no row is "measured on this node".
    """

    # False: calibrate in memory only
    persist_calibration = True
    # where tables and calibrations persist when the constructor is given none (none: in memory)
    caches = CacheFolders()
    # how a benchmark transfers to an accelerator that never ran it
    # (``stack_advisor.advisor.estimate.transfer.METHODS``)
    transfer_method = "roofline"

    def __init__(
        self,
        store: Store,
        *,
        prices: Any = None,
        rules: Any = None,
        memo_answers: bool = True,
        generation_ttl: float = 0.0,
        caches: CacheFolders | None = None,
        node: str | None = None,
    ) -> None:
        self.store = store
        self.node = node
        if caches is not None:
            self.caches = caches
        # > 0: the store's generation is re-read at most this often (a server answering many
        # requests); writes made through ``forget_generation``'s caller are seen at once
        self.generation_ttl = generation_ttl
        self._generation: tuple[float, int] | None = None
        self.memo_answers = memo_answers
        self.prices: PriceTable = load_prices(prices)
        self.rules: RuleSet = load_rules(rules)
        self._lock = threading.RLock()
        self._table: ObservationTable | None = None
        self._knowledge: Knowledge | None = None
        self._answers: dict[tuple[Any, ...], Any] = {}
        self._answers_lock = threading.Lock()

    # ---- the store's generation and its snapshot -------------------------------------------
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
        from the store; persisted (``stack_advisor.advisor.knowledge.table_file``).
        ``generation``: one the caller has just read, so one answer reads it once."""
        generation = self.store_generation() if generation is None else generation
        with shared_work(), self._lock:
            if self._table is None or self._table.generation != generation:
                start = time.perf_counter()
                self._table = table_file.load_table(
                    self.store,
                    generation,
                    self._read_generation,
                    previous=self._table,
                    folder=self.caches.tables,
                )
                log.info(
                    "loaded %d observations (generation %d) in %.2fs",
                    self._table.n,
                    generation,
                    time.perf_counter() - start,
                )
            return self._table

    def _read_generation(self) -> int:
        self._generation = None
        return self.store_generation()

    def knowledge(self, generation: int | None = None) -> Knowledge:
        """The snapshot of the store's current generation (``generation``: one just read),
        built once per table: the index calibrated from the calibration persisted with the
        table's content (``stack_advisor.advisor.estimate.calibration_file``) when there is one,
        else calibrated now and persisted. Not counted against an answer's time budget (built once,
        for every answer after it)."""
        with shared_work():
            table = self.table(generation)
            with self._lock:
                if self._knowledge is None or self._knowledge.table is not table:
                    self._knowledge = self.snapshot(table)
                return self._knowledge

    def snapshot(self, table: ObservationTable) -> Knowledge:
        """A new snapshot over ``table`` (not cached), calibrated and persisted as ``knowledge``
        does, with the store's known failures."""
        return Knowledge(
            table=table,
            index=self._index(table),
            rules=self.rules,
            prices=self.prices,
            failures=self._failures(),
        )

    def _index(self, table: ObservationTable) -> EvidenceIndex:
        folder = self.caches.calibration
        prepared = (
            calibration_file.load_prepared(table, self.transfer_method, folder=folder)
            if self.persist_calibration and table.n
            else None
        )
        overheads = (
            prepared.overheads
            if prepared is not None and prepared.overheads is not None
            else analysis.placement_overheads(table)
        )
        slices = prepared.slices if prepared is not None else None
        index = EvidenceIndex(table, overheads, self.transfer_method, slices=slices)
        if self.persist_calibration and table.n:
            index.round_drift.shelf = calibration_file.PriorFile(table, folder)
            if prepared is None:
                start = time.perf_counter()
                with progress.phase("calibrating the intervals on the knowledge base's history"):
                    calibration = index.calibration()
                log.info("calibrated in %.2fs", time.perf_counter() - start)
            else:
                calibration = prepared.calibration
            if prepared is None or slices is None:
                # the rows in another order than the file's (or none yet): the file follows the
                # table held now
                calibration_file.save(
                    table,
                    calibration,
                    self.transfer_method,
                    slices=index.slices,
                    overheads=overheads,
                    folder=folder,
                )
            index.adopt(calibration)
        return index

    def _failures(self) -> frozenset[tuple[str, str, str, str | None]]:
        try:
            return known_failures(self.store.list_entities("failures"))
        except NotImplementedError:
            return frozenset()

    def evidence(self) -> EvidenceIndex:
        """The calibrated evidence index of the current snapshot."""
        return self.knowledge().index

    def overheads(self) -> dict[tuple[str, str], PlacementOverhead]:
        """(physical accelerator, placement) → overhead against bare metal, of the current
        snapshot."""
        return self.knowledge().overheads

    def warm(self) -> None:
        """Load the table, index the evidence and calibrate it (e.g. at API start-up), MLPerf
        Training's intervals too where it holds any (their replays had made a warm server's
        first Training answer take 4 s)."""
        index = self.knowledge().index
        index.calibration()
        if "mlperf-training" in index.families():
            index.training.residuals()
            index.training.drift()

    # ---- the verbs ---------------------------------------------------------------------------
    def recommend(self, workload: Workload | dict[str, Any], top: int = 5) -> RecommendationSet:
        """``stack_advisor.advisor.verbs.recommend.recommend`` on the current snapshot, memoised per
        store generation (read on every call, so new data is never answered from the memo).

        Raises:
            InvalidInput: a malformed workload or an objective the benchmark has no metric for.
            NotFound: the benchmark is not in the knowledge base.
        """
        start = time.perf_counter()
        if not isinstance(workload, Workload):
            workload = Workload.from_dict(workload)
        generation = self.store_generation()
        found: Workload = workload

        def compute() -> RecommendationSet:
            with _one_thread():
                return recommend(self.knowledge(generation), found, top, here=self.node)

        answer = self._memo(("recommend", generation, workload.model_dump_json(), top), compute)
        return answer.model_copy(update={"elapsed_ms": (time.perf_counter() - start) * 1000})

    def memoised(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """The one answer cache: ``compute()`` once per store generation and ``key`` (answers
        other than ``recommend``'s, e.g. a web page's rows read from the store), a deep copy
        each time so a caller cannot change what the next one gets. Errors are not kept."""
        full = ("memoised", self.store_generation(), *key)
        return copy.deepcopy(self._memo(full, compute))

    def _memo(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        with self._answers_lock:
            cached = self._answers.get(key) if self.memo_answers else None
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        value = compute()
        with self._answers_lock:
            if len(self._answers) > MEMO_SIZE:
                self._answers.clear()
            self._answers[key] = value
        return value

    def predict(self, queries: list[PredictQuery] | list[dict[str, Any]]) -> list[Prediction]:
        """``stack_advisor.advisor.verbs.predict.predict`` on the current snapshot.

        Raises:
            InvalidInput: a malformed query (the message names queries.N.field).
        """
        from stack_advisor.advisor.verbs.predict import predict

        with _one_thread():
            return predict(self.knowledge(), queries)

    def placement_overhead(
        self, accelerator: str | None = None, placement: PlacementKind | str | None = None
    ) -> list[PlacementOverhead]:
        """Overheads of non-bare-metal placements against bare metal, from paired results."""
        return analysis.select_overheads(self.overheads(), accelerator, placement)

    def compare(
        self,
        stack_a: str | dict[str, str],
        stack_b: str | dict[str, str],
        *,
        benchmark: str,
        accelerator: str | None = None,
        scenario: str | None = None,
        metric: str | None = None,
        family: str = "mlperf-inference",
    ) -> Comparison:
        from stack_advisor.advisor.verbs import compare as compare_verb
        from stack_advisor.advisor.verbs.compare_requests import StackComparisonRequest

        request = StackComparisonRequest(
            stack_a=stack_a,
            stack_b=stack_b,
            benchmark=benchmark,
            accelerator=accelerator,
            scenario=scenario,
            metric=metric,
            family=family,
        )
        return compare_verb.compare_stacks(self.knowledge(), request)

    def rank_stacks(
        self,
        *,
        benchmark: str,
        scenario: str | None = None,
        metric: str | None = None,
        accelerator: str,
        family: str = "mlperf-inference",
        division: str = "closed",
        as_of: str | None = None,
    ) -> list[dict[str, Any]]:
        from stack_advisor.advisor.verbs import compare as compare_verb
        from stack_advisor.advisor.verbs.compare_requests import StackRankingRequest

        request = StackRankingRequest(
            family=family,
            benchmark=benchmark,
            scenario=scenario,
            metric=metric,
            accelerator=accelerator,
            division=division,
            as_of=as_of,
        )
        return [r.model_dump() for r in compare_verb.stack_ranking(self.knowledge(), request)]

    def regressions(
        self,
        component: str = "driver",
        *,
        accelerator: str | None = None,
        benchmark: str | None = None,
        alpha: float = 0.05,
        min_count: int = 3,
    ) -> list[Regression]:
        from stack_advisor.advisor.verbs import compare as compare_verb
        from stack_advisor.advisor.verbs.compare_requests import RegressionsRequest

        request = RegressionsRequest(
            component=component,
            accelerator=accelerator,
            benchmark=benchmark,
            alpha=alpha,
            min_count=min_count,
        )
        return compare_verb.find_regressions(self.knowledge(), request)

    def evaluate(
        self,
        protocol: str = "by-round",
        *,
        train_until: str | None = None,
        test_round: str | None = None,
        transfer_method: str | None = None,
    ) -> EvaluationReport:
        """Accuracy of ``predict`` on held-out published results
        (``stack_advisor.advisor.verbs.evaluate``); ``transfer_method``: another than this advisor's
        (the accuracy report's challenger)."""
        from stack_advisor.advisor.verbs import evaluate as evaluate_verb

        with _one_thread():
            return evaluate_verb.evaluate(
                self.table(),
                protocol,
                train_until=train_until,
                test_round=test_round,
                rules=self.rules,
                prices=self.prices,
                transfer_method=transfer_method or self.transfer_method,
            )


_CONTROLLER: ThreadpoolController | None = None


def _one_thread() -> Any:
    """Limit BLAS/OpenMP to one thread (small answers from many request threads would
    oversubscribe the cores). The controller is built once: ``threadpool_limits(1)`` inspects
    every loaded library on each call, tens of milliseconds."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1)
