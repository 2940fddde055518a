"""One (pool, stack) answer of the cluster ``recommend``: its figure per unit and for the job, its
score in the ranking's one rule, the image and the manifests that land it on exactly that pool (with
the NUMA advice), built from a ranked ``Recommendation`` or a prediction for the pool."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from stack_advisor.advisor.cluster.numa import NumaAdvice, guarantee, pool_advice
from stack_advisor.advisor.cluster.pool_snippets import pool_snippet
from stack_advisor.advisor.cluster.pools import NodePool
from stack_advisor.advisor.cluster.results import JobShape, PoolBasis, PoolRecommendation
from stack_advisor.advisor.knowledge.rules import stack_components
from stack_advisor.advisor.manifests.pod import check_image, image_for, to_yaml
from stack_advisor.advisor.results import Basis, Evidence, Factor, Interval, Recommendation
from stack_advisor.advisor.verbs import ordering
from stack_advisor.advisor.workload import MLPERF_TRAINING, Objective, Workload
from stack_advisor.schema.models import SoftwareStack

# the engine's model bases (its labels for a number the model made) in pool terms
BASIS_OF = {
    "interpolated": PoolBasis.INTERPOLATED,
    "transferred": PoolBasis.TRANSFERRED,
    "proxy": PoolBasis.PROXY,
}
_SNIPPETS_HELD = 4096
_NO_IMAGE = (
    "no manifests: the knowledge base records no container image for this stack; "
    "pass --image IMAGE (API: image) to get them"
)

Manifests = tuple[list[dict[str, Any]], str]


@dataclass(frozen=True, slots=True)
class PoolSite:
    """Where an answer lands: the pool, the job's shape on it, the pool's driver, the image the
    user gave, the workload asked and the table generation the pool's names were read at."""

    pool: NodePool
    shape: JobShape
    driver: str | None
    image: str | None
    workload: Workload
    generation: int | None


