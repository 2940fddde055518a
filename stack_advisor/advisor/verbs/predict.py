"""``predict``: a figure for each configuration a user names, through the estimate hierarchy.

Queries arrive as users write them (published accelerator names, a framework as free text such as
``"TensorRT 8.6.0, CUDA 12.0"``, a lower-case scenario); ``canonical_query`` turns them into
canonical terms at this edge, and refuses — per query, never the whole batch — what cannot be
resolved, with the closest known names.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import replace
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from stack_advisor.advisor.estimate.drift import answer_round, as_of_error, moved
from stack_advisor.advisor.estimate.facts import canonical_accelerator
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.query import Estimate, Query, redefined_reason
from stack_advisor.advisor.estimate.references_class import NODE_MAX
from stack_advisor.advisor.knowledge.rules import RuleSet
from stack_advisor.advisor.names import canonical_benchmark
from stack_advisor.advisor.results import (
    Basis,
    Evidence,
    Factor,
    Interval,
    Prediction,
    PredictQuery,
)
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.verbs import serving
from stack_advisor.advisor.verbs.bounds import beyond_family_note, count_beyond_published
from stack_advisor.advisor.verbs.candidates import Candidate, catalogued, no_results_yet
from stack_advisor.advisor.verbs.explain import evidence_of
from stack_advisor.advisor.verbs.feasibility import RuleCheck, refusal
from stack_advisor.advisor.verbs.mixed_system import mixed_prediction, refused_prediction
from stack_advisor.advisor.verbs.placement import held_to_bare_metal
from stack_advisor.advisor.verbs.query_metric import default_metric, field_hint
from stack_advisor.catalog import load_catalog, resolve_accelerator
from stack_advisor.catalog.stack_facts import cuda_past_every_release
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import SoftwareStack
from stack_advisor.store.base import validation_message


def predict(
    knowledge: Knowledge, queries: list[PredictQuery] | list[dict[str, Any]]
) -> list[Prediction]:
    """Value with interval for each configuration, from the nearest evidence outward
    (``stack_advisor.advisor.estimate.index``), each labelled with its basis; a query that cannot be
    answered is refused alone, with the reason.

    Raises:
        InvalidInput: a malformed query (the message names queries.N.field).
    """
    return [
        q if isinstance(q, Prediction) else predict_one(knowledge.index, knowledge.rules, q)
        for q in judge_queries(queries)
    ]


def judge_queries(queries: list[PredictQuery] | list[Any]) -> list[PredictQuery | Prediction]:
    """Each query of a batch validated on its own, as users write them (the CLI's ``--query``
    file, the API's body): a query with a bad optional field (a placement ``vgp``, a count
    ``"eight"``) becomes its refusal, naming ``queries.N.field``, the value and the closest valid
    ones; the others stay queries to answer (``predict``, or in chunks with ``in_order``).

    Raises:
        InvalidInput: a query that is not a mapping (the message names queries.N).
    """
    judged: list[PredictQuery | Prediction] = []
    for i, q in enumerate(queries):
        if isinstance(q, PredictQuery):
            judged.append(q)
            continue
        try:
            judged.append(PredictQuery.model_validate(q))
        except ValidationError as exc:
            refused = _invalid_query(i, q, exc)
            if refused is None:  # no query left to answer: the request itself is malformed
                raise InvalidInput(validation_message(exc, prefix=f"queries.{i}")) from None
            judged.append(refused)
    return judged


def to_answer(judged: list[PredictQuery | Prediction]) -> list[PredictQuery]:
    """The queries ``judge_queries`` left to answer, in order."""
    return [q for q in judged if isinstance(q, PredictQuery)]


def in_order(
    judged: list[PredictQuery | Prediction], answers: list[Prediction]
) -> list[Prediction]:
    """The batch's predictions in its order: its refusals where ``judge_queries`` made them, the
    ``answers`` to ``to_answer(judged)`` in the other places."""
    left = iter(answers)
    return [q if isinstance(q, Prediction) else next(left) for q in judged]


INVALID = "(invalid)"  # stands for a required field given a bad value in a refused query's echo


def _invalid_query(i: int, raw: Any, exc: ValidationError) -> Prediction | None:
    """A query with a bad field (a placement ``vgp``, an accelerator ``""``) refused alone,
    naming the field, the value and the closest valid ones (a bad or missing required field
    echoed as ``INVALID``); None when the query is not a mapping."""
    if not isinstance(raw, dict):
        return None
    errors = exc.errors()
    bad = {str(e["loc"][0]) for e in errors if e.get("loc")}
    required = {k for k, f in PredictQuery.model_fields.items() if f.is_required()}
    kept = {k: v for k, v in raw.items() if k not in bad}
    try:
        query = PredictQuery.model_validate({**kept, **dict.fromkeys(bad & required, INVALID)})
    except ValidationError:
        return None
    hints = []
    for e in errors:
        expected = re.findall(r"'([^']*)'", str((e.get("ctx") or {}).get("expected", "")))
        close = difflib.get_close_matches(str(e.get("input")), expected, n=2, cutoff=0.5)
        if close:
            hints.append(f"{'.'.join(map(str, e['loc']))}: did you mean {' or '.join(close)}?")
        elif e["type"] == "extra_forbidden" and e.get("loc"):
            meant = field_hint(str(e["loc"][0]))
            if meant:
                hints.append(f"{e['loc'][0]}: did you mean {meant}?")
    reason = "; ".join([validation_message(exc, prefix=f"queries.{i}"), *hints])
    return refused_prediction(query, reason)


def parse_stack_text(
    framework: str | None,
    components: dict[str, str],
    benchmark: str | None = None,
    family: str | None = None,
) -> dict[str, str]:
    """Component name → version from the query's components and its framework field, which may
    be a bare name (``tensorrt``) or free text (``"TensorRT 8.6.0, CUDA 12.0"``); a text that
    lists several runtimes is read as ``benchmark``'s result ran it."""
    out = {k.lower(): str(v) for k, v in components.items() if v not in (None, "")}
    if not framework:
        return out
    from stack_advisor.catalog.stack_text import parse_components, parse_framework

    for name, version in parse_components(framework).items():
        out.setdefault(name, version)
    framework_name, framework_version = (
        parse_framework(framework, benchmark, family)
        if benchmark and family
        else parse_framework(framework)
    )
    if framework_name and framework_version:
        out.setdefault(framework_name, framework_version)
    return out


