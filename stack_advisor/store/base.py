"""The one store interface. Backends: embedded (LadybugDB), Neo4j, and REST (our own API).

Public methods validate their arguments here and then call a private hook each backend
implements. The contract lives in these docstrings; implementations don't repeat it.
"""

from __future__ import annotations

import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Self

from pydantic import ValidationError

from stack_advisor.runtime.gc_pause import gc_paused
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.models import (
    Benchmark,
    EntityKind,
    Failure,
    IngestBatch,
    IngestResult,
    Observation,
    ObservationFilter,
    ResultDocument,
    SoftwareStack,
    StoredObservation,
    StoreStats,
    failure_class,
)

MAX_PAGE = 100_000
MAX_OFFSET = 100_000
"""Deeper than this, page with ``after`` (the last key of the previous page): an offset costs
every row before it, and the embedded engine crashes on a large ``SKIP``."""


MAX_CLUSTER_NAME = 253


@dataclass(frozen=True, slots=True)
class FlatContext:
    """A context as the flat read gives it: the keys of what its observations were measured
    on. Only contexts linked to a stack, an accelerator and a placement (as every written one
    is) appear; the paged read drops observations of any other."""

    context_id: str
    stack_id: str  # the key of the linked Stack node
    accelerator: str
    accelerator_count: int
    placement_kind: str
    host: str | None  # the name of a stored Host node; None when the context names none
    run_id: str | None
    source: str


@dataclass(slots=True)
class FlatRow:
    """One observation as flat scalars; its context and benchmark by key."""

    key: str
    metric: str
    value: float
    unit: str
    higher_is_better: bool
    valid: bool
    timestamp: datetime
    details: dict[str, str]  # the provenance details (rows may share one dict: read only)
    context_id: str
    benchmark_id: str  # the key of the linked Benchmark node


@dataclass
class FlatObservations:
    """Every observation of a store as rows in key order, with the contexts, stacks and
    benchmarks they refer to, each once (see ``Store.flat_observations``)."""

    rows: list[FlatRow]
    contexts: dict[str, FlatContext]
    stacks: dict[str, SoftwareStack]  # by the Stack node's key
    benchmarks: dict[str, Benchmark]  # by the Benchmark node's key


def cluster_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an inventory, or None. A name travels as one URL path segment
    (``PUT /v1/inventory/<name>``), so '.' and '..' (which clients and proxies collapse into
    another path), '/', and characters that are not printable text (controls, line separators,
    surrogates, U+FFFD from bytes that were not UTF-8) are refused; any other Unicode is kept."""
    if len(name) > MAX_CLUSTER_NAME:
        return f"it has {len(name)} characters; at most {MAX_CLUSTER_NAME}"
    if name in (".", ".."):
        return "'.' and '..' are path steps, not names"
    if "/" in name:
        return "it contains '/'"
    for ch in name:
        if ch == "\ufffd":
            return "it contains U+FFFD (bytes that were not UTF-8)"
        if unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp"):
            return f"it contains the non-printing character U+{ord(ch):04X}"
    if not name.strip():
        return "it is blank"
    return None


def validation_message(exc: ValidationError, prefix: str = "") -> str:
    """Turn a pydantic error into one line per field: 'observations.3.value: ...(got 'x')'."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        where = f"{prefix}{'.' if prefix and loc else ''}{loc}"
        got = err.get("input")
        message = str(err["msg"]).removeprefix("Value error, ")  # our own checks' words
        if isinstance(got, dict) and err.get("type") == "value_error":
            # a check across fields: its message says it all
            lines.append(f"{where}: {message}" if where else message)
            continue
        if err.get("type") == "missing":  # its input is the object it is missing from
            lines.append(f"{where}: {message}")
            continue
        shown = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
        if len(shown) > 80:  # a whole file read as one string, say
            shown = f"{shown[:60]}... ({len(str(got))} characters)"
        lines.append(f"{where}: {message} (got {shown})")
    return "; ".join(lines)


@gc_paused()
def checked_batch(batch: IngestBatch | dict[str, Any]) -> IngestBatch:
    """``batch`` validated, with names as the catalogue spells them (whatever the source wrote;
    the raw accelerator name stays in the provenance): one resolver for every writer.

    Raises:
        InvalidInput: a field is malformed; the message names the field and value.
    """
    from stack_advisor.catalog.canonical import canonical_batch

    if not isinstance(batch, IngestBatch):
        try:
            batch = IngestBatch.model_validate(batch)
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc)) from None
    # Duplicates inside one batch (same key) are collapsed by the backend, the last one kept.
    return canonical_batch(batch)


def _ignore_progress(done: int) -> None:
    return None


