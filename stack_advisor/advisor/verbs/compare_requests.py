"""The typed requests and answers of the comparison verbs (``stack_advisor.advisor.verbs.compare``):
each verb takes ``(Knowledge, request)`` as ``recommend`` and ``predict`` do, names as users write
them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

from stack_advisor.advisor.names import canonical_metric

StackSelector = str | dict[str, str]
"""A stack id (``stk-...``), or component=version pairs (``'tensorrt=8.6.0,cuda=12.0'`` or a
dict)."""


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _metric(value: str | None) -> str | None:
    """A metric as users write it (``ttft``, ``tokens/s``): the catalogue's name."""
    return canonical_metric(value)


class StackComparisonRequest(_Request):
    """Stack A against stack B on one benchmark (and scenario, accelerator, metric)."""

    stack_a: StackSelector
    stack_b: StackSelector
    benchmark: str
    accelerator: str | None = None
    scenario: str | None = None
    metric: str | None = None
    family: str = "mlperf-inference"

    _canonical_metric = field_validator("metric")(_metric)

    @field_validator("stack_a", "stack_b")
    @classmethod
    def _names_a_stack(cls, value: StackSelector) -> StackSelector:
        """An empty selector would match every stack, so that A and B compared every result
        with itself."""
        if not (value.strip() if isinstance(value, str) else value):
            raise ValueError(
                "name a stack: a stack id (stk-...) or component=version pairs "
                "(tensorrt=10.2,cuda=12.4)"
            )
        return value


class RegressionsRequest(_Request):
    """Consecutive versions of one component, compared within each group of results."""

    component: str = "driver"
    accelerator: str | None = None
    benchmark: str | None = None
    alpha: float = 0.05
    min_count: int = 3


class StackRankingRequest(_Request):
    """The stacks one accelerator ran a benchmark slice with."""

    benchmark: str
    accelerator: str
    scenario: str | None = None
    metric: str | None = None
    family: str = "mlperf-inference"
    division: str = "closed"
    as_of: str | None = None  # the stacks as of a round: only its results and older ones

    _canonical_metric = field_validator("metric")(_metric)


class StackRank(BaseModel):
    """One stack of a ranking: its latest round's median per-accelerator figure, and that figure
    carried forward to the newest version of its framework (``factor`` says how; None: as is)."""

    model_config = ConfigDict(extra="forbid")

    framework: str
    version: str
    software_class: str | None
    round: str
    results: int
    counts: list[int] = []  # the system sizes (accelerators) its results ran at
    value: float
    carried_forward: float
    factor: str | None
    unit: str | None = None  # the value's unit: per accelerator for a throughput
