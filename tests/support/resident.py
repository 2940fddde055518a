"""The resident answerer's test harness (tests/cli/test_resident.py): the CLI of a package copy
run in subprocesses with its own runtime folder, store and environment; waiting for answerers and
stopping every one it started."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from stack_advisor.cli import resident

ENTRY = "import sys; from stack_advisor.cli.resident import main; main()"


SERVER = "stack_advisor.cli.resident_server"


# the key the client computes (run with the package copy, in the client's folder and environment)
KEY_OF = (
    "import json, os, sys; from stack_advisor.cli import resident; "
    "print(json.dumps(resident.answerer_key(os.environ, resident.code_fingerprint())))"
)


RECOMMEND = ["recommend", "--benchmark", "resnet50", "--scenario", "Offline"]


@dataclass
class Resident:
    """The CLI of a package copy, its runtime folder, store and environment."""

    code: Path
    cwd: Path
    folder: Path
    store: str
    env: dict[str, str]
    pids: set[int] = field(default_factory=set)

    def run(
        self, *args: str, on: bool = True, extra: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        env = {**self.env, **(extra or {}), "ADVISOR_RESIDENT": "1" if on else "0"}
        argv = [*args, "--store", self.store] if args[0] != "resident" else list(args)
        return subprocess.run(
            [sys.executable, "-c", ENTRY, *argv],
            cwd=self.cwd,
            env=env,
            capture_output=True,
            timeout=300,
            check=False,
        )

    @property
    def logs(self) -> Path:
        """The answerers' logs: the cache folder's."""
        return resident.cache_folder(self.env)

    def socket_of(self, extra: dict[str, str]) -> Path:
        """The answerer's socket for ``RECOMMEND`` on this store with ``extra`` settings."""
        done = subprocess.run(
            [sys.executable, "-c", KEY_OF, *RECOMMEND, "--store", self.store],
            cwd=self.cwd,
            env={**self.env, **extra},
            capture_output=True,
            check=True,
        )
        return resident.paths(self.folder, resident.key_digest(json.loads(done.stdout)))["socket"]

    def statuses(self) -> list[dict[str, object]]:
        found = []
        for sock in resident.answerer_sockets(self.folder):
            try:
                found.append(resident.ask(sock, "status"))
            except OSError:
                continue
        self.pids.update(int(str(s["pid"])) for s in found)
        return found

    def served(self) -> int:
        return sum(int(str(s["requests"])) for s in self.statuses())

    def wait_listening_on(self, sock: Path, limit_s: float = 90.0) -> dict[str, object]:
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            try:
                status = resident.ask(sock, "status")
            except OSError:
                time.sleep(0.2)
                continue
            self.pids.add(int(str(status["pid"])))
            return status
        logs = "".join(p.read_text() for p in self.logs.glob("*.log"))
        raise AssertionError(f"no answerer listening on {sock} after {limit_s} s:\n{logs}")

    def wait_listening(self, limit_s: float = 90.0) -> dict[str, object]:
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            found = self.statuses()
            if found:
                return found[0]
            time.sleep(0.2)
        logs = "".join(p.read_text() for p in self.logs.glob("*.log"))
        raise AssertionError(f"no answerer listening in {self.folder} after {limit_s} s:\n{logs}")


def alive(pid: int) -> bool:
    """Running (an ended answerer whose reaper has not collected it yet does not count)."""
    return resident.running(pid)


def gone(pid: int, limit_s: float) -> bool:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


def masked(output: bytes) -> bytes:
    """Output less the answer's own timing ("283 candidates, generation 5, 12 ms", and
    ``elapsed_ms`` in JSON): the one thing two runs of one answer differ by."""
    output = re.sub(rb'"elapsed_ms": [0-9.e-]+', b'"elapsed_ms": N', output)
    return re.sub(rb"\d+ ms\b", b"N ms", output)


def stop_all(found: Resident, limit_s: float = 90.0) -> None:
    """Stop every answerer of the folder, those still starting too (they hold their key's lock
    before they listen), and check that none outlives it."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        found.statuses()
        found.run("resident", "stop")
        if not any(resident.is_locked(lock) for lock in found.folder.glob("*.lock")):
            break
        time.sleep(0.5)
    left = [pid for pid in found.pids if not gone(pid, 15)]
    for pid in left:
        os.kill(pid, 9)
    assert not left, f"answerers {left} outlived `advisor resident stop`"
