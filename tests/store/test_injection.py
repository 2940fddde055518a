"""Injection payloads in every writable string field, on every backend: values travel as
parameters only, so each one is stored and read back byte for byte and nothing else changes
(issue 18: "the injection payloads in every writable field")."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stack_advisor.api import examples
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import EntityKind, ResultDocument

PAYLOADS = [
    "x'}) DETACH DELETE n //",
    'x"}) MATCH (n) DETACH DELETE n RETURN 1 //',
    "`Observation`) DETACH DELETE n WITH 1 AS x MATCH (m",
    "$key} ]->(o) SET o.value = 0 //",
    "'; DROP TABLE Observation; --",
    "\\' OR 1=1 --",
    "{{7*7}} ${jndi:ldap://127.0.0.1/x} <script>alert(1)</script>",
    "CALL dbms.killQueries([]) YIELD queryId RETURN queryId",
    # names refuse bidi overrides, zero-width and control characters (issue 32: tests in
    # tests/store/test_validation.py); right-to-left text itself is printable
    "ünïcødé ✓ عربي right-to-left",
    "quote ' double \" backslash \\ end",
]


def _inject(value: Any, counter: list[int], skip: frozenset[str], key: str = "") -> Any:
    """Every string of the document (and every dict key of free-form maps) replaced by the next
    payload, except enum-like fields that would only be refused."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if key in ("parameters", "details", "labels", "extra"):
                payload = PAYLOADS[counter[0] % len(PAYLOADS)] + f"#{counter[0]}"
                counter[0] += 1
                out[payload] = _inject(v, counter, skip, k) if not isinstance(v, str) else payload
            else:
                out[k] = v if k in skip else _inject(v, counter, skip, k)
        return out
    if isinstance(value, list):
        return [_inject(v, counter, skip, key) for v in value]
    if isinstance(value, str):
        payload = PAYLOADS[counter[0] % len(PAYLOADS)] + f"#{counter[0]}"
        counter[0] += 1
        return payload
    return value


SKIP = frozenset({"kind", "timestamp", "started_at", "finished_at", "url"})


def _document() -> dict[str, Any]:
    doc = copy.deepcopy(examples.RESULT_DOCUMENT)
    doc["host"].update(
        cpu_model="Xeon", os="linux", kernel="6.1", labels={"pool": "a"}, cpu_flags=["avx2"]
    )
    doc["stack"].update(
        nccl="2.21",
        tensorrt="10",
        python="3.11",
        image="img",
        raw="torch 2.3",
        extra={"jax": "0.4"},
    )
    doc["measurements"][0]["note"] = "a note"
    doc["failures"] = [
        {
            "benchmark": {"family": "tf_cnn", "name": "resnet50", "parameters": {"batch_size": 64}},
            "stage": "run",
            "error_class": "E",
            "message": "m",
            "log_tail": "t",
        }
    ]
    doc["provenance"]["url"] = "https://example.org/x"
    return _inject(doc, [0], SKIP)


def test_payloads_in_every_field_round_trip_and_change_nothing_else(store) -> None:
    raw = _document()
    doc = ResultDocument.model_validate(raw)
    result = store.ingest_document(doc)
    assert (result.observations_new, result.failures_new) == (1, 1)
    stored = store.query_observations(limit=10)
    assert len(stored) == 1
    expected = doc.to_batch().observations[0]
    got = stored[0]
    for name in (
        "benchmark",
        "metric",
        "unit",
        "note",
        "stack",
        "placement",
        "host",
        "run_id",
        "provenance",
        "source_key",
    ):
        assert getattr(got, name) == getattr(expected, name), name
    assert got.accelerator.model == expected.accelerator.model
    assert got.accelerator.vendor == expected.accelerator.vendor
    failures = store.list_entities(EntityKind.FAILURES)
    assert len(failures) == 1
    assert failures[0]["message"] == doc.failures[0].message
    assert failures[0]["log_tail"] == doc.failures[0].log_tail
    stats = store.stats()
    assert stats.counts["Observation"] == 1 and stats.counts["Failure"] == 1
    assert stats.counts["Stack"] == 1 and stats.counts["Host"] == 1
    # the same document again: idempotent, still exactly one of each
    again = store.ingest_document(doc)
    assert (again.observations_new, again.failures_new) == (0, 0)
    # an inventory's name is a URL path segment (no '/';
    # stack_advisor.store.base.cluster_name_problem): the payload with '/' is refused before any
    # write, the others round-trip
    with pytest.raises(InvalidInput, match="cluster"):
        store.sync_inventory(PAYLOADS[0], [{"name": PAYLOADS[1]}])
    cluster = PAYLOADS[4]
    assert store.sync_inventory(cluster, [{"name": PAYLOADS[1]}]) == 1
    assert store.list_inventory(cluster) == [{"name": PAYLOADS[1]}]
    assert store.stats().counts["Observation"] == 1
