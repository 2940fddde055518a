"""Placeholder: filled in by its own issue."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    return None
