"""One resolver: free text in, canonical entity (plus placement hints) out.

Order, as kubectl resolves kinds: the exact id or name, then declared aliases (both compared
case- and punctuation-blind, with or without a leading vendor word), then patterns. Text nothing
matches keeps its raw name, marked unresolved, with the closest known names as suggestions.
The catalogue itself is loaded and indexed by ``stack_advisor.catalog.loading``; accelerator and
CPU names are resolved by ``stack_advisor.catalog.accelerator_names`` (imported from here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from stack_advisor.catalog.accelerator_names import NOT_AN_ACCELERATOR as NOT_AN_ACCELERATOR
from stack_advisor.catalog.accelerator_names import AcceleratorMatch as AcceleratorMatch
from stack_advisor.catalog.accelerator_names import AcceleratorPart as AcceleratorPart
from stack_advisor.catalog.accelerator_names import resolve_accelerator as resolve_accelerator
from stack_advisor.catalog.accelerator_names import resolve_cpu as resolve_cpu
from stack_advisor.catalog.loading import MLPERF_INFERENCE as MLPERF_INFERENCE
from stack_advisor.catalog.loading import Catalog as Catalog
from stack_advisor.catalog.loading import NameIndex
from stack_advisor.catalog.loading import NameMatch as NameMatch
from stack_advisor.catalog.loading import load_catalog as load_catalog
from stack_advisor.catalog.loading import load_entries as load_entries
from stack_advisor.catalog.loading import normalize as normalize

# ---- benchmarks, scenarios, metrics, frameworks ----------------------------------------------


def _names(text: str, index: NameIndex, what: str) -> NameMatch:
    found = index.find(text)
    if found:
        return NameMatch(raw=text, id=found[0], resolved=True, what=what, matched_by=found[1])
    return NameMatch(
        raw=text,
        id=" ".join(str(text).split()),
        resolved=False,
        what=what,
        suggestions=tuple(index.suggest(text, canonical=True)),
    )


@lru_cache(maxsize=8192)
def resolve_benchmark(text: str, family: str | None = None) -> NameMatch:
    """A benchmark name: the canonical id (``sdxl`` → ``stable-diffusion-xl``,
    ``llama2_70b_lora`` → ``llama2_70b_lora`` in mlperf-training, ``gnn`` → ``rgat``), or for an
    open-division variant its own name (lower case) with ``base`` the benchmark it varies.

    Names are looked up in ``family`` (one family may reuse another's name: Training's
    ``retinanet`` is not Inference's); without one, in every family, MLPerf Inference first.
    ``NameMatch.family`` says which family answered."""
    cat = load_catalog()
    families = [family] if family is not None else _family_order(cat)
    for fam in families:
        index = cat.benchmark_index.get(fam)
        found = index.find(text) if index else None  # suggestions only once nothing resolves
        if found:
            return NameMatch(
                raw=text,
                id=found[0],
                resolved=True,
                what="benchmark",
                matched_by=found[1],
                family=fam,
            )
    named = _scenario_in_name(text, families)
    if named is not None:
        return named
    lowered = " ".join(str(text).split()).lower()
    for fam in families:
        for pattern, bench_id in cat.benchmark_variants.get(fam, ()):
            if pattern.search(lowered):
                return NameMatch(
                    raw=text,
                    id=lowered,
                    resolved=True,
                    what="benchmark",
                    matched_by="pattern",
                    base=bench_id,
                    family=fam,
                )
    suggestions: list[str] = []
    for fam in families:
        index = cat.benchmark_index.get(fam)
        if index:
            suggestions += [s for s in index.suggest(text, canonical=True) if s not in suggestions]
    return NameMatch(
        raw=text,
        id=" ".join(str(text).split()),
        resolved=False,
        what="benchmark",
        suggestions=tuple(suggestions[:3]),
        family=family,
    )


def _scenario_in_name(text: str, families: list[str]) -> NameMatch | None:
    """A benchmark named with a scenario LoadGen runs in another mode ("llama2-70b-interactive-99",
    "llama3.1-8b-interactive": MLPerf's names for the Interactive scenario, a Server run, before
    the results tree gave it a directory of its own): the benchmark the rest of the name resolves
    to (a catalogue entry, not a variant), with that scenario. None when no such token is there."""
    cat = load_catalog()
    tokens = re.split(r"([-_ ]+)", str(text).strip())
    for i in range(0, len(tokens), 2):
        scenario = cat.scenario_index.find(tokens[i]) if tokens[i] else None
        if not scenario or cat.scenarios[scenario[0]].loadgen_mode == scenario[0]:
            continue
        rest = "".join(tokens[: max(0, i - 1)] + tokens[i + 1 :] if i else tokens[i + 2 :]).strip(
            "-_ "
        )
        for fam in families:
            index = cat.benchmark_index.get(fam)
            found = index.find(rest) if index and rest else None
            if found:
                return NameMatch(
                    raw=text,
                    id=found[0],
                    resolved=True,
                    what="benchmark",
                    matched_by="scenario in name",
                    family=fam,
                    scenario=scenario[0],
                )
    return None


def named_scenario(bench: NameMatch, scenario: str) -> str:
    """The scenario of a result of benchmark ``bench`` run as ``scenario``: the scenario its name
    carries (``NameMatch.scenario``) where the run is that scenario's LoadGen mode
    ("llama2-70b-interactive-99" run as Server is Interactive), else ``scenario``."""
    if bench.scenario is None or bench.scenario == scenario:
        return scenario
    cat = load_catalog()
    return bench.scenario if cat.scenarios[bench.scenario].loadgen_mode == scenario else scenario


def _family_order(cat: Catalog) -> list[str]:
    return sorted(
        cat.benchmark_index, key=lambda f: (f != MLPERF_INFERENCE, f != "mlperf-training", f)
    )


@lru_cache(maxsize=256)
def resolve_scenario(text: str) -> NameMatch:
    """``offline`` → ``Offline``, ``single-stream`` → ``SingleStream``; ``Ofline`` unresolved
    with the suggestion ``Offline``."""
    return _names(text, load_catalog().scenario_index, "scenario")


@lru_cache(maxsize=256)
def resolve_metric(text: str) -> NameMatch:
    return _names(text, load_catalog().metric_index, "metric")


def metric_unit(text: str) -> str | None:
    """The unit of a metric by any of its names, None where the catalogue does not know it (a
    metric of our collectors' own)."""
    match = resolve_metric(text)
    entry = load_catalog().metrics.get(match.id) if match.resolved else None
    return entry.unit if entry is not None else None


@dataclass(frozen=True)
class FrameworkMatch:
    """A framework written as free text ("TensorRT 8.6.0, CUDA 12.0"): its canonical name and
    version, plus the other components the text names (cuda, cudnn, driver, ...)."""

    raw: str
    name: NameMatch
    version: str | None
    components: dict[str, str]

    @property
    def resolved(self) -> bool:
        return self.name.resolved


# words a vendor's container adds to the framework it ships ("NeMo Framework NVIDIA Release",
# "nemo-framework-nvidia-release", "NGC PyTorch"): the container is of that framework
_CONTAINER_WORDS = re.compile(r"\b(?:nvidia|ngc|release|framework|container)\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def resolve_framework_name(text: str) -> NameMatch:
    """A framework's canonical id; a vendor container's name (``nemo-framework-nvidia-release``)
    resolves to the framework it ships, matched by "container"."""
    cat = load_catalog()
    match = _names(text, cat.framework_index, "framework")
    if match.resolved:
        return match
    bare = " ".join(_CONTAINER_WORDS.sub(" ", re.sub(r"[-_]+", " ", str(text))).split())
    found = cat.framework_index.find(bare) if bare and bare != text.strip() else None
    if found is None:
        return match
    return NameMatch(raw=text, id=found[0], resolved=True, what="framework", matched_by="container")


def resolve_framework(
    text: str,
    parsed: tuple[str | None, str | None] | None = None,
    components: dict[str, str] | None = None,
) -> FrameworkMatch:
    """Resolve a framework from free text. ``parsed`` (name, version) and ``components`` come
    from the importers' stack parser (``stack_advisor.catalog.stack_text``), which this layer
    cannot import; without them the text is taken as "<name> [<version>]"."""
    if parsed is None:
        m = re.match(r"^\s*(.*?)(?:[\s:=/-]+v?(\d+(?:\.\d+)*\S*))?\s*$", str(text))
        parsed = (m.group(1) if m else str(text), m.group(2) if m else None)
    name, version = parsed
    match = resolve_framework_name(name or str(text))
    return FrameworkMatch(
        raw=str(text), name=match, version=version, components=dict(components or {})
    )


# ---- cuDNN versions --------------------------------------------------------------------------


def cudnn_version(value: Any) -> str | None:
    """cuDNN's integer version (``CUDNN_VERSION``/``torch.backends.cudnn.version()``: 91900,
    8902) as the dotted release (9.19.0, 8.9.2); a dotted string is returned as given.

    cuDNN 9 encodes major*10000 + minor*100 + patch; cuDNN 8 and older major*1000 + minor*100 +
    patch."""
    if value is None:
        return None
    text = str(value).strip()
    if not re.fullmatch(r"\d{4,6}", text):
        return text or None
    number = int(text)
    if number >= 90000:
        major, rest = divmod(number, 10000)
    else:
        major, rest = divmod(number, 1000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"
