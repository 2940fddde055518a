"""What a driver upgrade would change on one pool: the stacks it unlocks, the candidates no longer
excluded, and the best answer before and after (the gain), from the pool ranked on both drivers."""

from __future__ import annotations

from typing import Any

from stack_advisor.advisor.cluster.pools import NodePool
from stack_advisor.advisor.cluster.results import DriverWhatIf, PoolRecommendation
from stack_advisor.advisor.knowledge.rules import Severity
from stack_advisor.advisor.workload import Objective, Workload
from stack_advisor.schema.models import SoftwareStack

# The exclusion the ranking counts for a stack the nodes' driver cannot run.
DRIVER_EXCLUSION = "breaks a compatibility rule with the nodes' driver"

PoolRun = tuple[list[PoolRecommendation], dict[str, int], str | None]


def cannot_take(pool: NodePool, version: str, why: str) -> DriverWhatIf:
    """The report for a pool no driver makes fit the job."""
    return DriverWhatIf(
        pool=pool.name,
        driver_from=pool.driver,
        driver_to=version,
        unlocked_stacks=[],
        unlocked_candidates=0,
        best_before=None,
        best_after=None,
        gain=None,
        summary=f"{pool.name} cannot take this job whatever its driver: {why}",
    )


def _unlocked(knowledge: Any, pool: NodePool, after: list[PoolRecommendation]) -> list[str]:
    """The stacks ranked on the new driver that break a rule with the pool's current one."""
    unlocked = []
    for rec in after:
        stack = SoftwareStack.model_validate(rec.stack)
        broken = knowledge.stack_violations(rec.stack_id, stack, pool.driver) if pool.driver else []
        if any(v.severity is Severity.ERROR for v in broken):
            unlocked.append(rec.stack_label)
    return unlocked


def _summary(
    pool: NodePool,
    version: str,
    best: tuple[PoolRecommendation | None, PoolRecommendation | None],
    unlocked: list[str],
    count: int,
    gain: float | None,
) -> str:
    b, a = best
    if a is None:
        return (
            f"driver {version} on {pool.name} runs no stack the knowledge base has "
            "for this workload"
        )
    if b is None:
        return (
            f"driver {version} on {pool.name} makes it usable: best {a.stack_label} at "
            f"{a.value:,.4g} {a.unit} ({a.basis.value}); driver {pool.driver} runs none"
        )
    if not gain:
        return f"driver {pool.driver} → {version} on {pool.name}: no gain for this workload"
    return (
        f"driver {pool.driver} → {version} on {pool.name}: {len(unlocked)} "
        "of the top stacks unlocked, "
        f"{count} candidates no longer excluded; best {b.stack_label} {b.value:,.4g} → "
        f"{a.stack_label} {a.value:,.4g} {a.unit} (x{gain:.2f}, {a.basis.value})"
    )


def driver_what_if(
    knowledge: Any,
    workload: Workload,
    pool: NodePool,
    version: str,
    before_run: PoolRun,
    after_run: PoolRun,
) -> DriverWhatIf:
    """The report of ``pool`` on driver ``version``, from its runs on its driver and on that one."""
    (before, skipped_before, _), (after, skipped_after, _) = before_run, after_run
    unlocked = _unlocked(knowledge, pool, after)
    count = max(0, skipped_before.get(DRIVER_EXCLUSION, 0) - skipped_after.get(DRIVER_EXCLUSION, 0))
    b = before[0] if before else None
    a = after[0] if after else None
    gain = a.score / b.score if a and b and b.score > 0 and a.score > 0 else None
    if workload.objective is Objective.LATENCY and a and b:
        gain = b.score / a.score  # scores are negated latencies: >1 means faster
    return DriverWhatIf(
        pool=pool.name,
        driver_from=pool.driver,
        driver_to=version,
        unlocked_stacks=unlocked,
        unlocked_candidates=count,
        best_before=b,
        best_after=a,
        gain=gain,
        summary=_summary(pool, version, (b, a), unlocked, count, gain),
    )
