"""Accelerator figures for the advisor (from the catalogue) and the price table.

Names resolve through ``stack_advisor.catalog`` (one resolver for every layer); this module keeps
the advisor's view of a resolved accelerator: its catalogue entry, the share of the board a MIG
slice or vGPU profile has, and datasheet figures scaled to that share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from stack_advisor.catalog import AcceleratorEntry, AcceleratorMatch, load_catalog
from stack_advisor.catalog import resolve_accelerator as resolve_name
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import PlacementKind
from stack_advisor.store.base import validation_message

SPEC_FIELDS = ("fp32_tflops", "fp16_tflops", "int8_tops", "memory_gb", "memory_bw_gbs")
# the advisor's feature names → catalogue fields (fp16 is the FP16/BF16 tensor figure)
_FIGURES: dict[str, tuple[str, ...]] = {
    "fp32_tflops": ("fp32",),
    "fp16_tflops": ("fp16", "bf16"),
    "int8_tops": ("int8",),
    "memory_gb": ("memory_gb",),
    "memory_bw_gbs": ("memory_bw_gbs",),
}


@dataclass(frozen=True)
class ResolvedAccelerator:
    """A KB accelerator name resolved through the catalogue (MIG/vGPU share applied)."""

    match: AcceleratorMatch

    @property
    def name(self) -> str:
        return self.match.raw

    @property
    def spec(self) -> AcceleratorEntry | None:
        return self.match.entry

    @property
    def key(self) -> str:
        """The canonical name the knowledge base stores."""
        return self.match.key

    @property
    def resolved(self) -> bool:
        return self.match.resolved

    @property
    def mig_fraction(self) -> float:
        return self.match.fraction

    @property
    def is_cpu(self) -> bool:
        return self.match.kind in ("cpu", "none")

    @property
    def min_driver(self) -> str | None:
        """The oldest NVIDIA driver the accelerator's generation runs on (None: no limit known)."""
        return load_catalog().min_driver(self.spec.id) if self.spec else None

    def figure(self, field: str) -> float | None:
        for name in _FIGURES.get(field, (field,)):
            value = self.match.figure(name)
            if value is not None:
                return value
        return None


@lru_cache(maxsize=8192)
def resolve_accelerator(name: str) -> ResolvedAccelerator:
    """The catalogue entry a KB accelerator name stands for (``spec`` None when unresolved)."""
    return ResolvedAccelerator(resolve_name(name))


def is_mig(name: str) -> bool:
    return "MIG" in (resolve_name(name).partition or "")


def mig_profile(name: str) -> tuple[int, str] | None:
    """(instances per GPU, profile) of a MIG slice name: ``A100-SXM4-80GB (7x1g.10gb MIG)`` →
    ``(7, "1g.10gb")``; None when the name is not a MIG slice."""
    partition = resolve_name(name).partition or ""
    found = re.fullmatch(r"(\d+)x(\d+g\.\d+gb) MIG", partition)
    return (int(found.group(1)), found.group(2)) if found else None


def _load_yaml(path: Path | None, package_file: str) -> Any:
    from importlib import resources

    try:
        if path is None:
            text = (resources.files("stack_advisor.advisor") / "data" / package_file).read_text(
                encoding="utf-8"
            )
        else:
            text = Path(path).read_text(encoding="utf-8")
        return yaml.load(
            text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )  # libyaml: 10x faster
    except OSError as exc:
        raise InvalidInput(f"cannot read {path or package_file}: {exc}") from None
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{path or package_file} is not valid YAML: {exc}") from None


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
    data = (
        source
        if isinstance(source, dict)
        else _load_yaml(Path(source) if source is not None else None, "prices.yaml")
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
