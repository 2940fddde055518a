"""User input in catalogue names, at the advisor's edge (workloads, prediction queries, filters).

The knowledge base stores catalogue names (``stack_advisor.catalog``); what users type is resolved
here once, so the engine compares canonical names and never raw strings. An accelerator filter
may name one board or slice ("NVIDIA A100-SXM-80GB"), a family ("H100"), a generation
("hopper"), a vendor ("amd") or "cpu".
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import lru_cache

from stack_advisor.advisor.knowledge.rules import parse_version
from stack_advisor.advisor.results import PredictQuery
from stack_advisor.catalog import (
    cudnn_version,
    load_catalog,
    named_scenario,
    normalize,
    resolve_accelerator,
    resolve_benchmark,
    resolve_framework_name,
    resolve_metric,
    resolve_scenario,
)
from stack_advisor.catalog.loading import name_keys
from stack_advisor.catalog.stack_text import classify_placement, parse_components, parse_framework
from stack_advisor.schema.models import PlacementKind


@dataclass(frozen=True)
class AcceleratorSelector:
    """Which stored accelerators a user's filter text stands for."""

    text: str
    # "key" (one board with its slices, or one slice) | "family" | "generation" | "vendor" | "cpu"
    kind: str
    value: str

    def matches(self, key: str) -> bool:
        if self.kind == "key":
            return key == self.value or key.startswith(self.value + " (")
        match = resolve_accelerator(key)
        if self.kind == "cpu":
            return match.kind in ("cpu", "none")
        entry = match.entry
        if entry is None:
            return False
        if self.kind == "family":
            return normalize(entry.family) == self.value
        if self.kind == "generation":
            return entry.generation == self.value
        return entry.vendor == self.value


@lru_cache(maxsize=1024)
def accelerator_selector(text: str) -> AcceleratorSelector:
    """The selector a filter text stands for.

    Raises:
        ValueError: nothing in the catalogue has that name (the message suggests the closest).
    """
    cat = load_catalog()
    key = normalize(text)
    if key == "cpu":
        return AcceleratorSelector(text, "cpu", "cpu")
    match = resolve_accelerator(text)
    if match.resolved and match.kind == "accelerator":
        return AcceleratorSelector(text, "key", match.key)
    if match.resolved and match.kind == "cpu":
        return AcceleratorSelector(text, "key", match.key)
    families = {normalize(a.family) for a in cat.accelerators.values()}
    if key in families:
        return AcceleratorSelector(text, "family", key)
    named = {
        normalize(cat.accelerators[s].family) for s in match.suggestions if s in cat.accelerators
    }
    if match.refusal == "family" and len(named) == 1:  # "RTX PRO 6000 Blackwell": its editions
        return AcceleratorSelector(text, "family", named.pop())
    if key in cat.generations:
        return AcceleratorSelector(text, "generation", key)
    if key in {a.vendor for a in cat.accelerators.values()}:
        return AcceleratorSelector(text, "vendor", key)
    raise ValueError(
        match.message("accelerator").removeprefix("accelerator: ")
        + "; a family (H100), generation (hopper) or vendor (nvidia) also works"
    )


def held_name(text: str, stored: str) -> bool:
    """Whether filter text names a stored accelerator name as published (trademarks, case and
    punctuation aside): a part the catalogue lacks, imported under its own name."""
    return bool(set(name_keys(text)) & set(name_keys(stored)))


def selects(text: str, stored: str) -> bool:
    """Whether the filter text selects a stored accelerator name: through the catalogue's
    selector where it knows the text, else by the name as stored (``held_name``)."""
    try:
        selector = accelerator_selector(text)
    except ValueError:
        return held_name(text, stored)
    return selector.matches(stored)


def canonical_scenario(text: str | None) -> str | None:
    """``offline`` → ``Offline``.

    Raises:
        ValueError: an unknown scenario, with the closest known ones.
    """
    if text is None:
        return None
    match = resolve_scenario(text)
    if not match.resolved:
        known = "" if match.suggestions else f"; known: {', '.join(load_catalog().scenarios)}"
        raise ValueError(match.message().removeprefix("scenario: ") + known)
    return match.id


def canonical_metric(text: str | None) -> str | None:
    """``ttft_ms`` → ``ttft_p99_ms`` (a catalogue alias); a name the catalogue does not know is
    kept (our collectors record metrics of their own: the engine names those it has)."""
    if text is None:
        return None
    match = resolve_metric(text)
    return match.id if match.resolved and match.id else text


def canonical_benchmark(text: str | None, family: str | None = None) -> str | None:
    """``sdxl`` → ``stable-diffusion-xl`` (in ``family`` when given: Training's ``gnn`` →
    ``rgat``); a name the catalogue does not know is kept (the knowledge base may hold it: the
    engine reports it with the closest names when it does not)."""
    if text is None:
        return None
    match = resolve_benchmark(text, family)
    return match.id if match.resolved else text.strip()


