"""The advisor engine: recommend a stack and placement, predict unobserved combinations, compare,
detect regressions, evaluate the model.

It answers from memory: a columnar table of every observation (``ObservationTable``) and the
fitted model are built once per store generation and rebuilt when the store's generation moves,
so a stale model is never served silently. Both are persisted on disk (``advisor.table_file``,
keyed by store and generation; ``advisor.model_cache``, keyed by the table's content), so a fresh
CLI process neither rereads the store nor refits.
"""

from __future__ import annotations

import difflib
import logging
import math
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from advisor import analysis, model_cache, predictor, serving, table_file
from advisor.features import query_frames
from advisor.names import canonical_query, matching_accelerators
from advisor.results import (
    Basis,
    Candidate,
    Comparison,
    EvaluationReport,
    Evidence,
    Factor,
    Interval,
    PlacementOverhead,
    Prediction,
    PredictQuery,
    Recommendation,
    RecommendationSet,
    Regression,
)
from advisor.rules import RuleSet, Severity, load_rules, parse_version, stack_components
from advisor.snippet import placement_snippet, to_yaml
from advisor.specs import PriceTable, load_prices, resolve_accelerator
from advisor.table import ObservationTable, _round_key, physical_key
from advisor.workload import MLPERF_TRAINING, Objective, Workload
from graph_schema import progress
from graph_schema.errors import InvalidInput, NotFound
from graph_schema.models import PlacementKind, SoftwareStack
from graph_schema.store import Store

log = logging.getLogger(__name__)
MODEL_VERSION = 5


