"""Templates and exports: one HTML rendering, and CSV/JSON of the same rows the page shows."""

from __future__ import annotations

import csv
import io
import json
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode, urlsplit

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from stack_advisor.advisor.csv_cells import spreadsheet_safe
from stack_advisor.web.charts import figure

FORMATS = ("html", "csv", "json")


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("stack_advisor.web", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = number
    env.filters["web_url"] = web_url
    env.globals["svg"] = lambda markup: Markup(
        markup
    )  # built by stack_advisor.web.charts, escaped there
    return env


def web_url(value: Any) -> str | None:
    """``value`` when it is an absolute http(s) URL (to render as a link), else None: stored
    data is never a ``javascript:``, ``data:`` or other link."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    if any(c in text for c in "\x00\t\n\r") or any(ord(c) < 32 for c in text):
        return None
    return text


def number(value: Any, digits: int = 4) -> str:
    """A figure for people: 4 significant digits, thousands separated; '—' for none."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return figure(value, digits)
    return f"{value:,}" if isinstance(value, int) else str(value)


def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("error", None)
    html = (
        environment()
        .get_template(template)
        .render(
            request=request, path=request.url.path, link=lambda **kw: link(request, **kw), **context
        )
    )
    return HTMLResponse(html, status_code=status_code)


def link(request: Request, **changes: Any) -> str:
    """This page's URL with some query fields changed (None removes one): sort headers, pager
    and export links keep every other field, so each is a permalink too."""
    items = [(k, v) for k, v in request.query_params.multi_items() if k not in changes]
    for k, v in changes.items():
        if v is None:
            continue
        items.extend((k, x) for x in v) if isinstance(v, list) else items.append((k, str(v)))
    query = urlencode(items)
    return request.url.path + (f"?{query}" if query else "")


def export(
    fmt: str, name: str, columns: list[str], rows: list[dict[str, Any]], document: dict[str, Any]
) -> Response:
    """``csv``: the shown rows, one column per field; ``json``: ``document`` (the query, the
    rows and whatever else the page shows)."""
    if fmt == "json":
        return Response(
            json.dumps(document, default=str, indent=1),
            media_type="application/json",
            headers={"Content-Disposition": f'inline; filename="{name}.json"'},
        )
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: _cell(row.get(c)) for c in columns})
    return Response(
        buf.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
    )


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return spreadsheet_safe("; ".join(map(str, value)))
    if isinstance(value, dict):
        return spreadsheet_safe(json.dumps(value, default=str))
    if isinstance(value, str):
        return spreadsheet_safe(value)
    return "" if value is None else value
