"""Features for the prediction model: benchmark, accelerator (public specs), count, placement,
component versions, round. Built per unique value and gathered by code, so a 100k-row table
featurises in milliseconds."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from advisor.rules import _cudnn_integer, parse_version
from advisor.specs import resolve_accelerator
from advisor.table import ObservationTable, round_number
from graph_schema.models import SoftwareStack

CATEGORICAL = ("family", "bench_name", "arch", "arch_variant", "scenario", "metric", "division",
               "accel_key", "accel_class", "placement", "framework")
NUMERIC = ("width", "resolution", "log_model_cost", "bits", "log_fp16", "log_int8", "log_fp32",
           "log_bw", "memory_gb", "mig_fraction", "is_cpu", "log2_count", "driver", "cuda", "cudnn",
           "tensorrt", "framework_version", "round")
FEATURES = CATEGORICAL + NUMERIC
MAX_CATEGORIES = 250

# Groups of features whose joint effect is reported as "what moved the value".
FACTOR_GROUPS: dict[str, tuple[str, ...]] = {
    "accelerator": ("accel_key", "accel_class", "log_fp16", "log_int8", "log_fp32", "log_bw",
                    "memory_gb", "mig_fraction", "is_cpu"),
    "accelerator_count": ("log2_count",),
    "placement": ("placement",),
    "software_stack": ("driver", "cuda", "cudnn", "tensorrt", "framework", "framework_version"),
    "benchmark": ("bench_name", "arch", "arch_variant", "width", "resolution", "log_model_cost",
                  "bits", "scenario", "division"),
    "round": ("round",),
}


def _num(text: str | None, scale: float = 100.0) -> float:
    v = parse_version(text)
    if v is None:
        return math.nan
    rel = list(v.release) + [0, 0]
    return rel[0] + rel[1] / scale


def _log(x: float | None) -> float:
    return math.log(x) if x else math.nan


_VARIANT_WORDS = ("small", "large", "base", "minimalistic", "mobilebert", "tiny", "lite0", "lite1",
                  "lite2", "lite3", "lite4", "distil", "pruned", "sparse")


@lru_cache(maxsize=4096)
def benchmark_features(name: str) -> dict[str, Any]:
    """What a benchmark's name says of the model, so that an unseen variant (e.g. MLPerf's open
    division ``mobilenet-v1-precision_uint8-0.5-160``) is near its siblings: architecture
    (``mobilenet-v1``), a size word, width multiplier, input resolution, a cost proxy
    ``log(width^2 * resolution^2)`` and the bits of its precision. Unknown parts are missing."""
    text = name.lower()
    # "-99" / "-99.9": MLPerf's accuracy targets (share of the reference accuracy), not sizes
    tokens = [t for t in re.split(r"[-_\s]+", text) if t and t not in ("99", "99.9")]
    arch = tokens[0] if tokens else text
    if len(tokens) > 1 and (re.fullmatch(r"v\d+", tokens[1]) or re.fullmatch(r"\d+d", arch)):
        arch = f"{arch}-{tokens[1]}"
    variant = next((w for w in _VARIANT_WORDS if w in text), None)
    width = resolution = math.nan
    for tok in tokens:
        size = re.fullmatch(r"(\d{2,4})x(\d{2,4})", tok)
        if size:
            resolution = float(size.group(1))
        elif re.fullmatch(r"\d\.\d+", tok) and 0 < float(tok) <= 2:
            width = float(tok)
        elif re.fullmatch(r"\d{2,4}", tok) and 64 <= int(tok) <= 1024 and math.isnan(resolution):
            resolution = float(tok)
    bits = math.nan
    if "non-quantized" in text or "float" in text or "fp32" in text:
        bits = 32.0
    elif "fp16" in text or "bf16" in text:
        bits = 16.0
    elif "int8" in text or "uint8" in text or "quantized" in text or "qat" in text:
        bits = 8.0
    cost = 2 * math.log(width if not math.isnan(width) else 1.0) + 2 * math.log(resolution) \
        if not math.isnan(resolution) else math.nan
    return {"arch": arch, "arch_variant": variant, "width": width, "resolution": resolution,
            "log_model_cost": cost, "bits": bits}


def accelerator_features(name: str) -> dict[str, Any]:
    r = resolve_accelerator(name)
    cls = "cpu" if r.is_cpu else (r.spec.vendor if r.spec else "other")
    return {
        "accel_key": r.spec.id if r.spec else name,
        "accel_class": cls,
        "log_fp16": _log(r.figure("fp16_tflops")),
        "log_int8": _log(r.figure("int8_tops")),
        "log_fp32": _log(r.figure("fp32_tflops")),
        "log_bw": _log(r.figure("memory_bw_gbs")),
        "memory_gb": r.figure("memory_gb") if r.figure("memory_gb") is not None else math.nan,
        "mig_fraction": r.mig_fraction,
        "is_cpu": 1.0 if r.is_cpu else 0.0,
    }


def stack_features(stack: SoftwareStack | dict[str, str]) -> dict[str, Any]:
    if isinstance(stack, SoftwareStack):
        framework, fver = stack.framework, stack.framework_version
        comps = {"driver": stack.driver, "cuda": stack.cuda, "cudnn": stack.cudnn, "tensorrt": stack.tensorrt}
    else:
        comps = {k.lower(): v for k, v in stack.items()}
        framework = comps.pop("framework", None)
        fver = comps.get(framework.lower()) if framework else None
    return {
        "framework": (framework or "").lower() or None,
        "framework_version": _num(fver),
        "driver": _num(comps.get("driver"), 1000.0),
        "cuda": _num(comps.get("cuda")),
        "cudnn": _num(str(_cudnn_integer(comps["cudnn"]) or comps["cudnn"]) if comps.get("cudnn") else None),
        "tensorrt": _num(comps.get("tensorrt")),
    }


@dataclass
class Encoder:
    """Categorical value → small integer code, learnt from the training rows (others → NaN)."""

    vocab: dict[str, dict[Any, int]]

    @classmethod
    def fit(cls, frames: dict[str, list[Any]]) -> Encoder:
        vocab: dict[str, dict[Any, int]] = {}
        for name in CATEGORICAL:
            counts: dict[Any, int] = {}
            for v in frames[name]:
                if v is not None:
                    counts[v] = counts.get(v, 0) + 1
            top = sorted(counts, key=lambda k: (-counts[k], str(k)))[:MAX_CATEGORIES]
            vocab[name] = {v: i for i, v in enumerate(top)}
        return cls(vocab)

    def matrix(self, frames: dict[str, list[Any]]) -> np.ndarray:
        n = len(frames[FEATURES[0]])
        X = np.empty((n, len(FEATURES)), dtype=np.float64)
        for j, name in enumerate(FEATURES):
            col = frames[name]
            if name in self.vocab:
                table = self.vocab[name]
                X[:, j] = [table.get(v, np.nan) if v is not None else np.nan for v in col]
            else:
                X[:, j] = np.asarray(col, dtype=np.float64)
        return X


def table_frames(table: ObservationTable, rows: np.ndarray | None = None) -> dict[str, list[Any]]:
    """Feature columns (raw values) for rows of the table."""
    idx = np.arange(table.n) if rows is None else rows
    acc = [accelerator_features(a) for a in table.accelerator.vocab]
    stk = [stack_features(table.stacks[s]) for s in table.stack.vocab]
    rnd = [round_number(r) for r in table.round.vocab]
    frames: dict[str, list[Any]] = {}
    a_codes = table.accelerator.codes[idx]
    s_codes = table.stack.codes[idx]
    for name in ("accel_key", "accel_class", "log_fp16", "log_int8", "log_fp32", "log_bw",
                 "memory_gb", "mig_fraction", "is_cpu"):
        lookup = [f[name] for f in acc]
        frames[name] = [lookup[c] for c in a_codes]
    for name in ("framework", "framework_version", "driver", "cuda", "cudnn", "tensorrt"):
        lookup = [f[name] for f in stk]
        frames[name] = [lookup[c] for c in s_codes]
    for name, col in (("family", table.family), ("bench_name", table.bench_name),
                      ("scenario", table.scenario), ("metric", table.metric),
                      ("division", table.division), ("placement", table.placement)):
        frames[name] = col.values(idx)
    bench = [benchmark_features(str(b)) for b in table.bench_name.vocab]
    b_codes = table.bench_name.codes[idx]
    for name in ("arch", "arch_variant", "width", "resolution", "log_model_cost", "bits"):
        lookup = [f[name] for f in bench]
        frames[name] = [lookup[c] for c in b_codes]
    frames["round"] = [rnd[c] for c in table.round.codes[idx]]
    frames["log2_count"] = list(np.log2(table.count[idx].astype(np.float64)))
    return frames


def query_frames(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Feature columns for ad-hoc configurations: each row has family, bench_name, scenario,
    metric, division, accelerator, count, placement, stack (SoftwareStack or component dict),
    round (text)."""
    frames: dict[str, list[Any]] = {name: [] for name in FEATURES}
    for row in rows:
        feats = accelerator_features(row["accelerator"])
        feats.update(stack_features(row["stack"]))
        feats.update(benchmark_features(str(row["bench_name"])))
        feats.update({
            "family": row["family"], "bench_name": row["bench_name"],
            "scenario": row.get("scenario") or "", "metric": row["metric"],
            "division": row.get("division") or "", "placement": row["placement"],
            "round": round_number(row.get("round") or ""),
            "log2_count": math.log2(max(1, int(row["count"]))),
        })
        for name in FEATURES:
            frames[name].append(feats[name])
    return frames
