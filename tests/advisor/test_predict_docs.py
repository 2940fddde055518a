"""docs/predict.md's example file answers as the page says, through the function `advisor predict`
calls, and the page's field table names every field a query has (issue 31: the query format was
undocumented; a first try met `queries.0.metric: Field required`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from stack_advisor.advisor.results import PredictQuery

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_example_file_answers_as_documented(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    queries = json.loads((DOCS / "examples" / "queries.json").read_text())
    answers = kb_advisor.predict(queries)
    assert [a.basis.value for a in answers] == [
        "observed",
        "interpolated",
        "observed",
        "observed",
        "unsupported",
    ]
    assert all(a.value is not None and a.interval is not None for a in answers[:4])
    assert answers[4].value is None and "does not fit in memory" in (answers[4].reason or "")


def test_the_field_table_names_every_query_field() -> None:
    page = (DOCS / "predict.md").read_text()
    documented = set(re.findall(r"^\| `(\w+)` \|", page, re.MULTILINE))
    assert documented == set(PredictQuery.model_fields)
    assert (
        "advisor predict --query docs/examples/queries.json"
        in (DOCS.parent / "README.md").read_text()
    )


def test_an_answer_states_its_unit_and_a_refusal_none(kb_advisor: Any) -> None:
    """A probe could not tell from predict's JSON whether 33,570 was tokens/s of the system or of
    one accelerator: the answer names the unit, and the value is the system's."""
    query = {
        "accelerator": "H200-SXM-141GB",
        "accelerator_count": 8,
        "benchmark": "llama2-70b-99",
        "scenario": "Offline",
    }
    answered, refused, latency = kb_advisor.predict(
        [
            {**query, "metric": "tokens_per_second"},
            {**query, "accelerator": "Foo 9000", "metric": "tokens_per_second"},
            {**query, "scenario": "Server", "metric": "ttft"},
        ]
    )
    assert answered.unit == "tokens/s" and refused.unit is None and latency.unit == "ms"
