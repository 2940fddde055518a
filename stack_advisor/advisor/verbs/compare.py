"""Stack A against stack B (paired within a round, and what upgrading A's framework version to
B's was worth across rounds), the stacks one accelerator ran a benchmark with, and regressions
across component versions. Each verb takes ``(Knowledge, typed request)`` as ``recommend`` and
``predict`` do (``stack_advisor.advisor.verbs.compare_requests``)."""

from __future__ import annotations

import math
from collections import defaultdict
from itertools import pairwise
from typing import Any

import numpy as np

from stack_advisor.advisor.estimate.analysis import (
    PAIR_KEY,
    bootstrap_interval,
    groups,
    mann_whitney,
    speed_ratio,
)
from stack_advisor.advisor.estimate.drift import as_of_error, round_label
from stack_advisor.advisor.estimate.facts import canonical_accelerator
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.query import SliceKey, redefined_reason
from stack_advisor.advisor.estimate.scenario import derived_base
from stack_advisor.advisor.estimate.stack_compare import rank_stacks, upgrade_text, version_matches
from stack_advisor.advisor.estimate.stack_effect import effects_of, framework_id
from stack_advisor.advisor.knowledge.rules import stack_components
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.names import (
    canonical_benchmark,
    canonical_framework,
    canonical_scenario,
    matching_accelerators,
    scenario_in_name,
)
from stack_advisor.advisor.results import Comparison, Regression
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.verbs.candidates import unheld_benchmark
from stack_advisor.advisor.verbs.compare_requests import (
    RegressionsRequest,
    StackComparisonRequest,
    StackRank,
    StackRankingRequest,
    StackSelector,
)
from stack_advisor.advisor.workload import MLPERF_INFERENCE
from stack_advisor.catalog import metric_unit, resolve_accelerator, resolve_benchmark
from stack_advisor.catalog.rounds import release_of
from stack_advisor.catalog.stack_facts import ngc_release_of
from stack_advisor.schema.checks import shown
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.models import SoftwareStack


def selector_components(selector: str | dict[str, str]) -> dict[str, str] | None:
    """component → version of a component=version selector; None for a stack id."""
    if isinstance(selector, str) and selector.startswith("stk-"):
        return None
    if not isinstance(selector, str):
        return {k.lower(): str(v) for k, v in selector.items()}
    want: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in selector.split(","))):
        name, sep, version = part.partition("=")
        if not sep or not name.strip() or not version.strip():
            raise InvalidInput(f"stack selector: {part!r} is not component=version{SELECTOR_FORMS}")
        want[name.strip().lower()] = version.strip()
    if not want:  # "," or " , ": nothing named would match every stack
        raise InvalidInput(
            f"stack selector: {selector!r} names no component=version pair{SELECTOR_FORMS}"
        )
    return want


SELECTOR_FORMS = " (e.g. 'tensorrt=8.6.0,cuda=12.0') nor a stack id (stk-...)"


def _stack_matches(table: ObservationTable, selector: str | dict[str, str]) -> set[int]:
    """Stack codes a selector picks: a stack id, or component=version pairs (all must match)."""
    want = selector_components(selector)
    if want is None:
        code = table.stack.code(str(selector))
        if code < 0:
            raise NotFound(f"stack: no stack with id {selector!r}")
        return {code}
    want = {_component_name(k): v for k, v in want.items()}
    out = set()
    for code, sid in enumerate(table.stack.vocab):
        comps = recorded_components(table.stacks[sid])
        if all(_same_version(comps.get(k), v) for k, v in want.items()):
            out.add(code)
    if not out:
        named = ", ".join(f"{k}={shown(v)}" for k, v in want.items())
        raise NotFound(f"stack: no stack in the knowledge base matches {named}")
    return out


def recorded_components(stack: SoftwareStack) -> dict[str, str]:
    """What a selector or a regression search can name of a stack: its components (driver,
    cuda, ... and its framework by name), the extras a stack text names (rocm, dali, ...), the
    framework's name (``framework``) and its version (``framework_version``, written with the
    framework's name, so versions of two frameworks are never compared)."""
    comps = {k.lower(): v for k, v in stack_components(stack).items() if v}
    for key, value in stack.extra.items():
        if isinstance(value, str) and value and key.lower() not in comps:
            comps[key.lower()] = value
    if stack.framework:
        comps.setdefault("framework", stack.framework.lower())
        if stack.framework_version:
            comps["framework_version"] = f"{stack.framework.lower()} {stack.framework_version}"
    return comps


