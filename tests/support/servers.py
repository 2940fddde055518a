"""A real ``advisor serve`` process on a free loopback port, for client-mode tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ADVISOR = str(Path(sys.executable).with_name("advisor"))


def stop_process(proc: subprocess.Popen[bytes] | None, timeout: float = 20) -> None:
    """SIGTERM a child process still running, then SIGKILL it after ``timeout`` seconds."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServedAPI:
    """``advisor serve`` in a subprocess; ``stop()`` and ``start()`` again on the same port and
    store (a real restart: the embedded store is closed and reopened)."""

    def __init__(
        self,
        store_uri: str,
        tokens: dict[str, str],
        port: int | None = None,
        log: Path | None = None,
        **env: str,
    ) -> None:
        self.store_uri = store_uri
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "ADVISOR_TOKENS": ";".join(f"{t}:{s}" for s, t in tokens.items()),
            "ADVISOR_ENVIRONMENT": "production",
            **env,
        }
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> ServedAPI:
        # the child keeps its own copy of the log's descriptor; ours is closed once it started
        with (
            open(self.log, "ab") if self.log else contextlib.nullcontext(subprocess.DEVNULL) as out
        ):
            self.proc = subprocess.Popen(
                [
                    ADVISOR,
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--store",
                    self.store_uri,
                    "--log-level",
                    "warning",
                ],
                env=self.env,
                stdout=out,
                stderr=out,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"advisor serve exited with {self.proc.returncode}; see {self.log}"
                )
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"advisor serve did not become ready in {timeout}s; see {self.log}")

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None

    def __enter__(self) -> ServedAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
