"""The stack, accelerator, placement and host of a saved benchmark log (``advisor import
tf-cnn``), from a stack JSON, a fingerprint or result document, and flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _load_json_file(path: Path, what: str, *, documents: bool = False) -> dict[str, Any]:
    """A JSON object from ``path``; with ``documents``, also the list of result documents that
    `advisor collect --out` writes (the document run on TensorFlow if there is one, else the
    first: they share the node's accelerator, placement and host)."""
    from stack_advisor.collectors.importers.results import read_json_file
    from stack_advisor.schema.errors import InvalidInput

    try:
        data = read_json_file(path)  # within the import limits: size, depth, repeated keys
    except InvalidInput as exc:
        raise InvalidInput(f"{what}: {exc.message}") from None
    if documents and isinstance(data, list):
        docs = [d for d in data if isinstance(d, dict)]
        if not docs:
            raise InvalidInput(f"{what}: {str(path)!r} is a list without result documents")
        tf = [
            d
            for d in docs
            if isinstance(d.get("stack"), dict) and d["stack"].get("framework") == "tensorflow"
        ]
        data = dict((tf or docs)[0])
        if not tf and isinstance(
            data.get("stack"), dict
        ):  # another framework's run: keep the node's
            data["stack"] = {
                k: v
                for k, v in data["stack"].items()  # drivers, not its framework
                if k not in ("framework", "framework_version", "extra")
            }
    if not isinstance(data, dict):
        raise InvalidInput(
            f"{what}: {str(path)!r} must hold a JSON object, got {type(data).__name__}"
        )
    return data


def tf_cnn_context(
    *,
    stack_json: Path | None,
    fingerprint: Path | None,
    overrides: dict[tuple[str, str], Any],
) -> dict[str, Any]:
    """stack / accelerator / placement / host for a saved log, from a stack JSON (a
    ``SoftwareStack`` object, or a document with a ``stack`` key), a fingerprint (a document
    with ``stack``, ``accelerator``, ``placement`` and ``host`` keys, e.g. a result document)
    and flags, later ones winning. The fingerprint may also be the list `advisor collect --out`
    writes.

    Raises:
        InvalidInput: a file or value that does not fit; the message names the field.
    """
    from pydantic import BaseModel, ValidationError

    from stack_advisor.schema.errors import InvalidInput
    from stack_advisor.schema.models import Accelerator, Host, Placement, SoftwareStack
    from stack_advisor.store.base import validation_message

    parts: dict[str, dict[str, Any]] = {"stack": {}, "accelerator": {}, "placement": {}, "host": {}}
    if fingerprint is not None:
        data = _load_json_file(fingerprint, "--fingerprint", documents=True)
        for key in parts:
            if isinstance(data.get(key), dict):
                parts[key].update(data[key])
    if stack_json is not None:
        data = _load_json_file(stack_json, "--stack-json")
        parts["stack"].update(data["stack"] if isinstance(data.get("stack"), dict) else data)
    for (part, name), value in overrides.items():
        if value is not None:
            parts[part][name] = value
    if not parts["accelerator"].get("model"):
        raise InvalidInput(
            "accelerator: unknown; name it with --accelerator (e.g. 'NVIDIA A100-SXM4-40GB' or "
            "'CPU Intel Xeon ...') or pass --fingerprint"
        )
    models: dict[str, type[BaseModel]] = {
        "stack": SoftwareStack,
        "accelerator": Accelerator,
        "placement": Placement,
        "host": Host,
    }
    out: dict[str, Any] = {}
    for key, model in models.items():
        if key == "host" and not parts[key]:
            out[key] = None
            continue
        try:
            out[key] = model.model_validate(parts[key])
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc, prefix=key)) from None
    return out