def _closest(word: str, known: list[str]) -> str:
    return _closest_cached(word, tuple(known))


@lru_cache(maxsize=1024)
def _closest_cached(word: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, known, n=3, cutoff=0.5) or difflib.get_close_matches(
        word.lower(), [k.lower() for k in known], n=3, cutoff=0.5
    )
    return f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(known[:8])}"


def _catalogue_scenario(scenario: str) -> list[str]:
    """A scenario the catalogue knows but this benchmark has no results of (Interactive before
    v5.0): passed on, so the estimate derives it or refuses saying what is missing."""
    return [scenario] if scenario in load_catalog().scenarios else []


def canonical_query(index: EvidenceIndex, q: PredictQuery) -> Query | str:
    """The query in canonical terms, or why it cannot be answered."""
    benchmarks = index.benchmarks(q.family)
    if q.benchmark not in benchmarks:
        redefined = redefined_reason(q.family, q.benchmark, index.slices)
        if redefined is None and catalogued(q.benchmark, q.family):
            return no_results_yet(q.benchmark, q.family)
        return redefined or (
            f"unknown benchmark: {q.benchmark!r} is not in the knowledge base for {q.family}"
            + _closest(q.benchmark, benchmarks)
        )
    scenarios = index.scenarios(q.family, q.benchmark)
    scenario = q.scenario if q.scenario is not None else q.parameters.get("scenario")
    if scenarios == [""] and scenario:  # MLPerf Training: one figure per benchmark
        return f"scenario: {q.benchmark} ({q.family}) has no scenarios ({scenario!r}); leave it out"
    if q.metric is None:  # predict names one before it asks (``query_metric.default_metric``)
        return f"metric needed: name one of {', '.join(index.metrics(q.family, q.benchmark))}"
    if scenario is None:
        with_metric = [s for s in scenarios if q.metric in index.metrics(q.family, q.benchmark, s)]
        if not with_metric:
            recorded = sorted(
                {m for s in scenarios for m in index.metrics(q.family, q.benchmark, s)}
            )
            return (
                f"unknown metric: {q.metric!r} never recorded for {q.benchmark}; recorded: "
                + ", ".join(recorded)
            )
        if len(with_metric) != 1:
            return (
                f"scenario needed: name one for {q.benchmark} ({', '.join(with_metric)} "
                f"record {q.metric})"
            )
        scenario = with_metric[0]
    match = [s for s in scenarios if s.lower() == str(scenario).lower()] or _catalogue_scenario(
        str(scenario)
    )
    if not match:
        return f"unknown scenario: {scenario!r} for {q.benchmark}" + _closest(
            str(scenario), scenarios
        )
    as_of_problem = as_of_error(q.as_of)
    if as_of_problem:
        return as_of_problem
    divisions = index.divisions(q.family, q.benchmark)
    division = str(
        q.parameters.get("division") or ("closed" if "closed" in divisions else divisions[0])
    )
    query = Query(
        family=q.family,
        benchmark=q.benchmark,
        scenario=match[0],
        metric=q.metric,
        division=division,
        accelerator=canonical_accelerator(q.accelerator),
        count=q.accelerator_count,
        placement=q.placement.value,
        components=parse_stack_text(q.framework, q.components, q.benchmark, q.family),
        raw_accelerator=q.accelerator,
        framework=q.framework or "",
        as_of=q.as_of,
    )
    return _round_problem(index, query) or query


