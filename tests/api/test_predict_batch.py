"""POST /v1/predictions judges each query of a batch on its own (issue 43), in the server's
threads and in the answer workers alike: a bad field refuses its query, naming the field, the
value and the closest valid ones, and the other queries are answered; a refusal echoes only
what the query gave, never the defaults it was not answered with."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from stack_advisor.api.deps import get_store
from stack_advisor.schema.models import IngestBatch
from stack_advisor.server import create_app
from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot
from tests.support.api import auth, make_settings, post_predictions

GOOD = {
    "accelerator": "NVIDIA A100-SXM4-80GB",
    "benchmark": "resnet50",
    "scenario": "Offline",
    "metric": "samples_per_second",
}


@pytest.fixture(scope="module")
def resnet50_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """Every resnet50 result of the starter snapshot, ingested once for the module (the tests
    only read)."""
    store = open_store(f"embedded:{tmp_path_factory.mktemp('batch-kb') / 'kb'}")
    store.ingest(
        IngestBatch(
            observations=[o for o in load_snapshot().observations if o.benchmark.name == "resnet50"]
        )
    )
    yield store
    store.close()


@pytest.fixture(params=[0, 1], ids=["threads", "workers"])
def client(
    request: pytest.FixtureRequest, resnet50_store: Store, tokens: dict[str, str]
) -> Iterator[TestClient]:
    app = create_app(make_settings(tokens, answer_workers=request.param), store=resnet50_store)
    app.dependency_overrides[get_store] = lambda: resnet50_store
    with TestClient(app, raise_server_exceptions=False, headers=auth(tokens["read"])) as c:
        yield c


def test_a_bad_field_refuses_its_query_and_the_others_are_answered(client: TestClient) -> None:
    queries = [
        GOOD,
        {**GOOD, "placement": "vgp"},
        {**GOOD, "accelerator_count": "eight"},
        {**GOOD, "accelerator_count": True},  # JSON's true, not a count of 1
    ]
    answered, bad_placement, bad_count, boolean = post_predictions(client, queries)
    assert answered["basis"] in ("observed", "interpolated", "transferred")
    assert answered["value"] > 0
    assert "queries.3.accelerator_count" in boolean["reason"]
    assert "a count is a whole number, not true" in boolean["reason"]
    for refused in (bad_placement, bad_count, boolean):
        assert refused["basis"] == "unsupported" and refused["value"] is None
    reason = bad_placement["reason"]
    assert "queries.1.placement" in reason and "'vgp'" in reason
    assert "did you mean vgpu" in reason
    assert "queries.2.accelerator_count" in bad_count["reason"]
    assert "'eight'" in bad_count["reason"]


def test_a_refusal_echoes_only_what_the_query_gave(client: TestClient) -> None:
    answered, bad_placement, unknown = post_predictions(
        client,
        [GOOD, {**GOOD, "placement": "vgp"}, {**GOOD, "accelerator": "Foo GPU 9000"}],
    )
    # an answer says what it was answered for, defaults included
    assert answered["query"]["placement"] == "bare-metal"
    assert answered["query"]["accelerator_count"] == 1
    # a refusal: no count of 1 and no bare metal the user never asked for
    assert set(bad_placement["query"]) == set(GOOD)
    assert bad_placement["query"]["accelerator"] == GOOD["accelerator"]
    assert set(unknown["query"]) == set(GOOD)
    assert unknown["query"]["accelerator"] == "Foo GPU 9000"
    assert "Foo GPU 9000" in unknown["reason"]
    # what was given stays, as given (in catalogue names)
    given = {**GOOD, "accelerator": "Foo GPU 9000", "accelerator_count": 4, "placement": "vgpu"}
    (refused,) = post_predictions(client, [given])
    assert refused["basis"] == "unsupported"
    assert refused["query"]["accelerator_count"] == 4 and refused["query"]["placement"] == "vgpu"


def test_a_refusal_past_the_first_chunk_names_its_own_index(client: TestClient) -> None:
    """Queries are answered a chunk (100) at a time; a refusal names its place in the batch."""
    queries: list[Any] = [GOOD] * 120
    queries[110] = {**GOOD, "placement": "bare metal"}
    out = post_predictions(client, queries)
    assert [i for i, p in enumerate(out) if p["basis"] == "unsupported"] == [110]
    assert "queries.110.placement" in out[110]["reason"]
    assert "did you mean bare-metal" in out[110]["reason"]


def test_a_query_with_a_bad_required_field_is_refused_alone(client: TestClient) -> None:
    """A bad row is reported, not fatal to the rest: a query whose benchmark is no name, or
    whose accelerator is missing, is refused naming the field (its echo says ``(invalid)``); the
    others answer (a metric left out is the slice's throughput: ``query_metric``). A
    query that is no mapping, or a bad request field, is still the request's 422."""
    out = post_predictions(
        client,
        [GOOD, {**GOOD, "benchmark": 5}, {k: v for k, v in GOOD.items() if k != "accelerator"}],
    )
    assert out[0]["basis"] != "unsupported"
    assert out[1]["basis"] == "unsupported" and "queries.1.benchmark" in out[1]["reason"]
    assert out[1]["query"]["benchmark"] == "(invalid)"
    assert (
        out[2]["basis"] == "unsupported"
        and "queries.2.accelerator: Field required" in out[2]["reason"]
    )
    r = client.post("/v1/predictions", json={"queries": [GOOD, 7]})
    assert r.status_code == 422 and "queries.1" in r.json()["message"]
    r = client.post("/v1/predictions", json={"queries": [GOOD], "extra": 1})
    assert r.status_code == 422 and "extra" in r.text


def test_a_huge_field_is_refused_at_once_naming_it(client: TestClient) -> None:
    """A megabyte-long accelerator name (a probe's body held an answer worker for minutes, the
    answer budget never reached) is refused before any name is matched, naming the field and
    its bound; the other queries answer."""
    started = time.perf_counter()
    out = post_predictions(
        client,
        [GOOD, {**GOOD, "accelerator": "H" * 1_000_000}, {**GOOD, "framework": "x" * 5000}],
    )
    assert time.perf_counter() - started < 30
    assert out[0]["basis"] != "unsupported"
    assert "queries.1" in out[1]["reason"]
    assert "accelerator: 1000000 characters, at most 256" in out[1]["reason"]
    assert "framework: 5000 characters, at most 4096" in out[2]["reason"]


def test_a_placement_is_read_in_any_case(client: TestClient) -> None:
    """``VGPU`` is vgpu, as ``OFFLINE`` is Offline (a probe found the one refused, the other
    accepted); a misspelt one is still refused with its hint."""
    upper, typo = post_predictions(
        client, [{**GOOD, "placement": "VGPU"}, {**GOOD, "placement": "VGP"}]
    )
    assert upper["query"]["placement"] == "vgpu" and upper["basis"] != "unsupported"
    assert typo["basis"] == "unsupported" and "did you mean vgpu" in typo["reason"]
