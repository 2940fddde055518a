"""Public accelerator specifications and the price table, loaded from YAML in the package.

The spec table (``advisor/data/accelerators.yaml``) maps the many names the knowledge base uses
for one device (``NVIDIA A100-SXM-80GB``, ``A100-SXM4-80GB CTS``, MIG slices ...) to one entry
with its datasheet figures and source URL.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graph_schema.errors import InvalidInput
from graph_schema.models import PlacementKind
from graph_schema.store import validation_message

SPEC_FIELDS = ("fp32_tflops", "fp16_tflops", "int8_tops", "memory_gb", "memory_bw_gbs")
_MIG = re.compile(r"\((\d+)x(\d+)g\.(\d+)gb mig\)", re.IGNORECASE)


class AcceleratorSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    vendor: str
    match: list[str] = Field(min_length=1)
    gfd_product: str | None = None
    fp32_tflops: float | None = Field(default=None, gt=0)
    fp16_tflops: float | None = Field(default=None, gt=0)
    int8_tops: float | None = Field(default=None, gt=0)
    memory_gb: float | None = Field(default=None, gt=0)
    memory_bw_gbs: float | None = Field(default=None, gt=0)
    mig_slices: int | None = Field(default=None, ge=1)
    note: str | None = None
    source: str = Field(pattern=r"^https://")


class SpecTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    accelerators: list[AcceleratorSpec]


class ResolvedAccelerator(BaseModel):
    """A KB accelerator name resolved against the spec table (MIG share applied)."""

    name: str
    spec: AcceleratorSpec | None
    mig_fraction: float = 1.0
    is_cpu: bool = False

    def figure(self, field: str) -> float | None:
        if self.spec is None:
            return None
        value = getattr(self.spec, field)
        return None if value is None else float(value) * self.mig_fraction


def _load_yaml(path: Path | None, package_file: str) -> Any:
    try:
        if path is None:
            text = (resources.files("advisor") / "data" / package_file).read_text(encoding="utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        return yaml.safe_load(text)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path or package_file}: {exc}") from None
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{path or package_file} is not valid YAML: {exc}") from None


@lru_cache(maxsize=4)
def load_specs(path: Path | None = None) -> SpecTable:
    """Raises InvalidInput naming the bad entry's field."""
    try:
        table = SpecTable.model_validate(_load_yaml(path, "accelerators.yaml"))
    except ValidationError as exc:
        raise InvalidInput(f"accelerator spec table: {validation_message(exc)}") from None
    for spec in table.accelerators:
        for pattern in spec.match:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise InvalidInput(f"accelerator spec {spec.id}: bad match pattern {pattern!r}: {exc}") from None
    return table


@lru_cache(maxsize=4096)
def resolve_accelerator(name: str) -> ResolvedAccelerator:
    """The spec entry a KB accelerator name stands for (None when the table has none)."""
    lowered = name.lower()
    if lowered.startswith("cpu ") or lowered == "cpu":
        return ResolvedAccelerator(name=name, spec=None, is_cpu=True)
    mig = _MIG.search(name)
    base = _MIG.sub("", lowered).strip()
    base = re.sub(r"^(nvidia|qualcomm)\s+", "", base)
    base = re.sub(r"\s+cts$", "", base)
    for spec in load_specs().accelerators:
        if any(re.search(p, base) for p in spec.match):
            fraction = 1.0
            if mig and spec.mig_slices:
                fraction = min(1.0, int(mig.group(2)) / spec.mig_slices)
            return ResolvedAccelerator(name=name, spec=spec, mig_fraction=fraction)
    return ResolvedAccelerator(name=name, spec=None)


def is_mig(name: str) -> bool:
    return bool(_MIG.search(name))


def mig_profile(name: str) -> tuple[int, str] | None:
    """(instances per GPU, profile) of a MIG accelerator name: ``A100 (7x1g.10gb MIG)`` →
    ``(7, "1g.10gb")``; None when the name is not a MIG slice."""
    found = _MIG.search(name)
    if found is None:
        return None
    return int(found.group(1)), f"{found.group(2)}g.{found.group(3)}gb"


def accelerator_matches(query: str, name: str) -> bool:
    """Whether a user's accelerator text selects a knowledge-base accelerator name: a
    case-insensitive substring of the name or of its canonical spec id, or the same spec entry.
    The one matching rule for ``recommend``, ``compare`` and ``plot`` (the catalogue replaces it)."""
    wanted = query.strip().lower()
    if not wanted:
        return False
    if wanted in name.lower():
        return True
    spec = resolve_accelerator(name).spec
    if spec is None:
        return False
    if wanted in spec.id.lower():
        return True
    asked = resolve_accelerator(query).spec
    return asked is not None and asked.id == spec.id and is_mig(query) == is_mig(name)


# ---- prices --------------------------------------------------------------------------------


class PriceTable(BaseModel):
    """Cost per accelerator-hour by spec id (or ``cpu``/``default``) and placement."""

    model_config = ConfigDict(extra="forbid")

    version: int = 1
    currency: str = "USD"
    note: str | None = None
    prices: dict[str, dict[str, float]]

    def price(self, accelerator: str, placement: PlacementKind) -> tuple[float, str]:
        """(price per accelerator-hour, which table row gave it)."""
        resolved = resolve_accelerator(accelerator)
        key = "cpu" if resolved.is_cpu else (resolved.spec.id if resolved.spec else None)
        row_key = key if key in self.prices else "default"
        row = self.prices.get(row_key) or {}
        for place in (placement.value, "default"):
            if place in row:
                return float(row[place]), f"{row_key}/{place}"
        fallback = self.prices.get("default", {}).get("default")
        if fallback is None:
            raise InvalidInput(f"price table has no price for {accelerator!r} and no default")
        return float(fallback), "default/default"


def load_prices(source: str | Path | dict[str, Any] | PriceTable | None = None) -> PriceTable:
    """The packaged price table, or one given as a path, a dict or a ``PriceTable``.

    Raises:
        InvalidInput: unreadable or malformed (the message names the field).
    """
    if isinstance(source, PriceTable):
        return source
    data = source if isinstance(source, dict) else _load_yaml(
        Path(source) if source is not None else None, "prices.yaml"
    )
    try:
        table = PriceTable.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(f"price table: {validation_message(exc)}") from None
    for acc, row in table.prices.items():
        for place, value in row.items():
            if place != "default" and place not in {p.value for p in PlacementKind}:
                raise InvalidInput(f"price table: prices.{acc}.{place}: unknown placement")
            if value <= 0:
                raise InvalidInput(f"price table: prices.{acc}.{place}: must be > 0 (got {value})")
    return table
