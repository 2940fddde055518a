"""The resident answerer's figures of ``bench/cli_latency.py`` (issue 43: warm ``advisor
recommend`` at most 3x ``advisor --version``, wall, in the same run).

Three commands through the ``advisor`` entry point (``stack_advisor.cli.resident``), in turn:
``--version``; warm ``recommend`` answered by the resident answerer; and the same ``recommend``
answered in-process (``ADVISOR_RESIDENT=0``, the path before the answerer). Both ratios are
printed. The client's CPU (what ``getrusage`` of the child counts) leaves out the answerer's,
so the answerer's CPU per request is read from ``/proc`` and printed beside it; every forwarded
call is checked to have been answered by the answerer (its request count). The answerer lives
in the run's own runtime folder and is stopped at the end. Run through ``cli_latency.py``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

ENTRY = "stack_advisor.cli.resident"


def _answerer(folder: Path, limit_s: float = 120.0) -> dict[str, Any]:
    """The status of the one answerer listening in ``folder`` (waited for)."""
    from stack_advisor.cli import resident

    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        for sock in resident.answerer_sockets(folder):
            try:
                return resident.ask(sock, "status")
            except OSError:
                pass
        time.sleep(0.2)
    logs = "".join(p.read_text() for p in resident.cache_folder(os.environ).glob("*.log"))
    raise SystemExit(f"no resident answerer listening in {folder} after {limit_s} s:\n{logs}")


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def resident_figures(uri: str, env: dict[str, str], code: Path, repeat: int) -> dict[str, Any]:
    """``--version``, warm ``recommend`` through the answerer and in-process, in turn."""
    from cli_latency import RECOMMEND, run_cli

    folder = Path(env["XDG_RUNTIME_DIR"]) / "stack-advisor"
    args = [*RECOMMEND, "--store", uri]
    on = {**env, "ADVISOR_RESIDENT": "1"}
    off = {**env, "ADVISOR_RESIDENT": "0"}
    run_cli(args, off, code, module=ENTRY)  # the persisted table and calibration are there
    run_cli(args, on, code, module=ENTRY)  # answered here; starts the answerer
    try:
        return _timed(args, env, code, folder, repeat)
    finally:
        stopped = run_cli(["resident", "stop"], env, code, module=ENTRY)
        print(f"  answerer stopped (exit {stopped[2]})", flush=True)


def _timed(
    args: list[str], env: dict[str, str], code: Path, folder: Path, repeat: int
) -> dict[str, Any]:
    from cli_latency import interleaved, run_cli, show

    on = {**env, "ADVISOR_RESIDENT": "1"}
    off = {**env, "ADVISOR_RESIDENT": "0"}
    pid = int(_answerer(folder)["pid"])
    run_cli(args, on, code, module=ENTRY)  # the answerer's first request builds its snapshot
    cpu0, served0 = _cpu_s(pid), int(_answerer(folder)["requests"])
    fig = interleaved(
        {
            "version": (["--version"], env, code, ENTRY),
            "resident": (args, on, code, ENTRY),
            "in_process": (args, off, code, ENTRY),
        },
        repeat,
    )
    after = _answerer(folder)
    served, cpu = int(after["requests"]) - served0, _cpu_s(pid) - cpu0
    print(
        f"advisor entry point ({ENTRY}): the resident answerer (pid {pid}) answered {served} of "
        f"{repeat} forwarded calls; its CPU {cpu / max(served, 1):.3f} s per request (not in the "
        "client's cpu below)",
        flush=True,
    )
    show("--version, in turn with them", fig["version"])
    show("warm recommend, the resident answerer", fig["resident"])
    show("warm recommend, in-process (RESIDENT=0)", fig["in_process"])
    version = fig["version"]["wall"]["median"]
    for name, label in (("resident", "the answerer"), ("in_process", "in-process")):
        wall = fig[name]["wall"]["median"]
        print(
            f"  warm recommend ({label}) / --version: {wall / version:.1f}x wall "
            f"({wall:.2f} s / {version:.2f} s); goal <= 3x",
            flush=True,
        )
    if served != repeat:
        print(f"  WARNING: {repeat - served} forwarded call(s) answered in-process", flush=True)
    return fig
