"""Rendering: plain rows in, a Rich table or JSON out. Independent of Typer."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from enum import Enum
from typing import Any, Iterable, Sequence

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

stdout = Console(soft_wrap=True)
stderr = Console(stderr=True, soft_wrap=True)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def print_json(data: Any) -> None:
    """JSON to stdout: a contract that scripts and tests parse."""
    sys.stdout.write(json.dumps(_plain(data), indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (dict, list)):
        return json.dumps(_plain(value), default=str)
    return str(_plain(value))


def render(
    rows: Sequence[dict[str, Any]],
    *,
    as_json: bool,
    title: str | None = None,
    columns: Iterable[str] | None = None,
    json_data: Any = None,
) -> None:
    """Print rows as a table (humans) or JSON (``as_json``; ``json_data`` overrides the rows)."""
    if as_json:
        print_json(rows if json_data is None else json_data)
        return
    cols = list(columns) if columns is not None else (list(rows[0].keys()) if rows else [])
    table = Table(title=title, show_lines=False)
    for col in cols:
        table.add_column(col)
    for row in rows:
        table.add_row(*(_cell(row.get(c)) for c in cols))
    stdout.print(table)


def info(message: str) -> None:
    stderr.print(message)


def error(message: str) -> None:
    stderr.print(f"[bold red]error:[/] {message}", highlight=False)
