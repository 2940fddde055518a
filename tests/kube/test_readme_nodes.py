"""The README's `advisor nodes sync`, as written (the cluster from $KUBECONFIG, the store from
$ADVISOR_STORE), against the real kube-apiserver, then the README's `recommend --cluster` on the
inventory it recorded; the other README commands run in
tests/cli/test_readme.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.guard import run_guarded
from cli.main import app
from tests.kube.control_plane import ControlPlane
from tests.readme_commands import readme_commands

pytestmark = pytest.mark.kube


def test_readme_nodes_sync(control_plane: ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    [command] = [c for c in readme_commands() if c.startswith("advisor nodes sync")]
    monkeypatch.delenv("ADVISOR_API", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    monkeypatch.setenv("ADVISOR_STORE", f"embedded:{tmp_path / 'kb'}")
    code = run_guarded(app, command.split()[1:])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "Traceback" not in out + err and "synced" in err
    cluster_commands = [c for c in readme_commands() if c.startswith("advisor recommend") and "--cluster" in c]
    assert cluster_commands
    for cluster_command in cluster_commands:  # the inventory just recorded, ranked as the README says
        code = run_guarded(app, cluster_command.split()[1:])
        out, err = capsys.readouterr()
        assert code == 0, f"{cluster_command}\n{out}\n{err}"
        assert "Traceback" not in out + err
