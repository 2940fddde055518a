"""Which runtime of a stack text ran one benchmark, and at which version.

A system's framework field lists every runtime it used for every benchmark it submitted:
``TensorRT 10.14, CUDA 13.1, cuDNN 9.17, TensorRT-LLM feat/1.2-mlpinf, NVIDIA Dynamo
mlperf-v6.0-dynamo-v0.8.0, vLLM CentML:mlperf-inf-mm-q3vl-v6.0``, or per benchmark
(``PyTorch: Retinanet: 1.12.0a0+git..., Whisper: 2.7.0+cpu``). The text is cut into its parts
(at commas and semicolons); each part names a runtime (or continues the one before it), a version
and, where a branch or tag stands in the version's place, that reference. The runtime of a
benchmark is, in this order:

1. the part that names the benchmark (``Whisper: 2.7.0``; a tag naming its model, ``...-q3vl-...``);
2. among the parts that name no other benchmark, for a generative benchmark (the catalogue's
   ``tokens``) an LLM serving engine (``frameworks.yaml``'s ``llm_engine``), for any other
   benchmark a runtime that is not one; the engine before the framework it runs on (vLLM before
   PyTorch, Triton before TensorRT), as ``stack_text.FRAMEWORK_ORDER`` ranks them.

A version is only ever a version-shaped word written after the runtime's name (``10.14``,
``v0.9.2``, ``0.6.5.dev964+mlperf50`` → 0.6.5); a branch or tag (``feat/1.2-mlpinf``,
``mlperf-v6.0-dynamo-v0.8.0``, ``CentML:mlperf-inf-...-v6.0``) is kept as the part's ``ref``,
never read as a version. The published text stays in ``raw``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from stack_advisor.catalog.resolve import (
    MLPERF_INFERENCE,
    load_catalog,
    normalize,
    resolve_framework_name,
)
from stack_advisor.catalog.rounds import load_rounds

# a version-shaped word: v?digits(.digits)* with an optional release suffix (rc1, a0+git..., -dev)
_VERSION_WORD = re.compile(r"^[(\[-]?v?(\d+(?:\.\d+)*)(?:[.+~-]?[0-9a-z.+~-]*)?[)\]]?$", re.I)
# a branch, tag or commit written where a version would be: a path, a registry-style tag, a word
# joined to digits by '-'/'_' ("mlperf-v6.0"), key=value
_REF_WORD = re.compile(r"[/:=]|^[a-z][a-z0-9]*[-_].*\d", re.IGNORECASE)
_LABEL = re.compile(r"^(?P<label>[A-Za-z][\w.+-]*):$")


@dataclass(frozen=True)
class StackPart:
    """One comma/semicolon-separated part of a stack text."""

    text: str
    runtime: str | None  # canonical framework id
    version: str | None
    ref: str | None  # a branch/tag/commit written where a version would be
    benchmarks: frozenset[str] = field(default_factory=frozenset)  # the benchmarks it names


@dataclass(frozen=True)
class RuntimeAttribution:
    """The runtime that ran ``benchmark`` according to the stack text ``raw``, and why."""

    raw: str
    runtime: str | None
    version: str | None
    basis: str
    ref: str | None = None


def version_after(words: list[str]) -> tuple[str | None, str | None]:
    """(version, ref) from the words after a runtime's name: the first version-shaped word, or
    the first branch/tag-like word (no version then); words of neither kind are skipped."""
    for i, word in enumerate(words):
        if _LABEL.match(word) or not re.search(r"\w", word):
            continue
        if _REF_WORD.search(word.strip("()[]")) and not _VERSION_WORD.match(word):
            return None, word.strip("()[],")
        version = _VERSION_WORD.match(word)
        if version:
            if _names_a_round(word, words[i + 1 : i + 2]):
                return None, word.strip("()[],")  # "v5.1-mlperf", "v6.0 submission": a round
            return version.group(1), None
    return None, None


# an MLPerf round's name written with a submission's word joined to it or right after it: the
# round the text was submitted in, not a release of the runtime ("vLLM v5.1-mlperf" in round v6.0,
# "TensorRT-LLM v6.0 submission"), whichever round the text was published in
_ROUND_WORD = re.compile(r"^[(\[-]?v(\d\.\d)(?![.\d])(?P<rest>\S*)", re.I)
_SUBMISSION = re.compile(r"mlperf|mlpinf|submission|\bround\b", re.I)


def _names_a_round(word: str, after: list[str]) -> bool:
    """Whether ``word`` (a version-shaped word, ``after`` the word that follows it) is a round's
    name beside a submission's word: a round the catalogue lists, or one of the next major
    release (a round not listed yet), never a release such as vLLM v0.9 or TensorRT v8.6."""
    match = _ROUND_WORD.match(word)
    if match is None:
        return False
    beside = _SUBMISSION.search(match.group("rest")) or any(_SUBMISSION.match(w) for w in after)
    return bool(beside) and _is_round_name(match.group(1))


@lru_cache(maxsize=64)
def _is_round_name(number: str) -> bool:
    listed = {entry.id.lstrip("v") for entry in load_rounds()}
    newest = max((int(n.split(".")[0]) for n in listed), default=0)
    return number in listed or newest < int(number.split(".")[0]) <= newest + 1


def _benchmarks_named(words: list[str], family: str) -> frozenset[str]:
    """Benchmarks of ``family`` a part names: a label ("Whisper:") or a word of a tag
    ("mlperf-inf-mm-q3vl-v6.0" names qwen3-vl), found by the catalogue's exact names only."""
    index = load_catalog().benchmark_index.get(family)
    if index is None:
        return frozenset()
    by_base = _by_base(family)
    found: set[str] = set()
    for word in words:
        label = _LABEL.match(word)
        pieces = [label.group("label")] if label else re.split(r"[-_:/]+", word)
        if label is None and not _REF_WORD.search(word):
            pieces = []
        for piece in pieces:
            hit = index.find(piece) if len(piece) >= 3 else None
            if hit:
                found.add(hit[0])
            elif len(piece) >= 3:
                found |= by_base.get(normalize(piece), frozenset())
    return frozenset(found)


