"""Store and API URIs without their secrets.

Every URI that reaches a message, a log line, ``/readyz`` or a page goes through ``redact_uri``
(one URI) or ``scrub`` (free text, e.g. a driver's error that echoes the URI it was given), so a
password written into a URI never leaves the process. Credentials belong in the environment
(``NEO4J_USER``/``NEO4J_PASSWORD``, ``ADVISOR_TOKEN``) or a file, not in the URI: a Neo4j URI with
a password is refused (``password_in_uri``).
"""

from __future__ import annotations

import re

# A URI starts at its scheme and runs to whitespace, a quote or an angle bracket.
_URI = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]*")
# What follows the userinfo's '@': a host name, IPv4 or [IPv6] address, an optional port, then
# the end (in free text, after a sentence's punctuation) or a path, query or fragment.
_HOST = re.compile(r"(?:[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:.]+\])(?::\d*)?(?:[/?#]|[.,;:)\]]*$)")


def split_userinfo(uri: str) -> tuple[str, str | None, str]:
    """(scheme with ``://``, userinfo or None, the rest) of one URI.

    The userinfo runs to the last '@' that a host follows, not to the first '/', '?' or '#':
    a password may hold any of ``#/?@:%``, and a store URI has no use for an '@' after its host,
    so reading too much as userinfo hides a little more than needed and never shows a secret.
    """
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return "", None, uri
    at = rest.rfind("@")
    while at >= 0:
        if _HOST.match(rest, at + 1):
            return scheme + sep, rest[:at], rest[at + 1 :]
        at = rest.rfind("@", 0, at)
    return scheme + sep, None, rest


def redact_uri(uri: str | None) -> str:
    """``uri`` without ``user:password@`` (``default`` for none)."""
    if not uri:
        return "default"
    return scrub(uri)


def _redact_one(uri: str) -> str:
    scheme, userinfo, rest = split_userinfo(uri)
    return uri if userinfo is None else scheme + rest


def scrub(text: str) -> str:
    """``text`` with the userinfo of every ``scheme://user:password@host`` in it removed."""
    if "@" not in text or "://" not in text:
        return text
    return _URI.sub(lambda m: _redact_one(m.group(0)), text)


def password_in_uri(uri: str) -> bool:
    """True when ``uri`` carries a password (``scheme://user:password@host``)."""
    _, userinfo, _ = split_userinfo(uri.strip())
    return userinfo is not None and ":" in userinfo


def refuse_password_in_uri(uri: str, *, user_var: str, password_var: str) -> str | None:
    """The advice to give when ``uri`` carries a password, or None when it does not."""
    if not password_in_uri(uri):
        return None
    return (
        f"the store URI {redact_uri(uri)!r} carries a password in 'user:password@'; give the "
        f"URI without it and the credentials in {user_var} and {password_var} (or "
        f"{password_var}_FILE, a file holding only the password) so they never show in a "
        "command line, a log or an error"
    )
