"""What ``recommend`` answers for a cluster: (node pool, stack) pairs, each with the basis of its
figure, an image and the manifests that land it on exactly that pool; what-if driver upgrades."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stack_advisor.advisor.cluster.numa import NumaAdvice
from stack_advisor.advisor.cluster.pools import NodePool
from stack_advisor.advisor.results import Evidence, Factor, Interval


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PoolBasis(str, Enum):
    """How a pool's figure was made, nearest evidence first."""

    MEASURED = "measured"  # observed on this pool's own nodes (our collectors)
    OBSERVED = "observed"  # this configuration observed elsewhere (same device and placement)
    INTERPOLATED = "interpolated"  # same device, other stack/count/placement: the model adjusts
    TRANSFERRED = "transferred"  # a device the knowledge base never observed: from its specs
    PROXY = "proxy"  # a model the knowledge base has no results for: from its nearest model


class JobShape(_Out):
    units_per_pod: int = Field(description="units of the pool's resource each Pod requests")
    pods: int = Field(description="Pods (one per node); > 1 means a gang")
    total_units: int


class PoolRecommendation(_Out):
    rank: int
    pool: str
    stack_id: str
    stack_label: str
    stack: dict[str, Any]
    image: str | None = Field(
        description="null when neither the knowledge base nor the request names one "
        "(then there are no manifests)"
    )
    image_source: str | None = Field(
        description="where the image comes from: the knowledge base or --image"
    )
    accelerator: str = Field(description="the pool's GPU as GFD names it")
    resource: str
    shape: JobShape
    placement: str
    driver: str | None = Field(
        description="the pool's driver (the what-if version when one was asked)"
    )
    metric: str
    unit: str | None
    higher_is_better: bool
    basis: PoolBasis
    value: float = Field(
        description="expected value per unit of the resource (throughput) or per query (latency)"
    )
    interval: Interval
    job_value: float | None = Field(
        default=None, description="throughput of the whole job (value x units)"
    )
    score: float
    score_unit: str
    evidence: Evidence
    based_on: dict[str, Any] = Field(
        description="the knowledge-base candidate the figure starts from"
    )
    warnings: list[str] = Field(default_factory=list)
    factors: list[Factor] = Field(
        default_factory=list,
        description="how the figure was made from its evidence (a round drift or forecast, the "
        "count scaling, a transfer's references), as predict and recommend show them",
    )
    round: str | None = Field(
        default=None,
        description="the benchmark round the figure is for (the workload's as_of; a stack's own "
        "result answered as measured: its round)",
    )
    manifests: list[dict[str, Any]] = Field(
        description="the objects to apply: a Pod; across nodes a PodGroup and a PyTorchJob "
        "(training) or a LeaderWorkerSet (serving); or the --target's objects"
    )
    snippet_yaml: str
    numa: NumaAdvice | None = Field(
        default=None, description="placement inside the node: kubelet and VM pinning"
    )


class DriverWhatIf(_Out):
    pool: str
    driver_from: str | None
    driver_to: str
    unlocked_stacks: list[str] = Field(
        description="stack labels runnable only after the upgrade (among the top)"
    )
    unlocked_candidates: int = Field(
        description="knowledge-base candidates the upgrade stops excluding"
    )
    best_before: PoolRecommendation | None
    best_after: PoolRecommendation | None
    gain: float | None = Field(
        description="best score after / before (None when nothing ran before)"
    )
    summary: str


class ClusterRecommendationSet(_Out):
    workload: dict[str, Any]
    metric: str | None
    objective: str
    source: str = Field(description="where the nodes came from: cluster NAME or a nodes file")
    pools: list[NodePool]
    excluded_pools: dict[str, str] = Field(
        default_factory=dict, description="pool → why it gets no candidate"
    )
    recommendations: list[PoolRecommendation]
    what_if: list[DriverWhatIf] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    elapsed_ms: float
