"""One resolver: free text in, canonical entity (plus placement hints) out.

Order, as kubectl resolves kinds: the exact id or name, then declared aliases (both compared
case- and punctuation-blind, with or without a leading vendor word), then patterns. Text nothing
matches keeps its raw name, marked unresolved, with the closest known names as suggestions.
The catalogue itself is loaded and indexed by ``stack_advisor.catalog.loading``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from stack_advisor.catalog.entries import AcceleratorEntry
from stack_advisor.catalog.loading import MLPERF_INFERENCE as MLPERF_INFERENCE
from stack_advisor.catalog.loading import VENDOR_WORDS, NameIndex, name_keys
from stack_advisor.catalog.loading import Catalog as Catalog
from stack_advisor.catalog.loading import load_catalog as load_catalog
from stack_advisor.catalog.loading import load_entries as load_entries
from stack_advisor.catalog.loading import normalize as normalize
from stack_advisor.catalog.spelling import strip_marks
from stack_advisor.catalog.spelling import words as spelling_words
from stack_advisor.schema.errors import InvalidInput

NOT_AN_ACCELERATOR = frozenset({"", "-", "n/a", "na", "none", "null", "cpu"})


# ---- accelerators ----------------------------------------------------------------------------

_MIG_MLPERF = re.compile(r"\s*\((\d+)\s*x\s*(\d+)g\.(\d+)gb\s+mig\)\s*$", re.IGNORECASE)
_MIG_GFD = re.compile(r"[-\s]mig[-\s](\d+)g\.(\d+)gb\s*$", re.IGNORECASE)
_SHARED = re.compile(r"-shared$", re.IGNORECASE)
_CTS = re.compile(r"[\s-]cts$", re.IGNORECASE)
_VIRTUALIZED = re.compile(r"^virtuali[sz]ed\s+", re.IGNORECASE)
_VGPU = re.compile(
    r"^(?P<prefix>[a-z0-9]+(?:-[a-z]+\d?)?)-(?P<gb>\d{1,3})(?P<series>[abcq])$", re.IGNORECASE
)
_MIXED_PART = re.compile(r"^(\d+)x\((\d+)x (.+)\)$")
_HETERO = re.compile(r"(\d+)\s*nodes?\s*:\s*([^,]+?)\s*x\s*(\d+)\s*(?:,|$)", re.IGNORECASE)
# "<model> (x32), <model> (x16)": a heterogeneous system by total count per model (MLPerf v5.1)
_COUNTED = re.compile(r"\s*([^,]+?)\s*\(x\s*(\d+)\)\s*(?:,|$)", re.IGNORECASE)
_COUNTED_PART = re.compile(r"^(\d+)x (.+)$")


@dataclass(frozen=True)
class AcceleratorPart:
    """One part of a heterogeneous system: ``nodes`` nodes with ``per_node`` of ``accelerator``;
    ``nodes`` None when the text gives only the part's total count (then in ``per_node``)."""

    nodes: int | None
    per_node: int
    accelerator: AcceleratorMatch

    @property
    def key(self) -> str:
        if self.nodes is None:
            return f"{self.per_node}x {self.accelerator.key}"
        return f"{self.nodes}x({self.per_node}x {self.accelerator.key})"


