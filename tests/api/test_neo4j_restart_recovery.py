"""Recovery under steady traffic after a Neo4j kill -9 and restart (issue 46), through the public
path: a real ``advisor serve --store bolt://...`` over a real Neo4j 5.26 with a small knowledge
base, 10 reads a second from a token holder over the recommend page, the leaderboard, the
observations list and the recommend API (``tests/support/restart_recovery.py``, the same code
``bench/neo4j_restart_recovery.py`` prints figures from).

The goal: the first 200 within 5 s of the database answering ``RETURN 1`` again, and >= 95% 200s
after it. After a restart a cold Neo4j holds every real query while it plans it (on the 2-core
development machine under other sessions' load: 4-14 s after ``RETURN 1`` answered, for a read
asked directly on a fresh connection), and no API can answer from the store before the store
does: where the database itself answered that direct read later than 5 s, the bound is that
moment plus the breaker's hold and 1 s."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.store.registry import open_store
from tests.support.restart_recovery import measure, seed_small_kb
from tests.support.servers import ServedAPI

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

GOAL_S = 5.0
HOLD_S = 1.0  # ADVISOR_STORE_FAILURE_HOLD_S, the default


def test_reads_recover_within_5_s_after_a_neo4j_kill_9_and_restart(
    tmp_path: Path, local_neo4j: Any
) -> None:
    store = open_store(local_neo4j.uri)
    try:
        seed_small_kb(store)
    finally:
        store.close()
    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}
    api = ServedAPI(
        local_neo4j.uri,
        tokens,
        log=tmp_path / "serve.log",
        ADVISOR_READ_AUTH="open",
        ADVISOR_STORE_FAILURE_HOLD_S=str(HOLD_S),
    ).start(timeout=180)
    try:
        recovery = measure(local_neo4j, api.url, token=tokens["read"], after_s=12.0)
    finally:
        api.stop()
    figures = "\n".join(recovery.lines())
    print(figures)
    assert [r for r in recovery.reads if r.sent < recovery.killed and r.status == 200], figures
    assert [r for r in recovery.reads if recovery.killed < r.sent and r.status == 503], figures
    database_s = recovery.database_read - recovery.database_back
    bound = max(GOAL_S, database_s + HOLD_S + 1.0)
    first = recovery.first_200_s
    assert first is not None and first <= bound, (bound, figures)
    assert len(recovery.after_first_200()) >= 100, figures  # 10 s or more of traffic judged
    assert recovery.share_200_after >= 0.95, figures
