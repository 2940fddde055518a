"""Input and output schemas of the API, kept apart (``...In`` is what clients send,
``...Public``/``...Page``/``...Report`` what they get back)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stack_advisor.advisor.proxy.model_query import ModelQuery
from stack_advisor.advisor.results import DEFAULT_TOP, MAX_TOP, PredictQuery
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.models import (
    EntityKind,
    Failure,
    IngestResult,
    ObservationFilter,
    ResultDocument,
    StoredObservation,
)
from stack_advisor.store.base import MAX_OFFSET, MAX_PAGE


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ObservationPublic(StoredObservation):
    """An observation as the API returns it: the measurement with its full context and key."""


class ObservationPage(_Out):
    items: list[ObservationPublic]
    limit: int
    offset: int
    next_offset: int | None = Field(
        description="offset of the next page; null when this was the last one or when it "
        f"would pass {MAX_OFFSET} (use next_after)"
    )
    next_after: str | None = Field(
        default=None,
        description="cursor of the next page (pass it as `after`); null when this was the last",
    )


class ObservationQuery(ObservationFilter):
    """Query parameters of GET /v1/observations: the filters plus pagination."""

    limit: int = Field(
        default=100,
        ge=1,
        le=MAX_PAGE,
        description="page size (the server's own cap is in this schema's maximum)",
    )
    offset: int = Field(
        default=0,
        ge=0,
        le=MAX_OFFSET,
        description=f"rows to skip, at most {MAX_OFFSET}; deeper pages use `after`",
    )
    after: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="keyset cursor: start after this key (`next_after` of the previous page)",
    )


class RevisionReport(_Out):
    """What a revision did: the observations received, and how many replaced a stored figure (a
    key the store does not hold, or holds at that figure, is left alone)."""

    received: int = Field(ge=0)
    revised: int = Field(ge=0)


class IngestReport(_Out):
    """What an ingest did. Sending the same documents again reports them as not new."""

    documents: int = Field(ge=0)
    observations_received: int
    observations_new: int
    failures_received: int
    failures_new: int

    @classmethod
    def of(cls, result: IngestResult, documents: int) -> IngestReport:
        return cls(documents=documents, **result.model_dump())


class EntityPage(_Out):
    kind: EntityKind
    items: list[dict[str, Any]]
    total: int
    limit: int
    offset: int


class SchemaInfo(_Out):
    schema_version: int | None
    code_schema_version: int


class Health(_Out):
    status: str


class Readiness(_Out):
    status: str = Field(description="ready | store_unavailable | schema_mismatch | tokens_unusable")
    store: str
    schema_version: int | None = None
    expected_schema_version: int
    message: str | None = None


class ErrorBody(_Out):
    """Every error response: a stable code, a message naming the field/value, optional details."""

    error: str = Field(examples=["invalid_input"])
    message: str
    details: Any = None


ResultDocumentsIn = ResultDocument | list[ResultDocument]
FailuresIn = Failure | list[Failure]


class RecommendationRequest(BaseModel):
    """What to recommend for, and how many answers. With ``cluster`` (an inventory recorded by
    ``advisor nodes sync``) or ``nodes`` (the items of ``kubectl get nodes -o json``) the answer
    ranks (node pool, stack) pairs of that cluster instead."""

    model_config = ConfigDict(extra="forbid")

    workload: Workload
    top: int = Field(default=DEFAULT_TOP, ge=1, le=MAX_TOP)
    cluster: str | None = Field(default=None, min_length=1, description="a recorded node inventory")
    nodes: list[dict[str, Any]] | None = Field(
        default=None,
        min_length=1,
        max_length=20_000,
        description="Node objects as the Kubernetes API returns them (the whole "
        "`kubectl get nodes -o json` NodeList is read as its items)",
    )
    pool_label: str | None = Field(default=None, description="the label naming node pools")
    what_if_driver: dict[str, str] = Field(
        default_factory=dict, description="pool name → driver version to re-rank as if installed"
    )
    gpus: int | None = Field(default=None, ge=1, description="GPUs (or MIG slices) the job needs")
    nodes_count: int | None = Field(
        default=None, ge=1, description="nodes the job spans (a gang when > 1)"
    )
    image: str | None = Field(
        default=None, description="image for stacks the knowledge base records none for"
    )
    per_pool: int = Field(default=3, ge=1, le=20)

    @field_validator("nodes", mode="before")
    @classmethod
    def _node_list(cls, value: Any) -> Any:
        """``kubectl get nodes -o json`` as it prints it (a NodeList or List with ``items``),
        or one Node, is read as the list of its nodes."""
        if isinstance(value, dict):
            if value.get("kind") == "Node":
                return [value]
            if "items" in value:
                return value["items"]
            raise ValueError(
                "expected Node objects: a list, or `kubectl get nodes -o json` output (an "
                f"object with items); got an object with keys {sorted(value)[:8]}"
            )
        return value

    @model_validator(mode="after")
    def _one_source(self) -> RecommendationRequest:
        if self.cluster and self.nodes:
            raise ValueError("give cluster or nodes, not both")
        cluster_only = [
            k
            for k in ("pool_label", "what_if_driver", "gpus", "nodes_count", "image")
            if getattr(self, k)
        ]
        if cluster_only and not (self.cluster or self.nodes):
            raise ValueError(f"{', '.join(cluster_only)} need cluster or nodes")
        return self


MAX_PREDICT_QUERIES = 10_000


class PredictionRequest(BaseModel):
    """The documented body of ``POST /v1/predictions`` (the OpenAPI schema): configurations,
    and described models (a query with a ``model``: answered by proxy, docs/proxy.md)."""

    model_config = ConfigDict(extra="forbid")

    queries: list[PredictQuery | ModelQuery] = Field(min_length=1, max_length=MAX_PREDICT_QUERIES)


class PredictionBatch(BaseModel):
    """``POST /v1/predictions`` as parsed: the envelope only. Each query is judged on its own by
    the one ``predict`` the CLI calls too (``advisor.verbs.predict``): a bad field (a placement
    ``vgp``, a count ``"eight"``) refuses that query, naming the field, the value and the
    closest valid ones, and the others are answered. A query that is not an object, or lacks a
    required field, leaves no query to answer: 422 naming ``queries.N.field``."""

    model_config = ConfigDict(extra="forbid")

    queries: list[Any] = Field(min_length=1, max_length=MAX_PREDICT_QUERIES)
