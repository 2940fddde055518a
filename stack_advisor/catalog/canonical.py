"""Observations in canonical names, whatever their source wrote.

``Store.ingest`` passes every batch through ``canonical_batch``: an accelerator name becomes its
catalogue key ("NVIDIA A100-SXM-80GB" → "A100-SXM4-80GB", "NVIDIA H100 80GB HBM3" →
"H100-SXM5-80GB", a host CPU → "CPU Intel Xeon Platinum 8380"), the name as written is kept in
the observation's provenance (``details.accelerator_raw``), a cuDNN integer version (91900)
becomes its release (9.19.0), a benchmark its catalogue id within its family (Training's
``gnn`` → ``rgat``; the name as written kept as ``details.benchmark_raw``), and a metric its
catalogue name (our LoadGen runner's ``completed_samples_per_second`` is MLPerf's Server
``queries_per_second``). Unresolved names are kept as written (and stay visible as unresolved: see
``resolve_accelerator``). Idempotent: a canonical observation comes back as is.
"""

from __future__ import annotations

from typing import Any

from stack_advisor.catalog.resolve import (
    cudnn_version,
    load_catalog,
    resolve_accelerator,
    resolve_benchmark,
    resolve_framework_name,
    resolve_metric,
)
from stack_advisor.schema.models import (
    Accelerator,
    Benchmark,
    Failure,
    IngestBatch,
    Observation,
    SoftwareStack,
)

RAW_KEY = "accelerator_raw"
BENCHMARK_RAW_KEY = "benchmark_raw"


def canonical_accelerator(acc: Accelerator) -> Accelerator:
    """The accelerator under its canonical name (vendor filled in when the catalogue knows it)."""
    match = resolve_accelerator(acc.model)
    if match.kind == "none":
        return acc
    key = match.key
    vendor = acc.vendor or match.vendor
    if match.entry is not None:
        vendor = match.entry.vendor
    if key == acc.model and vendor == acc.vendor:
        return acc
    return acc.model_copy(update={"model": key, "vendor": vendor})


def canonical_stack(stack: SoftwareStack) -> SoftwareStack:
    """cuDNN as its release (91900 → 9.19.0); the framework by its catalogue name (torch →
    pytorch), so a collector's stack and a published one name the same framework alike."""
    cudnn = cudnn_version(stack.cudnn) if stack.cudnn else None
    framework = stack.framework
    if framework:
        match = resolve_framework_name(framework)
        if match.resolved:
            framework = match.id
    if cudnn == stack.cudnn and framework == stack.framework:
        return stack
    return stack.model_copy(update={"cudnn": cudnn, "framework": framework})


def canonical_benchmark(bench: Benchmark) -> Benchmark:
    """The benchmark under its catalogue id within its family (``llama2-70b-lora`` →
    ``llama2_70b_lora``, Training's ``gnn`` → ``rgat``); a name the family's catalogue does not
    know, or an open-division variant (its own name), stays as written."""
    match = resolve_benchmark(bench.name, bench.family)
    if not match.resolved or match.matched_by == "pattern" or match.id == bench.name:
        return bench
    return bench.model_copy(update={"name": match.id})


def _canonical(item: Any, memo: dict[int, Any], fn: Any) -> Any:
    got = memo.get(id(item))
    if got is None:
        got = memo[id(item)] = (item, fn(item))  # keep the original alive: ids stay unique
    return got[1]


def canonical_observation(obs: Observation, memo: dict[int, Any] | None = None) -> Observation:
    memo = {} if memo is None else memo
    acc = _canonical(obs.accelerator, memo, canonical_accelerator)
    stack = _canonical(obs.stack, memo, canonical_stack)
    bench = _canonical(obs.benchmark, memo, canonical_benchmark)
    metric = resolve_metric(obs.metric)
    metric_id = metric.id if metric.resolved else obs.metric
    if (
        acc is obs.accelerator
        and stack is obs.stack
        and bench is obs.benchmark
        and metric_id == obs.metric
    ):
        return obs
    update: dict[str, Any] = {
        "accelerator": acc,
        "stack": stack,
        "metric": metric_id,
        "benchmark": bench,
    }
    if metric_id != obs.metric:
        update["unit"] = load_catalog().metrics[metric_id].unit
    details = dict(obs.provenance.details)
    if acc.model != obs.accelerator.model and RAW_KEY not in details:
        details[RAW_KEY] = obs.accelerator.model
    if bench.name != obs.benchmark.name and BENCHMARK_RAW_KEY not in details:
        details[BENCHMARK_RAW_KEY] = obs.benchmark.name
    if details != obs.provenance.details:
        update["provenance"] = obs.provenance.model_copy(update={"details": details})
    return obs.model_copy(update=update)


def canonical_failure(failure: Failure, memo: dict[int, Any]) -> Failure:
    acc = _canonical(failure.accelerator, memo, canonical_accelerator)
    stack = _canonical(failure.stack, memo, canonical_stack)
    bench = _canonical(failure.benchmark, memo, canonical_benchmark) if failure.benchmark else None
    if acc is failure.accelerator and stack is failure.stack and bench is failure.benchmark:
        return failure
    return failure.model_copy(update={"accelerator": acc, "stack": stack, "benchmark": bench})


def canonical_batch(batch: IngestBatch) -> IngestBatch:
    """The batch with every name canonical; the same object when nothing changes."""
    memo: dict[int, Any] = {}
    observations = [canonical_observation(o, memo) for o in batch.observations]
    failures = [canonical_failure(f, memo) for f in batch.failures]
    if all(a is b for a, b in zip(observations, batch.observations)) and all(
        a is b for a, b in zip(failures, batch.failures)
    ):
        return batch
    return batch.model_copy(update={"observations": observations, "failures": failures})
