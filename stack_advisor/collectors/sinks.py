"""Where result documents go, one seam for ``advisor collect`` and ``advisor sweep``: a store
(``StoreSink``), a served API with the spool behind it (``ApiSink``), nowhere (``NoSink``: only
the file a ``CopySink`` around it writes, ``--out``). Each keeps what its deliveries came to
(``summary``) for the command's report."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from stack_advisor.schema.models import ResultDocument


class Sink:
    """Where documents go: ``deliver`` one (the number of new observations); ``has_run`` says
    whether a run id is already stored; ``identity`` keeps the ledgers of two stores apart (a sweep
    into a new store runs again); ``summary`` what the deliveries came to, for a report."""

    identity: str = ""

    def summary(self) -> dict[str, Any]:
        return {}

    def deliver(self, document: ResultDocument) -> int:
        raise NotImplementedError(type(self).__name__)

    def has_run(self, run_id: str, host: str) -> bool:
        raise NotImplementedError(type(self).__name__)


class StoreSink(Sink):
    """A store (local, Neo4j, or the REST store of a served API): each document ingested."""

    def __init__(self, store: Any, uri: str | None = None) -> None:
        self.store = store
        # what was added to the store, not revised: a sweep's ledger keys on it
        self.identity = store.store_identity() or f"{type(store).__name__}:{uri or 'default'}"
        self.ingested: list[Any] = []

    def deliver(self, document: ResultDocument) -> int:
        result = self.store.ingest_document(document)
        self.ingested.append(result)
        return int(result.observations_new)

    def summary(self) -> dict[str, Any]:
        return {
            "stored": {
                "observations_new": sum(r.observations_new for r in self.ingested),
                "observations_received": sum(r.observations_received for r in self.ingested),
                "failures_new": sum(r.failures_new for r in self.ingested),
            }
        }

    def has_run(self, run_id: str, host: str) -> bool:
        from stack_advisor.schema.models import ObservationFilter

        return bool(
            self.store.query_observations(ObservationFilter(run_id=run_id, host=host), limit=1)
        )


class NoSink(Sink):
    """No store (``--no-store``): the documents only go where a ``CopySink`` around it writes them;
    whether a run is stored cannot be asked, so the ledger is trusted."""

    identity = "no-store"

    def deliver(self, document: ResultDocument) -> int:
        return 0

    def has_run(self, run_id: str, host: str) -> bool:
        return True


class CopySink(Sink):
    """Another sink, with every document it takes also written to a JSON file (the list ``advisor
    collect --out`` writes): the sweep's result documents to commit or carry to another store."""

    def __init__(self, inner: Sink, path: Path) -> None:
        self.inner, self.path, self.identity = inner, path, inner.identity
        self.texts: list[str] = []  # each document serialised once; the file is their list

    def deliver(self, document: ResultDocument) -> int:
        # the file first: a document the inner sink refuses or fails on is still kept
        self.texts.append(json.dumps(document.model_dump(mode="json"), indent=1))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text("[\n" + ",\n".join(self.texts) + "\n]")
        os.replace(tmp, self.path)  # a crash never leaves half a file
        return self.inner.deliver(document)

    def has_run(self, run_id: str, host: str) -> bool:
        return self.inner.has_run(run_id, host)

    def summary(self) -> dict[str, Any]:
        return {"out": str(self.path), **self.inner.summary()}


class ApiSink(Sink):
    """The API, as ``advisor collect --api`` sends: unreachable → spooled, re-sent later."""

    def __init__(self, url: str, token: str | None) -> None:
        self.url, self.token = url, token
        self.identity = f"api:{url.rstrip('/')}"
        self.results: list[Any] = []  # spool.Delivery of each document, in order

    def deliver(self, document: ResultDocument) -> int:
        from stack_advisor.collectors import spool

        result = spool.deliver(document, self.url, self.token)
        self.results.append(result)
        return result.observations_new or 0

    def summary(self) -> dict[str, Any]:
        return {"delivery": [r.model_dump() for r in self.results]}

    def has_run(self, run_id: str, host: str) -> bool:
        from stack_advisor.schema.errors import AdvisorError
        from stack_advisor.schema.models import ObservationFilter
        from stack_advisor.store.rest_store import RestStore

        store = RestStore(self.url, self.token)
        try:
            return bool(
                store.query_observations(ObservationFilter(run_id=run_id, host=host), limit=1)
            )
        except AdvisorError:
            # cannot ask (unreachable, no read scope): trust the ledger, do not measure twice
            return True
        finally:
            store.close()
