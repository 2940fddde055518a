"""Progress of long library work (seeding the starter knowledge base, reading every observation,
fitting the model), reported to whoever shows it.

Library code opens a ``phase``; the CLI installs a reporter once (``set_reporter``) that draws a
progress bar on stderr. Without a reporter (the API, tests, scripts) phases cost nothing. Like
logging, the reporter is process-wide: the work does not know who is watching.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol


class Reporter(Protocol):
    def start(self, text: str, total: int | None) -> None: ...

    def update(self, done: int, total: int | None = None) -> None: ...

    def finish(self) -> None: ...


_reporter: Reporter | None = None


def set_reporter(reporter: Reporter | None) -> Reporter | None:
    """Install ``reporter`` (None: report nothing); returns the one it replaces."""
    global _reporter
    previous, _reporter = _reporter, reporter
    return previous


def _ignore(done: int, total: int | None = None) -> None:
    return None


@contextmanager
def phase(text: str, total: int | None = None) -> Iterator[Callable[..., None]]:
    """A named phase of work; yields ``update(done, total=None)``. Nested phases report only
    the outermost one."""
    global _reporter
    reporter = _reporter
    if reporter is None:
        yield _ignore
        return
    _reporter = None  # nested phases stay quiet
    reporter.start(text, total)
    try:
        yield reporter.update
    finally:
        reporter.finish()
        _reporter = reporter
