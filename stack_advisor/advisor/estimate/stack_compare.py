"""What upgrading a framework from one version to another was worth on the same hardware, for
``compare``: pairs of exactly those versions (``span_pairs``), else the vendor's pooled version
step of ``stack_advisor.advisor.estimate.stack_effect``, said as such, else that there are no
pairs."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from stack_advisor.advisor.estimate.facts import accelerator_class
from stack_advisor.advisor.estimate.stack_effect import (
    MIN_PAIRS,
    StackEffects,
    StackPair,
    direction_of,
    fit_factor,
    rounds_between,
    upgrade_pair,
)
from stack_advisor.catalog.rounds import release_of

MAX_VERSION_DIGITS = 18  # a version part longer than this is no release number


def version_matches(version: str | None, selector: str) -> bool:
    """'10.2' matches a selector '10', '10.x' or '10.2' ('10.2.1' compares as 10.2)."""
    have = release_of(version)
    parts = selector.strip().lstrip("vV").split(".")
    if any(len(p) > MAX_VERSION_DIGITS for p in parts):
        return False  # no release numbers a part with more digits
    want = [int(p) for p in parts if p.isdigit()]
    if not have or not want:
        return False
    return list(have[: len(want)]) == want[: len(have)]


def span_pairs(
    effects: StackEffects,
    family: str,
    framework: str,
    old: str,
    new: str,
    *,
    benchmark: str | None = None,
    scenario: str | None = None,
    accelerators: set[str] | None = None,
) -> list[StackPair]:
    """Pairs of ``framework`` at a version matching ``old`` (older round) and one matching
    ``new`` (newer round) on the same accelerator, count and benchmark slice."""
    index, t = effects.index, effects.index.table
    out = []
    for key, by_acc in index.slices.items():
        if (
            key[0] != family
            or (benchmark and key[1] != benchmark)
            or (scenario and key[2] != scenario)
        ):
            continue
        hib = index.higher_is_better(key)
        for acc, rows in by_acc.items():
            if accelerators is not None and acc not in accelerators:
                continue
            sides: dict[tuple[int, int, str], list[int]] = defaultdict(
                list
            )  # (count, identity, side)
            for r in rows.tolist():
                st = effects.row_stack(r)
                if st.framework != framework:
                    continue
                for side, sel in (("old", old), ("new", new)):
                    if version_matches(st.version, sel):
                        sides[(int(t.count[r]), int(t.benchmark.codes[r]), side)].append(r)
            vendor = accelerator_class(index.raw_names.get(acc, acc))
            base = (key[0], vendor, key[1], key[2], key[3], direction_of(key[0], key[1], hib), acc)
            for count, ident in sorted({(c, i) for c, i, _ in sides}):
                a, b = sides.get((count, ident, "old")), sides.get((count, ident, "new"))
                if a and b:
                    pair = effects.pair(base, framework, old, new, a, b, hib)
                    if upgrade_pair(pair):
                        out.append(pair)
    return out


def upgrade_text(
    effects: StackEffects,
    family: str,
    framework: str,
    old: str,
    new: str,
    *,
    benchmark: str,
    scenario: str | None,
    accelerators: set[str] | None,
    where: str,
) -> str:
    """ "upgrading tensorrt 9.3 to 10.8 on H100 for llama2-70b-99 Server: +49% (...), from 6 pairs",
    from the throughput pairs of exactly these versions; else the vendor's pooled version step,
    said as such; else that there are no pairs."""
    what = (
        f"upgrading {framework} {old} to {new} on {where} for "
        f"{benchmark}{' ' + scenario if scenario else ''}"
    )
    pairs = span_pairs(
        effects,
        family,
        framework,
        old,
        new,
        benchmark=benchmark,
        scenario=scenario,
        accelerators=accelerators,
    )
    throughput = [p for p in pairs if p.direction.startswith("throughput")] or pairs
    factor = fit_factor(
        f"{family} {framework} {old}->{new}", np.asarray([p.log_ratio for p in throughput])
    )
    if factor is not None:
        kind = "throughput" if throughput[0].direction.startswith("throughput") else "latency"
        return f"{what}: {factor.percent()} {kind} speed, from {factor.pairs} pairs"
    seen = ", ".join(f"{(np.exp(p.log_ratio) - 1) * 100:+.0f}%" for p in throughput)
    few = (
        f"{len(throughput)} pair(s) ({seen}), fewer than {MIN_PAIRS} for an interval"
        if throughput
        else "no pairs"
    )
    vendors = sorted(
        {accelerator_class(effects.index.raw_names.get(a, a)) for a in accelerators or ()}
    )
    pooled = (
        effects.upgrade(family, vendors[0], framework, benchmark, "", True)
        if len(vendors) == 1
        else None
    )
    if pooled is None:
        return (
            f"{what}: {few} across rounds ({old} in an older round and {new} in a newer one on "
            "the same accelerator, count and benchmark, or both in one node's sweep; both "
            "stacks within one round are the comparison's own pairs); no estimate"
        )
    return (
        f"{what}: {few}; one round's step of {framework} on {vendors[0]} accelerators in general: "
        f"{pooled.percent()}, from {pooled.pairs} pairs ({pooled.scope})"
    )


def _carry(
    effects: StackEffects,
    key: tuple[str, str, str, str, str],
    vendor: str,
    fw: str,
    value: float,
    round_no: float,
    newest_round: float,
    hib: bool,
) -> tuple[float, str]:
    """``value`` of an older version carried to the round of the newest one: the per-round
    factor raised to the rounds between; as measured where both ran in one published round (two
    submitters, not an upgrade) or where there are no pairs."""
    if newest_round > 0 and round_no >= newest_round:
        return value, "the same round as the newest version (another submitter): as measured"
    factor = effects.upgrade(key[0], vendor, fw, key[1], key[3], hib)
    if factor is None:
        return value, "no pairs to carry it forward: as measured"
    steps = rounds_between(key[0], round_no, newest_round)
    ratio = factor.ratio**steps
    return (value * ratio if hib else value / ratio), f"{steps} round(s) at {factor.describe()}"


def rank_stacks(
    effects: StackEffects,
    key: tuple[str, str, str, str, str],
    accelerator: str,
    upto: float = math.inf,
) -> list[dict[str, object]]:
    """The stacks ``accelerator`` ran the benchmark slice ``key`` with, fastest first by what
    each measured: its median per-accelerator figure of its latest round and, for a stack older
    than the newest version of its framework seen there, beside it that figure carried forward
    by the vendor's upgrade factor (``carried``, with the factor's text; the figure as is where
    no factor). ``upto``: the newest round read (as of a held round: its results and older)."""
    index = effects.index
    rows = index.slices.get(key, {}).get(accelerator, np.empty(0, dtype=np.int64))
    rows = rows[index.round_no[rows] <= upto]
    if not len(rows):
        return []
    hib = index.higher_is_better(key)
    vendor = accelerator_class(index.raw_names.get(accelerator, accelerator))
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in rows.tolist():
        st = effects.row_stack(r)
        groups[(st.framework or "unknown", st.version or "?")].append(r)
    newest: dict[
        str, tuple[tuple[int, ...], float]
    ] = {}  # framework -> (newest version, its round)
    for (fw, version), members in groups.items():
        found = (
            release_of(version) or (),
            float(index.round_no[index.latest(np.asarray(members))[0]]),
        )
        newest[fw] = max(newest.get(fw, found), found)
    out = []
    for (fw, version), members in groups.items():
        latest = index.latest(np.asarray(members))
        value = float(np.median(index.unit[latest]))
        carried, factor_text = value, None
        if (release_of(version) or ()) < newest[fw][0]:
            carried, factor_text = _carry(
                effects,
                key,
                vendor,
                fw,
                value,
                float(index.round_no[latest[0]]),
                newest[fw][1],
                hib,
            )
        cls = effects.row_stack(members[0]).software_class
        out.append(
            {
                "framework": fw,
                "version": version,
                "software_class": cls,
                "round": index.table.round.vocab[int(index.table.round.codes[latest[0]])],
                "results": len(latest),
                # the system sizes its figure is the median of (per accelerator: a multi-node
                # system's and an 8-GPU node's compare, but they need not match)
                "counts": sorted({int(c) for c in index.table.count[latest].tolist()}),
                "value": value,
                "carried_forward": carried,
                "factor": factor_text,
            }
        )
    # ranked by what each stack measured: an older version's carried figure says what the
    # vendor's typical upgrade would have made of it, not what it runs at (ranked on it, an
    # H200's TensorRT 10.2 of v4.1 came before its own TensorRT 10.11 of v5.1)
    return sorted(out, key=lambda row: -float(row["value"]) if hib else float(row["value"]))
