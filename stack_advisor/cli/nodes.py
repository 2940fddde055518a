"""`advisor nodes`: the cluster's nodes as GPU feature discovery and NFD describe them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from stack_advisor.cli.options import PLACEMENTS, FormatOpt, JsonOpt, StoreOpt, choose
from stack_advisor.cli.render import info, output_format, render

if TYPE_CHECKING:
    from stack_advisor.schema.inventory import ClusterNode

nodes_app = typer.Typer(
    help="Node inventory from GPU feature discovery and NFD labels.", no_args_is_help=True
)

KubeconfigOpt = Annotated[
    str | None,
    typer.Option(
        "--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig file (default: in-cluster)."
    ),
]
SelectorOpt = Annotated[
    str | None, typer.Option("--selector", "-l", help="Only nodes matching this label selector.")
]
COLUMNS = ["node", "gpu", "gpus", "driver", "placement", "ready"]
INLINE = ["pool", "gpu_memory_mib", "cuda_driver", "mig", "cpu", "numa", "label_problems"]


def _nodes(kubeconfig: str | None, selector: str | None) -> list[ClusterNode]:
    from stack_advisor.collectors.executors.kubernetes import load_api_client
    from stack_advisor.schema.inventory import list_cluster_nodes

    return list_cluster_nodes(load_api_client(kubeconfig), selector)


@nodes_app.command("list")
def list_cmd(
    kubeconfig: KubeconfigOpt = None,
    selector: SelectorOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Show the cluster's nodes with their parsed GPU, driver and placement."""
    chosen = output_format(fmt, as_json)
    nodes = _nodes(kubeconfig, selector)
    render(
        [n.row() for n in nodes],
        fmt=chosen,
        title=f"{len(nodes)} node(s)",
        columns=COLUMNS,
        inline=INLINE,
        json_data=[n.model_dump(mode="json") for n in nodes],
    )


@nodes_app.command("pools")
def pools(
    kubeconfig: KubeconfigOpt = None,
    accelerator: Annotated[
        str | None, typer.Option("--accelerator", help="GPU product as GFD names it.")
    ] = None,
    placement: Annotated[
        str | None, typer.Option("--placement", help="bare-metal | passthrough | vgpu")
    ] = None,
    min_driver: Annotated[str | None, typer.Option("--min-driver", help="e.g. 535.104")] = None,
    min_gpus: Annotated[int, typer.Option("--min-gpus", min=0)] = 0,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Name the node pools that satisfy a recommendation, with the nodeSelector to reach them."""
    chosen = output_format(fmt, as_json)
    from stack_advisor.schema.inventory import nodes_satisfying
    from stack_advisor.schema.models import PlacementKind

    chosen_placement = choose(placement, PLACEMENTS, "--placement")
    kind = PlacementKind(chosen_placement) if chosen_placement else None
    groups = nodes_satisfying(
        _nodes(kubeconfig, None),
        accelerator=accelerator,
        placement=kind,
        min_driver=min_driver,
        min_gpus=min_gpus,
    )
    rows = []
    for pool, members in sorted(groups.items()):
        first = members[0]
        rows.append(
            {
                "pool": pool,
                "nodes": len(members),
                "gpu": first.accelerator.model if first.accelerator else None,
                "gpus_per_node": first.accelerator.count if first.accelerator else 0,
                "drivers": sorted({n.driver for n in members if n.driver}),
                "placements": sorted({n.placement.kind.value for n in members}),
                "node_selector": first.selector(),
            }
        )
    render(
        rows,
        fmt=chosen,
        title=f"{len(rows)} pool(s)",
        columns=["pool", "nodes", "gpu", "gpus_per_node", "placements"],
        details=["drivers", "node_selector"],
    )


@nodes_app.command("sync")
def sync(
    kubeconfig: KubeconfigOpt = None,
    selector: SelectorOpt = None,
    store: StoreOpt = None,
    cluster: Annotated[
        str, typer.Option("--cluster", help="Name the inventory is kept under.")
    ] = "default",
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Read the cluster's nodes and record them (hosts, accelerators, placements) in the store."""
    chosen = output_format(fmt, as_json)
    from stack_advisor.cli.plan import open_store_uri
    from stack_advisor.schema.errors import Unsupported

    nodes = _nodes(kubeconfig, selector)
    kb = open_store_uri(store)
    try:
        kb.ensure_schema()
        try:
            kb.sync_inventory(cluster, [n.model_dump(mode="json") for n in nodes])
        except NotImplementedError as exc:
            raise Unsupported(f"{exc}; use `advisor nodes list --json` meanwhile") from None
    finally:
        kb.close()
    info(
        f"synced {len(nodes)} node(s) of cluster {cluster!r} to "
        f"{getattr(kb, 'uri', '') or 'the store'}"
    )
    render(
        [n.row() for n in nodes],
        fmt=chosen,
        title=f"{len(nodes)} node(s)",
        columns=COLUMNS,
        inline=INLINE,
        json_data=[n.model_dump(mode="json") for n in nodes],
    )


@nodes_app.command("topology")
def topology(
    host: Annotated[
        str | None, typer.Option("--host", help="A host whose topology a collector stored.")
    ] = None,
    root: Annotated[
        str | None,
        typer.Option("--root", help="A recorded tree (sys/... and nvidia-smi-topo-m.txt)."),
    ] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Placement inside a node: its NUMA nodes and each GPU's and NIC's PCI address, NUMA node,
    local CPUs and links (this machine by default)."""
    from stack_advisor.cli.topology import load_topology, show

    chosen = output_format(fmt, as_json)
    found, source = load_topology(host=host, root=root, store_uri=store)
    show(found, source, chosen)


def register(app: typer.Typer) -> None:
    app.add_typer(nodes_app, name="nodes", rich_help_panel="Collect")
