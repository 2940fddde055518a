"""Feasibility before ranking: can this candidate run the workload at all?

A candidate is infeasible (and goes to ``excluded`` with the reason, never to the ranking) when

- the model does not fit: its weights at the narrowest precision the part computes in, against
  the memory one copy of the model can use (a MIG instance's own memory, a vGPU profile's, whole
  boards' times the count; ``stack_advisor.advisor.estimate.facts.replica_memory_gb``);
- its stack cannot run it: a runtime older than the first release that runs the model family, a
  CUDA version that was never released as a toolkit, a toolkit older than the accelerator's
  architecture (``stack_advisor.catalog.stack_facts``), a runtime of another vendor's GPUs than
  the part's (CUDA or TensorRT on an AMD part, ROCm on an NVIDIA one: ``foreign_runtime``);
- the nodes' driver (``--driver``; a predict query's ``driver`` component) does not apply:
  below the generation's minimum, breaking a compatibility rule with the stack (its CUDA's
  minimum driver), or the part is not an NVIDIA one, whose driver facts the version says
  nothing about.

``recommend`` excludes and ``predict`` refuses through the same ``refusal``, so the two never
disagree on a configuration.

Facts come from the catalogue with their sources; a fact the catalogue does not hold decides
nothing (unknown is never infeasible).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from stack_advisor.advisor.estimate.facts import (
    accelerator_class,
    accelerator_spec,
    generation_min_driver,
    memory_misfit,
)
from stack_advisor.advisor.knowledge.rules import (
    RuleSet,
    Severity,
    Violation,
    parse_version,
    stack_components,
)
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.verbs.candidates import Candidate, Slice, query_components
from stack_advisor.catalog import load_catalog, resolve_benchmark
from stack_advisor.catalog.stack_facts import cuda_toolkit, first_cuda, runtime_too_old
from stack_advisor.catalog.stack_text import system_components
from stack_advisor.schema.models import SoftwareStack


class StackRules(Protocol):
    """What the verdict reads the compatibility rules through (``Knowledge`` memoises it)."""

    def stack_violations(
        self, stack_id: str, stack: SoftwareStack, driver: str | None
    ) -> list[Violation]: ...


@dataclass(frozen=True)
class RuleCheck:
    """The compatibility rules as ``StackRules`` without a snapshot (``predict``'s queries)."""

    rules: RuleSet

    def stack_violations(
        self, stack_id: str, stack: SoftwareStack, driver: str | None
    ) -> list[Violation]:
        comps = stack_components(stack)
        if driver:
            comps["driver"] = driver
        return self.rules.check_components(comps)


def infeasible(knowledge: Knowledge, sl: Slice, c: Candidate, count: int) -> str | None:
    """Why ``count`` x the candidate cannot run the slice's workload on the user's nodes, or
    None (``refusal`` with the workload's ``--driver``)."""
    return refusal(knowledge, sl.workload.benchmark or "", c, count, sl.workload.hardware.driver)


def refusal(
    knowledge: StackRules, benchmark: str, c: Candidate, count: int, driver: str | None
) -> str | None:
    """The one verdict ``recommend`` (an exclusion) and ``predict`` (a refusal) give on a
    configuration: why ``count`` x the candidate's part with its stack cannot run the
    benchmark on nodes running ``driver`` (None: not known), or None."""
    return (
        driver_refusal(knowledge, c, driver)
        or _foreign_driver(c, driver)
        # the weights' fit only: a Training model's states are judged by the estimate
        # (``EvidenceIndex``), where the part's published sizes say what fit
        or memory_misfit(benchmark, c.published[0], count)
        or stack_incapable(benchmark, c)
    )


def driver_refusal(knowledge: StackRules, c: Candidate, driver: str | None) -> str | None:
    """Why the nodes' driver cannot run the candidate: below its GPU generation's first driver,
    or breaking a compatibility rule (error severity) with the stack; None when it can."""
    if not driver:
        return None
    generation = generation_min_driver(c.published[0])
    have = parse_version(driver)
    if generation and have is not None and have < parse_version(generation[1]):  # type: ignore[operator]
        return (
            f"driver too old for the GPU generation: {generation[0]} needs >= {generation[1]}, "
            f"the nodes have {driver}"
        )
    for v in knowledge.stack_violations(c.stack_id, c.stack, driver):
        if v.severity is Severity.ERROR:
            return f"breaks a compatibility rule with the nodes' driver: {v.message}"
    return None


# components that run on one vendor's GPUs only → that vendor (accelerator_class's name)
VENDOR_ONLY = {
    "cuda": ("nvidia", "CUDA"),
    "cudnn": ("nvidia", "cuDNN"),
    "tensorrt": ("nvidia", "TensorRT"),
    "tensorrt-llm": ("nvidia", "TensorRT-LLM"),
    "nccl": ("nvidia", "NCCL"),
    "rocm": ("amd", "ROCm"),
}
_VENDOR = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}


