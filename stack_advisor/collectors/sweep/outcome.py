"""What one sweep cell did (its ``CellOutcome``, also its ledger entry on disk), and the one
compatibility check a cell's documents pass: a CUDA runtime newer than the driver runs."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from stack_advisor.collectors.sweep.env import EnvCache
from stack_advisor.schema.models import SoftwareStack

LEDGER_VERSION = 1


@dataclass
class CellOutcome:
    """What one cell did; also its ledger entry."""

    cell: str
    status: str  # measured | failed | skipped
    stage: str | None = None  # install | import | run | compatibility (for failed)
    reason: str | None = None
    run_ids: list[str] = field(default_factory=list)
    stack: dict[str, Any] = field(default_factory=dict)
    stack_id: str | None = None
    requested: dict[str, str] = field(default_factory=dict)
    env_key: str | None = None
    env_cached: bool = False
    env_seconds: float = 0.0
    import_seconds: float = 0.0
    benchmark_seconds: float = 0.0
    process_seconds: float = 0.0  # the collector process inside the cell, start to exit
    deliver_seconds: float = 0.0  # parsing and storing (or posting) its documents
    cell_seconds: float = 0.0
    env_bytes: int = 0
    measurements: int = 0
    failures: int = 0
    observations_new: int = 0
    lock: str = ""
    signature: str = ""
    finished_at: str = ""
    runner_errors: list[str] = field(
        default_factory=list
    )  # what the runners said, when they measured nothing

    @property
    def overhead_seconds(self) -> float:
        """Wall time of the cell beyond its environment and the benchmarks themselves."""
        return max(0.0, self.cell_seconds - self.env_seconds - self.benchmark_seconds)


def ledger_path(cache: EnvCache, host: str, matrix: str, cell: str, sink: str = "") -> Path:
    where = hashlib.sha256(sink.encode()).hexdigest()[:10]
    return cache.root / "results" / host / matrix / where / f"{cell}.json"


def read_ledger(path: Path) -> dict[str, Any] | None:
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return (
        entry if isinstance(entry, dict) and entry.get("ledger_version") == LEDGER_VERSION else None
    )


def write_ledger(path: Path, outcome: CellOutcome) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"ledger_version": LEDGER_VERSION, **asdict(outcome)}, indent=1))
    os.replace(tmp, path)


def cuda_incompatibility(stack: SoftwareStack, measured_on_cuda: bool, has_gpu: bool) -> str | None:
    """Why a cell's CUDA runtime cannot run on this driver, or None. Only when the node has a GPU,
    the framework did not use it, and its runtime is newer than the CUDA version the driver
    supports (what ``cudaErrorInsufficientDriver`` means); newer minors under CUDA's minor-version
    compatibility that did run are not failures."""
    driver_api = stack.extra.get("cuda_driver_api")
    if not (has_gpu and stack.cuda and driver_api) or measured_on_cuda:
        return None

    def major_minor(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.split(".")[:2] if p.isdigit())

    if major_minor(stack.cuda) > major_minor(driver_api):
        return (
            f"CUDA runtime {stack.cuda} (bundled with {stack.framework} "
            f"{stack.framework_version}) is newer "
            f"than CUDA {driver_api}, the newest the driver {stack.driver or '?'} "
            "supports: the framework "
            "saw no GPU; upgrade the driver or pick a build for an older CUDA"
        )
    return None
