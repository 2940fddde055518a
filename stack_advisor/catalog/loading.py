"""Loading the catalogue: its YAML files validated into entries (``stack_advisor.catalog.entries``)
and indexed by every name they are written under (``NameIndex``), for ``resolve`` to look up.

What is loaded is kept parsed between runs where the edge set a cache folder
(``stack_advisor.catalog.parsed_cache``): the files are read and validated again only when one of
them (or the package) changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from stack_advisor.catalog.entries import (
    AcceleratorEntry,
    BenchmarkEntry,
    CpuEntry,
    FrameworkEntry,
    Generation,
    MetricEntry,
    ScenarioEntry,
)
from stack_advisor.catalog.parsed_cache import cached
from stack_advisor.catalog.spelling import ranked, strip_marks
from stack_advisor.schema.checks import shown
from stack_advisor.schema.errors import InvalidInput

VENDOR_WORDS = re.compile(r"^(?:nvidia|amd|qualcomm|google|intel|aws|arm)[\s_-]+", re.IGNORECASE)
MLPERF_INFERENCE = "mlperf-inference"

T = TypeVar("T", bound=BaseModel)


def quoted(text: str) -> str:
    """A name as an error message quotes it: its repr, cut past 100 characters with its length
    (``schema.checks.shown``: a megabyte given is not sent back whole)."""
    return repr(shown(text, 100))


def normalize(text: str) -> str:
    """The comparison key of a name: lower case, only letters, digits, '.' and '+'."""
    return re.sub(r"[^a-z0-9.+]", "", text.lower())


def name_keys(text: str) -> list[str]:
    """Comparison keys of a name: as written and without a leading vendor word, trademark
    marks dropped ("Intel(R) Arc(TM) Pro B70" is "Intel Arc Pro B70")."""
    text = strip_marks(text)
    stripped = VENDOR_WORDS.sub("", text.strip())
    keys = [normalize(text)]
    if stripped != text.strip():
        keys.append(normalize(stripped))
    return [k for k in keys if k]


@dataclass(frozen=True)
class NameMatch:
    """A resolved (or unresolved) name: ``id`` is canonical, or the raw text when unresolved."""

    raw: str
    id: str
    resolved: bool
    what: str
    matched_by: str | None = None
    base: str | None = None  # for a benchmark variant: the catalogue entry it is a variant of
    family: str | None = None  # for a benchmark: the family whose catalogue answered
    suggestions: tuple[str, ...] = ()
    # for a benchmark whose name carries a scenario (MLPerf v5.0's "llama2-70b-interactive-99",
    # run in LoadGen's Server mode, is llama2-70b-99's Interactive scenario): that scenario
    scenario: str | None = None

    def message(self, field_name: str | None = None) -> str:
        hint = (
            f"; did you mean {' or '.join(repr(s) for s in self.suggestions)}?"
            if self.suggestions
            else ""
        )
        return f"{field_name or self.what}: unknown {self.what} {quoted(self.raw)}{hint}"

    def require(self, field_name: str | None = None) -> str:
        """The canonical id; raises InvalidInput (with suggestions) when unresolved."""
        if not self.resolved:
            raise InvalidInput(self.message(field_name))
        return self.id


def catalogue_folder() -> Path:
    """The folder of the packaged catalogue files."""
    return Path(str(resources.files("stack_advisor.catalog")))


def _sources() -> list[Path]:
    """What a parsed catalogue derives from: the folder's data and the modules that define and
    build its entries."""
    folder = catalogue_folder()
    return [p for p in folder.iterdir() if p.suffix in (".yaml", ".py")]


def _load(file: str, key: str, model: type[T]) -> list[T]:
    # imported here: a run that finds the catalogue parsed in its cache never needs YAML
    import yaml

    # libyaml's safe loader parses the catalogue about 10x faster than the pure-Python one
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        text = (catalogue_folder() / file).read_text(encoding="utf-8")
        data = yaml.load(text, Loader=loader)
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInput(f"catalogue file {file}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise InvalidInput(f"catalogue file {file}: expected a mapping with a list {key!r}")
    out: list[T] = []
    for i, item in enumerate(data[key]):
        try:
            out.append(model.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            name = item.get("id", f"#{i}") if isinstance(item, dict) else f"#{i}"
            raise InvalidInput(
                f"catalogue file {file}: entry {name}: {where}: {first['msg']}"
            ) from None
    return out


def load_entries(file: str, key: str, model: type[T]) -> list[T]:
    """The validated entries of the list ``key`` in the catalogue file ``file`` (for catalogue
    modules with their own file, e.g. ``rounds``), kept parsed like the catalogue.

    Raises:
        InvalidInput: the file is unreadable or an entry is malformed (named with its field).
    """
    name = f"entries-{file.removesuffix('.yaml')}-{key}-{model.__name__}"
    return cached(name, _sources(), lambda: _load(file, key, model))


class NameIndex:
    """Exact names (normalised) → entry id; a key claimed by two entries is a load error."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.by_key: dict[str, str] = {}
        self.how: dict[str, str] = {}
        self.spellings: dict[str, str] = {}  # every written name → entry id (for suggestions)

    def add(self, entry_id: str, name: str, how: str) -> None:
        self.spellings.setdefault(name, entry_id)
        for key in name_keys(name):
            owner = self.by_key.get(key)
            if owner is not None and owner != entry_id:
                raise InvalidInput(
                    f"catalogue: {self.what} name {name!r} belongs to both {owner} and {entry_id}"
                )
            if owner is None:
                self.by_key[key] = entry_id
                self.how[key] = how

    def find(self, text: str) -> tuple[str, str] | None:
        for key in name_keys(text):
            if key in self.by_key:
                return self.by_key[key], self.how[key]
        return None

    def suggest(self, text: str, n: int = 3, *, canonical: bool = False) -> list[str]:
        """Closest written names (one per entry), best first (``spelling.ranked``: every written
        word held in any order, then edit similarity with O/0 and l/I/1 read alike); with
        ``canonical`` the entries' ids instead of the spellings that came close."""
        out: list[str] = []
        seen: set[str] = set()
        for name in ranked(text, self.spellings):
            owner = self.spellings[name]
            if owner in seen:
                continue
            seen.add(owner)
            out.append(owner if canonical else name)
            if len(out) == n:
                break
        return out


