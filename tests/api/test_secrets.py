"""A placeholder, short, reused or shared secret refuses to start outside development, wherever
it comes from (ADVISOR_TOKENS, the tokens file, NEO4J_PASSWORD); deploy/base ships none."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
import yaml

from stack_advisor.api.settings import Settings
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.server import create_app

REPO = Path(__file__).resolve().parents[2]
BASE_LINE = "replace-me-in-your-overlay write collector"


def _strong() -> str:
    return secrets.token_urlsafe(24)


def test_the_old_base_secret_line_is_refused_from_the_tokens_file(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(BASE_LINE + "\n")
    with pytest.raises(InvalidInput, match=r"collector.*placeholder"):
        create_app(Settings(environment="production", tokens_file=tokens))


@pytest.mark.parametrize(
    "secret",
    [
        "replace-me-in-your-overlay",
        "CHANGEME-please-0123456789",
        "<generated token>",
        "short",
        "aaaaaaaaaaaaaaaaaaaaaaaa",
    ],
)
def test_placeholder_or_weak_tokens_are_refused_from_the_environment(secret: str) -> None:
    with pytest.raises(InvalidInput, match="refusing to start"):
        Settings(environment="production", tokens=f"{secret}:write").check()


def test_the_same_secret_for_two_tokens_is_refused() -> None:
    shared = _strong()
    with pytest.raises(InvalidInput, match="same secret"):
        Settings(environment="production", tokens=f"{shared}:read;{shared}:write").check()


def test_a_token_that_is_also_the_neo4j_password_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shared = _strong()
    monkeypatch.setenv("NEO4J_PASSWORD", shared)
    with pytest.raises(InvalidInput, match="NEO4J_PASSWORD is also the secret"):
        Settings(environment="production", tokens=f"{shared}:write").check()


def test_a_placeholder_neo4j_password_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_PASSWORD", "replace-me-in-your-overlay")
    settings = Settings(
        environment="production", store="bolt+s://neo4j:7687", tokens=f"{_strong()}:write"
    )
    with pytest.raises(InvalidInput, match="NEO4J_PASSWORD is a placeholder"):
        settings.check()


def test_development_accepts_placeholders(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(BASE_LINE + "\n")
    assert len(Settings(environment="development", tokens_file=tokens).check()) == 1


def test_deploy_base_ships_no_usable_secret() -> None:
    """No Secret in the base at all: an overlay that forgets one gets pods that do not start
    (CreateContainerConfigError), never a publicly known token or password."""
    kinds = []
    for path in (REPO / "deploy" / "base").rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict):
                kinds.append(doc.get("kind"))
                assert doc.get("kind") != "Secret", path
                assert "replace-me" not in path.read_text(), path
    assert "Deployment" in kinds