def _round_problem(index: EvidenceIndex, query: Query) -> str | None:
    """Why the round ``query.as_of`` names cannot be answered for (one that does not exist, one
    too far ahead): this query's refusal alone; None when it can."""
    try:
        index.round_drift.target(query, query.as_of)
    except InvalidInput as exc:
        if not str(exc).startswith("as_of:"):
            raise  # the server's own setting (ADVISOR_TODAY), not the query's
        return str(exc)
    return None


def predict_one(index: EvidenceIndex, rules: RuleSet, q: PredictQuery) -> Prediction:
    """One query's answer. A family name (``H100``), which ``recommend`` takes as every part of
    the family, is answered for the member the knowledge base holds most results of on the
    benchmark, and the answer says so."""
    member = _family_member(index, q)
    if member is None:
        return _predict_named(index, rules, q)
    members = [member[0], *member[1]]
    chosen_for = member[2]
    refused: list[tuple[str, Prediction]] = []
    for name in members:  # the member with the most results first, then the catalogue's order
        answer = _predict_named(index, rules, q.model_copy(update={"accelerator": name}))
        if answer.basis is Basis.UNSUPPORTED:
            refused.append((name, answer))
            continue
        why = (
            chosen_for
            if not refused
            else f"the first member that can be answered ({refused[0][0]}: refused)"
        )
        others = [m for m in members if m != name]
        answer.warnings.insert(
            0,
            f"accelerator: {q.accelerator!r} names a family; answered for {name}, {why} "
            f"(others: {', '.join(others) or 'none'})",
        )
        return answer
    first = refused[0][1]
    said = {(a.reason or "").replace(name, "{part}") for name, a in refused}
    if len(said) == 1:  # one reason for every member
        reason = first.reason or ""
        if refused[0][0] in reason:  # the parts' own (no compute figure): each named
            reason = (
                f"accelerator: {q.accelerator!r} names a family ({', '.join(members)}), each "
                f"refused alike: {reason}"
            )
        # else the query's own (its as_of, its metric): as it was said
        return refused_prediction(q, reason, first.warnings, first.accelerator)
    reason = (
        f"accelerator: {q.accelerator!r} names a family none of whose members can be answered: "
    )
    reason += "; ".join(f"{name}: {answer.reason}" for name, answer in refused)
    return refused_prediction(q, reason, first.warnings, first.accelerator)


