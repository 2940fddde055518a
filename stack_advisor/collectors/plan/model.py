"""The collection plan: which images run which benchmarks on which node pools, how often.

A plan is YAML validated by pydantic; every error names the field path and the value, e.g.
``pools.1.placement: Input should be 'bare-metal', 'passthrough', 'vgpu' or 'unknown' (got 'vm')``.
``expand_plan`` turns it into cells (image × pool × benchmark), each with a stable, label-safe id.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from stack_advisor.collectors.runners import RUNNER_MODULES, check_profile, check_runner
from stack_advisor.collectors.sweep.matrix import SweepMatrix
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import Accelerator, Benchmark, PlacementKind, SoftwareStack
from stack_advisor.store.base import validation_message

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_KEY = re.compile(
    r"^(([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,\-?LW#]+$")
GPU_RESOURCE = "nvidia.com/gpu"

# Benchmark.family as the runners write it, per runner name (RUNNER_MODULES).
RUNNER_FAMILIES: dict[str, str] = {
    "pi": "pi",
    "tf-cnn": "tf_cnn",
    "cnn": "cnn",
    "loadgen": "mlperf",
    "allreduce": "allreduce",
}


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _dns_name(value: str, what: str, max_len: int = 40) -> str:
    if not DNS_LABEL.match(value) or len(value) > max_len:
        raise ValueError(
            f"{what} must be lower-case letters, digits and '-', start and end alphanumeric, "
            f"at most {max_len} characters"
        )
    return value


class ImageStack(_Spec):
    """What an image ships: CUDA, cuDNN, the framework and its version (driver comes from the
    node). Mapped onto ``SoftwareStack``."""

    cuda: str | None = None
    cudnn: str | None = None
    nccl: str | None = None
    tensorrt: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    python: str | None = None
    extra: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _framework_pair(self) -> ImageStack:
        if self.framework_version and not self.framework:
            raise ValueError("framework_version is set but framework is not")
        return self


class ImageSpec(_Spec):
    name: str
    image: str = Field(min_length=1, description="container image reference")
    stack: ImageStack = Field(default_factory=ImageStack)
    pull_policy: str = Field(default="IfNotPresent", pattern="^(Always|IfNotPresent|Never)$")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_name(v, "image name")

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        if any(c.isspace() for c in v):
            raise ValueError("image reference must not contain whitespace")
        return v

    def software_stack(self) -> SoftwareStack:
        return SoftwareStack(**self.stack.model_dump(), image=self.image)


class Toleration(_Spec):
    key: str | None = None
    operator: str = Field(default="Equal", pattern="^(Equal|Exists)$")
    value: str | None = None
    effect: str | None = Field(default=None, pattern="^(NoSchedule|PreferNoSchedule|NoExecute)$")
    toleration_seconds: int | None = Field(default=None, alias="tolerationSeconds", ge=0)

    def to_k8s(self) -> dict[str, Any]:
        out: dict[str, Any] = {"operator": self.operator}
        for name, value in (("key", self.key), ("value", self.value), ("effect", self.effect)):
            if value is not None:
                out[name] = value
        if self.toleration_seconds is not None:
            out["tolerationSeconds"] = self.toleration_seconds
        return out


class PoolAccelerator(_Spec):
    model: str = Field(min_length=1, description="as GPU feature discovery names it")
    count: int = Field(default=1, ge=0, description="GPUs per node")
    memory_mib: int | None = Field(default=None, ge=0)
    vendor: str | None = "NVIDIA"


class NodePool(_Spec):
    name: str
    selector: dict[str, str] = Field(min_length=1, description="node labels (nodeSelector)")
    affinity: dict[str, Any] | None = Field(
        default=None, description="a Kubernetes affinity, verbatim"
    )
    placement: PlacementKind = PlacementKind.UNKNOWN
    accelerator: PoolAccelerator | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    gang_scheduling: bool = False
    concurrency: int = Field(default=1, ge=1, description="Jobs of this plan running at once")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_name(v, "pool name")

    @field_validator("selector")
    @classmethod
    def _selector(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            if not LABEL_KEY.match(key):
                raise ValueError(f"selector key {key!r} is not a valid label key")
            if not isinstance(value, str) or not LABEL_VALUE.match(value):
                raise ValueError(f"selector value {value!r} for {key!r} is not a valid label value")
        return v

    def accelerator_model(self) -> Accelerator:
        if self.accelerator is None:
            return Accelerator(model="cpu", vendor=None, count=0)
        return Accelerator(**self.accelerator.model_dump())


class ResourceSpec(_Spec):
    requests: dict[str, str] = Field(default_factory=lambda: {"cpu": "2", "memory": "8Gi"})
    limits: dict[str, str] = Field(default_factory=lambda: {"memory": "16Gi"})


class BenchmarkSpec(_Spec):
    name: str
    runner: str = Field(description="a runner name: " + ", ".join(RUNNER_MODULES))
    profile: str = "quick"
    options: dict[str, Any] = Field(default_factory=dict, description="passed as --option k=v")
    gpus: int = Field(default=1, ge=0, description="nvidia.com/gpu per pod")
    workers: int = Field(default=1, ge=1, description="pods of a distributed run (allreduce)")
    distributed_kind: str = Field(default="PyTorchJob", pattern="^(PyTorchJob|MPIJob)$")
    resources: ResourceSpec | None = None
    active_deadline_seconds: int | None = Field(default=None, ge=1)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_name(v, "benchmark name")

    @field_validator("runner")
    @classmethod
    def _runner(cls, v: str) -> str:
        return check_runner(v)

    @field_validator("profile")
    @classmethod
    def _profile(cls, v: str) -> str:
        return check_profile(v)

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key, value in v.items():
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_.-]*$", key):
                raise ValueError(f"option name {key!r} must be an identifier")
            if isinstance(value, dict):
                # pydantic reports ValueErrors (not TypeErrors) with the field's path
                raise ValueError(f"option {key!r}: nested mappings are not supported")
        return v

    @model_validator(mode="after")
    def _distributed(self) -> BenchmarkSpec:
        if self.workers > 1 and self.runner != "allreduce":
            raise ValueError(f"workers > 1 is only for the allreduce runner, not {self.runner!r}")
        return self

    @property
    def distributed(self) -> bool:
        return self.workers > 1

    def option_args(self) -> list[str]:
        """``--option k=v`` pairs; lists are comma-joined, other values JSON-encoded scalars."""
        args: list[str] = []
        for key in sorted(self.options):
            value = self.options[key]
            if isinstance(value, list):
                text = ",".join(str(v) for v in value)
            elif isinstance(value, bool):
                text = "true" if value else "false"
            else:
                text = str(value)
            args += ["--option", f"{key}={text}"]
        return args

    def benchmark_model(self) -> Benchmark:
        """The identity failures of this cell are recorded under."""
        params = {"profile": self.profile, **self.options}
        if self.workers > 1:
            params["workers"] = self.workers
        return Benchmark(family=RUNNER_FAMILIES[self.runner], name=self.name, parameters=params)


class ApiSpec(_Spec):
    url: str = Field(default="http://stack-advisor-api:8000", pattern=r"^https?://\S+$")
    token_secret: str = Field(default="stack-advisor-collector-token")
    token_key: str = Field(default="token")


class JobPolicy(_Spec):
    backoff_limit: int = Field(default=0, ge=0)
    active_deadline_seconds: int = Field(default=3600, ge=1)
    ttl_seconds_after_finished: int = Field(default=86400, ge=0)
    service_account: str = "stack-advisor-collector"
    run_as_user: int = Field(default=65532, ge=1)
    # The collectors' spool (documents the API did not take, re-sent by the next run): a
    # PersistentVolumeClaim, because each scheduled run is a new pod and an emptyDir goes with
    # it. null: the spool lives in the pod's /tmp emptyDir (lost with the pod).
    spool_claim: str | None = Field(
        default="stack-advisor-collector-spool",
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=63,
    )
    spool_size: str = Field(default="1Gi", pattern=r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti)?$")
    spool_storage_class: str | None = Field(
        default=None,
        description="a ReadWriteMany class (NFS, CephFS, EFS, Filestore...); null: the default",
    )


class PlannerSpec(_Spec):
    """The in-cluster planner a scheduled plan's CronJob runs: ``advisor plan submit``."""

    image: str = Field(default="ghcr.io/stack-advisor/api:0.1.0", min_length=1)
    service_account: str = "stack-advisor-planner"
    skip_observed: bool = True
    # The planner only reads (which cells are observed): a read token, never the collectors'
    # write token (the Jobs it creates get that one).
    token_secret: str = Field(default="stack-advisor-planner-token")
    token_key: str = Field(default="token")


