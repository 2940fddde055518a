"""The CLI as a client of a real ``advisor serve`` on loopback (``--api`` / ``--store http://``)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stack_advisor.schema.errors import (
    Forbidden,
    InvalidInput,
    NotFound,
    StoreUnavailable,
    Unauthorized,
)
from stack_advisor.schema.models import ObservationFilter, ResultDocument
from stack_advisor.store import registry
from stack_advisor.store.settings import StoreSettings
from tests.support.api import document
from tests.support.servers import ADVISOR, ServedAPI, free_port

pytestmark = pytest.mark.slow  # a real `advisor serve` process and CLI subprocesses


@pytest.fixture(scope="module")
def tokens() -> dict[str, str]:
    return {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, tokens: dict[str, str]) -> Iterator[ServedAPI]:
    tmp = tmp_path_factory.mktemp("remote")
    with ServedAPI(f"embedded:{tmp / 'kb'}", tokens, log=tmp / "serve.log") as served:
        docs = [
            document("run-a100", accelerator="NVIDIA A100-SXM4-80GB", value=1000, n=2),
            document(
                "run-a100-vm",
                accelerator="NVIDIA A100-SXM4-80GB",
                placement="passthrough",
                value=950,
                n=2,
            ),
            document("run-l4", accelerator="NVIDIA L4", value=300, n=2),
            document(
                "run-l4-new", accelerator="NVIDIA L4", value=320, n=2, framework_version="2.4.0"
            ),
        ]
        r = httpx.post(
            served.url + "/v1/observations",
            json=docs,
            headers={"Authorization": f"Bearer {tokens['write']}"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        yield served


def run_cli(*args: str, token: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ADVISOR_")}
    environ["ADVISOR_RESIDENT"] = "0"  # no resident answerer left behind
    if token:
        environ["ADVISOR_TOKEN"] = token
    environ.update(env)
    return subprocess.run(
        [ADVISOR, *args], capture_output=True, text=True, env=environ, check=False, timeout=120
    )


def test_rest_store_round_trip(api: ServedAPI, tokens: dict[str, str]) -> None:
    with registry.open_store(api.url) as store:
        assert type(store).__name__ == "RestStore"
        obs = store.query_observations(ObservationFilter(accelerator="NVIDIA L4"))
        assert len(obs) == 4
        assert store.get_observation(obs[0].key).key == obs[0].key
        with pytest.raises(NotFound):
            store.get_observation("obs-nope")
        with pytest.raises(InvalidInput, match="limit"):
            store.query_observations(limit=0)
        assert store.stats().counts["Observation"] == 8
        # writes without a write token: the server's 401 comes back as the same typed error
        with pytest.raises(Unauthorized, match="token") as denied:
            store.ingest_document(document("run-denied"))
        assert denied.value.http_status == 401 and denied.value.code == "unauthorized"
        assert denied.value.www_authenticate is not None
        assert denied.value.www_authenticate.startswith("Bearer")
    # the token comes in with the settings (the CLI reads ADVISOR_TOKEN), never from os.environ
    with registry.open_store(api.url, settings=StoreSettings(token=tokens["write"])) as writer:
        result = writer.ingest_document(ResultDocument.model_validate(document("run-a100")))
        assert result.observations_new == 0  # already there: idempotent through the REST store
    with registry.open_store(api.url, settings=StoreSettings(token=tokens["read"])) as reader:
        with pytest.raises(Forbidden, match="scope") as refused:
            reader.ingest_document(document("run-denied"))
        assert refused.value.http_status == 403
        assert refused.value.details == {"needed_scope": "write", "token_scopes": ["read"]}


def test_inventory_through_the_rest_store(api: ServedAPI, tokens: dict[str, str]) -> None:
    """`advisor nodes sync --api ...` writes through PUT /v1/inventory/{cluster}."""
    from stack_advisor.store.rest_store import RestStore
    from tests.support.samples import cluster_node

    writer = RestStore(api.url, token=tokens["write"])
    reader = RestStore(api.url, token=tokens["read"])
    try:
        assert (
            writer.sync_inventory(
                "remote-lab", [cluster_node("g1"), cluster_node("g2", "NVIDIA L4")]
            )
            == 2
        )
        assert [n["name"] for n in reader.list_inventory("remote-lab")] == ["g1", "g2"]
        assert reader.list_inventory("remote-lab")[1] == cluster_node("g2", "NVIDIA L4")
        assert writer.sync_inventory("remote-lab", [cluster_node("g3")]) == 1
        assert [n["name"] for n in reader.list_inventory()] == ["g3"]
        with pytest.raises(InvalidInput, match="appears twice"):
            writer.sync_inventory("remote-lab", [cluster_node("x"), cluster_node("x")])
        with pytest.raises(Forbidden, match="scope"):
            reader.sync_inventory("remote-lab", [cluster_node("y")])
        assert [n["name"] for n in reader.list_inventory("remote-lab")] == ["g3"]
    finally:
        writer.close()
        reader.close()


def test_unreachable_api_is_store_unavailable() -> None:
    with (
        registry.open_store(f"http://127.0.0.1:{free_port()}") as store,
        pytest.raises(StoreUnavailable, match="cannot reach"),
    ):
        store.stats()


@pytest.mark.parametrize("how", ["--api", "--store", "ADVISOR_API"])
def test_plot_in_client_mode(api: ServedAPI, tmp_path: Path, how: str) -> None:
    out = tmp_path / "throughput.png"
    args = ["plot", "throughput", "--metric", "throughput", "--out", str(out), "--json"]
    env: dict[str, str] = {}
    if how == "ADVISOR_API":
        env["ADVISOR_API"] = api.url
    else:
        args += [how, api.url]
    # two batch sizes → two benchmark series: the CLI says which to choose and exits 2 (usage);
    # with --json the error is a JSON object on stdout
    r = run_cli(*args, **env)
    message = json.loads(r.stdout)["error"]["message"]
    assert r.returncode == 2 and "choose one" in message and "--benchmark cnn/" in message
    bench = message.split("--benchmark ")[1].split()[0]
    r = run_cli(*args, "--benchmark", bench, **env)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert {row["accelerator"] for row in rows} == {"A100-SXM4-80GB", "L4"}  # canonical names
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_plots_from_a_remote_store(api: ServedAPI, tmp_path: Path) -> None:
    bench = httpx.get(api.url + "/v1/benchmarks", timeout=10).json()["items"][0]["benchmark_id"]
    for kind, extra in (
        ("throughput", []),
        ("overhead", []),
        ("trend", ["--accelerator", "NVIDIA L4"]),
    ):
        out = tmp_path / f"{kind}.svg"
        r = run_cli(
            "plot",
            kind,
            "--benchmark",
            bench,
            "--out",
            str(out),
            "--api",
            api.url,
            "--json",
            *extra,
        )
        assert r.returncode == 0, r.stderr
        body = json.loads(r.stdout)
        assert body["out"] == str(out) and out.read_text().startswith("<?xml")
        assert body["rows"]
    r = run_cli(
        "plot",
        "overhead",
        "--benchmark",
        bench,
        "--out",
        str(tmp_path / "o.png"),
        "--api",
        api.url,
        "--json",
    )
    rows = json.loads(r.stdout)["rows"]
    assert [(row["accelerator"], row["placement"]) for row in rows] == [
        ("A100-SXM4-80GB", "passthrough")
    ]
    # 1000 → 950 or 1001 → 951, whichever batch size the first benchmark is: 0.95x bare metal
    assert rows[0]["ratio"] == pytest.approx(0.95, abs=0.0001)


def test_cli_errors_and_exit_codes(api: ServedAPI, tmp_path: Path) -> None:
    r = run_cli("plot", "throughput", "--out", str(tmp_path / "x.gif"), "--api", api.url)
    assert r.returncode == 2 and ".png or .svg" in r.stderr
    r = run_cli(
        "plot",
        "throughput",
        "--out",
        str(tmp_path / "x.png"),
        "--api",
        f"http://127.0.0.1:{free_port()}",
    )
    assert r.returncode == 1 and "cannot reach" in r.stderr
    r = run_cli("plot", "throughput", "--bogus")
    assert r.returncode == 2


@pytest.mark.parametrize("how", ["flag", "env"])
def test_any_store_command_is_a_client_with_api(api: ServedAPI, how: str) -> None:
    args = ["db", "stats", "--json"]
    r = run_cli("--api", api.url, *args) if how == "flag" else run_cli(*args, ADVISOR_API=api.url)
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    assert body["store"] == api.url and body["counts"]["Observation"] == 8
