"""What a LoadGen run is: its options (``LoadgenParams``, per profile, validated from a run's
options), the benchmark its results are recorded under, and the calibration that tunes the
expected latency and throughput LoadGen plans its queries by."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stack_advisor.catalog import resolve_benchmark
from stack_advisor.collectors.models import MODELS
from stack_advisor.collectors.runners import RunContext
from stack_advisor.schema.errors import InvalidInput

# the family of runs of a model the catalogue has no benchmark for (``benchmark_of``)
FAMILY = "loadgen"
# the LoadGen modes this runner drives (catalogue scenario ids; MultiStream is not implemented)
SCENARIOS = ("SingleStream", "Server", "Offline")


def benchmark_of(model: str) -> tuple[str, str]:
    """(family, name) our runs of ``model`` are recorded under: the catalogue's benchmark for
    it (``resnet50`` → ``mlperf-inference``/``resnet50``), so they pair with MLPerf's published
    results of that benchmark; a model the catalogue has no benchmark for stays under family
    ``loadgen`` by its own name."""
    match = resolve_benchmark(model)
    if match.resolved and match.base is None and match.family is not None:
        return match.family, match.id
    return FAMILY, model


class LoadgenParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenarios: list[Literal["SingleStream", "Server", "Offline"]] = Field(
        default_factory=lambda: list(SCENARIOS)  # type: ignore[arg-type]
    )
    model: str = "resnet50"
    image_size: int = Field(default=224, ge=16, le=1024)
    num_classes: int = Field(default=1000, ge=2)
    sample_count: int = Field(default=256, ge=1, description="QSL size (performance sample count)")
    max_batch: int = Field(default=32, ge=1, description="Offline batching in the SUT")
    min_duration_ms: int = Field(default=60_000, ge=0)
    max_duration_ms: int = Field(default=0, ge=0)
    min_query_count: int = Field(default=1024, ge=1)
    single_stream_expected_latency_ms: float = Field(default=10.0, gt=0)
    server_target_qps: float = Field(default=100.0, gt=0)
    server_target_latency_ms: float = Field(default=15.0, gt=0)
    offline_expected_qps: float = Field(default=1000.0, gt=0)
    threads: int | None = Field(
        default=None, ge=1, description="torch CPU threads (None: torch's default)"
    )
    calibrate: bool = Field(
        default=True,
        description="time the SUT briefly first and set the SingleStream expected latency and the "
        "Offline expected QPS from it (unless given): LoadGen sizes a run from them, and "
        "a SUT faster than expected ends before min_duration (an INVALID result)",
    )
    sut: Literal["eager", "cuda-graph"] = Field(
        default="eager",
        description="how the SUT runs the model: eager PyTorch (every kernel launched from the "
        "host per query), or one CUDA graph captured per batch size 1..max_batch and "
        "replayed per query (CUDA only; what serving runtimes do to take the host's "
        "launch cost off the latency)",
    )
    warmup: bool | None = Field(
        default=None,
        description="before LoadGen's timed run, one forward pass at every batch size the SUT can "
        "serve (1 to max_batch), as a server warms up: the first pass of a new shape "
        "builds cuDNN/cuBLAS plans and grows the allocator, stalling the queries queued "
        "behind it (None: on an accelerator, not on the CPU, where it costs seconds)",
    )

    def identity(self, scenario: str, device: str) -> dict[str, Any]:
        parameters: dict[str, Any] = {
            "scenario": scenario,
            "model": self.model,
            "image_size": self.image_size,
            "num_classes": self.num_classes,
            "data": "synthetic",
            "device": device,
        }
        if self.threads and device == "cpu":
            parameters["threads"] = self.threads
        if self.sut != "eager":  # a different implementation: its results never mix with eager ones
            parameters["sut"] = self.sut
        if scenario == "Server":
            parameters["target_latency_ms"] = self.server_target_latency_ms
            parameters["target_qps"] = self.server_target_qps
        if scenario == "Offline":
            parameters["max_batch"] = self.max_batch
        return parameters


PROFILES: dict[str, dict[str, Any]] = {
    "quick": dict(
        model="small_cnn",
        image_size=64,
        sample_count=32,
        max_batch=16,
        min_duration_ms=300,
        max_duration_ms=3000,
        min_query_count=32,
        single_stream_expected_latency_ms=2.0,
        server_target_qps=40.0,
        server_target_latency_ms=100.0,
        offline_expected_qps=200.0,
        threads=1,
    ),
    "full": dict(),
}


def params_for(ctx: RunContext) -> LoadgenParams:
    values = dict(PROFILES[ctx.profile])
    known = set(LoadgenParams.model_fields)
    unknown = sorted(set(ctx.options) - known)
    if unknown:
        raise InvalidInput(
            f"loadgen: unknown option(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}"
        )
    values.update(ctx.options)
    if isinstance(values.get("scenarios"), str):
        values["scenarios"] = [s.strip() for s in values["scenarios"].split(",") if s.strip()]
    try:
        params = LoadgenParams(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InvalidInput(
            f"loadgen option {field}={first.get('input')!r} is invalid: {first['msg']}"
        ) from exc
    if params.model not in MODELS:
        raise InvalidInput(
            f"loadgen option model={params.model!r} is unknown; valid: {', '.join(MODELS)}"
        )
    return params


@dataclass(frozen=True)
class Calibration:
    single_latency_ms: float  # median of one-sample queries
    batch_qps: float  # samples/s at max_batch

    def apply(self, params: LoadgenParams, given: set[str]) -> LoadgenParams:
        """Expect a little faster than measured (LoadGen then issues enough queries to fill
        min_duration); options the user gave are kept."""
        update: dict[str, Any] = {}
        if "single_stream_expected_latency_ms" not in given:
            update["single_stream_expected_latency_ms"] = max(0.001, self.single_latency_ms * 0.8)
        if "offline_expected_qps" not in given:
            update["offline_expected_qps"] = self.batch_qps * 1.25
        return params.model_copy(update=update)

    def note(self) -> str:
        return (
            f"calibrated: one-sample latency {self.single_latency_ms:.3f} ms, "
            f"{self.batch_qps:.1f} samples/s at max_batch"
        )