def _family_member(index: EvidenceIndex, q: PredictQuery) -> tuple[str, list[str], str] | None:
    """(the family member to answer for, the other members, why that one), or None when the
    query names one part (or nothing the catalogue knows: refused later with its
    suggestions)."""
    match = resolve_accelerator(q.accelerator)
    if match.resolved or match.refusal != "family" or not match.suggestions:
        return None
    if index.holds_accelerator(canonical_accelerator(q.accelerator)):
        return None  # results stored under this very name (an import that could not tell)

    # the benchmark as the answer reads it (``ResNet-50 v1.5`` is resnet50): the member with the
    # most results on it must not depend on how the query spells it
    benchmark = canonical_benchmark(q.benchmark, q.family) or q.benchmark

    def held(name: str) -> tuple[int, int, int]:
        acc = canonical_accelerator(name)
        on_bench = sum(len(by.get(acc, ())) for k, by in index.slices.items() if k[1] == benchmark)
        return (
            on_bench,
            sum(len(by.get(acc, ())) for by in index.slices.values()),
            editions[_edition(name)],
        )

    members = list(match.suggestions)
    editions = _edition_results(index, {_edition(m) for m in members} - {""})
    # ties: the edition the knowledge base holds most results of on other families (the
    # Server Edition submitters ran, for an RTX PRO 4500 never measured), then the catalogue's
    best = max(members, key=held)
    on_bench, anywhere, of_edition = held(best)
    why = f"the member with the most results on {benchmark}"
    if not on_bench and not anywhere and of_edition:
        why = f"no member measured: the edition other parts were measured in ({_edition(best)})"
    return best, [m for m in members if m != best], why


def _edition(name: str) -> str:
    entry = resolve_accelerator(name).entry
    return (entry.edition or "") if entry is not None else ""


def _edition_results(index: EvidenceIndex, editions: set[str]) -> dict[str, int]:
    """edition → results the knowledge base holds of parts of that edition ("" → 0)."""
    out = dict.fromkeys(editions, 0) | {"": 0}
    if not editions:
        return out
    for by in index.slices.values():
        for acc, rows in by.items():
            found = _edition(index.raw_names.get(acc, acc))
            if found in out and found:
                out[found] += len(rows)
    return out


def _predict_named(index: EvidenceIndex, rules: RuleSet, q: PredictQuery) -> Prediction:
    from stack_advisor.advisor.names import canonical_query as catalogue_names

    system = resolve_accelerator(q.accelerator)
    named, problems = catalogue_names(
        q, index.known_benchmarks(), index.holds_accelerator(canonical_accelerator(q.accelerator))
    )
    if named.metric is None and not problems:
        metric, said = default_metric(index, named)
        if metric is None and said:
            return refused_prediction(q, said)
        if metric is not None:
            answer = _predict_named(index, rules, q.model_copy(update={"metric": metric}))
            if answer.basis is not Basis.UNSUPPORTED:  # a refusal's reason comes first, alone
                answer.warnings.insert(0, said)
            return answer
    if system.kind == "mixed" and system.resolved:
        # the system in the catalogue's name, at its own count where the query gives none
        named = named.model_copy(update={"accelerator": system.key})
        if "accelerator_count" not in q.model_fields_set:
            total = sum((part.nodes or 1) * part.per_node for part in system.parts)
            named = named.model_copy(update={"accelerator_count": total})
        return _published_system(index, named) or mixed_prediction(
            index, rules, q, system, predict_one
        )
    cq: Query | str = "; ".join(problems) if problems else canonical_query(index, named)
    if isinstance(cq, str):
        return refused_prediction(q, cq)
    q = named  # answers echo the query in catalogue names: what each name was resolved to
    beyond = count_beyond_published(index.table, cq.count, "accelerator_count") or refusal(
        RuleCheck(rules),
        cq.benchmark,
        configuration(cq, q.accelerator),
        cq.count,
        cq.components.get("driver"),
    )
    # the nodes' driver is judged above, as ``recommend --driver`` is: it picks no results
    stack_only = replace(cq, components={k: v for k, v in cq.components.items() if k != "driver"})
    est = Estimate(Basis.UNSUPPORTED, reason=beyond) if beyond else index.estimate(stack_only)
    if est.basis is not Basis.UNSUPPORTED:
        est = held_to_bare_metal(index, stack_only, est, index.higher_is_better(cq.slice))
    warnings = list(est.notes)
    if q.components or q.framework:
        warnings.extend(v.message for v in rules.check_components(dict(cq.components)))
        warnings.extend(filter(None, [cuda_past_every_release(cq.components.get("cuda"))]))
    if est.basis is Basis.UNSUPPORTED:
        why = [est.reason or "unsupported", *warnings]
        return refused_prediction(q, est.reason, why, cq.accelerator)
    if cq.count > NODE_MAX and index.higher_is_better(cq.slice):  # more than one usual node
        warnings.extend(filter(None, [beyond_family_note(index, cq.family, cq.count)]))
    if est.basis is not Basis.OBSERVED and index.higher_is_better(cq.slice):
        warnings.extend(serving.beyond_limits(index, stack_only))
    return _answer(index, q, cq, est, warnings)


