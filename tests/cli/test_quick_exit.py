"""`advisor recommend` and `advisor predict` end with ``os._exit`` once their answer is out
(stack_advisor.cli.main.quick_exit: no interpreter teardown, ~0.1 s of a warm answer): what a user
or a script sees - stdout, stderr, the exit status - is what the ordinary exit gave, for an answer,
a refusal and a usage error, run as a user runs them (a process of its own)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot
from tests.support.cli import CLI_ENV

REPO = Path(__file__).resolve().parents[2]
# the same command with the quick exit turned off: Python's own exit
ORDINARY = (
    "import sys, stack_advisor.cli.main as cli; cli.QUICK_EXIT = frozenset(); "
    "sys.argv = ['advisor', *sys.argv[1:]]; cli.main()"
)
TIMINGS = re.compile(r'("elapsed_ms": )[0-9.e+-]+|\d+( ms\b)')  # timings read as 0


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = f"embedded:{tmp_path_factory.mktemp('quick-exit-kb') / 'kb'}"
    rows = [o for o in load_snapshot().observations if o.benchmark.name == "resnet50"]
    with open_store(uri) as store:
        store.ensure_schema()
        store.ingest(IngestBatch(observations=rows))
    return uri


def _run(how: list[str], args: list[str], cache: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLI_ENV}
    env.update(PYTHONPATH=str(REPO), XDG_CACHE_HOME=str(cache))
    done = subprocess.run(
        [sys.executable, *how, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out, err = (TIMINGS.sub(r"\g<1>0\g<2>", text) for text in (done.stdout, done.stderr))
    return done.returncode, out, err


@pytest.mark.slow
def test_the_quick_exit_shows_what_the_ordinary_exit_shows(kb: str, tmp_path: Path) -> None:
    queries = tmp_path / "queries.json"
    queries.write_text(
        json.dumps(
            [
                {
                    "benchmark": "resnet50",
                    "scenario": "Offline",
                    "metric": "samples_per_second",
                    "accelerator": "NVIDIA A100-SXM4-80GB",
                    "accelerator_count": 8,
                }
            ]
        )
    )
    cases = {
        "answer": (["recommend", "--benchmark", "resnet50", "--json", "--store", kb], 0),
        "refusal": (["recommend", "--benchmark", "resnet5O", "--store", kb], 1),
        "usage": (["recommend", "--no-such-flag"], 2),
        "predict": (["predict", "--query", str(queries), "--store", kb], 0),
    }
    quick_answer = (0, "", "")
    for args, _ in cases.values():  # the first answer reads the store and calibrates (says so)
        _run(["-c", ORDINARY], args, tmp_path / "cache")
    for name, (args, status) in cases.items():
        quick = _run(["-m", "stack_advisor.cli.main"], args, tmp_path / "cache")
        ordinary = _run(["-c", ORDINARY], args, tmp_path / "cache")
        assert quick == ordinary, f"{name}: the quick exit changed what the user sees"
        assert quick[0] == status, f"{name}: exit {quick[0]}: {quick[2][-500:]}"
        quick_answer = quick if name == "answer" else quick_answer
    answer = json.loads(quick_answer[1])
    assert answer["recommendations"], "the answer was flushed whole before the process ended"