def canonical_framework(text: str) -> str:
    """``torch`` → ``pytorch``, ``CUDA`` → ``cuda``.

    Raises:
        ValueError: an unknown framework or component, with the closest known ones.
    """
    match = resolve_framework_name(text.strip())
    if not match.resolved:
        raise ValueError(
            match.message()
            .removeprefix("framework: ")
            .replace("unknown framework", "unknown framework or component")
        )
    return match.id


def framework_from_text(
    text: str, benchmark: str | None = None, family: str | None = None
) -> tuple[str, str | None, dict[str, str]]:
    """A framework written as MLPerf writes it ("TensorRT 8.6.0, CUDA 12.0"): (canonical name,
    version, the other components the text names). With ``benchmark``, a text that lists
    several runtimes is read as that benchmark's result ran it (``parse_framework``).

    Raises:
        ValueError: the framework is unknown.
    """
    if benchmark and family:
        name, version = parse_framework(text, benchmark, family)
    else:
        name, version = parse_framework(text)
    components = parse_components(text)
    canonical = canonical_framework(name or text)
    components.pop(canonical, None)
    return canonical, version, components


def canonical_components(components: dict[str, str]) -> dict[str, str]:
    """Component names in catalogue spelling, cuDNN integers as releases (91900 → 9.19.0).

    Raises:
        ValueError: an unknown component name.
    """
    out: dict[str, str] = {}
    for name, version in components.items():
        key = canonical_framework(name)
        if key not in NOT_VERSIONS:
            _version_written(key, str(version))
        out[key] = (cudnn_version(version) or version) if key == "cudnn" else version
    return out


NOT_VERSIONS = ("implementation",)  # components whose value is a kind, not a release


def _version_written(component: str, version: str) -> None:
    """A component's version as the rules read one (``knowledge.rules.parse_version``).

    Raises:
        ValueError: an empty or non-version text, which would otherwise skip the rules that
            judge the version (a probe's driver "abc" answered a B200 query as runnable).
    """
    if parse_version(version) is None:
        example = "570.133.20" if component == "driver" else "12.4 or 2.3.0"
        raise ValueError(
            f"{component} {version!r} is not a version (write e.g. {example}, or leave it out)"
        )


def _named_placement(name: str, default: PlacementKind) -> PlacementKind:
    """The placement an accelerator's published name states ("Virtualized NVIDIA H200-SXM-141GB":
    a VM of unstated kind, as the importers store its results; a vGPU profile such as
    ``A100-SXM-80C``: vGPU), else ``default``."""
    kind = _placement_in_name(name)
    return default if kind is PlacementKind.BARE_METAL else kind


@lru_cache(maxsize=4096)
def _placement_in_name(name: str) -> PlacementKind:
    """``classify_placement`` of a name alone, read once per name (every query asks)."""
    return classify_placement({"accelerator_model_name": name}, has_accelerator=True).kind


def _not_one_accelerator(raw: str, kind: str) -> str:
    """Why a resolved name cannot be predicted for: a system of several accelerator models, or
    one that names no accelerator. The reason's head says which (reports count by it)."""
    if kind == "mixed":
        return (
            f"mixed accelerators: {raw!r} is one system of several accelerator models; "
            "predictions are "
            "per accelerator model (ask for each part with its count)"
        )
    return f"no accelerator: {raw!r} names none (for a CPU-only system, name its CPU model)"


def _unknown_benchmark(
    query: PredictQuery, name: str, suggestions: tuple[str, ...], known: set[tuple[str, str]]
) -> str:
    """Why a query's benchmark is refused: a benchmark of another family says which family to
    name (a Training benchmark asked as inference), else the closest names of its own."""
    close = [n for f, n in known if f == query.family]
    hint = suggestions or tuple(difflib.get_close_matches(name, close, n=3, cutoff=0.5))
    meant = f"did you mean {' or '.join(repr(h) for h in hint)}?" if hint else ""
    elsewhere = sorted(f for f, n in known if n == name and f != query.family)
    head = f"benchmark: unknown benchmark {query.benchmark!r} in {query.family}"
    if elsewhere:
        other = f'; it is a benchmark of {" and ".join(elsewhere)}: add "family": "{elsewhere[0]}"'
        return head + other + (f" (or {meant})" if meant else "")
    return head + (f"; {meant}" if meant else "")