@lru_cache(maxsize=8)
def _by_base(family: str) -> dict[str, frozenset[str]]:
    """Benchmark ids by their name without the accuracy target: "dlrmv2" names both
    dlrm-v2-99 and dlrm-v2-99.9."""
    out: dict[str, set[str]] = {}
    for entry in load_catalog().benchmarks.values():
        if entry.family == family:
            out.setdefault(normalize(re.sub(r"-99(?:\.9)?$", "", entry.id)), set()).add(entry.id)
    return {k: frozenset(v) for k, v in out.items()}


def split_parts(
    text: str,
    patterns: tuple[tuple[str, re.Pattern[str]], ...],
    family: str = MLPERF_INFERENCE,
) -> list[StackPart]:
    """The parts of a stack text, each with the runtime ``patterns`` (or the catalogue) find in
    it; a part that names no runtime but labels a benchmark continues the runtime before it."""
    parts: list[StackPart] = []
    previous: str | None = None
    for chunk in (c.strip() for c in re.split(r"[,;]", text)):
        if not chunk:
            continue
        runtime, rest = _runtime_in(chunk, patterns)
        words = rest.split()
        named = _benchmarks_named(chunk.split(), family)
        if runtime is None and named:
            runtime = previous
        version, ref = version_after(words) if runtime else (None, None)
        parts.append(StackPart(chunk, runtime, version, ref, named))
        previous = runtime or previous
    return parts


def _runtime_in(
    chunk: str, patterns: tuple[tuple[str, re.Pattern[str]], ...]
) -> tuple[str | None, str]:
    """(runtime id, the text after its name) for one part; (None, chunk) when none is named."""
    for name, pattern in patterns:
        match = pattern.search(chunk)
        if match:
            return name, chunk[match.end() :]
    words = chunk.split()
    lead: list[str] = []
    for word in words:
        if _VERSION_WORD.match(word) or _REF_WORD.search(word):
            break
        lead.append(word)
    if lead:
        hit = resolve_framework_name(" ".join(lead))
        entry = load_catalog().frameworks.get(hit.id) if hit.resolved else None
        if entry is not None and entry.kind == "framework":
            return entry.id, " ".join(words[len(lead) :])
    return None, chunk


@lru_cache(maxsize=1)
def _engines() -> frozenset[str]:
    return frozenset(f.id for f in load_catalog().frameworks.values() if f.llm_engine)


@lru_cache(maxsize=8192)
def attribute(
    text: str,
    benchmark: str,
    patterns: tuple[tuple[str, re.Pattern[str]], ...],
    family: str = MLPERF_INFERENCE,
) -> RuntimeAttribution | None:
    """The runtime of ``benchmark`` (a catalogue id of ``family``) in the stack text ``text``;
    None when the text names no runtime (the caller keeps its own reading)."""
    parts = [p for p in split_parts(text, patterns, family) if p.runtime]
    if not parts:
        return None
    own = [p for p in parts if benchmark in p.benchmarks]
    if own:
        return _answer(text, own[0], f"the part that names {benchmark}: {own[0].text!r}")
    pool = [p for p in parts if not p.benchmarks]
    if not pool:  # every part is another benchmark's: the runtime, at no version of this one's
        return RuntimeAttribution(
            text, parts[0].runtime, None, f"every part names another benchmark than {benchmark}"
        )
    entry = load_catalog().benchmark(family, benchmark)
    generative = bool(entry and entry.tokens)
    engines = _engines()
    kind = [p for p in pool if (p.runtime in engines) == generative]
    if kind:
        pool = kind
    order = [name for name, _ in patterns]
    best = min(pool, key=lambda p: order.index(p.runtime) if p.runtime in order else len(order))
    what = "an LLM serving engine" if generative else "a runtime that is not an LLM engine"
    many = len({p.runtime for p in parts}) > 1
    basis = (
        f"{benchmark} is {'generative' if generative else 'not generative'}: {what} of the "
        f"{len(parts)} runtimes listed"
        if many
        else "the only runtime the text names"
    )
    return _answer(text, best, basis)


def _answer(text: str, part: StackPart, basis: str) -> RuntimeAttribution:
    if part.ref and part.version is None:
        basis += f"; {part.ref!r} is a branch or tag, not a version"
    return RuntimeAttribution(text, part.runtime, part.version, basis, part.ref)
