"""API settings: one pydantic-settings class, read from ``ADVISOR_*`` environment variables.

Tokens come from ``ADVISOR_TOKENS`` (``token:scope,scope;token:scope``) and/or a tokens file
(``ADVISOR_TOKENS_FILE``, e.g. a Kubernetes Secret mounted as a file) with one token per line::

    # token                              scopes        name (optional, shown in logs)
    3f9a...c2                            read,write    collector
    77b1...0e                            admin         operator

Outside ``environment=development`` placeholder tokens, tokens under ``MIN_TOKEN_BITS`` of
estimated entropy, and no tokens at all (unless ``ADVISOR_READ_AUTH=open`` is set on purpose) are
refused at start-up. A store URI with a password in it is refused everywhere.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from stack_advisor.schema.errors import InvalidInput
from stack_advisor.store.settings import StoreSettings
from stack_advisor.store.uris import redact_uri, refuse_password_in_uri


class Scope(str, Enum):
    """What a token may do. ``admin`` implies ``write``, which implies ``read``."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


_IMPLIED: dict[Scope, frozenset[Scope]] = {
    Scope.READ: frozenset({Scope.READ}),
    Scope.WRITE: frozenset({Scope.READ, Scope.WRITE}),
    Scope.ADMIN: frozenset({Scope.READ, Scope.WRITE, Scope.ADMIN}),
}

PLACEHOLDER_TOKENS = frozenset(
    {
        "changeme",
        "change-me",
        "change_me",
        "secret",
        "token",
        "password",
        "placeholder",
        "example",
        "test",
        "dev",
        "admin",
        "xxx",
        "todo",
    }
)
# Any secret containing one of these is a template's placeholder, wherever it comes from.
PLACEHOLDER_MARKERS = (
    "replace-me",
    "replace_me",
    "replaceme",
    "changeme",
    "change-me",
    "change_me",
    "placeholder",
    "<generated",
    "your-token",
    "your-password",
)
MIN_TOKEN_LENGTH = 16
MIN_TOKEN_BITS = 128
# Pieces people build "random-looking" secrets from: common password words, hex-speak, years and
# keyboard rows. A secret is judged by the entropy of what is left once they are taken out (each
# piece credited a few bits, as a guesser's dictionary would), so ``Password2024Password2024!``
# or ``deadbeefdeadbeefcafebabecafebabe1`` score low however long they are.
WEAK_PIECES = re.compile(
    r"password|passwd|secret|admin|letmein|welcome|qwerty|asdf|zxcv|dragon|monkey|master|"
    r"login|token|advisor|neo4j|summer|winter|spring|autumn|iloveyou|trustno1|"
    r"dead|beef|cafe|babe|face|feed|f00d|c0de|b00b|d00d|fade|bead|decade|"
    r"(?:19|20)\d\d|0123|1234|2345|3456|4567|5678|6789|7890|abcd",
    re.IGNORECASE,
)
BITS_PER_PIECE = 10.0


def known_weak(secret: str, min_bits: int) -> str | None:
    """Why ``secret`` is guessable from common pieces, or None."""
    pieces = WEAK_PIECES.findall(secret)
    if not pieces:
        return None
    rest = WEAK_PIECES.sub("", secret)
    bits = estimated_bits(rest) + BITS_PER_PIECE * len(set(p.lower() for p in pieces))
    if bits >= min_bits:
        return None
    named = ", ".join(sorted({p.lower() for p in pieces})[:4])
    return (
        f"is made of common words and patterns ({named}): about {bits:.0f} bits of estimated "
        f"entropy, under the {min_bits} required"
    )


