"""Rank candidates for a workload: one row per (canonical accelerator, placement, stack).

Candidates are the rows measured on the workload's benchmark slice, grouped so that one GPU and
stack is one row whatever system sizes published it, plus one row for each (accelerator,
placement) the knowledge base knows in the family but never saw on this slice (with that
accelerator's most recent stack). Every row's figure comes from ``advisor.estimate.index`` and says its
basis; rows it refuses (the model does not fit, no evidence of that class) are listed under
``excluded`` with the reason, as are rows the user's constraints or the compatibility rules rule
out. The ranking key is the score shown: the figure for observed rows, the pessimistic end of
the interval for the others.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np

from advisor.verbs import serving
from advisor.estimate.index import (
    EvidenceIndex,
    Query,
    accelerator_class,
    generation_min_driver,
)
from advisor.results import (
    COLLECTOR_SOURCE,
    Basis,
    Candidate,
    Evidence,
    ExcludedCandidate,
    Factor,
    Interval,
    Recommendation,
    RecommendationSet,
)
from advisor.knowledge.rules import Severity, parse_version, stack_components
from advisor.manifests.pod import image_for, image_index, missing_image, placement_snippet, to_yaml
from advisor.knowledge.table import ObservationTable, _round_key
from advisor.workload import MLPERF_TRAINING, Objective, Workload
from graph_schema.models import PlacementKind, SoftwareStack

if TYPE_CHECKING:
    from advisor.engine import Advisor

MAX_EXCLUDED_LISTED = 100


def query_components(stack: SoftwareStack) -> dict[str, str]:
    return {k.lower(): str(v) for k, v in stack_components(stack).items() if v}


def _mode(values: list[Any]) -> Any:
    return Counter(values).most_common(1)[0][0]


def _snippet_count(workload: Workload, observed_counts: list[int]) -> int:
    """The user's count; else one node's worth as observed (the most common count), within the
    user's bounds."""
    hw = workload.hardware
    if hw.count is not None:
        return hw.count
    count = _mode(observed_counts) if observed_counts else 1
    if hw.min_count is not None:
        count = max(count, hw.min_count)
    if hw.max_count is not None:
        count = min(count, hw.max_count)
    return int(count)