def foreign_runtime(c: Candidate) -> str | None:
    """Why the candidate's stack names a runtime of another vendor's GPUs than its accelerator
    (TensorRT on an AMD part, ROCm on an NVIDIA one), or None. A CPU, a mixed system or a part
    without public specs decides nothing; nor does a configuration measured so (its record is
    what it is), a catalogue part's borrowed placeholder stack, or a version that is no version
    (a published "TBD")."""
    kind = accelerator_class(c.published[0])
    if c.observed or c.borrowed_stack or kind in ("cpu", "other"):
        return None
    named = {**system_components(c.stack.extra), **query_components(c.stack)}
    if c.stack.framework:
        named.setdefault(c.stack.framework.lower(), c.stack.framework_version or "")
    for name, (vendor, label) in VENDOR_ONLY.items():
        version = named.get(name)
        if version is not None and vendor != kind and (version == "" or version[:1].isdigit()):
            return (
                f"stack cannot run on the accelerator: {label} runs on {_VENDOR[vendor]} GPUs "
                f"only and {c.accelerator} is {_VENDOR.get(kind, kind.title())}'s"
            )
    return None


def stack_incapable(benchmark: str, c: Candidate) -> str | None:
    """Why the candidate's stack cannot run the benchmark's model on its accelerator, or None."""
    foreign = foreign_runtime(c)
    if foreign:
        return foreign
    components = query_components(c.stack)
    if c.stack.framework and c.stack.framework_version:  # the runtime as the row names it
        components[c.stack.framework.lower()] = c.stack.framework_version
    reason = runtime_too_old(benchmark_model(benchmark), components)
    if reason:
        return f"stack cannot run the model: {reason}"
    toolkit = cuda_toolkit(c.stack.cuda)
    if isinstance(toolkit, str):
        return f"stack cannot be installed: {toolkit}"
    spec = accelerator_spec(c.published[0]).spec
    generation = str(getattr(spec, "generation", "") or "") if spec is not None else ""
    arch = first_cuda(generation)
    if (
        toolkit is not None
        and arch is not None
        and parse_version(toolkit.id) < parse_version(arch.first_cuda)  # type: ignore[operator]
    ):
        measured = (
            "; it was measured there, so the record's CUDA is wrong and the stack cannot be told"
            if c.observed
            else ""
        )
        return (
            f"stack cannot run on the accelerator: CUDA {c.stack.cuda} predates "
            f"{generation.title()} "
            f"(its first toolkit is CUDA {arch.first_cuda}; {arch.source}){measured}"
        )
    return None


def _foreign_driver(c: Candidate, driver: str | None) -> str | None:
    if not driver:
        return None
    kind = accelerator_class(c.published[0])
    if kind not in ("nvidia", "cpu"):
        return (
            f"driver does not apply: --driver {driver} is an NVIDIA driver version and "
            f"{c.accelerator} is not an NVIDIA part (its own driver and runtime are not known here)"
        )
    toolkit = cuda_toolkit(c.stack.cuda)
    have = parse_version(driver)
    # before CUDA 11 there was no minor-version compatibility: each release needs its own driver
    # (from 11 on, the compatibility rules' per-major minimums apply in candidates.constraint)
    if (
        kind == "nvidia"
        and toolkit is not None
        and not isinstance(toolkit, str)
        and have is not None
        and int(toolkit.id.split(".")[0]) < 11
        and have < parse_version(toolkit.driver)  # type: ignore[operator]
    ):
        return (
            f"driver too old for the stack's CUDA: CUDA {c.stack.cuda} needs driver >= "
            f"{toolkit.driver} "
            f"({toolkit.source}), the nodes have {driver}"
        )
    return None


@lru_cache(maxsize=256)
def benchmark_model(benchmark: str) -> str | None:
    """The catalogue's model name for a benchmark ("Llama 2 70B Chat"), None when not known."""
    match = resolve_benchmark(benchmark)
    if (
        not match.resolved or match.family is None or match.base is not None
    ):  # a variant: another model
        return None
    entry = load_catalog().benchmark(match.family, match.id)
    return entry.model if entry is not None else None