@dataclass(frozen=True)
class AcceleratorMatch:
    """What an accelerator name stands for.

    kind: ``accelerator`` (a catalogue entry, possibly a MIG slice or vGPU profile of it),
    ``cpu`` (no accelerator: the host CPU), ``mixed`` (a heterogeneous system, see ``parts``),
    ``none`` (the text says there is no accelerator). ``key`` is the canonical name the
    knowledge base stores: the entry id, "<id> (<partition>)" for a slice, "CPU <model>" for a
    CPU; the raw text, stripped, when unresolved. An unresolved name says why in ``refusal``:
    ``unknown`` (nothing matches), ``ambiguous`` (the patterns of several parts match) or
    ``family`` (it names a family of parts, e.g. "H100"); ``suggestions`` are the closest
    names, or the candidate parts' ids for the last two."""

    raw: str
    kind: str
    resolved: bool
    entry: AcceleratorEntry | None = None
    cpu: str | None = None
    fraction: float = 1.0
    partition: str | None = None
    placement: str | None = None  # "vgpu" | "vm" when the name says so
    vgpu_profile: str | None = None
    matched_by: str | None = None  # "id" | "alias" | "pattern"
    parts: tuple[AcceleratorPart, ...] = ()
    suggestions: tuple[str, ...] = ()
    refusal: str | None = None

    @property
    def key(self) -> str:
        if self.kind == "cpu":
            return "CPU " + (self.cpu or self.raw.strip().removeprefix("CPU ").strip() or "unknown")
        if self.kind == "mixed":
            return "mixed: " + " + ".join(p.key for p in self.parts)
        if self.entry is None:
            return " ".join(self.raw.split())
        return self.entry.id + (f" ({self.partition})" if self.partition else "")

    @property
    def vendor(self) -> str | None:
        if self.kind == "cpu":
            return "cpu"
        return self.entry.vendor if self.entry else None

    def figure(self, name: str) -> float | None:
        """A datasheet figure scaled to the share of the board (MIG slice, vGPU profile):
        ``memory_gb``, ``memory_bw_gbs``, ``tdp_w`` or a precision of ``peak_tflops``."""
        if self.entry is None:
            return None
        value = (
            getattr(self.entry.peak_tflops, name, None)
            if name not in ("memory_gb", "memory_bw_gbs", "tdp_w")
            else getattr(self.entry, name)
        )
        return None if value is None else float(value) * self.fraction

    def message(self, field_name: str = "accelerator") -> str:
        """Why this name did not resolve, with the closest known names."""
        hint = (
            f"; did you mean {' or '.join(repr(s) for s in self.suggestions)}?"
            if self.suggestions
            else ""
        )
        if self.refusal == "family":
            return f"{field_name}: {self.raw!r} names a family of several parts, not one{hint}"
        if self.refusal == "ambiguous":
            return f"{field_name}: {self.raw!r} could be any of several parts{hint}"
        return (
            f"{field_name}: unknown accelerator {self.raw!r}{hint} "
            "(`advisor catalogue search` and GET /v1/catalogue/accelerators list the known ones)"
        )


def _board_match(text: str, cat: Catalog) -> tuple[AcceleratorEntry, str] | list[str] | None:
    """The entry a board name stands for and how it matched; the candidates' ids (two or more)
    when the patterns of several entries match; None when nothing does."""
    found = cat.accelerator_index.find(text)
    if found:
        return cat.accelerators[found[0]], found[1]
    lowered = " ".join(text.lower().split())
    bare = VENDOR_WORDS.sub("", lowered)
    hits = list(
        dict.fromkeys(
            acc_id
            for pattern, acc_id in cat.accelerator_patterns
            if pattern.search(lowered) or pattern.search(bare)
        )
    )
    written = [int(m) for m in _MEMORY.findall(lowered)]
    if written:  # "H100 SXM5 94GB" is not the 80 GB board a pattern for "H100 SXM" finds
        hits = [h for h in hits if _memory_fits(cat.accelerators[h].memory_gb, written)]
    if len(hits) == 1:
        return cat.accelerators[hits[0]], "pattern"
    return hits or None


_MEMORY = re.compile(r"(?<![\d.])(\d{2,3})\s*gb?\b")
# marketing and usable capacities differ by a few percent (B200 192 / 180 GB, H100 NVL 96 / 94 GB)
_MEMORY_SLACK = 0.07


def _memory_fits(memory_gb: float | None, written: list[int]) -> bool:
    """Whether a memory size written in a name could be this part's (no size known: yes)."""
    if memory_gb is None:
        return True
    return any(abs(w - memory_gb) <= _MEMORY_SLACK * memory_gb for w in written)


def _family_members(text: str, cat: Catalog) -> list[str]:
    """The ids of the parts whose family the text names ("H100", "NVIDIA RTX PRO 6000"), or
    which one family's several parts all begin with ("RTX PRO 6000 Blackwell", "MI300")."""
    keys = set(name_keys(text))
    named = [a.id for a in cat.accelerators.values() if normalize(a.family) in keys]
    if named:
        return named
    named = _family_in_other_words(text, cat)
    if named:
        return named
    prefixed = [
        a
        for a in cat.accelerators.values()
        if any(
            k.startswith(key)
            for key in keys
            if len(key) >= 4
            for n in a.names()
            for k in name_keys(n)
        )
    ]
    if len(prefixed) >= 2 and len({a.family for a in prefixed}) == 1:
        return [a.id for a in prefixed]
    return []


