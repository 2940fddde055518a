"""Rendering: plain rows in; a table, plain columns, CSV, Markdown or JSON out. Independent of
Typer.

Commands build rows (dicts of plain values) and call :func:`render` with the format the user
chose (:func:`output_format`). Layouts:

- ``table``: aligned columns that fit the terminal (cells wrap inside their column at word
  boundaries, never end in "…"); ``details`` fields (a stack, a long note) go on their own
  indented line under the row, and so do the last columns when the terminal is too narrow for
  them without splitting words (joined on one line: ``evidence: 3 obs · conf: 0.80``).
- ``plain``: one line per row, columns aligned, nothing wrapped or cut — the default when stdout
  is not a terminal, so piped output keeps every character.
- ``csv`` / ``markdown``: every column, details included.
- ``json``: the command's JSON contract (``json_data`` when given, else the rows).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys
import textwrap
from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any

from stack_advisor.advisor.csv_cells import spreadsheet_safe

if TYPE_CHECKING:
    from rich.console import Console

GAP = 2  # spaces between columns
MIN_COLUMN = 6  # a column is never squeezed below this (or its longest word)


def __getattr__(name: str) -> Console:
    """``stdout`` / ``stderr``: Rich consoles, built on first use (rich is slow to import)."""
    if name in ("stdout", "stderr"):
        from rich.console import Console

        console = Console(stderr=name == "stderr", soft_wrap=True)
        globals()[name] = console
        return console
    raise AttributeError(name)


class OutputFormat(str, Enum):
    table = "table"
    plain = "plain"
    csv = "csv"
    markdown = "markdown"
    json = "json"


class FormatConflict(ValueError):
    """``--json`` together with a ``--format`` other than json."""


def output_format(fmt: OutputFormat | str | None, as_json: bool = False) -> OutputFormat:
    """The format to print in: ``--json`` is ``--format json``; no choice means a table on a
    terminal and plain columns when stdout is piped.

    Raises:
        FormatConflict: ``--json`` with another ``--format``.
    """
    chosen = OutputFormat(fmt) if fmt is not None else None
    if as_json:
        if chosen not in (None, OutputFormat.json):
            raise FormatConflict(f"--json contradicts --format {chosen.value}; give one of them")
        return OutputFormat.json
    if chosen is not None:
        return chosen
    return OutputFormat.table if sys.stdout.isatty() else OutputFormat.plain


def width() -> int:
    """Columns to fit: $COLUMNS, else the terminal's, else 80."""
    return max(40, shutil.get_terminal_size((80, 24)).columns)


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):  # a pydantic model
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


def cell(value: Any) -> str:
    """One value as text: numbers to 4 significant digits, lists joined, dicts as k=v."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={cell(v)}" for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value) or "-"
    return str(_plain(value))


def _wrap(text: str, size: int) -> list[str]:
    lines: list[str] = []
    for part in text.splitlines() or [""]:
        lines.extend(
            textwrap.wrap(part, size, break_long_words=True, break_on_hyphens=False) or [""]
        )
    return lines


KEY_COLUMNS = 2
"""The first columns name the row (rank, accelerator, node): shrunk only when nothing else can
be."""


def _fit(natural: list[int], floors: list[int], room: int) -> list[int]:
    """Shrink the widest columns until the row fits ``room``: first those after the key columns,
    then any, down to a column's floor (its longest word, so words are not split); only if that
    is not enough, below it."""
    widths = list(natural)
    hard = [
        min(MIN_COLUMN, n) for n in natural
    ]  # a very narrow terminal: split words, still no cut
    for first, floor in ((min(KEY_COLUMNS, len(widths) - 1), floors), (0, floors), (0, hard)):
        while sum(widths) > room:
            movable = [i for i in range(first, len(widths)) if widths[i] > floor[i]]
            if not movable:
                break
            widths[max(movable, key=lambda i: widths[i])] -= 1
    return widths


def _floors(rows: list[list[str]], cols: list[str]) -> tuple[list[int], list[int]]:
    """Each column's natural width (its longest cell) and floor (its longest word)."""
    natural = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    floors = [
        min(
            natural[i],
            max(
                [MIN_COLUMN] + [len(w) for text in [c, *(r[i] for r in rows)] for w in text.split()]
            ),
        )
        for i, c in enumerate(cols)
    ]
    return natural, floors


def _columns_that_fit(body: list[list[str]], cols: list[str], total: int) -> int:
    """How many of the leading columns fit ``total`` without splitting a word; the rest move
    under their row (fewer, wider columns). Never fewer than the key columns and one more."""
    _, floors = _floors(body, cols)
    keep = len(cols)
    while keep > KEY_COLUMNS + 1 and sum(floors[:keep]) + GAP * (keep - 1) > total:
        keep -= 1
    return keep


def _table(
    rows: list[list[str]],
    cols: list[str],
    details: list[list[tuple[str, str]]],
    title: str | None,
    total: int,
) -> str:
    out: list[str] = []
    if title:
        out.extend(_wrap(title, total))
    natural, floors = _floors(rows, cols)
    widths = _fit(natural, floors, total - GAP * (len(cols) - 1))

    def line(cells: list[str]) -> list[str]:
        wrapped = [_wrap(text, widths[i]) for i, text in enumerate(cells)]
        height = max(len(w) for w in wrapped)
        return [
            (" " * GAP)
            .join((w[k] if k < len(w) else "").ljust(widths[i]) for i, w in enumerate(wrapped))
            .rstrip()
            for k in range(height)
        ]

    out.extend(line(cols))
    out.append((" " * GAP).join("─" * w for w in widths))
    for row, extra in zip(rows, details):
        out.extend(line(row))
        for name, text in extra:
            label = f"{name}: " if name else ""
            out.extend(
                textwrap.wrap(
                    f"{label}{text}",
                    total,
                    initial_indent="    ",
                    subsequent_indent="      ",
                    break_on_hyphens=False,
                )
                or ["    -"]
            )
    return "\n".join(out) + "\n"


