"""/docs and /redoc work offline: their pages reference no external host, and every asset they
load is served by the app itself (issue 16 item 8)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.IGNORECASE)
LOCAL_ASSET = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_nothing_from_another_host(client: TestClient, page: str) -> None:
    r = client.get(page)
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    html = r.text
    assert not EXTERNAL.search(html), EXTERNAL.search(html)
    assert "cdn.jsdelivr" not in html and "fonts.googleapis" not in html
    assets = [u for u in LOCAL_ASSET.findall(html) if not u.startswith("#")]
    assert assets, html
    for url in assets:
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert len(asset.content) > 1000, url  # the real bundle, not an error page
    # the URLs the JS itself fetches: the OpenAPI document, also local
    assert "'/openapi.json'" in html or '"/openapi.json"' in html


def test_swagger_oauth2_redirect_is_served(client: TestClient) -> None:
    assert client.get("/docs/oauth2-redirect").status_code == 200
