"""A model the user describes: its size, shape and what each token costs.

Three ways in, one ``ModelSpec`` out: a Hugging Face ``config.json`` (parameters counted from the
layers, widths, heads and experts), a short YAML (parameters, active parameters, architecture,
precision, optionally the shape), or a catalogue benchmark's name (``architectures.yaml`` holds
the published config of every MLPerf LLM). A missing or absurd field is refused naming it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from stack_advisor.schema.errors import InvalidInput

# the largest believable figures: a description beyond them is a typo, not a model
MAX_PARAMS = 1e13
MAX_LAYERS = 1000
MAX_WIDTH = 1_000_000
ARCHITECTURES = ("dense", "moe", "cnn")
MAX_FLOPS_PER_SAMPLE = 1e16
MAX_TRAIN_TOKENS = 1e15
PRECISION_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5}


@dataclass(frozen=True)
class ModelSpec:
    """What the proxy knows of a model. Counts are absolute (not billions).

    ``active_params`` excludes the input embedding (a lookup, no arithmetic) and the experts a
    token is not routed to; ``kv_elems_per_token`` is the KV cache's elements per token over all
    layers (0: unknown). ``expert_params`` is the routed experts' total (MoE), so the weights a
    decode step reads at a batch can be counted."""

    name: str
    architecture: str
    params: float
    active_params: float
    source: str
    layers: int = 0
    hidden: int = 0
    attn_dim: int = 0  # query heads x head dim: attention's width for its FLOPs
    kv_elems_per_token: float = 0.0
    experts: int = 0
    experts_per_token: int = 0
    expert_params: float = 0.0
    precision: str | None = None
    flops_per_sample: float = 0.0  # CNNs: forward FLOPs of one sample

    @property
    def moe(self) -> bool:
        return self.experts > 0

    def weight_bytes(self, precision: str) -> float:
        return self.params * PRECISION_BYTES[precision]


def _int(cfg: dict[str, Any], where: str, *names: str, default: int | None = None) -> int:
    for name in names:
        if cfg.get(name) is not None:
            value = cfg[name]
            if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
                raise InvalidInput(f"{where}: {name} must be a whole number, got {value!r}")
            return int(value)
    if default is not None:
        return default
    raise InvalidInput(f"{where}: {' / '.join(names)} is missing (a Hugging Face config field)")


def _bounded(where: str, name: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise InvalidInput(
            f"{where}: {name} = {value:g} is out of range (expected {low:g}..{high:g})"
        )


@dataclass(frozen=True)
class _Shape:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    inter: int
    vocab: int
    experts: int
    per_token: int


def _shape(cfg: dict[str, Any], where: str) -> _Shape:
    layers = _int(cfg, where, "num_hidden_layers", "n_layer", "num_layers")
    hidden = _int(cfg, where, "hidden_size", "n_embd", "d_model")
    heads = _int(cfg, where, "num_attention_heads", "n_head")
    kv_heads = _int(cfg, where, "num_key_value_heads", default=heads)
    _bounded(where, "num_hidden_layers", layers, 1, MAX_LAYERS)
    _bounded(where, "hidden_size", hidden, 1, MAX_WIDTH)
    _bounded(where, "num_attention_heads", heads, 1, hidden)
    if kv_heads > heads:  # the relation, not one field, is wrong: name both
        raise InvalidInput(
            f"{where}: num_key_value_heads = {kv_heads} exceeds num_attention_heads = {heads} "
            "(each key/value head serves one or more attention heads)"
        )
    _bounded(where, "num_key_value_heads", kv_heads, 1, heads)
    if heads % kv_heads:
        raise InvalidInput(
            f"{where}: num_key_value_heads = {kv_heads} does not divide "
            f"num_attention_heads = {heads}"
        )
    head_dim = _int(cfg, where, "head_dim", default=hidden // heads)
    inter = _int(cfg, where, "intermediate_size", "n_inner", "ffn_dim", default=4 * hidden)
    vocab = _int(cfg, where, "vocab_size")
    experts = _int(cfg, where, "num_local_experts", "n_routed_experts", "num_experts", default=0)
    per_token = _int(cfg, where, "num_experts_per_tok", "experts_per_token", default=0)
    _bounded(where, "vocab_size", vocab, 1, 10 * MAX_WIDTH)
    _bounded(where, "num_local_experts", experts, 0, 100_000)
    _bounded(where, "intermediate_size", inter, 1, 100 * MAX_WIDTH)
    if experts and not 1 <= per_token <= experts:
        raise InvalidInput(
            f"{where}: num_experts_per_tok = {per_token} must be 1..{experts} "
            f"(the number of experts)"
        )
    return _Shape(layers, hidden, heads, kv_heads, head_dim, inter, vocab, experts, per_token)


def _attention(cfg: dict[str, Any], s: _Shape, where: str) -> tuple[float, float]:
    """(parameters of one layer's attention, KV elements per token per layer)."""
    kv_lora = _int(cfg, where, "kv_lora_rank", default=0)
    if kv_lora:  # multi-head latent attention (DeepSeek-V2/V3)
        rope = _int(cfg, where, "qk_rope_head_dim")
        nope = _int(cfg, where, "qk_nope_head_dim")
        v_dim = _int(cfg, where, "v_head_dim")
        q_lora = _int(cfg, where, "q_lora_rank", default=0)
        q_out = s.heads * (nope + rope)
        q = s.hidden * q_lora + q_lora * q_out if q_lora else s.hidden * q_out
        kv = s.hidden * (kv_lora + rope) + kv_lora * s.heads * (nope + v_dim)
        return q + kv + s.heads * v_dim * s.hidden, float(kv_lora + rope)
    q_dim, kv_dim = s.heads * s.head_dim, s.kv_heads * s.head_dim
    return 2 * s.hidden * q_dim + 2 * s.hidden * kv_dim, float(2 * kv_dim)


def from_hf_config(cfg: dict[str, Any], *, name: str, where: str) -> ModelSpec:
    """Count a Hugging Face config's parameters: embeddings, attention (GQA or latent), the MLP
    (gated unless GPT-J/GPT-2 style) or its experts (routed, shared, router), per layer.

    Raises:
        InvalidInput: a field missing, not a whole number, or out of range (named).
    """
    s = _shape(cfg, where)
    gated = str(cfg.get("model_type", "")) not in ("gptj", "gpt2", "gpt_neox", "opt")
    mats = 3 if gated else 2
    attn, kv_per_layer = _attention(cfg, s, where)
    moe_inter = _int(cfg, where, "moe_intermediate_size", default=s.inter)
    shared = _int(cfg, where, "n_shared_experts", "num_shared_experts", default=0)
    dense_layers = _int(cfg, where, "first_k_dense_replace", default=0) if s.experts else s.layers
    _bounded(where, "moe_intermediate_size", moe_inter, 1, 100 * MAX_WIDTH)
    _bounded(where, "n_shared_experts", shared, 0, 1000)
    _bounded(where, "first_k_dense_replace", dense_layers, 0, s.layers)
    moe_layers = s.layers - dense_layers
    expert = mats * s.hidden * moe_inter
    routed = moe_layers * s.experts * expert
    per_layer_dense = attn + mats * s.hidden * s.inter
    moe_fixed = moe_layers * (attn + shared * expert + s.hidden * s.experts)
    embed = s.vocab * s.hidden
    head = 0 if cfg.get("tie_word_embeddings", False) else embed
    body = dense_layers * per_layer_dense + moe_fixed
    total = embed + head + body + routed
    active = head + body + moe_layers * s.per_token * expert
    _bounded(where, "parameters (counted)", total, 1, MAX_PARAMS)
    return ModelSpec(
        name=name,
        architecture="moe" if s.experts else "dense",
        params=total,
        active_params=active,
        source=where,
        layers=s.layers,
        hidden=s.hidden,
        attn_dim=s.heads * s.head_dim,
        kv_elems_per_token=kv_per_layer * s.layers,
        experts=s.experts,
        experts_per_token=s.per_token,
        expert_params=float(routed),
        precision=_precision(cfg.get("torch_dtype"), where, "torch_dtype"),
    )


def _precision(value: Any, where: str, field: str) -> str | None:
    if value is None:
        return None
    text = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}.get(str(value), str(value))
    if text.lower() not in PRECISION_BYTES:
        raise InvalidInput(
            f"{where}: {field} = {value!r} is not a precision ({', '.join(PRECISION_BYTES)})"
        )
    return text.lower()


