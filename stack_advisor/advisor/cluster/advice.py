"""Recommend for a cluster: rank (node pool, stack) pairs for a workload.

For each pool the existing ranking (``Advisor.recommend``) runs with the pool as the constraint:
its device (every knowledge-base spelling of it), its driver (so the compatibility rules drop
stacks the driver cannot run), and the units one node can give. Each stack it returns is then
placed on the pool: when the ranked candidate is the pool's exact configuration its figure stands
(observed, or measured when our collectors ran it on the pool's nodes); otherwise the same
stack is asked of ``Advisor.predict`` at the pool's device, count and placement (interpolated on
a device the knowledge base has seen, transferred from its specs on one it has not).

A job larger than one node becomes a gang sized to the pool. ``what_if`` re-ranks a pool as if its
driver were another version and reports the stacks that unlocks and the gain.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

from stack_advisor.advisor.cluster.cpu_pools import (
    UNMEASURED,
    UNMEASURED_REASON,
    all_pools,
)
from stack_advisor.advisor.cluster.numa import with_stored_topologies
from stack_advisor.advisor.cluster.pool_ranking import (
    PROXY_NONE,
    REFUSED,
    REFUSED_BECAUSE,
    PoolRanking,
    Target,
)
from stack_advisor.advisor.cluster.pools import NodePool
from stack_advisor.advisor.cluster.results import (
    ClusterRecommendationSet,
    DriverWhatIf,
    JobShape,
    PoolRecommendation,
)
from stack_advisor.advisor.cluster.targets import checked_what_if, job_shape, pool_targets
from stack_advisor.advisor.cluster.what_if import (
    DRIVER_EXCLUSION,
    PoolRun,
    cannot_take,
    driver_what_if,
)
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.inventory import ClusterNode

__all__ = [
    "DRIVER_EXCLUSION",
    "PROXY_NONE",
    "REFUSED",
    "ClusterAdvisor",
    "pools_of",
    "recommend_nodes",
]

_BY_ADVISOR: weakref.WeakKeyDictionary[Any, ClusterAdvisor] = weakref.WeakKeyDictionary()
_NO_POOLS = (
    "no node pools: no node carries GPU feature discovery's nvidia.com/gpu.product label, "
    "nor (a CPU-only node) a pool label such as stack-advisor.io/pool"
)


def pools_of(
    nodes: list[ClusterNode], store: Any, *, pool_label: str | None = None
) -> list[NodePool]:
    """The nodes, with the NUMA topologies stored for them, grouped into pools (GPU pools and the
    labelled CPU-only pools, ``stack_advisor.advisor.cluster.cpu_pools``)."""
    return all_pools(with_stored_topologies(nodes, store), pool_label=pool_label)


def recommend_nodes(
    advisor: Any,
    workload: Workload | dict[str, Any],
    nodes: list[ClusterNode],
    *,
    source: str,
    pool_label: str | None = None,
    top: int = 10,
    per_pool: int = 3,
    gpus: int | None = None,
    nodes_count: int | None = None,
    image: str | None = None,
    what_if_driver: dict[str, str] | None = None,
) -> ClusterRecommendationSet:
    """The cluster mode of ``recommend`` (``POST /v1/recommendations`` with ``cluster`` or
    ``nodes``, ``advisor recommend --cluster|--nodes``): the nodes grouped into pools with their
    stored NUMA topologies, ranked by the advisor's ``ClusterAdvisor``.

    Raises: as ``ClusterAdvisor.recommend``.
    """
    pools = pools_of(nodes, advisor.store, pool_label=pool_label)
    return ClusterAdvisor.of(advisor).recommend(
        workload,
        pools,
        source=source,
        top=top,
        per_pool=per_pool,
        gpus=gpus,
        nodes_count=nodes_count,
        image=image,
        what_if_driver=what_if_driver,
    )


class ClusterAdvisor(PoolRanking):
    """The cluster entry point over one ``Advisor``: every pool ranked (``PoolRanking``), the pairs
    ordered as one list, and the driver what-ifs."""

    @classmethod
    def of(cls, advisor: Any) -> ClusterAdvisor:
        """The one ClusterAdvisor of an Advisor (its memos live as long as the Advisor)."""
        found = _BY_ADVISOR.get(advisor)
        if found is None:
            found = _BY_ADVISOR[advisor] = cls(advisor)
        return found

    # ---- the cluster ----------------------------------------------------------------------------
    def recommend(
        self,
        workload: Workload | dict[str, Any],
        pools: list[NodePool],
        *,
        source: str,
        top: int = 10,
        per_pool: int = 3,
        gpus: int | None = None,
        nodes_count: int | None = None,
        image: str | None = None,
        what_if_driver: dict[str, str] | None = None,
    ) -> ClusterRecommendationSet:
        """Rank (pool, stack) pairs; ``what_if_driver`` maps pool names to driver versions.

        Raises:
            InvalidInput: a bad shape, an unknown pool or a malformed version in ``what_if_driver``.
            NotFound: no pools, or the benchmark is not in the knowledge base.
        """
        start = time.perf_counter()
        workload, image = _with_image(workload, image)
        _check_sizes({"top": top, "per_pool": per_pool, "gpus": gpus, "nodes_count": nodes_count})
        by_name = {p.name: p for p in pools}
        what_if = checked_what_if(what_if_driver, by_name)
        _check_pools(pools)
        notes, excluded, shapes, targets = pool_targets(
            pools, by_name, what_if, gpus, nodes_count, workload.target
        )
        # what-if pools are also evaluated on their current driver, in the same batch; a pool
        # its current driver leaves unusable (a Blackwell pool on 550) has nothing before
        baseline = [
            (pool, shape, pool.driver)
            for pool, shape, _ in targets
            if pool.name in what_if and pool.usable
        ]
        evaluated = self.evaluate_pools(
            workload, targets + baseline, per_pool=per_pool, image=image
        )
        candidates, metric = _gather(targets, evaluated, excluded)
        ranked = [r.model_copy(update={"rank": i}) for i, r in enumerate(candidates[:top], start=1)]
        nothing: PoolRun = ([], {}, None)
        runs = (
            {
                **{pool.name: nothing for pool, _, _ in targets if not pool.usable},
                **{pool.name: e for (pool, _, _), e in zip(baseline, evaluated[len(targets) :])},
            },
            {pool.name: e for (pool, _, _), e in zip(targets, evaluated)},
        )
        sizes = (gpus, nodes_count, per_pool)
        reports = self._what_ifs(workload, what_if, by_name, shapes, sizes, image, runs)
        if what_if:
            notes.append(_what_if_note(what_if))
        notes.extend(f"pool {p.name}: {problem}" for p in pools for problem in p.label_problems)
        return ClusterRecommendationSet(
            workload=workload.model_dump(mode="json", exclude_none=True),
            metric=metric,
            objective=workload.objective.value,
            source=source,
            pools=pools,
            excluded_pools=excluded,
            recommendations=ranked,
            what_if=reports,
            notes=notes,
            elapsed_ms=(time.perf_counter() - start) * 1000,
        )

    def _what_ifs(
        self,
        workload: Workload,
        what_if: dict[str, str],
        by_name: dict[str, NodePool],
        shapes: dict[str, JobShape],
        sizes: tuple[int | None, int | None, int],
        image: str | None,
        runs: tuple[dict[str, PoolRun], dict[str, PoolRun]],
    ) -> list[DriverWhatIf]:
        """The report of each what-if pool, from its runs on its driver and on the asked one."""
        return [
            self._what_if(
                workload,
                by_name[name],
                version,
                shapes.get(name),
                sizes,
                image,
                runs[0].get(name),
                runs[1].get(name),
            )
            for name, version in sorted(what_if.items())
        ]

    def _what_if(
        self,
        workload: Workload,
        pool: NodePool,
        version: str,
        shape: JobShape | None,
        sizes: tuple[int | None, int | None, int],
        image: str | None,
        before_run: PoolRun | None = None,
        after_run: PoolRun | None = None,
    ) -> DriverWhatIf:
        gpus, nodes_count, per_pool = sizes
        if shape is None:
            maybe = job_shape(pool, gpus, nodes_count) if pool.usable else str(pool.reason)
            if isinstance(maybe, str):
                return cannot_take(pool, version, maybe)
            shape = maybe
        if before_run is None or after_run is None:
            before_run, after_run = self.evaluate_pools(
                workload,
                [(pool, shape, pool.driver), (pool, shape, version)],
                per_pool=per_pool,
                image=image,
            )
        knowledge = self.advisor.knowledge()
        return driver_what_if(knowledge, workload, pool, version, before_run, after_run)


def _with_image(
    workload: Workload | dict[str, Any], image: str | None
) -> tuple[Workload, str | None]:
    """The workload and one image, however it was given (the request's or the workload's): the
    manifests use it and the rows check it against their stacks (the API had given each half)."""
    if not isinstance(workload, Workload):
        workload = Workload.from_dict(workload)
    image = image or workload.image
    if image and workload.image != image:
        workload = workload.model_copy(update={"image": image})
    return workload, image


def _check_pools(pools: list[NodePool]) -> None:
    """Raises: NotFound when there are no pools, saying what makes a pool."""
    if not pools:
        raise NotFound(_NO_POOLS)


def _check_sizes(sizes: dict[str, int | None]) -> None:
    """Raises: InvalidInput naming the first size below 1."""
    for flag, v in sizes.items():
        if v is not None and v < 1:
            raise InvalidInput(f"{flag} must be >= 1, got {v}")


def _what_if_note(what_if: dict[str, str]) -> str:
    return "ranked as if " + ", ".join(f"{n} ran driver {v}" for n, v in sorted(what_if.items()))


def _excluded_why(skipped: dict[str, int], driver: str | None) -> str:
    """Why a pool has no answer, from the ranking's exclusion counts."""
    proxy_why = next((k for k in skipped if k.startswith(PROXY_NONE)), None)
    if proxy_why:
        return proxy_why
    if skipped.get(UNMEASURED):
        return UNMEASURED_REASON
    drivers = skipped.get(DRIVER_EXCLUSION, 0)
    if skipped.get(REFUSED):  # stacks that run there, but no figure for them on this part
        because = next(k for k in skipped if k.startswith(REFUSED_BECAUSE))[len(REFUSED_BECAUSE) :]
        why = f"no figure for any stack on it: the model refused {skipped[REFUSED]} ({because})"
        return why + (f"; {drivers} more need a newer driver than {driver}" if drivers else "")
    why = "no stack in the knowledge base runs on it"
    if drivers:
        why += f" ({drivers} candidates need a newer driver than {driver})"
    return why


def _gather(
    targets: list[Target], evaluated: list[PoolRun], excluded: dict[str, str]
) -> tuple[list[PoolRecommendation], str | None]:
    """Every target's answers, best first, and the metric; a pool with none is excluded, saying
    why."""
    candidates: list[PoolRecommendation] = []
    metric: str | None = None
    for (pool, _, driver), (recs, skipped, metric_used) in zip(targets, evaluated):
        metric = metric or metric_used
        if not recs:
            excluded[pool.name] = _excluded_why(skipped, driver)
        candidates.extend(recs)
    candidates.sort(key=lambda r: -r.score)
    return candidates, metric
