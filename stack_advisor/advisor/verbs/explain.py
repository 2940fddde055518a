"""The last stage of ``recommend``: a scored candidate as the answer row users read — its
evidence, warnings (few samples, stale data, broken rules, unchecked limits), system details,
minimum driver and a ready Kubernetes manifest."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.drift import slice_round
from stack_advisor.advisor.estimate.drift_prior import round_label
from stack_advisor.advisor.estimate.facts import accelerator_class, generation_min_driver
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.knowledge.rules import Severity, parse_version
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.manifests.image_check import image_mismatch
from stack_advisor.advisor.manifests.pod import image_for, missing_image, placement_snippet, to_yaml
from stack_advisor.advisor.manifests.recommended import (
    published_nodes,
    snippet_name,
    target_snippet,
)
from stack_advisor.advisor.results import (
    COLLECTOR_SOURCE,
    Basis,
    Evidence,
    Factor,
    Interval,
    Recommendation,
)
from stack_advisor.advisor.results import Candidate as CandidateOut
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.verbs import ordering, serving
from stack_advisor.advisor.verbs.candidates import Candidate, Slice
from stack_advisor.advisor.verbs.scoring import candidate_query
from stack_advisor.advisor.workload import MLPERF_TRAINING, Objective
from stack_advisor.catalog.rounds import round_key
from stack_advisor.schema.models import PlacementKind


def _behind(c: Candidate) -> np.ndarray:
    """The results a row describes: the candidate's group, or an observed figure's own results
    (``est.rows``) where it read none of the group's (a Training candidate moved to a budget's
    count reads the result another system published at that count)."""
    est, group = c.est, c.group
    assert est is not None
    if est.basis is Basis.OBSERVED and len(est.rows) and not np.isin(group, est.rows).any():
        return est.rows
    return group


def _observed_range(knowledge: Knowledge, sl: Slice, c: Candidate) -> Interval | None:
    """The range of the published results behind the row: the candidate's group and the rows the
    figure was made from (stacks that differ only in components the estimate does not match on,
    e.g. Triton, pool), so that the figure lies inside its own range; None without results."""
    est, group = c.est, c.group
    assert est is not None
    if not len(group):
        return None
    behind = est.rows if est.basis is Basis.OBSERVED and len(est.rows) else group
    per = knowledge.index.unit[np.concatenate([group, behind])] * (
        1 if (sl.per_acc or not sl.hib) else c.count
    )
    return Interval(low=float(per.min()), high=float(per.max()), level=1.0)


def _latency_limits(
    knowledge: Knowledge, sl: Slice, c: Candidate, system: dict[str, Any]
) -> list[str]:
    """The workload's latency limits: those the results (or, with none observed, the estimate)
    meet go into ``system`` as ``limit_<i>``; returned, the warnings for those not checked."""
    table, group = knowledge.table, c.group
    candidate = int(table.candidate.codes[group[0]]) if len(group) else -1
    checked, unchecked = serving.latency_evidence(table, sl.bench_rows, sl.workload, candidate)
    if c.latency_checks:  # no observation: checked against the estimate instead
        names = {n for n in sl.workload.latency_limits() if any(n in e for e in c.latency_checks)}
        unchecked = [u for u in unchecked if u.split()[0] not in names]
        for e in c.latency_checks:
            (unchecked if "may exceed" in e else checked).append(e)
    system.update({f"limit_{i}": text for i, text in enumerate(checked)})
    return unchecked


def explain(knowledge: Knowledge, sl: Slice, rank_no: int, c: Candidate) -> Recommendation:
    """The answer row for the candidate ranked ``rank_no``."""
    est = c.est
    assert est is not None
    table = knowledge.table
    behind = _behind(c)
    evidence = evidence_of(table, knowledge.index, behind)
    warnings = _warnings(knowledge, sl, c, evidence)
    observed_range = _observed_range(knowledge, sl, c)
    system = serving.system_details(table, behind) if est.basis is Basis.OBSERVED else {}
    gang = _gang(sl, c, system)
    if sl.workload.latency_limits():
        warnings.extend(_latency_limits(knowledge, sl, c, system))
    elif est.basis is not Basis.OBSERVED and sl.hib:  # a figure no valid run may reach
        warnings.extend(serving.beyond_limits(knowledge.index, candidate_query(sl, c, c.count)))
    driver = min_driver(knowledge, c)
    shape = gang or published_nodes(system, c.count)
    manifest, snippet_missing = _snippet(knowledge, sl, rank_no, c, driver, shape)
    warnings.extend(stack_agreement(c, driver, manifest))
    overhead = (
        knowledge.overheads.get((c.accelerator, c.placement))
        if c.placement != PlacementKind.BARE_METAL.value
        else None
    )
    return Recommendation(
        rank=rank_no,
        candidate=_candidate_out(c),
        metric=sl.metric,
        unit=sl.unit,
        higher_is_better=sl.hib,
        basis=est.basis,
        value=c.value,
        interval=Interval(low=c.low, high=c.high),
        per_accelerator=sl.per_acc,
        score=c.score,
        score_unit=_score_unit(knowledge, sl),
        confidence=round(est.confidence, 3),
        observed_range=observed_range,
        observed_counts=sorted({int(n) for n in table.count[behind]}),
        evidence=evidence,
        factors=[Factor(name=n, value=v, effect=round(e, 4)) for n, v, e in est.factors],
        round=slice_round(knowledge.index.round_drift, sl.key, sl.workload.as_of, est),
        placement_overhead=overhead,
        warnings=warnings,
        snippet_yaml=to_yaml(manifest) if manifest else None,
        snippet=manifest,
        snippet_missing=snippet_missing,
        system=system,
        accelerator_hours=_accelerator_hours(sl, c),
    )


def _accelerator_hours(sl: Slice, c: Candidate) -> Interval | None:
    """Beside a time to train in minutes, what it costs in accelerator-hours at the count."""
    if sl.hib or sl.unit != "min" or not c.count:
        return None
    return Interval(low=c.low * c.count / 60, high=c.high * c.count / 60)


def _candidate_out(c: Candidate) -> CandidateOut:
    return CandidateOut(
        stack_id=c.stack_id,
        stack=c.stack.model_dump(mode="json", exclude_none=True),
        stack_label=c.stack.label(),
        accelerator=c.accelerator,
        accelerator_count=c.count,
        placement=PlacementKind(c.placement),
        published_names=c.published[:5],
    )


def _warnings(knowledge: Knowledge, sl: Slice, c: Candidate, evidence: Evidence) -> list[str]:
    assert c.est is not None
    warnings = list(c.est.notes)
    if c.capped:
        best = (
            f"the best candidate derived from its own {sl.recorded_scenario} measurement"
            if sl.derived
            else "the best measured candidate"
        )
        warnings.append(
            f"ranked no higher than {best}: its estimate is an extrapolation beyond every "
            "accelerator measured on this benchmark"
        )
    if c.est.basis is Basis.OBSERVED:
        if evidence.count == 1:
            warnings.append(
                "few samples: a single observation (interval: the measurement spread "
                "the knowledge base shows for repeated configurations)"
            )
        stale = _stale(knowledge, sl, evidence)
        if stale:
            warnings.append(stale)
    elif len(c.group) and sl.workload.family == MLPERF_TRAINING:  # a whole system's time
        warnings.append(
            f"no result of this stack at x{c.count}: the part's published time to train nearest "
            "in count, of whichever stack ran it, moved by the count scaling (its factor names "
            "the count it started from)"
        )
    elif len(c.group):
        warnings.append(
            f"no result at x{c.count}: per-accelerator figure of this stack's other "
            f"counts x{c.count}"
        )
    for v in knowledge.stack_violations(c.stack_id, c.stack, None):
        if v.severity is Severity.ERROR:
            warnings.append(f"recorded stack breaks rule {v.message}; it ran, so the result stands")
    if sl.hib and sl.workload.objective is Objective.COST:
        price, row = knowledge.prices.price(c.published[0], PlacementKind(c.placement))
        if row.startswith("default/"):  # the ranking reads a price nobody gave for this part
            warnings.append(
                f"cost: the price table has no row for {c.accelerator}: scored at its default, "
                f"{price:g} {knowledge.prices.currency} per accelerator-hour (give yours: "
                "--prices FILE)"
            )
    return warnings


def _stale(knowledge: Knowledge, sl: Slice, evidence: Evidence) -> str | None:
    """An observed row whose results are older than the round asked (``as_of`` a past round:
    that round; else the newest the knowledge base holds)."""
    if not evidence.rounds or not sl.latest:
        return None
    last = max(evidence.rounds, key=round_key)
    target = knowledge.index.round_drift.slice_target(sl.key, sl.workload.as_of)
    past = round_label(target) if target > 0 else sl.latest
    if round_key(past) < round_key(sl.latest):  # asked as of a past round
        if round_key(last) < round_key(past):
            return f"stale data: last seen in round {last}, before the round asked ({past})"
        return None
    if round_key(last) < round_key(sl.latest):
        return f"stale data: last seen in round {last}; the knowledge base has {sl.latest}"
    return None


def stack_agreement(c: Candidate, driver: str | None, manifest: dict[str, Any] | None) -> list[str]:
    """Where the row's recorded stack and its snippet part: a recorded driver below the
    generation's first (a preview system's pre-release driver), a driver that is not an NVIDIA
    driver version as published, an image that ships another stack."""
    out = []
    recorded = c.stack.driver if accelerator_class(c.published[0]) == "nvidia" else None
    if recorded and not plausible_driver(recorded):
        out.append(
            f"recorded driver {recorded!r} is not an NVIDIA driver version as "
            "published (a typo in the "
            "submission?); it is not checked and the snippet does not use it"
        )
    elif (
        recorded
        and (floor := generation_min_driver(c.published[0]))
        and (parse_version(recorded) or 0) < (parse_version(floor[1]) or 0)  # type: ignore[operator]
    ):
        out.append(
            f"recorded driver {recorded} is below {floor[0]}'s first supporting "
            f"driver {floor[1]} (a "
            "pre-release driver of a preview system); the snippet asks nodes for >= "
            f"{driver or floor[1]}"
        )
    for image in sorted(set(_images(manifest))):
        mismatch = image_mismatch(image, c.stack)
        if mismatch:
            out.append(mismatch)
    return out


def _images(node: Any) -> list[str]:
    """Every container image a manifest names."""
    if isinstance(node, dict):
        found = [node["image"]] if isinstance(node.get("image"), str) else []
        return found + [i for v in node.values() for i in _images(v)]
    if isinstance(node, list):
        return [i for v in node for i in _images(v)]
    return []


def plausible_driver(text: str) -> bool:
    """An NVIDIA Linux driver version as NVIDIA writes it: a three-digit branch, then one or two
    numeric parts ("550.90.07", "570.26")."""
    return re.fullmatch(r"\d{3}(\.\d{1,3}){0,2}", text.strip()) is not None


def min_driver(knowledge: Knowledge, c: Candidate) -> str | None:
    """The driver the manifest asks of a node: the stack's CUDA release's minimum, raised to the
    accelerator generation's first supporting driver."""
    found = knowledge.min_driver(c.stack)
    generation = generation_min_driver(c.published[0])
    if generation and (
        found is None or (parse_version(generation[1]) or 0) > (parse_version(found) or 0)  # type: ignore[operator]
    ):
        found = generation[1]
    return found


