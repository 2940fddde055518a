"""The answer budget (stack_advisor.advisor.budget): checkpoints stop the work past the budget or
once the client has gone; shared work (the knowledge snapshot every later answer reuses) is not
counted."""

from __future__ import annotations

import threading
import time

import pytest

from stack_advisor.advisor.budget import AnswerBudget, ClientGone, checkpoint, shared_work
from stack_advisor.schema.errors import OverBudget


def test_no_budget_set_checks_nothing() -> None:
    checkpoint()  # the CLI and library callers: no budget, no refusal


def test_past_the_budget_a_checkpoint_refuses_naming_the_setting() -> None:
    with AnswerBudget(0.05).applied():
        checkpoint()
        time.sleep(0.08)
        with pytest.raises(OverBudget) as caught:
            checkpoint("the recommendation")
    assert caught.value.status_code == 503 and "ADVISOR_ANSWER_BUDGET_S" in caught.value.message
    assert caught.value.message.startswith("the recommendation took longer")
    checkpoint()  # the budget ends with its block


def test_a_cancelled_budget_stops_at_the_next_checkpoint() -> None:
    budget = AnswerBudget(60)
    with budget.applied():
        checkpoint()
        budget.cancel()
        with pytest.raises(ClientGone):
            checkpoint()


def test_shared_work_is_not_counted_even_nested() -> None:
    with AnswerBudget(0.15).applied():
        # nested: knowledge() loads the table inside shared work, counted once, not twice
        with shared_work(), shared_work():
            time.sleep(0.2)
        checkpoint()  # 0.2 s of shared work did not spend the 0.15 s budget
        time.sleep(0.2)
        with pytest.raises(OverBudget):
            checkpoint()


def test_a_worker_thread_started_from_the_context_sees_the_budget() -> None:
    import contextvars

    seen: list[BaseException] = []

    def work() -> None:
        try:
            checkpoint()
        except ClientGone as exc:
            seen.append(exc)

    budget = AnswerBudget(60)
    with budget.applied():
        budget.cancel()
        context = contextvars.copy_context()  # as the API's thread pool does
    thread = threading.Thread(target=context.run, args=(work,))
    thread.start()
    thread.join()
    assert len(seen) == 1