def _count(data: dict[str, Any], field: str, where: str) -> float | None:
    """A parameter count: a number, or text with a B/M suffix ("70B")."""
    value = data.get(field)
    if value is None:
        return None
    scale = {"b": 1e9, "m": 1e6, "t": 1e12}
    text = str(value).strip().lower().replace("_", "")
    try:
        number = float(text[:-1]) * scale[text[-1]] if text[-1:] in scale else float(text)
    except ValueError:
        raise InvalidInput(
            f"{where}: {field} = {value!r} is not a count (e.g. 70e9 or 70B)"
        ) from None
    if not math.isfinite(number):
        raise InvalidInput(f"{where}: {field} = {value!r} is not a count (e.g. 70e9 or 70B)")
    _bounded(where, field, number, 1e3, MAX_PARAMS)
    return number


def from_short_yaml(data: dict[str, Any], *, name: str, where: str) -> ModelSpec:
    """The short form: ``parameters``, ``active_parameters`` (MoE), ``architecture``,
    ``precision``; a CNN gives ``flops_per_sample``. The shape (``num_hidden_layers``,
    ``hidden_size``...) may follow, as in a config.json, to count the KV cache.

    Raises:
        InvalidInput: a field missing or absurd (named).
    """
    arch = str(data.get("architecture", "")).lower()
    if arch not in ARCHITECTURES:
        raise InvalidInput(
            f"{where}: architecture = {data.get('architecture')!r} (expected one of "
            f"{', '.join(ARCHITECTURES)})"
        )
    params = _count(data, "parameters", where)
    if params is None:
        raise InvalidInput(f"{where}: parameters is missing (total parameters, e.g. 70B)")
    active = _count(data, "active_parameters", where) or params
    if active > params:
        raise InvalidInput(
            f"{where}: active_parameters = {active:g} is above parameters = {params:g}"
        )
    flops = 0.0
    if arch == "cnn":
        flops = _count(data, "flops_per_sample", where) or 0.0
        _bounded(where, "flops_per_sample", flops, 1e3, 1e16)
    spec = ModelSpec(
        name=name,
        architecture=arch,
        params=params,
        active_params=active,
        source=where,
        precision=_precision(data.get("precision"), where, "precision"),
        flops_per_sample=flops,
    )
    if any(k in data for k in ("num_hidden_layers", "n_layer")):
        shaped = from_hf_config({"vocab_size": 1, **data}, name=name, where=where)
        spec = replace(
            spec,
            layers=shaped.layers,
            hidden=shaped.hidden,
            attn_dim=shaped.attn_dim,
            kv_elems_per_token=shaped.kv_elems_per_token,
        )
    return spec


