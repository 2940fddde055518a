"""Bounds on what an importer reads, so a hostile archive or table is a clear error, not an
exhausted machine.

Every bound is counted while the bytes stream in (an archive is never inflated whole, a member
never read before its size is checked), and every one can be raised for a real round that needs
more: ``ADVISOR_IMPORT_MAX_<NAME>`` (e.g. ``ADVISOR_IMPORT_MAX_MEMBER_BYTES=268435456``). The
defaults hold the published rounds with room to spare: the shared archives expand 11x (Training
v5.1: 33 MB packed, 375 MB expanded, 2,094 members, its largest member 4 MB) to 41x (Inference
v3.0: 2 MB packed, 81 MB as a tar of 47,695 small files, of which the importer keeps 19 MB); the
v5.1 summary table is 2.2 MB of JSON. With them a 10 MB hostile archive inflates at most 1 GB,
keeps at most 128 MiB, and fails within seconds (bench/import_bombs.py).

JSON is read through ``load_json``: its size, nesting depth and number of objects and lists are
bounded before ``json`` parses it (so ``[`` x 200,000 is an error naming the limit, not a
RecursionError), and an object that gives one key two different values is refused (``json``
would keep the last).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, fields
from itertools import accumulate
from typing import Any

from stack_advisor.schema.errors import InvalidInput

MiB = 1024 * 1024
GiB = 1024 * MiB
# An archive may expand past this many bytes before its expansion ratio is judged: small archives
# of text legitimately compress well.
RATIO_FLOOR_BYTES = 64 * MiB
ENV_PREFIX = "ADVISOR_IMPORT_MAX_"


class ImportLimitExceeded(InvalidInput):
    """An input is larger, deeper or more numerous than an import limit allows."""


@dataclass(frozen=True)
class ImportLimits:
    """What one import may read. Sizes are bytes."""

    archive_bytes: int = 8 * GiB  # an archive or table file as stored (compressed)
    expanded_bytes: int = 16 * GiB  # an archive's bytes once inflated, all members
    expansion_ratio: int = 100  # expanded / stored size, judged past RATIO_FLOOR_BYTES
    members: int = 1_000_000  # members (files) of one archive or tree
    member_bytes: int = 16 * MiB  # one member an importer reads
    held_bytes: int = 128 * MiB  # the members an importer keeps in memory, all together
    json_bytes: int = 32 * MiB  # one JSON document, once inflated
    json_depth: int = 64  # nesting of objects and lists
    json_containers: int = 500_000  # objects and lists in one JSON document
    rows: int = 200_000  # rows of one summary table

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ImportLimits:
        """The defaults, each replaced by ``ADVISOR_IMPORT_MAX_<NAME>`` where that is set.

        Raises:
            InvalidInput: a variable that is not a positive whole number (named, with its value).
        """
        env = os.environ if environ is None else environ
        values: dict[str, int] = {}
        for f in fields(cls):
            name = ENV_PREFIX + f.name.upper()
            raw = env.get(name)
            if raw is None or not raw.strip():
                continue
            try:
                value = int(raw.strip().replace("_", ""))
            except ValueError:
                value = 0
            if value <= 0:
                raise InvalidInput(f"{name} must be a positive whole number, got {raw!r}")
            values[f.name] = value
        return cls(**values)


def limit_error(where: str, what: str, limit_name: str, limit: int) -> ImportLimitExceeded:
    """The error for one exceeded limit: the file, what was over, and how to raise the limit."""
    return ImportLimitExceeded(
        f"{where}: {what}, over the import limit {limit_name}={limit:,} "
        f"(set {ENV_PREFIX}{limit_name.upper()} to raise it for an input you trust)"
    )


# A JSON string, unrolled so that a long one costs no backtracking.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def _brackets(data: bytes) -> bytes:
    """The brackets of a JSON text outside its strings (a conservative bound for text that is
    not valid JSON)."""
    return _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)


def _deepest(brackets: bytes) -> int:
    deepest = depth = 0
    chunk = 1 << 20
    for start in range(0, len(brackets), chunk):
        levels = list(
            accumulate((_STEP[b] for b in brackets[start : start + chunk]), initial=depth)
        )
        deepest = max(deepest, max(levels))
        depth = levels[-1]
    return deepest


def json_shape(data: bytes) -> tuple[int, int]:
    """(deepest nesting, objects and lists) of a JSON text, without parsing it."""
    brackets = _brackets(data)
    return _deepest(brackets), brackets.count(b"[") + brackets.count(b"{")


_EMPTY: tuple[Any, ...] = ("", None, [], {})


def _refuse_duplicates(where: str) -> Any:
    """An object hook that refuses a key given two different values. A key repeated with the
    same value, or left empty once, says one thing (published system files do this: Dell's
    ``host_cooling_type`` "air" then ""), and keeps the value that is not empty."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out and out[key] != value:
                if value in _EMPTY:
                    continue
                if out[key] not in _EMPTY:
                    raise ValueError(
                        f"key {key[:80]!r} appears twice in one object with different values"
                    )
            out[key] = value
        return out

    return hook


def load_json(data: bytes, where: str, limits: ImportLimits) -> Any:
    """Parse one JSON document within the limits.

    Raises:
        ImportLimitExceeded: too large, too deep or too many objects and lists (naming the limit).
        ValueError: not UTF-8 JSON, or an object with a repeated key (the message says which).
    """
    if len(data) > limits.json_bytes:
        raise limit_error(where, f"JSON of {len(data):,} bytes", "json_bytes", limits.json_bytes)
    brackets = _brackets(data)
    containers = brackets.count(b"[") + brackets.count(b"{")
    if containers > limits.json_containers:
        raise limit_error(
            where,
            f"JSON with {containers:,} objects and lists",
            "json_containers",
            limits.json_containers,
        )
    deepest = _deepest(brackets)
    if deepest > limits.json_depth:
        raise limit_error(
            where, f"JSON nested {deepest:,} levels deep", "json_depth", limits.json_depth
        )
    text = data.decode("utf-8-sig")
    return json.loads(text, object_pairs_hook=_refuse_duplicates(where))


__all__ = [
    "GiB",
    "ImportLimitExceeded",
    "ImportLimits",
    "MiB",
    "json_shape",
    "limit_error",
    "load_json",
]
