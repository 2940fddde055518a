"""Model descriptions: parameters counted from public configs match the published totals; a
missing or absurd field is refused naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from stack_advisor.advisor.proxy.model import from_catalogue, from_hf_config, load_model
from stack_advisor.schema.errors import InvalidInput

DATA = Path(__file__).parent / "data"
PUBLISHED = yaml.safe_load((DATA / "published.yaml").read_text())["models"]


@pytest.mark.parametrize("entry", PUBLISHED, ids=[m["name"] for m in PUBLISHED])
def test_counted_parameters_match_the_model_card(entry: dict[str, Any]) -> None:
    spec = from_hf_config(entry["config"], name=entry["name"], where=entry["config_source"])
    assert spec.params == pytest.approx(float(entry["params"]), rel=0.015)
    if "active" in entry:
        cfg = entry["config"]
        embedding = cfg["vocab_size"] * cfg["hidden_size"]  # the input lookup: no arithmetic
        active = spec.active_params + (embedding if entry["active_counts_embedding"] else 0)
        assert active == pytest.approx(float(entry["active"]), rel=0.03)
        assert spec.architecture == "moe"


def test_every_catalogued_llm_is_a_model() -> None:
    for bench, params_b in (("llama2-70b-99", 70), ("deepseek-r1", 671), ("gpt-oss-120b", 117)):
        spec = from_catalogue(bench)
        assert spec.params / 1e9 == pytest.approx(params_b, rel=0.02)
        assert spec.kv_elems_per_token > 0 and spec.source.startswith("https://")


def _write(tmp_path: Path, name: str, data: dict[str, Any]) -> str:
    file = tmp_path / name
    file.write_text(json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data))
    return str(file)


LLAMA = PUBLISHED[0]["config"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"num_hidden_layers": None}, "num_hidden_layers"),
        ({"num_local_experts": 8, "num_experts_per_tok": 9}, "num_experts_per_tok"),
        ({"num_key_value_heads": 7}, "num_key_value_heads"),
        ({"hidden_size": 4096.5}, "hidden_size"),
        ({"hidden_size": 10**9}, "hidden_size"),
    ],
)
def test_bad_config_names_the_field(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    cfg = {k: v for k, v in {**LLAMA, **change}.items() if v is not None}
    with pytest.raises(InvalidInput, match=field):
        load_model(_write(tmp_path, "config.json", cfg))


def test_more_kv_heads_than_attention_heads_names_both(tmp_path: Path) -> None:
    """num_attention_heads 7 beside the card's 8 KV heads: the relation is wrong, and the error
    names both fields (a probe was told num_key_value_heads = 8 is out of range 1..7)."""
    cfg = {**LLAMA, "num_attention_heads": 7, "num_key_value_heads": 8}
    with pytest.raises(
        InvalidInput, match="num_key_value_heads = 8 exceeds num_attention_heads = 7"
    ):
        load_model(_write(tmp_path, "config.json", cfg))


def test_short_yaml(tmp_path: Path) -> None:
    spec = load_model(
        _write(
            tmp_path,
            "m.yaml",
            {
                "architecture": "moe",
                "parameters": "30B",
                "active_parameters": "3B",
                "precision": "fp8",
            },
        )
    )
    assert (spec.params, spec.active_params, spec.precision) == (30e9, 3e9, "fp8")
    with pytest.raises(InvalidInput, match="parameters"):
        load_model(_write(tmp_path, "big.yaml", {"architecture": "dense", "parameters": 1e15}))
    with pytest.raises(InvalidInput, match="active_parameters"):
        load_model(
            _write(
                tmp_path,
                "a.yaml",
                {"architecture": "moe", "parameters": "3B", "active_parameters": "30B"},
            )
        )
    with pytest.raises(InvalidInput, match="architecture"):
        load_model(_write(tmp_path, "b.yaml", {"architecture": "rnn", "parameters": "3B"}))


def test_unknown_name_and_missing_file() -> None:
    with pytest.raises(InvalidInput, match="not a catalogued"):
        load_model("no-such-model")
    with pytest.raises(InvalidInput, match="no such file"):
        load_model("/nonexistent/config.json")


@pytest.mark.parametrize(
    "data",
    [
        {"name": "x", "architecture": "cnn", "parameters": "25M", "flops_per_sample": {"a": 1}},
        {"name": "x", "num_hidden_layers": "many"},
        {"name": "x", **LLAMA, "num_local_experts": -3, "num_experts_per_tok": 1},
        {
            "name": "x",
            **LLAMA,
            "moe_intermediate_size": -1,
            "num_local_experts": 8,
            "num_experts_per_tok": 2,
        },
        {"name": "x", "parameters": [], "architecture": "dense"},
        {"name": "no-such-benchmark"},
        {},
    ],
)
def test_odd_mappings_are_refused_cleanly(data: dict[str, Any]) -> None:
    from stack_advisor.advisor.proxy.model import model_from_mapping

    with pytest.raises(InvalidInput):
        model_from_mapping(data)
