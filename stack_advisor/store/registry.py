"""Store URIs → store objects. Heavy backends are imported lazily by their builders.

Where the URI comes from: the explicit argument, then the settings' remote API, then their store
URI, then the embedded default under the settings' data directory (created and seeded from the
starter knowledge base on first use). The settings are passed in (``StoreSettings``): the CLI and
the API server read them from the environment; nothing here does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.store.base import Store
from stack_advisor.store.settings import API_ENV, StoreSettings
from stack_advisor.store.uris import redact_uri

log = logging.getLogger(__name__)
DEFAULTS = StoreSettings()


def _embedded(target: str, settings: StoreSettings) -> Store:
    from stack_advisor.store.embedded_store import EmbeddedStore

    return EmbeddedStore(target)


def _neo4j(uri: str, settings: StoreSettings) -> Store:
    from stack_advisor.store.neo4j_store import Neo4jStore

    return Neo4jStore(
        uri,
        user=settings.neo4j_user,
        password=settings.neo4j_password,
        database=settings.neo4j_database,
    )


def _rest(uri: str, settings: StoreSettings) -> Store:
    from stack_advisor.store.rest_store import RestStore

    return RestStore(uri, settings.token)


BUILDERS: dict[str, Callable[[str, StoreSettings], Store]] = {
    "embedded": _embedded,
    # +s: TLS verified against the system CAs (point SSL_CERT_FILE at a private CA);
    # +ssc: TLS with a self-signed certificate (encrypted, not verified)
    "bolt": _neo4j,
    "bolt+s": _neo4j,
    "bolt+ssc": _neo4j,
    "neo4j": _neo4j,
    "neo4j+s": _neo4j,
    "neo4j+ssc": _neo4j,
    "http": _rest,
    "https": _rest,
}


def default_store_path(settings: StoreSettings = DEFAULTS) -> Path:
    return settings.default_store_path()


def default_store_uri(settings: StoreSettings = DEFAULTS) -> str:
    return f"embedded:{default_store_path(settings)}"


def resolve_store_uri(uri: str | None = None, settings: StoreSettings = DEFAULTS) -> str:
    """The URI that will be opened: the argument, then the settings' remote API, then their
    store URI, then the embedded default."""
    return uri or settings.api or settings.store or default_store_uri(settings)


def open_store(
    uri: str | None = None,
    *,
    settings: StoreSettings = DEFAULTS,
    migrate: bool = True,
    create: bool = True,
) -> Store:
    """Open the store a URI names.

    Args:
        uri: ``embedded:PATH`` or a bare path, ``bolt://`` ``neo4j://`` ``neo4j+s://``,
            ``http(s)://`` (our own API); None → ``settings.api`` → ``settings.store`` → the
            embedded default.
        settings: credentials, the default store's place, whether to seed it (``StoreSettings``;
            default: none of the environment's, ``~/.local/share``).
        migrate: apply pending schema migrations (idempotent).
        create: create an embedded store that does not exist yet; when False, a missing path
            (other than the default store, which is seeded on first use) is NotFound — so a
            typo'd path used for reading does not silently become an empty store.
    Raises:
        InvalidInput: an unknown scheme; the message lists the valid ones.
        NotFound: ``create=False`` and no embedded store at the path.
        StoreUnavailable, SchemaMismatch: from the backend.
    """
    resolved = resolve_store_uri(uri, settings)
    default_path = default_store_path(settings)
    is_default = resolved == default_store_uri(settings) and not uri and not settings.store
    if not uri and resolved == settings.api and "://" not in resolved:
        raise InvalidInput(
            f"{API_ENV} (--api) must be an http(s):// URL, got {redact_uri(resolved)!r}"
        )
    builder, target = _builder_for(resolved)
    fresh = is_default and not default_path.exists()
    missing = not Path(target).expanduser().exists()
    if builder is _embedded and not create and not is_default and missing:
        raise NotFound(
            f"no store at {Path(target).expanduser()} (a typo?); commands that write create it "
            f"(`advisor db migrate --store {resolved}` makes an empty one)",
            details={"reason": "missing", "path": str(Path(target).expanduser())},
        )
    if fresh:
        _create_seeded_default(default_path, settings)
    store = builder(target, settings)
    # A remote API owns its store's schema; a client only reads it, and lazily.
    if migrate and builder is not _rest:
        store.ensure_schema()
    if is_default and not fresh and settings.seed_starter and builder is _embedded:
        store = _reseed_if_empty(store, default_path, settings, migrate=migrate)
    return store


def _builder_for(resolved: str) -> tuple[Callable[[str, StoreSettings], Store], str]:
    """The builder of a resolved URI's scheme, and what it opens (the URI, or a path).

    Raises:
        InvalidInput: an unknown scheme; the message lists the valid ones.
    """
    scheme, sep, _ = resolved.partition("://")
    builder: Callable[[str, StoreSettings], Store] | None
    if sep:
        builder = BUILDERS.get(scheme)
        target = resolved
    elif resolved.startswith("embedded:"):
        builder, target = _embedded, resolved[len("embedded:") :]
    elif ":" in resolved.split("/")[0] and not resolved.startswith(("/", ".", "~")):
        builder, target = None, resolved
    else:
        builder, target = _embedded, resolved
    if builder is None:
        valid = "embedded:PATH (or a path), " + ", ".join(
            f"{s}://" for s in BUILDERS if s != "embedded"
        )
        raise InvalidInput(f"unknown store URI {redact_uri(resolved)!r}; valid forms: {valid}")
    return builder, target


def _reseed_if_empty(
    store: Store, default_path: Path, settings: StoreSettings, *, migrate: bool
) -> Store:
    """The default embedded store, replaced by a seeded one where nothing was ever written to it
    (made by `db migrate`, or left by an older version that seeded in place and was interrupted):
    replacing it loses nothing."""
    if store.generation() != 0:
        return store
    store.close()
    _create_seeded_default(default_path, settings, replace=True)
    store = _embedded(str(default_path), settings)
    if migrate:
        store.ensure_schema()
    return store


SEED_QUERY_TIMEOUT_S = 3600.0


def _create_seeded_default(final: Path, settings: StoreSettings, *, replace: bool = False) -> None:
    """Seed the default store beside its final path and move it there when complete.

    A first run stopped while seeding (Ctrl-C, a killed pod) then leaves no half-seeded store
    behind that would be taken for the knowledge base; the next run starts over.
    """
    from stack_advisor.store.embedded_store import EmbeddedStore

    partial = final.with_name(f".{final.name}.seeding-{os.getpid()}")
    _ensure_folder(final)
    _remove_store_files(partial)
    try:
        if not (settings.seed_starter and _restore_prebuilt(partial)):
            # A private store no request waits on: the per-query timeout that protects the API
            # from runaway reads must not fail a first run on a busy machine.
            store = EmbeddedStore(str(partial), query_timeout_s=SEED_QUERY_TIMEOUT_S)
            try:
                store.ensure_schema()
                if settings.seed_starter:
                    _seed(store)
            finally:
                store.close()
        if final.exists() and not replace:  # another process finished first: keep its store
            return
        for sidecar in _store_files(partial):
            os.replace(sidecar, final.with_name(final.name + sidecar.name[len(partial.name) :]))
    finally:
        _remove_store_files(partial)


def _ensure_folder(final: Path) -> None:
    """The default store's folder made, or the store's own error for an unwritable one (the
    shipped store is copied there before the store opens it)."""
    from stack_advisor.schema.errors import StoreUnavailable

    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise StoreUnavailable(
            f"cannot create the directory of the embedded store {final}: {reason}; choose "
            "another --store path (or XDG_DATA_HOME)",
            details={"reason": "unwritable", "path": str(final)},
        ) from None


def _store_files(path: Path) -> list[Path]:
    """The embedded store's file and its sidecars (``PATH.wal``, ...), the main file last."""
    sidecars = sorted(p for p in path.parent.glob(path.name + ".*") if p.is_file())
    return [*sidecars, *([path] if path.exists() else [])]


def _remove_store_files(path: Path) -> None:
    for file in _store_files(path):
        file.unlink(missing_ok=True)


def _restore_prebuilt(path: Path) -> bool:
    """The shipped starter store copied to ``path`` where it matches this install
    (``stack_advisor.store.starter_store``): seconds instead of ingesting the snapshot."""
    from stack_advisor.runtime import progress
    from stack_advisor.store.starter_store import restore

    with progress.phase("first use: unpacking the starter knowledge base (once)"):
        return restore(path)


def _seed(store: Store) -> None:
    try:
        from stack_advisor.store.starter import seed_default_store
    except ImportError:
        return
    log.info("seeding the new default store from the starter knowledge base")
    seed_default_store(store)
