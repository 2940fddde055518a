"""The time one answer may take, and whether its client still waits for it.

A thread cannot be stopped from outside, so the work checks: ``checkpoint()`` between steps of a
recommendation (each candidate ranked, each node pool evaluated) raises once the answer's budget
is spent or its client has gone, and the rest is never computed. The API gives each answer a
budget (``AnswerBudget.applied``, a context variable: the worker thread that computes the answer
sees it); the CLI and library callers set none, and ``checkpoint()`` then costs one
context-variable read.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from stack_advisor.schema.errors import OverBudget, PayloadTooLarge


class ClientGone(Exception):
    """The client closed the connection: the rest of the work is dropped."""


class AnswerBudget:
    """``seconds`` of wall time from now, named by ``setting`` in the refusal, and a flag the
    caller sets when the client goes away (``cancel``)."""

    def __init__(self, seconds: float, *, setting: str = "ADVISOR_ANSWER_BUDGET_S") -> None:
        self.seconds = seconds
        self.setting = setting
        self.deadline = time.monotonic() + seconds
        self._gone = threading.Event()
        self.in_shared_work = False  # inside ``shared_work()``: its time is not counted

    def cancel(self) -> None:
        """The client has gone: the next checkpoint stops the work."""
        self._gone.set()

    def check(self, doing: str = "the answer") -> None:
        """Raises:
        ClientGone: the client has gone.
        OverBudget: the budget is spent (503 naming the setting).
        """
        if self._gone.is_set():
            raise ClientGone
        if time.monotonic() > self.deadline:
            raise OverBudget(
                f"{doing} took longer than its budget of {self.seconds:g} s ({self.setting}); "
                "ask for less in one request (fewer nodes or queries) or retry later",
                details={"setting": self.setting, "limit_s": self.seconds},
            )

    @contextmanager
    def applied(self) -> Iterator[AnswerBudget]:
        """This budget is the one ``checkpoint()`` checks inside the block (in this context,
        and in the worker threads started from it)."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)


_CURRENT: contextvars.ContextVar[AnswerBudget | None] = contextvars.ContextVar(
    "answer_budget", default=None
)


@contextmanager
def shared_work() -> Iterator[None]:
    """Work done once for every answer after it (building the knowledge snapshot of a new store
    generation, or waiting for another thread that builds it): its time is not counted against
    the current answer's budget, so the first answer after a write is not refused for the
    build that later answers reuse (a client cannot make it happen again by asking)."""
    budget = _CURRENT.get()
    if budget is None or budget.in_shared_work:  # nothing to adjust, or an outer block does
        yield
        return
    budget.in_shared_work = True
    start = time.monotonic()
    try:
        yield
    finally:
        budget.in_shared_work = False
        budget.deadline += time.monotonic() - start


def checkpoint(doing: str = "the answer") -> None:
    """Stop here if the current answer's budget is spent or its client has gone (no budget set:
    nothing to check).

    Raises:
        ClientGone, OverBudget: see ``AnswerBudget.check``.
    """
    budget = _CURRENT.get()
    if budget is not None:
        budget.check(doing)


def check_cap(items: int, cap: int, what: str, setting: str) -> None:
    """413 naming ``setting`` when one request asks for more than ``cap`` ``what``."""
    if items > cap:
        raise PayloadTooLarge(
            f"{items} {what} in one request, the limit is {cap} ({setting}); split them over "
            "several requests",
            details={"limit": cap, "setting": setting, "got": items},
        )
