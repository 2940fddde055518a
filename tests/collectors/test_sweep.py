"""`advisor sweep`: the matrix's validation, and a real CPU sweep end to end — two numpy builds
in their own uv environments running the PI suite (numpy backend, quick profile), a version that
does not exist and a stack that installs but does not import — with results and failures in the
store, the comparison computed, and a re-run that skips what is done.

uv downloads from PyPI once into ~/.cache/stack-advisor/sweep/uv (ADVISOR_SWEEP_UV_CACHE); later
runs create environments from that cache in seconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from stack_advisor.collectors.sweep.env import EnvCache, sweep_cache_dir
from stack_advisor.collectors.sweep.matrix import parse_matrix
from stack_advisor.collectors.sweep.run import cuda_incompatibility
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import SoftwareStack
from stack_advisor.store.registry import open_store
from tests.support.cli import advisor, isolate_cli
from tests.support.sweep import MATRIX


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_cli(monkeypatch, tmp_path, "ADVISOR_SWEEP_CACHE")
    monkeypatch.setenv("COLUMNS", "120")
    # downloads are kept between test runs; environments and ledgers are this test's own
    monkeypatch.setenv("ADVISOR_SWEEP_UV_CACHE", str(Path.home() / ".cache/stack-advisor/sweep/uv"))


def test_matrix_errors_name_the_field_and_value() -> None:
    with pytest.raises(InvalidInput, match=r"cells\.0\.framework.*'pytorch'.*valid: torch"):
        parse_matrix({**MATRIX, "cells": [{"framework": "pytorch", "version": "2.5.1"}]})
    with pytest.raises(InvalidInput, match=r"baseline 'nope' is not a cell"):
        parse_matrix({**MATRIX, "baseline": "nope"})
    with pytest.raises(InvalidInput, match=r"repeated: numpy-2.1.3"):
        parse_matrix({**MATRIX, "cells": [MATRIX["cells"][1], MATRIX["cells"][1]]})
    with pytest.raises(InvalidInput, match=r"runner.*'pii'"):
        parse_matrix({**MATRIX, "benchmarks": [{"runner": "pii"}]})
    with pytest.raises(InvalidInput, match=r"packages.*'scipy 1.13'"):
        parse_matrix(
            {
                **MATRIX,
                "cells": [{"framework": "numpy", "version": "2.1.3", "packages": ["scipy 1.13"]}],
            }
        )


def test_cell_requirements_pin_the_cuda_wheels() -> None:
    matrix = parse_matrix(
        {
            **MATRIX,
            "cells": [
                {
                    "framework": "torch",
                    "version": "2.5.1",
                    "cuda": "12.4.127",
                    "cudnn": "9.1.0.70",
                    "nccl": "2.21.5",
                },
                {
                    "framework": "cupy",
                    "version": "13.3.0",
                    "package": "cupy-cuda11x",
                    "cuda": "11.8.89",
                },
            ],
        }
    )
    torch, cupy = matrix.cells
    assert torch.requirements() == [
        "torch==2.5.1",
        "nvidia-cuda-runtime-cu12==12.4.127",
        "nvidia-cudnn-cu12==9.1.0.70",
        "nvidia-nccl-cu12==2.21.5",
    ]
    assert cupy.requirements() == ["cupy-cuda11x==13.3.0", "nvidia-cuda-runtime-cu11==11.8.89"]
    assert (torch.id, torch.import_names, matrix.baseline_cell) == (
        "torch-2.5.1",
        ["torch"],
        "torch-2.5.1",
    )


def test_runners_bring_what_they_need_into_each_cell() -> None:
    matrix = parse_matrix(
        {
            **MATRIX,
            "benchmarks": [{"runner": "tf-cnn"}, {"runner": "loadgen"}],
            "cells": [
                {"framework": "tensorflow", "version": "2.20.0"},
                {
                    "framework": "tensorflow",
                    "version": "2.15.1",
                    "packages": ["mlcommons-loadgen==5.0"],
                },
            ],
        }
    )
    new, old = matrix.cells
    assert new.requirements() == [
        "tensorflow==2.20.0",
        "mlcommons-loadgen>=4.0",
        "tf-keras~=2.20.0",
    ]
    assert old.requirements() == [
        "tensorflow==2.15.1",
        "mlcommons-loadgen==5.0",
    ]  # Keras 2 built in; pin kept
    again = parse_matrix(matrix.model_dump(mode="json"))  # as a Kubernetes Job receives it
    assert [c.requirements() for c in again.cells] == [new.requirements(), old.requirements()]


def test_cuda_runtime_newer_than_the_driver_is_a_compatibility_failure() -> None:
    stack = SoftwareStack(
        framework="torch",
        framework_version="2.8.0",
        cuda="12.8",
        driver="535.104.05",
        extra={"cuda_driver_api": "12.2"},
    )
    reason = cuda_incompatibility(stack, measured_on_cuda=False, has_gpu=True)
    assert reason and "12.8" in reason and "12.2" in reason and "535.104.05" in reason
    assert (
        cuda_incompatibility(stack, measured_on_cuda=True, has_gpu=True) is None
    )  # minor compat: it ran
    assert cuda_incompatibility(stack, measured_on_cuda=False, has_gpu=False) is None  # a CPU node
    older = stack.model_copy(update={"cuda": "12.1"})
    assert cuda_incompatibility(older, measured_on_cuda=False, has_gpu=True) is None


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ADVISOR_SWEEP_CACHE", str(tmp_path / "c"))
    assert sweep_cache_dir() == tmp_path / "c"
    with pytest.raises(InvalidInput, match="max-cache-gb"):
        EnvCache(tmp_path, max_gb=0)


@pytest.mark.slow
def test_real_cpu_sweep_end_to_end(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(yaml.safe_dump(MATRIX))
    store, cache = tmp_path / "kb", tmp_path / "sweep-cache"
    common = ["--store", str(store), "--cache-dir", str(cache)]

    code, out, err = advisor(capsys, "sweep", str(matrix), *common, "--json")
    assert code == 0, err
    cells = {c["cell"]: c for c in json.loads(out)["cells"]}
    assert (
        "[1/4] numpy-1.26.4: environment" in err and "[4/4] pandas-abi" in err
    )  # progress per cell
    # repeats interleave: every cell's first run before any second one (load drift reaches both)
    order = [
        err.index(f"[{i}/4] numpy-{v}: repeat {r}/2")
        for r in (1, 2)
        for i, v in ((1, "1.26.4"), (2, "2.1.3"))
    ]
    assert order == sorted(order), err
    for name, version in (("numpy-1.26.4", "1.26.4"), ("numpy-2.1.3", "2.1.3")):
        assert cells[name]["status"] == "measured", cells[name]
        assert cells[name]["framework"] == f"numpy {version}"  # the fingerprint inside the cell
        assert cells[name]["measurements"] >= 2  # mem_triad x 2 repeats
    assert cells["numpy-missing"]["status"] == "failed (install)"
    assert "numpy==0.0.1" in cells["numpy-missing"]["reason"]
    assert cells["pandas-abi"]["status"] == "failed (import)"
    assert "import pandas" in cells["pandas-abi"]["reason"]

    with open_store(str(store)) as kb:
        failures = kb.list_entities("failures")
        observations = list(kb.iter_observations())
    stages = {(f.get("stage"), f.get("error_class")) for f in failures}
    assert ("install", "InstallError") in stages and ("import", "ImportError") in stages
    versions = {o.stack.framework_version for o in observations if o.stack.framework == "numpy"}
    assert versions == {"1.26.4", "2.1.3"}
    lock = observations[0].provenance.details["lock"]
    assert "numpy==" in lock and "pydantic==" in lock  # what was installed, kept with the results

    code, out, err = advisor(
        capsys, "compare", "sweep", "numpy-cpu-test", "--store", str(store), "--json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["baseline"] == "numpy-1.26.4"
    assert report["ratios"], report
    for ratio in report["ratios"]:
        assert ratio["cell"] == "numpy-2.1.3" and ratio["interval_from"] == "repeats"
        assert 0 < ratio["low"] <= ratio["ratio"] <= ratio["high"]
        assert ratio["repeats"] == ratio["baseline_repeats"] == 2
        assert ratio["flagged"] == (ratio["verdict"] in ("faster", "slower"))
        assert ratio["basis"] == "measured on this node"

    code, out, err = advisor(
        capsys,
        "recommend",
        "--family",
        "pi",
        "--benchmark",
        "mem_triad",
        "--store",
        str(store),
        "--format",
        "plain",
        "--all",  # the default view folds the two builds into one numpy row
    )
    assert code == 0, err
    assert out.count("observed (measured on this node)") == 2, out  # both numpy builds, this host
    code, out, err = advisor(
        capsys,
        "recommend",
        "--family",
        "pi",
        "--benchmark",
        "mem_triad",
        "--store",
        str(store),
        "--json",
        "--all",
    )
    assert code == 0, err
    assert [r["basis_note"] for r in json.loads(out)["recommendations"]] == [
        "measured on this node"
    ] * 2

    png = tmp_path / "sweep.png"
    code, out, err = advisor(
        capsys, "plot", "sweep", "numpy-cpu-test", "--out", str(png), "--store", str(store)
    )
    assert code == 0, err
    assert png.read_bytes()[:4] == b"\x89PNG"

    code, out, err = advisor(capsys, "sweep", str(matrix), *common, "--json")  # resumable
    assert code == 0, err
    assert {c["status"] for c in json.loads(out)["cells"]} == {"skipped"}


def test_bad_benchmark_option_stops_the_sweep(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = {
        **MATRIX,
        "cells": MATRIX["cells"][:1],
        "benchmarks": [{"runner": "pi", "options": {"backends": "numpy", "pis": ["stream"]}}],
    }
    matrix = tmp_path / "bad.yaml"
    matrix.write_text(yaml.safe_dump(bad))
    code, _out, err = advisor(
        capsys,
        "sweep",
        str(matrix),
        "--store",
        str(tmp_path / "kb"),
        "--cache-dir",
        str(tmp_path / "c"),
    )
    assert code != 0 and "pis" in err and "stream" in err


@pytest.mark.slow
def test_sweep_through_the_api(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same sweep against a remote store: documents posted to a real `advisor serve`."""
    import secrets

    from tests.support.servers import ServedAPI, free_port

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the spool
    one = {**MATRIX, "repeats": 1, "cells": MATRIX["cells"][:2]}
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(yaml.safe_dump(one))
    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}
    with ServedAPI(
        f"embedded:{tmp_path / 'kb'}", tokens, port=free_port(), log=tmp_path / "serve.log"
    ) as api:
        args = [
            "sweep",
            str(matrix),
            "--api",
            api.url,
            "--token",
            tokens["write"],
            "--cache-dir",
            str(tmp_path / "c"),
        ]
        code, out, err = advisor(capsys, *args, "--json")
        assert code == 0, err
        assert [c["status"] for c in json.loads(out)["cells"]] == ["measured", "measured"]
        monkeypatch.setenv("ADVISOR_TOKEN", tokens["read"])
        code, out, err = advisor(
            capsys, "compare", "sweep", "numpy-cpu-test", "--store", api.url, "--json"
        )
        assert code == 0, err
        ratios = json.loads(out)["ratios"]
        assert ratios and all(r["interval_from"] == "samples within one run" for r in ratios)
        code, out, err = advisor(capsys, *args, "--json")  # the API has the runs: skipped
        assert code == 0, err
        assert {c["status"] for c in json.loads(out)["cells"]} == {"skipped"}


