"""``advisor --api URL`` answers through the API's answer endpoints (recommend, predict, compare,
evaluate) of a real ``advisor serve`` on the embedded store with the starter knowledge base: the
same answer as the endpoint and as a local run on the same store, without reading the
observations (the server's own request counters show it)."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import ADVISOR, ServedAPI
from tests.support.starter_kb import copy_starter_kb

pytestmark = pytest.mark.slow  # a real `advisor serve` process and CLI subprocesses

RECOMMEND = ["recommend", "--benchmark", "resnet50", "--scenario", "Offline", "--top", "8"]
WORKLOAD = {"benchmark": "resnet50", "scenario": "Offline"}
QUERY = [
    {
        "accelerator": "NVIDIA L4",
        "accelerator_count": 1,
        "placement": "bare-metal",
        "components": {"driver": "525.85.12", "cuda": "12.0", "tensorrt": "8.6.0"},
        "framework": "tensorrt",
        "benchmark": "resnet50",
        "scenario": "Offline",
        "metric": "samples_per_second",
    }
]


@pytest.fixture(scope="module")
def tokens() -> dict[str, str]:
    return {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, starter_kb: Path) -> Path:
    root = tmp_path_factory.mktemp("remote-answers")
    copy_starter_kb(starter_kb, root / "kb")
    return root


@pytest.fixture(scope="module")
def api(kb: Path, tokens: dict[str, str]) -> Iterator[ServedAPI]:
    with ServedAPI(
        f"embedded:{kb / 'kb'}",
        tokens,
        log=kb / "serve.log",
        XDG_CACHE_HOME=str(kb / "server-cache"),
    ) as served:
        yield served


def cli(*args: str, kb: Path, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADVISOR_")}
    env.update({"XDG_CACHE_HOME": str(kb / "client-cache"), "ADVISOR_STARTER": "0"})
    env["ADVISOR_RESIDENT"] = "0"  # no resident answerer left behind by a local answer
    if token:
        env["ADVISOR_TOKEN"] = token
    return subprocess.run(
        [ADVISOR, *args], capture_output=True, text=True, env=env, check=False, timeout=300
    )


def answer(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr[-3000:]
    return without_elapsed(json.loads(done.stdout))


def without_elapsed(doc: Any) -> Any:
    """The answer without its timing (``elapsed_ms``/``elapsed_s`` differ between two runs)."""
    if isinstance(doc, dict):
        return {
            k: without_elapsed(v) for k, v in doc.items() if k not in ("elapsed_ms", "elapsed_s")
        }
    if isinstance(doc, list):
        return [without_elapsed(v) for v in doc]
    return doc


def requests_by_route(api: ServedAPI, token: str) -> dict[str, float]:
    text = httpx.get(
        api.url + "/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=30
    ).text
    out: dict[str, float] = {}
    for route, value in re.findall(
        r'advisor_http_requests_total\{[^}]*route="([^"]+)"[^}]*\} (\S+)', text
    ):
        out[route] = out.get(route, 0.0) + float(value)
    return out


def test_remote_answers_are_the_endpoints_answers(
    api: ServedAPI, kb: Path, tokens: dict[str, str]
) -> None:
    read = tokens["read"]
    auth = {"Authorization": f"Bearer {read}"}
    query_file = kb / "query.json"
    query_file.write_text(json.dumps(QUERY))
    before = requests_by_route(api, read)

    remote = answer(cli("--api", api.url, *RECOMMEND, "--json", kb=kb, token=read))
    direct = httpx.post(
        api.url + "/v1/recommendations",
        json={"workload": WORKLOAD, "top": 8},
        headers=auth,
        timeout=120,
    )
    assert direct.status_code == 200, direct.text
    assert remote == without_elapsed(direct.json())
    assert remote["recommendations"], "the starter knowledge base answers resnet50 Offline"

    predicted = answer(
        cli("--api", api.url, "predict", "--query", str(query_file), "--json", kb=kb, token=read)
    )
    direct = httpx.post(
        api.url + "/v1/predictions", json={"queries": QUERY}, headers=auth, timeout=120
    )
    assert predicted == without_elapsed(direct.json())
    assert predicted[0]["basis"] in ("observed", "interpolated", "transferred")

    placement = answer(cli("--api", api.url, "compare", "placement", "--json", kb=kb, token=read))
    direct = httpx.get(api.url + "/v1/compare/placement", headers=auth, timeout=120)
    assert placement == without_elapsed(direct.json())

    after = requests_by_route(api, read)
    assert after.get("/v1/recommendations", 0) - before.get("/v1/recommendations", 0) >= 2
    assert after.get("/v1/predictions", 0) - before.get("/v1/predictions", 0) >= 2
    # the client asked for answers, never for the observations behind them
    assert after.get("/v1/observations", 0) == before.get("/v1/observations", 0)


def test_remote_evaluate_and_compare(api: ServedAPI, kb: Path, tokens: dict[str, str]) -> None:
    read = tokens["read"]
    auth = {"Authorization": f"Bearer {read}"}
    evaluated = answer(
        cli("--api", api.url, "evaluate", "--protocol", "loao", "--json", kb=kb, token=read)
    )
    direct = httpx.get(
        api.url + "/v1/evaluation", params={"protocol": "loao"}, headers=auth, timeout=600
    )
    assert direct.status_code == 200, direct.text
    assert evaluated == without_elapsed(direct.json())
    assert evaluated["overall"]["predictions"] > 0

    refused = httpx.get(
        api.url + "/v1/evaluation", params={"protocol": "by-guess"}, headers=auth, timeout=60
    )
    assert refused.status_code == 422 and "protocol" in refused.json()["message"]

    stacks = httpx.get(api.url + "/v1/compare/regressions", headers=auth, timeout=120)
    assert stacks.status_code == 200
    remote = answer(cli("--api", api.url, "compare", "regressions", "--json", kb=kb, token=read))
    assert remote == without_elapsed(stacks.json())

    asked = {"benchmark": "resnet50", "scenario": "Offline", "accelerator": "H100-SXM5-80GB"}
    ranked = httpx.get(api.url + "/v1/compare/rank-stacks", params=asked, headers=auth, timeout=120)
    assert ranked.status_code == 200, ranked.text
    options = [f"--{k}={v}" for k, v in asked.items()]
    remote = answer(
        cli("--api", api.url, "compare", "rank-stacks", *options, "--json", kb=kb, token=read)
    )
    assert remote == ranked.json() and remote, "the starter knowledge base ranks H100's stacks"


def test_api_with_store_is_a_usage_error(api: ServedAPI, kb: Path, tokens: dict[str, str]) -> None:
    done = cli(
        "--api",
        api.url,
        *RECOMMEND,
        "--store",
        f"embedded:{kb / 'kb'}",
        kb=kb,
        token=tokens["read"],
    )
    assert done.returncode == 2, done.stderr
    assert "--store" in done.stderr and "--api" in done.stderr and "not both" in done.stderr
    done = cli(
        "--api",
        api.url,
        *RECOMMEND,
        "--prices",
        str(kb / "prices.yaml"),
        kb=kb,
        token=tokens["read"],
    )
    assert done.returncode == 2, done.stderr
    assert "--prices" in done.stderr and "its own price table" in done.stderr


def test_a_request_too_long_to_parse_is_refused_in_json(api: ServedAPI) -> None:
    """A GET whose URL is beyond what the HTTP parser reads (100 KB) is answered before the app
    sees it; the answer is the API's JSON error saying what is wrong and what to do, not the
    server's plain-text line. The server goes on answering."""
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(api.url)
    url = "/v1/compare/rank-stacks?benchmark=" + "x" * 100_000
    with socket.create_connection((where.hostname, where.port), timeout=30) as conn:
        conn.sendall(f"GET {url} HTTP/1.1\r\nHost: {where.netloc}\r\n\r\n".encode())
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), head
    assert b"content-type: application/json" in head.lower()
    refusal = json.loads(body)
    assert refusal["error"] == "bad_request"
    assert (
        "longer than the server reads" in refusal["message"] and "POST body" in refusal["message"]
    )
    with socket.create_connection((where.hostname, where.port), timeout=30) as conn:
        conn.sendall(b"GET /heal\x00thz HTTP/1.1\r\nHost: x\r\n\r\n")  # not HTTP
        malformed = b""
        while chunk := conn.recv(65536):
            malformed += chunk
    head, _, body = malformed.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and json.loads(body)["error"] == "bad_request"
    assert b"x-content-type-options: nosniff" in head.lower()
    assert httpx.get(api.url + "/healthz", timeout=30).status_code == 200


def test_remote_answer_is_the_local_answer(
    api: ServedAPI, kb: Path, tokens: dict[str, str]
) -> None:
    """Last (it stops the server): the remote answer equals the local engine's on the same store."""
    remote = answer(cli("--api", api.url, *RECOMMEND, "--json", kb=kb, token=tokens["read"]))
    api.stop()  # the embedded store is the server's while it serves
    local = answer(cli(*RECOMMEND, "--store", f"embedded:{kb / 'kb'}", "--json", kb=kb))
    assert remote == local
