"""Issue 32's reproducers outside the API, each failing on main 7c8cd85: the sweep prunes only
the environments it made, ``plan render --out`` keeps files it did not write, GFD >= 0.15's
``cuda.driver-version.revision`` label is read, and CLI exports neutralise formulas and HTML."""

from __future__ import annotations

import copy
import csv
import io
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stack_advisor.cli.main import app
from stack_advisor.cli.render import OutputFormat, render_text
from stack_advisor.collectors.sweep.env import EnvCache
from stack_advisor.schema.inventory import parse_node
from tests.support.gfd_nodes import A100_BARE_METAL

SAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "plans" / "sample-plan.yaml"


def test_prune_never_touches_folders_the_sweep_did_not_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--cache-dir ~/miniconda3``: its envs/ holds someone's environments, older than ours."""
    monkeypatch.setenv("ADVISOR_SWEEP_UV_CACHE", str(tmp_path / "uv"))
    cache = EnvCache(tmp_path, max_gb=0.5 / 1024)  # 0.5 MiB: everything is over
    for age, key in enumerate(["mine-new", "mine-old", "base", "torch-env"]):
        (cache.envs / key).mkdir(parents=True)
        (cache.envs / key / "lib.so").write_bytes(b"\0" * 2**20)
        os.utime(cache.envs / key, (1_000_000 - age * 100,) * 2)
    (cache.envs / "mine-new.lock").write_text("numpy==2.1.3\n")
    (cache.envs / "mine-old" / ".stack-advisor-env").write_text(
        "made by advisor sweep\n"
    )  # half-made, ours
    removed = cache.prune()
    assert sorted(removed) == ["mine-new", "mine-old"]
    assert (cache.envs / "base" / "lib.so").exists() and (
        cache.envs / "torch-env" / "lib.so"
    ).exists()
    assert sorted(cache.sizes()) == []


def test_plan_render_out_keeps_files_it_did_not_write(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "out"
    out.mkdir()
    mine = "# hand-written\nresources: [my-own.yaml]\n"
    (out / "kustomization.yaml").write_text(mine)
    refused = runner.invoke(app, ["plan", "render", str(SAMPLE), "--out", str(out)])
    said = refused.output + str(refused.exception or "")
    assert refused.exit_code != 0 and "kustomization.yaml" in said and "--force" in said, said
    assert (out / "kustomization.yaml").read_text() == mine
    assert sorted(p.name for p in out.iterdir()) == ["kustomization.yaml"]  # nothing written
    forced = runner.invoke(app, ["plan", "render", str(SAMPLE), "--out", str(out), "--force"])
    assert forced.exit_code == 0, forced.output
    again = runner.invoke(app, ["plan", "render", str(SAMPLE), "--out", str(out)])  # its own files
    assert again.exit_code == 0, again.output


def test_gfd_revision_label_keeps_the_third_part_of_the_driver() -> None:
    node = copy.deepcopy(A100_BARE_METAL)
    node["metadata"]["labels"].pop("nvidia.com/cuda.driver-version.full")
    assert parse_node(node).driver == "550.54.15"
    old = copy.deepcopy(node)
    labels = old["metadata"]["labels"]
    for part, name in (("major", "major"), ("minor", "minor"), ("revision", "rev")):
        labels[f"nvidia.com/cuda.driver.{name}"] = labels.pop(
            f"nvidia.com/cuda.driver-version.{part}"
        )
    assert parse_node(old).driver == "550.54.15"


ROWS = [
    {
        "name": '=HYPERLINK("http://evil.example","x")',
        "note": "+cmd|' /C calc'!A0",
        "who": "@SUM(A1)",
        "value": -1.5,
        "html": '<img src=x onerror="alert(1)">[a](javascript:x)',
    }
]


def test_cli_csv_neutralises_formulas_and_markdown_escapes_html() -> None:
    cols = list(ROWS[0])
    rows = list(csv.reader(io.StringIO(render_text(ROWS, OutputFormat.csv, columns=cols))))
    assert [c[:1] for c in rows[1][:3]] == ["'", "'", "'"]
    assert rows[1][3] == "-1.5"  # numbers stay numbers
    md = render_text(ROWS, OutputFormat.markdown, columns=cols)
    assert "<img" not in md and "&lt;img" in md
    assert "[a](javascript" not in md and "\\[a\\](javascript" in md  # no link