class Advisor:
    """Ranks, predicts and explains over one store.

    Args:
        store: any ``Store`` (embedded, Neo4j, REST).
        generation_ttl: seconds an observed store generation is trusted before it is read
            again (0: read on every answer). Bounds how late a write by another process is seen.
        prices: price table (path, dict or ``PriceTable``); default: the packaged example table.
        rules: compatibility rules (directory, file, list or ``RuleSet``); default: packaged.
    """

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
        self._model: predictor.FittedModel | None = None
        self._overheads: dict[tuple[str, str], PlacementOverhead] | None = None
        self._failures: set[tuple[str, str, str, str | None]] | None = None
        self._rule_cache: dict[str, list[Any]] = {}
        # (generation, model, benchmark, scenario, metric, division, round) → candidate → (lo, mid, hi)
        self._predictions: dict[tuple[Any, ...], dict[int, tuple[float, float, float]]] = {}
        self._factors: dict[tuple[Any, ...], dict[int, list[tuple[str, float]]]] = {}
        self._min_drivers: dict[str | None, str | None] = {}
        self._answers: dict[tuple[int, str, int], RecommendationSet] = {}
        self._snippets: dict[tuple[Any, ...], tuple[str, dict[str, Any]]] = {}

    # ---- data and model, per store generation ---------------------------------------------
    def store_generation(self) -> int:
        if self.generation_ttl > 0:
            seen = self._generation
            if seen is not None and time.monotonic() - seen[0] < self.generation_ttl:
                return seen[1]
        cheap = getattr(self.store, "generation", None)
        generation = int(cheap()) if callable(cheap) else self.store.stats().generation
        self._generation = (time.monotonic(), generation)
        return generation

    def forget_generation(self) -> None:
        """The store was just written through us: read its generation again on the next answer."""
        self._generation = None

    def table(self, generation: int | None = None) -> ObservationTable:
        """The observation table of the store's current generation (reloaded when it moved):
        from its persisted file when one matches the store and generation, else read from the
        store and persisted (``advisor.table_file``).
        ``generation``: one the caller has just read, so one answer reads it once."""
        generation = self.store_generation() if generation is None else generation
        with self._lock:
            if self._table is None or self._table.generation != generation:
                start = time.perf_counter()
                self._table = table_file.load_table(self.store, generation, self._read_generation)
                self._overheads = None
                self._failures = None
                log.info("loaded %d observations (generation %d) in %.2fs", self._table.n, generation,
                         time.perf_counter() - start)
            return self._table

    def _read_generation(self) -> int:
        self._generation = None
        return self.store_generation()

    def model(self, table: ObservationTable | None = None) -> predictor.FittedModel:
        """The model fitted on the current table; refitted (or loaded from the disk cache,
        ``advisor.model_cache``) when the table's generation differs from the model's."""
        table = table or self.table()
        with self._lock:
            if self._model is not None and self._model.generation == table.generation:
                return self._model
            key = model_cache.fingerprint(table, MODEL_VERSION)
            cached = model_cache.load(key)
            if cached is not None:
                cached.generation = table.generation
                self._model = cached
                return cached
            if table.n == 0:
                raise NotFound("the knowledge base holds no observations; import or collect some first")
            import sklearn.ensemble  # noqa: F401 - loads the OpenMP runtime _one_thread must limit

            with progress.phase(f"fitting the prediction model on {table.n:,} observations"), _one_thread():
                model = model_cache.compact(predictor.fit(table), table)
            self._model = model
            model_cache.save(key, model)
            return model

    def warm(self) -> None:
        """Load the table, fit the model, compute placement overheads (e.g. at API start-up)."""
        self.model()
        self.overheads()

    def overheads(self, table: ObservationTable | None = None) -> dict[tuple[str, str], PlacementOverhead]:
        table = table or self.table()
        with self._lock:
            if self._overheads is None:
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

    def _allowed(self, workload: Workload, stack: SoftwareStack, accelerator: str, count: int,
                 placement: str) -> str | None:
        """None when the candidate passes the constraints, else the reason it does not."""
        hw = workload.hardware
        if not hw.allows(accelerator):
            return "accelerator not allowed"
        resolved = resolve_accelerator(accelerator)
        if not hw.include_cpu and resolved.is_cpu:
            return "CPU-only excluded"
        if hw.driver and resolved.min_driver:
            have, need = parse_version(hw.driver), parse_version(resolved.min_driver)
            if have is not None and need is not None and have < need:
                return "driver older than the accelerator's generation needs"
        if hw.count is not None and count != hw.count:
            return "accelerator count differs"
        if hw.min_count is not None and count < hw.min_count:
            return "accelerator count differs"
        if hw.max_count is not None and count > hw.max_count:
            return "accelerator count differs"
        if hw.placements and placement not in {p.value for p in hw.placements}:
            return "placement not allowed"
        for fc in workload.frameworks:
            comps = {k.lower(): v for k, v in stack_components(stack).items() if v}
            names = {k for k in comps} | ({stack.framework.lower()} if stack.framework else set())
            if fc.name not in names:
                return "framework constraint"
            if fc.version:
                version = parse_version(comps.get(fc.name) or (stack.framework_version if stack.framework and stack.framework.lower() == fc.name else None))
                if version is None:
                    return f"{fc.name} version not recorded (the version constraint cannot be checked)"
                if not fc.specifier.contains(version, prereleases=True):
                    return "framework constraint"
        return None

    def recommend(self, workload: Workload | dict[str, Any], top: int = 5) -> RecommendationSet:
        """Rank candidates (stack, accelerator, count, placement) for a workload.

        Observed candidates are ranked by their median; predicted ones by the low end of their
        interval, so a speculative value does not outrank evidence on optimism alone.

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
        start = time.perf_counter()
        if not isinstance(workload, Workload):
            workload = Workload.from_dict(workload)
        if top < 1:
            raise InvalidInput(f"top must be >= 1, got {top}")
        table = self.table(generation)
        notes: list[str] = []
        bench_rows, ignored = self._benchmark_rows(table, workload)
        if ignored:
            notes.append(f"ignored parameters the knowledge base does not record for this benchmark: {', '.join(ignored)}")
        metric = self._choose_metric(table, bench_rows, workload)
        mcode = table.metric.code(metric)
        rows = bench_rows[table.metric.codes[bench_rows] == mcode]
        hib = bool(table.higher_is_better[rows[0]])
        unit = table.unit.vocab[int(table.unit.codes[rows[0]])]
        per_acc = workload.rank_per_accelerator and hib
        latest = table.latest_round()

        # observed groups
        cand_codes = table.candidate.codes[rows]
        order = np.argsort(cand_codes, kind="stable")
        sorted_rows = rows[order]
        uniq, starts = np.unique(cand_codes[order], return_index=True)
        observed: dict[int, np.ndarray] = {int(c): g for c, g in zip(uniq, np.split(sorted_rows, starts[1:]))}

        # candidate universe: every configuration of the family (of the division, when pinned)
        fam_mask = table.family.codes == table.family.code(workload.family)
        pinned_division = table.division.values(rows[:1])[0] if len(rows) else ""
        if pinned_division:
            fam_mask &= table.division.codes == table.division.code(pinned_division)
        fam_cands = np.unique(table.candidate.codes[fam_mask])
        excluded: dict[str, int] = {}
        failures = self._known_failures(table)
        bench_ids = {table.benchmark.vocab[int(c)] for c in np.unique(table.benchmark.codes[rows])}
        kept: list[tuple[int, Basis]] = []
        rule_notes: dict[int, list[str]] = {}
        over_limit = serving.latency_exclusions(table, bench_rows, workload) if workload.latency_limits() else {}
        for code in fam_cands.tolist():
            stack_id, accelerator, count, placement = table.candidate.vocab[code]
            stack = table.stacks[stack_id]
            reason = self._allowed(workload, stack, accelerator, count, placement) or over_limit.get(code)
            warnings: list[str] = []
            if reason is None and any((stack_id, accelerator, placement, b) in failures for b in (*bench_ids, None)):
                if code in observed:  # failed on some variants of the benchmark, ran on others
                    warnings.append("known failure on some variants of this benchmark with this configuration")
                else:
                    reason = "known failure"
            if reason is None:
                for v in self._stack_violations(stack_id, stack, workload.hardware.driver):
                    if v.severity is Severity.ERROR and workload.hardware.driver:
                        reason = "breaks a compatibility rule with the nodes' driver"
                        break
                    if v.severity is Severity.ERROR:
                        warnings.append(f"recorded stack breaks rule {v.message}; it ran, so the result stands "
                                        "(e.g. via the CUDA forward-compatibility package or a mislabelled version)")
                    else:
                        warnings.append(v.message)
            group = observed.get(code)
            if reason is None and group is not None and len(group) < workload.min_evidence:
                reason = f"fewer than min_evidence={workload.min_evidence} observations"
            if reason is None and group is None and not workload.include_predicted:
                reason = "not observed (predictions off)"
            if reason is not None:
                excluded[reason] = excluded.get(reason, 0) + 1
                continue
            kept.append((code, Basis.OBSERVED if group is not None else Basis.PREDICTED))
            rule_notes[code] = warnings

        # values
        scenario = workload.scenario or _mode(table.scenario, rows)
        division = str(workload.parameters.get("division") or _mode(table.division, rows))
        values: dict[int, tuple[float, float, float]] = {}
        predicted_codes = [c for c, b in kept if b is Basis.PREDICTED]
        model = None
        if predicted_codes or kept:
            try:
                model = self.model(table)
            except NotFound:
                model = None
        memo_key = (table.generation, id(model), workload.family, workload.benchmark, scenario, metric,
                    division, latest)
        memo = self._predictions.get(memo_key, {}) if model is not None else {}
        for c in [c for c in predicted_codes if c in memo]:
            values[c] = memo[c]
        predicted_codes = [c for c in predicted_codes if c not in memo]

        def candidate_matrix(codes: list[int]) -> np.ndarray:
            """Model features of candidates run on this workload (benchmark, scenario, round)."""
            rows = []
            for c in codes:
                stack_id, accelerator, count, placement = table.candidate.vocab[c]
                rows.append({"family": workload.family, "bench_name": workload.benchmark, "scenario": scenario,
                             "metric": metric, "division": division, "accelerator": accelerator,
                             "count": count, "placement": placement, "stack": table.stacks[stack_id],
                             "round": latest})
            return model.encoder.matrix(query_frames(rows))

        if predicted_codes and model is not None:
            logs = model.predict_log(candidate_matrix(predicted_codes), hib)
            for c, (lo, mid, hi) in zip(predicted_codes, logs):
                scale = table.candidate.vocab[c][2] if hib else 1
                values[c] = memo[c] = (math.exp(lo) * scale, math.exp(mid) * scale, math.exp(hi) * scale)
            if len(self._predictions) > 256:
                self._predictions.clear()
            self._predictions[memo_key] = memo
        elif predicted_codes:
            for c in predicted_codes:
                excluded["no model to predict with"] = excluded.get("no model to predict with", 0) + 1
            kept = [(c, b) for c, b in kept if b is Basis.OBSERVED]
        for c, basis in kept:
            if basis is Basis.OBSERVED:
                values[c] = _quantiles3(table.value[observed[c]])

        def score(c: int) -> float:
            _, accelerator, count, placement = table.candidate.vocab[c]
            lo, mid, hi = values[c]
            lower_better = workload.objective is Objective.LATENCY or not hib
            if c not in observed:
                mid = hi if lower_better else lo
            if lower_better:  # a lower-is-better metric (latency, time to train) ranks low first
                return -mid
            per = mid / count if per_acc or workload.objective is Objective.COST else mid
            if workload.objective is Objective.COST:
                price, _ = self.prices.price(accelerator, PlacementKind(placement))
                return per * 3600.0 / price
            return per

        scores = {c: score(c) for c, _ in kept}
        ranked = sorted((c for c, _ in kept), key=lambda c: (-scores[c], 0 if c in observed else 1))[:top]
        basis_of = dict(kept)

        # explanations for the top ones
        factors: dict[int, list[tuple[str, float]]] = {}
        by_score = sorted((c for c, _ in kept), key=scores.__getitem__)
        reference = by_score[len(by_score) // 2] if by_score else None
        fkey = (memo_key, reference, tuple(ranked))
        if model is not None and ranked and reference is not None and fkey in self._factors:
            factors = self._factors[fkey]
        elif model is not None and ranked and reference is not None:
            X = candidate_matrix([*ranked, reference])
            factors = dict(zip(ranked, model.factor_effects(X[:-1], X[-1], hib)))
            if len(self._factors) > 256:
                self._factors.clear()
            self._factors[fkey] = factors
        if factors and reference is not None:
            ref_stack, ref_acc, ref_count, ref_place = table.candidate.vocab[reference]
            notes.append(f"factors compare each candidate with the median candidate by the model: "
                         f"{ref_acc} x{ref_count}, {ref_place}, {table.stacks[ref_stack].label()}")
        overheads = self.overheads(table)
        recs = []
        for rank, c in enumerate(ranked, start=1):
            stack_id, accelerator, count, placement = table.candidate.vocab[c]
            stack = table.stacks[stack_id]
            lo, mid, hi = values[c]
            div = count if per_acc else 1
            basis = basis_of[c]
            warnings = list(rule_notes.get(c, []))
            if basis is Basis.OBSERVED:
                evidence = self._evidence(table, observed[c])
                if evidence.count == 1:
                    warnings.append("few samples: a single observation")
                elif evidence.count < 3:
                    warnings.append(f"few samples: {evidence.count} observations")
                if evidence.rounds and latest and max(evidence.rounds, key=_round_key) != latest:
                    warnings.append(f"stale data: last seen in round {max(evidence.rounds, key=_round_key)}; "
                                    f"the knowledge base has {latest}")
            else:
                evidence = Evidence(count=0)
                warnings.append("predicted: no observation of this configuration on this benchmark")
                acc_key = resolve_accelerator(accelerator)
                key = acc_key.spec.id if acc_key.spec else accelerator
                if model is not None and key not in model.seen_accelerators:
                    warnings.append("accelerator unseen in training: predicted from its public specs only")
            min_driver = self._min_driver(stack)
            if workload.hardware.driver is None and min_driver and stack.driver:
                dv, mv = parse_version(stack.driver), parse_version(min_driver)
                if dv is not None and mv is not None and dv < mv:
                    warnings.append(f"driver too old: recorded driver {stack.driver} is below {min_driver} for CUDA {stack.cuda}")
            system = serving.system_details(table, observed[c]) if basis is Basis.OBSERVED else {}
            nodes = int(system["nodes"]) if system.get("nodes", "").isdigit() else 1
            gang = workload.family == MLPERF_TRAINING  # multi-node jobs: all nodes or none
            per_node = int(system["accelerators_per_node"]) if system.get("accelerators_per_node", "").isdigit() \
                else max(1, count // nodes)
            if workload.latency_limits():
                checked, unchecked = serving.latency_evidence(table, bench_rows, workload, c)
                system.update({f"limit_{i}": text for i, text in enumerate(checked)})
                warnings.extend(unchecked)
            snippet_key = (stack_id, accelerator, count, placement, min_driver, f"{workload.benchmark}-{rank}",
                           nodes if gang else 0)
            if snippet_key not in self._snippets:
                if len(self._snippets) > 4096:
                    self._snippets.clear()
                name = f"{workload.benchmark}-{rank}"
                manifest = placement_snippet(
                    workload_name=name, stack=stack, accelerator=accelerator,
                    count=per_node if gang else count, placement=PlacementKind(placement), min_driver=min_driver)
                if gang:
                    manifest = serving.gang_snippet(manifest, nodes=nodes, per_node=per_node,
                                                    name=manifest["metadata"]["name"])
                self._snippets[snippet_key] = (to_yaml(manifest), manifest)
            snippet_text, manifest = self._snippets[snippet_key]
            score_unit = f"-{unit}" if not hib else {  # a lower-is-better metric ranks on its negative
                Objective.THROUGHPUT: unit + (" per accelerator" if per_acc else ""),
                Objective.LATENCY: f"-{unit}",
                Objective.COST: f"{unit.split('/')[0]} per {self.prices.currency} (x3600/price per accelerator-hour)",
            }[workload.objective]
            recs.append(Recommendation(
                rank=rank,
                candidate=Candidate(stack_id=stack_id, stack=stack.model_dump(mode="json", exclude_none=True),
                                    stack_label=stack.label(), accelerator=accelerator,
                                    accelerator_count=count, placement=PlacementKind(placement)),
                metric=metric, unit=unit, higher_is_better=hib, basis=basis,
                value=mid / div, interval=Interval(low=lo / div, high=hi / div), per_accelerator=per_acc,
                score=scores[c], score_unit=score_unit, evidence=evidence,
                factors=[Factor(name=n, value=self._factor_value(n, stack, accelerator, count, placement, workload),
                                effect=round(e, 4)) for n, e in factors.get(c, [])],
                placement_overhead=overheads.get((physical_key(accelerator), placement)) if placement != PlacementKind.BARE_METAL.value else None,
                warnings=warnings, snippet_yaml=snippet_text, snippet=manifest, system=system,
            ))
        if workload.objective is Objective.COST and hib:
            notes.append(f"cost from the price table ({self.prices.note or 'packaged'}; {self.prices.currency} per accelerator-hour)")
        if workload.family == MLPERF_TRAINING:
            notes.append("MLPerf Training scores are olympic means of the published runs (fastest and slowest "
                         "dropped); MLCommons' RCP normalisation is not in the result files and is not applied")
        if over_limit:
            notes.append("latency limits are checked against each configuration's observed p99 (TTFT/TPOT) on "
                         "this benchmark; configurations without such observations are kept with a warning")
        if not recs:
            notes.append("no candidate passed the constraints; see 'excluded'")
        return RecommendationSet(
            workload=workload.model_dump(mode="json", exclude_none=True), metric=metric,
            objective=workload.objective.value, generation=table.generation,
            candidates_considered=len(fam_cands), excluded=excluded, recommendations=recs, notes=notes,
            elapsed_ms=(time.perf_counter() - start) * 1000,
        )

    @staticmethod
    def _factor_value(name: str, stack: SoftwareStack, accelerator: str, count: int, placement: str,
                      workload: Workload) -> str:
        return {
            "accelerator": accelerator, "accelerator_count": str(count), "placement": placement,
            "software_stack": stack.label(), "benchmark": f"{workload.benchmark} {workload.scenario or ''}".strip(),
            "round": "latest round",
        }.get(name, name)

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

    @staticmethod
    def _evidence(table: ObservationTable, rows: np.ndarray) -> Evidence:
        last = float(table.timestamp[rows].max()) if len(rows) else None
        return Evidence(
            count=len(rows),
            sources=sorted(_distinct(table.source, rows)),
            rounds=sorted({r for r in _distinct(table.round, rows) if r}, key=_round_key),
            submitters=sorted({s for s in _distinct(table.submitter, rows) if s})[:10],
            last_seen=datetime.fromtimestamp(last, tz=UTC) if last is not None else None,
        )

    # ---- predict -----------------------------------------------------------------------------
    def predict(self, queries: list[PredictQuery] | list[dict[str, Any]]) -> list[Prediction]:
        """Value with interval for each configuration: observed (aggregated) when the knowledge
        base has it, else predicted by the model; labelled either way.

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
            except Exception as exc:  # pydantic ValidationError
                from pydantic import ValidationError

                from graph_schema.store import validation_message
                if isinstance(exc, ValidationError):
                    raise InvalidInput(validation_message(exc, prefix=f"queries.{i}")) from None
                raise
        table = self.table()
        latest = table.latest_round()
        out: list[Prediction | None] = [None] * len(parsed)
        to_model: list[int] = []
        known = {(b.family, b.name) for b in table.benchmarks.values()}
        for i, raw_query in enumerate(parsed):
            # Names resolve per query: one unknown name refuses that query, not the batch.
            q, problems = canonical_query(raw_query, known)
            if problems:
                out[i] = Prediction(query=raw_query, value=None, interval=None, observed=False,
                                    basis=Basis.REFUSED, evidence=Evidence(count=0), warnings=problems)
                continue
            parsed[i] = q
            params = dict(q.parameters)
            if q.scenario:
                params["scenario"] = q.scenario
            if "division" not in params:
                closed, unrecorded = table.benchmark_mask(q.family, q.benchmark, {**params, "division": "closed"})
                if "division" not in unrecorded and closed.any():
                    params["division"] = "closed"
            mask, _ = table.benchmark_mask(q.family, q.benchmark, params)
            mask &= table.metric.codes == table.metric.code(q.metric)
            mask &= table.accelerator.codes == table.accelerator.code(q.accelerator)
            mask &= table.count == q.accelerator_count
            mask &= table.placement.codes == table.placement.code(q.placement.value)
            rows = np.flatnonzero(mask)
            if len(rows) and q.components:
                want = {k.lower(): v for k, v in q.components.items()}
                keep = []
                for r in rows:
                    comps = {k.lower(): v for k, v in stack_components(table.stacks[table.stack.vocab[table.stack.codes[r]]]).items() if v}
                    if all(comps.get(k) == v for k, v in want.items()):
                        keep.append(r)
                rows = np.asarray(keep, dtype=np.int64)
            if len(rows):
                vals = table.value[rows]
                out[i] = Prediction(
                    query=q, value=float(np.median(vals)),
                    interval=Interval(low=float(np.quantile(vals, 0.1)), high=float(np.quantile(vals, 0.9))),
                    observed=True, basis=Basis.OBSERVED, evidence=self._evidence(table, rows),
                    model_generation=None)
            else:
                to_model.append(i)
        if to_model:
            model = self.model(table)
            qrows = []
            for i in to_model:
                q = parsed[i]
                comps = dict(q.components)
                if q.framework:
                    comps["framework"] = q.framework
                qrows.append({"family": q.family, "bench_name": q.benchmark,
                              "scenario": q.scenario or str(q.parameters.get("scenario") or ""),
                              "metric": q.metric, "division": str(q.parameters.get("division") or "closed"),
                              "accelerator": q.accelerator, "count": q.accelerator_count,
                              "placement": q.placement.value, "stack": comps, "round": latest})
            hib_of = {m: self._metric_hib(table, m) for m in {parsed[i].metric for i in to_model}}
            higher = np.array([hib_of[parsed[i].metric] for i in to_model])
            logs = model.predict_log(model.encoder.matrix(query_frames(qrows)), higher)
            for i, (lo, mid, hi) in zip(to_model, logs):
                q = parsed[i]
                hib = hib_of[q.metric]
                scale = q.accelerator_count if hib else 1
                warnings = []
                resolved = resolve_accelerator(q.accelerator)
                key = resolved.spec.id if resolved.spec else q.accelerator
                if key not in model.seen_accelerators:
                    warnings.append("accelerator unseen in training: predicted from its public specs only"
                                    if resolved.spec else "accelerator unknown to the spec table and unseen in training")
                if table.metric.code(q.metric) < 0:
                    warnings.append(f"metric {q.metric!r} is not in the knowledge base")
                violations = self.rules.check_components(
                    {**q.components, **({q.framework: q.components.get(q.framework)} if q.framework else {})})
                warnings.extend(v.message for v in violations)
                out[i] = Prediction(
                    query=q, value=math.exp(mid) * scale,
                    interval=Interval(low=math.exp(lo) * scale, high=math.exp(hi) * scale),
                    observed=False, basis=Basis.PREDICTED, evidence=Evidence(count=0),
                    model_generation=model.generation, warnings=warnings)
        return [p for p in out if p is not None]

    @staticmethod
    def _metric_hib(table: ObservationTable, metric: str) -> bool:
        code = table.metric.code(metric)
        if code < 0:
            return not metric.endswith(("latency_ms", "_ms", "_us", "_s"))
        rows = np.flatnonzero(table.metric.codes == code)
        return bool(table.higher_is_better[rows[0]])

    # ---- compare, overhead, regressions, evaluate ----------------------------------------------
    def placement_overhead(self, accelerator: str | None = None,
                           placement: PlacementKind | str | None = None) -> list[PlacementOverhead]:
        """Overheads of non-bare-metal placements against bare metal, from paired results."""
        kind = PlacementKind(placement).value if placement else None
        overheads = self.overheads()
        wanted = None if accelerator is None else set(
            matching_accelerators(sorted({acc for acc, _ in overheads}), accelerator))
        out = [o for (acc, p), o in overheads.items()
               if (wanted is None or acc in wanted) and (kind is None or p == kind)]
        return sorted(out, key=lambda o: (o.accelerator, o.placement.value))

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

    def evaluate(self, holdout_filter: str | None = None, *, holdout_share: float = 0.2,
                 seed: int = 0) -> EvaluationReport:
        from advisor.evaluation import evaluate

        return evaluate(self.table(), holdout_filter, holdout_share=holdout_share, seed=seed)