def _component_name(text: str) -> str:
    """'trt' → 'tensorrt'; 'framework' stays (a selector may name the framework itself)."""
    if text.strip().lower() == "framework":
        return "framework"
    try:
        return canonical_framework(text)
    except ValueError as exc:
        raise InvalidInput(f"stack selector: {exc}") from None


def _same_version(have: str | None, selector: str) -> bool:
    """A stored version a selector names: the same text, or the same release as far as the
    selector goes ('10.2' picks 10.2.0.19)."""
    return have is not None and (
        have.lower() == selector.lower() or version_matches(have, selector)
    )


def upgrade_effect(
    index: EvidenceIndex,
    stack_a: str | dict[str, str],
    stack_b: str | dict[str, str],
    *,
    benchmark: str,
    accelerator: str | None,
    scenario: str | None,
    family: str,
) -> str | None:
    """What upgrading from A to B was worth across rounds
    (``stack_advisor.advisor.estimate.stack_compare``), where A and B name one framework at two
    versions; None where they do not."""
    a, b = selector_components(stack_a), selector_components(stack_b)
    if not a or not b:
        return None
    changed = [k for k in a if k in b and a[k] != b[k] and framework_id(k)]
    if len(changed) != 1:
        return None
    fw = framework_id(changed[0])
    assert fw is not None
    accelerators = None
    if accelerator:
        accelerators = {
            canonical_accelerator(n)
            for n in matching_accelerators(index.table.accelerator.vocab, accelerator)
        }
    return upgrade_text(
        effects_of(index),
        family,
        fw,
        a[changed[0]],
        b[changed[0]],
        benchmark=benchmark,
        scenario=scenario,
        accelerators=accelerators,
        where=accelerator or "any accelerator",
    )


def compare_stacks(knowledge: Knowledge, request: StackComparisonRequest) -> Comparison:
    """A against B paired within a round, and what upgrading A's framework version to B's was
    worth across rounds (``upgrade_effect``). Names as users write them.

    Raises:
        InvalidInput: an unknown scenario or stack component, or a scenario the benchmark's name
            contradicts.
        NotFound: no stack or no observation matches.
    """
    table, rq = knowledge.table, request
    benchmark, scenario = _slice_names(rq.benchmark, rq.scenario, rq.family)
    _require_held(table, benchmark, rq.family)
    a_named, b_named = selector_components(rq.stack_a), selector_components(rq.stack_b)
    if a_named == b_named and (a_named is not None or rq.stack_a == rq.stack_b):
        # every result would be paired with itself: "no significant difference" says nothing
        raise InvalidInput(f"stack_a and stack_b name the same stack ({_label(rq.stack_a)})")
    a_codes, b_codes = _stack_matches(table, rq.stack_a), _stack_matches(table, rq.stack_b)
    effect = upgrade_effect(
        knowledge.index,
        rq.stack_a,
        rq.stack_b,
        benchmark=benchmark,
        accelerator=rq.accelerator,
        scenario=scenario,
        family=rq.family,
    )
    rows, metric = _compared_rows(table, rq, benchmark, scenario, (a_codes, b_codes))
    in_a = np.isin(table.stack.codes[rows], list(a_codes))
    in_b = np.isin(table.stack.codes[rows], list(b_codes))
    ratios, norm_a, norm_b = _paired_ratios(table, rows[in_a | in_b], a_codes, b_codes)
    # per accelerator for throughputs: a 32-GPU system's total beside an 8-GPU one's says nothing
    per = knowledge.index.unit
    a_rows, b_rows = _on_common_parts(table, rows[in_a], rows[in_b])
    a_all, b_all = per[a_rows], per[b_rows]
    ratio = float(np.median(ratios)) if ratios else None
    p = mann_whitney(np.asarray(norm_a), np.asarray(norm_b)) if ratios else None
    return Comparison(
        accelerator=rq.accelerator,
        benchmark=benchmark,
        metric=metric,
        stack_a=_label(rq.stack_a),
        stack_b=_label(rq.stack_b),
        pairs=len(ratios),
        ratio=ratio,
        interval=bootstrap_interval(np.asarray(ratios)) if ratios else None,
        p_value=p,
        a_count=len(a_all),
        b_count=len(b_all),
        a_median=float(np.median(a_all)) if len(a_all) else None,
        b_median=float(np.median(b_all)) if len(b_all) else None,
        verdict=_verdict(ratio, p, len(ratios)),
        stack_effect=effect,
    )