class PlanSweep(_Spec):
    """A sweep matrix run on every pool: one Job per (sweep cell, pool), each creating its cell's
    environment (uv) inside one generic collector image (``FRAMEWORK=none``)."""

    image: str = Field(min_length=1, description="the generic collector image")
    pull_policy: str = Field(default="IfNotPresent", pattern="^(Always|IfNotPresent|Never)$")
    disk: str = Field(
        default="40Gi",
        pattern=r"^[0-9]+(Mi|Gi)$",
        description="scratch for the cell's "
        "environment and uv's downloads (the /tmp emptyDir's size limit)",
    )
    matrix: SweepMatrix

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        if any(c.isspace() for c in v):
            raise ValueError("image reference must not contain whitespace")
        return v


class Plan(_Spec):
    """A collection plan (see deploy/plans/sample-plan.yaml)."""

    name: str
    namespace: str = "stack-advisor"
    api: ApiSpec = Field(default_factory=ApiSpec)
    images: list[ImageSpec] = Field(default_factory=list)
    pools: list[NodePool] = Field(min_length=1)
    benchmarks: list[BenchmarkSpec] = Field(default_factory=list)
    sweep: PlanSweep | None = None
    repeats: int = Field(default=1, ge=1, le=100)
    schedule: str | None = Field(default=None, description="cron, five fields")
    resources: ResourceSpec = Field(default_factory=ResourceSpec)
    job: JobPolicy = Field(default_factory=JobPolicy)
    planner: PlannerSpec = Field(default_factory=PlannerSpec)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_name(v, "plan name", 30)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, v: str) -> str:
        return _dns_name(v, "namespace", 63)

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if v.startswith("@"):
            if v not in {
                "@yearly",
                "@annually",
                "@monthly",
                "@weekly",
                "@daily",
                "@midnight",
                "@hourly",
            }:
                raise ValueError(f"unknown cron macro {v!r}")
            return v
        fields = v.split()
        if len(fields) != 5 or not all(CRON_FIELD.match(f) for f in fields):
            raise ValueError(
                "schedule must be a cron expression with five fields, e.g. '0 3 * * 0'"
            )
        return v

    @model_validator(mode="after")
    def _unique_names(self) -> Plan:
        if not self.sweep and not (self.images and self.benchmarks):
            raise ValueError("a plan needs images and benchmarks, or a sweep (or both)")
        if bool(self.images) != bool(self.benchmarks):
            missing = "benchmarks" if self.images else "images"
            raise ValueError(f"{missing}: images and benchmarks go together; add at least one")
        for what, items in (
            ("images", self.images),
            ("pools", self.pools),
            ("benchmarks", self.benchmarks),
        ):
            seen: set[str] = set()
            for item in items:
                if item.name in seen:
                    raise ValueError(f"{what}: name {item.name!r} appears twice")
                seen.add(item.name)
        return self


