"""The API as a real process (uvicorn, this checkout's code) on a free loopback port, for the
fault tests and benches: started, killed with SIGKILL, started again on the same store."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.servers import free_port, stop_process

REPO = Path(__file__).resolve().parents[2]


class Api:
    """The API under uvicorn in a subprocess (this checkout's code), killable with SIGKILL."""

    def __init__(self, store: str, tokens: dict[str, str], log: Path, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "ADVISOR_STORE": store,
            "ADVISOR_ENVIRONMENT": "production",
            "ADVISOR_TOKENS": ";".join(f"{t}:{s}" for s, t in tokens.items()),
            **env,
        }
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 90.0) -> Api:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "--factory",
                    "stack_advisor.server:app_from_environment",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--log-level",
                    "warning",
                ],
                cwd=REPO,
                env=self.env,
                stdout=out,
                stderr=out,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"API not ready in {timeout}s: {self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()  # SIGKILL
        self.proc.wait()

    def stop(self) -> None:
        stop_process(self.proc)
