"""The web explorer in a real headless Chromium (Debian's ``chromium`` + ``chromium-driver``,
installed by ``scripts/test.sh``), against one uvicorn server for the module: log in, load each
page (a screenshot of each under test-artifacts/web/), apply filters, follow a permalink, export
CSV, submit the recommend form, and hold what is shown against the API's answer; keyboard
navigation and labels. Under CI=true a missing browser fails the module instead of skipping it."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1366,900",
]


def _browser_or_reason() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return (
                f"{path} is missing (apt-get install chromium chromium-driver; "
                "scripts/test.sh does)"
            )
    return None


_missing = _browser_or_reason()
if _missing and os.environ.get("CI") == "true":
    pytest.fail(f"the browser tests must run under CI=true: {_missing}", pytrace=False)
pytestmark = [
    pytest.mark.skipif(_missing is not None, reason=_missing or ""),
    pytest.mark.browser,
    pytest.mark.slow,
]


@pytest.fixture(scope="module")
def server(web_app: FastAPI) -> Iterator[str]:
    with _serve(web_app) as url:
        yield url


@contextmanager
def _serve(app: FastAPI) -> Iterator[str]:
    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    served = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=served.run, name="web-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not served.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    served.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(
    server: str,
    web_tokens: dict[str, str],
    downloads: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault(
        "SE_OFFLINE", "true"
    )  # chromedriver is given: Selenium Manager fetches nothing
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(120)
    driver.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    try:
        driver.get(server + "/")
        assert "/login" in driver.current_url  # a token is needed: the login form, first
        driver.find_element("id", "f-token").send_keys(web_tokens["read"])
        driver.find_element("id", "login").click()
        _wait(lambda: driver.current_url.rstrip("/") == server)
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def api(server: str, web_tokens: dict[str, str]) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=server, headers={"Authorization": f"Bearer {web_tokens['read']}"}, timeout=120
    ) as client:
        yield client


def _wait(condition: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting in the browser")
        time.sleep(0.1)


def _load(driver: Any, url: str) -> None:
    driver.get(url)
    _wait(lambda: driver.execute_script("return document.readyState") == "complete")


def _unlabelled(driver: Any) -> list[str]:
    return driver.execute_script(  # type: ignore[no-any-return]
        "return [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]"
        ".filter(e => e.labels.length === 0).map(e => e.name || e.outerHTML)"
    )


PAGES = {
    "explore": "/?benchmark=resnet50&scenario=Offline&sort=per_accelerator&order=desc",
    "evidence": None,
    "leaderboard": "/leaderboard?benchmark=resnet50&scenario=Offline&metric=samples_per_second",
    "recommend": "/recommend?benchmark=resnet50&scenario=Offline"
    "&image=nvcr.io%2Fnvidia%2Ftritonserver%3A24.01-py3",
    "compare": "/compare?a=driver%3D510.39.01&b=driver%3D510.47.03&benchmark=resnet50",
    "known-bad": "/known-bad?q=H100",
    "catalogue": "/catalogue?q=blackwell",
}


@pytest.mark.parametrize("name", list(PAGES))
def test_each_page_renders_with_labels_and_a_screenshot(
    browser: Any, server: str, artifacts: Path, name: str
) -> None:
    url = PAGES[name]
    if url is None:  # the evidence page: followed from the first row of Explore
        _load(browser, server + PAGES["explore"])
        browser.find_element("css selector", "#rows tbody tr a[href^='/observation']").click()
        _wait(lambda: "/observation?key=" in browser.current_url)
    else:
        _load(browser, server + url)
    assert browser.find_elements("id", "error") == []
    assert browser.find_element("tag name", "h1").text
    assert _unlabelled(browser) == []
    if name in ("explore", "leaderboard", "recommend", "compare"):
        assert browser.find_elements("css selector", "svg.chart rect"), f"{name} draws its chart"
    if name == "compare":  # the per-benchmark ratios and the placement overhead
        assert len(browser.find_elements("css selector", "svg.chart")) == 2
    browser.save_screenshot(str(artifacts / f"{name}.png"))
    assert (artifacts / f"{name}.png").stat().st_size > 10_000


def test_compare_sweep_cells_form_gives_the_api_answer(
    browser: Any, sweep_store: Any, web_tokens: dict[str, str], artifacts: Path
) -> None:
    """A second server over a store holding a real sweep (the login cookie is the host's, so the
    browser's session carries over: same tokens)."""
    from tests.support.api import make_app

    with _serve(make_app(sweep_store, web_tokens)) as url:
        _load(browser, url + "/compare/sweep")
        browser.find_element("id", "f-sweep").send_keys("numpy-cpu-test")
        browser.find_element("id", "f-cell").send_keys("numpy-2.1.3")
        browser.find_element("id", "apply").click()
        _wait(
            lambda: (
                "sweep=numpy-cpu-test" in browser.current_url
                and browser.find_elements("id", "sweep-heading")
            )
        )
        assert browser.find_elements("id", "error") == [] and _unlabelled(browser) == []
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {web_tokens['read']}"}, timeout=120
        ) as api:
            answer = api.get(
                "/v1/compare/sweep", params={"sweep": "numpy-cpu-test", "cell": "numpy-2.1.3"}
            ).json()
        shown = browser.find_elements("css selector", "#rows tbody tr")
        assert len(shown) == len(answer["ratios"]) > 0
        assert len(browser.find_elements("css selector", "svg.chart rect")) == len(answer["ratios"])
        for row, ratio in zip(shown, answer["ratios"], strict=True):
            assert ratio["cell"] in row.text and ratio["verdict"] in row.text
        browser.save_screenshot(str(artifacts / "compare-sweep.png"))