def rank(advisor: Advisor, workload: Workload, top: int, table: ObservationTable,
         index: EvidenceIndex) -> RecommendationSet:
    start = time.perf_counter()
    notes: list[str] = []
    bench_rows, ignored = advisor._benchmark_rows(table, workload)
    if ignored:
        notes.append(f"ignored parameters the knowledge base does not record for this benchmark: {', '.join(ignored)}")
    metric = advisor._choose_metric(table, bench_rows, workload)
    over_limit = serving.latency_exclusions(table, bench_rows, workload) if workload.latency_limits() else {}
    rows = bench_rows[table.metric.codes[bench_rows] == table.metric.code(metric)]
    hib = bool(table.higher_is_better[rows[0]])
    unit = table.unit.vocab[int(table.unit.codes[rows[0]])]
    per_acc = workload.rank_per_accelerator and hib
    scenario = workload.scenario or _mode(table.scenario.values(rows))
    if workload.scenario is None and len(set(table.scenario.values(rows))) > 1:
        notes.append(f"no scenario given: ranked on {scenario!r}, the most common for {metric}")
    division = _mode(table.division.values(rows))
    key = (workload.family, workload.benchmark or "", scenario, metric, division)
    by_acc = index.slices.get(key, {})
    latest = table.latest_round()

    # ---- candidates: observed groups, then the family's other (accelerator, placement) pairs
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for acc, acc_rows in by_acc.items():
        for r in acc_rows.tolist():
            groups[(acc, table.placement.vocab[int(table.placement.codes[r])],
                    table.stack.vocab[int(table.stack.codes[r])])].append(r)
    fam = np.flatnonzero((table.family.codes == table.family.code(workload.family))
                         & (table.division.codes == table.division.code(division)))
    fam_pairs: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in fam.tolist():
        fam_pairs[(index.accel[r], table.placement.vocab[int(table.placement.codes[r])])].append(r)
    observed_pairs = {(a, p) for a, p, _ in groups}
    candidates: list[tuple[str, str, str, list[int]]] = [(a, p, s, g) for (a, p, s), g in groups.items()]
    for (acc, place), fam_rows in sorted(fam_pairs.items()):
        if (acc, place) in observed_pairs:
            continue
        arr = np.asarray(fam_rows)
        newest = index.latest(arr)
        stack_id = _mode(table.stack.values(newest))
        candidates.append((acc, place, stack_id, fam_rows))

    excluded: dict[str, int] = {}
    excluded_list: list[ExcludedCandidate] = []

    def exclude(acc: str, place: str, stack_label: str | None, reason: str) -> None:
        short = reason.split(":")[0]
        excluded[short] = excluded.get(short, 0) + 1
        if len(excluded_list) < MAX_EXCLUDED_LISTED:
            excluded_list.append(ExcludedCandidate(accelerator=acc, placement=PlacementKind(place),
                                                   stack_label=stack_label, reason=reason))

    failures = advisor._known_failures(table)
    bench_ids = {table.benchmark.vocab[int(c)] for c in set(table.benchmark.codes[rows].tolist())}
    scored: list[dict[str, Any]] = []
    for acc, place, stack_id, cand_rows in candidates:
        stack = table.stacks[stack_id]
        label = stack.label()
        raw_names = sorted({table.accelerator.vocab[int(table.accelerator.codes[r])] for r in cand_rows})
        observed_here = (acc, place, stack_id) in groups
        reason = _constraint(advisor, workload, acc, raw_names, place, stack, stack_id, failures, bench_ids,
                             observed_here)
        if reason is None and observed_here:
            reason = next((over_limit[c] for c in table.candidate.codes[np.asarray(cand_rows)].tolist()
                           if c in over_limit), None)
        if reason is None and not observed_here and not workload.include_predicted:
            reason = "not observed (--observed-only)"
        if reason is not None:
            exclude(acc, place, label, reason)
            continue
        counts = [int(table.count[r]) for r in cand_rows] if observed_here else \
            [int(c) for c in table.count[np.asarray(cand_rows)]]
        count = _snippet_count(workload, counts)
        q = Query(workload.family, workload.benchmark or "", scenario, metric, division, acc, count, place,
                  components=query_components(stack), raw_accelerator=raw_names[0])
        est = index.estimate(q)
        if est.basis is Basis.UNSUPPORTED:
            exclude(acc, place, label, est.reason or "unsupported")
            continue
        if est.basis is Basis.OBSERVED and len(est.rows) < workload.min_evidence:
            exclude(acc, place, label, f"fewer than min_evidence={workload.min_evidence} observations")
            continue
        if est.confidence < workload.min_confidence:
            exclude(acc, place, label, f"confidence {est.confidence:.2f} below --min-confidence "
                    f"{workload.min_confidence:g}")
            continue
        assert est.value is not None and est.low is not None and est.high is not None
        scale = 1 if (per_acc or not hib) else count
        value, low, high = est.value * scale, est.low * scale, est.high * scale
        if workload.objective is Objective.LATENCY or not hib:  # lower is better: latency, time to train
            score = -(value if est.basis is Basis.OBSERVED else high)
        else:
            basis_value = est.value if est.basis is Basis.OBSERVED else est.low
            if workload.objective is Objective.COST:
                price, _ = advisor.prices.price(raw_names[0], PlacementKind(place))
                score = basis_value * (count if not hib else 1) * 3600.0 / price
            else:
                score = basis_value * scale
        group_rows = np.asarray(groups.get((acc, place, stack_id), []), dtype=np.int64)
        scored.append({"acc": acc, "place": place, "stack_id": stack_id, "stack": stack, "count": count,
                       "raw": raw_names, "est": est, "value": value, "low": low, "high": high,
                       "score": score, "group": group_rows, "scale": scale, "bench_rows": bench_rows})

    # An extrapolation beyond every accelerator measured on the benchmark does not outrank the
    # measurements on specs alone: its score is capped at the best observed candidate's.
    best_observed = max((c["score"] for c in scored if c["est"].basis is Basis.OBSERVED), default=None)
    for c in scored:
        if c["est"].extrapolated and best_observed is not None and c["score"] > best_observed:
            c["score"] = best_observed
            c["capped"] = True
    order = {Basis.OBSERVED: 0, Basis.INTERPOLATED: 1, Basis.TRANSFERRED: 2}
    scored.sort(key=lambda s: (-s["score"], order[s["est"].basis], s["acc"], s["stack_id"]))
    recs = [_recommendation(advisor, workload, table, index, rank_no, s, metric, unit, hib, per_acc, latest)
            for rank_no, s in enumerate(scored[:top], start=1)]
    if workload.objective is Objective.COST and hib:
        notes.append(f"cost from the price table ({advisor.prices.note or 'packaged'}; "
                     f"{advisor.prices.currency} per accelerator-hour)")
    if not recs:
        notes.append("no candidate passed the constraints; see 'excluded'")
    if workload.family == MLPERF_TRAINING:
        notes.append("MLPerf Training scores are olympic means of the published runs (fastest and slowest "
                     "dropped); MLCommons' RCP normalisation is not in the result files and is not applied")
    if workload.latency_limits():
        notes.append("latency limits are checked against each configuration's observed p99 (TTFT/TPOT) on "
                     "this benchmark; configurations without such observations are kept with a warning")
    return RecommendationSet(
        workload=workload.model_dump(mode="json", exclude_none=True), metric=metric,
        objective=workload.objective.value, generation=table.generation,
        candidates_considered=len(candidates), excluded=excluded, excluded_candidates=excluded_list,
        recommendations=recs, notes=notes, elapsed_ms=(time.perf_counter() - start) * 1000)


