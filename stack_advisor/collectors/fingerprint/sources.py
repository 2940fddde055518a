"""Facts with their sources, and the file root every reader goes through (tests point it at
recorded /proc and /sys trees)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stack_advisor.schema.models import UNKNOWN


def fact(value: Any, source: str) -> dict[str, Any]:
    """One fingerprint field: its value and where it was read from."""
    return {"value": value, "source": source}


def unknown(source: str, reason: str) -> dict[str, Any]:
    """A field that could not be read: ``unknown``, with what was tried and why it failed."""
    return {"value": UNKNOWN, "source": source, "error": reason}


def known(field: dict[str, Any]) -> Any:
    """The value of a fact, or None when it is unknown."""
    value = field.get("value")
    return None if value == UNKNOWN else value


@dataclass(frozen=True)
class FileRoot:
    """Reads system files under ``root`` ("/" on a live machine, a recorded tree in tests)."""

    root: Path = Path("/")

    def path(self, name: str) -> Path:
        return self.root / name.lstrip("/")

    def read(self, name: str) -> str | None:
        try:
            return self.path(name).read_text(errors="replace")
        except OSError:
            return None

    def first_line(self, name: str) -> str | None:
        text = self.read(name)
        if text is None:
            return None
        stripped = text.strip()
        return stripped.splitlines()[0].strip() if stripped else None

    def glob(self, directory: str, pattern: str) -> list[Path]:
        base = self.path(directory)
        return sorted(base.glob(pattern)) if base.is_dir() else []