def _published_system(index: EvidenceIndex, named: PredictQuery) -> Prediction | None:
    """A heterogeneous system the knowledge base holds as published, asked as it ran: answered
    from its own results (observed), not as the sum of its parts; None otherwise."""
    cq = canonical_query(index, named)
    if isinstance(cq, str) or cq.accelerator not in index.slices.get(cq.slice, {}):
        return None
    est = index.estimate(cq)  # observed only where its own results match the query
    if est.basis is not Basis.OBSERVED:
        return None
    return _answer(index, named, cq, est, list(est.notes))


def configuration(cq: Query, published: str) -> Candidate:
    """The query as the candidate ``recommend`` would judge: the part as named, its stack from
    the components (the runtime the framework field names, else the first one that is not a
    base component, as the framework); a ``driver`` component is the nodes' driver, as
    ``--driver`` is recommend's, not part of the stack."""
    comps = {k: v for k, v in cq.components.items() if k != "driver"}
    base = {k: comps[k] for k in ("cuda", "cudnn", "nccl", "tensorrt", "python") if k in comps}
    named = cq.framework.split()[0].lower() if cq.framework.split() else ""
    others = [k for k in comps if k not in base]
    framework = named if named in others else next(iter(others), None)
    stack = SoftwareStack(
        **base,
        framework=framework,
        framework_version=comps.get(framework) if framework else None,
        extra={k: v for k, v in comps.items() if k not in base and k != framework},
    )
    return Candidate(
        accelerator=cq.accelerator,
        placement=cq.placement,
        stack_id=stack.stack_id,
        stack=stack,
        rows=[],
        observed=False,
        published=[published],
    )


def _answer(
    index: EvidenceIndex, q: PredictQuery, cq: Query, est: Estimate, warnings: list[str]
) -> Prediction:
    assert est.value is not None and est.low is not None and est.high is not None
    hib = index.higher_is_better(cq.slice)
    scale = cq.count if hib else 1
    evidence = (
        evidence_of(index.table, index, est.rows)
        if est.basis is not Basis.TRANSFERRED
        else Evidence(count=0, last_seen=index.last_seen(est.rows))
    )
    if est.basis is Basis.OBSERVED and evidence.count == 1:
        warnings.append(
            "a single observation: the interval is the measurement spread the knowledge base "
            "shows for repeated configurations"
        )
    answered = answer_round(index.round_drift, cq, cq.as_of, est)
    late = _date_past_rounds(cq, index.round_drift.target(cq, cq.as_of))
    if late:
        warnings.append(late)
    extra: dict[str, Any] = {}
    return Prediction(
        query=q,
        value=est.value * scale,
        interval=Interval(low=est.low * scale, high=est.high * scale),
        # a measured figure carried to another round (a drift, a forecast) is not as measured
        observed=est.basis is Basis.OBSERVED and not moved(est),
        basis=est.basis,
        confidence=round(est.confidence, 3),
        accelerator=cq.accelerator,
        references=est.references,
        factors=[Factor(name=n, value=v, effect=round(e, 4)) for n, v, e in est.factors],
        evidence=evidence,
        warnings=warnings,
        round=answered,
        **extra,
    )


STALE_DAYS = 200  # past a round's publication by more than a round's spacing (~6 months)


def _date_past_rounds(cq: Query, target: float) -> str:
    """A note where ``as_of`` is a date (2027-06-01) well past the publication of the round it
    names (``target``: the newest the catalogue dates by then, or the knowledge base's own
    newer one): a later round may be out by then that neither holds ("" otherwise, and for
    "today"). The round named, not the answer's: a named stack's answer is of the round it was
    measured in."""
    from datetime import date

    from stack_advisor.advisor.estimate.as_of import DATE_SHAPE, published_on
    from stack_advisor.advisor.estimate.drift_prior import round_label

    if target <= 0 or not re.fullmatch(DATE_SHAPE, cq.as_of):
        return ""
    published = published_on(cq.family, target)
    if published is None or (date.fromisoformat(cq.as_of) - published).days <= STALE_DAYS:
        return ""
    named = round_label(target)
    return (
        f"as_of {cq.as_of}: the newest round the catalogue dates is {named} ({published}); a "
        f"later one may be out by then that it does not hold: answered for {named}"
    )
