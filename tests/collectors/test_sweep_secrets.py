"""The sweep prunes only what it made, and no secret reaches a cell (issue 46)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stack_advisor.collectors.sweep.env import (
    UV_MARKER,
    CellEnv,
    EnvCache,
    allowed_environment,
    cell_process_env,
)

SECRETS = {
    "ADVISOR_TOKEN": "tok-planted",
    "NEO4J_PASSWORD": "pw-planted",
    "AWS_SECRET_ACCESS_KEY": "aws-planted",
    "CUDA_API_TOKEN": "cuda-planted",  # an allowed prefix, a secret's name: still refused
    "MY_PRIVATE_THING": "other-planted",  # not on the allow-list
}


def test_prune_leaves_a_uv_folder_the_sweep_did_not_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ADVISOR_SWEEP_UV_CACHE", raising=False)
    (tmp_path / "uv" / "mystuff").mkdir(parents=True)
    (tmp_path / "uv" / "mystuff" / "precious.bin").write_bytes(b"\0" * 2**20)
    (tmp_path / "uv" / "notes.txt").write_text("mine\n")
    cache = EnvCache(tmp_path, max_gb=0.5 / 1024)  # 0.5 MiB: everything is over
    cache.own_uv_cache()  # not empty, not ours: left unmarked
    assert not (tmp_path / "uv" / UV_MARKER).exists()
    (cache.envs / "k").mkdir(parents=True)
    (cache.envs / "k.lock").write_text("numpy==2.1.3\n")
    assert cache.prune() == ["k"]
    assert (tmp_path / "uv" / "mystuff" / "precious.bin").exists()
    assert (tmp_path / "uv" / "notes.txt").read_text() == "mine\n"


def test_the_sweeps_own_uv_cache_is_marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADVISOR_SWEEP_UV_CACHE", raising=False)
    cache = EnvCache(tmp_path / "fresh")
    cache.own_uv_cache()
    assert (tmp_path / "fresh" / "uv" / UV_MARKER).is_file()


def test_no_secret_reaches_a_cell_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    cache = EnvCache(tmp_path)
    env = CellEnv(key="k", path=Path(sys.prefix), python=Path(sys.executable), requirements=[])
    seen = subprocess.run(
        [sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"],
        env=cell_process_env(env, cache),
        capture_output=True,
        text=True,
        check=True,
    )
    inside = json.loads(seen.stdout)
    assert not [v for v in SECRETS.values() if v in seen.stdout]
    assert inside["CUDA_VISIBLE_DEVICES"] == "0" and inside["PYTHONNOUSERSITE"] == "1"


def test_uv_gets_its_index_credentials_but_not_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("UV_INDEX_PRIVATE_PASSWORD", "index-pw")
    uv = allowed_environment(("UV_", "PIP_"))
    assert uv["UV_INDEX_PRIVATE_PASSWORD"] == "index-pw"
    assert not set(SECRETS) & set(uv)
    assert "UV_INDEX_PRIVATE_PASSWORD" not in allowed_environment()
    assert os.environ["ADVISOR_TOKEN"] == "tok-planted"  # the sweep's own stays as it was