def _period(text: str) -> int:
    """The length of the shortest block that ``text`` repeats (its length when none)."""
    for size in range(1, len(text) // 2 + 1):
        if all(text[i] == text[i % size] for i in range(len(text))):
            return size
    return len(text)


def _steps(text: str) -> int:
    """Characters that do not continue an arithmetic run (``1234``, ``abcd``, ``9876``)."""
    kept = min(len(text), 2)
    for i in range(2, len(text)):
        if ord(text[i]) - ord(text[i - 1]) != ord(text[i - 1]) - ord(text[i - 2]):
            kept += 1
    return kept


def estimated_bits(secret: str) -> float:
    """A cautious estimate of a secret's entropy: the alphabet its character classes span
    (lower, upper, digits, other) times its length, counted without a repeated block
    (``abcdabcd``) or arithmetic runs (``12345678``). A random ``secrets.token_urlsafe(32)``
    scores about 250 bits; ``passwordpassword`` 38."""
    alphabet = sum(
        size
        for present, size in (
            (any(c.islower() for c in secret), 26),
            (any(c.isupper() for c in secret), 26),
            (any(c.isdigit() for c in secret), 10),
            (any(not c.isalnum() for c in secret), 33),
        )
        if present
    )
    if not secret or alphabet < 2:
        return 0.0
    length = min(_period(secret), _steps(secret), len(set(secret)) * 4)
    return length * math.log2(alphabet)


def weak_secret(secret: str, *, min_bits: int | None = None) -> str | None:
    """Why ``secret`` must not be used in production, or None when it may (``min_bits``: the
    least estimated entropy, for secrets we ask people to generate: tokens)."""
    lowered = secret.lower()
    if lowered in PLACEHOLDER_TOKENS or any(m in lowered for m in PLACEHOLDER_MARKERS):
        return "is a placeholder"
    if len(secret) < MIN_TOKEN_LENGTH:
        return f"is shorter than {MIN_TOKEN_LENGTH} characters"
    if len(set(secret)) < 4:
        return "has fewer than 4 distinct characters"
    bits = estimated_bits(secret)
    if min_bits is not None and bits < min_bits:
        return f"has about {bits:.0f} bits of estimated entropy, under the {min_bits} required"
    return known_weak(secret, min_bits) if min_bits is not None else None


@dataclass(frozen=True)
class TokenEntry:
    """One configured token. ``name`` is what logs show; the token itself is never logged."""

    secret: str
    scopes: frozenset[Scope]
    name: str

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.secret.encode()).hexdigest()[:8]


def _parse_scopes(text: str, where: str) -> frozenset[Scope]:
    scopes: set[Scope] = set()
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        try:
            scopes |= _IMPLIED[Scope(part)]
        except ValueError:
            valid = ", ".join(s.value for s in Scope)
            # A token in the scopes' column (columns swapped) must not be echoed anywhere.
            shown = (
                repr(part)
                if len(part) < MIN_TOKEN_LENGTH and part.isalpha()
                else f"of {len(part)} characters (not shown: it may be a token; are the token "
                "and scope columns swapped?)"
            )
            raise InvalidInput(f"{where}: unknown scope {shown}; valid: {valid}") from None
    if not scopes:
        raise InvalidInput(f"{where}: a token needs at least one scope (read, write, admin)")
    return frozenset(scopes)


def parse_tokens_env(text: str) -> list[TokenEntry]:
    """``token:scope,scope;token:scope`` (separators ``;`` or newlines)."""
    entries = []
    for i, item in enumerate(text.replace("\n", ";").split(";")):
        item = item.strip()
        if not item:
            continue
        secret, sep, scopes = item.rpartition(":")
        if not sep or not secret:
            raise InvalidInput(
                f"ADVISOR_TOKENS entry {i + 1}: expected 'token:scope[,scope]', got an entry "
                "without ':'"
            )
        entries.append(
            TokenEntry(
                secret.strip(),
                _parse_scopes(scopes, f"ADVISOR_TOKENS entry {i + 1}"),
                f"env-{i + 1}",
            )
        )
    return entries


