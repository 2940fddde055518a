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

import copy
import time
import weakref
from typing import Any

from stack_advisor.advisor.budget import checkpoint
from stack_advisor.advisor.cluster.cpu_pools import (
    UNMEASURED,
    UNMEASURED_REASON,
    all_pools,
    cpu_workload,
    measured_on,
)
from stack_advisor.advisor.cluster.manifests import pool_manifests
from stack_advisor.advisor.cluster.numa import guarantee, pool_advice, with_stored_topologies
from stack_advisor.advisor.cluster.pools import NodePool, kb_accelerator_key
from stack_advisor.advisor.cluster.results import (
    ClusterRecommendationSet,
    DriverWhatIf,
    JobShape,
    PoolBasis,
    PoolRecommendation,
)
from stack_advisor.advisor.cluster.targets import checked_what_if, job_shape, pool_targets
from stack_advisor.advisor.knowledge.rules import Severity, stack_components
from stack_advisor.advisor.manifests.pod import check_image, image_for, to_yaml
from stack_advisor.advisor.proxy.ranking import answered_by_proxy
from stack_advisor.advisor.results import Basis, Evidence, Interval, PredictQuery, Recommendation
from stack_advisor.advisor.verbs import ordering
from stack_advisor.advisor.workload import Objective, Workload
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.inventory import ClusterNode
from stack_advisor.schema.models import SoftwareStack

_BY_ADVISOR: weakref.WeakKeyDictionary[Any, ClusterAdvisor] = weakref.WeakKeyDictionary()
# the engine's model bases (its labels for a number the model made) in pool terms
_BASIS_OF = {
    "interpolated": PoolBasis.INTERPOLATED,
    "transferred": PoolBasis.TRANSFERRED,
    "proxy": PoolBasis.PROXY,
}
REFUSED = "refused by the model on this pool"
PROXY_NONE = "no proxy estimate"  # a pool the proxy cannot answer on (the reason follows)
DRIVER_EXCLUSION = "breaks a compatibility rule with the nodes' driver"


def _image(
    stack: SoftwareStack, given: str | None, index: dict[tuple[str | None, ...], str]
) -> tuple[str | None, str | None]:
    """(image, where it came from): the knowledge base's
    (``stack_advisor.advisor.manifests.pod.image_for``), else the user's; (None, None) when neither
    names one."""
    found = image_for(stack, index)
    if found is not None:
        return found
    if given:
        return check_image(given), "given (--image)"
    return None, None


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


