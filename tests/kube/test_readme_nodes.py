"""The README's `advisor nodes sync`, as written (the cluster from $KUBECONFIG, the store from
$ADVISOR_STORE), against the real kube-apiserver, then the README's `recommend --cluster` on the
inventory it recorded; the other README commands run in
tests/cli/test_readme.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stack_advisor.cli.guard import run_guarded
from stack_advisor.cli.main import app
from tests.support.control_plane import ControlPlane
from tests.support.gfd_nodes import ALL_NODES
from tests.support.readme_commands import readme_commands
from tests.support.starter_kb import copy_starter_kb

pytestmark = pytest.mark.kube


def test_readme_nodes_sync(
    control_plane: ControlPlane,
    api_client: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    starter_kb: Path,
) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(api_client)
    for node in ALL_NODES:  # GFD/NFD-labelled nodes for the sync to find (others may be there too)
        try:
            core.create_node({k: v for k, v in node.items() if k != "status"})
        except ApiException as exc:
            if exc.status != 409:
                raise
        if node.get("status"):
            core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})
    [command] = [c for c in readme_commands() if c.startswith("advisor nodes sync")]
    monkeypatch.delenv("ADVISOR_API", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    uri = copy_starter_kb(starter_kb, tmp_path / "kb")  # the starter KB, as the default store is
    monkeypatch.setenv("ADVISOR_STORE", uri)
    code = run_guarded(app, command.split()[1:])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "Traceback" not in out + err and "synced" in err
    cluster_commands = [
        c for c in readme_commands() if c.startswith("advisor recommend") and "--cluster" in c
    ]
    assert cluster_commands
    for (
        cluster_command
    ) in cluster_commands:  # the inventory just recorded, ranked as the README says
        code = run_guarded(app, cluster_command.split()[1:])
        out, err = capsys.readouterr()
        assert code == 0, f"{cluster_command}\n{out}\n{err}"
        assert "Traceback" not in out + err