def _on_common_parts(
    table: ObservationTable, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A's and B's rows on the accelerators (canonical) both ran, where there are any: a median
    of B on B200 beside A's on H100 measures the parts, not the stacks."""
    canon = [canonical_accelerator(str(n)) for n in table.accelerator.vocab]
    on_a = {canon[c] for c in table.accelerator.codes[a].tolist()}
    on_b = {canon[c] for c in table.accelerator.codes[b].tolist()}
    common = on_a & on_b
    if not common:
        return a, b

    def keep(rows: np.ndarray) -> np.ndarray:
        return rows[[canon[c] in common for c in table.accelerator.codes[rows].tolist()]]

    return keep(a), keep(b)


def _label(sel: StackSelector) -> str:
    return sel if isinstance(sel, str) else ",".join(f"{k}={v}" for k, v in sel.items())


def _compared_rows(
    table: ObservationTable,
    rq: StackComparisonRequest,
    benchmark: str,
    scenario: str | None,
    codes: tuple[set[int], set[int]],
) -> tuple[np.ndarray, str]:
    """The rows of the benchmark (on the accelerator) in one metric: the one asked, else the
    throughput most of A's and B's rows are in (any metric where none is a throughput).

    Raises:
        NotFound: no observation of the benchmark (on the accelerator).
    """
    params: dict[str, Any] = {"scenario": scenario} if scenario else {}
    mask, _ = table.benchmark_mask(rq.family, benchmark, params)
    accelerator, metric = rq.accelerator, rq.metric
    if accelerator:
        mask &= table.accelerator.mask(matching_accelerators(table.accelerator.vocab, accelerator))
    if metric:
        mask &= table.metric.codes == table.metric.code(metric)
    rows = np.flatnonzero(mask)
    if not len(rows):
        pinned = f" in scenario {scenario}" if scenario else ""
        on = f" on {shown(accelerator)}" if accelerator else ""
        of = f" of metric {shown(metric)}" if metric else ""
        raise NotFound(f"no observations of {rq.family}/{benchmark}{pinned}{on}{of}")
    if metric is not None:
        return rows, metric
    either = np.isin(table.stack.codes[rows], list(codes[0] | codes[1]))
    cand = rows[either] if either.any() else rows
    # a throughput where the rows hold one (an LLM Server result's TTFT and TPOT figures
    # outnumber its tokens/s)
    faster = cand[table.higher_is_better[cand]]
    cand = faster if len(faster) else cand
    metric = table.metric.vocab[int(np.bincount(table.metric.codes[cand]).argmax())]
    return rows[table.metric.codes[rows] == table.metric.code(metric)], metric


def _paired_ratios(
    table: ObservationTable, rows: np.ndarray, a_codes: set[int], b_codes: set[int]
) -> tuple[list[float], list[float], list[float]]:
    """B's speed over A's in each group both ran in (same round, benchmark, metric, accelerator,
    count, placement), and each side's figures normalised by A's median there."""
    ratios: list[float] = []
    norm_a: list[float] = []
    norm_b: list[float] = []
    for idx in groups(table, rows, (*PAIR_KEY, "placement")).values():
        sa = np.isin(table.stack.codes[idx], list(a_codes))
        sb = np.isin(table.stack.codes[idx], list(b_codes))
        if not sa.any() or not sb.any():
            continue
        hib = bool(table.higher_is_better[idx[0]])
        va, vb = table.value[idx[sa]], table.value[idx[sb]]
        ratios.append(speed_ratio(float(np.median(vb)), float(np.median(va)), hib))
        ref = float(np.median(va))
        norm_a.extend((va / ref) if hib else (ref / va))
        norm_b.extend((vb / ref) if hib else (ref / vb))
    return ratios, norm_a, norm_b


def _verdict(ratio: float | None, p: float | None, pairs: int) -> str:
    if ratio is None:
        return "no paired results (same round, benchmark, metric, accelerator, count, placement)"
    if p is not None and p < 0.05:
        return (
            f"B is {'faster' if ratio > 1 else 'slower'}: {ratio:.3f}x A over {pairs} "
            f"pairs (p={p:.3g})"
        )
    return f"no significant difference: {ratio:.3f}x over {pairs} pairs" + (
        f" (p={p:.3g})" if p is not None else ""
    )


def find_regressions(knowledge: Knowledge, request: RegressionsRequest) -> list[Regression]:
    """Within each (round, benchmark, metric, accelerator, count, submitter) group, compare
    consecutive versions of the component; report where the newer one is slower with
    Mann-Whitney p < alpha.

    Raises:
        NotFound: no stack records the component.
    """
    table, rq = knowledge.table, request
    component = rq.component.lower()
    versions = [recorded_components(table.stacks[sid]).get(component) for sid in table.stack.vocab]
    if not any(versions):
        raise NotFound(f"component: no stack in the knowledge base records {component!r}")
    mask = np.ones(table.n, dtype=bool)
    if rq.accelerator:
        vocab = table.accelerator.vocab
        mask &= table.accelerator.mask(matching_accelerators(vocab, rq.accelerator))
    if rq.benchmark:
        mask &= table.bench_name.codes == table.bench_name.code(
            _held_benchmark(table, rq.benchmark)
        )
    out = []
    # one submitter's systems: across submitters a version changes with the whole system (a
    # university's slower B200 had read as a driver regression of NVIDIA's)
    for key, idx in groups(table, np.flatnonzero(mask), (*PAIR_KEY, "submitter")).items():
        by_version: dict[str, list[float]] = defaultdict(list)
        for r in idx:
            v = versions[table.stack.codes[r]]
            if v:
                by_version[v].append(float(table.value[r]))
        out.extend(_group_regressions(table, rq, component, key, idx, by_version))
    return sorted(out, key=lambda r: r.change)


def _held_benchmark(table: ObservationTable, text: str) -> str:
    """The knowledge base's name of a benchmark as users write it (``sdxl``).

    Raises:
        NotFound: no result of it is held, with the closest names held.
    """
    names = sorted({str(n) for n in table.bench_name.vocab})
    match = resolve_benchmark(text)
    name = match.id if match.resolved else text.strip()
    if name in names:
        return name
    raise NotFound(unheld_benchmark(name, match.family or MLPERF_INFERENCE, names))


def _require_held(table: ObservationTable, benchmark: str, family: str) -> None:
    """Raises: NotFound naming the closest benchmarks held (or the catalogue's model without
    results yet) where ``family`` holds no result of ``benchmark`` (a typo had read 'no
    observations of mlperf-inference/resnet5', or 'name one (the scenarios resnet5 ran: )')."""
    names = sorted({b.name for b in table.benchmarks.values() if b.family == family})
    if benchmark not in names:
        raise NotFound(unheld_benchmark(benchmark, family, names))


def _group_regressions(
    table: ObservationTable,
    rq: RegressionsRequest,
    component: str,
    key: tuple[int, ...],
    idx: np.ndarray,
    by_version: dict[str, list[float]],
) -> list[Regression]:
    """The regressions between consecutive versions (with ``min_count`` results each) of one
    group."""
    ordered = sorted(
        (v for v in by_version if _release(v) and len(by_version[v]) >= rq.min_count),
        key=lambda v: (_named(v), _release(v)),
    )
    hib = bool(table.higher_is_better[idx[0]])
    out = []
    for old, new in pairwise(ordered):
        if not an_upgrade(old, new):
            continue
        a, b = np.asarray(by_version[old]), np.asarray(by_version[new])
        change = speed_ratio(float(np.median(b)), float(np.median(a)), hib)
        p = mann_whitney(a, b)
        if change < 1 and p is not None and p < rq.alpha:
            bench = table.benchmarks[table.benchmark.vocab[key[1]]]
            out.append(
                Regression(
                    component=component,
                    older=old,
                    newer=new,
                    benchmark=bench.name,
                    scenario=bench.scenario,
                    metric=table.metric.vocab[key[2]],
                    accelerator=table.accelerator.vocab[key[3]],
                    submitter=table.submitter.vocab[key[5]] or None,
                    older_median=float(np.median(a)),
                    newer_median=float(np.median(b)),
                    change=change,
                    older_count=len(a),
                    newer_count=len(b),
                    p_value=p,
                )
            )
    return out


def an_upgrade(old: str, new: str) -> bool:
    """Whether ``new`` follows ``old`` as a version of one thing: one framework's
    (framework_version), both versions or both NGC container releases (``pytorch 25.04`` is a
    container, not a PyTorch after 2.8), at releases neither of which is the other written
    shorter (``9.4.0.58`` and ``9.4.0.58-1`` are one release packaged twice; ``580.82`` is
    ``580.82.07`` abbreviated)."""
    a, b = _release(old), _release(new)
    if _named(old) != _named(new) or a[: len(b)] == b or b[: len(a)] == a:
        return False
    tags = [ngc_release_of(v.rsplit(" ", 1)[-1]) is not None for v in (old, new)]
    return tags[0] == tags[1]


def _named(version: str) -> str:
    """The framework a ``framework_version`` value names ("tensorrt 10.2": "tensorrt"), else ""."""
    return version.rsplit(" ", 1)[0] if " " in version else ""


def _release(version: str) -> tuple[int, ...]:
    """A version's release numbers (a ``framework_version`` value's own), () when none."""
    return release_of(version.rsplit(" ", 1)[-1]) or ()


def stack_ranking(knowledge: Knowledge, request: StackRankingRequest) -> list[StackRank]:
    """The stacks one accelerator ran a benchmark with, fastest first, older versions carried
    forward by the upgrade factor (``stack_advisor.advisor.estimate.stack_compare.rank_stacks``).
    Names as users write them (``sdxl``, ``offline``, ``llama2-70b-interactive-99``); no metric: the
    slice's throughput (or its only metric).

    Raises:
        InvalidInput: ``as_of`` is no round, date or word; an unknown scenario, or one the
            benchmark's name contradicts.
        NotFound: the accelerator never ran that benchmark slice (the message lists what did).
    """
    index, rq = knowledge.index, request
    problem = None if rq.as_of is None else as_of_error(rq.as_of)
    if problem:  # the request's own fields first: a bad as_of is refused whatever the slice
        raise InvalidInput(problem)
    family, division, accelerator = rq.family, rq.division, rq.accelerator
    _require_known(index, family, division)
    benchmark, scenario = _slice_names(rq.benchmark, rq.scenario, family)
    redefined = redefined_reason(family, benchmark, index.slices)
    if redefined:
        raise NotFound(redefined)
    _require_held(knowledge.table, benchmark, family)
    held = sorted({k[2] for k in index.slices if k[:2] == (family, benchmark)})
    if held == [""]:  # MLPerf Training: a time to train, of one system size each
        raise InvalidInput(
            f"{family} {benchmark}: a stack ranking compares per-accelerator figures, and a time "
            "to train is a whole system's (of every size published); ask `advisor recommend "
            f"--family {family} --benchmark {benchmark} --gpus N` or `advisor predict` at one count"
        )
    if scenario is None:
        raise InvalidInput(
            f"scenario: name one (the scenarios {benchmark} ran: "
            f"{', '.join(sorted({k[2] for k in index.slices if k[:2] == (family, benchmark)}))})"
        )
    metric = rq.metric or _slice_metric(index, (family, benchmark, scenario), division)
    metrics = sorted({k[3] for k in index.slices if k[:3] == (family, benchmark, scenario)})
    if metrics and metric not in metrics:  # a value that names nothing held: the request's fault
        raise InvalidInput(
            f"metric: {metric!r} is not recorded for {benchmark} {scenario}; recorded: "
            f"{', '.join(metrics)}"
        )
    acc = canonical_accelerator(accelerator)
    key = (family, benchmark, scenario, metric, division)
    by_acc = index.slices.get(key)
    if by_acc is None:
        raise NotFound(
            f"no observations of {family}/{benchmark} {scenario} {metric} ({division} division)"
            + _derived_hint(index, (family, benchmark, scenario), metric, division)
        )
    if acc not in by_acc:
        found = resolve_accelerator(accelerator)
        members = [m for m in found.suggestions if canonical_accelerator(m) in by_acc]
        if not found.resolved and found.refusal == "family" and members:
            raise NotFound(
                f"accelerator: {accelerator!r} names a family; name the member whose stacks to "
                f"rank: {', '.join(members)} ran {benchmark} {scenario}".rstrip()
            )
        raise NotFound(
            f"accelerator: {accelerator!r} ({acc}) never ran {benchmark} {scenario}".rstrip()
            + f"; ran it: {', '.join(sorted(by_acc)[:12])}"
        )
    upto = _as_of_round(index, key, acc, rq.as_of)
    unit = _per_accelerator_unit(key, index.higher_is_better(key))
    return [
        StackRank.model_validate({**row, "unit": unit})
        for row in rank_stacks(effects_of(index), key, acc, upto)
    ]


def _require_known(index: EvidenceIndex, family: str, division: str) -> None:
    """Raises InvalidInput where ``family`` or ``division`` names nothing the knowledge base
    holds (a value that names nothing is the request's fault, as predict's fields are)."""
    families = sorted({k[0] for k in index.slices})
    if family not in families:
        raise InvalidInput(f"family: {family!r} is not one of {', '.join(families)}")
    divisions = sorted({k[4] for k in index.slices if k[0] == family and k[4]})
    if division not in divisions:
        raise InvalidInput(f"division: {division!r} is not one of {', '.join(divisions)}")


def _per_accelerator_unit(key: SliceKey, higher_is_better: bool) -> str | None:
    """The unit a stack ranking's figures are in: a throughput per accelerator (each system's
    figure over its count), another metric as measured."""
    unit = metric_unit(key[3])
    return f"{unit} per accelerator" if unit and higher_is_better else unit


def _as_of_round(index: EvidenceIndex, key: SliceKey, acc: str, as_of: str | None) -> float:
    """The newest round a ranking ``as_of`` reads (``drift``'s words, dates and round names; a
    round beyond the newest held reads every result: a stack's figure does not move with the
    rounds).

    Raises:
        NotFound: the accelerator had not run the slice by then (``as_of`` is checked first, by
            ``stack_ranking``).
    """
    if as_of is None:
        return math.inf
    target = index.round_drift.slice_target(key, as_of)
    rows = index.slices[key][acc]
    first = float(index.round_no[rows].min())
    if target < first:
        when = round_label(target) if target > 0 else "no round published by then"
        named = "" if when == as_of else f" ({when})"
        raise NotFound(
            f"as_of {as_of!r}{named}: {acc} first ran {key[1]} {key[2]} in {round_label(first)}"
        )
    return target


def _derived_hint(
    index: EvidenceIndex, prefix: tuple[str, str, str], metric: str | None, division: str
) -> str:
    """Where the scenario is one the rules set for the benchmark and run as another the
    benchmark holds (Interactive as Server), and its throughput is asked (a latency is not
    derived): a ranking needs measured results of the scenario itself, predict/recommend
    estimate it."""
    base = derived_base(index, *prefix)
    if base is None:
        return ""
    family, benchmark, scenario = prefix
    held = [k for k in index.slices if k[:3] == (family, benchmark, base) and k[4] == division]
    if not any(index.higher_is_better(k) and metric in (None, k[3]) for k in held):
        return ""
    return (
        f"; a stack ranking reads measured {scenario} results only: its {base} results are held "
        f"(`advisor compare rank-stacks --scenario {base}`), and `advisor predict` / `advisor "
        f"recommend` estimate its {scenario} throughput from them"
    )


def _slice_names(benchmark: str, scenario: str | None, family: str) -> tuple[str, str | None]:
    """(catalogue benchmark, scenario) of names as users write them; a benchmark name that
    carries its scenario (llama2-70b-interactive-99) gives it."""
    try:
        scenario = scenario_in_name(benchmark, family, scenario) or canonical_scenario(scenario)
    except ValueError as exc:
        raise InvalidInput(f"scenario: {exc}") from None
    return canonical_benchmark(benchmark, family) or benchmark, scenario


def _slice_metric(index: EvidenceIndex, prefix: tuple[str, str, str], division: str) -> str:
    """The metric a stack ranking of ``prefix`` (family, benchmark, scenario) reads when none is
    named: its only one, else its throughput (higher is better)."""
    keys = [k for k in index.slices if k[:3] == prefix and k[4] == division]
    throughput = [k for k in keys if index.higher_is_better(k)]
    if len(keys) == 1 or len(throughput) == 1:
        return (keys if len(keys) == 1 else throughput)[0][3]
    raise NotFound(
        f"no observations of {' '.join(filter(None, ('/'.join(prefix[:2]), prefix[2])))} "
        f"({division} division) "
        "with one metric to "
        f"rank by; name one of: {', '.join(sorted(k[3] for k in keys)) or 'none recorded'}"
        + ("" if keys else _derived_hint(index, prefix, None, division))
    )