class Store(ABC):
    """A knowledge-graph store.

    All writes of one call happen in one transaction: on any error nothing is written.
    Identities are content-derived, so writing the same observation twice stores it once.
    """

    uri: str = ""

    # ---- abstract core -------------------------------------------------------------------
    @abstractmethod
    def _ensure_schema(self) -> int: ...

    @abstractmethod
    def _schema_version(self) -> int | None: ...

    @abstractmethod
    def _ingest(self, batch: IngestBatch) -> IngestResult: ...

    @abstractmethod
    def _query_observations(
        self, flt: ObservationFilter, limit: int, offset: int, after: str | None
    ) -> list[StoredObservation]: ...

    @abstractmethod
    def _list_entities(self, kind: EntityKind) -> list[dict[str, Any]]: ...

    @abstractmethod
    def _stats(self) -> StoreStats: ...

    @abstractmethod
    def close(self) -> None: ...

    # ---- public API ----------------------------------------------------------------------
    def ensure_schema(self) -> int:
        """Create constraints/indexes/tables and apply pending migrations, idempotently.

        Returns:
            The schema version now in the store.
        Raises:
            SchemaMismatch: the store was written by a newer schema than this code knows.
            StoreUnavailable: the store cannot be reached.
        """
        return self._ensure_schema()

    def schema_version(self) -> int | None:
        """The schema version recorded in the store, or None for an empty store."""
        return self._schema_version()

    def ping(self) -> None:
        """One quick attempt to reach the store, without the retries of a normal call (a
        circuit breaker's half-open probe). The default reads the schema version.

        Raises:
            StoreUnavailable: the store did not answer.
        """
        self._schema_version()

    def ingest(self, batch: IngestBatch | dict[str, Any]) -> IngestResult:
        """Write a batch of observations, failures and runs in one transaction.

        Args:
            batch: an ``IngestBatch`` or its JSON-like dict (validated here).
        Returns:
            How many observations/failures were received and how many were new.
        Raises:
            InvalidInput: a field is malformed; the message names the field and value. Nothing
                of the batch is written.
        """
        return self._ingest(checked_batch(batch))

    def ingest_many(
        self, batches: Iterable[IngestBatch | dict[str, Any]]
    ) -> Iterator[IngestResult]:
        """``ingest`` each batch in turn, yielding each one's result once it is committed: one
        transaction per batch, in order. A backend may prepare the next batch while the previous
        one is written (``CypherStore``: validation, name resolution and row shaping overlap the
        database's work on the batch before).

        Stops at the first batch that fails, with its error, after yielding the results of the
        batches before it (committed); that batch and the ones after it are not written. A
        caller that stops iterating has every batch whose result it got written, and no other.
        """
        for batch in batches:
            yield self.ingest(batch)

    def ingest_document(self, document: ResultDocument | dict[str, Any]) -> IngestResult:
        """Ingest a collector result document (see ``ResultDocument``)."""
        if not isinstance(document, ResultDocument):
            try:
                document = ResultDocument.model_validate(document)
            except ValidationError as exc:
                raise InvalidInput(validation_message(exc)) from None
        return self.ingest(document.to_batch())

    def ingest_observations(self, observations: Iterable[Observation]) -> IngestResult:
        return self.ingest(IngestBatch(observations=list(observations)))

    def record_failures(self, failures: Iterable[Failure]) -> IngestResult:
        """Record failures (a crashed or unsupported benchmark); idempotent like ``ingest``."""
        return self.ingest(IngestBatch(failures=list(failures)))

    def query_observations(
        self,
        flt: ObservationFilter | None = None,
        *,
        limit: int = 1000,
        offset: int = 0,
        after: str | None = None,
    ) -> list[StoredObservation]:
        """Observations matching every given filter, ordered by key (stable pagination).

        Args:
            limit: page size, 1..MAX_PAGE.
            offset: rows to skip (after ``after`` when both are given), 0..MAX_OFFSET.
            after: keyset cursor: only keys greater than this (the last key of the previous
                page); pages of any depth cost the same.
            flt: may bound the data generation of the batch that wrote each observation
                (``since_generation``, ``until_generation``; see ``observations_since``).
        Raises:
            InvalidInput: limit outside 1..MAX_PAGE, offset outside 0..MAX_OFFSET.
        """
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
        if not 0 <= offset <= MAX_OFFSET:
            raise InvalidInput(
                f"offset must be between 0 and {MAX_OFFSET}, got {offset}; page deeper with "
                "after=<the last key of the previous page>"
            )
        flt = flt or ObservationFilter()
        if flt.accelerator:  # stored names are the catalogue's: "NVIDIA A100-SXM-80GB" finds them
            from stack_advisor.catalog import resolve_accelerator

            match = resolve_accelerator(flt.accelerator)
            if match.resolved and match.kind in ("accelerator", "cpu"):
                flt = flt.model_copy(update={"accelerator": match.key})
        return self._query_observations(flt, limit, offset, after or None)

    def iter_observations(
        self, flt: ObservationFilter | None = None, page: int = 20_000
    ) -> Iterable[StoredObservation]:
        """Every matching observation, fetched page by page (keyset: each page starts after
        the last key of the one before)."""
        after: str | None = None
        while True:
            rows = self.query_observations(flt, limit=page, after=after)
            yield from rows
            if len(rows) < page:
                return
            after = rows[-1].key

    def flat_observations(
        self, progress: Callable[[int], None] | None = None
    ) -> FlatObservations | None:
        """Every observation, as the table the advisor builds needs them: flat rows in key order
        that refer to their contexts and benchmarks by key, each of those read once. The same
        observations as ``iter_observations()`` (those whose context has no stack, accelerator
        or placement left out), and many times cheaper to read than those models.

        Args:
            progress: called now and then with the number of rows read so far.
        Returns:
            The observations, or None when this store cannot give them so (read them with
            ``iter_observations``).
        """
        return self._flat_observations(progress or _ignore_progress)

    def _flat_observations(self, progress: Callable[[int], None]) -> FlatObservations | None:
        return None

    def observations_since(
        self, generation: int, *, until: int | None = None, page: int = 20_000
    ) -> Iterable[StoredObservation]:
        """What the batches after data generation ``generation`` wrote (up to ``until``,
        inclusive, when given), page by page in key order: what a cache of the observations at
        ``generation`` lacks. Each carries its ``generation``. Observations are only ever added
        between two generations of one store lineage (``cache_identity``): a deletion
        (``clear``, a migration that rewrites names) changes the identity instead.

        Raises:
            InvalidInput: a negative generation, or ``until`` below ``generation``.
        """
        if generation < 0 or (until is not None and until < generation):
            raise InvalidInput(
                f"observations since generation {generation} until {until}: give "
                "0 <= generation <= until"
            )
        return self.iter_observations(
            ObservationFilter(since_generation=generation, until_generation=until), page=page
        )

    def list_entities(self, kind: EntityKind | str) -> list[dict[str, Any]]:
        """Every node of one kind as plain dicts (properties as the schema names them). Failures
        carry their class too (``failure_class``: ``schema.models.FailureClass``'s value,
        from the stage, or the exception class for rows stored before the classes).

        Raises:
            InvalidInput: an unknown kind; the message lists the valid ones.
        """
        try:
            kind = EntityKind(kind)
        except ValueError:
            valid = ", ".join(k.value for k in EntityKind)
            raise InvalidInput(f"unknown entity kind {kind!r}; valid: {valid}") from None
        items = self._list_entities(kind)
        usage = getattr(self, "_accelerator_usage", None)
        if kind is EntityKind.ACCELERATORS and usage is not None:
            from stack_advisor.catalog.usage import describe_accelerators

            items = describe_accelerators(items, usage())
        if kind is EntityKind.FAILURES:
            items = [
                {**f, "failure_class": failure_class(f.get("stage"), f.get("error_class")).value}
                for f in items
            ]
        return items

    def get_observation(self, key: str) -> StoredObservation:
        """One observation by its key.

        Raises:
            InvalidInput: an empty key.
            NotFound: no observation has that key.
        """
        if not key:
            raise InvalidInput("key: give the observation's key (obs-...)")
        found = self._get_observation(key)
        if found is None:
            raise NotFound(f"no observation with key {key!r}")
        return found

    def _get_observation(self, key: str) -> StoredObservation | None:
        """A backend with a keyed lookup overrides this scan."""
        for obs in self.iter_observations():
            if obs.key == key:
                return obs
        return None

    def observation_values(self, keys: Iterable[str]) -> dict[str, float]:
        """The stored value of each of ``keys`` the store holds (keys it does not hold are left
        out): what an importer compares a re-imported result with, read in bulk."""
        return self._observation_values(list(dict.fromkeys(keys)))

    def _observation_values(self, keys: list[str]) -> dict[str, float]:
        """A backend with a bulk keyed read overrides this, one lookup per key."""
        out = {}
        for key in keys:
            found = self._get_observation(key)
            if found is not None:
                out[key] = found.value
        return out

    def revise_observations(self, observations: Iterable[Observation | dict[str, Any]]) -> int:
        """Replace what the store holds for each observation's key where its figure now reads
        otherwise (a publisher's correction; an importer's ``--replace-changed``): the figure,
        its samples, their spread (cleared where the new reading gives none: it described the
        old one) and its provenance. Keys the store does not hold, and figures it holds as
        they are, are left alone; returns how many were replaced. Not an addition: the cache
        identity moves on (``cache_identity``), so a cache of the store's data reads it all
        again; ``store_identity`` stays.

        Raises:
            InvalidInput: an observation is malformed (the message names the field).
            NotImplementedError: the backend keeps its observations as written; the message
                names the class.
        """
        batch = checked_batch({"observations": list(observations)})
        return self._revise_observations(batch) if batch.observations else 0

    def _revise_observations(self, batch: IngestBatch) -> int:
        raise NotImplementedError(f"{type(self).__name__} cannot revise stored observations")

    def store_identity(self) -> str | None:
        """A token for what was added to this store: it changes when the store is emptied and
        set up again or migrated, not when a figure is revised (``revise_observations``); what
        a sweep's ledger of measured cells keys on. The cache identity by default."""
        return self.cache_identity()

    def cache_identity(self) -> str | None:
        """A token for caches of derived data (the advisor's persisted table and model), which
        they key together with the data generation: it differs between two stores and changes
        when a store is emptied and its schema created again, or a stored figure is revised
        (``revise_observations``), so one generation number of two lineages never collide.

        Returns:
            The token, or None when this store's data must not be cached across processes.
        """
        return None

    def stats(self) -> StoreStats:
        """Schema version, node counts per label, observations per source, data generation."""
        return self._stats()

    def generation(self) -> int:
        """The data generation: a counter that every write adding data moves on (0: never
        written). What caches of derived data are keyed by, together with ``cache_identity``.
        A backend overrides this with a cheaper read than ``stats``."""
        return self.stats().generation

    def clear(self) -> None:
        """Delete every node and relationship (tests and ``advisor db reset``); the schema is
        set up again with ``ensure_schema``.

        Raises:
            NotImplementedError: the backend cannot be emptied from here; the message names
                the class.
        """
        self._clear()

    def _clear(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot be cleared")

    # ---- host topology (optional feature) --------------------------------------------------
    def _host_topology(self, host: str) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not keep host topologies")

    def host_topology(self, host: str) -> Any:
        """The NUMA nodes and device attachments a collector last recorded for ``host``
        (``stack_advisor.schema.topology.HostTopology``), or None when none is stored.

        Raises:
            InvalidInput: an empty host name.
            NotImplementedError: the backend keeps no topologies; the message names the class.
        """
        if not isinstance(host, str) or not host.strip():
            raise InvalidInput(f"host: a host name is needed, got {host!r}")
        return self._host_topology(host)

    # ---- node inventory (optional feature) -------------------------------------------------
    def _sync_inventory(self, cluster: str, nodes: list[dict[str, Any]]) -> int:
        raise NotImplementedError(f"{type(self).__name__} does not keep a node inventory")

    def _list_inventory(self, cluster: str | None) -> list[dict[str, Any]]:
        raise NotImplementedError(f"{type(self).__name__} does not keep a node inventory")

    def sync_inventory(self, cluster: str, nodes: Iterable[dict[str, Any]]) -> int:
        """Replace one cluster's node inventory (``advisor nodes sync``) in one transaction.

        Args:
            cluster: the inventory's name; one store may hold several clusters.
            nodes: one JSON object per node (``schema.inventory.ClusterNode`` dumped), each
                with a unique, non-empty ``name``; kept as given.
        Returns:
            How many nodes the cluster's inventory holds now.
        Raises:
            InvalidInput: a cluster name that ``cluster_name_problem`` refuses, a node without a
                name, or a name twice.
            NotImplementedError: the backend keeps no inventory; the message names the class.
        """
        problem = cluster_name_problem(cluster) if isinstance(cluster, str) else "it is not text"
        if problem:
            raise InvalidInput(
                f"cluster: {cluster!r} cannot name an inventory: {problem}; "
                "use a name such as 'prod-gpu-1'"
            )
        rows = list(nodes)
        seen: set[str] = set()
        for i, node in enumerate(rows):
            name = node.get("name") if isinstance(node, dict) else None
            if not isinstance(name, str) or not name:
                raise InvalidInput(f"nodes.{i}.name: a node needs a non-empty name (got {name!r})")
            if name in seen:
                raise InvalidInput(f"nodes.{i}.name: {name!r} appears twice")
            seen.add(name)
        return self._sync_inventory(cluster, rows)

    def list_inventory(self, cluster: str | None = None) -> list[dict[str, Any]]:
        """The stored nodes (of one cluster, or all), ordered by cluster then name.

        Raises:
            NotImplementedError: the backend keeps no inventory; the message names the class.
        """
        return self._list_inventory(cluster)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
