"""Collectors never lose results: deliver a result document to the API, or spool it to disk.

``deliver`` posts a ``ResultDocument`` to ``POST /v1/observations``. When the API cannot take it
now (connection refused, timeout, 5xx, 408/429, or 401/403 — a token problem someone can fix) the
document is written to the spool directory (temp file + rename, so a crash never leaves half a
document) and ``flush`` re-sends it later, oldest first, deleting a file only after a 2xx. A
document the API rejects as invalid (other 4xx) would be rejected again, so it is moved to
``rejected/`` next to the spool with the server's message, not retried and not lost.

Ingest is idempotent (content-derived keys), so re-sending after an ambiguous failure (the server
stored the batch but the reply was lost) stores nothing twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field, ValidationError

from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import ResultDocument
from stack_advisor.store.base import validation_message

log = logging.getLogger(__name__)

SPOOL_SUFFIX = ".json"
REJECTED_DIR = "rejected"
RETRYABLE_STATUS = frozenset({401, 403, 408, 425, 429})
DEFAULT_TIMEOUT_S = 30.0


class DeliveryResult(BaseModel):
    """What happened to one document."""

    status: Literal["delivered", "spooled", "rejected"]
    http_status: int | None = None
    message: str = ""
    path: str | None = Field(default=None, description="spool or rejected file, when written")
    observations_new: int | None = None
    observations_received: int | None = None


class FlushResult(BaseModel):
    """What a flush of the spool did."""

    sent: int = 0
    rejected: int = 0
    remaining: int = 0
    observations_new: int = 0
    errors: list[str] = Field(default_factory=list)


def default_spool_dir() -> Path:
    """``$XDG_STATE_HOME/stack-advisor/spool`` (``~/.local/state/...`` when unset)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(state) / "stack-advisor" / "spool"


def pending(spool_dir: Path | str | None = None) -> list[Path]:
    """Spooled documents waiting to be sent, oldest first."""
    directory = Path(spool_dir) if spool_dir else default_spool_dir()
    if not directory.is_dir():
        return []
    return sorted(
        p
        for p in directory.iterdir()
        if p.is_file() and p.suffix == SPOOL_SUFFIX and not p.name.startswith(".")
    )


def _document_json(document: ResultDocument | dict[str, Any]) -> dict[str, Any]:
    if isinstance(document, ResultDocument):
        return document.model_dump(mode="json")
    try:
        return ResultDocument.model_validate(document).model_dump(mode="json")
    except ValidationError as exc:
        raise InvalidInput("result document: " + validation_message(exc)) from None


def _atomic_write(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def spool(document: ResultDocument | dict[str, Any], spool_dir: Path | str | None = None) -> Path:
    """Write a document into the spool (once per content) and return its path."""
    payload = _document_json(document)
    directory = Path(spool_dir) if spool_dir else default_spool_dir()
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    for existing in directory.glob(f"*-{digest}{SPOOL_SUFFIX}") if directory.is_dir() else ():
        return existing
    # Nanosecond time first, so names sort oldest first.
    path = directory / f"{time.time_ns():020d}-{digest}{SPOOL_SUFFIX}"
    _atomic_write(path, payload)
    return path


def _reject(path_or_payload: Path | dict[str, Any], directory: Path, message: str) -> Path:
    rejected = directory / REJECTED_DIR
    rejected.mkdir(parents=True, exist_ok=True)
    if isinstance(path_or_payload, Path):
        target = rejected / path_or_payload.name
        os.replace(path_or_payload, target)
    else:
        digest = hashlib.sha256(json.dumps(path_or_payload, sort_keys=True).encode()).hexdigest()
        target = rejected / f"{time.time_ns():020d}-{digest[:16]}{SPOOL_SUFFIX}"
        _atomic_write(target, path_or_payload)
    target.with_suffix(".error.txt").write_text(message + "\n")
    return target


def _post(
    client: httpx.Client, api_url: str, payload: dict[str, Any]
) -> tuple[Literal["ok", "retry", "reject"], int | None, str, dict[str, Any] | None]:
    url = api_url.rstrip("/") + "/v1/observations"
    try:
        response = client.post(url, json=payload)
    except httpx.TransportError as exc:
        return "retry", None, f"cannot reach {api_url}: {type(exc).__name__}: {exc}", None
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success:
        return "ok", response.status_code, "stored", body if isinstance(body, dict) else None
    message = (body.get("message") if isinstance(body, dict) else None) or response.text[:200]
    message = f"HTTP {response.status_code}: {message}"
    if response.status_code >= 500 or response.status_code in RETRYABLE_STATUS:
        return "retry", response.status_code, message, None
    return "reject", response.status_code, message, None


def _client(
    token: str | None, timeout: float, transport: httpx.BaseTransport | None
) -> httpx.Client:
    headers = {"User-Agent": "stack-advisor-collector"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(headers=headers, timeout=timeout, transport=transport)


def deliver(
    document: ResultDocument | dict[str, Any],
    api_url: str,
    token: str | None,
    spool_dir: Path | str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    transport: httpx.BaseTransport | None = None,
) -> DeliveryResult:
    """Post one document; spool it when the API cannot take it now.

    Raises:
        InvalidInput: the document itself is malformed (names the field); nothing is sent.
    """
    payload = _document_json(document)
    directory = Path(spool_dir) if spool_dir else default_spool_dir()
    with _client(token, timeout, transport) as client:
        outcome, status, message, body = _post(client, api_url, payload)
    if outcome == "ok":
        return DeliveryResult(
            status="delivered",
            http_status=status,
            message=message,
            observations_new=(body or {}).get("observations_new"),
            observations_received=(body or {}).get("observations_received"),
        )
    if outcome == "retry":
        path = spool(payload, directory)
        log.warning("API not taking results now (%s); spooled to %s", message, path)
        return DeliveryResult(status="spooled", http_status=status, message=message, path=str(path))
    path = _reject(payload, directory, message)
    log.error("API rejected the document (%s); kept in %s", message, path)
    return DeliveryResult(status="rejected", http_status=status, message=message, path=str(path))


def flush(
    api_url: str,
    token: str | None,
    spool_dir: Path | str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    transport: httpx.BaseTransport | None = None,
) -> FlushResult:
    """Re-send spooled documents, oldest first; stop at the first one the API cannot take now
    (the rest stay spooled, in order)."""
    directory = Path(spool_dir) if spool_dir else default_spool_dir()
    result = FlushResult()
    files = pending(directory)
    with _client(token, timeout, transport) as client:
        for index, path in enumerate(files):
            try:
                payload = json.loads(path.read_text())
            except FileNotFoundError:
                continue  # another flush sent it
            except (OSError, ValueError) as exc:
                _reject(path, directory, f"unreadable spool file: {exc}")
                result.rejected += 1
                result.errors.append(f"{path.name}: unreadable ({exc})")
                continue
            outcome, _status, message, body = _post(client, api_url, payload)
            if outcome == "ok":
                path.unlink(missing_ok=True)
                result.sent += 1
                result.observations_new += int((body or {}).get("observations_new") or 0)
            elif outcome == "reject":
                _reject(path, directory, message)
                result.rejected += 1
                result.errors.append(f"{path.name}: {message}")
            else:
                result.errors.append(f"{path.name}: {message}")
                result.remaining = len(files) - index
                break
    return result