# what a name may add to a family's name and still name the whole family: the bus, the
# architecture, a memory size every member has ("RTX PRO 4500 Blackwell-PCIe-32GB")
_FAMILY_FILLER = re.compile(
    r"^(?:pcie|pci|gen\d|blackwell|hopper|ada|gpu|card|\d{1,3}gb?|gddr\d|hbm\d?e?)$"
)


def _family_in_other_words(text: str, cat: Catalog) -> list[str]:
    """The members of a family the text names with its words in another order ("RTX 6000 PRO")
    or followed only by words every member shares (bus, architecture, a memory size all have);
    [] unless two or more members remain."""
    asked = spelling_words(VENDOR_WORDS.sub("", text.strip()), folded=False)
    families: dict[str, list[AcceleratorEntry]] = {}
    for acc in cat.accelerators.values():
        families.setdefault(acc.family, []).append(acc)
    written = [int(m) for m in _MEMORY.findall(text.lower())]
    for family, members in families.items():
        own = spelling_words(family, folded=False)
        if len(members) < 2 or not own:
            continue
        need, have = Counter(own), Counter(asked)
        if need - have or not all(_FAMILY_FILLER.match(w) for w in (have - need).elements()):
            continue
        fit = [m.id for m in members if not written or _memory_fits(m.memory_gb, written)]
        if len(fit) >= 2:
            return fit
    return []


def _counted_parts(name: str) -> tuple[AcceleratorPart, ...] | None:
    """ "A (x32), B (x16)" → the parts by total count; None when the text is not of that form."""
    pieces = _COUNTED.findall(name)
    if len(pieces) < 2 or "".join(f"{m} (x{n})" for m, n in pieces).replace(
        " ", ""
    ) != name.replace(",", "").replace(" ", ""):
        return None
    return tuple(AcceleratorPart(None, int(n), resolve_accelerator(model)) for model, n in pieces)


def _mixed_parts(name: str) -> tuple[tuple[AcceleratorPart, ...], str] | None:
    """The parts of a heterogeneous system and how they were read: a key this resolver made
    ("mixed: 1x(8x A) + 2x(4x B)", "mixed: 32x A + 16x B"), MLPerf's "1 Node: Ax8, 2 Nodes: Bx4"
    or "A (x32), B (x16)"; None when the name is one part."""
    if name.lower().startswith("mixed: "):
        parts = []
        for piece in name[len("mixed: ") :].split(" + "):
            m = _MIXED_PART.match(piece)
            c = None if m else _COUNTED_PART.match(piece)
            if m is not None:
                parts.append(
                    AcceleratorPart(
                        int(m.group(1)), int(m.group(2)), resolve_accelerator(m.group(3))
                    )
                )
            elif c is not None:
                parts.append(
                    AcceleratorPart(None, int(c.group(1)), resolve_accelerator(c.group(2)))
                )
            else:
                break
        else:
            return tuple(parts), "id"
    hetero = _HETERO.findall(name)
    if len(hetero) >= 2 or (hetero and re.match(r"^\d+\s*nodes?\s*:", name, re.IGNORECASE)):
        return tuple(
            AcceleratorPart(int(n), int(k), resolve_accelerator(model)) for n, model, k in hetero
        ), "pattern"
    counted = _counted_parts(name)
    return (counted, "pattern") if counted is not None else None


