"""The recommend form's own fields for a described training run (issue 42 item 6): parameters
and tokens to train, or steps x global batch x sequence length, answered by proxy as the API
answers the same model object; a missing, contradictory or absurd field is an error on the page
naming it. Over the starter snapshot's training and vision results."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from stack_advisor.store.registry import open_store
from tests.support.api import auth, make_app
from tests.support.starter_kb import snapshot_store, vision_and_training

STEPS = {"train_steps": "1000", "global_batch": "256", "sequence_length": "4096"}
RUN = {"model": "my-run", "parameters": "8e9", **STEPS, "top": "3"}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, str]]:
    uri = snapshot_store(tmp_path_factory.mktemp("web-training-kb"), vision_and_training)
    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write")}
    with open_store(uri) as store, TestClient(make_app(store, tokens)) as c:
        login = c.post(
            "/login", data={"token": tokens["read"], "next": "/"}, follow_redirects=False
        )
        assert login.status_code == 303, login.text
        yield c, tokens["read"]


def _form(c: TestClient, fields: dict[str, str]) -> Any:
    r = c.get("/recommend?" + urlencode({**fields, "format": "json"}))
    assert r.status_code == 200, r.text
    return r.json()


def test_training_fields_answer_as_the_api(client: tuple[TestClient, str]) -> None:
    c, token = client
    doc = _form(c, RUN)
    model = {"name": "my-run", "parameters": 8e9, "train_samples": 256_000, "sequence_length": 4096}
    body = {"workload": {"family": "mlperf-training", "model": model}, "top": 3}
    api = c.post("/v1/recommendations", json=body, headers=auth(token)).json()
    recs = doc["recommendations"]
    assert recs and [r["basis"] for r in recs] == ["proxy"] * len(recs)
    assert {r["metric"] for r in recs} == {"accelerator_hours"}
    assert [r["value"] for r in recs] == [r["value"] for r in api["recommendations"]]
    assert doc["request"]["workload"]["family"] == "mlperf-training"
    # the same tokens given as tokens: the same run
    tokens = _form(
        c, {"model": "my-run", "parameters": "8e9", "train_tokens": "1.048576e9", "top": "3"}
    )
    assert [r["value"] for r in tokens["recommendations"]] == [r["value"] for r in recs]
    page = c.get("/recommend?" + urlencode(RUN))
    assert page.status_code == 200 and "basis proxy: my-run" in page.text
    assert 'name="train_steps"' in page.text and 'value="1000"' in page.text


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({**RUN, "global_batch": ""}, "global_batch: needed with train_steps"),
        ({**RUN, "train_tokens": "1e9"}, "train_steps: give train_tokens or train_steps"),
        ({**RUN, "train_steps": "0"}, "train_steps: must be at least 1, got &#39;0&#39;"),
        ({**RUN, "global_batch": "2.5"}, "global_batch: must be a whole number"),
        (
            {**RUN, "sequence_length": "long"},
            "sequence_length: must be a number, got &#39;long&#39;",
        ),
        ({**RUN, "family": "mlperf-inference"}, "family: a training run"),
        ({"model": "r", "parameters": "8e9"}, "train_tokens: a training run (parameters given)"),
        ({"model": "r", "parameters": "8e9", "train_tokens": "1e30"}, "train_tokens = "),
        (
            {"model_yaml": "parameters: 7e9\ntrain_tokens: 1e9", "parameters": "8e9"},
            "parameters: 8e+09 in the form but &#39;7e9&#39; in model_yaml",
        ),
        # the serving shape's fields are checked the same way
        ({"model": "gpt-oss-120b", "isl": "0"}, "isl: Input should be greater than or equal to 1"),
        ({"model": "gpt-oss-120b", "concurrency": "many"}, "concurrency: must be a whole number"),
    ],
    ids=[
        "no-batch",
        "both",
        "zero",
        "fraction",
        "not-a-number",
        "family",
        "no-tokens",
        "absurd",
        "clash",
        "isl",
        "concurrency",
    ],
)
def test_a_bad_training_field_is_named_on_the_page(
    client: tuple[TestClient, str], fields: dict[str, str], error: str
) -> None:
    c, _ = client
    page = c.get("/recommend?" + urlencode(fields))
    assert page.status_code == 200
    assert error in page.text, page.text[page.text.find("error") - 200 :][:800]
