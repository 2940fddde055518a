"""What runs inside an answer worker process (``stack_advisor.api.answer_pool``): a prediction
request from its raw body to its JSON answer, over a ``Knowledge`` snapshot the server wrote to a
file.

The server's process keeps its interpreter lock for the event loop (``/healthz``, refusals, the
I/O of every request) and for short answers; parsing and answering thousands of queries happens
here, at a lower CPU priority. The worker checks, between chunks of queries, the answer's
deadline and a flag the server sets when the client has gone (a shared byte per request slot).

Every outcome is a plain tuple (pickled back to the server): ``("ok", json)``, ``("invalid",
errors)`` (pydantic's errors, the server raises them as a 422), ``("gone",)`` or ``("error",
AdvisorError subclass, message, details)``.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import shutil
import signal
import threading
import time
from multiprocessing.util import Finalize
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError
from threadpoolctl import threadpool_limits

from stack_advisor.advisor.budget import AnswerBudget, ClientGone
from stack_advisor.advisor.results import Prediction
from stack_advisor.advisor.snapshot import Knowledge
from stack_advisor.advisor.verbs.predict import predict
from stack_advisor.api.limits import check_cap
from stack_advisor.api.prediction_batch import (
    SnapshotRecommender,
    answer_queries,
    in_order,
    judge_batch,
    to_answer,
)
from stack_advisor.api.schemas import PredictionBatch
from stack_advisor.schema.errors import AdvisorError

Outcome = tuple[Any, ...]
PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_DEATH_SIGNAL = signal.SIGUSR1  # not SIGTERM: the pool's own terminate() must still work
PARENT_POLL_S = 0.5  # how often the fallback looks at the parent
_PREDICTIONS = TypeAdapter(list[Prediction])

# this process's state: the cancel flags shared with the server, and the snapshot last loaded
_flags: Any = None
_loaded: tuple[str, Knowledge] | None = None


def start(flags: Any, nice: int, parent: int | None = None, folder: str | None = None) -> None:
    """The worker's initializer: keep the flags, lower the priority (the server's own work and
    the rest of the machine come first), one BLAS thread, leave Ctrl-C to the server, and end
    with the server ``parent`` (removing its snapshot ``folder``) however the server ends."""
    global _flags
    _flags = flags
    if nice > 0:
        os.nice(nice)
    threadpool_limits(limits=1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is not None:
        end_with_parent(parent, folder)


def end_with_parent(parent: int, folder: str | None) -> None:
    """Exit once process ``parent`` has gone, even killed with SIGKILL (which runs none of its
    clean-up): the worker would otherwise live on as an orphan, and with it multiprocessing's
    ``resource_tracker``, which waits for every process holding its pipe. The worker removes the
    snapshot ``folder`` on its way out.

    Linux tells the worker with a parent-death signal (``prctl(PR_SET_PDEATHSIG)``). That signal
    also comes when the *thread* that started the worker ends (the server's warm-up thread), so
    the handler exits only when the parent really is gone (the worker has been handed to another
    parent); a thread that looks at the parent every ``PARENT_POLL_S`` covers the rest (a
    signal already spent on a thread, a platform without prctl)."""

    def remove() -> None:
        if folder and os.getppid() != parent:
            shutil.rmtree(folder, ignore_errors=True)
            # and any other folder the dead server made (named after its pid: a pool it started
            # again wrote another), which no worker of it is left to remove
            named = Path(folder).name.rsplit("-", 1)[0] + "-"
            for other in Path(folder).parent.glob(named + "*"):
                shutil.rmtree(other, ignore_errors=True)

    def gone() -> None:
        remove()
        os._exit(0)

    # a worker can also end the ordinary way once its parent is gone (the pool's pipe closes
    # before the signal is handled, under load): multiprocessing runs its finalizers then
    Finalize(None, remove, exitpriority=100)

    def on_signal(signum: int, frame: object) -> None:
        if os.getppid() != parent:
            gone()

    signal.signal(PARENT_DEATH_SIGNAL, on_signal)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(PARENT_DEATH_SIGNAL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the thread alone
        pass
    if os.getppid() != parent:  # gone before the signal was asked for
        gone()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        gone()

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _knowledge(path: str) -> Knowledge:
    global _loaded
    if _loaded is None or _loaded[0] != path:
        with Path(path).open("rb") as handle:
            knowledge = pickle.load(handle)
        _loaded = (path, knowledge)
    return _loaded[1]


def load(path: str) -> int:
    """Load the snapshot ahead of the first request (the server's warm-up); its generation."""
    return _knowledge(path).generation


def predict_request(
    path: str, raw: bytes, slot: int, budget_s: float, max_queries: int, chunk: int
) -> Outcome:
    """Parse ``raw`` (a ``PredictionBatch``: each query judged on its own), refuse more than
    ``max_queries`` queries, and predict a ``chunk`` at a time until done, past ``budget_s``
    from the start of the work, or once the server raises flag ``slot``."""
    try:
        request = PredictionBatch.model_validate_json(raw or b"null")
    except ValidationError as exc:
        return ("invalid", [_plain(e) for e in exc.errors(include_url=False)])
    try:
        check_cap(len(request.queries), max_queries, "queries", "ADVISOR_MAX_PREDICT_QUERIES")
        judged = judge_batch(request.queries)  # a bad field refuses its query alone
        queries = to_answer(judged)
        knowledge = _knowledge(path)
        recommender = SnapshotRecommender(knowledge)  # a described model's, by proxy
        budget = AnswerBudget(budget_s)  # from now: a worker's start and load are not counted
        out: list[Prediction] = []
        with budget.applied():
            for first in range(0, len(queries), chunk):
                if _flags is not None and _flags[slot]:
                    budget.cancel()
                if first:
                    budget.check(f"the answer, after {first} of {len(queries)} queries,")
                part = queries[first : first + chunk]
                plain = lambda qs: predict(knowledge, qs)  # noqa: E731
                out.extend(answer_queries(part, plain, recommender))
    except ClientGone:
        return ("gone",)
    except AdvisorError as exc:
        return ("error", type(exc), exc.message, exc.details)
    return ("ok", _PREDICTIONS.dump_json(in_order(judged, out)))


def _plain(error: Any) -> dict[str, Any]:
    """One of pydantic's errors with only what the 422 shows (field, message, type, what was
    sent), in values that pickle whatever was sent (bytes that are not UTF-8, odd objects)."""
    sent = error.get("input")
    if isinstance(sent, dict):
        sent = {}  # the 422 names only the kind of a container
    elif isinstance(sent, list):
        sent = []
    elif not isinstance(sent, (str, bytes, int, float, bool, type(None))):
        sent = repr(sent)
    return {
        "type": error.get("type"),
        "loc": tuple(error.get("loc", ())),
        "msg": error.get("msg"),
        "input": sent,
    }
