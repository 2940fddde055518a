"""Load collector result documents (``ResultDocument`` JSON) from files.

A file holds one document or a list of them. Every document of every file is validated before
anything is written, so a bad field anywhere means nothing is imported; the error names the
file, the document's index and the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from stack_advisor.collectors.importers.limits import ImportLimits, limit_error, load_json
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import IngestBatch, IngestResult, ResultDocument
from stack_advisor.store.base import Store, validation_message


def load_documents(path: str | Path) -> list[ResultDocument]:
    """The result documents in one JSON file.

    Raises:
        InvalidInput: the file is missing, not JSON, or a document is malformed (the message
            names the file, the document index and the field).
    """
    file = Path(path)
    return _documents(_read_json(file), file)


def read_json_file(file: Path, limits: ImportLimits | None = None) -> Any:
    """One JSON file within the import limits (size checked before reading, depth and objects
    before parsing, a key given two values refused).

    Raises:
        InvalidInput: missing, unreadable or not JSON (naming the file).
        ImportLimitExceeded: over a limit (naming the file and the limit).
    """
    limits = limits or ImportLimits.from_env()
    try:
        size = file.stat().st_size
        if size > limits.json_bytes:
            raise limit_error(str(file), f"JSON of {size:,} bytes", "json_bytes", limits.json_bytes)
        data = file.read_bytes()
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {str(file)!r}") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {str(file)!r}: {exc}") from None
    try:
        return load_json(data, str(file), limits)
    except ValueError as exc:
        raise InvalidInput(f"{file}: not JSON ({exc})") from None


def _read_json(file: Path) -> Any:
    return read_json_file(file)


def _documents(data: Any, file: Path) -> list[ResultDocument]:
    items = data if isinstance(data, list) else [data]
    documents: list[ResultDocument] = []
    for index, item in enumerate(items):
        where = f"{file}[{index}]" if isinstance(data, list) else str(file)
        if not isinstance(item, dict):
            raise InvalidInput(
                f"{where}: a result document must be a JSON object, got {type(item).__name__}"
            )
        try:
            documents.append(ResultDocument.model_validate(item))
        except ValidationError as exc:
            raise InvalidInput(f"{where}: {validation_message(exc)}") from None
    return documents


def documents_batch(documents: Iterable[ResultDocument]) -> IngestBatch:
    """All documents as one batch (one transaction)."""
    batch = IngestBatch()
    for document in documents:
        part = document.to_batch()
        batch.observations.extend(part.observations)
        batch.failures.extend(part.failures)
        batch.runs.extend(part.runs)
    return batch


def import_result_files(paths: Iterable[str | Path], store: Store) -> tuple[int, IngestResult]:
    """Validate every document of every file, then write them in one transaction.

    Returns:
        (number of documents, the store's ingest result).
    """
    documents: list[ResultDocument] = []
    for path in paths:
        documents.extend(load_documents(path))
    return len(documents), store.ingest(documents_batch(documents))


def load_batch_file(path: str | Path) -> IngestBatch:
    """One JSON file as one batch: result documents (one or a list, as ``advisor import results``
    reads them) or an ingest batch (``{"observations": [...], "failures": [...], "runs": [...]}``,
    as ``POST /v1/batches`` takes it).

    Raises:
        InvalidInput: as ``load_documents``, the file and field named.
    """
    file = Path(path)
    data = _read_json(file)
    if (
        isinstance(data, dict)
        and "run" not in data
        and {"observations", "failures", "runs"} & data.keys()
    ):
        try:
            return IngestBatch.model_validate(data)
        except ValidationError as exc:
            raise InvalidInput(f"{file}: {validation_message(exc)}") from None
    return documents_batch(_documents(data, file))
