"""The domain model, defined once.

Collectors build these, stores persist and return them, the advisor reasons over them and the
API serialises them. Every identity (``stack_id``, ``benchmark_id``, ``observation_key`` ...) is
derived from content, so the same measurement sent twice has the same key and is stored once.

The parts live in ``base`` (field types, identities, the base class), ``parts`` (what a figure
was measured on), ``records`` (observations, failures, runs, batches) and ``queries`` (filters
and statistics); every name is importable from here.
"""

from __future__ import annotations

from stack_advisor.schema.models.base import (
    FUTURE_TOLERANCE,
    INT64_MAX,
    RESULT_DOCUMENT_VERSION,
    UNKNOWN,
    DomainModel,
    Flag,
    Integer,
    Name,
    Number,
    OptInteger,
    OptName,
    OptNumber,
    OptStamp,
    PlacementKind,
    SourceKind,
    Stamp,
    checked_time,
    digest,
    observation_key_of,
    utcnow,
)
from stack_advisor.schema.models.parts import (
    NGC_FRAMEWORKS,
    Accelerator,
    Benchmark,
    Host,
    Placement,
    Provenance,
    SoftwareStack,
    Submission,
)
from stack_advisor.schema.models.queries import (
    EntityKind,
    ObservationFilter,
    StoredObservation,
    StoreStats,
)
from stack_advisor.schema.models.records import (
    ENVIRONMENT_STAGE,
    HARNESS_ERROR_CLASSES,
    HARNESS_STAGE,
    OUTCOME_ERROR_PREFIX,
    Failure,
    FailureClass,
    FailureIn,
    IngestBatch,
    IngestResult,
    Measurement,
    Observation,
    ResultDocument,
    Run,
    failure_class,
)

__all__ = [
    "ENVIRONMENT_STAGE",
    "FUTURE_TOLERANCE",
    "HARNESS_ERROR_CLASSES",
    "HARNESS_STAGE",
    "INT64_MAX",
    "NGC_FRAMEWORKS",
    "OUTCOME_ERROR_PREFIX",
    "RESULT_DOCUMENT_VERSION",
    "UNKNOWN",
    "Accelerator",
    "Benchmark",
    "DomainModel",
    "EntityKind",
    "Failure",
    "FailureClass",
    "FailureIn",
    "Flag",
    "Host",
    "IngestBatch",
    "IngestResult",
    "Integer",
    "Measurement",
    "Name",
    "Number",
    "Observation",
    "ObservationFilter",
    "OptInteger",
    "OptName",
    "OptNumber",
    "OptStamp",
    "Placement",
    "PlacementKind",
    "Provenance",
    "ResultDocument",
    "Run",
    "SoftwareStack",
    "SourceKind",
    "Stamp",
    "StoreStats",
    "StoredObservation",
    "Submission",
    "checked_time",
    "digest",
    "failure_class",
    "observation_key_of",
    "utcnow",
]