def image_of(
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


def observed_basis(evidence: Evidence, pool: NodePool) -> PoolBasis:
    """Measured when our collectors ran it on one of the pool's nodes (the knowledge base names
    a collector's host where a published result names its submitter), else observed."""
    ours = any(source != "mlperf-inference" for source in evidence.sources)
    return (
        PoolBasis.MEASURED
        if ours and set(evidence.submitters) & set(pool.nodes)
        else PoolBasis.OBSERVED
    )


def one_per_stack(recs: list[Recommendation], most: int) -> list[Recommendation]:
    """The best ``most`` recommendations, one per stack as the pool runs it: keyed by the
    components and framework a pool's query names (``pool_stack``), less the driver (the pool's
    own). Stacks that
    differ only by their recorded driver are one stack there, and so is a stack whose framework
    field names another version than its components: the model answers both alike."""
    picked: list[Recommendation] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for r in recs:
        components, framework = pool_stack(SoftwareStack.model_validate(r.candidate.stack))
        named = {**components, "framework": framework or ""}
        key = tuple(sorted((k, v) for k, v in named.items() if v and k != "driver"))
        if key not in seen and len(picked) < most:
            seen.add(key)
            picked.append(r)
    return picked


def pool_stack(stack: SoftwareStack) -> tuple[dict[str, str], str | None]:
    """(components, framework) a pool's query names for a ranked stack (its recorded driver
    among the components; the pool's own driver judges it)."""
    components = {k: v for k, v in stack_components(stack).items() if v}
    return components, stack.framework.lower() if stack.framework else None


def pool_stack_label(stack: SoftwareStack) -> str:
    """A stack's label on a pool: the pool's driver, not the one its results were recorded on."""
    return stack.model_copy(update={"driver": None}).label()


def _based_on(rec: Recommendation, stack: SoftwareStack) -> dict[str, Any]:
    """The ranked candidate an answer was made from."""
    return {
        "accelerator": rec.candidate.accelerator,
        "accelerator_count": rec.candidate.accelerator_count,
        "placement": rec.candidate.placement.value,
        "basis": rec.basis.value,
        "recorded_driver": stack.driver,
    }


def _linear_scaling(pods: int) -> str:
    return f"job figure scales one node's figure over {pods} nodes linearly; no multi-node evidence"


class PoolAnswers:
    """Builds the answers of one ``Advisor`` (its prices, its store's NUMA topologies), with the
    memos that live as long as it: manifests per (pool, stack, image, shape), images per stack
    (the snapshot's, read once per answer) and NUMA gains."""

    def __init__(self, advisor: Any) -> None:
        self.advisor = advisor
        self.snippets: dict[tuple[Any, ...], tuple[Manifests, str | None]] = {}
        self.images: dict[tuple[str | None, ...], str] = {}
        self.numa_gains: dict[Any, Any] = {}

    def from_recommendation(self, r: Recommendation, site: PoolSite) -> PoolRecommendation:
        """A ranked candidate that is the pool's exact configuration: its figure stands."""
        count = r.candidate.accelerator_count
        scale = count if r.per_accelerator else 1
        basis = (
            observed_basis(r.evidence, site.pool)
            if r.basis is Basis.OBSERVED
            else BASIS_OF.get(r.basis.value, PoolBasis.INTERPOLATED)
        )
        total = (r.value * scale, r.interval.low * scale, r.interval.high * scale)
        return self.build(site, r, basis, total, r.evidence, list(r.warnings), factors=r.factors)

    def _scored(
        self,
        pool: NodePool,
        workload: Workload,
        rec: Recommendation,
        figure: tuple[float, float, float],
        observed: bool,
    ) -> tuple[float, str]:
        """(score, its unit) of a figure per unit (value, low, high), by the ranking's one rule
        (``stack_advisor.advisor.verbs.ordering``): the pessimistic end in the metric's direction;
        a time to train is not "per unit" of anything. The cost objective divides by the price."""
        value, low, high = figure
        hib = rec.higher_is_better
        score = ordering.score(value, low, high, observed=observed, hib=hib)
        score_unit = ordering.score_unit(rec.unit, hib=hib)
        if hib and workload.objective is Objective.COST:
            price, _ = self.advisor.prices.price(pool.kb_name, pool.placement)
            score = ordering.pessimistic_end(value, low, high, observed=observed, hib=hib)
            score *= 3600.0 / price
            score_unit = f"{(rec.unit or '').split('/')[0]} per {self.advisor.prices.currency}"
        return score, score_unit

    def _manifests(
        self,
        pool: NodePool,
        stack: SoftwareStack,
        rec: Recommendation,
        image: tuple[str | None, str | None],
        shape: JobShape,
        workload: Workload,
        driver: str | None = None,
    ) -> tuple[Manifests, str | None]:
        """The pool's manifests for the stack in the workload's ``target`` and their YAML,
        memoised, and the warning when there are none (no image, or why the target cannot
        place the job). A row ranked on another ``driver`` than the pool's (a what-if) says so
        in each object's annotations."""
        image_ref, image_source = image
        if image_ref is None:
            return ([], ""), _NO_IMAGE
        name = f"{workload.benchmark}-{pool.name}"
        training = workload.family == MLPERF_TRAINING
        key = (
            pool.model_dump_json(),
            rec.candidate.stack_id,
            image_ref,
            shape.units_per_pod,
            shape.pods,
            name,
            workload.target,
            training,
            driver,
        )
        memo = self.snippets.get(key)
        if memo is None:
            if len(self.snippets) > _SNIPPETS_HELD:
                self.snippets.clear()
            manifests, why = pool_snippet(
                pool=pool,
                stack=stack,
                image=image_ref,
                workload_name=name,
                shape=shape,
                target=workload.target,
                training=training,
                framework=stack.framework,
                image_source=image_source,
            )
            if driver and driver != pool.driver:
                _what_if_driver(manifests, pool, driver)
            yaml_text = "---\n".join(to_yaml(m) for m in manifests)
            note = f"no manifests for --target {workload.target.value}: {why}" if why else None
            memo = self.snippets[key] = ((manifests, yaml_text), note)
        return memo

    def _numa(
        self, pool: NodePool, units: int, memo: Manifests, generation: int | None
    ) -> tuple[NumaAdvice, Manifests]:
        """The pool's NUMA advice, and the manifests made a Guaranteed pod sized to the GPUs'
        node where the kubelet aligns it (copies: the memo stays as it was)."""
        manifests = copy.deepcopy(memo[0])
        numa = pool_advice(
            getattr(self.advisor, "store", None), pool, units, self.numa_gains, generation
        )
        if numa.kubelet_config and numa.sizing:
            for m in manifests:
                guarantee(m, numa.sizing)
            return numa, (manifests, "---\n".join(to_yaml(m) for m in manifests))
        return numa, (manifests, memo[1])

    def build(
        self,
        site: PoolSite,
        rec: Recommendation,
        basis: PoolBasis,
        total: tuple[float, float, float],
        evidence: Evidence,
        warnings: list[str],
        answer_round: str | None = None,
        factors: list[Factor] | None = None,
    ) -> PoolRecommendation:
        """The answer for the pool from a figure for the pod (``total``: value, low, high), for
        ``answer_round`` (default: the ranked row's round), made as ``factors`` say."""
        pool, shape, workload = site.pool, site.shape, site.workload
        units = shape.units_per_pod
        hib = rec.higher_is_better
        div = units if hib else 1
        value, low, high = (t / div for t in total)
        observed = basis in (PoolBasis.MEASURED, PoolBasis.OBSERVED)
        score, score_unit = self._scored(pool, workload, rec, (value, low, high), observed)
        stack = SoftwareStack.model_validate(rec.candidate.stack)
        found_image = image_of(stack, site.image, self.images)
        if shape.pods > 1 and hib:
            warnings.append(_linear_scaling(shape.pods))
        memo, note = self._manifests(pool, stack, rec, found_image, shape, workload, site.driver)
        if note:
            warnings.append(note)
        numa, (manifests, snippet) = self._numa(pool, units, memo, site.generation)
        return PoolRecommendation(
            rank=0,
            pool=pool.name,
            stack_id=rec.candidate.stack_id,
            stack_label=pool_stack_label(stack),
            stack=rec.candidate.stack,
            image=found_image[0],
            image_source=found_image[1],
            accelerator=pool.product,
            resource=pool.resource,
            shape=shape,
            placement=pool.placement.value,
            driver=site.driver,
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
            based_on=_based_on(rec, stack),
            warnings=warnings,
            factors=list(factors or []),
            manifests=manifests,
            snippet_yaml=snippet,
            numa=numa,
            round=answer_round or rec.round,
        )


WHAT_IF_DRIVER = "stack-advisor/what-if-driver"


def _what_if_driver(manifests: list[dict[str, Any]], pool: NodePool, driver: str) -> None:
    """Annotate objects ranked as if ``pool`` ran ``driver``: its nodes run another one now."""
    now = pool.driver or "an unknown driver"
    text = f"{driver}: ranked as if {pool.name} ran it (it runs {now}); upgrade before applying"
    for manifest in manifests:
        manifest.setdefault("metadata", {}).setdefault("annotations", {})[WHAT_IF_DRIVER] = text
