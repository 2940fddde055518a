"""The API's store over TLS to a real Neo4j that requires it (issue 18: "TLS to Neo4j documented
and supported"): a private CA and a server certificate made with openssl, Neo4j's bolt connector
with ``server.bolt.tls_level=REQUIRED``. ``bolt+s://`` verifies the server against the CA that
``SSL_CERT_FILE`` names (as docs/deploy.md says to mount it), ``bolt+ssc://`` encrypts without
verifying, and plain ``bolt://`` or an unknown CA is refused with a StoreUnavailable naming the
URI."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stack_advisor.schema.errors import StoreUnavailable
from stack_advisor.store.registry import open_store
from tests.support.api import document

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

TLS_CONFIG = """
dbms.ssl.policy.bolt.enabled=true
dbms.ssl.policy.bolt.base_directory={home}/certificates/bolt
dbms.ssl.policy.bolt.private_key=private.key
dbms.ssl.policy.bolt.public_certificate=public.crt
dbms.ssl.policy.bolt.client_auth=NONE
server.bolt.tls_level=REQUIRED
"""


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _pki(d: Path) -> None:
    """A CA, and a server certificate for 127.0.0.1 signed by it."""
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=stack-advisor-test-ca",
        cwd=d,
    )
    (d / "server.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "private.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
        cwd=d,
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "public.crt",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        cwd=d,
    )


@pytest.fixture(scope="module")
def tls_neo4j(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.support.ci import IN_CI
    from tests.support.neo4j_server import LocalNeo4j, Neo4jUnavailable

    try:
        server = LocalNeo4j(extra_config=TLS_CONFIG, scheme="bolt+ssc")
        bolt = server.home / "certificates" / "bolt"
        bolt.mkdir(parents=True)
        _pki(bolt)
        server.start()
    except Neo4jUnavailable as exc:
        if IN_CI:
            pytest.fail(f"no Neo4j server: {exc}", pytrace=False)
        pytest.skip(f"no Neo4j server: {exc}")
    yield server
    server.remove()


def _round_trip(uri: str) -> None:
    from stack_advisor.schema.models import ResultDocument

    store = open_store(uri)
    try:
        store.clear()  # type: ignore[attr-defined]
        store.ensure_schema()
        result = store.ingest_document(ResultDocument.model_validate(document("run-tls", n=2)))
        assert result.observations_new == 2
        assert len(store.query_observations(limit=10)) == 2
    finally:
        store.close()


def test_bolt_s_verifies_the_server_against_the_mounted_ca(
    tls_neo4j: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_neo4j.home / "certificates" / "bolt" / "ca.crt"))
    _round_trip(f"bolt+s://127.0.0.1:{tls_neo4j.port}")


def test_bolt_ssc_encrypts_without_verifying(tls_neo4j: Any) -> None:
    _round_trip(f"bolt+ssc://127.0.0.1:{tls_neo4j.port}")


@pytest.mark.parametrize("scheme", ["bolt", "bolt+s"])
def test_plain_bolt_or_an_unknown_ca_is_refused(
    tls_neo4j: Any, scheme: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    _pki(other)  # a CA that did not sign the server's certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(other / "ca.crt"))
    uri = f"{scheme}://127.0.0.1:{tls_neo4j.port}"
    with pytest.raises(StoreUnavailable, match=re.escape(f"cannot reach Neo4j at {uri}")) as err:
        open_store(uri).close()
    if scheme == "bolt+s":
        assert "SSLCertVerificationError" in str(err.value)
