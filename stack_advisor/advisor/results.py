"""What the advisor answers: pydantic models that serialise cleanly to JSON (snake_case keys).

Every value says whether it was observed (aggregated from the knowledge base) or predicted (by
the model trained on it); the two are never mixed silently.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from stack_advisor.catalog import metric_unit
from stack_advisor.schema.checks import MAX_NAME, MAX_TEXT, bounded_request, not_a_bool
from stack_advisor.schema.models import PlacementKind

# a query's fields that are names (each at most schema.checks.MAX_NAME characters)
QUERY_NAMES = ("accelerator", "benchmark", "family", "scenario", "metric", "as_of", "placement")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Basis(str, Enum):
    """How a number was made: this exact configuration measured; the same accelerator measured
    with another stack, count or placement; another accelerator scaled by public specs; or
    refused (with the reason)."""

    OBSERVED = "observed"
    INTERPOLATED = "interpolated"
    TRANSFERRED = "transferred"
    PROXY = "proxy"  # a model without results, from the nearest published models (advisor.proxy)
    UNSUPPORTED = "unsupported"


# how much evidence a basis rests on, most first (a ranking's tie-break, a bound's standing)
BASIS_ORDER = {Basis.OBSERVED: 0, Basis.INTERPOLATED: 1, Basis.TRANSFERRED: 2, Basis.PROXY: 3}


def weaker(basis: Basis, than: Basis) -> bool:
    """Whether an estimate of ``basis`` rests on less evidence than one of ``than``."""
    return BASIS_ORDER.get(basis, len(BASIS_ORDER)) > BASIS_ORDER.get(than, len(BASIS_ORDER))


class Interval(_Out):
    low: float
    high: float
    level: float = Field(default=0.8, description="nominal coverage (p10..p90 → 0.8)")


class Evidence(_Out):
    count: int = Field(description="observations behind the value (0 when predicted)")
    sources: list[str] = Field(default_factory=list)
    rounds: list[str] = Field(default_factory=list, description="MLPerf rounds, when any")
    submitters: list[str] = Field(default_factory=list)
    last_seen: datetime | None = None
    measured_on: list[str] = Field(
        default_factory=list,
        description="nodes where stack-advisor's own collectors (a sweep, `advisor collect`) "
        "measured this row, as their fingerprints name them",
    )


class Factor(_Out):
    """Something that moved the value: a feature and how much it contributed (log-space share)."""

    name: str
    value: str
    effect: float = Field(
        description="approximate multiplicative effect on the metric (1.0 = none)"
    )


class PlacementOverhead(_Out):
    accelerator: str
    placement: PlacementKind
    ratio: float = Field(
        description="speed relative to bare metal (throughput ratio; 1/latency ratio)"
    )
    interval: Interval | None = None
    pairs: int
    benchmarks: list[str] = Field(default_factory=list)
    text: str


class Candidate(_Out):
    stack_id: str
    stack: dict[str, Any] = Field(
        description="the software stack's fields (driver, cuda, framework...)"
    )
    stack_label: str
    accelerator: str = Field(description="canonical accelerator")
    accelerator_count: int = Field(
        description="accelerators the snippet asks for: yours when given, "
        "else one node's worth as observed"
    )
    placement: PlacementKind
    published_names: list[str] = Field(
        default_factory=list, description="accelerator names as published"
    )


class ExcludedCandidate(_Out):
    accelerator: str
    placement: PlacementKind
    stack_label: str | None = None
    reason: str


class Recommendation(_Out):
    rank: int
    candidate: Candidate
    metric: str
    unit: str | None
    higher_is_better: bool
    basis: Basis
    value: float = Field(description="expected metric value (per accelerator when per_accelerator)")
    interval: Interval
    per_accelerator: bool
    score: float = Field(
        description="the ranking key for the objective (higher is better): the value "
        "for observed rows, the pessimistic end of the interval for others"
    )
    score_unit: str
    confidence: float = Field(
        description="low/high of the 80% interval (1 = exact, towards 0 = uninformative)"
    )
    observed_range: Interval | None = Field(
        default=None,
        description="lowest..highest observation of this row, same units as value (level 1.0): "
        "a throughput measured at other counts (observed_counts) is its per-accelerator figure "
        "times the row's count, as the value is",
    )
    observed_counts: list[int] = Field(
        default_factory=list, description="accelerator counts observed"
    )
    accelerator_hours: Interval | None = Field(
        default=None,
        description="for a time to train: the accelerator-hours it costs at the candidate's count "
        "(minutes x count / 60; the interval's ends likewise)",
    )
    evidence: Evidence
    basis_note: str | None = Field(
        default=None,
        description="'measured on this node' for an observed row our collectors measured on the "
        "node that answers (NODE_NAME, else its host name: the CLI's own node with a "
        "local store, the API "
        "server's node); 'measured on node X' for one measured on another node",
    )
    factors: list[Factor] = Field(default_factory=list)
    round: str | None = Field(
        default=None,
        description="the benchmark round the figure is for: the round asked (its 'as of'), or "
        "the round a stack's own result was measured in, answered as measured",
    )
    placement_overhead: PlacementOverhead | None = None
    more_results: int = Field(
        default=0,
        description="ranked rows of the same accelerator, count, placement and stack family "
        "folded into this one (workload.all: every row)",
    )
    warnings: list[str] = Field(default_factory=list)
    snippet_yaml: str | None = Field(
        default=None, description="the Kubernetes Pod as YAML; None when no image is known"
    )
    snippet: dict[str, Any] | None = None
    snippet_missing: str | None = Field(
        default=None,
        description="why there is no snippet (no container image known: pass one as "
        "workload.image)",
    )
    system: dict[str, str] = Field(
        default_factory=dict,
        description="as published for the observed systems: nodes, accelerators_per_node, "
        "interconnect; "
        "limit_N: a stated latency limit this candidate was checked against",
    )


# our collectors' observations (stack_advisor.schema.models.Provenance)
COLLECTOR_SOURCE = "stack-advisor-collector"


NODE_NAME_ENV = "NODE_NAME"


def this_node(environ: Mapping[str, str]) -> str:
    """The name our collectors record as a node's host (the fingerprint's rule): ``NODE_NAME``
    (Kubernetes' downward API) in ``environ``, else the host name. The edges (the CLI, the API's
    start-up) call it with ``os.environ`` and pass the name in (``Advisor(node=...)``)."""
    return environ.get(NODE_NAME_ENV) or socket.gethostname()


def basis_note(basis: Basis, measured_on: list[str], here: str | None) -> str | None:
    """``Recommendation.basis_note`` for a row with this basis and evidence, answered on node
    ``here`` (None: not known)."""
    if basis is not Basis.OBSERVED or not measured_on:
        return None
    if here in measured_on:
        return "measured on this node"
    return f"measured on node{'s' if len(measured_on) > 1 else ''} {', '.join(measured_on)}"


class RecommendationSet(_Out):
    workload: dict[str, Any]
    metric: str
    objective: str
    generation: int
    candidates_considered: int
    excluded: dict[str, int] = Field(
        default_factory=dict, description="reason → candidates dropped"
    )
    excluded_candidates: list[ExcludedCandidate] = Field(
        default_factory=list, description="the candidates dropped, with the reason (the first 100)"
    )
    recommendations: list[Recommendation]
    notes: list[str] = Field(default_factory=list)
    elapsed_ms: float


class PredictQuery(_Out):
    """One configuration to predict: accelerator, count, placement, components, benchmark,
    metric."""

    @model_validator(mode="before")
    @classmethod
    def _bounded_names(cls, data: Any) -> Any:
        """At most 200 fields, each name within bounds (a field's value: ``_bounded``)."""
        if isinstance(data, dict):
            bounded_request(list(data), ())
        return data

    @field_validator("*", mode="before")
    @classmethod
    def _bounded(cls, value: Any, info: ValidationInfo) -> Any:
        """Names of at most 256 characters, other text of at most 4096, at most 200 components
        or parameters (``schema.checks.bounded_request``), before anything reads them; the
        error names the field, so a batch refuses that query alone."""
        bounded_request(value, QUERY_NAMES, info.field_name or "")
        return value

    accelerator: str = Field(min_length=1, max_length=MAX_NAME)
    accelerator_count: int = Field(default=1, ge=1)
    placement: PlacementKind = PlacementKind.BARE_METAL
    components: dict[str, str] = Field(
        default_factory=dict,
        description="component → version: driver, cuda, cudnn, tensorrt, and the framework by name",
    )

    @field_validator("accelerator_count", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        return not_a_bool(value)

    @field_validator("placement", mode="before")
    @classmethod
    def _placement_any_case(cls, value: Any) -> Any:
        """``VGPU``, ``Bare-Metal``: a placement in any case, as scenarios and names are."""
        return value.strip().lower() if isinstance(value, str) else value

    framework: str | None = Field(default=None, max_length=MAX_TEXT)
    family: str = Field(default="mlperf-inference", max_length=MAX_NAME)
    benchmark: str = Field(min_length=1, max_length=MAX_NAME)
    scenario: str | None = Field(default=None, max_length=MAX_NAME)
    parameters: dict[str, Any] = Field(default_factory=dict)
    metric: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_NAME,
        description="the metric to answer in; none: the slice's throughput (its only metric; "
        "MLPerf Training: time to train), and the answer says so",
    )
    as_of: str = Field(
        default="today",
        max_length=MAX_NAME,
        description="the round the answer is for: 'today' (the newest round published by today's "
        "date: a forecast where the knowledge base lacks it), 'now' (the newest round holding the "
        "benchmark), 'next' (a forecast one round ahead), a date such as 2026-05-01 or a round "
        "name such as 'v6.0'",
    )


DEFAULT_TOP = 5  # recommendations a ranking shows unless asked
MAX_TOP = 100  # the most one ranking shows (the API's bound; the CLI's --all without --top)


class Prediction(_Out):
    query: PredictQuery
    value: float | None = Field(description="None when unsupported (see reason)")
    interval: Interval | None
    observed: bool
    basis: Basis
    reason: str | None = Field(
        default=None, description="why the query was refused (basis unsupported)"
    )
    confidence: float = Field(default=0.0, description="low/high of the 80% interval")
    accelerator: str | None = Field(
        default=None, description="the canonical accelerator the query resolved to"
    )
    references: list[str] = Field(
        default_factory=list, description="accelerators a transfer scaled from"
    )
    factors: list[Factor] = Field(default_factory=list)
    evidence: Evidence
    model_generation: int | None = None
    warnings: list[str] = Field(default_factory=list)
    round: str | None = Field(
        default=None, description="the benchmark round the figure is for (its 'as of')"
    )
    unit: str | None = Field(
        default=None,
        description="the value's unit (the catalogue's for the metric; None when refused or "
        "unknown): the whole system's figure at the query's accelerator count, as MLPerf "
        "publishes it (a throughput is the system's total, not per accelerator)",
    )

    @model_validator(mode="after")
    def _unit_of_the_metric(self) -> Prediction:
        if self.unit is None and self.value is not None and self.query.metric:
            self.unit = metric_unit(self.query.metric)
        return self

    @field_serializer("query", mode="wrap")
    def _query_as_asked(self, query: PredictQuery, handler: SerializerFunctionWrapHandler) -> Any:
        """A refused query echoes what was asked (in catalogue names) and nothing else: the
        defaults it was never answered with (a count of 1, bare metal, today's round) are not
        shown as if the user had given them; the reason says what was wrong."""
        out = handler(query)
        if self.basis is Basis.UNSUPPORTED and isinstance(out, dict):
            return {k: v for k, v in out.items() if k in query.model_fields_set}
        return out


class Comparison(_Out):
    accelerator: str | None
    benchmark: str
    metric: str
    stack_a: str
    stack_b: str
    pairs: int
    ratio: float | None = Field(description="median B/A speed ratio over paired results")
    interval: Interval | None = None
    p_value: float | None = Field(default=None, description="Mann-Whitney U, two-sided")
    a_count: int
    b_count: int
    a_median: float | None = Field(
        description="median of A's results: per accelerator for a throughput (each system's "
        "figure over its accelerator count, so systems of every size compare), as measured for "
        "other metrics (a latency, a time to train); on the accelerators both A and B ran, "
        "where there are any"
    )
    b_median: float | None = Field(description="B's, as a_median")
    verdict: str
    stack_effect: str | None = Field(
        default=None,
        description="what upgrading A's framework version to B's was worth across rounds, from "
        "pairs "
        "(stack_advisor.advisor.estimate.stack_effect); None where A and B are not one "
        "framework at two versions",
    )


class Regression(_Out):
    component: str
    older: str
    newer: str
    benchmark: str
    scenario: str | None
    metric: str
    accelerator: str
    older_median: float
    newer_median: float
    change: float = Field(description="newer/older speed ratio (<1 = slower)")
    older_count: int
    newer_count: int
    p_value: float
    submitter: str | None = Field(
        default=None,
        description="whose results both versions are (a version is compared "
        "within one submitter's systems)",
    )


class EvaluationSlice(_Out):
    predictions: int = Field(description="held-out results answered with a number")
    refused: int = Field(default=0, description="held-out results refused (basis unsupported)")
    mape: float | None = Field(description="mean absolute percentage error, percent")
    median_ape: float | None = None
    interval_coverage: float | None = Field(
        default=None, description="share inside the 80% interval"
    )
    worst_ratio: float | None = Field(
        default=None,
        description="the farthest answer off: max of predicted/actual and actual/predicted",
    )
    off_3x: int = Field(default=0, description="answers off by 3x or more")
    groups: int = Field(
        default=0, description="groups (benchmark, scenario, metric) ranked for regret"
    )
    top1_regret: float | None = Field(
        default=None,
        description="mean top-1 regret, percent: the share of the best result's per-accelerator "
        "speed lost by picking the predicted best",
    )
    lookup_rows: int = Field(default=0, description="rows the simple lookup covers")
    mape_on_lookup_rows: float | None = None
    median_ape_on_lookup_rows: float | None = None
    top1_regret_on_lookup_rows: float | None = None
    lookup_mape: float | None = None
    lookup_median_ape: float | None = None
    lookup_top1_regret: float | None = None


class EvaluationReport(_Out):
    protocol: str
    description: str
    train_count: int
    holdout_count: int
    overall: EvaluationSlice
    by_basis: dict[str, EvaluationSlice] = Field(default_factory=dict)
    by_seen: dict[str, EvaluationSlice] = Field(default_factory=dict)
    by_kind: dict[str, EvaluationSlice] = Field(
        default_factory=dict,
        description="held-out rows by what they ask: an accelerator system, a CPU-only "
        "system, or a scenario never recorded for the benchmark in training (those two apart)",
    )
    by_benchmark: dict[str, EvaluationSlice] = Field(default_factory=dict)
    by_accelerator: dict[str, EvaluationSlice] = Field(
        default_factory=dict,
        description="by the held-out result's accelerator (catalogue name): in leave-one-out "
        "and within-round, each accelerator held out",
    )
    by_metric: dict[str, EvaluationSlice] = Field(default_factory=dict)
    by_group: dict[str, EvaluationSlice] = Field(
        default_factory=dict,
        description="by benchmark group: llm, vision, recommendation, speech, graph, training",
    )
    by_step: dict[str, EvaluationSlice] = Field(
        default_factory=dict, description="by round-ahead step ('v4.1 -> v5.1'); loao: ''"
    )
    by_step_basis: dict[str, EvaluationSlice] = Field(
        default_factory=dict, description="by step and basis ('v4.1 -> v5.1, interpolated')"
    )
    coverage_by_width_scale: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="round ahead: per step and basis (20 answered rows or more), the 80% "
        "coverage with every interval's log distances from its answer multiplied by a common "
        "scale ('0.50' .. '3.00'): the scales that hold each step in 0.75-0.85 show whether one "
        "calibration could hold them all; 'beside': the share of intervals that do not hold "
        "their answer (they move as they are scaled)",
    )
    refused_reasons: dict[str, int] = Field(default_factory=dict)
    unseen_benchmark_queries: int = 0
    unseen_benchmark_refused: int = 0
    notes: list[str] = Field(default_factory=list)
    elapsed_s: float
