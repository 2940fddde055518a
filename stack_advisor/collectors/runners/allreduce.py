"""Distributed allreduce bandwidth with torch.distributed (gloo on CPU, NCCL on GPU).

Bandwidths follow nccl-tests (doc/PERFORMANCE.md): for a message of S bytes taking t seconds,
algorithm bandwidth algbw = S / t, and bus bandwidth busbw = algbw × 2(n−1)/n for allreduce, n
ranks — the figure comparable to the hardware's link speed whatever n is.

World size and rank come from the usual launchers' environment: torchrun and Kubeflow
PyTorchJob (WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), Open MPI / MPIJob
(OMPI_COMM_WORLD_SIZE/RANK/LOCAL_RANK) and PMI (PMI_SIZE, PMI_RANK). Not launched that way,
the runner starts ``processes`` local ranks itself (loopback, a free port). Only rank 0 reports.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import socket
import time
import traceback
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stack_advisor.collectors.runners import Progress, RunContext, RunnerResult, register_runner
from stack_advisor.schema.errors import InvalidInput, MissingEnvironment, Unsupported
from stack_advisor.schema.models import Benchmark, FailureIn, Measurement

log = logging.getLogger(__name__)

FAMILY = "allreduce"
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def bus_bandwidth(algbw: float, world_size: int) -> float:
    """nccl-tests' allreduce bus bandwidth: algbw × 2(n−1)/n."""
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    return algbw * 2 * (world_size - 1) / world_size


def algorithm_bandwidth(size_bytes: int, seconds: float) -> float:
    """Bytes per second over the allreduce's duration."""
    if seconds <= 0:
        raise ValueError(f"duration must be positive, got {seconds}")
    return size_bytes / seconds


@dataclass(frozen=True)
class DistEnv:
    world_size: int
    rank: int
    local_rank: int
    master_addr: str | None
    master_port: str | None
    launcher: str


