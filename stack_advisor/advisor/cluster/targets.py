"""What a cluster request asks of each node pool: the job's shape on the pool (units per pod, a
gang of nodes when the job is larger than one node), the what-if drivers checked, and the
(pool, shape, driver) targets the ranking runs on."""

from __future__ import annotations

import math

from stack_advisor.advisor.cluster.pool_snippets import vm_pool
from stack_advisor.advisor.cluster.pools import NodePool
from stack_advisor.advisor.cluster.results import JobShape
from stack_advisor.advisor.knowledge.rules import parse_version
from stack_advisor.advisor.manifests.target_kind import SnippetTarget
from stack_advisor.schema.errors import InvalidInput


def job_shape(pool: NodePool, gpus: int | None, nodes_count: int | None) -> JobShape | str:
    """Units per Pod and Pods for the job on this pool, or why the pool cannot take it."""
    slots = pool.gpus_per_node
    if nodes_count is not None and gpus is not None:
        if gpus % nodes_count:
            raise InvalidInput(
                f"--gpus {gpus} does not split evenly over --nodes-count {nodes_count}"
            )
        per, pods = gpus // nodes_count, nodes_count
    elif gpus is not None:
        pods = math.ceil(gpus / slots) if slots else 1
        per = math.ceil(gpus / pods)
    elif nodes_count is not None:
        per, pods = slots, nodes_count
    else:
        per, pods = slots, 1
    if per > slots:
        return f"needs {per} x {pool.resource} per node; its nodes have {slots}"
    if pods > pool.schedulable_nodes:
        return (
            f"needs {pods} nodes of {per} x {pool.resource}; it has {pool.schedulable_nodes} "
            "schedulable"
        )
    return JobShape(units_per_pod=per, pods=pods, total_units=per * pods)


def parse_what_if(items: list[str] | None) -> dict[str, str]:
    """``POOL=VERSION`` flags → a mapping (the last one for a pool wins)."""
    out: dict[str, str] = {}
    for item in items or []:
        name, sep, version = item.rpartition("=")
        if not sep or not name.strip() or not version.strip():
            raise InvalidInput(
                f"--what-if-driver: {item!r} is not POOL=VERSION (e.g. t4-pool=550.54.15)"
            )
        out[name.strip()] = version.strip()
    return out


def checked_what_if(
    what_if_driver: dict[str, str] | None, by_name: dict[str, NodePool]
) -> dict[str, str]:
    """The what-if drivers by pool name, each checked: a known pool, a driver version, not below
    the oldest driver the pool's GPU runs on.

    Raises:
        InvalidInput: naming the pool and the version.
    """
    what_if = dict(what_if_driver or {})
    for name, version in what_if.items():
        if name not in by_name:
            import difflib

            close = difflib.get_close_matches(name, list(by_name), n=3, cutoff=0.4)
            raise InvalidInput(
                f"what_if_driver: no pool named {name!r}; "
                + (
                    "did you mean " + ", ".join(close) + "?"
                    if close
                    else "pools: " + ", ".join(sorted(by_name))
                )
            )
        parsed = parse_version(version)
        if parsed is None:
            raise InvalidInput(
                f"what_if_driver: {name}={version!r} is not a driver version (e.g. 550.54.15)"
            )
        floor = parse_version(by_name[name].min_driver)
        if floor is not None and parsed < floor:
            raise InvalidInput(
                f"what_if_driver: {name}={version} is below {by_name[name].min_driver}, the oldest "
                f"driver its {by_name[name].product} runs on"
            )
    return what_if


def pool_targets(
    pools: list[NodePool],
    by_name: dict[str, NodePool],
    what_if: dict[str, str],
    gpus: int | None,
    nodes_count: int | None,
    snippet: SnippetTarget = SnippetTarget.POD,
) -> tuple[
    list[str], dict[str, str], dict[str, JobShape], list[tuple[NodePool, JobShape, str | None]]
]:
    """(notes, excluded pools with the reason, the job's shape per pool, the (pool, shape, driver)
    targets to rank): usable pools on their driver (or the what-if one), and pools unusable on
    their driver that the what-if driver makes usable. A ``kubevirt`` snippet places VMs: the
    pools the GPU Operator gave to VMs are the ones ranked (``pool_snippets.vm_pool``)."""
    notes: list[str] = []
    excluded: dict[str, str] = {}
    shapes: dict[str, JobShape] = {}
    targets: list[tuple[NodePool, JobShape, str | None]] = []
    for pool in pools:
        if snippet is SnippetTarget.KUBEVIRT and pool.kind == "gpu":
            as_vm, why = vm_pool(pool)
            if as_vm is None:
                excluded[pool.name] = why
                continue
            pool = as_vm
        if not pool.usable:
            excluded[pool.name] = str(pool.reason)
            continue
        if pool.kind == "cpu" and gpus is not None:
            excluded[pool.name] = f"CPU-only pool: the job asks for {gpus} GPU(s)"
            continue
        if pool.accelerator is None and pool.kind == "gpu":
            notes.append(
                f"pool {pool.name}: GPU product {pool.product!r} is not in the "
                "accelerator catalogue: only results held under that name answer for it "
                "(no figure is transferred to a part without published specs)"
            )
        shape = job_shape(pool, gpus, nodes_count)
        if isinstance(shape, str):
            excluded[pool.name] = shape
            continue
        shapes[pool.name] = shape
        targets.append((pool, shape, what_if.get(pool.name, pool.driver)))
    for (
        name,
        version,
    ) in what_if.items():  # a pool unusable on its driver may be usable on the new one
        pool = by_name[name]
        if (
            not pool.usable
            and pool.reason
            and pool.reason.startswith("driver ")
            and name not in shapes
        ):
            shape = job_shape(pool, gpus, nodes_count)
            if not isinstance(shape, str):
                excluded.pop(name, None)
                shapes[name] = shape
                targets.append((pool, shape, version))
    return notes, excluded, shapes, targets
