"""What opening a store needs from its surroundings, passed in as one value.

Library code never reads the environment: the edge (the ``advisor`` command, the API server, a
script) builds ``StoreSettings.from_environ(os.environ)`` once, changes what its own options say
(``--api``), and hands it to ``open_store``. Tests build the settings they mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

# The environment variables ``from_environ`` reads (documented in the README's configuration table).
STORE_ENV = "ADVISOR_STORE"
API_ENV = "ADVISOR_API"  # a remote stack-advisor API: the CLI becomes its client
TOKEN_ENV = "ADVISOR_TOKEN"
STARTER_ENV = "ADVISOR_STARTER"  # 0/false/no/off: a new default store is not seeded
NEO4J_USER_ENV = "NEO4J_USER"
NEO4J_PASSWORD_ENV = "NEO4J_PASSWORD"
# a file holding only the password (a mounted Secret)
NEO4J_PASSWORD_FILE_ENV = "NEO4J_PASSWORD_FILE"
NEO4J_DATABASE_ENV = "NEO4J_DATABASE"
DATA_HOME_ENV = "XDG_DATA_HOME"

_OFF = ("0", "false", "no", "off")


def _password_file(path: str | None) -> str | None:
    """The contents of ``$NEO4J_PASSWORD_FILE`` without the trailing newline (None: unset).

    Raises:
        InvalidInput: the file cannot be read.
    """
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().rstrip("\r\n") or None
    except OSError as exc:
        from stack_advisor.schema.errors import InvalidInput

        raise InvalidInput(
            f"{NEO4J_PASSWORD_FILE_ENV} {path!r} cannot be read: {exc.strerror}"
        ) from None


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """Where the store is and how to reach it.

    Attributes:
        store: the store URI when none is given (``ADVISOR_STORE``).
        api: a remote API's URL; it wins over ``store`` (``ADVISOR_API``, ``advisor --api``).
        token: the bearer token the REST store sends (``ADVISOR_TOKEN``).
        neo4j_user, neo4j_password, neo4j_database: Neo4j credentials and database.
        data_home: the folder the default embedded store lives under (``XDG_DATA_HOME``);
            None: ``~/.local/share``.
        seed_starter: seed a newly created default store from the starter knowledge base.
    """

    store: str | None = None
    api: str | None = None
    token: str | None = field(default=None, repr=False)
    neo4j_user: str | None = None
    neo4j_password: str | None = field(default=None, repr=False)
    neo4j_database: str = "neo4j"
    data_home: Path | None = None
    seed_starter: bool = True

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> StoreSettings:
        """The settings an environment gives (the edge passes ``os.environ``); empty is unset."""

        def get(name: str) -> str | None:
            return environ.get(name) or None

        data_home = get(DATA_HOME_ENV)
        return cls(
            store=get(STORE_ENV),
            api=get(API_ENV),
            token=get(TOKEN_ENV),
            neo4j_user=get(NEO4J_USER_ENV),
            neo4j_password=get(NEO4J_PASSWORD_ENV) or _password_file(get(NEO4J_PASSWORD_FILE_ENV)),
            neo4j_database=get(NEO4J_DATABASE_ENV) or "neo4j",
            data_home=Path(data_home) if data_home else None,
            seed_starter=(get(STARTER_ENV) or "1").strip().lower() not in _OFF,
        )

    def with_(self, **changes: object) -> StoreSettings:
        """A copy with ``changes`` (an option given on the command line, say)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def default_store_path(self) -> Path:
        """Where the default embedded store lives."""
        base = self.data_home or Path.home() / ".local" / "share"
        return base / "stack-advisor" / "kb"
