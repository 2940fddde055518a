"""Stack A against stack B (paired within a round, and what upgrading A's framework version to
B's was worth across rounds), and regressions across component versions."""

from __future__ import annotations

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
from stack_advisor.advisor.estimate.facts import canonical_accelerator
from stack_advisor.advisor.estimate.index import EvidenceIndex
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
from stack_advisor.catalog.rounds import release_of
from stack_advisor.schema.errors import InvalidInput, NotFound


def _selector_components(selector: str | dict[str, str]) -> dict[str, str] | None:
    """component → version of a component=version selector; None for a stack id."""
    if isinstance(selector, str) and selector.startswith("stk-"):
        return None
    if not isinstance(selector, str):
        return {k.lower(): str(v) for k, v in selector.items()}
    want: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in selector.split(","))):
        name, sep, version = part.partition("=")
        if not sep or not name.strip() or not version.strip():
            raise InvalidInput(
                f"stack selector: {part!r} is not component=version "
                "(e.g. 'tensorrt=8.6.0,cuda=12.0') nor a stack id (stk-...)"
            )
        want[name.strip().lower()] = version.strip()
    return want


def _stack_matches(table: ObservationTable, selector: str | dict[str, str]) -> set[int]:
    """Stack codes a selector picks: a stack id, or component=version pairs (all must match)."""
    want = _selector_components(selector)
    if want is None:
        code = table.stack.code(str(selector))
        if code < 0:
            raise NotFound(f"stack: no stack with id {selector!r}")
        return {code}
    want = {_component_name(k): v for k, v in want.items()}
    out = set()
    for code, sid in enumerate(table.stack.vocab):
        stack = table.stacks[sid]
        comps = {k.lower(): v for k, v in stack_components(stack).items() if v}
        if stack.framework:
            comps.setdefault("framework", stack.framework.lower())
        if all(_same_version(comps.get(k), v) for k, v in want.items()):
            out.add(code)
    if not out:
        raise NotFound(f"stack: no stack in the knowledge base matches {want}")
    return out


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
    a, b = _selector_components(stack_a), _selector_components(stack_b)
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


def compare_stacks(
    table: ObservationTable,
    stack_a: str | dict[str, str],
    stack_b: str | dict[str, str],
    *,
    benchmark: str,
    accelerator: str | None,
    scenario: str | None,
    metric: str | None,
    family: str,
    index: EvidenceIndex | None = None,
) -> Comparison:
    """A against B paired within a round; with ``index``, also what upgrading A's framework
    version to B's was worth across rounds (``upgrade_effect``). Names as users write them.

    Raises:
        InvalidInput: an unknown scenario or stack component, or a scenario the benchmark's name
            contradicts.
        NotFound: no stack or no observation matches.
    """
    benchmark, scenario = _slice_names(benchmark, scenario, family)
    a_codes, b_codes = _stack_matches(table, stack_a), _stack_matches(table, stack_b)
    effect = (
        upgrade_effect(
            index,
            stack_a,
            stack_b,
            benchmark=benchmark,
            accelerator=accelerator,
            scenario=scenario,
            family=family,
        )
        if index is not None
        else None
    )
    params: dict[str, Any] = {"scenario": scenario} if scenario else {}
    mask, _ = table.benchmark_mask(family, benchmark, params)
    if accelerator:
        mask &= table.accelerator.mask(matching_accelerators(table.accelerator.vocab, accelerator))
    if metric:
        mask &= table.metric.codes == table.metric.code(metric)
    rows = np.flatnonzero(mask)
    if not len(rows):
        raise NotFound(
            f"no observations of {family}/{benchmark} {params or ''} "
            f"{'on ' + accelerator if accelerator else ''}".strip()
        )
    in_a = np.isin(table.stack.codes[rows], list(a_codes))
    in_b = np.isin(table.stack.codes[rows], list(b_codes))
    if metric is None:
        cand = rows[in_a | in_b]
        metric = (
            table.metric.vocab[int(np.bincount(table.metric.codes[cand]).argmax())]
            if len(cand)
            else table.metric.vocab[int(np.bincount(table.metric.codes[rows]).argmax())]
        )
        keep = table.metric.codes[rows] == table.metric.code(metric)
        rows, in_a, in_b = rows[keep], in_a[keep], in_b[keep]
    ratios, norm_a, norm_b = [], [], []
    for idx in groups(table, rows[in_a | in_b], (*PAIR_KEY, "placement")).values():
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
    a_all, b_all = table.value[rows[in_a]], table.value[rows[in_b]]

    def label(sel: str | dict[str, str]) -> str:
        return sel if isinstance(sel, str) else ",".join(f"{k}={v}" for k, v in sel.items())

    ratio = float(np.median(ratios)) if ratios else None
    p = mann_whitney(np.asarray(norm_a), np.asarray(norm_b)) if ratios else None
    if ratio is None:
        verdict = "no paired results (same round, benchmark, metric, accelerator, count, placement)"
    elif p is not None and p < 0.05:
        verdict = (
            f"B is {'faster' if ratio > 1 else 'slower'}: {ratio:.3f}x A over {len(ratios)} "
            f"pairs (p={p:.3g})"
        )
    else:
        verdict = f"no significant difference: {ratio:.3f}x over {len(ratios)} pairs" + (
            f" (p={p:.3g})" if p is not None else ""
        )
    return Comparison(
        accelerator=accelerator,
        benchmark=benchmark,
        metric=metric,
        stack_a=label(stack_a),
        stack_b=label(stack_b),
        pairs=len(ratios),
        ratio=ratio,
        interval=bootstrap_interval(np.asarray(ratios)) if ratios else None,
        p_value=p,
        a_count=len(a_all),
        b_count=len(b_all),
        a_median=float(np.median(a_all)) if len(a_all) else None,
        b_median=float(np.median(b_all)) if len(b_all) else None,
        verdict=verdict,
        stack_effect=effect,
    )


