"""The model's foundations: checked field types, identities (digests), timestamps, the base
class every domain model derives from, and the two enums every part uses."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
)

from stack_advisor.schema.checks import (
    checked_name,
    checked_optional_name,
    not_before_2000,
    strict_bool,
    strict_number,
    timestamp_in,
)

RESULT_DOCUMENT_VERSION = 1
INT64_MAX = 2**63 - 1  # both engines store integers as INT64
UNKNOWN = "unknown"

# Names (≤ 256 printable characters, no bidi overrides or zero-width characters), strict numbers
# and booleans, and timestamps whose numbers are Unix seconds: see stack_advisor.schema.checks.
Name = Annotated[str, Field(min_length=1), AfterValidator(checked_name)]
OptName = Annotated[str | None, AfterValidator(checked_optional_name)]
Number = Annotated[float, BeforeValidator(strict_number)]
OptNumber = Annotated[float | None, BeforeValidator(strict_number)]
Integer = Annotated[int, BeforeValidator(strict_number)]
OptInteger = Annotated[int | None, BeforeValidator(strict_number)]
Flag = Annotated[bool, BeforeValidator(strict_bool)]
Stamp = Annotated[datetime, BeforeValidator(timestamp_in)]
OptStamp = Annotated[datetime | None, BeforeValidator(timestamp_in)]


def digest(*parts: Any, length: int = 20) -> str:
    """A stable short hash of JSON-serialisable parts."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def observation_key_of(*parts: Any) -> str:
    """The observation key from its identity parts (ids and plain strings): a hash of their
    separator-joined text. Cheap, because ingest computes one per observation."""
    text = "\x1f".join("" if p is None else str(p) for p in parts)
    return "obs-" + hashlib.sha256(text.encode()).hexdigest()[:32]


def utcnow() -> datetime:
    return datetime.now(UTC)


FUTURE_TOLERANCE = timedelta(days=1)  # clocks of collectors drift; a year-9999 stamp is a bug


# Types no NUL can hide in (numbers, stamps, enums, models: their own fields are checked): the
# validator returns their values at once. Learnt per type, on its first value.
_NO_TEXT: set[type] = {int, float, bool, type(None), datetime}
_TEXT_HOLDERS = (str, dict, list, tuple)


def _has_nul(value: Any) -> bool:
    """Whether a NUL is in a string, or in a key or value (however nested) of a dict, list or
    tuple. Runs on every field of every model: the usual dict or list of strings is checked by
    joining it (one C call each), anything else one item at a time."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        try:
            return "\x00" in "".join(value) or "\x00" in "".join(value.values())
        except TypeError:  # a key or value that is not a string
            return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        try:
            return "\x00" in "".join(value)
        except TypeError:
            return any(_has_nul(v) for v in value)
    return False


def checked_time(value: datetime | None) -> datetime | None:
    """A timestamp with a time zone, from 2000 on, not in the future (a day of clock skew
    allowed)."""
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"needs a time zone, got {value.isoformat()!r}; send UTC as e.g. '2026-01-31T12:00:00Z'"
        )
    if value - utcnow() > FUTURE_TOLERANCE:
        raise ValueError(f"is in the future ({value.isoformat()}); check the collector's clock")
    return not_before_2000(value)


class DomainModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, populate_by_name=True, defer_build=True)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # NUL bytes break identities, logs and some drivers; no name or text needs one
        kind = value.__class__
        if kind is str:  # half the calls (the starter snapshot: 323k of 632k)
            if "\x00" not in value:
                return value
        elif kind in _NO_TEXT:
            return value
        elif not issubclass(kind, _TEXT_HOLDERS):
            _NO_TEXT.add(kind)
            return value
        elif not _has_nul(value):
            return value
        raise ValueError("must not contain NUL (\\x00) characters")


class PlacementKind(str, Enum):
    """How the accelerator reaches the workload."""

    BARE_METAL = "bare-metal"
    PASSTHROUGH = "passthrough"
    VGPU = "vgpu"
    UNKNOWN = "unknown"


class SourceKind(str, Enum):
    """Where a figure comes from: our collectors, or a published source."""

    MEASURED = "measured"
    PUBLISHED = "published"