_CONTROLLER: tuple[bool, ThreadpoolController] | None = None


def _one_thread() -> Any:
    """Limit BLAS/OpenMP to one thread (small predictions from many request threads would
    oversubscribe the cores). The controller is built once: ``threadpool_limits(1)`` inspects
    every loaded library on each call, tens of milliseconds. It only knows the libraries loaded
    when it was built, and scikit-learn (with its OpenMP runtime) is imported only to fit: it is
    built again once scikit-learn is loaded, else fits run unlimited (and crawl on busy cores)."""
    global _CONTROLLER
    with_sklearn = "sklearn" in sys.modules
    if _CONTROLLER is None or _CONTROLLER[0] != with_sklearn:
        _CONTROLLER = (with_sklearn, ThreadpoolController())
    return _CONTROLLER[1].limit(limits=1)


def _quantiles3(values: np.ndarray) -> tuple[float, float, float]:
    """(p10, median, p90) with numpy's default linear interpolation; fast on small groups."""
    v = sorted(values.tolist())
    n = len(v)

    def q(p: float) -> float:
        pos = p * (n - 1)
        i = int(pos)
        return v[i] if i + 1 >= n else v[i] + (v[i + 1] - v[i]) * (pos - i)

    return q(0.1), q(0.5), q(0.9)


def _mode(column: Any, rows: np.ndarray) -> str:
    """The most frequent value of a categorical column over ``rows`` ('' when none)."""
    if len(rows) == 0:
        return ""
    return str(column.vocab[int(np.bincount(column.codes[rows]).argmax())])


def _distinct(column: Any, rows: np.ndarray) -> list[Any]:
    return [column.vocab[int(c)] for c in np.unique(column.codes[rows])]
