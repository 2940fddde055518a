"""The web explorer's pages over HTTP (no browser): auth, each page against the API's answer for
the same query, exports, permalinks, labels and no external assets."""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from stack_advisor.store.base import Store
from tests.support.api import make_app

PAGES = [
    "/",
    "/?benchmark=resnet50&scenario=Offline",
    "/leaderboard?benchmark=resnet50&scenario=Offline",
    "/recommend?benchmark=resnet50&scenario=Offline",
    "/compare?a=driver%3D510.39.01&b=driver%3D510.47.03",
    "/compare/sweep",
    "/known-bad",
    "/catalogue?q=gaudi",
    "/login",
]


@pytest.fixture(scope="module")
def client(web_app: FastAPI, web_tokens: dict[str, str]) -> Iterator[TestClient]:
    with TestClient(web_app, raise_server_exceptions=True) as c:
        answer = c.post(
            "/login", data={"token": web_tokens["read"], "next": "/"}, follow_redirects=False
        )
        assert answer.status_code == 303, answer.text
        yield c


@pytest.fixture(scope="module")
def api_headers(web_tokens: dict[str, str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {web_tokens['read']}"}


def test_pages_need_a_read_token(web_app: FastAPI) -> None:
    with TestClient(web_app) as anonymous:
        page = anonymous.get("/?benchmark=resnet50", follow_redirects=False)
        assert page.status_code == 303
        assert page.headers["location"] == "/login?next=%2F%3Fbenchmark%3Dresnet50"
        export = anonymous.get("/?format=csv")
        assert export.status_code == 401 and export.json()["error"] == "unauthorized"
        refused = anonymous.post("/login", data={"token": "not-a-token", "next": "//evil.example/"})
        assert refused.status_code == 401 and "unknown token" in refused.text
        assert 'name="next" value="/"' in refused.text  # an off-site next is never kept


def test_login_sets_an_httponly_cookie(web_app: FastAPI, web_tokens: dict[str, str]) -> None:
    with TestClient(web_app) as c:
        answer = c.post(
            "/login",
            data={"token": web_tokens["read"], "next": "/known-bad?q=cuda"},
            follow_redirects=False,
        )
        assert answer.status_code == 303 and answer.headers["location"] == "/known-bad?q=cuda"
        cookie = answer.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert c.get("/known-bad").status_code == 200
        c.post("/logout")
        assert c.get("/", follow_redirects=False).status_code == 303


def test_read_open_deployments_need_no_token(web_store: Store, web_tokens: dict[str, str]) -> None:
    with TestClient(make_app(web_store, web_tokens, read_auth="open")) as c:
        assert c.get("/leaderboard").status_code == 200
        assert c.get("/static/app.css").status_code == 200


def _all_pages(client: TestClient, query: dict[str, str]) -> list[dict[str, Any]]:
    rows, page = [], 1
    while True:
        doc = client.get(
            "/?" + urlencode({**query, "size": 200, "page": page, "format": "json"})
        ).json()
        rows.extend(doc["rows"])
        if page >= doc["pages"]:
            return rows
        page += 1


def test_explore_shows_what_the_observations_api_returns(
    client: TestClient, api_headers: dict[str, str]
) -> None:
    query = {
        "benchmark": "resnet50",
        "accelerator": "NVIDIA A100-SXM-80GB",
        "placement": "bare-metal",
    }
    shown = _all_pages(client, query)
    api = client.get(
        "/v1/observations",
        headers=api_headers,
        params={
            "benchmark_name": "resnet50",
            "accelerator": "NVIDIA A100-SXM-80GB",
            "placement": "bare-metal",
            "limit": 1000,
        },
    ).json()["items"]
    assert shown, "the filter should select observations"
    assert sorted(r["key"] for r in shown) == sorted(o["key"] for o in api if o["valid"])
    by_key = {o["key"]: o for o in api}
    for row in shown[:20]:
        assert row["value"] == by_key[row["key"]]["value"]
        assert row["round"] == by_key[row["key"]]["provenance"]["details"].get("round", "")


def test_explore_sorts_and_pages_on_the_server(client: TestClient) -> None:
    base = {
        "benchmark": "resnet50",
        "scenario": "Offline",
        "metric": "samples_per_second",
        "sort": "per_accelerator",
        "order": "desc",
        "size": 25,
        "format": "json",
    }
    first = client.get("/?" + urlencode(base)).json()
    second = client.get("/?" + urlencode({**base, "page": 2})).json()
    values = [r["per_accelerator"] for r in first["rows"] + second["rows"]]
    assert len(values) == 50 and values == sorted(values, reverse=True)
    assert first["total"] == second["total"] > 50
    assert {r["scenario"] for r in first["rows"]} == {"Offline"}
    assert first["figures"] and all(f["p10"] <= f["median"] <= f["p90"] for f in first["figures"])


def test_explore_refuses_unknown_values_with_suggestions(client: TestClient) -> None:
    page = client.get("/?scenario=Ofline")
    assert page.status_code == 200 and 'role="alert"' in page.text
    assert (
        "scenario: &#39;Ofline&#39; is not recorded" in page.text
        and "did you mean: Offline" in page.text
    )
    export = client.get("/?scenario=Ofline&format=json")
    assert export.status_code == 422 and "did you mean: Offline" in export.json()["message"]
    assert client.get("/?sort=bogus&format=json").status_code == 422
    # a malformed field is said on the page, over the default selection (it had been raw JSON)
    negative = client.get("/?page=-1")
    assert negative.status_code == 200 and 'role="alert"' in negative.text
    assert "page" in negative.text and "<table" in negative.text
    assert client.get("/?page=-1&format=json").status_code == 422


def test_evidence_page_is_the_api_observation(
    client: TestClient, api_headers: dict[str, str]
) -> None:
    page = client.get("/?benchmark=resnet50&scenario=Server")
    key = re.search(r'href="/observation\?key=([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    evidence = client.get(f"/observation?key={key}")
    assert evidence.status_code == 200
    doc = client.get(f"/observation?key={key}&format=json").json()
    from urllib.parse import unquote

    api = client.get(f"/v1/observations/{unquote(key)}", headers=api_headers).json()
    assert doc == api
    for field in ("round", "submitter", "system"):
        if field in api["provenance"]["details"]:
            assert api["provenance"]["details"][field] in evidence.text


def test_recommend_page_is_the_api_answer(client: TestClient, api_headers: dict[str, str]) -> None:
    image = "nvcr.io/nvidia/tritonserver:24.01-py3"
    form = {
        "benchmark": "resnet50",
        "scenario": "Offline",
        "objective": "throughput",
        "top": "4",
        "image": image,
    }
    doc = client.get("/recommend?" + urlencode({**form, "format": "json"})).json()
    api = client.post(
        "/v1/recommendations",
        headers=api_headers,
        json={
            "workload": {
                "benchmark": "resnet50",
                "scenario": "Offline",
                "objective": "throughput",
                "image": image,
            },
            "top": 4,
        },
    ).json()

    def drop(d: dict[str, object]) -> dict[str, object]:
        return {k: v for k, v in d.items() if k != "elapsed_ms"}

    assert drop({k: v for k, v in doc.items() if k != "request"}) == drop(api)
    page = client.get("/recommend?" + urlencode(form))
    for rec in api["recommendations"]:
        assert rec["candidate"]["stack_label"] in page.text
    assert api["recommendations"][0]["snippet_yaml"]
    assert 'class="copy" data-copy-target="snippet-1"' in page.text
    # the round asked (a probe's as_of was dropped by the page)
    now = client.get("/recommend?" + urlencode({**form, "as_of": "now", "format": "json"})).json()
    assert now["workload"]["as_of"] == "now"
    assert all(r["round"] != "v6.0" for r in now["recommendations"]), now["recommendations"]
    every = client.get(
        "/recommend?"
        + urlencode(
            [
                ("benchmark", "resnet50"),
                ("scenario", "Offline"),
                ("accelerators", "H100, NVIDIA L4"),
                ("min_count", "1"),
                ("max_count", "8"),
                ("include_cpu", "no"),
                ("placements", "bare-metal"),
                ("placements", "vgpu"),
                ("framework", "tensorrt"),
                ("framework_version", ">=8.4"),
                ("min_confidence", "0.2"),
                ("include_predicted", "no"),
                ("format", "json"),
            ]
        )
    ).json()
    assert every["request"]["workload"] == {
        "benchmark": "resnet50",
        "scenario": "Offline",
        "min_confidence": 0.2,
        "include_predicted": False,
        "hardware": {
            "accelerators": ["H100", "NVIDIA L4"],
            "min_count": 1,
            "max_count": 8,
            "include_cpu": False,
            "placements": ["bare-metal", "vgpu"],
        },
        "frameworks": [{"name": "tensorrt", "version": ">=8.4"}],
    }
    assert all(r["basis"] == "observed" for r in every["recommendations"])
    bad = client.get("/recommend?benchmark=resnet50&batch_size=many")
    assert "batch_size: must be a whole number" in bad.text


def test_compare_page_is_the_api_comparison(
    client: TestClient, api_headers: dict[str, str]
) -> None:
    params = {
        "a": "driver=510.39.01",
        "b": "driver=510.47.03",
        "benchmark": "resnet50",
        "scenario": "Offline",
    }
    doc = client.get("/compare?" + urlencode({**params, "format": "json"})).json()
    api = client.get("/v1/compare", headers=api_headers, params=params).json()
    (row,) = doc["comparisons"]
    assert {k: row[k] for k in api} == api and api["pairs"] > 0 and api["interval"]
    page = client.get("/compare?" + urlencode(params))
    assert page.text.count("<rect") >= 2  # the ratio bar and the overhead bars
    overhead = client.get("/v1/compare/placement", headers=api_headers).json()
    assert [(o["accelerator"], o["placement"], o["ratio"]) for o in overhead] == [
        (o["accelerator"], o["placement"], o["ratio"]) for o in doc["placement_overhead"]
    ]
    assert overhead, "the slice holds H100 micro-benchmarks on bare metal and in VMs"
    unknown = client.get("/compare?a=stk-nope&b=tensorrt%3D8.6.0")
    assert "stack: no stack with id" in unknown.text


@pytest.fixture(scope="module")
def sweep_client(sweep_store: Store, web_tokens: dict[str, str]) -> Iterator[TestClient]:
    with TestClient(make_app(sweep_store, web_tokens)) as c:
        assert (
            c.post("/login", data={"token": web_tokens["read"]}, follow_redirects=False).status_code
            == 303
        )
        yield c


def test_compare_sweep_page_is_the_api_comparison(
    sweep_client: TestClient, api_headers: dict[str, str]
) -> None:
    c = sweep_client
    for params in (
        {"sweep": "numpy-cpu-test"},
        {"sweep": "numpy-cpu-test", "baseline": "numpy-2.1.3", "cell": "numpy-1.26.4"},
    ):
        doc = c.get("/compare/sweep?" + urlencode({**params, "format": "json"})).json()
        api = c.get("/v1/compare/sweep", headers=api_headers, params=params).json()
        assert doc.pop("query") == {**params, "format": "json"} and doc == api
        assert [cell["cell"] for cell in api["cells"]] == ["numpy-1.26.4", "numpy-2.1.3"]
        assert api["ratios"] and all(
            r["interval_from"] == "repeats"
            and r["basis"] == "measured on this node"
            and 0 < r["low"] <= r["ratio"] <= r["high"]
            for r in api["ratios"]
        )
        assert {r["cell"] for r in api["ratios"]} == {
            "numpy-2.1.3" if "cell" not in params else "numpy-1.26.4"
        }
        page = c.get("/compare/sweep?" + urlencode(params))
        assert page.text.count("<rect") == len(
            api["ratios"]
        )  # one bar per ratio, with its interval
        for r in api["ratios"]:
            assert r["verdict"] in page.text and r["cell"] in page.text
        rows = list(
            csv.DictReader(
                io.StringIO(c.get("/compare/sweep?" + urlencode({**params, "format": "csv"})).text)
            )
        )
        assert [float(r["ratio"]) for r in rows] == [r["ratio"] for r in api["ratios"]]
    forward, backward = (
        c.get("/v1/compare/sweep", headers=api_headers, params=p).json()["ratios"][0]["ratio"]
        for p in (
            {"sweep": "numpy-cpu-test"},
            {"sweep": "numpy-cpu-test", "baseline": "numpy-2.1.3"},
        )
    )
    assert forward * backward == pytest.approx(1.0)  # B against A is the inverse of A against B
    unknown = c.get("/compare/sweep?sweep=numpy-cpu-test&cell=numpy-9")
    assert 'role="alert"' in unknown.text and "no measured cell &#39;numpy-9&#39;" in unknown.text
    assert c.get("/v1/compare/sweep?sweep=nope", headers=api_headers).status_code == 404
    assert "numpy-cpu-test" in c.get("/compare/sweep").text  # the recorded sweeps are offered


def test_rows_measured_here_say_so_in_the_api_and_the_page(
    sweep_client: TestClient, api_headers: dict[str, str]
) -> None:
    from stack_advisor.advisor.results import Basis, basis_note, this_node

    here = this_node(os.environ)  # what the app's edge passed in
    workload = {"family": "pi", "benchmark": "mem_triad"}
    api = sweep_client.post(
        "/v1/recommendations", headers=api_headers, json={"workload": workload}
    ).json()
    observed = [r for r in api["recommendations"] if r["basis"] == "observed"]
    # both numpy builds, measured by the sweep on this machine: one row per accelerator, count,
    # placement and stack family, the other build folded in (issue 43's default view)
    assert len(observed) == 1 and observed[0]["more_results"] >= 1
    for r in observed:
        assert r["evidence"]["measured_on"] == [here] and r["basis_note"] == "measured on this node"
    doc = sweep_client.get("/recommend?" + urlencode({**workload, "format": "json"})).json()
    assert [r["basis_note"] for r in doc["recommendations"]] == [
        r["basis_note"] for r in api["recommendations"]
    ]
    page = sweep_client.get("/recommend?" + urlencode(workload))
    assert page.text.count('class="basis-note">measured on this node<') == 1
    assert basis_note(Basis.OBSERVED, ["gpu-7"], "laptop") == "measured on node gpu-7"
    assert basis_note(Basis.INTERPOLATED, [here], here) is None


def test_leaderboard_ranks_canonical_accelerators_per_placement(client: TestClient) -> None:
    doc = client.get(
        "/leaderboard?benchmark=resnet50&scenario=Offline&metric=samples_per_second&format=json"
    ).json()
    rows = doc["rows"]
    assert rows and [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    values = [r["value"] for r in rows]
    assert values == sorted(values, reverse=True)  # throughput: best first
    assert all(r["low"] <= r["value"] <= r["high"] for r in rows)
    assert len({(r["accelerator"], r["placement"]) for r in rows}) == len(rows)
    # our H100 LoadGen runs (a VM: "passthrough") are two other series, eager and CUDA-graph SUTs:
    # the board keeps the series it chose on bare metal and says what it left out there
    assert doc["series"]["parameters"] == {} and {r["placement"] for r in rows} >= {"bare-metal"}
    assert any(
        # (a plot now picks the best-evidenced of several series, so it is "another series")
        n.startswith("passthrough: left out, its results are another series")
        for n in doc["notes"]
    )
    unchosen = client.get("/leaderboard?benchmark=resnet50")  # opens on the throughput, saying so
    assert (
        'role="alert"' not in unchosen.text
        and "showing samples_per_second in Offline" in unchosen.text
    )
    assert '<option value="samples_per_second" selected' in unchosen.text
    unknown = client.get(
        "/leaderboard?benchmark=resnet50&scenario=Offline&metric=bogus&placement=bare-metal"
    )
    assert "Metric: no &#39;bogus&#39; observations" in unknown.text


def test_known_bad_lists_failures_and_rule_violations(
    client: TestClient, api_headers: dict[str, str]
) -> None:
    doc = client.get("/known-bad?format=json").json()
    from stack_advisor.schema.models import FailureClass, failure_class

    failures = client.get("/v1/failures", headers=api_headers, params={"limit": 1000}).json()
    stack = [
        f
        for f in failures["items"]
        if failure_class(f["stage"], f["error_class"]) is FailureClass.STACK
    ]
    assert failures["total"] > 0
    assert sum(r["kind"] == "failure" for r in doc["rows"]) == len(
        stack
    )  # harness and environment left out
    word = doc["rows"][0]["accelerator"] or doc["rows"][0]["what"]
    found = client.get("/known-bad?" + urlencode({"q": word, "format": "json"})).json()["rows"]
    assert found and all(word.lower() in " ".join(map(str, r.values())).lower() for r in found)


def test_catalogue_page_is_the_api_catalogue(
    client: TestClient, api_headers: dict[str, str]
) -> None:
    listed = client.get("/v1/catalogue/accelerators", headers=api_headers).json()
    doc = client.get("/catalogue?format=json").json()
    assert [r["id"] for r in doc["rows"]] == [r["id"] for r in listed["items"]]
    found = client.get("/catalogue?" + urlencode({"q": "H200 NVL", "format": "json"})).json()[
        "rows"
    ]
    assert [r["id"] for r in found] == ["H200-NVL-141GB"] and found[0]["memory_gb"] == 141
    html = client.get("/catalogue?q=gb200").text
    assert (
        'href="/catalogue"' in html
        and "ONE Blackwell GPU" in html
        and 'href="/v1/catalogue/accelerators"' in html
    )


def test_csv_export_is_the_shown_rows(client: TestClient) -> None:
    query = {
        "benchmark": "resnet50",
        "scenario": "Offline",
        "size": 25,
        "sort": "value",
        "order": "desc",
    }
    shown = client.get("/?" + urlencode({**query, "format": "json"})).json()["rows"]
    answer = client.get("/?" + urlencode({**query, "format": "csv"}))
    assert answer.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    assert [r["key"] for r in rows] == [r["key"] for r in shown]
    assert [float(r["value"]) for r in rows] == [r["value"] for r in shown]


class _Audit(HTMLParser):
    """Collects form controls, labels and every URL a page loads or links to."""

    def __init__(self) -> None:
        super().__init__()
        self.controls: list[str] = []
        self.labelled: set[str] = set()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("input", "select", "textarea") and a.get("type") != "hidden":
            self.controls.append(a.get("id") or f"<{tag} name={a.get('name')}> without id")
        if tag == "label" and a.get("for"):
            self.labelled.add(a["for"] or "")
        for attr in ("src", "href"):
            if a.get(attr):
                self.urls.append(a[attr] or "")


@pytest.mark.parametrize("url", PAGES)
def test_every_control_has_a_label_and_assets_are_local(client: TestClient, url: str) -> None:
    page = client.get(url)
    assert page.status_code == 200
    audit = _Audit()
    audit.feed(page.text)
    assert audit.controls or url == "/known-bad"
    assert [c for c in audit.controls if c not in audit.labelled] == []
    loaded = [u for u in audit.urls if u.startswith(("/static/", "http", "//"))]
    assert all(u.startswith("/static/") for u in loaded), loaded


def test_llm_leaderboard_opens_on_throughput_with_token_latencies(client: TestClient) -> None:
    page = client.get("/leaderboard?benchmark=llama2-70b-99")  # issue 31: opened with an error box
    assert 'role="alert"' not in page.text and "showing tokens_per_second" in page.text
    doc = client.get("/leaderboard?benchmark=llama2-70b-99&scenario=Server&format=json").json()
    assert doc["series"]["metric"] == "tokens_per_second"
    assert doc["series"]["token_latencies"] == ["ttft_p99_ms", "tpot_p99_ms"]
    with_latency = [r for r in doc["rows"] if r["ttft_p99_ms"] is not None]
    assert with_latency and all(0 < r["tpot_p99_ms"] < r["ttft_p99_ms"] for r in with_latency)
    server = client.get("/leaderboard?benchmark=llama2-70b-99&scenario=Server")
    assert "TTFT p99 (ms)" in server.text and "TPOT p99 (ms)" in server.text
    offline = client.get("/leaderboard?benchmark=resnet50&scenario=Offline&format=json").json()
    assert offline["series"]["token_latencies"] == []  # not an LLM: no such columns


def test_explore_draws_one_chart_per_unit_with_plain_ticks(client: TestClient) -> None:
    page = client.get("/?benchmark=resnet50").text
    svgs = re.findall(r'<svg class="chart".*?</svg>', page, re.DOTALL)
    assert len(svgs) >= 2  # several metrics in the selection: one chart each
    for svg in svgs:
        title = re.search(r"<title>([^<]*)</title>", svg).group(1)  # type: ignore[union-attr]
        metric = title.split(":")[0]
        axis = re.findall(r'class="tick">([^<]*)<', svg)
        assert axis[-1].startswith(metric), (
            title,
            axis[-1],
        )  # the axis names the chart's one metric
        assert not any("e+" in t or "e-" in t for t in axis), axis
        assert all(re.fullmatch(r"[\d,.]+", t) for t in axis[:-1]), axis


def test_advisor_figure_beside_a_cpu_observation_is_not_never_measured(client: TestClient) -> None:
    doc = client.get(
        "/?"
        + urlencode(
            {
                "benchmark": "resnet50",
                "accelerator": "CPU",
                "advisor_figure": "true",
                "size": 200,
                "format": "json",
            }
        )
    ).json()
    assert doc["rows"]
    assert not [r for r in doc["rows"] if "CPU never measured" in (r.get("advisor_reason") or "")]


def test_known_bad_holds_stack_failures_only(
    client: TestClient, api_headers: dict[str, str]
) -> None:
    from stack_advisor.schema.models import FailureClass, failure_class

    failures = client.get("/v1/failures", headers=api_headers, params={"limit": 1000}).json()[
        "items"
    ]
    harness = [
        f for f in failures if failure_class(f["stage"], f["error_class"]) is FailureClass.HARNESS
    ]
    assert harness  # the starter's cupy runs: "cupy has no convolution primitive"
    shown = client.get("/known-bad?format=json").json()["rows"]
    assert not any("no convolution primitive" in r["message"] for r in shown)
    assert {r["severity"] for r in shown if r["kind"] == "failure"} <= {"error"}