def test_filters_applied_in_the_form_match_the_api(
    browser: Any, server: str, api: httpx.Client
) -> None:
    from selenium.webdriver.support.ui import Select

    _load(browser, server + "/")
    Select(browser.find_element("id", "f-benchmark")).select_by_value("resnet50")
    Select(browser.find_element("id", "f-scenario")).select_by_value("Server")
    Select(browser.find_element("id", "f-placement")).select_by_value("bare-metal")
    Select(browser.find_element("id", "f-sort")).select_by_value("value")
    Select(browser.find_element("id", "f-order")).select_by_value("desc")
    browser.find_element("id", "apply").click()
    _wait(lambda: "scenario=Server" in browser.current_url)
    keys = [
        r.get_attribute("data-key")
        for r in browser.find_elements("css selector", "#rows tbody tr[data-key]")
    ]
    total = int(browser.find_element("id", "summary").text.split()[0].replace(",", ""))
    items = api.get(
        "/v1/observations",
        params={"benchmark_name": "resnet50", "placement": "bare-metal", "limit": 5000},
    ).json()["items"]
    server_rows = {
        o["key"]: o
        for o in items
        if o["valid"] and o["benchmark"]["parameters"].get("scenario") == "Server"
    }
    assert total == len(server_rows) and keys
    assert set(keys) <= set(server_rows)
    values = [server_rows[k]["value"] for k in keys]
    assert values == sorted(values, reverse=True)


def test_a_permalink_reproduces_the_view(browser: Any, server: str) -> None:
    from selenium.webdriver.support.ui import Select

    _load(
        browser,
        server + "/?benchmark=resnet50&scenario=Offline&placement=bare-metal&sort=per_accelerator"
        "&order=desc&size=25&page=2",
    )
    link = browser.find_element("id", "permalink").get_attribute("href")
    shown = [
        r.get_attribute("data-key")
        for r in browser.find_elements("css selector", "#rows tbody tr[data-key]")
    ]
    _load(browser, server + "/")
    _load(browser, link)
    assert [
        r.get_attribute("data-key")
        for r in browser.find_elements("css selector", "#rows tbody tr[data-key]")
    ] == shown
    assert Select(browser.find_element("id", "f-scenario")).first_selected_option.text == "Offline"
    assert "page 2 of" in browser.find_element("id", "summary").text


def test_csv_export_downloads_what_is_shown(browser: Any, server: str, downloads: Path) -> None:
    import csv

    _load(browser, server + "/?benchmark=resnet50&scenario=SingleStream&size=25")
    shown = [
        r.get_attribute("data-key")
        for r in browser.find_elements("css selector", "#rows tbody tr[data-key]")
    ]
    browser.find_element("id", "export-csv").click()
    target = downloads / "observations.csv"
    _wait(lambda: target.exists() and target.stat().st_size > 0)
    with target.open() as handle:
        assert [row["key"] for row in csv.DictReader(handle)] == shown


