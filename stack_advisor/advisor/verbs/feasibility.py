"""Feasibility before ranking: can this candidate run the workload at all?

A candidate is infeasible (and goes to ``excluded`` with the reason, never to the ranking) when

- the model does not fit: its weights at the narrowest precision the part computes in, against
  the memory one copy of the model can use (a MIG instance's own memory, a vGPU profile's, whole
  boards' times the count; ``stack_advisor.advisor.estimate.facts.replica_memory_gb``);
- its stack cannot run it: a runtime older than the first release that runs the model family, a
  CUDA version that was never released as a toolkit, a toolkit older than the accelerator's
  architecture (``stack_advisor.catalog.stack_facts``);
- the user's ``--driver`` does not apply: below the generation's minimum or the stack's CUDA
  minimum (``candidates.constraint``), or the part is not an NVIDIA one, whose driver facts the
  version says nothing about.

Facts come from the catalogue with their sources; a fact the catalogue does not hold decides
nothing (unknown is never infeasible).
"""

from __future__ import annotations

from functools import lru_cache

from stack_advisor.advisor.estimate.facts import accelerator_class, accelerator_spec, memory_misfit
from stack_advisor.advisor.knowledge.rules import parse_version
from stack_advisor.advisor.verbs.candidates import Candidate, Slice, query_components
from stack_advisor.catalog import load_catalog, resolve_benchmark
from stack_advisor.catalog.stack_facts import cuda_toolkit, first_cuda, runtime_too_old


def infeasible(sl: Slice, c: Candidate, count: int) -> str | None:
    """Why ``count`` x the candidate cannot run the slice's workload, or None."""
    benchmark = sl.workload.benchmark or ""
    return (
        _foreign_driver(sl, c)
        or memory_misfit(benchmark, c.published[0], count)
        or stack_incapable(benchmark, c)
    )


def stack_incapable(benchmark: str, c: Candidate) -> str | None:
    """Why the candidate's stack cannot run the benchmark's model on its accelerator, or None."""
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


def _foreign_driver(sl: Slice, c: Candidate) -> str | None:
    driver = sl.workload.hardware.driver
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
