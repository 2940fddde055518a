"""Where a cluster's nodes come from: ``kubectl get nodes -o json`` (with NodeResourceTopology
and ResourceSlice objects beside them), a file of it, or an inventory ``advisor nodes sync``
recorded. ``pools`` groups what these return."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from stack_advisor.advisor.budget import checkpoint
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.inventory import ClusterNode, parse_node, with_dra
from stack_advisor.schema.resource_slices import KIND as RESOURCE_SLICE
from stack_advisor.schema.resource_slices import devices_by_node


def nodes_from_json(data: Any, *, where: str = "--nodes") -> list[ClusterNode]:
    """``kubectl get nodes -o json`` (a NodeList or a List of Nodes), a list of Node objects, or
    a list of stored inventory documents (``ClusterNode``) → parsed nodes.

    Raises:
        InvalidInput: not a node list; the message names the item and what is missing.
    """
    items = data.get("items") if isinstance(data, dict) else data
    if isinstance(data, dict) and data.get("kind") == "Node":
        items = [data]
    if not isinstance(items, list):
        raise InvalidInput(
            f"{where}: expected `kubectl get nodes -o json` output (a NodeList with items), "
            f"got {type(data).__name__}"
        )
    topologies = nrt_items(items)
    dra = devices_by_node(items)  # `kubectl get nodes,resourceslices -o json`: DRA-only GPUs
    out = []
    for i, item in enumerate(items):
        checkpoint("reading the nodes")
        if not isinstance(item, dict):
            raise InvalidInput(
                f"{where}: items.{i}: expected a Node object, got {type(item).__name__}"
            )
        if item.get("kind") in ("NodeResourceTopology", RESOURCE_SLICE):
            continue
        out.append(_node(item, f"{where}: items.{i}", topologies, dra))
    return out


def _node(
    item: dict[str, Any],
    at: str,
    topologies: dict[str, dict[str, Any]],
    dra: dict[str, list[Any]],
) -> ClusterNode:
    """One item: a Node object as the API returns it, or a stored inventory node.

    Raises:
        InvalidInput: neither; ``at`` (``--nodes: items.3``) names the item.
    """
    if "metadata" in item:
        if item.get("kind", "Node") != "Node":
            raise InvalidInput(f"{at}: kind {item.get('kind')!r} is not a Node")
        meta = item.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            raise InvalidInput(f"{at}.metadata.name: a Node needs a name")
        try:
            node = parse_node(item, topologies.get(meta["name"]))
            return with_dra(node, dra.get(meta["name"], []))
        except (
            TypeError,
            AttributeError,
            KeyError,
            ValueError,
        ) as exc:  # pydantic's errors are ValueErrors
            raise InvalidInput(
                f"{at} ({meta['name']}): not a Node object as the API returns "
                f"it: {str(exc).splitlines()[0]}"
            ) from None
    else:
        try:
            return ClusterNode.model_validate(item)
        except ValidationError as exc:
            from stack_advisor.store.base import validation_message

            raise InvalidInput(
                f"{at}: neither a Node object nor a stored inventory node: "
                f"{validation_message(exc)}"
            ) from None


def nrt_items(items: list[Any]) -> dict[str, dict[str, Any]]:
    """NodeResourceTopology objects given with the nodes (``kubectl get nodes,noderesourcetopologies
    -o json``), by node name."""
    return {
        item["metadata"]["name"]: item
        for item in items
        if isinstance(item, dict)
        and item.get("kind") == "NodeResourceTopology"
        and isinstance(item.get("metadata"), dict)
        and item["metadata"].get("name")
    }


def read_nodes_file(path: str, stdin_text: str | None = None) -> list[ClusterNode]:
    """Nodes from a file (or ``-`` with the text read from stdin)."""
    if path == "-":
        text = stdin_text or ""
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"--nodes: cannot read {path!r}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"--nodes: {path!r} is not a text file (byte {exc.start} is not UTF-8); pass "
                "the JSON `kubectl get nodes -o json` writes"
            ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"--nodes: {path!r} is not JSON (write it with `kubectl get nodes -o json`): {exc}"
        ) from None
    return nodes_from_json(data)


def nodes_from_inventory(store: Any, cluster: str) -> list[ClusterNode]:
    """The nodes ``advisor nodes sync --cluster NAME`` recorded.

    Raises:
        NotFound: no inventory under that name; the message lists the ones there are.
    """
    try:
        docs = store.list_inventory(cluster)
    except NotImplementedError as exc:
        raise InvalidInput(f"--cluster: {exc}; pass the nodes with --nodes FILE instead") from None
    if not docs:
        raise NotFound(
            f"cluster: no inventory named {cluster!r} in this store "
            "(record one with `advisor nodes sync --cluster NAME`, or pass --nodes FILE)"
        )
    return nodes_from_json(docs, where="--cluster")
