"""Schemathesis over our whole OpenAPI document, shared by the suite (a bounded run) and
``bench/fuzz_api.py`` (≥ 5,000 cases): every operation, valid and invalid requests, checked for
no 5xx and for conformance to the documented status codes, content types and schemas. Failures
are collected (one per operation and mode at most: hypothesis stops at the first) rather than
raised, so one run reports them all."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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

CALL_TIMEOUT_S = 120  # the first advice call fits the models (seconds on a busy machine)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@dataclass
class FuzzResult:
    cases: int = 0
    operations: int = 0
    failures: list[str] = field(default_factory=list)
    server_errors: int = 0


def fuzz(
    app: FastAPI, headers: dict[str, str], positive: int, negative: int, *, seed_offset: int = 0
) -> FuzzResult:
    """Run ``positive`` valid and ``negative`` invalid cases per operation."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    result = FuzzResult()
    for operation in (r.ok() for r in schema.get_all_operations()):
        result.operations += 1
        for mode, examples in (
            (GenerationMode.POSITIVE, positive),
            (GenerationMode.NEGATIVE, negative),
        ):
            if examples < 1:
                continue
            strategy = operation.as_strategy(generation_mode=mode)

            @given(case=strategy)
            @settings(
                max_examples=examples,
                deadline=None,
                database=None,
                derandomize=seed_offset == 0,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: schemathesis.Case) -> None:
                result.cases += 1
                response = case.call(headers=headers, timeout=CALL_TIMEOUT_S)
                if response.status_code >= 500:
                    result.server_errors += 1
                case.validate_response(response, checks=CHECKS)

            try:
                check()
            except Unsatisfiable:
                pass  # no invalid request can be built for an operation without inputs
            except (Exception, BaseExceptionGroup) as exc:
                inner = getattr(exc, "exceptions", None)  # a flaky failure wraps the first one
                shown = inner[0] if inner else exc
                first = f"{type(shown).__name__}: {shown}".strip().splitlines()[:8]
                result.failures.append(f"{operation.label} [{mode.value}]: " + " | ".join(first))
    return result


def summary(result: FuzzResult) -> dict[str, Any]:
    return {
        "cases": result.cases,
        "operations": result.operations,
        "failures": len(result.failures),
        "server_errors": result.server_errors,
    }


def fuzz_stateful(
    app: FastAPI, headers: dict[str, str], examples: int, steps: int = 6
) -> FuzzResult:
    """Sequences of calls that follow the OpenAPI links (a write, then the reads that show what it
    wrote: ``syncInventory`` → ``listInventory``, ingest → ``listObservations`` →
    ``getObservation``), each response checked as in ``fuzz``; ``examples`` sequences of up to
    ``steps`` calls."""
    from hypothesis.stateful import run_state_machine_as_test

    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    result = FuzzResult(operations=len([1 for _ in schema.get_all_operations()]))
    base = schema.as_state_machine()

    class Machine(base):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"headers": headers, "timeout": CALL_TIMEOUT_S}

        def validate_response(
            self,
            response: Any,
            case: schemathesis.Case,
            additional_checks: Any = None,
            **kwargs: Any,
        ) -> None:
            result.cases += 1
            if response.status_code >= 500:
                result.server_errors += 1
            case.validate_response(response, checks=CHECKS)

    try:
        run_state_machine_as_test(
            Machine,
            settings=settings(
                max_examples=examples,
                stateful_step_count=steps,
                deadline=None,
                database=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
            ),
        )
    except (Exception, BaseExceptionGroup) as exc:
        inner = getattr(exc, "exceptions", None)
        shown = inner[0] if inner else exc
        result.failures.append(
            "stateful: " + " | ".join(f"{type(shown).__name__}: {shown}".strip().splitlines()[:8])
        )
    return result