@dataclass
class Catalog:
    generations: dict[str, Generation]
    accelerators: dict[str, AcceleratorEntry]
    cpus: list[CpuEntry]
    benchmarks: dict[str, BenchmarkEntry]  # "<family>/<id>" → entry (an id is unique in its family)
    scenarios: dict[str, ScenarioEntry]
    metrics: dict[str, MetricEntry]
    frameworks: dict[str, FrameworkEntry]
    accelerator_index: NameIndex = field(default_factory=lambda: NameIndex("accelerator"))
    benchmark_index: dict[str, NameIndex] = field(default_factory=dict)  # family → its names
    scenario_index: NameIndex = field(default_factory=lambda: NameIndex("scenario"))
    metric_index: NameIndex = field(default_factory=lambda: NameIndex("metric"))
    framework_index: NameIndex = field(default_factory=lambda: NameIndex("framework"))
    accelerator_patterns: list[tuple[re.Pattern[str], str]] = field(default_factory=list)
    benchmark_variants: dict[str, list[tuple[re.Pattern[str], str]]] = field(default_factory=dict)
    cpu_patterns: list[tuple[re.Pattern[str], CpuEntry]] = field(default_factory=list)
    vgpu_prefixes: dict[str, str] = field(default_factory=dict)

    def benchmark(self, family: str, benchmark_id: str) -> BenchmarkEntry | None:
        return self.benchmarks.get(f"{family}/{benchmark_id}")

    def min_driver(self, accelerator_id: str) -> str | None:
        entry = self.accelerators.get(accelerator_id)
        if entry is None:
            return None
        gen = self.generations.get(entry.generation)
        return gen.min_driver if gen else None


