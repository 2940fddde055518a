"""Property-based tests generated from our own OpenAPI document (schemathesis): at least 1000
generated requests (valid and invalid ones) over every operation, with a write/admin token, and never a 5xx; responses
must match the documented status codes, content types and schemas."""

from __future__ import annotations

import time
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.advisor.api.conftest import auth

MIN_CASES = 1000
PER_OPERATION = {GenerationMode.POSITIVE: 50, GenerationMode.NEGATIVE: 30}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


def _run(strategy: Any, examples: int, label: str, counts: dict[str, int],
         headers: dict[str, str]) -> None:
    @given(case=strategy)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    def check(case: schemathesis.Case) -> None:
        counts[label] += 1
        response = case.call(headers=headers)
        case.validate_response(response, checks=CHECKS)

    try:
        check()
    except Unsatisfiable:
        # no invalid request can be built for an operation without parameters or body
        assert counts[label] == 0 and label.endswith("[negative]"), label


@pytest.mark.slow
def test_generated_requests_never_get_a_5xx(app: FastAPI, tokens: dict[str, str]) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    headers = auth(tokens["admin"])
    counts: dict[str, int] = {}
    start = time.monotonic()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    for operation in operations:
        for mode, examples in PER_OPERATION.items():
            label = f"{operation.label} [{mode.value}]"
            counts[label] = 0

            _run(operation.as_strategy(generation_mode=mode), examples, label, counts, headers)
    total = sum(counts.values())
    assert total >= MIN_CASES, counts
    # keep the suite honest about its budget (generous: two shared cores)
    assert time.monotonic() - start < 600