def _aligned(rows: list[list[str]], cols: list[str], title: str | None) -> str:
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    lines = [f"# {title}"] if title else []
    for r in [cols, *rows]:
        lines.append((" " * GAP).join(text.ljust(widths[i]) for i, text in enumerate(r)).rstrip())
    return "\n".join(lines) + "\n"


def _markdown(rows: list[list[str]], cols: list[str], title: str | None) -> str:
    def esc(text: str) -> str:
        # HTML and the markdown that makes links, images or code: shown as text, never rendered
        text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        for char in "\\`[]|":
            text = text.replace(char, "\\" + char)
        return text.replace("\r", " ").replace("\n", " ")

    lines = [f"**{esc(title)}**", ""] if title else []
    lines.append("| " + " | ".join(esc(c) for c in cols) + " |")
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    lines.extend("| " + " | ".join(esc(c) for c in r) + " |" for r in rows)
    return "\n".join(lines) + "\n"


def _csv(rows: Sequence[dict[str, Any]], cols: list[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(cols)
    for row in rows:
        writer.writerow(
            ["" if row.get(c) is None else spreadsheet_safe(cell(row.get(c))) for c in cols]
        )
    return buf.getvalue()


def render_text(
    rows: Sequence[dict[str, Any]],
    fmt: OutputFormat,
    *,
    title: str | None = None,
    columns: Iterable[str] | None = None,
    details: Iterable[str] = (),
    inline: Iterable[str] = (),
) -> str:
    """The rows in ``fmt`` (any but json) as text; see the module docstring for the layouts."""
    lined = list(details)
    together = list(inline)
    extra = list(lined)
    cols = (
        list(columns)
        if columns is not None
        else [k for k in (rows[0] if rows else {}) if k not in extra and k not in together]
    )
    extra += together
    if fmt is OutputFormat.csv:
        return _csv(rows, cols + extra)
    if fmt is OutputFormat.table:
        total = width()
        body = [[cell(r.get(c)) for c in cols] for r in rows]
        keep = _columns_that_fit(body, cols, total)
        moved, cols, body = cols[keep:], cols[:keep], [b[:keep] for b in body]
        more = [
            [(d, cell(r.get(d))) for d in lined if r.get(d) not in (None, "", [], {})] for r in rows
        ]
        for r, lines in zip(rows, more):
            # the columns that did not fit, right under the row; the inline fields last
            shown = [d for d in together if r.get(d) not in (None, "", [], {})]
            for names, at in ((moved, 0), (shown, len(lines))):
                joined = " · ".join(f"{d}: {cell(r.get(d))}" for d in names)
                if joined:
                    lines.insert(at, ("", joined))
        return _table(body, cols, more, title, total)
    every = cols + extra
    body = [[cell(r.get(c)) for c in every] for r in rows]
    if fmt is OutputFormat.markdown:
        return _markdown(body, every, title)
    return _aligned(body, every, title)


def render(
    rows: Sequence[dict[str, Any]],
    *,
    as_json: bool = False,
    fmt: OutputFormat | None = None,
    title: str | None = None,
    columns: Iterable[str] | None = None,
    details: Iterable[str] = (),
    inline: Iterable[str] = (),
    json_data: Any = None,
) -> None:
    """Print rows in ``fmt`` (default: from ``as_json`` and whether stdout is a terminal).

    ``json_data`` replaces the rows in JSON; ``details`` are fields printed on their own line
    under each row in a table (and as ordinary columns elsewhere); ``inline`` fields share one
    such line."""
    chosen = output_format(fmt, as_json)
    if chosen is OutputFormat.json:
        print_json(list(rows) if json_data is None else json_data)
        return
    sys.stdout.write(
        render_text(rows, chosen, title=title, columns=columns, details=details, inline=inline)
    )
    sys.stdout.flush()


def note(message: str, prefix: str = "") -> None:
    """A human message on stderr, wrapped to the terminal (never cut) with a hanging indent."""
    text = f"{prefix}{message}"
    if not sys.stderr.isatty() and not os.environ.get("COLUMNS"):
        sys.stderr.write(text + "\n")
        return
    indent = " " * min(len(prefix), 12)
    sys.stderr.write(
        "\n".join(
            textwrap.wrap(text, width(), subsequent_indent=indent, break_on_hyphens=False) or [""]
        )
        + "\n"
    )


def fail_if_empty(empty: bool, what: str) -> None:
    """Exit status 1 after an answer that holds nothing (every configuration refused, nothing
    ranked), as collect and sweep exit when nothing was measured: a script or a Job sees the
    failure; the answer itself, with its reasons, is already printed (in any layout, JSON
    too). Usage errors (a bad flag, an unknown benchmark) keep typer's 2."""
    if empty:
        import typer

        note(what, prefix="error: ")
        raise typer.Exit(1)


def info(message: str) -> None:
    __getattr__("stderr").print(message, highlight=False, emoji=False)


def warning(message: str) -> None:
    note(message, prefix="warning: ")


def error(message: str) -> None:
    from rich.markup import escape

    __getattr__("stderr").print(
        f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, emoji=False
    )
