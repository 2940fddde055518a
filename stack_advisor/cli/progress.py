"""Progress on stderr for the library's long phases (``stack_advisor.runtime.progress``).

On a terminal: a transient Rich bar (a spinner with a count when the total is unknown). When
stderr is not a terminal: one line per phase, nothing else, so logs stay readable. Never on
stdout, so ``--json`` output is untouched.
"""

from __future__ import annotations

import sys
from typing import Any


class StderrProgress:
    """A ``runtime.progress.Reporter`` drawing on stderr; Rich is imported on first use."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self._bar: Any = None
        self._task: Any = None

    def start(self, text: str, total: int | None) -> None:
        if not _isatty(self.stream):
            print(f"advisor: {text} ...", file=self.stream, flush=True)
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=self.stream),
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task(text, total=total)

    def update(self, done: int, total: int | None = None) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=done, **({"total": total} if total else {}))

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = self._task = None


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def install() -> None:
    """Report the library's phases on stderr for the rest of this process."""
    from stack_advisor.runtime import progress

    progress.set_reporter(StderrProgress())
