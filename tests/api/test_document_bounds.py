"""Every nested list and free-text field of an ingested document is counted or bounded: a 413 or
422 names the field, and nothing is written (issue 46)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from stack_advisor.api.deps import get_store
from stack_advisor.server import create_app
from stack_advisor.store.embedded_store import EmbeddedStore
from tests.support.api import auth, document, make_settings


@pytest.fixture
def api(tmp_path: Path, tokens: dict[str, str]) -> Iterator[tuple[TestClient, EmbeddedStore]]:
    store = EmbeddedStore(tmp_path / "kb")
    settings = make_settings(tokens, max_batch_items=100, max_nested_entries=64)
    app = create_app(settings.model_copy(update={"max_text_chars": 1000}), store=store)
    app.dependency_overrides[get_store] = lambda: store
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, store


def _post(client: TestClient, token: str, doc: object) -> tuple[int, dict[str, object]]:
    answer = client.post("/v1/observations", headers=auth(token), json=doc)
    return answer.status_code, answer.json()


def test_stack_extra_entries_count_against_the_batch_cap(
    api: tuple[TestClient, EmbeddedStore], tokens: dict[str, str]
) -> None:
    client, store = api
    docs = [document(f"run-{i}") for i in range(3)]
    for doc in docs:
        doc["stack"]["extra"] = {f"lib{j}": "1.0" for j in range(40)}  # 3 x (2 + 40) > 100
    status, body = _post(client, tokens["write"], docs)
    assert status == 413 and "ADVISOR_MAX_BATCH_ITEMS" in str(body["message"])
    assert sum(store.stats().observations_by_source.values()) == 0


@pytest.mark.parametrize(
    ("where", "status", "field"),
    [
        ("extra", 413, "documents[0].stack.extra"),
        ("details", 413, "documents[0].provenance.details"),
        ("cpu_flags", 413, "documents[0].host.cpu_flags"),
        ("note", 422, "documents[0].measurements[0].note"),
        ("detail text", 422, "documents[0].provenance.details['host']"),
    ],
)
def test_a_nested_field_over_its_bound_is_refused_naming_it(
    api: tuple[TestClient, EmbeddedStore],
    tokens: dict[str, str],
    where: str,
    status: int,
    field: str,
) -> None:
    client, store = api
    doc = document()
    if where == "extra":
        doc["stack"]["extra"] = {f"lib{j}": "1" for j in range(65)}
    elif where == "details":
        doc["provenance"]["details"] = {f"k{j}": "v" for j in range(65)}
    elif where == "cpu_flags":
        doc["host"]["cpu_flags"] = [f"f{j}" for j in range(65)]
    elif where == "note":
        doc["measurements"][0]["note"] = "x" * 1001
    else:
        doc["provenance"]["details"]["host"] = "y" * 1001
    got, body = _post(client, tokens["write"], doc)
    assert got == status, body
    assert body["details"]["field"] == field  # type: ignore[index]
    assert sum(store.stats().observations_by_source.values()) == 0
    assert _post(client, tokens["write"], document())[0] == 200  # within bounds: written
