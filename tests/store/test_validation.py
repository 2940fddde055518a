"""Issue 32's validation reproducers, each accepted on main 7c8cd85: what a result document may
hold is refused with an error naming the field and what is wrong."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from stack_advisor.api import examples
from stack_advisor.schema.models import Measurement, ResultDocument, Run


def _doc(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(examples.RESULT_DOCUMENT)
    doc["measurements"] = doc["measurements"][:1]
    m = doc["measurements"][0]
    m["p10"] = m["p90"] = None
    for path, value in changes.items():
        target = doc
        *parents, last = path.split(".")
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[last] = value
    return doc


def _refused(doc: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ResultDocument.model_validate(doc)
    errors = caught.value.errors()
    # a field's own check names it in loc; a check across fields (bounds by unit) in its message
    assert any(field in ".".join(map(str, e["loc"])) or f"{field}:" in e["msg"] for e in errors), (
        errors
    )
    assert words.lower() in str(caught.value).lower(), str(caught.value)


def test_the_example_document_is_valid() -> None:
    ResultDocument.model_validate(_doc())


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        ("measurements.0.value", 1e308, "beyond any physical figure"),
        ("measurements.0.value", 5e-324, "below any measurable figure"),
        ("measurements.0.value", True, "must be a number"),
        ("measurements.0.value", "12", "must be a number"),
        ("measurements.0.higher_is_better", 1, "true or false"),
        ("measurements.0.higher_is_better", "yes", "true or false"),
        ("measurements.0.samples", True, "must be a number"),
        ("measurements.0.metric", " ", "blank"),
        ("measurements.0.unit", " ", "blank"),
        ("measurements.0.benchmark.family", " ", "blank"),
        ("measurements.0.timestamp", "0001-01-01T00:00:00Z", "before 2000"),
        ("measurements.0.timestamp", 99999999999, "future"),
        ("run.started_at", "1999-12-31T23:59:59Z", "before 2000"),
        ("document_version", -5, "greater than or equal to 1"),
        ("document_version", 0, "greater than or equal to 1"),
        ("accelerator.model", "NVIDIA H100\u202egnp.exe", "invisible formatting"),
        ("accelerator.model", "NVIDIA\u200bH100", "invisible formatting"),
        ("host.name", "node\u2066a", "invisible formatting"),
        ("accelerator.model", "A" * 1_000_000, "at most 256"),
        ("run.run_id", "r\nx", "control character"),
        ("stack.driver", "5" * 300, "at most 256"),
    ],
)
def test_implausible_values_are_refused_naming_the_field(path: str, value: Any, words: str) -> None:
    field = path.split(".")[-1]
    _refused(_doc(**{path: value}), field, words)


def test_a_value_outside_its_own_spread_is_refused() -> None:
    _refused(
        _doc(
            **{
                "measurements.0.value": 50.0,
                "measurements.0.p10": 90.0,
                "measurements.0.p90": 110.0,
            }
        ),
        "measurements",
        "below its own p10",
    )
    _refused(
        _doc(
            **{
                "measurements.0.value": 150.0,
                "measurements.0.p10": 90.0,
                "measurements.0.p90": 110.0,
            }
        ),
        "measurements",
        "above its own p90",
    )
    ResultDocument.model_validate(
        _doc(
            **{
                "measurements.0.value": 100.0,
                "measurements.0.p10": 90.0,
                "measurements.0.p90": 110.0,
            }
        )
    )


def test_a_run_that_finished_before_it_started_is_refused() -> None:
    with pytest.raises(ValidationError, match="before started_at"):
        Run(run_id="r", started_at="2025-01-02T00:00:00Z", finished_at="2025-01-01T00:00:00Z")


def test_numeric_timestamps_are_unix_seconds() -> None:
    run = Run(run_id="r", started_at=1_700_000_000)
    assert run.started_at.year == 2023
    with pytest.raises(ValidationError, match="future"):
        Run(run_id="r", started_at=99999999999)  # year 5138 (was read as milliseconds: 1973)


def test_names_may_hold_any_printable_text() -> None:
    doc = _doc(
        **{
            "accelerator.model": "NVIDIA H100\u00a0SXM5 80GB (日本)",
            "host.name": "nœud-1",
            "measurements.0.metric": "p99 latency ms",
        }
    )
    ResultDocument.model_validate(doc)


@pytest.mark.parametrize(
    ("unit", "value"),
    [("fraction", 1.5), ("%", 101.0), ("TFLOP/s", 1e9), ("GB/s", 1e9), ("samples/s", 1e12)],
)
def test_figures_beyond_their_units_bound_are_refused(unit: str, value: float) -> None:
    base = examples.RESULT_DOCUMENT["measurements"][0]
    with pytest.raises(ValidationError, match="beyond any physical figure"):
        Measurement.model_validate({**base, "unit": unit, "value": value, "p10": None, "p90": None})


NUL_PLACES = {
    "a text field": ("measurements.0.note", "ok\x00"),
    "a dict's key": ("stack.extra", {"dali": "1.17", "k\x00": "v"}),
    "a dict's value": ("stack.extra", {"dali": "1.17\x00"}),
    "a list's item": ("placement.evidence", ["basis: lspci", "x\x00"]),
    "a key beside numbers": ("measurements.0.benchmark.parameters", {"batch": 8, "s\x00": 1}),
    "a nested dict's key": ("fingerprint", {"gpus": [{"name": "H100", "bus\x00": 3}]}),
    "a nested list's item": ("measurements.0.benchmark.parameters", {"b": [1, ("x", "y\x00")]}),
}


@pytest.mark.parametrize(("path", "value"), NUL_PLACES.values(), ids=NUL_PLACES.keys())
def test_a_nul_anywhere_in_a_field_is_refused_naming_it(path: str, value: Any) -> None:
    """Every field's check (``DomainModel._no_nul``) looks into dicts and lists, keys included,
    however they are mixed with numbers or nested."""
    _refused(_doc(**{path: value}), path.split(".")[-1], "must not contain NUL")
    clean = copy.deepcopy(value)
    ResultDocument.model_validate(_doc(**{path: _without_nul(clean)}))


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_nul(v) for v in value]
    return value
