"""The catalogue as users browse it: plain rows for listings, one entry in full, and search.

The CLI (``advisor catalogue``) and the API (``/v1/catalogue/...``) both show these, so a
figure and its source read the same in both. Names go through the resolver: ``show`` takes any
spelling the catalogue knows, and refuses others with the resolver's "did you mean".
"""

from __future__ import annotations

from typing import Any, Literal

from stack_advisor.catalog.entries import PRECISIONS, AcceleratorEntry, BenchmarkEntry
from stack_advisor.catalog.loading import quoted
from stack_advisor.catalog.resolve import (
    load_catalog,
    normalize,
    resolve_accelerator,
    resolve_benchmark,
)
from stack_advisor.schema.errors import InvalidInput, NotFound

Kind = Literal["accelerators", "benchmarks"]
KINDS: tuple[Kind, ...] = ("accelerators", "benchmarks")
# the columns a listing shows; `show` and JSON carry every field
ACCELERATOR_COLUMNS = (
    "id",
    "vendor",
    "family",
    "form_factor",
    "launch_year",
    "memory_gb",
    "memory_bw_gbs",
    "fp64",
    "fp32",
    "bf16",
    "fp8",
    "fp4",
    "int8",
    "tdp_w",
    "interconnect_gbs",
)


def accelerator_row(entry: AcceleratorEntry) -> dict[str, Any]:
    """An entry as one flat row: the peak figures as columns (dense, TFLOP/s; TOPS for int8),
    then the rest of the entry (names, source, note)."""
    figures = entry.peak_tflops.as_dict()
    row: dict[str, Any] = {
        k: v
        for k, v in entry.model_dump(exclude={"peak_tflops"}).items()
        if v not in (None, [], "")
    }
    head: dict[str, Any] = {
        c: row.pop(c) for c in ("id", "name", "vendor", "family", "generation") if c in row
    }
    gen = load_catalog().generations.get(entry.generation)
    if gen is not None and gen.min_driver:
        row["min_driver"] = gen.min_driver
    tail: dict[str, Any] = {c: row.pop(c) for c in ("note", "source") if c in row}
    return {**head, **{p: figures.get(p) for p in PRECISIONS}, **row, **tail}


def benchmark_row(entry: BenchmarkEntry) -> dict[str, Any]:
    row = {k: v for k, v in entry.model_dump().items() if v not in (None, [], "")}
    source = row.pop("source")
    return {**row, "source": source}


def list_entries(
    kind: Kind, *, vendor: str | None = None, family: str | None = None
) -> list[dict[str, Any]]:
    """Every entry of a kind as rows, catalogue order; ``vendor`` / ``family`` filter
    accelerators, ``family`` benchmarks (mlperf-training), case- and punctuation-blind.

    Raises:
        InvalidInput: an unknown kind, a vendor filter on benchmarks, or a vendor or family
            the catalogue has none of (naming those it has).
    """
    cat = load_catalog()
    if kind == "benchmarks":
        if vendor:
            raise InvalidInput("vendor: only accelerators have one")
        entries = list(cat.benchmarks.values())
        _known("family", family, {b.family for b in entries})
        return [
            benchmark_row(b)
            for b in entries
            if not family or normalize(b.family) == normalize(family)
        ]
    if kind != "accelerators":
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    _known("vendor", vendor, {a.vendor for a in cat.accelerators.values()})
    _known("family", family, {a.family for a in cat.accelerators.values()})
    rows = []
    for acc in cat.accelerators.values():
        if vendor and normalize(acc.vendor) != normalize(vendor):
            continue
        if family and normalize(acc.family) != normalize(family):
            continue
        rows.append(accelerator_row(acc))
    return rows


def _known(field: str, value: str | None, held: set[str]) -> None:
    """Raises: InvalidInput where ``value`` is none of ``held``: a filter naming nothing is a
    mistake to say, not an empty list."""
    if value and normalize(value) not in {normalize(h) for h in held}:
        raise InvalidInput(
            f"{field}: the catalogue has no {field} {quoted(value)}; it has: "
            + ", ".join(sorted(held, key=str.lower)[:40])
        )


def show_accelerator(name: str) -> dict[str, Any]:
    """One accelerator, found by any of its spellings, with how the name matched.

    Raises:
        NotFound: the resolver knows no such part (the message has its "did you mean").
    """
    match = resolve_accelerator(name)
    if match.entry is None:
        raise NotFound(match.message("name"))
    row = accelerator_row(match.entry)
    row["matched_by"] = match.matched_by
    if match.partition:
        row["partition"] = match.partition
        row["fraction"] = match.fraction
    return row


