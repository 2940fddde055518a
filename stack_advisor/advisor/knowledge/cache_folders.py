"""Where the advisor persists what it derives from a store: the observation tables
(``stack_advisor.advisor.knowledge.table_file``) and their calibrations
(``stack_advisor.advisor.estimate.calibration_file``).

The folders are settings, passed in: the command line and the API build them from the
environment at their edge (``CacheFolders.from_environ(os.environ)``); library code never reads
the environment. A folder that is None turns that cache off.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

TABLE_CACHE_ENV = "ADVISOR_TABLE_CACHE"
CALIBRATION_CACHE_ENV = "ADVISOR_CALIBRATION_CACHE"


@dataclass(frozen=True)
class CacheFolders:
    """The persisted tables' folder and the calibrations' folder (None: not persisted)."""

    tables: Path | None = None
    calibration: Path | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> CacheFolders:
        """``$ADVISOR_TABLE_CACHE`` and ``$ADVISOR_CALIBRATION_CACHE`` (``0``: off), else
        ``$XDG_CACHE_HOME/stack-advisor/tables`` and ``.../calibration`` (``~/.cache`` without
        it)."""
        return cls(
            tables=configured_folder(environ, TABLE_CACHE_ENV, "tables"),
            calibration=configured_folder(environ, CALIBRATION_CACHE_ENV, "calibration"),
        )


def configured_folder(environ: Mapping[str, str], name: str, leaf: str) -> Path | None:
    """``environ[name]`` when set (``0``: off, None), else
    ``$XDG_CACHE_HOME/stack-advisor/<leaf>``."""
    configured = environ.get(name)
    if configured == "0":
        return None
    if configured:
        return Path(configured)
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stack-advisor" / leaf
