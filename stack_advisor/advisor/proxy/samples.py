"""Basis ``proxy`` beyond LLM serving: vision models (samples/s) and MLPerf Training (time to
train), each described by its work as published (``workloads.yaml``, each figure with its source).

A vision sample costs its FLOPs at the part's peak (INT8, else FP8, else FP16: what MLPerf's
closed vision submissions run); a training run costs flops_per_token x parameters x tokens to train
at the part's BF16 peak. The efficiency that turns that into time is fitted per part to the other
models' results there and shrunk toward every part's, as for LLMs (``estimate.proxy_value``,
``validation.Kind``): the same code, another way of counting work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.proxy.efficiency import Efficiency
from stack_advisor.advisor.proxy.estimate import Reference, collect
from stack_advisor.advisor.proxy.model import Described
from stack_advisor.catalog import load_catalog
from stack_advisor.schema.errors import InvalidInput

VISION_PEAKS = ("int8", "fp8", "fp16", "bf16")
TRAINING_PEAKS = ("bf16", "fp16")


@dataclass(frozen=True)
class SampleWork:
    """One unit's FLOPs at the part's peak: a vision sample, or a whole training run. Memory and
    link time are not counted (``byte_seconds`` 0): compute-bound by MLPerf's ``bound``."""

    flop_seconds: float
    byte_seconds: float = 0.0
    link_seconds: float = 0.0

    def seconds(self, eff: Efficiency) -> float:
        return eff.seconds(self.flop_seconds, self.byte_seconds) + self.link_seconds


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    text = (resources.files("stack_advisor.advisor.proxy") / "workloads.yaml").read_text()
    data: dict[str, Any] = yaml.safe_load(text)
    return data


@lru_cache(maxsize=1)
def vision_models() -> dict[str, Described]:
    """Benchmark -> its model's published FLOPs per sample (the geometric mean of a range)."""
    out = {}
    for entry in _data()["vision"]:
        low_high = [float(v) for v in entry["flops_per_sample"]]
        flops = math.exp(sum(math.log(v) for v in low_high) / len(low_high))
        for bench in entry["benchmarks"]:
            out[bench] = Described(
                entry["benchmarks"][0],
                "vision",
                flops,
                float(entry["parameters"]),
                str(entry["source"]),
                str(entry.get("note", "")),
            )
    return out


@lru_cache(maxsize=1)
def training_runs() -> dict[str, Described]:
    """Benchmark -> the FLOPs of one run to its target: flops_per_token x parameters x the mean
    tokens of the published reference convergence points."""
    out = {}
    for entry in _data()["training"]:
        if "train_tokens" in entry:
            tokens = float(sum(entry["train_tokens"])) / len(entry["train_tokens"])
        else:
            samples = float(sum(entry["train_samples"])) / len(entry["train_samples"])
            tokens = samples * int(entry["sequence_length"])
        params = float(entry["parameters"])
        flops = float(entry["flops_per_token"]) * params * tokens
        out[entry["benchmark"]] = Described(
            entry["benchmark"], "training", flops, params, str(entry["source"]), entry["note"]
        )
    return out


def _peak(accelerator: str, order: tuple[str, ...]) -> float | None:
    entry = load_catalog().accelerators.get(accelerator)
    peaks = entry.peak_tflops.as_dict() if entry and entry.peak_tflops else {}
    return next((peaks[p] * 1e12 for p in order if peaks.get(p)), None)


def vision_work(benchmark: str, accelerator: str) -> SampleWork | None:
    """One sample of a described vision benchmark on a part (None: unknown or no peak)."""
    model = vision_models().get(benchmark)
    return flops_work(model.flops, accelerator, VISION_PEAKS) if model else None


def training_work(benchmark: str, accelerator: str) -> SampleWork | None:
    """One training run of a described benchmark on one accelerator of a part: the time
    1 / (its accelerator-hours) counts (None: unknown or no peak)."""
    run = training_runs().get(benchmark)
    return flops_work(run.flops, accelerator, TRAINING_PEAKS) if run else None


def flops_work(flops: float, accelerator: str, order: tuple[str, ...]) -> SampleWork | None:
    peak = _peak(accelerator, order)
    return SampleWork(flop_seconds=flops / peak) if peak else None


def vision_model_of(benchmark: str) -> str:
    return vision_models()[benchmark].name


def training_model_of(benchmark: str) -> str:
    return benchmark


VISION_METRICS = {"Offline": "samples_per_second", "Server": "queries_per_second"}


def vision_references(table: ObservationTable, scenario: str) -> list[Reference]:
    """The described vision benchmarks' closed results in ``scenario``, per accelerator."""
    metric = VISION_METRICS.get(scenario)
    if metric is None:
        raise InvalidInput(
            f"scenario = {scenario!r}: vision models are estimated by proxy in "
            f"{' or '.join(VISION_METRICS)}"
        )
    return collect(table, scenario, set(vision_models()), metric, "mlperf-inference")


def training_references(table: ObservationTable) -> list[Reference]:
    """The described training benchmarks' closed results as runs per accelerator-second (1 /
    the published accelerator-hours / 3600), so a run's FLOPs over the peak is its time."""
    return collect(
        table,
        "",
        set(training_runs()),
        "accelerator_hours",
        "mlperf-training",
        per_count=False,
        invert=True,
        scale=1.0 / 3600.0,
    )