class Cell(BaseModel):
    """One image × pool × benchmark combination: one Job (or one distributed job)."""

    model_config = ConfigDict(frozen=True)

    plan: str
    image: ImageSpec
    pool: NodePool
    benchmark: BenchmarkSpec
    sweep_cell: str | None = (
        None  # a sweep cell: ``advisor sweep`` of this matrix cell, not ``collect``
    )

    @property
    def cell_id(self) -> str:
        """``<image>.<pool>.<benchmark>``-like but label-safe (≤ 63 chars) and stable."""
        digest = hashlib.sha256(
            json.dumps([self.plan, self.image.name, self.pool.name, self.benchmark.name]).encode()
        ).hexdigest()[:8]
        readable = f"{self.image.name}-{self.pool.name}-{self.benchmark.name}"[:50].rstrip("-.")
        return f"{readable}-{digest}"

    @property
    def job_name(self) -> str:
        """The object name: the plan and a short digest (≤ 52 chars so CronJob names fit)."""
        return f"sa-{self.plan}-{self.cell_id[-8:]}"

    @property
    def gpus(self) -> int:
        """GPUs per pod: the benchmark's ask, or none on a pool without accelerators."""
        return self.benchmark.gpus if self.pool.accelerator and self.pool.accelerator.count else 0

    def stack(self) -> SoftwareStack:
        return self.image.software_stack()

    def row(self) -> dict[str, Any]:
        acc = self.pool.accelerator
        return {
            "cell": self.cell_id,
            "job": self.job_name,
            "image": self.image.name,
            "pool": self.pool.name,
            "benchmark": self.benchmark.name,
            "runner": self.benchmark.runner,
            "profile": self.benchmark.profile,
            "accelerator": acc.model if acc else "cpu",
            "placement": self.pool.placement.value,
            "gpus": self.gpus,
            "workers": self.benchmark.workers,
            "stack": self.stack().label(),
        }