def _gang(sl: Slice, c: Candidate, system: dict[str, str]) -> tuple[int, int] | None:
    """(nodes, accelerators per node) of a multi-node training job (placed as a gang), else None."""
    if sl.workload.family != MLPERF_TRAINING:
        return None
    nodes = int(system["nodes"]) if system.get("nodes", "").isdigit() else 1
    per_node = (
        int(system["accelerators_per_node"])
        if system.get("accelerators_per_node", "").isdigit()
        else max(1, c.count // nodes)
    )
    return nodes, per_node


def _score_unit(knowledge: Knowledge, sl: Slice) -> str:
    unit = sl.unit or ""
    if sl.hib and sl.workload.objective is Objective.COST:
        return (
            f"{unit.split('/')[0]} per {knowledge.prices.currency} "
            "(x3600/price per accelerator-hour)"
        )
    return ordering.score_unit(sl.unit, hib=sl.hib, per=" per accelerator" if sl.per_acc else "")


def _snippet(
    knowledge: Knowledge,
    sl: Slice,
    rank_no: int,
    c: Candidate,
    driver: str | None,
    gang: tuple[int, int] | None,
) -> tuple[dict[str, Any] | None, str | None]:
    """(manifest, None), or (None, why not) when no image is known or the workload's target
    cannot hold the row. The image is the one the knowledge base records for the stack, else the
    user's (``workload.image``); a multi-node row (nodes, per node) becomes the target's
    multi-node object (``stack_advisor.advisor.manifests.targets``)."""
    found = image_for(c.stack, knowledge.images)
    if found is None and sl.workload.image:
        found = (sl.workload.image, "given (--image)")
    if found is None:
        return None, missing_image(c.stack)
    manifest = placement_snippet(
        workload_name=snippet_name(
            sl.workload.benchmark, rank_no, c.stack_id, c.accelerator, c.count, c.placement
        ),
        stack=c.stack,
        accelerator=c.published[0],
        count=gang[1] if gang else c.count,
        placement=PlacementKind(c.placement),
        image=found[0],
        image_source=found[1],
        min_driver=driver,
    )
    return target_snippet(
        manifest,
        target=sl.workload.target,
        accelerator=c.published[0],
        nodes=gang[0] if gang else 1,
        per_node=gang[1] if gang else c.count,
        training=sl.workload.family == MLPERF_TRAINING,
        placement=PlacementKind(c.placement),
        min_driver=driver,
        framework=c.stack.framework,
    )


def evidence_of(table: ObservationTable, index: EvidenceIndex, rows: np.ndarray) -> Evidence:
    """What stands behind a figure: how many rows, their sources, rounds, submitters, when last
    seen and on which of our nodes."""

    def distinct(column: Any) -> list[Any]:
        return [column.vocab[int(c)] for c in sorted(set(column.codes[rows].tolist()))]

    return Evidence(
        count=len(rows),
        sources=sorted(distinct(table.source)),
        rounds=sorted({r for r in distinct(table.round) if r}, key=round_key),
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
    return sorted(
        {table.submitter.vocab[int(c)] for c in set(table.submitter.codes[ours].tolist())} - {""}
    )
