"""Each node pool ranked on its own: the advisor's ranking constrained to the pool's device (every
knowledge-base spelling of it), driver and units per node; a ranked stack that is the pool's exact
configuration stands, the others are predicted at the pool's device, count and placement in one
model call. CPU-only pools take only what our collectors measured on their nodes; a described model
is answered by proxy. ``advice`` orders the pairs of every pool as one list."""

from __future__ import annotations

from collections import Counter
from typing import Any

from stack_advisor.advisor.budget import checkpoint
from stack_advisor.advisor.cluster.cpu_pools import UNMEASURED, cpu_workload, measured_on
from stack_advisor.advisor.cluster.pool_answer import (
    BASIS_OF,
    PoolAnswers,
    PoolSite,
    observed_basis,
    one_per_stack,
    pool_stack,
)
from stack_advisor.advisor.cluster.pools import NodePool, kb_accelerator_key
from stack_advisor.advisor.cluster.results import JobShape, PoolBasis, PoolRecommendation
from stack_advisor.advisor.cluster.what_if import PoolRun
from stack_advisor.advisor.estimate.drift import is_as_measured
from stack_advisor.advisor.estimate.scenario import is_derived_note
from stack_advisor.advisor.proxy.ranking import answered_by_proxy
from stack_advisor.advisor.results import Basis, PredictQuery, Recommendation
from stack_advisor.advisor.workload import Workload
from stack_advisor.schema.models import SoftwareStack

REFUSED = "refused by the model on this pool"
REFUSED_BECAUSE = "the model refused: "  # + the commonest reason (a key of the skipped counts)
PROXY_NONE = "no proxy estimate"  # a pool the proxy cannot answer on (the reason follows)

Pending = list[tuple[int, Recommendation, PredictQuery, PoolBasis]]
Target = tuple[NodePool, JobShape, str | None]


