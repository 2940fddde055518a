"""Accelerator (and host CPU) names resolved to catalogue entries: a board, a MIG slice or vGPU
profile of one, a host CPU, a heterogeneous system's parts, or why the name resolves to none
(unknown, ambiguous, a family of parts) with the closest names. ``stack_advisor.catalog.resolve``
is the one place callers import these from.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from stack_advisor.catalog.entries import AcceleratorEntry
from stack_advisor.catalog.loading import (
    VENDOR_WORDS,
    Catalog,
    NameMatch,
    load_catalog,
    name_keys,
    normalize,
)
from stack_advisor.catalog.spelling import strip_marks
from stack_advisor.catalog.spelling import words as spelling_words

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
# a heterogeneous system's name lists its parts; longer than this, a text names no accelerator
MAX_NAME_READ = 1024


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
    if "(x" not in name.replace(" ", "").lower():  # the form's mark (the pattern is slow without)
        return None
    pieces = _COUNTED.findall(name)
    if len(pieces) < 2 or "".join(f"{m} (x{n})" for m, n in pieces).replace(
        " ", ""
    ) != name.replace(",", "").replace(" ", ""):
        return None
    return tuple(AcceleratorPart(None, int(n), resolve_accelerator(model)) for model, n in pieces)


def is_mixed_system(name: str) -> bool:
    """Whether ``name`` is a heterogeneous system's key as this resolver makes it
    ("mixed: 32x MI300X + 16x MI325X"): its per-accelerator figure averages several parts."""
    return name.lower().startswith("mixed: ")


def _mixed_parts(name: str) -> tuple[tuple[AcceleratorPart, ...], str] | None:
    """The parts of a heterogeneous system and how they were read: a key this resolver made
    ("mixed: 1x(8x A) + 2x(4x B)", "mixed: 32x A + 16x B"), MLPerf's "1 Node: Ax8, 2 Nodes: Bx4"
    or "A (x32), B (x16)"; None when the name is one part."""
    if is_mixed_system(name):
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
    raw = text
    name = " ".join(str(text).split())
    if len(name) > MAX_NAME_READ:  # no accelerator is named so long: unknown, nothing suggested
        return AcceleratorMatch(raw=raw, kind="accelerator", resolved=False, refusal="unknown")
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
    match = _one_part(raw, _Written.of(name), load_catalog())
    if not match.resolved and not match.suggestions:
        cpu = resolve_cpu(name)
        if cpu.resolved:  # a host CPU written as published, without "CPU ": a CPU-only system
            return AcceleratorMatch(
                raw=raw, kind="cpu", resolved=True, cpu=cpu.id, matched_by="host CPU"
            )
    return match


@dataclass(frozen=True)
class _Written:
    """A part's name with what it says besides the board: a VM, a MIG slice (its partition and
    (instances, compute slices each)), shared or CTS suffixes dropped."""

    name: str
    placement: str | None = None
    partition: str | None = None
    slices: tuple[int, int] | None = None

    @classmethod
    def of(cls, name: str) -> _Written:
        placement = None
        if _VIRTUALIZED.search(name):
            placement, name = "vm", _VIRTUALIZED.sub("", name)
        partition = None
        slices: tuple[int, int] | None = None
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
        name = _CTS.sub("", _SHARED.sub("", name)).strip()
        return cls(name, placement, partition, slices)


def _one_part(raw: str, written: _Written, cat: Catalog) -> AcceleratorMatch:
    """One board (or a slice or vGPU profile of one), else why not: ambiguous, a family, or
    unknown with the closest names."""
    found = _board_match(written.name, cat)
    if isinstance(found, list):
        return AcceleratorMatch(
            raw=raw,
            kind="accelerator",
            resolved=False,
            placement=written.placement,
            suggestions=tuple(found),
            refusal="ambiguous",
        )
    if found is not None:
        entry, how = found
        fraction = 1.0
        if written.slices and entry.mig_slices:
            fraction = min(1.0, written.slices[0] * written.slices[1] / entry.mig_slices)
        return AcceleratorMatch(
            raw=raw,
            kind="accelerator",
            resolved=True,
            entry=entry,
            fraction=fraction,
            partition=written.partition,
            placement=written.placement,
            matched_by=how,
        )
    vgpu = _vgpu_profile(raw, written.name, cat)
    if vgpu is not None:
        return vgpu
    members = _family_members(written.name, cat)
    return AcceleratorMatch(
        raw=raw,
        kind="accelerator",
        resolved=False,
        placement=written.placement,
        suggestions=tuple(members or cat.accelerator_index.suggest(raw)),
        refusal="family" if members else "unknown",
    )


def _vgpu_profile(raw: str, name: str, cat: Catalog) -> AcceleratorMatch | None:
    """A vGPU profile name (``A100-40C``): its board at the profile's share of the memory."""
    vgpu = _VGPU.match(VENDOR_WORDS.sub("", name))
    if not vgpu or vgpu.group("prefix").lower() not in cat.vgpu_prefixes:
        return None
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


# ---- CPUs ------------------------------------------------------------------------------------


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
