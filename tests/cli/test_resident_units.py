"""The resident answerer's parts, in this process (no answerer started): what is forwarded, the
key, the client's fallbacks and exit status, a hung-up client's request interrupted, room made
for a new answerer, another user's folder and processes refused, what ended answerers left
pruned. The answers themselves: tests/cli/test_resident.py."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from stack_advisor.cli import resident
from stack_advisor.store.registry import open_store
from tests.support.resident import RECOMMEND


def test_only_the_answering_verbs_are_forwarded() -> None:
    on = {"ADVISOR_RESIDENT": "1"}
    assert resident.forwarded_verb(["recommend", "--benchmark", "x"], on) == "recommend"
    assert resident.forwarded_verb(["compare", "stacks"], on) == "compare"
    assert resident.forwarded_verb(["predict", "--query", "-"], on) is None  # stdin
    assert resident.forwarded_verb(["compare", "sweep", "x"], on) is None
    assert resident.forwarded_verb(["db", "stats"], on) is None
    assert resident.forwarded_verb(["--api", "http://x", "recommend"], on) is None
    assert resident.forwarded_verb(["recommend"], {**on, "ADVISOR_API": "http://x"}) is None
    assert resident.forwarded_verb(["recommend"], {"ADVISOR_RESIDENT": "0"}) is None
    assert resident.forwarded_verb(["recommend", "--store", "https://kb.example"], on) is None
    assert resident.forwarded_verb(["recommend"], {**on, "ADVISOR_STORE": "http://kb:8000"}) is None
    assert resident.forwarded_verb(["recommend", "--store", "embedded:/kb"], on) == "recommend"


def test_arguments_only_the_client_can_read_are_not_forwarded(tmp_path: Path) -> None:
    on = {"ADVISOR_RESIDENT": "1"}
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "queries.json").write_text("[]")
    for argv in (
        ["predict", "--query=-"],
        ["predict", "--query", "/dev/stdin"],
        ["predict", "--query", "/dev/fd/63"],  # <(cat queries.json)
        ["predict", "--query=/proc/self/fd/0"],
        ["recommend", "--nodes=-"],
        ["predict", "--query", str(fifo)],
        ["predict", f"--query={fifo}"],
    ):
        assert resident.forwarded_verb(argv, on) is None, argv
    assert resident.forwarded_verb(["predict", "--query", str(tmp_path / "queries.json")], on)


def test_any_client_error_falls_back_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def vanished(root: Path | None = None) -> str:
        raise FileNotFoundError(2, "No such file or directory", "gone.py")

    monkeypatch.setenv("ADVISOR_RESIDENT", "1")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setattr(resident, "code_fingerprint", vanished)
    assert resident.forward(RECOMMEND) is None
    assert not list(tmp_path.rglob("answerer-*"))


def test_ctrl_c_ends_the_client_with_130_and_no_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(argv: list[str]) -> int | None:
        raise KeyboardInterrupt

    monkeypatch.setattr(resident, "forward", interrupted)
    with pytest.raises(SystemExit) as ended:
        resident.main()
    assert ended.value.code == 130  # as the in-process CLI (typer) ends on Ctrl-C
    assert capsys.readouterr() == ("", "")


def test_a_running_request_is_interrupted_when_its_client_hangs_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stack_advisor.cli import resident_server as server

    uri = f"embedded:{tmp_path / 'kb'}"
    closed: list[bool] = []

    def slow(body: dict[str, object]) -> tuple[list[tuple[int, bytes]], int]:
        store = open_store(uri)
        try:
            with server.Window.opened():
                for _ in range(400):
                    time.sleep(0.05)
        finally:
            store.close()
            closed.append(True)
        return [], 0

    monkeypatch.setattr(server, "run_request", slow)
    handlers = {signal.SIGUSR1: server._hung_up, signal.SIGALRM: server._expired}
    previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    ours, theirs = socket.socketpair()
    hang_up = threading.Timer(0.3, theirs.close)
    hang_up.start()
    start = time.monotonic()
    try:
        with pytest.raises(server.ClientGone):
            server.timed(ours, {}, 60.0)
    finally:
        hang_up.cancel()
        ours.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    assert time.monotonic() - start < 5, "the request ran on after its client hung up"
    assert closed == [True]


def test_one_answerer_for_every_store_and_answerer_settings() -> None:
    base = {"HOME": "/home/x", "ADVISOR_TABLE_CACHE": "/t"}
    key = resident.answerer_key(base, "f")
    assert "store" not in key
    own = {
        "ADVISOR_RESIDENT_IDLE_S": "4",
        "ADVISOR_RESIDENT_TIMEOUT_S": "9",
        "ADVISOR_RESIDENT": "1",
    }
    assert resident.answerer_key({**base, **own}, "f") == key
    assert resident.answerer_key({**base, "ADVISOR_TABLE_CACHE": "/u"}, "f") != key


def fake_answerer(path: Path, idle_s: float, stopped: list[float]) -> socket.socket:
    """A socket answering ``status`` and ``stop`` as an answerer idle for ``idle_s`` does."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                with conn:
                    _, n = resident.FRAME.unpack(resident.read_exact(conn, resident.FRAME.size))
                    op = json.loads(resident.read_exact(conn, n))["op"]
                    if op == "stop":  # counted before the reply: the caller reads it next
                        stopped.append(idle_s)
                    status = {"pid": 0, "idle_s": idle_s}
                    reply = json.dumps({"code": 0, "status": status}).encode()
                    resident.send_frame(conn, resident.EXIT, reply)
                if op == "stop":
                    return

    threading.Thread(target=serve, daemon=True).start()
    return server