@lru_cache(maxsize=1)
def catalogue_configs() -> dict[str, tuple[dict[str, Any], str]]:
    text = (resources.files("stack_advisor.advisor.proxy") / "architectures.yaml").read_text()
    out: dict[str, tuple[dict[str, Any], str]] = {}
    for entry in yaml.safe_load(text)["models"]:
        for bench in entry["benchmarks"]:
            out[bench] = (dict(entry["config"]), str(entry["source"]))
    return out


def from_catalogue(benchmark: str, family: str = "mlperf-inference") -> ModelSpec:
    """The model of a catalogued benchmark: its published config where ``architectures.yaml``
    holds one, else its catalogue facts (parameters, active parameters).

    Raises:
        InvalidInput: the benchmark is unknown or the catalogue has no parameter count for it.
    """
    from stack_advisor.catalog import load_catalog, resolve_benchmark

    match = resolve_benchmark(benchmark, family)
    entry = load_catalog().benchmark(family, match.id) if match.resolved else None
    if entry is None:
        raise InvalidInput(f"model: {benchmark!r} is not a catalogued {family} benchmark")
    config = catalogue_configs().get(entry.id)
    if config is not None:
        spec = from_hf_config(config[0], name=entry.id, where=f"catalogue {entry.id}")
        return replace(spec, source=config[1])
    if entry.params_b is None:
        raise InvalidInput(f"model: the catalogue publishes no parameter count for {entry.id}")
    data = {
        "architecture": "moe" if entry.active_params_b else "dense",
        "parameters": entry.params_b * 1e9,
        "active_parameters": (entry.active_params_b or entry.params_b) * 1e9,
    }
    spec = from_short_yaml(data, name=entry.id, where=f"catalogue {entry.id}")
    return replace(spec, source=entry.model_source or entry.source)


def load_model(text: str, family: str = "mlperf-inference") -> ModelSpec:
    """A model from a file path (config.json or YAML) or a catalogue benchmark's name.

    Raises:
        InvalidInput: unreadable file, neither form, or a field missing or absurd.
    """
    path = Path(text)
    if not path.suffix or not path.exists():
        if path.suffix in (".json", ".yaml", ".yml"):
            raise InvalidInput(f"model: no such file {text!r}")
        return from_catalogue(text, family)
    return model_from_mapping(read_model_file(path), where=str(path), family=family)