def find_regressions(
    table: ObservationTable,
    component: str,
    *,
    accelerator: str | None,
    benchmark: str | None,
    alpha: float,
    min_count: int,
) -> list[Regression]:
    """Within each (round, benchmark, metric, accelerator, count) group, compare consecutive
    versions of ``component``; report where the newer one is slower with Mann-Whitney p < alpha."""
    component = component.lower()
    versions = []
    for sid in table.stack.vocab:
        comps = {k.lower(): v for k, v in stack_components(table.stacks[sid]).items() if v}
        versions.append(comps.get(component))
    if not any(versions):
        raise NotFound(f"component: no stack in the knowledge base records {component!r}")
    mask = np.ones(table.n, dtype=bool)
    if accelerator:
        mask &= table.accelerator.mask(matching_accelerators(table.accelerator.vocab, accelerator))
    if benchmark:
        mask &= table.bench_name.codes == table.bench_name.code(benchmark)
    out = []
    for key, idx in groups(table, np.flatnonzero(mask), PAIR_KEY).items():
        by_version: dict[str, list[float]] = defaultdict(list)
        for r in idx:
            v = versions[table.stack.codes[r]]
            if v:
                by_version[v].append(float(table.value[r]))
        ordered = sorted(
            (
                v
                for v in by_version
                if release_of(v) is not None and len(by_version[v]) >= min_count
            ),
            key=lambda v: release_of(v),  # type: ignore[arg-type, return-value]
        )
        hib = bool(table.higher_is_better[idx[0]])
        for old, new in pairwise(ordered):
            a, b = np.asarray(by_version[old]), np.asarray(by_version[new])
            change = speed_ratio(float(np.median(b)), float(np.median(a)), hib)
            p = mann_whitney(a, b)
            if change < 1 and p is not None and p < alpha:
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
                        older_median=float(np.median(a)),
                        newer_median=float(np.median(b)),
                        change=change,
                        older_count=len(a),
                        newer_count=len(b),
                        p_value=p,
                    )
                )
    return sorted(out, key=lambda r: r.change)


def stack_ranking(
    index: EvidenceIndex,
    *,
    family: str,
    benchmark: str,
    scenario: str | None,
    metric: str | None,
    accelerator: str,
    division: str = "closed",
) -> list[dict[str, Any]]:
    """The stacks one accelerator ran a benchmark with, fastest first, older versions carried
    forward by the upgrade factor (``stack_advisor.advisor.estimate.stack_compare.rank_stacks``).
    Names as users write them (``sdxl``, ``offline``, ``llama2-70b-interactive-99``); no metric: the
    slice's throughput (or its only metric).

    Raises:
        InvalidInput: an unknown scenario, or one the benchmark's name contradicts.
        NotFound: the accelerator never ran that benchmark slice (the message lists what did).
    """
    benchmark, scenario = _slice_names(benchmark, scenario, family)
    if scenario is None:
        raise InvalidInput(
            f"scenario: name one (the scenarios {benchmark} ran: "
            f"{', '.join(sorted({k[2] for k in index.slices if k[:2] == (family, benchmark)}))})"
        )
    metric = metric or _slice_metric(index, (family, benchmark, scenario), division)
    acc = canonical_accelerator(accelerator)
    key = (family, benchmark, scenario, metric, division)
    by_acc = index.slices.get(key)
    if by_acc is None:
        raise NotFound(
            f"no observations of {family}/{benchmark} {scenario} {metric} ({division} division)"
        )
    if acc not in by_acc:
        raise NotFound(
            f"accelerator: {accelerator!r} ({acc}) never ran {benchmark} {scenario}; ran it: "
            f"{', '.join(sorted(by_acc)[:12])}"
        )
    return rank_stacks(effects_of(index), key, acc)


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
        f"no observations of {'/'.join(prefix[:2])} {prefix[2]} ({division} division) "
        "with one metric to "
        f"rank by; name one of: {', '.join(sorted(k[3] for k in keys)) or 'none recorded'}"
    )
