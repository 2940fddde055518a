"""Server time and weight of the web explorer's pages over a large knowledge base.

Fills a fresh embedded store with N synthetic observations (the generator of
bench/api_latency.py: load for the pages, not knowledge), builds the app (reads open), warms it
(table load and model fit, as the server's warm-up does), then requests each page R times
through the ASGI app in-process (no network: the time is the server's: routing, auth, the query,
the template) and prints the first request's time (leaderboard and known-bad are then kept per
store generation), p50/p99 of the repeats, and the HTML's size; then the static assets' size.

    python bench/web_pages.py                     # 100k observations, 30 requests per page
    python bench/web_pages.py -n 20000 -r 10 --store /tmp/web-bench   # reuse a filled store
    python bench/web_pages.py --only evidence "observation API"        # some pages only
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _synthetic(n: int) -> list:  # type: ignore[type-arg]
    spec = importlib.util.spec_from_file_location("api_latency", ROOT / "bench" / "api_latency.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic(n)  # type: ignore[no-any-return]


def fill(store: object, n: int) -> float:
    from stack_advisor.schema.models import IngestBatch

    start = time.perf_counter()
    obs = _synthetic(n)
    for i in range(0, n, 5000):
        store.ingest(IngestBatch(observations=obs[i : i + 5000]))  # type: ignore[attr-defined]
    return time.perf_counter() - start


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=100_000, help="observations (default 100000)")
    parser.add_argument(
        "-r", "--repeats", type=int, default=30, help="requests per page (default 30)"
    )
    parser.add_argument("--store", help="embedded store folder to (re)use; default a temporary one")
    parser.add_argument(
        "--only", nargs="+", metavar="PAGE", help="measure only these pages (names as printed)"
    )
    args = parser.parse_args()

    os.environ.setdefault(
        "ADVISOR_CALIBRATION_CACHE", tempfile.mkdtemp(prefix="web-bench-calibration-")
    )
    from fastapi.testclient import TestClient

    from stack_advisor.api.settings import Settings
    from stack_advisor.schema.models import Benchmark
    from stack_advisor.server import create_app
    from stack_advisor.store.registry import open_store

    folder = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="web-bench-")) / "kb"
    store = open_store(f"embedded:{folder}")
    have = store.stats().counts.get("Observation", 0)
    fill_s = fill(store, args.n) if have < args.n else 0.0
    count = store.stats().counts.get("Observation", 0)
    app = create_app(Settings(read_auth="open"), store=store)
    with TestClient(app) as client:
        t0 = time.perf_counter()
        advisor = app.state.resources.advisor()
        advisor.warm()
        warm_s = time.perf_counter() - t0
        key = advisor.table().keys[count // 2]
        bench_id = Benchmark(
            family="cnn", name="resnet50", parameters={"batch_size": 64, "precision": "fp16"}
        ).benchmark_id
        pages = {
            "explore (no filter)": "/",
            "explore filtered+sorted": "/?benchmark=resnet50&placement=bare-metal"
            "&framework=pytorch&sort=value&order=desc",
            "explore page 200, 200 rows": "/?sort=per_accelerator&order=desc&size=200&page=200",
            "explore + advisor figure": "/?benchmark=vgg16&advisor_figure=true&size=50",
            "explore CSV export": "/?benchmark=resnet50&size=200&format=csv",
            "evidence": f"/observation?key={quote(key)}",
            "observation API": f"/v1/observations/{quote(key)}",
            "leaderboard": f"/leaderboard?benchmark={quote(bench_id)}",
            "recommend": "/recommend?family=cnn&benchmark=resnet50&batch_size=64&precision=fp16",
            "compare": "/compare?a=pytorch%3D2.2.2&b=pytorch%3D2.3.1&benchmark=resnet50",
            "known-bad": "/known-bad",
        }
        unknown = set(args.only or []) - set(pages)
        if unknown:
            parser.error(f"--only: no page {', '.join(sorted(unknown))}; pages: {', '.join(pages)}")
        pages = {k: v for k, v in pages.items() if not args.only or k in args.only}
        print(
            f"{count} observations (fill {fill_s:.0f} s; warm-up: table + model {warm_s:.1f} s); "
            f"{args.repeats} requests per page, in-process ASGI (server time, no network)"
        )
        print(
            f"{'page':30s} {'first ms':>9s} {'p50 ms':>9s} {'p99 ms':>9s} "
            f"{'max ms':>9s} {'bytes':>9s}"
        )
        for name, url in pages.items():
            t = time.perf_counter()
            first = client.get(url)
            first_ms = (time.perf_counter() - t) * 1000
            assert first.status_code == 200, (url, first.text[:500])
            times = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                answer = client.get(url)
                times.append((time.perf_counter() - t) * 1000)
            assert answer.status_code == 200, (url, answer.text[:500])
            assert 'role="alert"' not in answer.text, (
                url,
                answer.text[answer.text.find('role="alert"') :][:300],
            )
            print(
                f"{name:30s} {first_ms:9.1f} {statistics.median(times):9.1f} "
                f"{quantile(times, 0.99):9.1f} "
                f"{max(times):9.1f} {len(answer.content):9,d}"
            )
        static = sum(len(client.get(f"/static/{f}").content) for f in ("app.css", "app.js"))
        print(
            f"static assets (app.css + app.js, cached by the browser): {static:,d} "
            "bytes; no other request"
        )
    store.close()


if __name__ == "__main__":
    main()
