"""The sweep matrix: cells (a framework build, optional pinned CUDA/cuDNN/NCCL wheels, extra
packages) × benchmarks, measured on one node.

A matrix is YAML validated by pydantic; every error names the field path and the value. Each cell
turns into a list of pip requirements (``Cell.requirements``) that ``collectors.sweep.env``
installs into the cell's own environment. What a cell *asks for* is only a wish: the stack a
result is recorded under is the fingerprint taken inside the cell's environment.
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
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.store.base import validation_message

CELL_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
REQUIREMENT = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9_,.-]+\])?\s*([<>=!~]=?[^\s;]+(\s*,\s*[<>=!~]=?[^\s,;]+)*)?$"
)
VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+!_-]*$")

# framework -> (distribution installed for it, module imported to check it, PI backend name)
FRAMEWORKS: dict[str, tuple[str, str, str | None]] = {
    "torch": ("torch", "torch", "torch"),
    "tensorflow": ("tensorflow", "tensorflow", "tensorflow"),
    "jax": ("jax[cpu]", "jax", "jax"),
    "cupy": ("cupy-cuda12x", "cupy", "cupy"),
    "numpy": ("numpy", "numpy", "numpy"),
}

# pinned library -> wheel name pattern ({major}: the CUDA major version the wheels are built for)
LIBRARY_WHEELS: dict[str, str] = {
    "cuda": "nvidia-cuda-runtime-cu{major}",
    "cudnn": "nvidia-cudnn-cu{major}",
    "nccl": "nvidia-nccl-cu{major}",
}


RUNNER_FRAMEWORKS: dict[str, tuple[str, ...]] = {
    "cnn": ("torch", "tensorflow"),
    "tf-cnn": ("tensorflow",),
    "loadgen": ("torch",),
    "allreduce": ("torch",),
}
"""The frameworks a runner can measure (a runner not named runs on any: the PI suite has a backend
per framework). In a cell of another framework such a benchmark is ``unsupported``."""

RUNNER_REQUIREMENTS: dict[str, tuple[str, ...]] = {"loadgen": ("mlcommons-loadgen>=4.0",)}
"""What a runner needs in a cell besides the framework (added to every cell of a matrix that
uses it)."""


def _keras2(cell: Cell) -> list[str]:
    """tf_cnn_benchmarks on TensorFlow >= 2.16 needs Keras 2: tf-keras of the same minor."""
    if cell.framework != "tensorflow" or any(re.match(r"^tf[-_]keras\b", p) for p in cell.packages):
        return []
    parts = [int(p) for p in re.findall(r"\d+", cell.version or "")[:2]]
    if len(parts) == 2 and tuple(parts) >= (2, 16):
        return [f"tf-keras~={parts[0]}.{parts[1]}.0"]
    return []


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SweepBenchmark(_Spec):
    """One benchmark every cell runs: a runner, its profile and its options (``--option k=v``)."""

    runner: str = Field(description="a runner name: " + ", ".join(RUNNER_MODULES))
    profile: str = "quick"
    options: dict[str, Any] = Field(default_factory=dict)

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
            if isinstance(value, dict):
                raise ValueError(f"option {key!r}: nested mappings are not supported")
        return v

    def runner_options(self) -> dict[str, Any]:
        """Options as the runner takes them from ``--option``: lists comma-joined."""
        return {
            k: ",".join(map(str, v)) if isinstance(v, list) else v for k, v in self.options.items()
        }

    def unsupported_by(self, framework: str) -> str | None:
        """Why a cell of ``framework`` cannot run this benchmark (None: it can)."""
        frameworks = RUNNER_FRAMEWORKS.get(self.runner)
        if frameworks is None or framework in frameworks:
            return None
        return f"{self.runner} runs on {' or '.join(frameworks)}, not {framework}"

    def cell_options(self, framework: str) -> dict[str, Any]:
        """The options a cell of ``framework`` runs this benchmark with: the cell's own framework
        pinned (an environment holding several frameworks measures only the cell's), unless the
        matrix names it."""
        options = self.runner_options()
        if self.runner == "pi" and FRAMEWORKS[framework][2]:
            options.setdefault("backends", FRAMEWORKS[framework][2])
        elif self.runner == "cnn":
            options.setdefault("framework", framework)
        return options


INSTALL_FIELDS = (
    "package",
    "cuda",
    "cudnn",
    "nccl",
    "cuda_major",
    "packages",
    "index_url",
    "extra_index_url",
)
"""What a cell installs: none of it applies to a cell that measures an ``environment`` as it is."""


class Cell(_Spec):
    """One software stack to measure: a framework build plus pinned libraries and extras, installed
    into an environment of the sweep's own; or an ``environment`` already on the node (a vendor
    container's interpreter, a conda prefix, a virtualenv) measured as it is."""

    name: str | None = Field(default=None, description="defaults to <framework>-<version>")
    framework: str
    version: str | None = Field(
        default=None,
        min_length=1,
        description="the framework version to install; with `environment`, optional: the version "
        "that must be installed there",
    )
    environment: str | None = Field(
        default=None,
        min_length=1,
        description="an installed Python environment (its interpreter, or the folder holding "
        "bin/python) whose framework is measured as it is: nothing is installed into it",
    )
    package: str | None = Field(
        default=None,
        description="the distribution to install instead of the "
        "framework's default (e.g. cupy-cuda11x, jax[cuda12])",
    )
    cuda: str | None = Field(
        default=None, description="pin nvidia-cuda-runtime-cuXX to this version"
    )
    cudnn: str | None = Field(default=None, description="pin nvidia-cudnn-cuXX")
    nccl: str | None = Field(default=None, description="pin nvidia-nccl-cuXX")
    cuda_major: int | None = Field(
        default=None,
        ge=10,
        le=13,
        description="wheel suffix (cu11, cu12); defaults to the major of `cuda`, else 12",
    )
    packages: list[str] = Field(default_factory=list, description="extra requirements, pip syntax")
    imports: list[str] = Field(
        default_factory=list,
        description="modules that must import before the "
        "benchmarks run (default: the framework's); one that fails is an import failure",
    )
    index_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    extra_index_url: list[str] = Field(default_factory=list)

    @field_validator("framework")
    @classmethod
    def _framework(cls, v: str) -> str:
        name = v.strip().lower()
        if name not in FRAMEWORKS:
            raise ValueError(f"unknown framework {v!r}; valid: {', '.join(FRAMEWORKS)}")
        return name

    @field_validator("version", "cuda", "cudnn", "nccl")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is not None and not VERSION.match(v):
            raise ValueError(f"{v!r} is not a version (e.g. 2.5.1, 12.4.127)")
        return v

    @field_validator("packages")
    @classmethod
    def _packages(cls, v: list[str]) -> list[str]:
        for req in v:
            if not REQUIREMENT.match(req.strip()):
                raise ValueError(
                    f"{req!r} is not a requirement (name[extras] op version, e.g. 'scipy==1.13.1')"
                )
        return [r.strip() for r in v]

    @field_validator("package")
    @classmethod
    def _package(cls, v: str | None) -> str | None:
        if v is not None and (not REQUIREMENT.match(v) or any(op in v for op in "<>=!~")):
            raise ValueError(
                f"package {v!r} must be a distribution name (with [extras]), no version"
            )
        return v

    @field_validator("imports")
    @classmethod
    def _imports(cls, v: list[str]) -> list[str]:
        for module in v:
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$", module):
                raise ValueError(f"{module!r} is not a module name")
        return v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        if v is not None and (not CELL_NAME.match(v) or len(v) > 40):
            raise ValueError(
                "cell name must be lower-case letters, digits, '-' and '.', "
                "start and end alphanumeric, at most 40 characters"
            )
        return v

    @model_validator(mode="after")
    def _install_or_installed(self) -> Cell:
        if self.environment is None:
            if self.version is None:
                raise ValueError(
                    "version: required (the framework version to install), unless `environment` "
                    "names an installed environment to measure as it is"
                )
            return self
        given = [f for f in INSTALL_FIELDS if getattr(self, f) not in (None, [])]
        if given:
            raise ValueError(
                f"{', '.join(given)}: a cell with `environment` measures what is installed there "
                "and installs nothing; install it into that environment, or drop `environment`"
            )
        return self

    @property
    def id(self) -> str:
        version = self.version or "installed"
        return (
            self.name
            or re.sub(r"[^a-z0-9.-]+", "-", f"{self.framework}-{version}".lower()).strip("-")[:40]
        )

    @property
    def distribution(self) -> str:
        return self.package or FRAMEWORKS[self.framework][0]

    @property
    def import_names(self) -> list[str]:
        return self.imports or [FRAMEWORKS[self.framework][1]]

    def requirements(self) -> list[str]:
        """The pip requirements of this cell, framework first (none for an ``environment``)."""
        if self.environment is not None:
            return []
        major = self.cuda_major or (
            int(self.cuda.split(".")[0]) if self.cuda and self.cuda[0].isdigit() else 12
        )
        reqs = [f"{self.distribution}=={self.version}"]
        for lib, wheel in LIBRARY_WHEELS.items():
            pinned = getattr(self, lib)
            if pinned:
                reqs.append(f"{wheel.format(major=major)}=={pinned}")
        return reqs + list(self.packages)

    def wish(self) -> dict[str, str]:
        """What the matrix asked for (recorded beside the measured stack, never instead of it)."""
        out = {"framework": self.framework}
        if self.version:
            out["framework_version"] = self.version
        if self.environment:
            out["environment"] = self.environment
        out.update({k: getattr(self, k) for k in LIBRARY_WHEELS if getattr(self, k)})
        if self.packages:
            out["packages"] = " ".join(self.packages)
        return out


class SweepMatrix(_Spec):
    name: str = Field(min_length=1, max_length=40)
    python: str | None = Field(
        default=None,
        description="interpreter for the cells (an installed "
        "python version or path); default: the one running the sweep",
    )
    device: str = Field(default="auto", pattern="^(auto|cpu|cuda)$")
    repeats: int = Field(default=1, ge=1, le=20, description="runs per cell (run-to-run spread)")
    baseline: str | None = Field(default=None, description="the cell the others are compared to")
    benchmarks: list[SweepBenchmark] = Field(min_length=1)
    cells: list[Cell] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _matrix_name(cls, v: str) -> str:
        if not CELL_NAME.match(v):
            raise ValueError("matrix name must be lower-case letters, digits, '-' and '.'")
        return v

    @model_validator(mode="after")
    def _unique(self) -> SweepMatrix:
        ids = [c.id for c in self.cells]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(
                f"cell names must be unique; repeated: {', '.join(dupes)} (set `name:`)"
            )
        if self.baseline is not None and self.baseline not in ids:
            raise ValueError(f"baseline {self.baseline!r} is not a cell; cells: {', '.join(ids)}")
        return self

    @model_validator(mode="after")
    def _runner_requirements(self) -> SweepMatrix:
        """Each cell gets what the matrix's runners need (the LoadGen library; Keras 2 for
        tf_cnn_benchmarks on TensorFlow >= 2.16), so a sweep does not fail on a missing extra."""
        runners = {b.runner for b in self.benchmarks}
        for cell in self.cells:
            if cell.environment is not None:
                continue  # installs nothing: a missing library is the runner's recorded failure
            extra = [r for runner in sorted(runners) for r in RUNNER_REQUIREMENTS.get(runner, ())]
            if "tf-cnn" in runners:
                extra += _keras2(cell)
            names = {re.split(r"[<>=!~\[ ]", p, maxsplit=1)[0].lower() for p in cell.packages}
            cell.packages.extend(
                r for r in extra if re.split(r"[<>=!~\[ ]", r, maxsplit=1)[0].lower() not in names
            )
        return self

    @property
    def baseline_cell(self) -> str:
        return self.baseline or self.cells[0].id

    def cell(self, cell_id: str) -> Cell:
        for c in self.cells:
            if c.id == cell_id:
                return c
        raise InvalidInput(
            f"no cell {cell_id!r} in matrix {self.name!r}; cells: "
            f"{', '.join(c.id for c in self.cells)}"
        )

    def signature(self) -> str:
        """What makes two runs of a cell comparable: benchmarks, device (not the cell list)."""
        text = json.dumps(
            [self.device, [b.model_dump() for b in self.benchmarks]], sort_keys=True, default=str
        )
        return hashlib.sha256(text.encode()).hexdigest()[:10]


def parse_matrix(data: Any, source: str = "matrix") -> SweepMatrix:
    """Validate a matrix mapping. Raises InvalidInput naming each bad field and its value."""
    if not isinstance(data, dict):
        raise InvalidInput(
            f"{source}: a sweep matrix must be a YAML mapping, got {type(data).__name__}"
        )
    try:
        return SweepMatrix.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(f"{source}: {validation_message(exc)}") from None


def load_matrix(path: str | Path) -> SweepMatrix:
    """Read and validate a matrix file, or ``env:NAME``: the matrix (YAML or JSON) in an
    environment variable (how a Kubernetes Job of a plan's sweep receives its one cell)."""
    text_path = str(path)
    if text_path.startswith("env:"):
        import os

        name = text_path[4:]
        text = os.environ.get(name)
        if not text:
            raise InvalidInput(
                f"sweep matrix {text_path!r}: environment variable {name!r} is not set or empty"
            )
        path = Path(text_path)
    else:
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise InvalidInput(f"cannot read sweep matrix {str(path)!r}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{path}: not valid YAML: {exc}") from None
    return parse_matrix(data, str(path))
