"""The resident answerer (stack_advisor.cli.resident, resident_server): through it, `recommend`,
`predict` and `compare` print and exit exactly as the in-process CLI does; a store write between
two calls is seen by the next; a change to the code makes the client answer itself and the old
answerer exit; ADVISOR_RESIDENT=0 never starts one; `advisor resident stop` leaves no process.

The CLI runs in subprocesses on a copy of the package (the shared checkout's files change while
the tests run, and each change is a new code fingerprint), with its own runtime folder, store and
caches. Every answerer started here is stopped by the module fixture's finalizer.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import shutil
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stack_advisor.cli import resident
from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot
from tests.support.resident import (
    ENTRY,
    KEY_OF,
    RECOMMEND,
    SERVER,
    Resident,
    alive,
    gone,
    masked,
    stop_all,
)
from tests.support.starter_kb import make_starter_kb

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CASES = {
    "recommend": RECOMMEND,
    "recommend --json": [*RECOMMEND, "--json"],
    "predict (a relative --query)": ["predict", "--query", "queries.json", "--json"],
    "compare": [
        "compare",
        "rank-stacks",
        "--benchmark",
        "llama2-70b-99",
        "--scenario",
        "Offline",
        "--metric",
        "tokens_per_second",
        "--accelerator",
        "H100-SXM-80GB",
    ],
    "bad benchmark": ["recommend", "--benchmark", "resnet5O", "--scenario", "Offline"],
    "bad benchmark --json": ["recommend", "--benchmark", "resnet5O", "--json"],
}


@pytest.fixture(scope="module")
def answering(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Resident]:
    root = tmp_path_factory.mktemp("resident")
    code = root / "code"
    shutil.copytree(
        ROOT / "stack_advisor", code / "stack_advisor", ignore=shutil.ignore_patterns("__pycache__")
    )
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(code)], check=True)
    cwd = root / "cwd"
    cwd.mkdir()
    shutil.copy(ROOT / "docs" / "examples" / "queries.json", cwd / "queries.json")
    run_dir = root / "run"
    run_dir.mkdir(mode=0o700)
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "XDG_RUNTIME_DIR": str(run_dir),
        "XDG_CACHE_HOME": str(root / "cache"),
        "ADVISOR_TABLE_CACHE": str(root / "tables"),
        "ADVISOR_CALIBRATION_CACHE": str(root / "calibration"),
        "ADVISOR_CATALOG_CACHE": str(root / "catalogue"),
        "ADVISOR_RESIDENT_IDLE_S": "120",  # a backstop: the finalizer stops them
    }
    for name in ("ADVISOR_API", "ADVISOR_STORE", "ADVISOR_DEBUG", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    store = f"embedded:{make_starter_kb(root)}"
    found = Resident(code, cwd, run_dir / "stack-advisor", store, env)
    try:
        assert found.run(*RECOMMEND, on=False).returncode == 0  # the persisted caches primed
        assert found.run(*RECOMMEND).returncode == 0  # answered here; starts the answerer
        found.wait_listening()
        yield found
    finally:
        stop_all(found)


@pytest.mark.parametrize("case", list(CASES))
def test_answers_as_the_in_process_cli(answering: Resident, case: str) -> None:
    args = CASES[case]
    before = answering.served()
    through = answering.run(*args)
    assert answering.served() == before + 1, "the answerer did not answer it"
    alone = answering.run(*args, on=False)
    assert through.returncode == alone.returncode
    assert masked(through.stdout) == masked(alone.stdout)
    assert masked(through.stderr) == masked(alone.stderr)
    if case.startswith("bad benchmark"):
        assert through.returncode == 1
        assert b"resnet5O" in through.stdout + through.stderr


def on_a_terminal(found: Resident, args: list[str], on: bool) -> tuple[int, bytes]:
    """``advisor ARGS`` on a 132x40 pseudo-terminal (stdin, stdout and stderr): its exit status
    and what the terminal showed, stdout and stderr as they interleaved."""
    env = {**found.env, "ADVISOR_RESIDENT": "1" if on else "0"}
    for name in ("COLUMNS", "LINES"):
        env.pop(name, None)
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 132, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-c", ENTRY, *args, "--store", found.store],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=found.cwd,
        env=env,
    )
    os.close(follower)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return proc.wait(timeout=300), bytes(shown)


@pytest.mark.parametrize("case", ["recommend", "bad benchmark"])
def test_on_a_terminal_as_the_in_process_cli(answering: Resident, case: str) -> None:
    before = answering.served()
    code, through = on_a_terminal(answering, CASES[case], on=True)
    assert answering.served() == before + 1, "the answerer did not answer it"
    alone_code, alone = on_a_terminal(answering, CASES[case], on=False)
    assert code == alone_code
    assert masked(through) == masked(alone)
    if case == "recommend":
        assert "─".encode() in through  # the terminal's table, not the piped plain columns


def test_a_write_between_two_calls_is_seen(answering: Resident) -> None:
    first = answering.run(*RECOMMEND, "--json")
    generation = json.loads(first.stdout)["generation"]
    obs = next(o for o in load_snapshot().observations if o.benchmark.name == "resnet50")
    with open_store(answering.store) as store:  # the answerer does not hold the store
        store.ingest(IngestBatch(observations=[obs.model_copy(update={"run_id": "resident-w"})]))
    before = answering.served()
    second = answering.run(*RECOMMEND, "--json")
    assert answering.served() == before + 1
    assert json.loads(second.stdout)["generation"] > generation
    alone = answering.run(*RECOMMEND, "--json", on=False)
    assert masked(second.stdout) == masked(alone.stdout)


def test_one_answerer_per_key_and_a_stale_socket_replaced(answering: Resident) -> None:
    env = {**answering.env, "ADVISOR_RESIDENT": "1", "ADVISOR_TEST_KEY": "one"}  # own key
    argv = [*RECOMMEND, "--store", answering.store]
    key = json.loads(
        subprocess.run(
            [sys.executable, "-c", KEY_OF, *argv],
            cwd=answering.cwd,
            env=env,
            capture_output=True,
            check=True,
        ).stdout
    )
    digest = resident.key_digest(key)
    where = resident.paths(answering.folder, digest)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(where["socket"]))  # a socket file nobody listens on
    stale.close()
    ended = subprocess.Popen(["true"])  # the call that started them, ended already
    ended.wait()
    answering.logs.mkdir(parents=True, exist_ok=True)
    log = (answering.logs / where["log"].name).open("ab")
    starters = [
        subprocess.Popen(
            [sys.executable, "-m", SERVER, str(answering.folder), digest, str(ended.pid)],
            env={**env, "ADVISOR_RESIDENT_KEY": json.dumps(key)},
            cwd="/",  # as the client starts it: the package copy comes from PYTHONPATH
            stdout=log,
            stderr=log,
        )
        for _ in range(2)
    ]
    log.close()
    try:
        status = answering.wait_listening_on(where["socket"])
        loser = next(p for p in starters if p.pid != status["pid"])
        assert loser.wait(timeout=30) == 0  # it found the key's lock held and gave way
        done = subprocess.run(
            [sys.executable, "-c", ENTRY, *argv], cwd=answering.cwd, env=env, capture_output=True
        )
        assert done.returncode == 0
        assert resident.ask(where["socket"], "status")["requests"] == 1
    finally:  # started here, so ended (and reaped) here
        with contextlib.suppress(OSError):
            resident.ask(where["socket"], "stop")
        for starter in starters:
            try:
                starter.wait(timeout=30)
            except subprocess.TimeoutExpired:
                starter.kill()
                starter.wait()


def test_an_idle_answerer_exits(answering: Resident) -> None:
    env = {"ADVISOR_RESIDENT_IDLE_S": "4", "ADVISOR_TEST_KEY": "idle"}  # a key of its own
    assert answering.run(*RECOMMEND, extra=env).returncode == 0  # starts it
    sock = answering.socket_of(env)
    pid = int(str(answering.wait_listening_on(sock)["pid"]))
    assert gone(pid, 30), "the answerer outlived its idle limit"
    assert not sock.exists()
    where = resident.paths(answering.folder, sock.stem.removeprefix("answerer-"), answering.logs)
    assert not where["lock"].exists() and not where["log"].exists()  # a clean end leaves none


def test_a_request_past_its_limit_is_answered_here_and_ends_the_answerer(
    answering: Resident,
) -> None:
    # the first answer builds the snapshot: longer (a key of its own)
    env = {"ADVISOR_RESIDENT_TIMEOUT_S": "0.1", "ADVISOR_TEST_KEY": "timeout"}
    assert answering.run(*RECOMMEND, extra=env).returncode == 0  # starts it
    sock = answering.socket_of(env)
    pid = int(str(answering.wait_listening_on(sock)["pid"]))
    through = answering.run(*RECOMMEND, extra=env)
    assert through.returncode == 0
    assert masked(through.stdout) == masked(answering.run(*RECOMMEND, on=False).stdout)
    assert gone(pid, 30), "the answerer outlived a request past its limit"


def test_sigterm_ends_it_and_removes_its_socket(answering: Resident) -> None:
    env = {"ADVISOR_TEST_KEY": "sigterm"}  # a key of its own
    assert answering.run(*RECOMMEND, extra=env).returncode == 0  # starts it
    sock = answering.socket_of(env)
    pid = int(str(answering.wait_listening_on(sock)["pid"]))
    os.kill(pid, signal.SIGTERM)
    assert gone(pid, 30)
    assert not sock.exists()


def test_stop_leaves_no_process(answering: Resident) -> None:
    pids = [int(str(s["pid"])) for s in answering.statuses()]
    assert pids
    stopped = answering.run("resident", "stop", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert [r["pid"] for r in json.loads(stopped.stdout)] == pids
    assert all(r["stopped"] for r in json.loads(stopped.stdout))
    assert not any(alive(pid) for pid in pids)
    assert not resident.answerer_sockets(answering.folder)
    answering.run(*RECOMMEND)  # the next call starts one again
    assert answering.wait_listening()["requests"] == 0


def test_a_code_change_falls_back_and_ends_the_old_answerer(answering: Resident) -> None:
    old = answering.wait_listening()
    touched = answering.code / "stack_advisor" / "cli" / "render.py"
    later = time.time() + 10
    os.utime(touched, (later, later))
    before = answering.served()
    through = answering.run(*RECOMMEND)
    assert through.returncode == 0
    assert answering.served() == before  # answered by the client itself
    assert gone(int(str(old["pid"])), 20), "the answerer of the old code still runs"
    assert masked(through.stdout) == masked(answering.run(*RECOMMEND, on=False).stdout)


def test_off_never_starts_one(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    env = {
        **os.environ,
        "ADVISOR_RESIDENT": "0",
        "XDG_RUNTIME_DIR": str(run_dir),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    store = f"embedded:{make_starter_kb(tmp_path)}"
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", ENTRY, *RECOMMEND, "--store", store],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    assert not list(run_dir.rglob("answerer-*")), list(run_dir.rglob("*"))


# the request the client sends for sys.argv[1:] (run with the package copy, as the client would)
REQUEST_OF = (
    "import json, os, sys; from stack_advisor.cli import resident as r; "
    "k = r.answerer_key(os.environ, r.code_fingerprint()); "
    "print(json.dumps(r.request_body(sys.argv[1:], r.key_digest(k), k)))"
)


CD_GONE = ["sh", "-c", 'cd "$0" && rmdir "$0" && exec "$@"']  # a cwd deleted under the CLI
CLOSED_STDOUT = ["sh", "-c", 'exec "$@" >&-', "sh"]


def entry(
    found: Resident, args: list[str], on: bool, **kwargs: object
) -> subprocess.CompletedProcess[bytes]:
    """``advisor ARGS --store STORE`` with ``kwargs`` for ``subprocess.run`` (stdin, stdout)."""
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", ENTRY, *args, "--store", found.store],
        cwd=found.cwd,
        env={**found.env, "ADVISOR_RESIDENT": "1" if on else "0"},
        capture_output="stdout" not in kwargs,
        timeout=300,
        check=False,
        **kwargs,
    )


def test_a_query_on_stdin_by_path_is_answered_as_in_process(answering: Resident) -> None:
    queries = (answering.cwd / "queries.json").read_bytes()
    args = ["predict", "--query", "/dev/stdin", "--json"]
    before = answering.served()
    through = entry(answering, args, on=True, input=queries)
    assert answering.served() == before  # the client answered it itself
    alone = entry(answering, args, on=False, input=queries)
    assert through.returncode == alone.returncode == 0, through.stderr
    assert masked(through.stdout) == masked(alone.stdout)


def test_from_a_deleted_folder_as_in_process(answering: Resident, tmp_path: Path) -> None:
    store = answering.store

    def run(on: bool) -> subprocess.CompletedProcess[bytes]:
        gone_dir = tmp_path / f"gone-{on}"
        gone_dir.mkdir()
        return subprocess.run(
            [*CD_GONE, str(gone_dir), sys.executable, "-c", ENTRY, *RECOMMEND, "--store", store],
            env={**answering.env, "ADVISOR_RESIDENT": "1" if on else "0"},
            capture_output=True,
            timeout=300,
            check=False,
        )

    through, alone = run(True), run(False)
    assert b"Traceback" not in through.stderr, through.stderr
    assert through.returncode == alone.returncode
    assert masked(through.stdout) == masked(alone.stdout)
    assert masked(through.stderr) == masked(alone.stderr)


@pytest.mark.parametrize("how", ["a full device", "a closed stdout"])
def test_an_unwritable_stdout_as_in_process(answering: Resident, how: str) -> None:
    store = answering.store

    def run(on: bool) -> subprocess.CompletedProcess[bytes]:
        if how == "a closed stdout":
            return subprocess.run(
                [*CLOSED_STDOUT, sys.executable, "-c", ENTRY, *RECOMMEND, "--store", store],
                cwd=answering.cwd,
                env={**answering.env, "ADVISOR_RESIDENT": "1" if on else "0"},
                stderr=subprocess.PIPE,
                timeout=300,
                check=False,
            )
        with open("/dev/full", "wb") as full:
            return entry(answering, RECOMMEND, on=on, stdout=full, stderr=subprocess.PIPE)

    through, alone = run(True), run(False)
    assert b"Traceback" not in through.stderr, through.stderr
    assert through.returncode == alone.returncode == 1
    assert masked(through.stderr) == masked(alone.stderr)
    if how == "a full device":
        assert b"no space left on device" in through.stderr


def test_a_client_that_hung_up_is_not_answered_and_holds_no_store(answering: Resident) -> None:
    body = json.loads(
        subprocess.run(
            [sys.executable, "-c", REQUEST_OF, *RECOMMEND, "--store", answering.store],
            cwd=answering.cwd,
            env={**answering.env, "ADVISOR_RESIDENT": "1"},
            capture_output=True,
            check=True,
        ).stdout
    )
    sock = resident.paths(answering.folder, body["digest"])["socket"]
    answering.wait_listening_on(sock)
    log = answering.logs / f"answerer-{body['digest']}.log"
    before, logged = answering.served(), log.read_text().count("hung up")
    resident.call(sock, body, 30).close()  # as a client killed while it waits
    end = time.monotonic() + 30
    while log.read_text().count("hung up") == logged and time.monotonic() < end:
        time.sleep(0.1)
    assert log.read_text().count("hung up") == logged + 1, log.read_text()[-2000:]
    assert answering.served() == before
    with open_store(answering.store) as store:  # not held by the answerer
        assert store.stats().counts["Observation"] > 0


def test_a_malformed_request_leaves_the_answerer_running(answering: Resident) -> None:
    status = answering.wait_listening()
    sock = Path(str(status["socket"]))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(str(sock))
        resident.send_frame(conn, 0, b"[1]")
        kind, length = resident.FRAME.unpack(resident.read_exact(conn, resident.FRAME.size))
        assert (kind, resident.read_exact(conn, length)) == (resident.REFUSE, b"not a request")
    assert resident.ask(sock, "status")["pid"] == status["pid"]


def test_another_store_is_answered_by_the_same_answerer(answering: Resident) -> None:
    sockets = resident.answerer_sockets(answering.folder)
    before = answering.served()
    path = answering.store.removeprefix("embedded:")
    through = subprocess.run(
        [sys.executable, "-c", ENTRY, *RECOMMEND, "--store", path],
        cwd=answering.cwd,
        env={**answering.env, "ADVISOR_RESIDENT": "1"},
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert through.returncode == 0, through.stderr
    assert answering.served() == before + 1
    assert resident.answerer_sockets(answering.folder) == sockets


def hang_ups(found: Resident) -> int:
    """How many requests the answerers dropped or interrupted, their clients gone."""
    return sum(log.read_text().count("hung up") for log in found.logs.glob("*.log"))


def test_ctrl_c_exits_130_and_leaves_the_store_free(answering: Resident, tmp_path: Path) -> None:
    """A request interrupted in the answerer: a store it has not answered before (its first
    answer builds the evidence: long enough to be interrupted), Ctrl-C after ``delay``."""
    env = {**answering.env, "ADVISOR_RESIDENT": "1"}
    kb = Path(answering.store.removeprefix("embedded:"))
    for attempt, delay in enumerate((0.5, 0.3, 0.15)):
        copy = tmp_path / f"kb-{attempt}"
        shutil.copy(kb, copy)
        client = subprocess.Popen(
            [sys.executable, "-c", ENTRY, *RECOMMEND, "--store", f"embedded:{copy}"],
            cwd=answering.cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        heard = hang_ups(answering)
        time.sleep(delay)
        client.send_signal(signal.SIGINT)
        err = client.communicate(timeout=60)[1]
        assert client.returncode in (0, 130), err
        if client.returncode == 0 or hang_ups(answering) == heard:
            continue  # answered before the interrupt, or interrupted before it asked: again
        assert err == b""  # as the in-process CLI
        with open_store(f"embedded:{copy}") as store:  # at once: the answerer let go of it
            assert store.stats().counts["Observation"] > 0
        return
    pytest.skip("every answer came before its interrupt")