def test_the_least_recently_used_answerer_makes_room(tmp_path: Path) -> None:
    stopped: list[float] = []
    servers = [
        fake_answerer(tmp_path / f"answerer-{n}.sock", idle, stopped)
        for n, idle in enumerate([5.0, 50.0])
    ]
    try:
        resident.make_room(tmp_path, limit=3)
        assert stopped == []  # two run: room for a third
        servers.append(fake_answerer(tmp_path / "answerer-2.sock", 1.0, stopped))
        resident.make_room(tmp_path, limit=3)
        assert stopped == [50.0]
    finally:
        for server in servers:
            server.close()


def test_another_users_folder_or_process_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stack_advisor.cli import resident_server as server

    folder = tmp_path / "stack-advisor"
    folder.mkdir()
    folder.chmod(0o755)
    me = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: me + 1)  # the folder and sockets: another user's
    assert resident.resident_folder({"XDG_RUNTIME_DIR": str(tmp_path)}) is None
    assert folder.stat().st_mode & 0o777 == 0o755  # never changed
    listening = fake_answerer(tmp_path / "answerer-x.sock", 0.0, [])
    try:
        with pytest.raises(PermissionError, match=f"user {me}"):
            resident.call(tmp_path / "answerer-x.sock", {"op": "status"}, 5)
    finally:
        listening.close()
    ours, theirs = socket.socketpair()
    with ours, theirs:
        resident.send_frame(theirs, 0, b'{"op": "stop"}')
        answerer = server.Answerer(tmp_path, "x", {"code": "c"})
        answerer.handle(ours)
        ours.close()
        try:
            got = theirs.recv(100)
        except ConnectionResetError:  # closed with the request unread
            got = b""
        assert got == b""  # dropped unanswered
        assert not answerer.stopping


def test_prune_removes_what_ended_answerers_left(tmp_path: Path) -> None:
    from stack_advisor.cli import resident_files

    stale = resident.paths(tmp_path, "stale")
    for path in stale.values():
        path.write_text("")
    old = time.time() - 2 * resident_files.LOG_KEEP_S
    os.utime(stale["log"], (old, old))
    live = resident.paths(tmp_path, "live")
    held = resident_files.take_lock(live["lock"])
    assert held is not None
    live["log"].write_text("")
    os.utime(live["log"], (old, old))
    try:
        resident_files.prune(tmp_path, tmp_path)
        assert not any(p.exists() for p in stale.values())
        assert live["lock"].exists() and live["log"].exists()
    finally:
        os.close(held)


def test_a_client_that_stops_reading_does_not_hold_the_answerer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stack_advisor.cli import resident_server as server

    big = [(resident.OUT, b"x" * (64 << 20))]  # far over what the socket buffers hold
    monkeypatch.setattr(server, "SEND_TIMEOUT_S", 0.5)
    monkeypatch.setattr(resident, "code_fingerprint", lambda root=None: "c")
    monkeypatch.setattr(server, "timed", lambda conn, body, limit_s: (big, 0))
    answerer = server.Answerer(tmp_path, "x", {"code": "c"})
    ours, theirs = socket.socketpair()
    with ours, theirs:  # theirs sends its request, then never reads (a suspended client)
        resident.send_frame(theirs, 0, json.dumps({"op": "run", "key": {"code": "c"}}).encode())
        start = time.monotonic()
        answerer.handle(ours)
        assert time.monotonic() - start < 10
    assert answerer.served == 1 and not answerer.stopping


def test_a_file_removed_while_fingerprinted_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(name)
    kept = resident.code_fingerprint(tmp_path)
    real_stat = os.stat

    def vanishing(path: str, *args: object, **kwargs: object) -> os.stat_result:
        if str(path).endswith("b.py"):
            raise FileNotFoundError(2, "No such file or directory", path)
        return real_stat(path)

    monkeypatch.setattr(os, "stat", vanishing)
    changed = resident.code_fingerprint(tmp_path)
    monkeypatch.undo()
    (tmp_path / "b.py").unlink()
    assert changed != kept
    assert changed == resident.code_fingerprint(tmp_path)


def test_an_interrupted_client_waits_for_the_answerer_to_let_go() -> None:
    ours, theirs = socket.socketpair()
    heard: list[bytes] = []

    def answerer() -> None:  # hears the hang-up, unwinds its request, then closes its end
        heard.append(theirs.recv(10))
        time.sleep(0.3)
        theirs.close()

    unwinding = threading.Thread(target=answerer)
    unwinding.start()
    start = time.monotonic()
    with ours:
        resident.hang_up(ours)
    waited = time.monotonic() - start
    unwinding.join()
    assert heard == [b""]
    assert 0.25 <= waited < resident.HANG_UP_WAIT_S


def test_an_interrupt_the_command_swallowed_is_still_no_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from stack_advisor.cli import resident_server as server

    def swallowing(body: dict[str, object]) -> tuple[list[tuple[int, bytes]], int]:
        with server.Window.opened():
            try:  # as Python 3.11 wraps an error raised in __set_name__ into a RuntimeError
                time.sleep(5)
            except server.RequestTimeout as exc:
                raise RuntimeError("Error calling __set_name__") from exc
        return [], 0

    def guarded(body: dict[str, object]) -> tuple[list[tuple[int, bytes]], int]:
        try:
            return swallowing(body)
        except RuntimeError:  # the CLI's guard reports it: an answer that is not the command's
            return [(resident.ERR, b"error: unexpected RuntimeError\n")], 1

    monkeypatch.setattr(server, "run_request", guarded)
    previous = signal.signal(signal.SIGALRM, server._expired)
    ours, theirs = socket.socketpair()
    try:
        with pytest.raises(server.RequestTimeout):
            server.timed(ours, {}, 0.2)
    finally:
        signal.signal(signal.SIGALRM, previous)
        ours.close()
        theirs.close()