def test_prune_keeps_the_cache_under_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Least recently used environments go first; the one in use never does."""
    import os

    monkeypatch.setenv("ADVISOR_SWEEP_UV_CACHE", str(tmp_path / "uv"))
    cache = EnvCache(tmp_path, max_gb=2.5 / 1024)  # 2.5 MiB
    for age, key in enumerate(["newest", "middle", "oldest"]):
        (cache.envs / key).mkdir(parents=True)
        (cache.envs / key / "lib.so").write_bytes(b"\0" * 2**20)  # 1 MiB each
        lock = cache.envs / f"{key}.lock"
        lock.write_text("numpy==2.1.3\n")
        os.utime(lock, (1_000_000 - age * 100, 1_000_000 - age * 100))
    assert cache.prune(keep={"oldest"}) == ["middle"]  # 3 MiB > 2.5: the LRU one not in use
    assert sorted(cache.sizes()) == ["newest", "oldest"]
    assert not (cache.envs / "middle.lock").exists()


def test_one_sweep_per_cache(tmp_path: Path) -> None:
    from stack_advisor.collectors.sweep.run import _exclusive

    with (
        _exclusive(tmp_path),
        pytest.raises(InvalidInput, match="another sweep is using the cache"),
        _exclusive(tmp_path),
    ):
        pass
