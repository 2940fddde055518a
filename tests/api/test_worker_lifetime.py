"""The answer workers end with the server and leave no snapshot behind (issue 46): a real
``advisor serve`` killed with SIGKILL takes its worker processes and multiprocessing's
``resource_tracker`` with it within seconds, and its snapshot folder goes with them; a folder a
dead server left all the same is swept when the next server makes its own."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import psutil
import pytest

from stack_advisor.api.answer_pool import SNAPSHOT_PREFIX, sweep_stale_snapshots
from stack_advisor.store.registry import open_store
from tests.support.restart_recovery import seed_small_kb
from tests.support.servers import ServedAPI

GONE_WITHIN_S = 5.0


def _alive(pids: list[int]) -> list[str]:
    """The processes of ``pids`` still running (a zombie waiting for its reaper has ended)."""
    running = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE:
                running.append(f"{pid} {' '.join(process.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            pass
    return running


def _wait_for(what: str, check: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} not within {timeout:g} s")


@pytest.mark.slow
def test_kill_9_of_advisor_serve_ends_its_workers_and_removes_its_snapshot(
    tmp_path: Path,
) -> None:
    temp = tmp_path / "tmp"  # the server's temp folder: only its own files land there
    temp.mkdir()
    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}
    store = open_store(f"embedded:{tmp_path / 'kb'}")
    seed_small_kb(store)  # the warm-up writes a snapshot of what it knows
    store.close()
    api = ServedAPI(
        f"embedded:{tmp_path / 'kb'}",
        tokens,
        log=tmp_path / "serve.log",
        TMPDIR=str(temp),
        ADVISOR_READ_AUTH="open",
        ADVISOR_ANSWER_WORKERS="2",
    ).start(timeout=120)
    assert api.proc is not None
    server = psutil.Process(api.proc.pid)
    try:
        # the warm-up starts the workers and writes the snapshot they load
        _wait_for(
            "an answer worker, the resource_tracker and a snapshot",
            lambda: len(server.children()) >= 2 and list(temp.glob(f"{SNAPSHOT_PREFIX}*/*")),
            90,
        )
        children = [p.pid for p in server.children(recursive=True)]
        # whole command lines: a long interpreter path would cut the module name off
        names = " / ".join(" ".join(p.cmdline()) for p in server.children(recursive=True))
        assert "resource_tracker" in names, names[:400]
        assert f"{SNAPSHOT_PREFIX}{api.proc.pid}-" in str(list(temp.iterdir())), (
            "the snapshot folder is named after its server"
        )
        api.proc.kill()  # SIGKILL: the server's own clean-up never runs
        api.proc.wait()
        started = time.monotonic()
        _wait_for(f"the end of {children}", lambda: not _alive(children), GONE_WITHIN_S)
        print(f"the workers and resource_tracker ended {time.monotonic() - started:.2f} s after")
        left = list(temp.iterdir())
        assert not left, f"left in the temp folder: {left}"
    finally:
        api.stop()


def test_a_snapshot_folder_left_by_a_dead_server_is_swept(tmp_path: Path) -> None:
    dead = psutil.Popen(["true"])
    dead.wait()  # a pid that ran and is gone (reused within the test would be a rare miss)
    stale = tmp_path / f"{SNAPSHOT_PREFIX}{dead.pid}-abc123"
    live = tmp_path / f"{SNAPSHOT_PREFIX}{os.getpid()}-def456"
    foreign = tmp_path / "advisor-answers-notapid"
    unrelated = tmp_path / f"other-{dead.pid}-x"
    for folder in (stale, live, foreign, unrelated):
        folder.mkdir()
        (folder / "knowledge-1-2.pickle").write_bytes(b"x")
    assert sweep_stale_snapshots(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (live, foreign, unrelated)
    )