class PoolRanking:
    """Each pool ranked on its own over one ``Advisor`` (its table, model and rules are shared):
    the stacks that run on the pool's device and driver, and their figures there."""

    def __init__(self, advisor: Any) -> None:
        self.advisor = advisor
        self._names: tuple[int, dict[tuple[str, str | None], list[str]]] | None = None
        self._rules_memo: dict[tuple[tuple[str, str], ...], set[str]] = {}
        self.answers = PoolAnswers(advisor)

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
        targets: list[Target],
        *,
        per_pool: int,
        image: str | None,
    ) -> list[PoolRun]:
        """``evaluate_pool`` for several (pool, shape, driver) targets, with one model call for
        all."""
        results: list[PoolRun] = []
        pending: Pending = []
        table = self.advisor.table() if targets else None
        if table is not None:
            # the snapshot's images, read once per answer
            self.answers.images = self.advisor.knowledge().images
        proxy = bool(targets) and answered_by_proxy(self.advisor.knowledge(), workload)
        for pool, shape, driver in targets:
            checkpoint("the cluster recommendation")
            top = max(per_pool * 6, 12)
            if pool.kind == "cpu":
                results.append(self._cpu_pool(workload, pool, shape, image, top, per_pool))
                continue
            names = self.kb_names(pool, table)
            if proxy:
                results.append(
                    self._proxy_pool(workload, pool, shape, driver, image, names, per_pool)
                )
                continue
            at = len(results)
            target = (pool, shape, driver)
            results.append(
                self._gpu_pool(workload, target, image, names, (top, per_pool), (at, pending))
            )
        refusals = self._predicted(workload, targets, pending, results, image)
        for i, (out, skipped, _) in enumerate(results):
            out.sort(key=lambda x: -x.score)
            if refusals.get(i):
                skipped[REFUSED] = len(refusals[i])
                # the commonest reason, for a pool left without an answer to say why
                reason, n = Counter(refusals[i]).most_common(1)[0]
                skipped[f"{REFUSED_BECAUSE}{reason}"] = n
        return results

    def _gpu_pool(
        self,
        workload: Workload,
        target: Target,
        image: str | None,
        names: list[str],
        sizes: tuple[int, int],
        queue: tuple[int, Pending],
    ) -> PoolRun:
        """A GPU pool: the ranked stacks that are its exact configuration stand; the others are
        queued (``queue``: this target's index, the pending list) to be predicted on the pool."""
        pool, shape, driver = target
        top, per_pool = sizes
        units = shape.units_per_pod
        ranked = self.advisor.recommend(
            self._pool_workload(workload, pool, driver, units, names), top=top
        )
        exact = set(names)

        def on_pool(c: Any) -> bool:  # rows name the canonical accelerator
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
        for r in one_per_stack(recs, per_pool):
            c = r.candidate
            if on_pool(c) and c.placement is pool.placement and c.accelerator_count == units:
                site = self._site(workload, (pool, shape, driver), image)
                out.append(self.answers.from_recommendation(r, site))
                continue
            accelerator = c.accelerator if on_pool(c) else pool.kb_name
            query = _pool_query(workload, r, accelerator, units, pool)
            queue[1].append((queue[0], r, query, model_basis))
        return out, dict(ranked.excluded), ranked.metric

    def _proxy_pool(
        self,
        workload: Workload,
        pool: NodePool,
        shape: JobShape,
        driver: str | None,
        image: str | None,
        names: list[str],
        per_pool: int,
    ) -> PoolRun:
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
            why = "no described model's result on this part" if names else "no result on this part"
            return [], {f"{PROXY_NONE}: {why}": 1}, ranked.metric
        out, too_small = [], 0
        site = self._site(workload, (pool, shape, driver), image)
        for r in one_per_stack(recs, per_pool):
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
            scale = used if r.higher_is_better else 1  # accelerator-hours: the run's, any count
            if not r.higher_is_better:
                warnings.append(_training_hours(r.value, shape.total_units))
            total = (r.value * scale, r.interval.low * scale, r.interval.high * scale)
            out.append(self.answers.build(site, r, PoolBasis.PROXY, total, r.evidence, warnings))
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
    ) -> PoolRun:
        """A CPU-only pool: only what our collectors measured on its nodes
        (``stack_advisor.advisor.cluster.cpu_pools``)."""
        ranked = self.advisor.recommend(cpu_workload(workload), top=top)
        recs = one_per_stack(measured_on(ranked.recommendations, pool), per_pool)
        skipped = dict(ranked.excluded)
        if not recs:
            skipped[UNMEASURED] = 1
        site = self._site(workload, (pool, shape, None), image)
        return [self.answers.from_recommendation(r, site) for r in recs], skipped, ranked.metric

    def _predicted(
        self,
        workload: Workload,
        targets: list[Target],
        pending: Pending,
        results: list[PoolRun],
        image: str | None,
    ) -> dict[int, list[str]]:
        """Predict the pending (target, recommendation, query) figures in one model call and add
        each answer to its target's results; the refusals per target."""
        predictions = self.advisor.predict([q for _, _, q, _ in pending]) if pending else []
        refusals: dict[int, list[str]] = {}
        for (i, r, q, model_basis), p in zip(pending, predictions):
            site = self._site(workload, targets[i], image)
            pool, units = site.pool, site.shape.units_per_pod
            # predict checks the recorded components (the submitter's driver); the ranking
            # already checked the stack against the pool's driver
            recorded = self._rule_messages(q.components)
            if p.value is None or p.interval is None:  # the model refused (its reason is kept)
                refusals.setdefault(i, []).append(getattr(p, "reason", None) or "refused")
                continue
            basis = (
                observed_basis(p.evidence, pool)
                if p.basis is Basis.OBSERVED
                else BASIS_OF.get(p.basis.value, model_basis)
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
            # the figure shown is the pool's own: where it was derived from another scenario,
            # its note replaces the ranked candidate's (which names the candidate's basis)
            derived = any(is_derived_note(w) for w in p.warnings)
            # whether the figure is a stack's own result as measured is the pool's figure's to
            # say (its warnings, below): the ranked candidate's note would contradict a figure
            # the model carried between rounds or stack versions
            kept = [
                w
                for w in r.warnings
                if not (derived and is_derived_note(w)) and not is_as_measured(w)
            ]
            warnings = [
                *kept,
                *(w for w in p.warnings if w not in recorded and w not in kept),
                how,
            ]
            total = (p.value, p.interval.low, p.interval.high)
            answer = self.answers.build(
                site, r, basis, total, p.evidence, warnings, p.round, factors=p.factors
            )
            results[i][0].append(answer)
        return refusals

    def _rule_messages(self, components: dict[str, str]) -> set[str]:
        key = tuple(sorted(components.items()))
        hit = self._rules_memo.get(key)
        if hit is None:
            hit = self._rules_memo[key] = {
                v.message for v in self.advisor.rules.check_components(dict(components))
            }
        return hit

    def _site(self, workload: Workload, target: Target, image: str | None) -> PoolSite:
        """Where the answers for one target land (the table's generation as now read)."""
        pool, shape, driver = target
        return PoolSite(pool, shape, driver, image, workload, self._generation())

    def _generation(self) -> int | None:
        """The table's generation the names were read at: new data, new (pool, stack) pairs."""
        return self._names[0] if self._names else None


def _training_hours(accelerator_hours: float, units: int) -> str:
    return (
        f"{accelerator_hours / units:.3g} h to train on the job's {units} units if the run "
        "scales linearly to them (the proxy's figure is accelerator-hours; no scaling evidence)"
    )


def _pool_query(
    workload: Workload, r: Recommendation, accelerator: str, units: int, pool: NodePool
) -> PredictQuery:
    """The query that asks the model for a ranked stack on the pool's device, count and
    placement."""
    components, framework = pool_stack(SoftwareStack.model_validate(r.candidate.stack))
    return PredictQuery(
        accelerator=accelerator,
        accelerator_count=units,
        placement=pool.placement,
        components=components,
        framework=framework,
        family=workload.family,
        benchmark=str(workload.benchmark),
        scenario=workload.scenario,
        parameters=dict(workload.parameters),
        metric=r.metric,
        as_of=workload.as_of,  # the round the workload asks for, as the ranking answered it
    )