@lru_cache(maxsize=8192)
def resolve_accelerator(text: str) -> AcceleratorMatch:
    """The canonical accelerator a name stands for (see ``AcceleratorMatch``); never raises."""
    cat = load_catalog()
    raw = text
    name = " ".join(str(text).split())
    if name.lower() in NOT_AN_ACCELERATOR:
        return AcceleratorMatch(raw=raw, kind="none", resolved=True)
    if name.lower().startswith("cpu "):
        cpu = resolve_cpu(name[4:])
        return AcceleratorMatch(
            raw=raw,
            kind="cpu",
            resolved=cpu.resolved,
            cpu=cpu.id,
            matched_by=cpu.matched_by,
            suggestions=cpu.suggestions,
        )
    name = strip_marks(name)  # after the CPU path: CPU patterns read "Intel(R) Xeon(R) ..."
    parts = _mixed_parts(name)
    if parts is not None:
        return AcceleratorMatch(
            raw=raw,
            kind="mixed",
            resolved=all(p.accelerator.resolved for p in parts[0]),
            parts=parts[0],
            matched_by=parts[1],
        )
    placement = None
    if _VIRTUALIZED.search(name):
        placement, name = "vm", _VIRTUALIZED.sub("", name)
    partition = None
    slices: tuple[int, int] | None = None  # (instances, compute slices each)
    mig = _MIG_MLPERF.search(name)
    if mig:
        slices = (int(mig.group(1)), int(mig.group(2)))
        partition = f"{mig.group(1)}x{mig.group(2)}g.{mig.group(3)}gb MIG"
        name = name[: mig.start()]
    else:
        mig = _MIG_GFD.search(name)
        if mig:
            slices = (1, int(mig.group(1)))
            partition = f"1x{mig.group(1)}g.{mig.group(2)}gb MIG"
            name = name[: mig.start()]
    name = _SHARED.sub("", name)
    name = _CTS.sub("", name).strip()
    found = _board_match(name, cat)
    if isinstance(found, list):
        return AcceleratorMatch(
            raw=raw,
            kind="accelerator",
            resolved=False,
            placement=placement,
            suggestions=tuple(found),
            refusal="ambiguous",
        )
    if found is not None:
        entry, how = found
        fraction = 1.0
        if slices and entry.mig_slices:
            fraction = min(1.0, slices[0] * slices[1] / entry.mig_slices)
        return AcceleratorMatch(
            raw=raw,
            kind="accelerator",
            resolved=True,
            entry=entry,
            fraction=fraction,
            partition=partition,
            placement=placement,
            matched_by=how,
        )
    vgpu = _VGPU.match(VENDOR_WORDS.sub("", name))
    if vgpu and vgpu.group("prefix").lower() in cat.vgpu_prefixes:
        entry = cat.accelerators[cat.vgpu_prefixes[vgpu.group("prefix").lower()]]
        profile = f"{vgpu.group('prefix')}-{vgpu.group('gb')}{vgpu.group('series').upper()}"
        fraction = min(1.0, int(vgpu.group("gb")) / entry.memory_gb) if entry.memory_gb else 1.0
        return AcceleratorMatch(
            raw=raw,
            kind="accelerator",
            resolved=True,
            entry=entry,
            fraction=fraction,
            partition=None if fraction >= 1.0 else f"vGPU {profile}",
            placement="vgpu",
            vgpu_profile=profile,
            matched_by="pattern",
        )
    members = _family_members(name, cat)
    if members:
        return AcceleratorMatch(
            raw=raw,
            kind="accelerator",
            resolved=False,
            placement=placement,
            suggestions=tuple(members),
            refusal="family",
        )
    return AcceleratorMatch(
        raw=raw,
        kind="accelerator",
        resolved=False,
        placement=placement,
        suggestions=tuple(cat.accelerator_index.suggest(raw)),
        refusal="unknown",
    )


# ---- CPUs ------------------------------------------------------------------------------------


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
        return f"{field_name or self.what}: unknown {self.what} {self.raw!r}{hint}"

    def require(self, field_name: str | None = None) -> str:
        """The canonical id; raises InvalidInput (with suggestions) when unresolved."""
        if not self.resolved:
            raise InvalidInput(self.message(field_name))
        return self.id


def _model_case(model: str) -> str:
    def token(t: str) -> str:
        if re.fullmatch(r"[iv]\d", t):
            return t
        return t.upper() if re.search(r"\d", t) else t.capitalize()

    return re.sub(r"[A-Za-z0-9+.,]+", lambda m: token(m.group(0)), model.strip())


@lru_cache(maxsize=4096)
def resolve_cpu(text: str) -> NameMatch:
    """A host CPU model as "<Vendor> <Family> <model>" (e.g. "Intel Xeon Platinum 8380")."""
    cat = load_catalog()
    name = " ".join(str(text).split())
    for pattern, cpu in cat.cpu_patterns:
        match = pattern.search(name)
        if match:
            groups = {k: _model_case(v or "") for k, v in match.groupdict().items()}
            if groups.get("tier", "").lower() == "platium":
                groups["tier"] = "Platinum"
            return NameMatch(
                raw=text,
                id=cpu.id.format(**groups).strip(),
                resolved=True,
                what="cpu",
                matched_by="pattern",
            )
    return NameMatch(raw=text, id=name or "unknown", resolved=False, what="cpu")


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
