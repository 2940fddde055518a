"""`advisor sweep` cells that measure an environment already on the node (a vendor container's
interpreter, a conda prefix, a virtualenv) as it is: nothing installed, the lock read from what is
there, and what cannot be used recorded as an install failure naming the environment and why.

The real sweep uses this project's own interpreter (numpy, the PI suite's mem_triad, quick
profile) and a bare virtual environment made with the standard library's ``venv``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import yaml

from stack_advisor.collectors.sweep.matrix import parse_matrix
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.store.registry import open_store
from tests.support.cli import advisor, isolate_cli
from tests.support.sweep import MATRIX


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path, "ADVISOR_SWEEP_CACHE")
    monkeypatch.setenv("COLUMNS", "120")


def test_an_installed_environment_installs_nothing() -> None:
    with pytest.raises(
        InvalidInput, match=r"cudnn, packages: a cell with `environment` measures what is installed"
    ):
        parse_matrix(
            {
                **MATRIX,
                "cells": [
                    {
                        "framework": "torch",
                        "environment": "/opt/torch/.venv",
                        "cudnn": "9.5.1.17",
                        "packages": ["scipy"],
                    }
                ],
            }
        )
    with pytest.raises(InvalidInput, match=r"version: required .* unless `environment`"):
        parse_matrix({**MATRIX, "cells": [{"framework": "torch"}]})
    matrix = parse_matrix(
        {
            **MATRIX,
            "benchmarks": [{"runner": "loadgen"}],
            "cells": [
                {"framework": "torch", "environment": "/opt/torch/.venv"},
                {"framework": "torch", "version": "2.11", "environment": "/opt/b"},
            ],
        }
    )
    first, second = matrix.cells
    assert (first.id, first.requirements(), first.packages) == ("torch-installed", [], [])
    assert second.wish() == {
        "framework": "torch",
        "framework_version": "2.11",
        "environment": "/opt/b",
    }
    # an environment may hold several frameworks: a cell runs only its own
    pi, cnn = parse_matrix(
        {**MATRIX, "benchmarks": [{"runner": "pi"}, {"runner": "cnn"}]}
    ).benchmarks
    assert (pi.cell_options("cupy"), cnn.cell_options("torch")) == (
        {"backends": "cupy"},
        {"framework": "torch"},
    )
    assert cnn.unsupported_by("jax") == "cnn runs on torch or tensorflow, not jax"
    assert pi.unsupported_by("jax") is None and cnn.unsupported_by("tensorflow") is None


@pytest.mark.slow
def test_real_sweep_of_installed_environments(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bare = tmp_path / "bare-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    cells = [
        {"framework": "numpy", "environment": sys.executable, "name": "here"},
        {"framework": "numpy", "environment": str(bare), "name": "bare"},
        {
            "framework": "numpy",
            "environment": sys.executable,
            "version": "0.1",
            "name": "wrong-version",
        },
        {
            "framework": "numpy",
            "environment": str(tmp_path / "nowhere" / "python"),
            "name": "missing",
        },
    ]
    matrix = tmp_path / "matrix.yaml"
    benchmarks = [
        *MATRIX["benchmarks"],
        {"runner": "loadgen", "profile": "quick"},
    ]  # loadgen: torch only
    matrix.write_text(
        yaml.safe_dump(
            {
                **MATRIX,
                "name": "installed-test",
                "repeats": 1,
                "cells": cells,
                "benchmarks": benchmarks,
            }
        )
    )
    store = tmp_path / "kb"
    code, out, err = advisor(
        capsys,
        "sweep",
        str(matrix),
        "--store",
        str(store),
        "--cache-dir",
        str(tmp_path / "c"),
        "--out",
        str(tmp_path / "docs.json"),
        "--json",
    )
    assert code == 0, err
    outcome = {c["cell"]: c for c in json.loads(out)["cells"]}
    assert outcome["here"]["status"] == "measured", outcome["here"]
    assert outcome["here"]["framework"] == f"numpy {numpy.__version__}"  # the fingerprint inside it
    assert "environment checked (installed)" in err
    assert outcome["bare"]["status"] == "failed (install)"
    assert (
        "has no numpy installed" in outcome["bare"]["reason"]
        and str(bare) in outcome["bare"]["reason"]
    )
    reason = outcome["wrong-version"]["reason"]
    assert f"has numpy {numpy.__version__}, the cell asks for 0.1" in reason
    assert "no Python interpreter at" in outcome["missing"]["reason"]
    assert outcome["missing"]["status"] == "failed (install)"

    with open_store(str(store)) as kb:
        observations = list(kb.iter_observations())
        failures = kb.list_entities("failures")
    assert observations and {o.stack.framework_version for o in observations} == {numpy.__version__}
    details = observations[0].provenance.details
    assert f"numpy=={numpy.__version__}" in details["lock"] and "pydantic==" in details["lock"]
    assert json.loads(details["sweep_requested"])["environment"] == sys.executable
    assert sorted(f.get("stage") for f in failures) == ["install"] * 6 + ["unsupported"]
    assert (
        "environment checked (installed)" in err
        and "loadgen: unsupported (loadgen runs on torch" in err
    )
    # --out: every document the store took, as `advisor collect --out` writes them (to commit)
    documents = json.loads((tmp_path / "docs.json").read_text())
    assert sum(len(d.get("measurements") or []) for d in documents) == len(observations)
    assert sum(len(d.get("failures") or []) for d in documents) == len(failures) == 7
    # nothing of the sweep's own was made for, or pruned from, an installed environment
    assert not (tmp_path / "c" / "envs").exists() or not any((tmp_path / "c" / "envs").iterdir())