def distributed_env(environ: dict[str, str] | None = None) -> DistEnv | None:
    """The launcher's world, or None when this process was not started as one of several ranks."""
    env = dict(os.environ if environ is None else environ)
    for launcher, size_key, rank_key, local_keys in (
        ("torchrun", "WORLD_SIZE", "RANK", ("LOCAL_RANK",)),
        ("mpi", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", ("OMPI_COMM_WORLD_LOCAL_RANK",)),
        ("pmi", "PMI_SIZE", "PMI_RANK", ("MPI_LOCALRANKID", "PMI_LOCAL_RANK")),
    ):
        if size_key in env and rank_key in env:
            try:
                size, rank = int(env[size_key]), int(env[rank_key])
                local = next((int(env[k]) for k in local_keys if k in env), 0)
            except ValueError as exc:
                raise InvalidInput(
                    f"{size_key}/{rank_key} must be integers, got "
                    f"{env[size_key]!r}/{env[rank_key]!r}"
                ) from exc
            if size <= 1:
                return None
            if not 0 <= rank < size:
                raise InvalidInput(f"{rank_key}={rank} is outside 0..{size - 1}")
            return DistEnv(
                size, rank, local, env.get("MASTER_ADDR"), env.get("MASTER_PORT"), launcher
            )
    return None


class AllreduceParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    processes: int = Field(
        default=2, ge=2, le=64, description="local ranks when not launched distributed"
    )
    min_bytes: int = Field(default=1024, ge=4)
    max_bytes: int = Field(default=256 * 2**20, ge=4)
    step_factor: int = Field(default=2, ge=2)
    dtype: Literal["float32", "float16", "bfloat16"] = "float32"
    warmup_iters: int = Field(default=5, ge=0)
    iters: int = Field(default=20, ge=1)
    timeout_s: float = Field(default=600, gt=0)

    def sizes(self) -> list[int]:
        element = _DTYPE_BYTES[self.dtype]
        sizes, size = [], self.min_bytes
        while size <= self.max_bytes:
            sizes.append(max(element, size // element * element))
            size *= self.step_factor
        return sizes


PROFILES: dict[str, dict[str, Any]] = {
    "quick": dict(
        min_bytes=1024, max_bytes=2**20, step_factor=4, warmup_iters=2, iters=5, timeout_s=120
    ),
    "full": dict(),
}


def params_for(ctx: RunContext) -> AllreduceParams:
    values = dict(PROFILES[ctx.profile])
    unknown = sorted(set(ctx.options) - set(AllreduceParams.model_fields))
    if unknown:
        raise InvalidInput(
            f"allreduce: unknown option(s) {', '.join(unknown)}; valid: "
            f"{', '.join(AllreduceParams.model_fields)}"
        )
    values.update(ctx.options)
    try:
        params = AllreduceParams(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InvalidInput(
            f"allreduce option {field}={first.get('input')!r} is invalid: {first['msg']}"
        ) from exc
    if params.min_bytes > params.max_bytes:
        raise InvalidInput(
            f"allreduce option min_bytes={params.min_bytes} exceeds max_bytes={params.max_bytes}"
        )
    return params


def measure(
    params: AllreduceParams, rank: int, world_size: int, device: str
) -> list[dict[str, Any]]:
    """Run on every rank inside an initialised process group; returns per-size timings (the
    slowest rank's mean time per allreduce, as every rank waits for the last one)."""
    import torch
    import torch.distributed as dist

    dtype = getattr(torch, params.dtype)
    dev = torch.device(device)
    rows = []

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    for size in params.sizes():
        tensor = torch.ones(size // _DTYPE_BYTES[params.dtype], dtype=dtype, device=dev)
        for _ in range(params.warmup_iters):
            dist.all_reduce(tensor)
        sync()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(params.iters):
            dist.all_reduce(tensor)
        sync()  # NCCL is asynchronous: wait for the device before reading the clock
        elapsed = torch.tensor(
            [(time.perf_counter() - start) / params.iters], dtype=torch.float64, device=dev
        )
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        rows.append({"size_bytes": size, "seconds": float(elapsed.item())})
    return rows


def _init(backend: str, rank: int, world_size: int, addr: str, port: str, timeout_s: float) -> None:
    import datetime

    import torch.distributed as dist

    dist.init_process_group(
        backend,
        init_method=f"tcp://{addr}:{port}",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=timeout_s),
    )


def _local_rank_main(
    rank: int, world_size: int, port: str, device_kind: str, params_json: str, results: Any
) -> None:
    import torch
    import torch.distributed as dist

    try:
        params = AllreduceParams.model_validate_json(params_json)
        device = f"cuda:{rank}" if device_kind == "cuda" else "cpu"
        if device_kind == "cuda":
            torch.cuda.set_device(rank)
        _init(
            "nccl" if device_kind == "cuda" else "gloo",
            rank,
            world_size,
            "127.0.0.1",
            port,
            params.timeout_s,
        )
        rows = measure(params, rank, world_size, device)
        if rank == 0:
            results.put(("ok", rows))
        dist.destroy_process_group()
    except BaseException as exc:  # the parent turns this into a Failure
        results.put(
            ("error", f"rank {rank}: {type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}")
        )


def _free_port() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def run_local(params: AllreduceParams, world_size: int, device_kind: str) -> list[dict[str, Any]]:
    """Spawn ``world_size`` local ranks over loopback; returns rank 0's rows. Raises RuntimeError
    with the failing rank's error."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [
        ctx.Process(
            target=_local_rank_main,
            args=(r, world_size, port, device_kind, params.model_dump_json(), results),
            daemon=True,
        )
        for r in range(world_size)
    ]
    for p in procs:
        p.start()
    try:
        status, payload = results.get(timeout=params.timeout_s + 60)
    except Exception as exc:
        raise RuntimeError(f"no result from rank 0 within {params.timeout_s + 60:.0f} s") from exc
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    if status != "ok":
        raise RuntimeError(payload)
    rows: list[dict[str, Any]] = payload
    return rows


def _device_kind(device: str, torch: Any) -> str:
    """``cuda`` or ``cpu``: what the run's ``device`` asks for, ``auto`` taking CUDA when there.

    Raises:
        MissingEnvironment: CUDA asked for and not available.
    """
    cuda = torch.cuda.is_available()
    if device == "cuda" and not cuda:
        raise MissingEnvironment(
            "allreduce: device 'cuda' requested but torch.cuda.is_available() is False"
        )
    return "cuda" if (device == "cuda" or (device == "auto" and cuda)) else "cpu"


def _world(
    params: AllreduceParams, env: DistEnv | None, device_kind: str, torch: Any
) -> tuple[int, str]:
    """The process group's size and who launched it: the launcher's environment, else the
    processes spawned here (on CUDA at most one per GPU).

    Raises:
        MissingEnvironment: a local CUDA run on a node with fewer than 2 GPUs.
    """
    if env is not None:
        return env.world_size, env.launcher
    world = params.processes
    if device_kind == "cuda" and torch.cuda.device_count() < world:
        world = torch.cuda.device_count()
        if world < 2:
            raise MissingEnvironment(
                "allreduce on CUDA needs at least 2 GPUs in one process group; this node "
                "has 1 (use device=cpu, or launch across nodes with torchrun)"
            )
    return world, "local-spawn"


class AllreduceRunner:
    name = "allreduce"
    description = (
        "torch.distributed allreduce algorithm/bus bandwidth over message sizes "
        "(gloo CPU, NCCL GPU)"
    )

    def run(self, ctx: RunContext, progress: Progress | None = None) -> RunnerResult:
        try:
            import torch
            import torch.distributed as dist
        except ImportError as exc:
            raise MissingEnvironment(
                "allreduce: PyTorch is not installed: pip install 'stack-advisor[torch]'"
            ) from exc
        if not dist.is_available():
            raise Unsupported("this PyTorch build has no torch.distributed")
        params = params_for(ctx)
        device_kind = _device_kind(ctx.device, torch)
        backend = "nccl" if device_kind == "cuda" else "gloo"
        env = distributed_env()
        result = RunnerResult(
            stack_extra={"framework": "torch", "framework_version": torch.__version__.split("+")[0]}
        )
        if device_kind == "cuda" and torch.cuda.nccl.is_available(torch.zeros(1, device="cuda")):
            result.stack_extra["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        world, launcher = _world(params, env, device_kind, torch)
        if progress:
            progress(f"allreduce {backend} x{world}", 0.0)
        try:
            if env is not None:
                rows = self._run_launched(params, env, device_kind)
                if env.rank != 0:
                    return RunnerResult()  # only rank 0 reports
            else:
                rows = run_local(params, world, device_kind)
        except RuntimeError as exc:
            message = str(exc)
            result.failures.append(
                FailureIn(
                    benchmark=Benchmark(
                        family=FAMILY,
                        name="allreduce",
                        parameters={"backend": backend, "world_size": world, "device": device_kind},
                    ),
                    stage="run",
                    error_class="AllreduceFailed",
                    message=message.splitlines()[0][:500],
                    log_tail=message[-4000:],
                )
            )
            return result
        for row in rows:
            result.measurements.extend(
                self._measurements(row, params, world, backend, device_kind, launcher)
            )
        if progress:
            progress("allreduce done", 1.0)
        return result

    @staticmethod
    def _run_launched(
        params: AllreduceParams, env: DistEnv, device_kind: str
    ) -> list[dict[str, Any]]:
        import torch
        import torch.distributed as dist

        if not env.master_addr or not env.master_port:
            raise InvalidInput(
                f"launched by {env.launcher} (world size {env.world_size}) but "
                "MASTER_ADDR/MASTER_PORT are not set"
            )
        device = "cpu"
        if device_kind == "cuda":
            torch.cuda.set_device(env.local_rank)
            device = f"cuda:{env.local_rank}"
        _init(
            "nccl" if device_kind == "cuda" else "gloo",
            env.rank,
            env.world_size,
            env.master_addr,
            env.master_port,
            params.timeout_s,
        )
        try:
            return measure(params, env.rank, env.world_size, device)
        finally:
            dist.destroy_process_group()

    @staticmethod
    def _measurements(
        row: dict[str, Any],
        params: AllreduceParams,
        world: int,
        backend: str,
        device: str,
        launcher: str,
    ) -> list[Measurement]:
        size, seconds = row["size_bytes"], row["seconds"]
        algbw = algorithm_bandwidth(size, seconds) / 1e9
        busbw = bus_bandwidth(algbw, world)
        benchmark = Benchmark(
            family=FAMILY,
            name="allreduce",
            parameters={
                "size_bytes": size,
                "dtype": params.dtype,
                "op": "sum",
                "world_size": world,
                "backend": backend,
                "device": device,
            },
        )
        note = (
            f"{seconds * 1e6:.1f} us per allreduce (slowest rank, mean of {params.iters}); "
            f"launcher {launcher}"
        )
        return [
            Measurement(
                benchmark=benchmark,
                metric="busbw_gbps",
                value=busbw,
                unit="GB/s",
                samples=params.iters,
                note=note,
            ),
            Measurement(
                benchmark=benchmark,
                metric="algbw_gbps",
                value=algbw,
                unit="GB/s",
                samples=params.iters,
                note=note,
            ),
            Measurement(
                benchmark=benchmark,
                metric="time_us",
                value=seconds * 1e6,
                unit="us",
                higher_is_better=False,
                samples=params.iters,
            ),
        ]


register_runner(AllreduceRunner())
