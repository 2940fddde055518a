"""Store URIs are redacted by parsing them: a password holding any of ``#/?@:%`` never shows,
and a refused URI is echoed redacted (issue 46)."""

from __future__ import annotations

import pytest

from stack_advisor.schema.errors import InvalidInput
from stack_advisor.store.registry import open_store
from stack_advisor.store.uris import password_in_uri, redact_uri, scrub, split_userinfo

PASSWORDS = ["S3cret#PW", "a/b", "a?b=c", "a@b", "a:b", "a%40b", "#/?@:%x", "p@ss@127.0.0.1"]


@pytest.mark.parametrize("password", PASSWORDS)
def test_any_character_in_a_password_is_redacted(password: str) -> None:
    uri = f"bolt://neo4j:{password}@127.0.0.1:7687"
    assert redact_uri(uri) == "bolt://127.0.0.1:7687"
    assert password_in_uri(uri)
    text = scrub(f"cannot reach {uri}: refused ({uri}).")
    assert text == "cannot reach bolt://127.0.0.1:7687: refused (bolt://127.0.0.1:7687)."


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_refused_uri_is_echoed_redacted(password: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        open_store(f"neo4j://neo4j:{password}@127.0.0.1:1")
    assert password not in str(caught.value) and "neo4j://127.0.0.1:1" in str(caught.value)


def test_uris_without_userinfo_are_left_as_they_are() -> None:
    for uri in ("http://host:8000/api?x=1#top", "bolt://[::1]:7687", "neo4j+s://db.example.org"):
        assert redact_uri(uri) == uri and not password_in_uri(uri)
    assert split_userinfo("neo4j://reader@db:7687") == ("neo4j://", "reader", "db:7687")
    assert not password_in_uri("neo4j://reader@db:7687")
    assert redact_uri(None) == "default"