def show_entry(name: str, family: str | None = None) -> dict[str, Any]:
    """One entry of either kind: the accelerator the name resolves to, else the benchmark
    (``family`` asks for a benchmark). A name that is neither is refused with the closest names
    of both kinds; a family of parts is refused as the accelerator resolver refuses it.

    Raises:
        NotFound: no accelerator and no benchmark of that name.
    """
    if family is not None:
        return show_benchmark(name, family)
    part = resolve_accelerator(name)
    if part.entry is not None or part.refusal in ("family", "ambiguous"):
        return show_accelerator(name)
    bench = resolve_benchmark(name)
    if bench.resolved:
        return show_benchmark(name)
    near = list(dict.fromkeys([*part.suggestions, *bench.suggestions]))
    hint = f"; did you mean {' or '.join(repr(s) for s in near)}?" if near else ""
    raise NotFound(
        f"name: unknown accelerator or benchmark {quoted(name)}{hint} (`advisor catalogue search` "
        "and GET /v1/catalogue/accelerators and /benchmarks list the known ones)"
    )


def show_benchmark(name: str, family: str | None = None) -> dict[str, Any]:
    """One benchmark by any of its names, looked up in ``family`` (without one: MLPerf
    Inference first, as the resolver does); an open-division variant shows its base entry.

    Raises:
        NotFound: unknown benchmark, with the closest names.
    """
    match = resolve_benchmark(name, family)
    entry = (
        load_catalog().benchmark(match.family or "", match.base or match.id)
        if match.resolved
        else None
    )
    if entry is None:
        raise NotFound(match.message("name"))
    row = benchmark_row(entry)
    if match.base:
        row["variant"] = match.id
    limits = _latency_limits(entry.id)
    if limits:
        row["latency_limits"] = limits
    return row


def _latency_limits(benchmark: str) -> dict[str, dict[str, Any]]:
    """The p99 latency limits each scenario publishes for the benchmark (the newest in force),
    with the round they apply from and their source: what estimates are capped at and
    ``--max-ttft-ms`` / ``--max-tpot-ms`` are read against."""
    out: dict[str, dict[str, Any]] = {}
    for scenario in load_catalog().scenarios.values():
        found = scenario.limits_for(benchmark)
        if found is None:
            continue
        figures = found.model_dump(exclude={"benchmark"}, exclude_none=True)
        out[scenario.id] = figures
    return out


def _haystack(entry: AcceleratorEntry | BenchmarkEntry) -> list[str]:
    """The entry's own texts a search reads: not its sources, figures and patterns, nor the
    other parts it names as siblings (a search for "H200 NVL" is not for the H100 NVL)."""
    dumped = entry.model_dump(
        exclude={"source", "peak_tflops", "patterns", "variant_patterns", "siblings"}
    )
    out: list[str] = []
    for value in dumped.values():
        out += [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return [t.lower() for t in out if t]


def _containing(text: str, hits: dict[tuple[str, str], dict[str, Any]]) -> None:
    """Add the accelerators and benchmarks whose names, family, vendor, generation, task or note
    contain ``text`` (as written or normalised) to ``hits``, each once."""
    cat = load_catalog()
    lowered, key = text.lower(), normalize(text)
    pools: list[tuple[str, dict[str, Any]]] = [
        ("accelerators", cat.accelerators),
        ("benchmarks", cat.benchmarks),
    ]
    for kind, entries in pools:
        for ident, entry in entries.items():  # benchmarks are keyed "<family>/<id>"
            if (kind, ident) in hits:
                continue
            found = next(
                (t for t in _haystack(entry) if lowered in t or (key and key in normalize(t))), None
            )
            if found is not None:
                hits[(kind, ident)] = {
                    "kind": kind[:-1],
                    "id": entry.id,
                    "name": getattr(entry, "name", ident),
                    "why": f"contains {text!r}: {found}",
                }


def search(query: str, *, limit: int = 50) -> list[dict[str, Any]]:
    """Entries whose names, family, vendor, generation, task or note contain the query, the
    part the resolver picks for it first; each hit as ``{kind, id, name, why}``.

    Raises:
        InvalidInput: an empty query.
    """
    text = " ".join(query.split())
    if not text:
        raise InvalidInput("q: give some text to search for (a name, family, vendor or task)")
    cat = load_catalog()
    hits: dict[tuple[str, str], dict[str, Any]] = {}
    match = resolve_accelerator(text)
    if match.entry is not None:
        hits[("accelerators", match.entry.id)] = {
            "kind": "accelerator",
            "id": match.entry.id,
            "name": match.entry.name,
            "why": f"resolves ({match.matched_by})",
        }
    bench = resolve_benchmark(text)
    if bench.resolved:
        bid = bench.base or bench.id
        hits[("benchmarks", f"{bench.family}/{bid}")] = {
            "kind": "benchmark",
            "id": bid,
            "name": f"{bench.family}/{bid}",
            "why": f"resolves ({bench.matched_by})",
        }
    _containing(text, hits)
    if not hits:
        for suggestion in match.suggestions:
            entry_id = (
                suggestion
                if suggestion in cat.accelerators
                else resolve_accelerator(suggestion).key
            )
            if entry_id in cat.accelerators:
                hits[("accelerators", entry_id)] = {
                    "kind": "accelerator",
                    "id": entry_id,
                    "name": cat.accelerators[entry_id].name,
                    "why": "close spelling",
                }
    return list(hits.values())[:limit]
