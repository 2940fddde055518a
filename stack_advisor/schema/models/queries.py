"""What a store is asked and answers besides observations: filters, stored rows, entity kinds
and statistics."""

from __future__ import annotations

from enum import Enum

from pydantic import Field, model_validator

from stack_advisor.schema.models.base import (
    INT64_MAX,
    DomainModel,
    PlacementKind,
)
from stack_advisor.schema.models.records import Observation


class ObservationFilter(DomainModel):
    """Filters for querying observations; ``None`` means any. Strings match exactly."""

    stack_id: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    cuda: str | None = None
    driver: str | None = None
    accelerator: str | None = None
    placement: PlacementKind | None = None
    benchmark_id: str | None = None
    benchmark_family: str | None = None
    benchmark_name: str | None = None
    metric: str | None = None
    source: str | None = None
    host: str | None = None
    run_id: str | None = None
    since_generation: int | None = Field(
        default=None,
        ge=0,
        le=INT64_MAX,
        description="only observations written by a batch after this data generation "
        "(``StoreStats.generation``); observations written before schema v6 carry none",
    )
    until_generation: int | None = Field(
        default=None,
        ge=0,
        le=INT64_MAX,
        description="with since_generation: only up to this generation, inclusive (a cache "
        "labelled with it gets exactly that generation's data)",
    )

    @model_validator(mode="after")
    def _generation_range(self) -> ObservationFilter:
        if self.until_generation is not None and self.since_generation is None:
            raise ValueError("until_generation needs since_generation")
        until, since = self.until_generation, self.since_generation
        if until is not None and since is not None and until < since:
            raise ValueError(f"until_generation ({until}) is below since_generation ({since})")
        return self


class StoredObservation(Observation):
    """An observation as a store returns it, with its key and the data generation of the batch
    that wrote it (None: written before schema v6)."""

    key: str
    generation: int | None = None


class EntityKind(str, Enum):
    STACKS = "stacks"
    ACCELERATORS = "accelerators"
    PLACEMENTS = "placements"
    BENCHMARKS = "benchmarks"
    HOSTS = "hosts"
    RUNS = "runs"
    FAILURES = "failures"
    SUBMISSIONS = "submissions"


class StoreStats(DomainModel):
    schema_version: int | None
    counts: dict[str, int]
    observations_by_source: dict[str, int]
    generation: int = Field(
        default=0, description="changes whenever the data changes; caches key on it"
    )
