"""Inside a Kubernetes pod: the node name and labels, from the downward API.

Node name: ``NODE_NAME`` (``env: valueFrom: fieldRef: spec.nodeName``). Labels:
``ADVISOR_NODE_LABELS`` (JSON object or ``k=v,k=v``), else the downward-API volume file
``/etc/podinfo/labels`` (lines ``key="value"``; the path can be changed with
``ADVISOR_LABELS_FILE``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stack_advisor.collectors.fingerprint.sources import FileRoot, fact, unknown

DEFAULT_LABELS_FILE = "/etc/podinfo/labels"


def parse_labels_file(text: str) -> dict[str, str]:
    """The downward API's labels file: one ``key="value"`` per line (value JSON-quoted)."""
    labels: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or "=" not in line:
            continue
        key, _, raw = line.partition("=")
        try:
            value = json.loads(raw) if raw.startswith('"') else raw
        except json.JSONDecodeError:
            value = raw.strip('"')
        labels[key.strip()] = str(value)
    return labels


def parse_labels_env(text: str) -> dict[str, str]:
    """``ADVISOR_NODE_LABELS``: a JSON object or ``k=v,k=v``. Raises ValueError naming the bad
    part."""
    text = text.strip()
    if text.startswith("{"):
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"ADVISOR_NODE_LABELS must be a JSON object, got {text!r}")
        return {str(k): str(v) for k, v in data.items()}
    labels: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise ValueError(f"ADVISOR_NODE_LABELS entry {part!r} is not key=value")
        key, _, value = part.partition("=")
        labels[key.strip()] = value.strip()
    return labels


def read_kube(env: Mapping[str, str], root: FileRoot) -> dict[str, Any]:
    out: dict[str, Any] = {
        "in_pod": fact("KUBERNETES_SERVICE_HOST" in env, "env KUBERNETES_SERVICE_HOST")
    }
    node = env.get("NODE_NAME")
    out["node_name"] = (
        fact(node, "env NODE_NAME (downward API spec.nodeName)")
        if node
        else unknown("env NODE_NAME", "not set")
    )
    if env.get("ADVISOR_NODE_LABELS"):
        try:
            out["labels"] = fact(
                parse_labels_env(env["ADVISOR_NODE_LABELS"]), "env ADVISOR_NODE_LABELS"
            )
        except (ValueError, json.JSONDecodeError) as exc:
            out["labels"] = unknown("env ADVISOR_NODE_LABELS", str(exc))
    else:
        path = env.get("ADVISOR_LABELS_FILE", DEFAULT_LABELS_FILE)
        text = root.read(path)
        out["labels"] = (
            fact(parse_labels_file(text), path)
            if text is not None
            else unknown(path, "not present")
        )
    for key, var in (
        ("pod_name", "POD_NAME"),
        ("pod_namespace", "POD_NAMESPACE"),
        ("image", "ADVISOR_IMAGE"),
    ):  # the plan's Job says which image it runs
        if env.get(var):
            out[key] = fact(env[var], f"env {var}")
    return out
