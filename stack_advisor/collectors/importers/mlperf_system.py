"""Fields of an MLPerf system description (``systems/<system_id>.json``), shared by the
Inference and Training importers: counts, accelerator model and count, memory, vendor.

Keys a later round adds are simply not read; a count that cannot be read raises ValueError,
which the importers report with the file's path.
"""

from __future__ import annotations

import json
import re
from typing import Any

NOT_AN_ACCELERATOR = {"", "-", "n/a", "na", "none", "null", "cpu"}
_HETERO = re.compile(r"(\d+)\s*nodes?\s*:\s*([^,]+?)\s*x\s*(\d+)", re.IGNORECASE)


def whole_number(value: Any) -> int | None:
    """An int from an int, a whole float or a digit string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
        return int(value)
    return None


def memory_mib(value: Any) -> int | None:
    """MiB from text such as ``80 GB`` or ``183359 MiB``; None when it is not that."""
    match = re.fullmatch(
        r"\s*(\d+(?:\.\d+)?)\s*(GB|GiB|MB|MiB|TB)\s*", str(value or ""), re.IGNORECASE
    )
    if not match:
        return None
    amount, unit = float(match.group(1)), match.group(2).lower()
    factor = {"gb": 1024, "gib": 1024, "mb": 1, "mib": 1, "tb": 1024 * 1024}[unit]
    return int(amount * factor)


def flat_text(value: Any) -> str:
    """A field as one line of text (JSON for objects and lists)."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(", ", ": "))
    return " ".join(str(value).split())


def accelerators(fields: dict[str, Any]) -> tuple[str, str, int, int]:
    """(model or "" when CPU-only, per-node as written, total count, nodes).

    Raises:
        ValueError: a count that cannot be read.
    """
    model = flat_text(fields.get("accelerator_model_name"))
    per_node_raw = fields.get("accelerators_per_node")
    per_node_text = flat_text(per_node_raw)
    nodes = whole_number(fields.get("number_of_nodes"))
    if nodes is None:
        if fields.get("number_of_nodes") in (None, ""):
            nodes = 1
        else:
            raise ValueError(
                "number_of_nodes is not a count (a whole number, 1 or more): "
                f"{fields.get('number_of_nodes')!r}"
            )
    if nodes < 1:
        raise ValueError(
            f"number_of_nodes must be at least 1, got {fields.get('number_of_nodes')!r}"
        )
    per_node = whole_number(per_node_raw)
    if model.lower() in NOT_AN_ACCELERATOR - {"cpu"} and per_node:  # counted, not named
        raise ValueError(
            f"accelerators_per_node is {per_node} but accelerator_model_name is blank: which "
            "accelerator ran is not said (a CPU-only system counts none)"
        )
    if per_node_text.lower() in NOT_AN_ACCELERATOR - {"", "cpu"}:
        per_node_text = ""  # "N/A": no accelerator, said in words
    if model.lower() in NOT_AN_ACCELERATOR or per_node == 0 or (per_node_text == "" and not model):
        return "", per_node_text, 0, nodes
    hetero = _HETERO.findall(model)
    if hetero:
        return model, per_node_text, sum(int(n) * int(k) for n, _, k in hetero), nodes
    if per_node is None or per_node < 0:
        raise ValueError(
            f"accelerators_per_node is not a count (a whole number, 0 or more): {per_node_raw!r}"
        )
    return model, per_node_text, per_node * nodes, nodes


def vendor(model: str) -> str | None:
    """The accelerator vendor from words in its model name; None when none is recognised."""
    lowered = model.lower()
    for name, words in (
        (
            "nvidia",
            (
                "nvidia",
                "tesla",
                "geforce",
                "jetson",
                "a100",
                "h100",
                "a30",
                "a10",
                "t4",
                "a2",
                "l4",
                "orin",
                "xavier",
            ),
        ),
        ("qualcomm", ("qualcomm", "qaic", "cloud ai 100")),
        ("amd", ("amd", "instinct", "radeon", "xilinx")),
        ("intel", ("intel", "habana", "gaudi")),
        ("google", ("tpu",)),
    ):
        if any(re.search(r"\b" + re.escape(w) + r"\b", lowered) for w in words):
            return name
    return None