class ClusterAdvisor:
    """The cluster entry point over one ``Advisor`` (its table, model and rules are shared)."""

    def __init__(self, advisor: Any) -> None:
        self.advisor = advisor
        self._names: tuple[int, dict[tuple[str, str | None], list[str]]] | None = None
        self._rules_memo: dict[tuple[tuple[str, str], ...], set[str]] = {}
        self._snippets: dict[tuple[Any, ...], tuple[list[dict[str, Any]], str]] = {}
        self._images: dict[tuple[str | None, ...], str] = {}  # the snapshot's, read once per answer
        self._numa_gains: dict[Any, Any] = {}

    @classmethod
    def of(cls, advisor: Any) -> ClusterAdvisor:
        """The one ClusterAdvisor of an Advisor (its memos live as long as the Advisor)."""
        found = _BY_ADVISOR.get(advisor)
        if found is None:
            found = _BY_ADVISOR[advisor] = cls(advisor)
        return found

    def kb_names(self, pool: NodePool, table: Any = None) -> list[str]:
        """Every knowledge-base spelling of the pool's device (same spec and MIG profile)."""
        table = table if table is not None else self.advisor.table()
        if self._names is None or self._names[0] != table.generation:
            index: dict[tuple[str, str | None], list[str]] = {}
            for name in table.accelerator.vocab:
                key = kb_accelerator_key(str(name))
                if key is not None:
                    index.setdefault(key, []).append(str(name))
            self._names = (table.generation, index)
        if pool.accelerator is None:
            return []
        return sorted(self._names[1].get((pool.accelerator, pool.mig_profile), []))

    # ---- one pool ------------------------------------------------------------------------------
    def _pool_workload(
        self, workload: Workload, pool: NodePool, driver: str | None, units: int, names: list[str]
    ) -> Workload:
        hw = workload.hardware.model_copy(
            update={
                "accelerators": names or None,
                "driver": driver,
                "include_cpu": False,
                "placements": None,
                "count": None,
                "min_count": None,
                "max_count": units,
            }
        )
        return workload.model_copy(
            # every stack ranked: a pool's rows are (pool, stack) pairs, not the default view's one
            # row per stack family
            update={"hardware": hw, "per_accelerator": None, "all_rows": True}
        )

    def evaluate_pool(
        self,
        workload: Workload,
        pool: NodePool,
        shape: JobShape,
        *,
        driver: str | None,
        per_pool: int,
        image: str | None,
    ) -> tuple[list[PoolRecommendation], dict[str, int], str | None]:
        """(candidates on the pool, best first; exclusion counts of the ranking; metric)."""
        return self.evaluate_pools(
            workload, [(pool, shape, driver)], per_pool=per_pool, image=image
        )[0]

    def evaluate_pools(
        self,
        workload: Workload,
        targets: list[tuple[NodePool, JobShape, str | None]],
        *,
        per_pool: int,
        image: str | None,
    ) -> list[tuple[list[PoolRecommendation], dict[str, int], str | None]]:
        """``evaluate_pool`` for several (pool, shape, driver) targets, with one model call for
        all."""
        results: list[tuple[list[PoolRecommendation], dict[str, int], str | None]] = []
        pending: list[tuple[int, Recommendation, PredictQuery, PoolBasis]] = []
        table = self.advisor.table() if targets else None
        if table is not None:
            self._images = self.advisor.knowledge().images  # read once per answer; _build uses it
        proxy = bool(targets) and answered_by_proxy(self.advisor.knowledge(), workload)
        for pool, shape, driver in targets:
            checkpoint("the cluster recommendation")
            top = max(per_pool * 6, 12)
            if pool.kind == "cpu":
                results.append(self._cpu_pool(workload, pool, shape, image, top, per_pool))
                continue
            names = self.kb_names(pool, table)
            units = shape.units_per_pod
            if proxy:
                results.append(
                    self._proxy_pool(workload, pool, shape, driver, image, names, per_pool)
                )
                continue
            ranked = self.advisor.recommend(
                self._pool_workload(workload, pool, driver, units, names), top=top
            )
            exact = set(names)

            def on_pool(
                c: Any, exact: set[str] = exact
            ) -> bool:  # rows name the canonical accelerator
                return c.accelerator in exact or any(n in exact for n in c.published_names)

            recs = [r for r in ranked.recommendations if on_pool(r.candidate)]
            model_basis = PoolBasis.INTERPOLATED
            if not recs:
                # the device has no result on this benchmark: the stacks that rank best elsewhere
                # (still only those the pool's driver runs), moved to this device by the model
                ranked = self.advisor.recommend(
                    self._pool_workload(workload, pool, driver, units, []), top=top
                )
                recs, model_basis = list(ranked.recommendations), PoolBasis.TRANSFERRED
            out: list[PoolRecommendation] = []
            for r in _one_per_stack(recs, per_pool):
                c = r.candidate
                if on_pool(c) and c.placement is pool.placement and c.accelerator_count == units:
                    out.append(self._from_recommendation(r, pool, shape, driver, image, workload))
                    continue
                stack = SoftwareStack.model_validate(c.stack)
                comps = {k: v for k, v in stack_components(stack).items() if v}
                framework = stack.framework.lower() if stack.framework else None
                pending.append(
                    (
                        len(results),
                        r,
                        PredictQuery(
                            accelerator=c.accelerator if on_pool(c) else pool.kb_name,
                            accelerator_count=units,
                            placement=pool.placement,
                            components=comps,
                            framework=framework,
                            family=workload.family,
                            benchmark=str(workload.benchmark),
                            scenario=workload.scenario,
                            parameters=dict(workload.parameters),
                            metric=r.metric,
                        ),
                        model_basis,
                    )
                )
            results.append((out, dict(ranked.excluded), ranked.metric))
        refusals = self._predicted(workload, targets, pending, results, image)
        for i, (out, skipped, _) in enumerate(results):
            out.sort(key=lambda x: -x.score)
            if refusals.get(i):
                skipped[REFUSED] = len(refusals[i])
        return results

    def _proxy_pool(
        self,
        workload: Workload,
        pool: NodePool,
        shape: JobShape,
        driver: str | None,
        image: str | None,
        names: list[str],
        per_pool: int,
    ) -> tuple[list[PoolRecommendation], dict[str, int], str | None]:
        """A described model on one pool, by proxy (``stack_advisor.advisor.proxy``): the
        proxy's figure per accelerator on the pool's part, times the accelerators the pod's
        replicas use (a replica needs the count memory asks for); no other part's figure is
        moved here, so a part the proxy has no reference on is excluded, saying so."""
        units = shape.units_per_pod
        ranked = self.advisor.recommend(
            self._pool_workload(workload, pool, driver, units, names), top=max(12, units)
        )
        exact = set(names)
        recs = [r for r in ranked.recommendations if r.candidate.accelerator in exact]
        if not recs:
            why = "no LLM reference result on this part" if names else "no result on this part"
            return [], {f"{PROXY_NONE}: {why}": 1}, ranked.metric
        out, too_small = [], 0
        for r in _one_per_stack(recs, per_pool):
            count = r.candidate.accelerator_count
            replicas = units // count
            if replicas < 1:
                too_small += 1
                continue
            used = replicas * count
            warnings = list(r.warnings)
            if used < units:
                warnings.append(
                    f"{replicas} replica(s) of {count} use {used} of the pod's {units} units"
                )
            total = (r.value * used, r.interval.low * used, r.interval.high * used)
            out.append(
                self._build(
                    pool=pool,
                    shape=shape,
                    driver=driver,
                    image=image,
                    workload=workload,
                    rec=r,
                    basis=PoolBasis.PROXY,
                    total=total,
                    evidence=r.evidence,
                    warnings=warnings,
                )
            )
        if out or not too_small:
            return out, {}, ranked.metric
        need = min(r.candidate.accelerator_count for r in recs)
        why = f"{PROXY_NONE}: the model's weights and cache need {need} units, a pod has {units}"
        return [], {why: too_small}, ranked.metric

    def _cpu_pool(
        self,
        workload: Workload,
        pool: NodePool,
        shape: JobShape,
        image: str | None,
        top: int,
        per_pool: int,
    ) -> tuple[list[PoolRecommendation], dict[str, int], str | None]:
        """A CPU-only pool: only what our collectors measured on its nodes
        (``stack_advisor.advisor.cluster.cpu_pools``)."""
        ranked = self.advisor.recommend(cpu_workload(workload), top=top)
        recs = _one_per_stack(measured_on(ranked.recommendations, pool), per_pool)
        skipped = dict(ranked.excluded)
        if not recs:
            skipped[UNMEASURED] = 1
        return (
            [self._from_recommendation(r, pool, shape, None, image, workload) for r in recs],
            skipped,
            ranked.metric,
        )

    def _predicted(
        self,
        workload: Workload,
        targets: list[tuple[NodePool, JobShape, str | None]],
        pending: list[tuple[int, Recommendation, PredictQuery, PoolBasis]],
        results: list[tuple[list[PoolRecommendation], dict[str, int], str | None]],
        image: str | None,
    ) -> dict[int, list[str]]:
        """Predict the pending (target, recommendation, query) figures in one model call and add
        each answer to its target's results; the refusals per target."""
        predictions = self.advisor.predict([q for _, _, q, _ in pending]) if pending else []
        refusals: dict[int, list[str]] = {}
        for (i, r, q, model_basis), p in zip(pending, predictions):
            pool, shape, driver = targets[i]
            units = shape.units_per_pod
            # predict checks the recorded components (the submitter's driver); the ranking
            # already checked the stack against the pool's driver
            recorded = self._rule_messages(q.components)
            if p.value is None or p.interval is None:  # the model refused (its reason is kept)
                refusals.setdefault(i, []).append(
                    f"{r.candidate.stack_label}: {getattr(p, 'reason', None) or 'refused'}"
                )
                continue
            basis = (
                _observed_basis(p.evidence, pool)
                if p.basis is Basis.OBSERVED
                else _BASIS_OF.get(p.basis.value, model_basis)
                if model_basis is PoolBasis.INTERPOLATED
                else model_basis
            )
            how = (
                f"observed as {q.accelerator} x{units} {pool.placement.value}"
                if p.basis is Basis.OBSERVED
                else f"{basis.value}: figure for {pool.kb_name} x{units} "
                f"{pool.placement.value} from the model; the "
                f"ranked candidate was {r.candidate.accelerator} x{r.candidate.accelerator_count} "
                f"{r.candidate.placement.value}"
            )
            results[i][0].append(
                self._build(
                    pool=pool,
                    shape=shape,
                    driver=driver,
                    image=image,
                    workload=workload,
                    rec=r,
                    basis=basis,
                    total=(p.value, p.interval.low, p.interval.high),
                    evidence=p.evidence,
                    warnings=[*r.warnings, *(w for w in p.warnings if w not in recorded), how],
                )
            )
        return refusals

    def _rule_messages(self, components: dict[str, str]) -> set[str]:
        key = tuple(sorted(components.items()))
        hit = self._rules_memo.get(key)
        if hit is None:
            hit = self._rules_memo[key] = {
                v.message for v in self.advisor.rules.check_components(dict(components))
            }
        return hit

    def _from_recommendation(
        self,
        r: Recommendation,
        pool: NodePool,
        shape: JobShape,
        driver: str | None,
        image: str | None,
        workload: Workload,
    ) -> PoolRecommendation:
        count = r.candidate.accelerator_count
        scale = count if r.per_accelerator else 1
        basis = (
            _observed_basis(r.evidence, pool)
            if r.basis is Basis.OBSERVED
            else _BASIS_OF.get(r.basis.value, PoolBasis.INTERPOLATED)
        )
        return self._build(
            pool=pool,
            shape=shape,
            driver=driver,
            image=image,
            workload=workload,
            rec=r,
            basis=basis,
            total=(r.value * scale, r.interval.low * scale, r.interval.high * scale),
            evidence=r.evidence,
            warnings=list(r.warnings),
        )

    def _build(
        self,
        *,
        pool: NodePool,
        shape: JobShape,
        driver: str | None,
        image: str | None,
        workload: Workload,
        rec: Recommendation,
        basis: PoolBasis,
        total: tuple[float, float, float],
        evidence: Evidence,
        warnings: list[str],
    ) -> PoolRecommendation:
        units = shape.units_per_pod
        mid, lo, hi = total
        hib = rec.higher_is_better
        div = units if hib else 1
        value, low, high = mid / div, lo / div, hi / div
        observed = basis in (PoolBasis.MEASURED, PoolBasis.OBSERVED)
        # one rule with recommend's (``stack_advisor.advisor.verbs.ordering``): the pessimistic
        # end in the metric's direction; a time to train is not "per unit" of anything
        score = ordering.score(value, low, high, observed=observed, hib=hib)
        score_unit = ordering.score_unit(rec.unit, hib=hib)
        if hib and workload.objective is Objective.COST:
            price, _ = self.advisor.prices.price(pool.kb_name, pool.placement)
            score = ordering.pessimistic_end(value, low, high, observed=observed, hib=hib)
            score *= 3600.0 / price
            score_unit = f"{(rec.unit or '').split('/')[0]} per {self.advisor.prices.currency}"
        stack = SoftwareStack.model_validate(rec.candidate.stack)
        image_ref, image_source = _image(stack, image, self._images)
        if shape.pods > 1 and hib:
            warnings.append(
                f"job figure scales one node's figure over {shape.pods} nodes linearly; "
                "no multi-node evidence"
            )
        name = f"{workload.benchmark}-{pool.name}"
        key = (pool.model_dump_json(), rec.candidate.stack_id, image_ref, units, shape.pods, name)
        memo = self._snippets.get(key)
        if image_ref is None:
            memo = ([], "")
            warnings.append(
                "no manifests: the knowledge base records no container image for this stack; "
                "pass --image IMAGE (API: image) to get them"
            )
        elif memo is None:
            if len(self._snippets) > 4096:
                self._snippets.clear()
            manifests = pool_manifests(
                pool=pool,
                stack=stack,
                image=image_ref,
                workload_name=name,
                units_per_pod=units,
                pods=shape.pods,
                image_source=image_source,
            )
            memo = self._snippets[key] = (manifests, "---\n".join(to_yaml(m) for m in manifests))
        manifests = copy.deepcopy(memo[0])
        generation = self._names[0] if self._names else None  # the table's: new data, new pairs
        numa = pool_advice(
            getattr(self.advisor, "store", None), pool, units, self._numa_gains, generation
        )
        if (
            numa.kubelet_config and numa.sizing
        ):  # NUMA-aligned: a Guaranteed pod sized to the GPUs' node
            for m in manifests:
                guarantee(m, numa.sizing)
            memo = (manifests, "---\n".join(to_yaml(m) for m in manifests))
        return PoolRecommendation(
            rank=0,
            pool=pool.name,
            stack_id=rec.candidate.stack_id,
            stack_label=stack.model_copy(update={"driver": None}).label(),
            stack=rec.candidate.stack,
            image=image_ref,
            image_source=image_source,
            accelerator=pool.product,
            resource=pool.resource,
            shape=shape,
            placement=pool.placement.value,
            driver=driver,
            metric=rec.metric,
            unit=rec.unit,
            higher_is_better=hib,
            basis=basis,
            value=value,
            interval=Interval(low=low, high=high),
            job_value=value * shape.total_units if hib else None,
            score=score,
            score_unit=score_unit,
            evidence=evidence,
            based_on={
                "accelerator": rec.candidate.accelerator,
                "accelerator_count": rec.candidate.accelerator_count,
                "placement": rec.candidate.placement.value,
                "basis": rec.basis.value,
                "recorded_driver": stack.driver,
            },
            warnings=warnings,
            manifests=manifests,
            snippet_yaml=memo[1],
            numa=numa,
        )

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
        if not isinstance(workload, Workload):
            workload = Workload.from_dict(workload)
        for flag, v in (
            ("top", top),
            ("per_pool", per_pool),
            ("gpus", gpus),
            ("nodes_count", nodes_count),
        ):
            if v is not None and v < 1:
                raise InvalidInput(f"{flag} must be >= 1, got {v}")
        by_name = {p.name: p for p in pools}
        what_if = checked_what_if(what_if_driver, by_name)
        if not pools:
            raise NotFound(
                "no node pools: no node carries GPU feature discovery's "
                "nvidia.com/gpu.product label, "
                "nor (a CPU-only node) a pool label such as stack-advisor.io/pool"
            )
        notes, excluded, shapes, targets = pool_targets(pools, by_name, what_if, gpus, nodes_count)
        candidates: list[PoolRecommendation] = []
        metric: str | None = None
        # what-if pools are also evaluated on their current driver, in the same batch
        baseline = [
            (pool, shape, pool.driver) for pool, shape, _ in targets if pool.name in what_if
        ]
        evaluated = self.evaluate_pools(
            workload, targets + baseline, per_pool=per_pool, image=image
        )
        after_of = {pool.name: e for (pool, _, _), e in zip(targets, evaluated)}
        before_of = {pool.name: e for (pool, _, _), e in zip(baseline, evaluated[len(targets) :])}
        for (pool, _, driver), (recs, skipped, metric_used) in zip(targets, evaluated):
            metric = metric or metric_used
            proxy_why = next((k for k in skipped if k.startswith(PROXY_NONE)), None)
            if not recs and proxy_why:
                excluded[pool.name] = proxy_why
            elif not recs and skipped.get(UNMEASURED):
                excluded[pool.name] = UNMEASURED_REASON
            elif not recs:
                why = "no stack in the knowledge base runs on it"
                if skipped.get(DRIVER_EXCLUSION):
                    why += (
                        f" ({skipped[DRIVER_EXCLUSION]} candidates need a newer driver "
                        f"than {driver})"
                    )
                if skipped.get(REFUSED):
                    why += f"; the model refused {skipped[REFUSED]} stacks on it"
                excluded[pool.name] = why
            candidates.extend(recs)
        candidates.sort(key=lambda r: -r.score)
        ranked = [r.model_copy(update={"rank": i}) for i, r in enumerate(candidates[:top], start=1)]
        reports = [
            self._what_if(
                workload,
                by_name[name],
                version,
                shapes.get(name),
                gpus,
                nodes_count,
                per_pool,
                image,
                before_of.get(name),
                after_of.get(name),
            )
            for name, version in sorted(what_if.items())
        ]
        if what_if:
            notes.append(
                "ranked as if "
                + ", ".join(f"{n} ran driver {v}" for n, v in sorted(what_if.items()))
            )
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

    def _what_if(
        self,
        workload: Workload,
        pool: NodePool,
        version: str,
        shape: JobShape | None,
        gpus: int | None,
        nodes_count: int | None,
        per_pool: int,
        image: str | None,
        before_run: Any = None,
        after_run: Any = None,
    ) -> DriverWhatIf:
        if shape is None:
            maybe = job_shape(pool, gpus, nodes_count) if pool.usable else str(pool.reason)
            if isinstance(maybe, str):
                return DriverWhatIf(
                    pool=pool.name,
                    driver_from=pool.driver,
                    driver_to=version,
                    unlocked_stacks=[],
                    unlocked_candidates=0,
                    best_before=None,
                    best_after=None,
                    gain=None,
                    summary=f"{pool.name} cannot take this job whatever its driver: {maybe}",
                )
            shape = maybe
        if before_run is None or after_run is None:
            before_run, after_run = self.evaluate_pools(
                workload,
                [(pool, shape, pool.driver), (pool, shape, version)],
                per_pool=per_pool,
                image=image,
            )
        (before, skipped_before, _), (after, skipped_after, _) = before_run, after_run
        unlocked = []
        for rec in after:
            stack = SoftwareStack.model_validate(rec.stack)
            broken = (
                self.advisor.knowledge().stack_violations(rec.stack_id, stack, pool.driver)
                if pool.driver
                else []
            )
            if any(v.severity is Severity.ERROR for v in broken):
                unlocked.append(rec.stack_label)
        count = max(
            0, skipped_before.get(DRIVER_EXCLUSION, 0) - skipped_after.get(DRIVER_EXCLUSION, 0)
        )
        b = before[0] if before else None
        a = after[0] if after else None
        gain = a.score / b.score if a and b and b.score > 0 and a.score > 0 else None
        if workload.objective is Objective.LATENCY and a and b:
            gain = b.score / a.score  # scores are negated latencies: >1 means faster
        if a is None:
            summary = (
                f"driver {version} on {pool.name} runs no stack the knowledge base has "
                "for this workload"
            )
        elif b is None:
            summary = (
                f"driver {version} on {pool.name} makes it usable: best {a.stack_label} at "
                f"{a.value:,.4g} {a.unit} ({a.basis.value}); driver {pool.driver} runs none"
            )
        else:
            summary = (
                f"driver {pool.driver} → {version} on {pool.name}: {len(unlocked)} "
                "of the top stacks unlocked, "
                f"{count} candidates no longer excluded; best {b.stack_label} {b.value:,.4g} → "
                f"{a.stack_label} {a.value:,.4g} {a.unit} (x{gain:.2f}, {a.basis.value})"
                if gain
                else f"driver {pool.driver} → {version} on {pool.name}: no gain for this workload"
            )
        return DriverWhatIf(
            pool=pool.name,
            driver_from=pool.driver,
            driver_to=version,
            unlocked_stacks=unlocked,
            unlocked_candidates=count,
            best_before=b,
            best_after=a,
            gain=gain,
            summary=summary,
        )


def _observed_basis(evidence: Evidence, pool: NodePool) -> PoolBasis:
    """Measured when our collectors ran it on one of the pool's nodes (the knowledge base names
    a collector's host where a published result names its submitter), else observed."""
    ours = any(source != "mlperf-inference" for source in evidence.sources)
    return (
        PoolBasis.MEASURED
        if ours and set(evidence.submitters) & set(pool.nodes)
        else PoolBasis.OBSERVED
    )


def _one_per_stack(recs: list[Recommendation], most: int) -> list[Recommendation]:
    """The best ``most`` recommendations, one per stack."""
    picked: list[Recommendation] = []
    seen: set[str] = set()
    for r in recs:
        if r.candidate.stack_id not in seen and len(picked) < most:
            seen.add(r.candidate.stack_id)
            picked.append(r)
    return picked
