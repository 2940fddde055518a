"""Allreduce bandwidth: nccl-tests formulas, launcher environments, and real gloo runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from stack_advisor.collectors.runners import RunContext, get_runner
from stack_advisor.collectors.runners.allreduce import (
    _free_port,
    algorithm_bandwidth,
    bus_bandwidth,
    distributed_env,
    params_for,
)
from stack_advisor.schema.errors import InvalidInput
from tests.support.extras import needs_torch


def test_bus_bandwidth_matches_nccl_tests() -> None:
    assert bus_bandwidth(10.0, 2) == pytest.approx(10.0)  # 2(n-1)/n = 1
    assert bus_bandwidth(10.0, 4) == pytest.approx(15.0)
    assert bus_bandwidth(10.0, 8) == pytest.approx(17.5)
    assert bus_bandwidth(10.0, 1) == 0.0
    assert algorithm_bandwidth(2**30, 0.5) == 2**31
    with pytest.raises(ValueError):
        algorithm_bandwidth(1, 0.0)


def test_launcher_environments() -> None:
    torchrun = distributed_env(
        {
            "WORLD_SIZE": "8",
            "RANK": "3",
            "LOCAL_RANK": "1",
            "MASTER_ADDR": "h",
            "MASTER_PORT": "29500",
        }
    )
    assert torchrun is not None and (
        torchrun.world_size,
        torchrun.rank,
        torchrun.local_rank,
        torchrun.launcher,
    ) == (8, 3, 1, "torchrun")
    mpi = distributed_env(
        {
            "OMPI_COMM_WORLD_SIZE": "4",
            "OMPI_COMM_WORLD_RANK": "2",
            "OMPI_COMM_WORLD_LOCAL_RANK": "0",
        }
    )
    assert mpi is not None and (mpi.world_size, mpi.rank, mpi.launcher) == (4, 2, "mpi")
    pmi = distributed_env({"PMI_SIZE": "2", "PMI_RANK": "1"})
    assert pmi is not None and pmi.launcher == "pmi"
    assert distributed_env({}) is None and distributed_env({"WORLD_SIZE": "1", "RANK": "0"}) is None
    with pytest.raises(InvalidInput, match="RANK=5"):
        distributed_env({"WORLD_SIZE": "2", "RANK": "5"})
    with pytest.raises(InvalidInput, match="integers"):
        distributed_env({"WORLD_SIZE": "two", "RANK": "0"})


def test_options() -> None:
    assert params_for(RunContext(profile="quick")).sizes() == [
        1024,
        4096,
        16384,
        65536,
        262144,
        1048576,
    ]
    with pytest.raises(InvalidInput, match="min_bytes=4096 exceeds"):
        params_for(RunContext(options={"min_bytes": 4096, "max_bytes": 1024}))
    with pytest.raises(InvalidInput, match="processes=1"):
        params_for(RunContext(options={"processes": 1}))


@pytest.mark.slow  # ~10 s: two spawned ranks, each importing torch
@needs_torch
def test_local_spawn_two_ranks_gloo(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("WORLD_SIZE", "RANK", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
        monkeypatch.delenv(key, raising=False)
    result = get_runner("allreduce").run(
        RunContext(profile="quick", device="cpu", options={"processes": 2, "max_bytes": 65536})
    )
    assert result.failures == []
    busbw = [m for m in result.measurements if m.metric == "busbw_gbps"]
    algbw = {
        m.benchmark.benchmark_id: m.value for m in result.measurements if m.metric == "algbw_gbps"
    }
    assert [m.benchmark.parameters["size_bytes"] for m in busbw] == [1024, 4096, 16384, 65536]
    for m in busbw:
        assert m.value > 0 and m.unit == "GB/s"
        assert (
            m.benchmark.parameters["backend"] == "gloo"
            and m.benchmark.parameters["world_size"] == 2
        )
        assert m.value == pytest.approx(algbw[m.benchmark.benchmark_id])  # n=2: busbw = algbw


_RANK_SCRIPT = textwrap.dedent(
    """
    import json
    from stack_advisor.collectors.runners import RunContext, get_runner
    context = RunContext(profile="quick", device="cpu", options={"max_bytes": 4096})
    r = get_runner("allreduce").run(context)
    world = sorted({m.benchmark.parameters["world_size"] for m in r.measurements})
    failures = [f.message for f in r.failures]
    print(json.dumps({"n": len(r.measurements), "failures": failures, "world": world}))
    """
)


@needs_torch
def test_launched_by_torchrun_env_only_rank0_reports() -> None:
    port = _free_port()
    procs = []
    for rank in range(2):
        env = dict(
            os.environ,
            WORLD_SIZE="2",
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=port,
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", _RANK_SCRIPT], env=env, stdout=subprocess.PIPE, text=True
            )
        )
    outputs = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
    assert outputs[0]["failures"] == [] and outputs[0]["n"] == 2 * 3 and outputs[0]["world"] == [2]
    assert outputs[1] == {"n": 0, "failures": [], "world": []}
