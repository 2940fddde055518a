"""Bounds on what one ingested item may hold, checked before anything is written.

The batch cap (``ADVISOR_MAX_BATCH_ITEMS``) counts items; this walks inside each of them so no
nested list or free-text field can hide unbounded work: every list and mapping (``stack.extra``,
``provenance.details``, ``benchmark.parameters``, ``host.cpu_flags``, labels, evidence...) holds
at most ``ADVISOR_MAX_NESTED_ENTRIES`` entries (413 naming the field), every text (notes, URLs,
details, keys included) at most ``ADVISOR_MAX_TEXT_CHARS`` characters (422 naming the field).
The defaults hold our published and measured data many times over: the starter knowledge base's
longest text is 3,800 characters (a provenance detail), its largest nested collection 25 entries.

``stack.extra`` entries also count against the batch cap, since each becomes a component the
store writes (issue 46: 100,000 of them in one 2.3 MB document held the store for 163 s).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from stack_advisor.schema.errors import InvalidInput, PayloadTooLarge


def check_item_bounds(items: Iterable[tuple[str, Any]], max_entries: int, max_chars: int) -> int:
    """Check each (path, item) of a request, e.g. ``("observations[3]", observation)``; returns
    how many ``stack.extra`` entries they hold (for the batch cap).

    Raises:
        PayloadTooLarge: a nested list or mapping over ``max_entries`` (413, naming the field).
        InvalidInput: a text over ``max_chars`` (422, naming the field).
    """
    return sum(_walk(item, path, max_entries, max_chars) for path, item in items)


def _walk(value: Any, path: str, max_entries: int, max_chars: int) -> int:
    if isinstance(value, str):
        if len(value) > max_chars:
            raise InvalidInput(
                f"{path} is {len(value):,} characters; the limit is {max_chars:,} "
                "(ADVISOR_MAX_TEXT_CHARS): shorten it or keep the full text elsewhere and link it",
                details={"field": path, "limit": max_chars},
            )
        return 0
    if isinstance(value, BaseModel):
        return sum(
            _walk(getattr(value, name), f"{path}.{name}", max_entries, max_chars)
            for name in type(value).model_fields
        )
    if not isinstance(value, (list, tuple, set, frozenset, dict)):
        return 0
    if len(value) > max_entries:
        raise PayloadTooLarge(
            f"{path} holds {len(value):,} entries; the limit is {max_entries:,} "
            "(ADVISOR_MAX_NESTED_ENTRIES)",
            details={"field": path, "limit": max_entries},
        )
    extra = len(value) if path.endswith("stack.extra") else 0
    if isinstance(value, dict):
        for key, item in value.items():
            _walk(key, f"{path} key", max_entries, max_chars)
            extra += _walk(item, f"{path}[{str(key)[:40]!r}]", max_entries, max_chars)
    else:
        for index, item in enumerate(value):
            extra += _walk(item, f"{path}[{index}]", max_entries, max_chars)
    return extra
