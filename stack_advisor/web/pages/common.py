"""What the web pages share: the form's fields, the placements a form offers, a GET form
read with its fields named in errors, and the bars of a chart of rows with intervals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import Request

from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import PlacementKind
from stack_advisor.web.charts import Bar

PLACEMENTS = [p.value for p in PlacementKind]


def query_fields(request: Request) -> dict[str, Any]:
    """The query string's fields as a plain dict (one value each)."""
    return {k: v for k, v in request.query_params.items()}


def given(fields: dict[str, Any], *names: str) -> dict[str, Any]:
    """The named fields of a form, an empty or missing one as None (what the service takes for
    "not asked")."""
    return {name: fields.get(name) or None for name in names}


class GetForm:
    """A GET form's fields: text trimmed (empty is None), numbers parsed with the field named."""

    def __init__(self, request: Request) -> None:
        self.fields = request.query_params

    def text(self, name: str) -> str | None:
        return (self.fields.get(name) or "").strip() or None

    def number(self, name: str, kind: type[int] | type[float]) -> int | float | None:
        text = self.text(name)
        try:
            return None if text is None else kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise InvalidInput(f"{name}: must be {what}, got {text!r}") from None

    def choice(self, name: str) -> bool | None:
        """``yes``/``no`` as True/False; anything else None."""
        return {"yes": True, "no": False}.get(self.text(name) or "")


Row = dict[str, Any]


def row_bars(
    rows: list[Row],
    label: Callable[[Row], str],
    note: Callable[[Row], str],
    *,
    value: str = "value",
    group: str | None = None,
) -> list[Bar]:
    """One bar a row: the row's ``value`` field (or the one named) between its ``low`` and
    ``high``, coloured by its ``group`` field when one is named."""
    return [
        Bar(label(r), r[value], r["low"], r["high"], group=r[group] if group else "", note=note(r))
        for r in rows
    ]