def _constraint(advisor: Advisor, workload: Workload, acc: str, raw_names: list[str], place: str,
                stack: SoftwareStack, stack_id: str, failures: set[Any], bench_ids: set[str],
                observed_here: bool) -> str | None:
    """Why the user's constraints, the compatibility rules or known failures rule this out."""
    hw = workload.hardware
    if hw.accelerators and not any(hw.allows(n) for n in (acc, *raw_names)):
        return "accelerator not allowed"
    if not hw.include_cpu and accelerator_class(raw_names[0]) == "cpu":
        return "CPU-only excluded"
    if hw.placements and place not in {p.value for p in hw.placements}:
        return "placement not allowed"
    for fc in workload.frameworks:
        comps = query_components(stack)
        names = set(comps) | ({stack.framework.lower()} if stack.framework else set())
        if fc.name not in names:
            return "framework constraint"
        if fc.version:
            version = parse_version(comps.get(fc.name))
            if version is None:
                return f"{fc.name} version not recorded (the version constraint cannot be checked)"
            if not fc.specifier.contains(version, prereleases=True):
                return "framework constraint"
    if hw.driver:
        generation = generation_min_driver(raw_names[0])
        have = parse_version(hw.driver)
        if generation and have is not None and have < parse_version(generation[1]):  # type: ignore[operator]
            return (f"driver too old for the GPU generation: {generation[0]} needs >= {generation[1]}, "
                    f"the nodes have {hw.driver}")
        for v in advisor._stack_violations(stack_id, stack, hw.driver):
            if v.severity is Severity.ERROR:
                return f"breaks a compatibility rule with the nodes' driver: {v.message}"
    if not observed_here and any((stack_id, n, place, b) in failures for n in raw_names for b in (*bench_ids, None)):
        return "known failure"
    return None