def parse_tokens_file(path: Path) -> list[TokenEntry]:
    """One ``token scopes [name]`` per line; ``#`` starts a comment."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise InvalidInput(
            f"ADVISOR_TOKENS_FILE {str(path)!r} cannot be read: {exc.strerror}"
        ) from None
    entries = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) < 2:
            raise InvalidInput(
                f"{path}:{lineno}: expected 'token scope[,scope] [name]', got {len(fields)} field"
            )
        name = fields[2] if len(fields) > 2 else f"{path.name}:{lineno}"
        entries.append(TokenEntry(fields[0], _parse_scopes(fields[1], f"{path}:{lineno}"), name))
    return entries


class Settings(BaseSettings):
    """Everything the API reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="ADVISOR_", extra="ignore")

    environment: Literal["development", "production"] = "development"
    store: str | None = Field(default=None, description="store URI; None → open_store's default")
    tokens: SecretStr = Field(default=SecretStr(""), description="token:scope,scope;...")
    tokens_file: Path | None = None
    neo4j_user: str | None = Field(default=None, validation_alias="NEO4J_USER")
    neo4j_password: SecretStr = Field(
        default=SecretStr(""),
        validation_alias="NEO4J_PASSWORD",
        description="checked here (not a placeholder, not a token) and passed to the Neo4j store",
    )
    neo4j_database: str = Field(default="neo4j", validation_alias="NEO4J_DATABASE")
    data_home: Path | None = Field(
        default=None,
        validation_alias="XDG_DATA_HOME",
        description="where the default embedded store lives (None: ~/.local/share)",
    )
    starter: bool = Field(default=True, description="seed a new default store (ADVISOR_STARTER)")
    read_auth: Literal["open", "token"] = Field(
        default="open", description="open: reads need no token; token: reads need a read token"
    )
    metrics_auth: Literal["open", "token"] = "open"
    max_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    retry_after_s: int = Field(default=5, ge=1)
    trusted_proxies: str = Field(
        default="",
        description="comma-separated addresses of the reverse proxies whose X-Forwarded-For "
        "and X-Forwarded-Proto are believed (ADVISOR_TRUSTED_PROXIES); none by default, so "
        "a client cannot pick the address the login limiter counts",
    )
    store_retry_interval_s: float = Field(
        default=2.0, ge=0, description="how often a request may retry opening an unreachable store"
    )
    max_page: int = Field(default=10_000, ge=1, le=100_000)
    max_batch_items: int = Field(
        default=5_000,
        ge=1,
        le=100_000,
        description="items in one write request (one transaction): measurements, failures and "
        "runs (a document's run counts one), and the nodes of an inventory",
    )
    max_nested_entries: int = Field(
        default=1_024,
        ge=16,
        description="entries of any list or mapping inside one written item (stack.extra, "
        "provenance details, parameters, cpu_flags, labels, evidence)",
    )
    max_text_chars: int = Field(
        default=16_384,
        ge=256,
        description="characters of any text inside one written item (notes, URLs, details)",
    )
    max_predict_queries: int = Field(
        default=1_000, ge=1, le=10_000, description="queries in one POST /v1/predictions"
    )
    max_recommend_nodes: int = Field(
        default=2_000,
        ge=1,
        le=20_000,
        description="Node objects in one POST /v1/recommendations (`nodes`)",
    )
    answer_budget_s: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="a prediction or recommendation stops with 503 after this long (checked "
        "between chunks of queries, candidates and nodes; the work also stops when "
        "the client disconnects)",
    )
    max_anonymous_concurrency: int = Field(
        default=2,
        ge=1,
        le=1_000,
        description="requests without a token in flight at once; more get 503 at once",
    )
    answer_workers: int = Field(
        default=1,
        ge=0,
        le=64,
        description="worker processes that answer predictions (off the server's interpreter lock, "
        "at a lower CPU priority); also how many anonymous heavy answers run at once; "
        "0: answer in the server's threads",
    )
    answer_worker_nice: int = Field(
        default=10, ge=0, le=19, description="how much lower the workers' CPU priority is (nice)"
    )
    answer_queue: int = Field(
        default=2,
        ge=0,
        le=1_000,
        description="anonymous heavy answers waiting for a worker; more get 503 with Retry-After",
    )
    answer_client_share: int = Field(
        default=2,
        ge=1,
        le=1_000,
        description="anonymous heavy answers one client (address) may have running or waiting; "
        "more get 429 with Retry-After",
    )
    store_failure_hold_s: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="after a store request fails as unavailable, others get 503 at once for "
        "this long instead of each waiting on the store (0: off)",
    )
    ready_timeout_s: float = Field(
        default=2.0,
        gt=0,
        le=30,
        description="/readyz answers within this, whatever the store does (below the probe's "
        "timeoutSeconds)",
    )
    generation_ttl_s: float = Field(
        default=1.0,
        ge=0,
        le=300,
        description="answers re-read the store's data generation at most this often; a write by "
        "another process shows in answers at most this late (writes through this "
        "server at once); 0 reads it on every answer",
    )

    def store_settings(self) -> StoreSettings:
        """What opening the store needs, from these settings (the API's edge)."""
        return StoreSettings(
            store=self.store,
            neo4j_user=self.neo4j_user,
            neo4j_password=self.neo4j_password.get_secret_value() or None,
            neo4j_database=self.neo4j_database,
            data_home=self.data_home,
            seed_starter=self.starter,
        )

    @field_validator("tokens_file", "data_home", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if value == "" else value

    def token_entries(self) -> list[TokenEntry]:
        return self.env_token_entries() + self.file_token_entries()

    def env_token_entries(self) -> list[TokenEntry]:
        return parse_tokens_env(self.tokens.get_secret_value())

    def file_token_entries(self) -> list[TokenEntry]:
        return parse_tokens_file(self.tokens_file) if self.tokens_file is not None else []

    @property
    def store_label(self) -> str:
        """The store URI as messages show it (no credentials)."""
        return redact_uri(self.store)

    def check(self) -> list[TokenEntry]:
        """Parse the tokens and refuse placeholder secrets outside development.

        Raises:
            InvalidInput: a malformed entry, or a placeholder/short token in production.
        """
        refusal = refuse_password_in_uri(
            self.store or "", user_var="NEO4J_USER", password_var="NEO4J_PASSWORD"
        )
        if refusal:
            raise InvalidInput(refusal)
        entries = self.token_entries()
        if self.environment == "development":
            return entries
        if not entries and "read_auth" not in self.model_fields_set:
            raise InvalidInput(
                f"no tokens configured (ADVISOR_TOKENS, ADVISOR_TOKENS_FILE); refusing to start "
                f"with environment={self.environment}, where reads would be open to anyone by "
                "default. Configure tokens, or set ADVISOR_READ_AUTH=open to serve reads without "
                "a token on purpose (writes then stay refused)"
            )
        fix = (
            "Generate one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            " and set it in your overlay's Secret"
        )
        seen: dict[str, str] = {}
        for entry in entries:
            why = weak_secret(entry.secret, min_bits=MIN_TOKEN_BITS)
            if why:
                raise InvalidInput(
                    f"token {entry.name!r} {why}; refusing to start with "
                    f"environment={self.environment}. {fix}"
                )
            if entry.secret in seen:
                raise InvalidInput(
                    f"tokens {seen[entry.secret]!r} and {entry.name!r} are the same secret; "
                    f"every token must be its own. {fix}"
                )
            seen[entry.secret] = entry.name
        self._check_password(seen, fix)
        return entries

    def _check_password(self, seen: dict[str, str], fix: str) -> None:
        """Refuse a weak Neo4j password (where the store is Neo4j) and one that is also a token's
        secret (``seen``: secret → token name)."""
        password = self.neo4j_password.get_secret_value()
        uses_neo4j = (self.store or "").split("://", 1)[0] in (
            "bolt",
            "bolt+s",
            "bolt+ssc",
            "neo4j",
            "neo4j+s",
            "neo4j+ssc",
        )
        if password and uses_neo4j:
            why = weak_secret(password)
            if why:
                raise InvalidInput(
                    f"NEO4J_PASSWORD {why}; refusing to start with "
                    f"environment={self.environment}. {fix}"
                )
        if password and password in seen:
            raise InvalidInput(
                f"NEO4J_PASSWORD is also the secret of token {seen[password]!r}; a leaked token "
                f"would open the database. {fix}"
            )


@lru_cache
def get_settings() -> Settings:
    return Settings()