def test_recommend_form_gives_the_api_answer(browser: Any, server: str, api: httpx.Client) -> None:
    from selenium.webdriver.support.ui import Select

    image = "nvcr.io/nvidia/tritonserver:24.01-py3"
    _load(browser, server + "/recommend")
    Select(browser.find_element("id", "f-benchmark")).select_by_value("resnet50")
    Select(browser.find_element("id", "f-scenario")).select_by_value("Offline")
    browser.find_element("id", "f-image").send_keys(image)
    top = browser.find_element("id", "f-top")
    top.clear()
    top.send_keys("3")
    browser.find_element("id", "f-pl-bare-metal").click()
    browser.find_element("id", "apply").click()
    _wait(lambda: "benchmark=resnet50" in browser.current_url)
    cells = [
        r.find_elements("tag name", "td")
        for r in browser.find_elements("css selector", "#rows tbody tr")
    ]
    answer = api.post(
        "/v1/recommendations",
        json={
            "workload": {
                "benchmark": "resnet50",
                "scenario": "Offline",
                "image": image,
                "hardware": {"placements": ["bare-metal"]},
            },
            "top": 3,
        },
    ).json()
    expected = [
        (r["candidate"]["accelerator"], r["candidate"]["stack_label"], r["basis"])
        for r in answer["recommendations"]
    ]
    assert [(c[1].text.rsplit(" ×", 1)[0], c[3].text, c[4].text) for c in cells] == expected
    copy = browser.find_element("css selector", "button.copy[data-copy-target='snippet-1']")
    copy.click()
    _wait(lambda: copy.text == "Copied", timeout=5)
    assert "kind: Pod" in browser.find_element("id", "snippet-1").text


def test_keyboard_reaches_the_skip_link_the_filters_and_the_rows(browser: Any, server: str) -> None:
    from selenium.webdriver.common.keys import Keys

    _load(browser, server + "/?benchmark=resnet50&scenario=Offline")
    body = browser.find_element("tag name", "body")
    body.send_keys(Keys.TAB)
    active = browser.switch_to.active_element
    assert active.get_attribute("class") == "skip" and active.is_displayed()
    active.send_keys(Keys.ENTER)
    _wait(lambda: browser.switch_to.active_element.get_attribute("id") == "main", timeout=5)
    seen = []
    for _ in range(40):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        seen.append(
            browser.switch_to.active_element.get_attribute("id")
            or browser.switch_to.active_element.get_attribute("href")
        )
    assert seen[0] == "f-accelerator" and "f-benchmark" in seen and "apply" in seen
    # a filter changed and submitted from the keyboard alone
    field = browser.find_element("id", "f-accelerator")
    field.send_keys("NVIDIA A100-SXM-80GB", Keys.ENTER)
    _wait(lambda: "accelerator=NVIDIA+A100" in browser.current_url)
    accelerators = {
        r.find_elements("tag name", "td")[0].text
        for r in browser.find_elements("css selector", "#rows tbody tr[data-key]")
    }
    assert accelerators == {"A100-SXM4-80GB"}


def test_long_reasons_wrap_and_charts_keep_one_unit(
    browser: Any, server: str, artifacts: Path
) -> None:
    """Issue 31: a 141-character reason pushed the advisor's-figure column off screen; ticks read
    "1.13e+04"; time to train and samples/s shared an axis; the llama leaderboard opened with an
    error box and no TTFT/TPOT."""
    from urllib.parse import urlencode

    _load(
        browser,
        server
        + "/?"
        + urlencode(
            {
                "benchmark": "llama2-70b-99",
                "scenario": "Offline",
                "sort": "accelerator",
                "order": "desc",
                "advisor_figure": "true",
            }
        ),
    )  # open-division RTX 4090 and Jetson rows on the first page: "model does not fit in memory"
    cells = browser.find_elements("css selector", "#rows td.advisor-figure")
    assert cells and max(len(c.text) for c in cells) > 100, [c.text for c in cells[:3]]
    view = browser.execute_script("return document.documentElement.clientWidth")
    rights = [
        browser.execute_script("return arguments[0].getBoundingClientRect().right", c)
        for c in cells
    ]
    assert max(rights) <= view, (max(rights), view)  # on screen, without scrolling sideways
    browser.save_screenshot(str(artifacts / "explore-advisor-figure.png"))
    _load(browser, server + "/?benchmark=resnet50")
    charts = browser.find_elements("css selector", "svg.chart")
    assert len(charts) >= 2
    ticks = [t.text for t in browser.find_elements("css selector", "svg.chart text.tick")]
    assert ticks and not [t for t in ticks if "e+" in t]
    _load(browser, server + "/leaderboard?benchmark=llama2-70b-99")
    assert browser.find_elements("css selector", "[role=alert]") == []
    assert browser.find_elements("css selector", "svg.chart rect")
    _load(browser, server + "/leaderboard?benchmark=llama2-70b-99&scenario=Server")
    headers = [h.text for h in browser.find_elements("css selector", "#rows th")]
    assert "TTFT p99 (ms)" in headers and "TPOT p99 (ms)" in headers, headers
    browser.save_screenshot(str(artifacts / "leaderboard-llm.png"))