def _recommendation(advisor: Advisor, workload: Workload, table: ObservationTable, index: EvidenceIndex,
                    rank_no: int, s: dict[str, Any], metric: str, unit: str | None, hib: bool,
                    per_acc: bool, latest: str) -> Recommendation:
    est = s["est"]
    stack: SoftwareStack = s["stack"]
    warnings = list(est.notes)
    if s.get("capped"):
        warnings.append("ranked no higher than the best measured candidate: its estimate is an extrapolation "
                        "beyond every accelerator measured on this benchmark")
    group: np.ndarray = s["group"]
    evidence_rows = group if len(group) else np.empty(0, dtype=np.int64)
    evidence = _evidence(table, index, evidence_rows)
    observed_range = None
    counts: list[int] = []
    if len(group):
        per = index.unit[group] * (1 if (per_acc or not hib) else s["count"])
        observed_range = Interval(low=float(per.min()), high=float(per.max()), level=1.0)
        counts = sorted({int(c) for c in table.count[group]})
    if est.basis is Basis.OBSERVED:
        if evidence.count == 1:
            warnings.append("few samples: a single observation (interval: the measurement spread "
                            "the knowledge base shows for repeated configurations)")
        if evidence.rounds and latest and max(evidence.rounds, key=_round_key) != latest:
            warnings.append(f"stale data: last seen in round {max(evidence.rounds, key=_round_key)}; "
                            f"the knowledge base has {latest}")
    elif len(group):
        warnings.append(f"no result at x{s['count']}: per-accelerator figure of this stack's other counts x{s['count']}")
    for v in advisor._stack_violations(s["stack_id"], stack, None):
        if v.severity is Severity.ERROR:
            warnings.append(f"recorded stack breaks rule {v.message}; it ran, so the result stands")
    min_driver = advisor._min_driver(stack)
    generation = generation_min_driver(s["raw"][0])
    if generation and (min_driver is None or (parse_version(generation[1]) or 0) > (parse_version(min_driver) or 0)):  # type: ignore[operator]
        min_driver = generation[1]
    system = serving.system_details(table, group) if est.basis is Basis.OBSERVED else {}
    nodes = int(system["nodes"]) if system.get("nodes", "").isdigit() else 1
    gang = workload.family == MLPERF_TRAINING  # multi-node jobs: all nodes or none
    per_node = int(system["accelerators_per_node"]) if system.get("accelerators_per_node", "").isdigit() \
        else max(1, s["count"] // nodes)
    if workload.latency_limits():
        candidate = int(table.candidate.codes[group[0]]) if len(group) else -1
        checked, unchecked = serving.latency_evidence(table, s["bench_rows"], workload, candidate)
        system.update({f"limit_{i}": text for i, text in enumerate(checked)})
        warnings.extend(unchecked)
    manifest, snippet_missing = _snippet(advisor, workload, table, rank_no, s, stack, min_driver,
                                         (nodes, per_node) if gang else None)
    score_unit = f"-{unit}" if not hib else {Objective.THROUGHPUT: (unit or "") + (" per accelerator" if per_acc else ""),
                  Objective.LATENCY: f"-{unit}",
                  Objective.COST: f"{(unit or '').split('/')[0]} per {advisor.prices.currency} "
                                  "(x3600/price per accelerator-hour)"}[workload.objective]
    overhead = advisor.overheads(table).get((s["acc"], s["place"])) \
        if s["place"] != PlacementKind.BARE_METAL.value else None
    return Recommendation(
        rank=rank_no,
        candidate=Candidate(stack_id=s["stack_id"], stack=stack.model_dump(mode="json", exclude_none=True),
                            stack_label=stack.label(), accelerator=s["acc"], accelerator_count=s["count"],
                            placement=PlacementKind(s["place"]), published_names=s["raw"][:5]),
        metric=metric, unit=unit, higher_is_better=hib, basis=est.basis,
        value=s["value"], interval=Interval(low=s["low"], high=s["high"]), per_accelerator=per_acc,
        score=s["score"], score_unit=score_unit, confidence=round(est.confidence, 3),
        observed_range=observed_range, observed_counts=counts, evidence=evidence,
        factors=[Factor(name=n, value=v, effect=round(e, 4)) for n, v, e in est.factors],
        placement_overhead=overhead, warnings=warnings, snippet_yaml=to_yaml(manifest) if manifest else None,
        snippet=manifest, snippet_missing=snippet_missing, system=system,
    )


def _snippet(advisor: Advisor, workload: Workload, table: ObservationTable, rank_no: int, s: dict[str, Any],
             stack: SoftwareStack, min_driver: str | None,
             gang: tuple[int, int] | None) -> tuple[dict[str, Any] | None, str | None]:
    """(manifest, None), or (None, why not) when no image is known. The image is the one the
    knowledge base records for the stack, else the user's (``workload.image``); a training gang
    (nodes, per node) becomes a PyTorchJob whose workers each take one node's worth."""
    if advisor._images is None or advisor._images[0] != table.generation:
        advisor._images = (table.generation, image_index(table.stacks.values()))
    found = image_for(stack, advisor._images[1])
    if found is None and workload.image:
        found = (workload.image, "given (--image)")
    if found is None:
        return None, missing_image(stack)
    name = f"{workload.benchmark}-{rank_no}"
    manifest = placement_snippet(workload_name=name, stack=stack, accelerator=s["raw"][0],
                                 count=gang[1] if gang else s["count"], placement=PlacementKind(s["place"]),
                                 image=found[0], image_source=found[1], min_driver=min_driver)
    if gang:
        manifest = serving.gang_snippet(manifest, nodes=gang[0], per_node=gang[1],
                                        name=manifest["metadata"]["name"])
    return manifest, None


def _evidence(table: ObservationTable, index: EvidenceIndex, rows: np.ndarray) -> Evidence:
    def distinct(column: Any) -> list[Any]:
        return [column.vocab[int(c)] for c in sorted(set(column.codes[rows].tolist()))]

    return Evidence(
        count=len(rows),
        sources=sorted(distinct(table.source)),
        rounds=sorted({r for r in distinct(table.round) if r}, key=_round_key),
        submitters=sorted({s for s in distinct(table.submitter) if s})[:10],
        last_seen=index.last_seen(rows),
        measured_on=_measured_on(table, rows),
    )


def _measured_on(table: ObservationTable, rows: np.ndarray) -> list[str]:
    """The nodes (hosts) where our own collectors measured these rows."""
    code = table.source.code(COLLECTOR_SOURCE)
    if code < 0:
        return []
    ours = rows[table.source.codes[rows] == code]
    return sorted({table.submitter.vocab[int(c)] for c in set(table.submitter.codes[ours].tolist())} - {""})
