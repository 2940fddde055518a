"""``advisor recommend --cluster NAME | --nodes FILE``: rank the user's node pools and the stacks
each can run. Thin: nodes in, ``stack_advisor.advisor.cluster.advice`` answers,
``stack_advisor.cli.render`` prints."""

from __future__ import annotations

import sys
from typing import Any


def load_nodes(kb: Any, *, cluster: str | None, nodes_file: str | None) -> tuple[list[Any], str]:
    """The nodes of a recorded inventory or of a ``kubectl get nodes -o json`` file, and a source
    name for the answer."""
    from stack_advisor.advisor.cluster.pools import nodes_from_inventory, read_nodes_file
    from stack_advisor.schema.errors import InvalidInput

    if cluster and nodes_file:
        raise InvalidInput("--cluster and --nodes are two sources of the same nodes: give one")
    if cluster:
        return nodes_from_inventory(kb, cluster), f"cluster {cluster}"
    assert nodes_file is not None
    try:
        stdin = sys.stdin.read() if nodes_file == "-" else None
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"--nodes: standard input is not text (byte {exc.start} is not UTF-8); pipe "
            "the JSON `kubectl get nodes -o json` writes"
        ) from None
    return read_nodes_file(nodes_file, stdin), f"nodes file {nodes_file}"


def load_pools(
    kb: Any, *, cluster: str | None, nodes_file: str | None, pool_label: str | None
) -> tuple[list[Any], str]:
    """The pools of those nodes (``load_nodes``), and the source name."""
    from stack_advisor.advisor.cluster.advice import pools_of

    nodes, source = load_nodes(kb, cluster=cluster, nodes_file=nodes_file)
    return pools_of(nodes, kb, pool_label=pool_label), source


def _answer(
    adv: Any,
    workload: Any,
    cluster: str | None,
    nodes_file: str | None,
    options: dict[str, Any],
) -> Any:
    """The cluster recommendation: a served API reads its own inventory, or the nodes sent; a
    local advisor reads the nodes from the store, the cluster or the file."""
    from stack_advisor.advisor.remote import RemoteAdvisor

    if isinstance(adv, RemoteAdvisor):
        nodes = (
            None
            if cluster and not nodes_file
            else load_nodes(None, cluster=cluster, nodes_file=nodes_file)[0]
        )
        return adv.recommend_cluster(
            workload,
            cluster=cluster if nodes is None else None,
            nodes=None if nodes is None else [n.model_dump(mode="json") for n in nodes],
            **options,
        )
    from stack_advisor.advisor.cluster.advice import recommend_nodes

    nodes, source = load_nodes(adv.store, cluster=cluster, nodes_file=nodes_file)
    return recommend_nodes(adv, workload, nodes, source=source, **options)


def run(
    adv: Any,
    workload: Any,
    *,
    cluster: str | None,
    nodes_file: str | None,
    pool_label: str | None,
    what_if: list[str] | None,
    gpus: int | None,
    nodes_count: int | None,
    image: str | None,
    per_pool: int,
    top: int,
    as_json: bool,
    snippets: bool,
) -> None:
    from stack_advisor.advisor.cluster.targets import parse_what_if

    options: dict[str, Any] = {
        "pool_label": pool_label,
        "top": top,
        "per_pool": per_pool,
        "gpus": gpus,
        "nodes_count": nodes_count,
        "image": image,
        "what_if_driver": parse_what_if(what_if),
    }
    result = _answer(adv, workload, cluster, nodes_file, options)
    if (
        not result.recommendations
        and gpus is not None
        and any(why.startswith("needs ") for why in result.excluded_pools.values())
    ):
        from stack_advisor.schema.errors import InvalidInput

        raise InvalidInput(
            f"--gpus {gpus}: no pool offers that many; "
            + "; ".join(f"{name}: {why}" for name, why in sorted(result.excluded_pools.items()))
        )
    from stack_advisor.cli.render import fail_if_empty, print_json

    if as_json:
        print_json(result)
    else:
        print_cluster(result, snippets)
    # the reasons are printed; an empty answer is not a success
    fail_if_empty(not result.recommendations, "no pool ranked (the pools' reasons say why)")


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def print_cluster(result: Any, snippets: bool) -> None:
    from stack_advisor.cli.render import info, render, stdout

    render(
        [p.row() for p in result.pools],
        as_json=False,
        title=f"{len(result.pools)} pool(s) from {result.source}",
    )
    rows = [
        {
            "#": r.rank,
            "pool": r.pool,
            "stack": r.stack_label,
            "driver": r.driver,
            "image": r.image,
            "basis": r.basis.value,
            "value": f"{_fmt(r.value)} [{_fmt(r.interval.low)}..{_fmt(r.interval.high)}]",
            "job": f"{r.shape.pods} x {r.shape.units_per_pod} {r.resource}",
            "job total": _fmt(r.job_value) if r.job_value is not None else "-",
        }
        for r in result.recommendations
    ]
    if result.recommendations:
        first = result.recommendations[0]
        # a throughput is per unit of its pool's resource (one GPU, one MIG slice, one node: the
        # job column names it), the job's total beside it
        per = " per unit of the pool's resource" if first.job_value is not None else ""
        render(
            rows,
            as_json=False,
            title=f"{result.workload.get('benchmark')} — {result.metric} "
            f"({first.score_unit}{per}), objective {result.objective}",
        )
    else:
        info(f"{result.workload.get('benchmark')}: no (pool, stack) can run it; the reasons follow")
    for r in result.recommendations:
        for w in r.warnings:
            stdout.print(f"  #{r.rank} {w}", highlight=False, markup=False)
    print_numa(result.recommendations)
    for name, why in sorted(result.excluded_pools.items()):
        info(f"pool {name}: {why}")
    for w in result.what_if:
        info(f"what-if: {w.summary}")
        if w.unlocked_stacks:
            info("  unlocks: " + "; ".join(w.unlocked_stacks))
    for note in result.notes:
        info(f"note: {note}")
    info(f"{result.elapsed_ms:.0f} ms")
    if snippets:
        for r in result.recommendations:
            stdout.print(f"# --- #{r.rank} {r.pool} ---")
            stdout.print(r.snippet_yaml, highlight=False, markup=False)
            if r.numa and r.numa.kubelet_config:
                from stack_advisor.advisor.manifests.pod import to_yaml

                stdout.print(
                    f"# --- #{r.rank} {r.pool}: KubeletConfiguration fragment for "
                    "the pool's nodes ---"
                )
                stdout.print(to_yaml(r.numa.kubelet_config), highlight=False, markup=False)


def print_numa(recommendations: list[Any]) -> None:
    """Placement inside the node, once per pool: the advice, the expected gain and its basis."""
    from stack_advisor.cli.render import info

    seen: set[str] = set()
    for r in recommendations:
        if r.numa is None or not r.numa.applies or r.pool in seen:
            continue
        seen.add(r.pool)
        info(f"numa {r.pool}: {r.numa.summary}")
        for g in r.numa.expected_gain:
            info(f"  expected gain {g.benchmark}: x{g.gain:.3g} ({g.basis}; {g.note})")
        if not r.numa.expected_gain:
            info(f"  expected gain: {r.numa.gain_note}")
        for line in r.numa.vm_pinning:
            info(f"  {line}")
