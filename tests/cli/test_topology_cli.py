"""`advisor nodes topology`: a recorded tree, a stored host and this machine, as JSON and text."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from stack_advisor.cli.main import app
from stack_advisor.collectors.fingerprint.topology import topology_of_tree
from stack_advisor.schema.models import Host, IngestBatch
from stack_advisor.store.registry import open_store
from tests.support.samples import make_obs as _obs

DATA = Path(__file__).resolve().parents[1] / "data" / "topology"


def _run(*args: str):  # -> click Result
    return CliRunner().invoke(app, ["nodes", "topology", *args])


def test_recorded_tree_as_json_and_text() -> None:
    result = _run("--root", str(DATA / "dgx-h100-8gpu"), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["source"].startswith("recorded tree") and len(data["numa_nodes"]) == 2
    gpus = [d for d in data["devices"] if d["kind"] == "gpu"]
    assert [g["numa_node"] for g in gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    text = _run("--root", str(DATA / "dgx-h100-8gpu"), "--format", "plain")
    assert text.exit_code == 0 and "GPU0,GPU1,GPU2,GPU3" in text.stdout and "mlx5_0" in text.stdout


def test_stored_host_and_unknown_host(tmp_path: Path) -> None:
    uri = f"embedded:{tmp_path / 'kb'}"
    obs = _obs(1, host="dgx-a")
    obs.host = Host(name="dgx-a", topology=topology_of_tree(DATA / "dgx-a100-2gpu-slurm"))
    with open_store(uri) as kb:
        kb.ensure_schema()
        kb.ingest(IngestBatch(observations=[obs]))
    result = _run("--host", "dgx-a", "--store", uri, "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["numa_nodes"]) == 8
    missing = _run("--host", "dgx-b", "--store", uri)
    assert missing.exit_code == 1 and "no topology stored for 'dgx-b'" in str(missing.exception)


def test_this_machine_and_bad_combinations() -> None:
    here = _run("--json")
    assert here.exit_code == 0, here.output
    assert json.loads(here.stdout)["source"] == "this machine"
    both = _run("--host", "a", "--root", str(DATA / "dgx-h100-8gpu"))
    assert both.exit_code != 0 and "give one" in str(both.exception)
