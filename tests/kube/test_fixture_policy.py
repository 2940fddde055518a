"""Without the kube-apiserver build the Kubernetes tier skips, except under CI=true."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.kube import REPO

TARGET = "tests/kube/test_cluster.py::test_nodes_list_parses_gfd_labels"


@pytest.mark.parametrize(
    ("ci", "expected"), [("", "1 skipped"), ("true", "CI=true but the Kubernetes tier cannot run")]
)
def test_missing_build_skips_outside_ci_and_fails_under_ci(
    ci: str, expected: str, tmp_path: Path
) -> None:
    env = {**os.environ, "STACK_ADVISOR_CACHE": str(tmp_path / "empty-cache"), "CI": ci}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", TARGET],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert expected in proc.stdout, proc.stdout[-2000:]
    assert (proc.returncode == 0) == (ci == "")
    assert "deploy/kube-local/build.sh" in proc.stdout  # the reason says how to get the build
