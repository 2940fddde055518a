"""Which cells the knowledge base already has: for ``plan submit --skip-observed``."""

from __future__ import annotations

from stack_advisor.catalog.canonical import canonical_stack
from stack_advisor.collectors.plan.model import RUNNER_FAMILIES, Cell
from stack_advisor.schema.models import ObservationFilter
from stack_advisor.store.base import Store


def observation_filter(cell: Cell) -> ObservationFilter:
    """Observations on the cell's stack (framework, its version, CUDA), accelerator, placement
    and benchmark family, in catalogue names as the store keeps them ("torch" is stored as
    "pytorch"). The driver is the node's, not the image's, so it is not matched."""
    stack = canonical_stack(cell.stack())
    acc = cell.pool.accelerator_model()
    return ObservationFilter(
        framework=stack.framework,
        framework_version=stack.framework_version,
        cuda=stack.cuda,
        accelerator=acc.model,
        placement=cell.pool.placement,
        benchmark_family=RUNNER_FAMILIES[cell.benchmark.runner],
    )


def is_observed(store: Store, cell: Cell) -> bool:
    """True when at least one valid observation matches the cell (cuDNN compared too). A sweep
    cell is never skipped: it re-measures on schedule so that a driver upgrade shows up."""
    if cell.sweep_cell:
        return False
    want_cudnn = canonical_stack(cell.stack()).cudnn
    for obs in store.iter_observations(observation_filter(cell), page=500):
        if not obs.valid:
            continue
        if want_cudnn and obs.stack.cudnn and obs.stack.cudnn != want_cudnn:
            continue
        return True
    return False