def _unique(items: list[T], what: str, key: Any = None) -> dict[str, T]:
    out: dict[str, T] = {}
    for item in items:
        ident = key(item) if key else item.id  # type: ignore[attr-defined]
        if ident in out:
            raise InvalidInput(f"catalogue: {what} {ident!r} is defined twice")
        out[ident] = item
    return out


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The packaged catalogue, loaded and validated once per process (and kept parsed between
    processes where the edge set a cache folder: ``stack_advisor.catalog.parsed_cache``).

    Raises:
        InvalidInput: a malformed file or entry (the message names file, entry and field), a
            name claimed by two entries, or an accelerator naming an unknown generation.
    """
    return cached("catalog", _sources(), _build_catalog)


def _build_catalog() -> Catalog:
    cat = _entries_catalog()
    _index_accelerators(cat)
    for cpu in cat.cpus:
        cat.cpu_patterns += [(re.compile(p, re.IGNORECASE), cpu) for p in cpu.patterns]
    _index_names(cat)
    return cat


def _entries_catalog() -> Catalog:
    return Catalog(
        generations=_unique(_load("generations.yaml", "generations", Generation), "generation"),
        accelerators=_unique(
            _load("accelerators.yaml", "accelerators", AcceleratorEntry), "accelerator"
        ),
        cpus=_load("cpus.yaml", "cpus", CpuEntry),
        benchmarks=_unique(
            _load("benchmarks.yaml", "benchmarks", BenchmarkEntry),
            "benchmark",
            key=lambda b: f"{b.family}/{b.id}",
        ),
        scenarios=_unique(_load("scenarios.yaml", "scenarios", ScenarioEntry), "scenario"),
        metrics=_unique(_load("metrics.yaml", "metrics", MetricEntry), "metric"),
        frameworks=_unique(_load("frameworks.yaml", "frameworks", FrameworkEntry), "framework"),
    )


def _index_accelerators(cat: Catalog) -> None:
    for acc in cat.accelerators.values():
        if acc.generation not in cat.generations:
            raise InvalidInput(
                f"catalogue: accelerator {acc.id}: unknown generation {acc.generation!r}"
            )
        cat.accelerator_index.add(acc.id, acc.id, "id")
        cat.accelerator_index.add(acc.id, acc.name, "id")
        for name in (*acc.nvml_names, *acc.gfd_products, *acc.aliases):
            cat.accelerator_index.add(acc.id, name, "alias")
        cat.accelerator_patterns += [(re.compile(p, re.IGNORECASE), acc.id) for p in acc.patterns]
        unknown = [s for s in acc.siblings if s not in cat.accelerators or s == acc.id]
        if unknown:
            raise InvalidInput(f"catalogue: accelerator {acc.id}: unknown sibling(s) {unknown}")
        for prefix in acc.vgpu_prefixes:
            if prefix.lower() in cat.vgpu_prefixes:
                raise InvalidInput(f"catalogue: vGPU prefix {prefix!r} claimed twice")
            cat.vgpu_prefixes[prefix.lower()] = acc.id


def _index_names(cat: Catalog) -> None:
    """Benchmarks (with their variant patterns), scenarios, metrics and frameworks by name."""
    for bench in cat.benchmarks.values():
        index = cat.benchmark_index.setdefault(bench.family, NameIndex(f"{bench.family} benchmark"))
        index.add(bench.id, bench.id, "id")
        for name in bench.aliases:
            index.add(bench.id, name, "alias")
        cat.benchmark_variants.setdefault(bench.family, []).extend(
            (re.compile(p, re.IGNORECASE), bench.id) for p in bench.variant_patterns
        )
    for scen in cat.scenarios.values():
        for limit in scen.latency_limits:
            if cat.benchmark(MLPERF_INFERENCE, limit.benchmark) is None:
                raise InvalidInput(
                    f"catalogue: scenario {scen.id}: latency limit for unknown benchmark "
                    f"{limit.benchmark!r}"
                )
        cat.scenario_index.add(scen.id, scen.id, "id")
        for name in scen.aliases:
            cat.scenario_index.add(scen.id, name, "alias")
    for metric in cat.metrics.values():
        cat.metric_index.add(metric.id, metric.id, "id")
        for name in metric.aliases:
            cat.metric_index.add(metric.id, name, "alias")
    for fw in cat.frameworks.values():
        base = cat.frameworks.get(fw.runs_on) if fw.runs_on is not None else None
        if fw.runs_on is not None and (base is None or base.runs_on):  # itself included
            raise InvalidInput(  # one hop to a framework of its own: the family is its id
                f"catalogue: framework {fw.id}: runs_on {fw.runs_on!r} is not a framework "
                "of the catalogue that runs on none"
            )
        cat.framework_index.add(fw.id, fw.id, "id")
        for name in fw.aliases:
            cat.framework_index.add(fw.id, name, "alias")
