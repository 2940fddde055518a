"""Per-model CPU figures (``cpus.yaml``'s ``microarchitectures`` and ``models``), per socket, and
the peak figures derived from them, each saying how it was made.

No CPU vendor publishes a per-model peak in TFLOP/s or TOPS, so a model's peak at a precision is
derived: ``cores x base clock (GHz) x the core's documented operations per cycle / 1000``
(TFLOP/s, TOPS for int8). The base clock is used because it is published for every model, while
the all-core clock under AVX-512 or AMX load is not. Peak memory bandwidth is the vendor's
per-socket figure where published, else ``channels x MT/s x 8 bytes / 1000`` (GB/s). A figure with
an input missing stays empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from stack_advisor.catalog.entries import CPU_PRECISIONS, CpuCoreEntry, CpuModelEntry
from stack_advisor.catalog.resolve import load_entries, resolve_cpu
from stack_advisor.schema.errors import InvalidInput

PUBLISHED = "published"


@dataclass(frozen=True)
class CpuFigure:
    """One figure: its value, ``how`` it was made (``published``, or ``derived: <formula>``) and
    the sources of its inputs."""

    value: float
    how: str
    sources: tuple[str, ...]

    @property
    def derived(self) -> bool:
        return self.how != PUBLISHED


@dataclass(frozen=True)
class CpuFigures:
    """A CPU model's figures per socket: peak per precision (``CPU_PRECISIONS``) and memory
    bandwidth, with the entries they come from."""

    model: CpuModelEntry
    core: CpuCoreEntry
    peaks: dict[str, CpuFigure]
    bandwidth: CpuFigure | None

    def peak(self, precision: str) -> float | None:
        figure = self.peaks.get(precision)
        return figure.value if figure else None


@dataclass(frozen=True)
class CpuCatalog:
    cores: dict[str, CpuCoreEntry]
    models: dict[str, CpuModelEntry]


@lru_cache(maxsize=1)
def load_cpu_models() -> CpuCatalog:
    """The validated microarchitectures and models of ``cpus.yaml``.

    Raises:
        InvalidInput: a malformed entry, an id defined twice, a model naming an unknown core, or a
            model id the ``cpus`` families do not resolve to itself (it could never be looked up).
    """
    cores: dict[str, CpuCoreEntry] = {}
    for core in load_entries("cpus.yaml", "microarchitectures", CpuCoreEntry):
        if core.id in cores:
            raise InvalidInput(
                f"catalogue file cpus.yaml: microarchitecture {core.id!r} is defined twice"
            )
        cores[core.id] = core
    models: dict[str, CpuModelEntry] = {}
    for model in load_entries("cpus.yaml", "models", CpuModelEntry):
        if model.id in models:
            raise InvalidInput(f"catalogue file cpus.yaml: model {model.id!r} is defined twice")
        if model.core not in cores:
            raise InvalidInput(
                f"catalogue file cpus.yaml: model {model.id}: unknown microarchitecture "
                f"{model.core!r}; known: {', '.join(sorted(cores))}"
            )
        resolved = resolve_cpu(model.id)
        if not resolved.resolved or resolved.id != model.id:
            raise InvalidInput(
                f"catalogue file cpus.yaml: model {model.id!r} resolves to {resolved.id!r}: "
                "its id must be the name the cpus families give it"
            )
        models[model.id] = model
    return CpuCatalog(cores, models)


@lru_cache(maxsize=1024)
def cpu_figures(cpu_id: str) -> CpuFigures | None:
    """The figures of the CPU model ``cpu_id`` (a ``resolve_cpu`` id), None when the catalogue
    has no entry for that model (figures are never borrowed from another model)."""
    cat = load_cpu_models()
    model = cat.models.get(cpu_id)
    if model is None:
        return None
    core = cat.cores[model.core]
    peaks = {}
    if model.base_ghz is not None:
        for precision in CPU_PRECISIONS:
            ops = core.ops_per_cycle.get(precision)  # type: ignore[call-overload]
            if ops:
                peaks[precision] = CpuFigure(
                    model.cores * model.base_ghz * ops / 1000,
                    f"derived: {model.cores} cores x {model.base_ghz:g} GHz base x "
                    f"{ops} {precision} ops/cycle "
                    f"({core.id}) / 1000",
                    (model.source, core.source),
                )
    return CpuFigures(model, core, peaks, _bandwidth(model))


def _bandwidth(model: CpuModelEntry) -> CpuFigure | None:
    if model.memory_bw_gbs is not None and model.memory_bw_source:
        return CpuFigure(model.memory_bw_gbs, PUBLISHED, (model.memory_bw_source,))
    if model.memory_channels and model.memory_mts:
        return CpuFigure(
            model.memory_channels * model.memory_mts * 8 / 1000,
            f"derived: {model.memory_channels} channels x "
            f"{model.memory_type or 'DDR'}-{model.memory_mts} "
            "x 8 bytes / 1000",
            (model.source,),
        )
    return None
