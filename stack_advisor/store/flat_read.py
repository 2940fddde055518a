"""The flat read of a Cypher store (``Store.flat_observations``): query rows → ``FlatRow`` and the
contexts, stacks and benchmarks they name. Each engine scans the observations its own way
(``CypherStore._flat_rows``); what the rows mean is decided here, once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from stack_advisor.schema.models import Benchmark, SoftwareStack
from stack_advisor.store import queries as Q
from stack_advisor.store.base import FlatContext, FlatObservations, FlatRow

Read = Callable[[str, dict[str, Any]], list[dict[str, Any]]]

_STACK_FIELDS = (
    "driver",
    "cuda",
    "cudnn",
    "nccl",
    "tensorrt",
    "framework",
    "framework_version",
    "python",
    "image",
    "raw",
)


def loads(text: str | None, default: Any) -> Any:
    """A JSON property's value; ``default`` when the property is empty or unset."""
    return json.loads(text) if text else default


def stack_fields(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A ``SoftwareStack``'s fields from a Stack node's properties (named ``prefix`` + property):
    the one mapping for the paged read and the flat read."""
    fields = {name: row[prefix + name] for name in _STACK_FIELDS}
    fields["extra"] = loads(row[prefix + "extra_json"], {})
    return fields


class RowReader:
    """Turns one query row (``queries.FLAT_OBSERVATIONS``' columns, in order) into a ``FlatRow``;
    None for an observation without a context or a benchmark. Rows share their repeated values
    (names, timestamps, provenance details): a million rows hold a few thousand distinct ones."""

    def __init__(self) -> None:
        self._text: dict[str, str] = {}
        self._times: dict[str, datetime] = {}
        self._details: dict[str, dict[str, str]] = {}

    def __call__(self, values: Sequence[Any]) -> FlatRow | None:
        key, metric, value, unit, hib, valid, stamp, details, context_id, benchmark_id = values
        if context_id is None or benchmark_id is None:
            return None
        text = self._text
        when = self._times.get(stamp)
        if when is None:
            when = self._times[stamp] = datetime.fromisoformat(stamp)
        parsed = self._details.get(details)
        if parsed is None:
            parsed = self._details[details] = loads(details, {})
        return FlatRow(  # higher_is_better and valid unset: their default, True
            key,
            text.setdefault(metric, metric),
            float(value),
            text.setdefault(unit, unit),
            hib is not False,
            valid is not False,
            when,
            parsed,
            text.setdefault(context_id, context_id),
            text.setdefault(benchmark_id, benchmark_id),
        )


def assemble(read: Read, rows: list[FlatRow]) -> FlatObservations:
    """``rows`` with the contexts, stacks and benchmarks they name, read after them: nodes are
    only ever added, so every one a row names is there by then."""
    hosts = {r["name"] for r in read(Q.HOST_NAMES, {})}
    contexts = {
        r["context_id"]: FlatContext(
            context_id=r["context_id"],
            stack_id=r["stack_id"],
            accelerator=r["accelerator"],
            accelerator_count=r["accelerator_count"],
            placement_kind=r["placement_kind"],
            host=r["host"] if r["host"] in hosts else None,
            run_id=r["run_id"],
            source=r["source"],
        )
        for r in read(Q.FLAT_CONTEXTS, {})
    }
    stacks = {
        r["stack_id"]: SoftwareStack.model_validate(stack_fields(r))
        for r in read(Q.LIST_NODES["Stack"], {})
    }
    benchmarks = {
        r["benchmark_id"]: Benchmark(
            family=r["family"], name=r["name"], parameters=loads(r["parameters_json"], {})
        )
        for r in read(Q.LIST_NODES["Benchmark"], {})
    }
    return FlatObservations(rows=rows, contexts=contexts, stacks=stacks, benchmarks=benchmarks)
