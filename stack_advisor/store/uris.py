"""Store and API URIs without their secrets.

Every URI that reaches a message, a log line, ``/readyz`` or a page goes through ``redact_uri``
(one URI) or ``scrub`` (free text, e.g. a driver's error that echoes the URI it was given), so a
password written into a URI never leaves the process. Credentials belong in the environment
(``NEO4J_USER``/``NEO4J_PASSWORD``, ``ADVISOR_TOKEN``) or a file, not in the URI: a Neo4j URI with
a password is refused (``password_in_uri``).
"""

from __future__ import annotations

import re

# scheme://userinfo@ — userinfo is everything up to the last '@' before the first '/', '?', '#'
# or whitespace/quote (a password may itself contain '@' or ':').
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#\s'\"<>]*)@")


def redact_uri(uri: str | None) -> str:
    """``uri`` without ``user:password@`` (``default`` for none)."""
    if not uri:
        return "default"
    return scrub(uri)


def scrub(text: str) -> str:
    """``text`` with the userinfo of every ``scheme://user:password@host`` in it removed."""
    if "@" not in text or "://" not in text:
        return text
    return _USERINFO.sub(lambda m: m.group("scheme"), text)


def password_in_uri(uri: str) -> bool:
    """True when ``uri`` carries a password (``scheme://user:password@host``)."""
    _, sep, rest = uri.partition("://")
    if not sep:
        return False
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    userinfo, at, _ = authority.rpartition("@")
    return bool(at) and ":" in userinfo


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
