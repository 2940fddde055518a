"""The web explorer's host page: a host's stored topology (what `advisor nodes topology --host`
shows), its JSON export equal to the store's answer, and the observation page linking to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from stack_advisor.collectors.fingerprint.topology import topology_of_tree
from stack_advisor.schema.models import Host, IngestBatch
from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from tests.support.api import make_app
from tests.support.samples import make_obs as _obs

DATA = Path(__file__).resolve().parents[1] / "data" / "topology"


@pytest.fixture(scope="module")
def topo_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    store = open_store(f"embedded:{tmp_path_factory.mktemp('host-kb') / 'kb'}")
    obs = _obs(1, host="dgx-h100")
    obs.host = Host(name="dgx-h100", topology=topology_of_tree(DATA / "dgx-h100-8gpu"))
    store.ingest(IngestBatch(observations=[obs]))
    yield store
    store.close()


@pytest.fixture(scope="module")
def client(topo_store: Store, web_tokens: dict[str, str]) -> Iterator[TestClient]:
    with TestClient(make_app(topo_store, web_tokens)) as c:
        assert (
            c.post(
                "/login", data={"token": web_tokens["read"], "next": "/"}, follow_redirects=False
            ).status_code
            == 303
        )
        yield c


def test_host_page_shows_numa_nodes_and_attachments(client: TestClient, topo_store: Store) -> None:
    page = client.get("/host", params={"name": "dgx-h100"})
    assert page.status_code == 200
    assert (
        "GPU0 GPU1 GPU2 GPU3" in page.text
        and "56-111,168-223" in page.text
        and "mlx5_4" in page.text
    )
    exported = client.get("/host", params={"name": "dgx-h100", "format": "json"}).json()
    assert exported == {
        "host": "dgx-h100",
        **topo_store.host_topology("dgx-h100").model_dump(mode="json"),
    }
    key = topo_store.query_observations()[0].key
    assert 'href="/host?name=dgx-h100"' in client.get("/observation", params={"key": key}).text


def test_unknown_host_is_a_404(client: TestClient) -> None:
    missing = client.get("/host", params={"name": "nowhere", "format": "json"})
    assert missing.status_code == 404 and "no topology stored for host 'nowhere'" in missing.text