def model_file(text: str | None) -> bool:
    """Whether a ``--model`` value names a description file (else a benchmark parameter)."""
    return text is not None and Path(text).suffix in (".json", ".yaml", ".yml")


def read_model_file(path: str | Path) -> dict[str, Any]:
    """A description file's fields, named after the file unless it names itself.

    Raises:
        InvalidInput: missing, unreadable, or not a mapping.
    """
    file = Path(path)
    try:
        raw = file.read_text(encoding="utf-8")
        data = json.loads(raw) if file.suffix == ".json" else yaml.safe_load(raw)
    except OSError as exc:
        raise InvalidInput(f"model: cannot read {str(file)!r}: {exc.strerror}") from None
    except (ValueError, yaml.YAMLError) as exc:
        raise InvalidInput(f"model: {str(file)!r} is not valid JSON or YAML: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"model: {str(file)!r} is not a mapping of fields")
    stem = file.stem if file.stem != "config" else file.parent.name or file.stem
    return {"name": stem, **data}


@dataclass(frozen=True)
class Described:
    """A vision model's or training run's work as published: FLOPs of one unit, its source."""

    name: str
    kind: str  # "vision" or "training"
    flops: float  # a vision sample's forward FLOPs; a training run's total FLOPs
    parameters: float
    source: str
    note: str = ""


def described_flops(data: dict[str, Any], where: str) -> Described:
    """A user's vision model or training run from its fields: ``flops_per_sample`` (a CNN), or
    ``parameters`` with ``train_tokens`` (or ``train_samples`` x ``sequence_length``) and
    optionally ``flops_per_token`` (6; 4 for LoRA).

    Raises:
        InvalidInput: a field missing, not a number, or out of range (named).
    """
    name = str(data.get("name") or "model")
    params = _number(data, "parameters", where, 1e3, 1e13)
    if "flops_per_sample" in data:
        flops = _number(data, "flops_per_sample", where, 1e3, MAX_FLOPS_PER_SAMPLE)
        return Described(name, "vision", flops, params, where)
    if "train_tokens" in data:
        tokens = _number(data, "train_tokens", where, 1.0, MAX_TRAIN_TOKENS)
    elif "train_samples" in data:
        samples = _number(data, "train_samples", where, 1.0, MAX_TRAIN_TOKENS)
        tokens = samples * _number(data, "sequence_length", where, 1.0, 1e7)
    else:
        raise InvalidInput(
            f"{where}: flops_per_sample (a vision model) or train_tokens / train_samples "
            "(a training run) is missing"
        )
    per_token = (
        _number(data, "flops_per_token", where, 2.0, 8.0) if "flops_per_token" in data else 6.0
    )
    return Described(name, "training", per_token * params * tokens, params, where)


def _number(data: dict[str, Any], field: str, where: str, low: float, high: float) -> float:
    value = data.get(field)
    if value is None:
        raise InvalidInput(f"{where}: {field} is missing")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{where}: {field} = {value!r} is not a number") from None
    if isinstance(value, bool) or not math.isfinite(number) or not low <= number <= high:
        raise InvalidInput(
            f"{where}: {field} = {value!r} is out of range (expected {low:g}..{high:g})"
        )
    return number


def model_from_mapping(
    data: dict[str, Any], *, where: str = "workload.model", family: str = "mlperf-inference"
) -> ModelSpec:
    """A model from its fields: ``{"name": <catalogued benchmark>}`` alone, the short form
    (``architecture``/``parameters``), or a config.json's fields.

    Raises:
        InvalidInput: as ``from_hf_config`` / ``from_short_yaml``; a mapping without a name.
    """
    if not isinstance(data, dict):
        raise InvalidInput(f"{where}: expected a mapping of fields, got {type(data).__name__}")
    name = str(data.get("name") or data.get("_name_or_path") or "")
    if not name:
        raise InvalidInput(f"{where}: name is missing (what to call the model in answers)")
    if set(data) <= {"name"}:
        return from_catalogue(name, family)
    if "train_tokens" in data or "train_samples" in data:  # a training run (samples.py)
        run = described_flops(data, where)
        return ModelSpec(name, "dense", run.parameters, run.parameters, where)
    if "architecture" in data or "parameters" in data:
        return from_short_yaml(data, name=name, where=where)
    return from_hf_config(data, name=name, where=where)