def _unknown_family(family: str, known_benchmarks: set[tuple[str, str]]) -> str | None:
    """Why ``family`` is no family the knowledge base or the catalogue holds, with its closest
    spelling; None when it is one."""
    families = {f for f, _ in known_benchmarks} | {"mlperf-inference", "mlperf-training"}
    if family in families:
        return None
    close = difflib.get_close_matches(family, sorted(families), n=1, cutoff=0.6)
    return (
        f"family: unknown family {family!r}"
        + (f"; did you mean {close[0]!r}?" if close else "")
        + f" (known: {', '.join(sorted(families))})"
    )


def canonical_query(
    query: PredictQuery,
    known_benchmarks: set[tuple[str, str]],
    held_accelerator: bool = False,
) -> tuple[PredictQuery, list[str]]:
    """A prediction query in catalogue names, and what in it cannot be resolved (each with the
    closest known names). ``known_benchmarks``: (family, name) pairs the knowledge base holds;
    ``held_accelerator``: the knowledge base holds results under the accelerator's name as
    written (an import that could not resolve it kept it), so it is asked as it is.

    The framework may be written as MLPerf writes it ("TensorRT 8.6.0, CUDA 12.0"): its version
    and the components it names join ``components`` (explicit components win)."""
    problems: list[str] = []
    update: dict[str, object] = {}
    acc = resolve_accelerator(query.accelerator)
    if not acc.resolved and held_accelerator:
        pass  # the results stored under this very name answer it
    elif not acc.resolved or acc.kind in ("none", "mixed"):
        problems.append(
            acc.message("accelerator")
            if not acc.resolved
            else _not_one_accelerator(query.accelerator, acc.kind)
        )
    else:
        update["accelerator"] = acc.key
        if "placement" not in query.model_fields_set:  # a name as published may say where it ran
            update["placement"] = _named_placement(query.accelerator, query.placement)
    if query.scenario is not None:
        try:
            update["scenario"] = canonical_scenario(query.scenario)
        except ValueError as exc:
            problems.append(f"scenario: {exc}")
    bench = resolve_benchmark(query.benchmark, query.family)
    name = bench.id if bench.resolved else query.benchmark.strip()
    family = _unknown_family(query.family, known_benchmarks)
    if family:  # the family misspelt: say so, not "unknown benchmark"
        problems.append(family)
    elif (query.family, name) not in known_benchmarks and not bench.resolved:
        problems.append(_unknown_benchmark(query, name, bench.suggestions, known_benchmarks))
    update["benchmark"] = name
    update["metric"] = canonical_metric(query.metric)
    if bench.resolved and bench.scenario is not None:
        _scenario_from_name(query, update, problems)
    components = dict(query.components)
    try:
        components = canonical_components(components)
    except ValueError as exc:
        problems.append(f"components: {exc}")
    if query.framework:
        try:
            # pinned as a workload constraint writes it (tensorrt==10.2.0): the version it names
            text = query.framework.replace("==", " ")
            framework, version, named = framework_from_text(text, name, query.family)
            update["framework"] = framework
            for key, value in named.items():
                components.setdefault(key, value)
            if version and framework not in components:
                components[framework] = version
        except ValueError as exc:
            problems.append(f"framework: {exc}")
    if components or "components" in query.model_fields_set:  # else none were given or named
        update["components"] = components
    return query.model_copy(update=update), problems


def _scenario_from_name(
    query: PredictQuery, update: dict[str, object], problems: list[str]
) -> None:
    try:
        update["scenario"] = scenario_in_name(query.benchmark, query.family, query.scenario)
    except ValueError as exc:
        problems.append(f"scenario: {exc}")


def scenario_in_name(benchmark: str, family: str | None, scenario: str | None) -> str | None:
    """The scenario a benchmark's name carries ("llama2-70b-interactive-99": Interactive), None
    when it carries none; a scenario given beside it must be that one or the LoadGen mode it
    runs in (Server).

    Raises:
        ValueError: the given scenario is another one (or unknown).
    """
    bench = resolve_benchmark(benchmark, family)
    if not bench.resolved or bench.scenario is None:
        return None
    given = canonical_scenario(scenario) if scenario else None
    if given is None or named_scenario(bench, given) == bench.scenario:
        return bench.scenario
    raise ValueError(
        f"benchmark {benchmark!r} is {bench.id}'s {bench.scenario} scenario, not {given}"
    )


def matching_accelerators(names: list[str], text: str) -> list[str]:
    """The stored accelerator names (of ``names``) a user's filter text selects; a name the
    catalogue lacks selects the stored names it is (a new round's part, imported as published).

    Raises:
        InvalidInput: the text names nothing the catalogue or ``names`` knows (with the closest
            names).
    """
    from stack_advisor.schema.errors import InvalidInput

    try:
        selector = accelerator_selector(text)
    except ValueError as exc:
        held = [name for name in names if held_name(text, name)]  # a part the catalogue lacks
        if held:
            return held
        raise InvalidInput(f"accelerator: {exc}") from None
    return [name for name in names if selector.matches(name)]
