"""How each vendor's accelerators appear to Kubernetes (``device_plugins.yaml``): the device
plugin's extended resource, the node labels its feature discovery writes, its DRA driver and
attributes, and the per-part facts (a labeller's product value, a multi-node NVLink domain).

The one place placement snippets read vendor names from; validated once at load.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from stack_advisor.catalog.entries import AcceleratorEntry
from stack_advisor.schema.errors import InvalidInput

_FILE = "device_plugins.yaml"
_SOURCE = r"^https://\S+$"
_LABEL_KEY = r"^([a-z0-9.-]+/)?[A-Za-z0-9._-]+$"


class DevicePlugin(BaseModel):
    """One vendor's (or one vendor generation's) Kubernetes facts."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    id: str = Field(min_length=1)
    vendor: str = Field(min_length=1)
    generations: list[str] = Field(default_factory=list)
    resource: str = Field(pattern=_LABEL_KEY)
    pci_vendor: str = Field(pattern=r"^[0-9a-f]{4}$")
    product_label: str | None = Field(default=None, pattern=_LABEL_KEY)
    count_label: str | None = Field(default=None, pattern=_LABEL_KEY)
    memory_label: str | None = Field(default=None, pattern=_LABEL_KEY)
    family_label: str | None = Field(default=None, pattern=_LABEL_KEY)
    family_value: str | None = None
    taint_key: str | None = Field(default=None, pattern=_LABEL_KEY)
    workload_config_label: str | None = Field(default=None, pattern=_LABEL_KEY)
    clique_label: str | None = Field(default=None, pattern=_LABEL_KEY)
    dra_driver: str = Field(min_length=1)
    dra_product_attribute: str | None = None
    dra_memory_capacity: str | None = None
    dra_compute_capability_attribute: str | None = None
    source: str = Field(pattern=_SOURCE)
    dra_source: str = Field(pattern=_SOURCE)

    @model_validator(mode="after")
    def _family_pair(self) -> DevicePlugin:
        if (self.family_label is None) != (self.family_value is None):
            raise ValueError("family_label and family_value come together")
        return self

    @property
    def nfd_label(self) -> str:
        """NFD's PCI vendor label (with ``deviceLabelFields: [vendor]``, as the operators set)."""
        return f"feature.node.kubernetes.io/pci-{self.pci_vendor}.present"


class PartFacts(BaseModel):
    """What one accelerator (a catalogue id) adds to its vendor's facts."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    accelerator: str = Field(min_length=1)
    product_label_value: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._-]{1,63}$")
    nvlink_domain_gpus: int | None = Field(default=None, ge=2)
    source: str = Field(pattern=_SOURCE)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    version: int
    plugins: list[DevicePlugin]
    parts: list[PartFacts] = Field(default_factory=list)
    compute_capabilities: dict[str, str | dict[str, str]]


@dataclass(frozen=True)
class DeviceFacts:
    """Everything a snippet needs about one part: its plugin, its product label's value (None:
    no source gives it), its CUDA compute capability, its multi-node NVLink domain size."""

    plugin: DevicePlugin
    product_value: str | None
    compute_capability: str | None
    nvlink_domain_gpus: int | None
    nvml_name: str | None
    memory_gb: float | None


@dataclass(frozen=True)
class _Facts:
    plugins: tuple[DevicePlugin, ...]
    parts: dict[str, PartFacts]
    capabilities: dict[str, str]


@lru_cache(maxsize=1)
def _facts() -> _Facts:
    try:
        text = (resources.files("stack_advisor.catalog") / _FILE).read_text(encoding="utf-8")
        loaded = _File.model_validate(yaml.safe_load(text))
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInput(f"catalogue file {_FILE}: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidInput(f"catalogue file {_FILE}: {where}: {first['msg']}") from None
    caps = loaded.compute_capabilities.get("generations")
    if not isinstance(caps, dict) or not isinstance(loaded.compute_capabilities.get("source"), str):
        raise InvalidInput(
            f"catalogue file {_FILE}: compute_capabilities needs generations and source"
        )
    return _Facts(tuple(loaded.plugins), {p.accelerator: p for p in loaded.parts}, dict(caps))


def plugins() -> tuple[DevicePlugin, ...]:
    """Every vendor entry, in file order."""
    return _facts().plugins


def plugin_for(vendor: str, generation: str) -> DevicePlugin | None:
    """The entry for a vendor's generation: the one naming the generation, else the vendor's
    catch-all (no generations); None when the catalogue knows no device plugin for it."""
    entries = [p for p in _facts().plugins if p.vendor == vendor]
    named = [p for p in entries if generation in p.generations]
    if named:
        return named[0]
    claimed = {g for p in entries for g in p.generations}
    if generation in claimed:  # pragma: no cover - named above
        return None
    general = [p for p in entries if not p.generations]
    return general[0] if general else None


def device_facts(entry: AcceleratorEntry) -> DeviceFacts | None:
    """The Kubernetes facts of a catalogue accelerator, or None for a vendor without a device
    plugin in the catalogue (the snippet then says so)."""
    plugin = plugin_for(entry.vendor, entry.generation)
    if plugin is None:
        return None
    facts = _facts()
    part = facts.parts.get(entry.id)
    product = entry.gfd_product if entry.vendor == "nvidia" else None
    if part is not None and part.product_label_value:
        product = part.product_label_value
    return DeviceFacts(
        plugin=plugin,
        product_value=product if plugin.product_label else None,
        compute_capability=facts.capabilities.get(entry.generation)
        if entry.vendor == "nvidia"
        else None,
        nvlink_domain_gpus=part.nvlink_domain_gpus if part else None,
        nvml_name=entry.nvml_names[0] if entry.nvml_names else None,
        memory_gb=entry.memory_gb,
    )