def parse_plan(data: Any, source: str = "plan") -> Plan:
    """Validate a plan mapping. Raises InvalidInput naming each bad field and its value."""
    if not isinstance(data, dict):
        raise InvalidInput(f"{source}: a plan must be a YAML mapping, got {type(data).__name__}")
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(f"{source}: {validation_message(exc)}") from None


def load_plan(path: str | Path) -> Plan:
    """Read and validate a plan file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise InvalidInput(f"cannot read plan file {str(path)!r}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{path}: not valid YAML: {exc}") from None
    return parse_plan(data, str(path))


def expand_plan(plan: Plan) -> list[Cell]:
    """Every image × pool × benchmark, in plan order. A benchmark asking for more GPUs than a
    pool's nodes have is an error; on a pool without accelerators it runs on the CPU."""
    cells = []
    for image in plan.images:
        for pool in plan.pools:
            for bench in plan.benchmarks:
                have = pool.accelerator.count if pool.accelerator else 0
                if have and bench.gpus > have:
                    raise InvalidInput(
                        f"benchmarks.{bench.name}.gpus is {bench.gpus} but pool {pool.name!r} has "
                        f"{have} GPU(s) per node; lower gpus or give "
                        f"pools.{pool.name}.accelerator.count"
                    )
                cells.append(Cell(plan=plan.name, image=image, pool=pool, benchmark=bench))
    if plan.sweep:
        cells.extend(_sweep_cells(plan, plan.sweep))
    return cells


def _sweep_cells(plan: Plan, sweep: PlanSweep) -> list[Cell]:
    """One cell per (sweep cell, pool): the generic image, the matrix's stack wish as its stack,
    and a benchmark named ``sweep`` (the matrix's benchmarks all run in the one Job)."""
    matrix = sweep.matrix
    first = matrix.benchmarks[0]
    gpus = 0 if matrix.device == "cpu" else 1
    cells = []
    for sweep_cell in matrix.cells:
        name = re.sub(r"[^a-z0-9-]+", "-", f"sweep-{sweep_cell.id}")[:40].strip("-")
        wish = sweep_cell.wish()
        image = ImageSpec(
            name=name,
            image=sweep.image,
            pull_policy=sweep.pull_policy,
            stack=ImageStack(
                framework=wish["framework"],
                framework_version=wish.get("framework_version"),
                cuda=sweep_cell.cuda,
                cudnn=sweep_cell.cudnn,
                nccl=sweep_cell.nccl,
            ),
        )
        bench = BenchmarkSpec(name="sweep", runner=first.runner, profile=first.profile, gpus=gpus)
        for pool in plan.pools:
            cells.append(
                Cell(
                    plan=plan.name,
                    image=image,
                    pool=pool,
                    benchmark=bench,
                    sweep_cell=sweep_cell.id,
                )
            )
    return cells
