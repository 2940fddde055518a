"""Remote mode against local, and the API's latency, in one run on one store.

On a temporary embedded store seeded with the starter knowledge base:
- warm local: ``advisor recommend --store URI`` in a fresh process, its persisted table and
  calibration loaded (one priming call first);
- remote: ``advisor --api URL recommend`` against ``advisor serve`` on that store (loopback), in a
  fresh process: the API's answer endpoint, one request;
- the goal: remote median <= warm local median + 0.5 s;
- the old remote path once, for scale: the engine in this process over the REST store (it pages
  through every observation and calibrates), as ``--api`` did before;
- the API: ``POST /v1/recommendations`` from ``--clients`` concurrent clients, p50/p99.

``--baseline-rev REV`` times the same figures (warm local, API p50/p99) with that revision's code
(``git archive``) on a copy of the same store in the same run, so "no worse" is measured, not
assumed: the CLI runs are interleaved round by round and both servers run at once, their request
batches alternating, so both meet the same load. Median, p10 and p90 of ``--repeat`` runs; CPU
seconds beside wall time (the machine may be shared).

    python bench/remote_recommend.py
    python bench/remote_recommend.py --baseline-rev 8098ebf --repeat 7
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.servers import free_port, stop_process

ROOT = Path(__file__).resolve().parents[1]


def _cli_latency() -> Any:
    spec = importlib.util.spec_from_file_location("cli_latency", ROOT / "bench" / "cli_latency.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CLI = _cli_latency()
extract, run_cli, show, summary = _CLI.extract, _CLI.run_cli, _CLI.show, _CLI.summary

RECOMMEND = ["recommend", "--benchmark", "resnet50", "--scenario", "Offline"]
BODY = {"workload": {"benchmark": "resnet50", "scenario": "Offline"}, "top": 5}


def serve(
    uri: str, token: str, env: dict[str, str], code_root: Path, log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    out = log.open("ab")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stack_advisor.cli.main",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--store",
            uri,
            "--log-level",
            "warning",
        ],
        cwd=code_root,
        env={
            **env,
            "PYTHONPATH": str(code_root),
            "ADVISOR_TOKENS": f"{token}:read",
            "ADVISOR_ENVIRONMENT": "production",
        },
        stdout=out,
        stderr=out,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"advisor serve exited; see {log}")
        try:
            if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                # the first answer waits for the warm-up (table and calibration): not timed
                httpx.post(
                    url + "/v1/recommendations",
                    json=BODY,
                    timeout=300,
                    headers={"Authorization": f"Bearer {token}"},
                ).raise_for_status()
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    stop_process(proc)
    raise SystemExit(f"advisor serve not ready after 180 s; see {log}")


def api_latency(url: str, token: str, clients: int, requests: int) -> dict[str, list[float]]:
    """Latencies (ms) of POST /v1/recommendations from ``clients`` threads, ``requests`` in all."""
    times: list[float] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60
        ) as c:
            for _ in range(n):
                start = time.perf_counter()
                c.post("/v1/recommendations", json=BODY).raise_for_status()
                with lock:
                    times.append((time.perf_counter() - start) * 1000)

    threads = [threading.Thread(target=worker, args=(requests // clients,)) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"samples": times}


def old_remote_path(url: str, token: str) -> float:
    """Seconds for one answer the way ``--api`` answered before: the engine here over the REST
    store (every observation paged in, the table built and the evidence calibrated)."""
    from stack_advisor.advisor.engine import Advisor
    from stack_advisor.store.rest_store import RestStore

    start = time.perf_counter()
    with RestStore(url, token) as store:
        advisor = Advisor(store)
        advisor.persist_calibration = False
        advisor.recommend(BODY["workload"], top=5)
    return time.perf_counter() - start


def copy_store(tmp: Path, name: str) -> str:
    """A copy of the seeded embedded store (its files ``kb*``) under another name: servers and
    local runs each hold their own, so all run at once under the same load."""
    for path in tmp.glob("kb*"):
        target = tmp / path.name.replace("kb", name, 1)
        if path.is_dir():
            shutil.copytree(path, target)
        else:
            shutil.copy2(path, target)
    return f"embedded:{tmp / name}"


def interleaved(
    runs: dict[str, tuple[list[str], dict[str, str], Path]], repeat: int
) -> dict[str, Any]:
    """Each command once per round, round after round, so every one meets the same load."""
    walls: dict[str, list[float]] = {name: [] for name in runs}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, (cmd, env, code_root) in runs.items():
            wall, cpu, code = run_cli(cmd, env, code_root)
            if code != 0:
                raise SystemExit(f"{name}: advisor {' '.join(cmd)} exited {code}")
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {name: {"wall": summary(walls[name]), "cpu": summary(cpus[name])} for name in runs}


def api_rounds(
    servers: dict[str, str], token: str, clients: int, requests: int, rounds: int = 4
) -> dict[str, Any]:
    """``api_latency`` on each server in turn, ``rounds`` times, the samples pooled per server."""
    pooled: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(rounds):
        for name, url in servers.items():
            pooled[name].extend(api_latency(url, token, clients, requests // rounds)["samples"])
    out = {}
    for name, samples in pooled.items():
        ordered = sorted(samples)
        out[name] = {
            "p50": ordered[len(ordered) // 2],
            "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
            "max": ordered[-1],
            "n": len(ordered),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument(
        "--baseline-rev", help="a git revision timed on the same store in the same run"
    )
    parser.add_argument(
        "--skip-old", action="store_true", help="leave out the old remote path's timing"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="remote-recommend-") as name:
        tmp = Path(name)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("ADVISOR_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        env.update(
            {
                "XDG_DATA_HOME": str(tmp / "data"),
                "XDG_CACHE_HOME": str(tmp / "cache"),
                "ADVISOR_STARTER": "0",
            }
        )
        os.environ["XDG_CACHE_HOME"] = env["XDG_CACHE_HOME"]
        uri = f"embedded:{tmp / 'kb'}"
        from stack_advisor.store.registry import open_store
        from stack_advisor.store.starter import seed_store

        with open_store(uri) as store:
            seed_store(store)
            n = store.stats().counts.get("Observation", 0)
        local_uri, base_uri = copy_store(tmp, "local"), copy_store(tmp, "base")
        print(
            f"remote_recommend: {os.cpu_count()} CPUs, load average "
            f"{os.getloadavg()[0]:.1f} at start; "
            f"starter knowledge base, {n:,} observations; repeat {args.repeat}, interleaved",
            flush=True,
        )
        print(f"advisor {' '.join(RECOMMEND)}", flush=True)
        token = secrets.token_urlsafe(24)
        roots = {"now": ROOT}
        if args.baseline_rev:
            roots[f"baseline {args.baseline_rev}"] = extract(args.baseline_rev, tmp / "baseline")
        envs = {
            label: {**env, "XDG_CACHE_HOME": str(tmp / f"cache-{i}")}
            for i, label in enumerate(roots)
        }
        runs: dict[str, tuple[list[str], dict[str, str], Path]] = {}
        for label, code in roots.items():
            runs[f"{label}: warm local (--store)"] = (
                [*RECOMMEND, "--store", local_uri],
                envs[label],
                code,
            )
            run_cli(
                runs[f"{label}: warm local (--store)"][0], envs[label], code
            )  # primes the caches
        procs, servers = [], {}
        try:
            for label, code in roots.items():
                proc, url = serve(
                    uri if label == "now" else base_uri,
                    token,
                    envs[label],
                    code,
                    tmp / f"serve-{label.split()[0]}.log",
                )
                procs.append(proc)
                servers[label] = url
            runs["now: remote (--api URL)"] = (
                ["--api", servers["now"], *RECOMMEND],
                {**envs["now"], "ADVISOR_TOKEN": token},
                ROOT,
            )
            figures = interleaved(runs, args.repeat)
            for label, figure in figures.items():
                show(label, figure)
            if not args.skip_old:
                print(
                    f"  now: the old remote path (every observation over REST + calibration), once "
                    f"in-process: {old_remote_path(servers['now'], token):.2f} s",
                    flush=True,
                )
            latency = api_rounds(servers, token, args.clients, args.requests)
            for label, lat in latency.items():
                print(
                    f"  {label}: API POST /v1/recommendations, {args.clients} clients, "
                    f"{lat['n']} requests: "
                    f"p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f} ms, max {lat['max']:.1f} ms",
                    flush=True,
                )
        finally:
            for proc in procs:
                stop_process(proc)
        remote = figures["now: remote (--api URL)"]["wall"]["median"]
        warm = figures["now: warm local (--store)"]["wall"]["median"]
        verdict = "meets" if remote <= warm + 0.5 else "misses"
        print(
            f"remote {remote:.2f} s vs warm local {warm:.2f} s + 0.5 s: {verdict} the goal",
            flush=True,
        )
        print(f"load average at end {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
