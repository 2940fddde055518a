"""Fixtures for the container tier: our own Docker engine (deploy/docker/engine.sh), the images
built once per session (deploy/docker/build.sh: nothing pulled from a registry), the API image
serving on the session's real Neo4j, and a runner for the collector image. Everything talks over the
host's loopback (host networking: there is no bridge or CNI here).

Outside CI a missing engine skips with the reason; under CI=true it must run."""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.control_plane import free_port

REPO = Path(__file__).resolve().parents[2]
API_IMAGE = os.environ.get("API_IMAGE", "stack-advisor/api:dev")
COLLECTOR_IMAGE = os.environ.get("COLLECTOR_IMAGE", "stack-advisor/collector:cpu-dev")
BUILD_TIMEOUT_S = 1800
# The manifests' container securityContext, as docker run options (deploy/base,
# stack_advisor/collectors/plan).
HARDENED: dict[str, Any] = {
    "network_mode": "host",
    "read_only": True,
    "user": "65532:65532",
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
    "tmpfs": {"/tmp": "size=512m,mode=1777"},
}


def container(image: str, options: dict[str, Any]) -> Any:
    """A testcontainers DockerContainer with docker run ``options`` (tmpfs: {path: options};
    volumes: {host path: {bind, mode}})."""
    from testcontainers.core.container import DockerContainer

    options = dict(options)
    tmpfs = options.pop("tmpfs", {})
    binds = options.pop("volumes", {})
    made = DockerContainer(image, **options)
    made.tmpfs.update(tmpfs)
    for host, mount in binds.items():
        made = made.with_volume_mapping(host, mount["bind"], mount["mode"])
    return made


def _ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def tier_missing(reason: str) -> None:
    if _ci():
        pytest.fail(f"CI=true but the container tier cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[str]:
    """DOCKER_HOST of our engine (started when needed); testcontainers' reaper is off (its image
    would be pulled), every container here is removed by its fixture or test."""
    proc = subprocess.run(
        ["bash", str(REPO / "deploy" / "docker" / "engine.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        tier_missing(f"deploy/docker/engine.sh failed ({proc.returncode}): {proc.stderr[-2000:]}")
    host = proc.stdout.strip().rsplit("=", 1)[-1]
    saved = {k: os.environ.get(k) for k in ("DOCKER_HOST", "TESTCONTAINERS_RYUK_DISABLED")}
    os.environ["DOCKER_HOST"] = host
    os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"
    yield host
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@dataclass(frozen=True)
class Images:
    api: str
    collector: str
    build_log: str  # build.sh's stderr: per-step times and sizes


@pytest.fixture(scope="session")
def images(docker_engine: str) -> Images:
    """Both images, built once per session (a warm layer cache makes this seconds)."""
    start = time.monotonic()
    proc = subprocess.run(
        ["bash", str(REPO / "deploy" / "docker" / "build.sh")],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
        env={**os.environ, "API_IMAGE": API_IMAGE, "COLLECTOR_IMAGE": COLLECTOR_IMAGE},
    )
    if proc.returncode != 0:
        pytest.fail(
            f"deploy/docker/build.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}",
            pytrace=False,
        )
    print(f"\n{proc.stderr.strip()}\n[images] build.sh took {time.monotonic() - start:.0f} s")
    return Images(API_IMAGE, COLLECTOR_IMAGE, proc.stderr)


def docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@dataclass
class Api:
    url: str
    write_token: str
    read_token: str
    container: Any  # testcontainers DockerContainer

    def logs(self) -> str:
        out, err = self.container.get_logs()
        return (out + err).decode(errors="replace")


def wait_ready(url: str, timeout: float = 120, server: Any = None) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if server is not None:
            server.get_wrapped_container().reload()
            if server.get_wrapped_container().status == "exited":
                raise AssertionError(f"the API container exited before {url} was ready")
        try:
            if httpx.get(f"{url}/readyz", timeout=3).status_code == 200:
                return
            last = "not ready"
        except httpx.HTTPError as exc:
            last = str(exc)
        time.sleep(0.5)
    raise AssertionError(f"the API at {url} was not ready in {timeout:.0f} s: {last}")


def start_api(images: Images, store: str, tokens_dir: Path, host: str = "127.0.0.1") -> Api:
    """The API image as the Deployment runs it: production settings, tokens from a read-only
    mounted file, read-only root, /tmp a tmpfs, on a free port of ``host`` (loopback; a pod
    network's bridge address for pods in their own network namespaces)."""
    write, read = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    tokens_dir.mkdir(parents=True, exist_ok=True)
    (tokens_dir / "tokens").write_text(f"{write} write collector\n{read} read reader\n")
    tokens_dir.chmod(0o755)
    (tokens_dir / "tokens").chmod(0o644)
    port = free_port()
    server = (
        container(images.api, HARDENED)
        .with_command(["advisor", "serve", "--host", host, "--port", str(port)])
        .with_env("ADVISOR_ENVIRONMENT", "production")
        .with_env("ADVISOR_STORE", store)
        .with_env("ADVISOR_READ_AUTH", "token")
        .with_env("ADVISOR_TOKENS_FILE", "/etc/stack-advisor/tokens/tokens")
        .with_env("HOME", "/tmp")
        .with_volume_mapping(str(tokens_dir), "/etc/stack-advisor/tokens", "ro")
    )
    server.start()
    api = Api(f"http://{host}:{port}", write, read, server)
    try:
        wait_ready(api.url, server=server)
    except AssertionError as exc:
        logs = api.logs()
        server.stop()
        raise AssertionError(f"{exc}\ncontainer log:\n{logs[-3000:]}") from None
    return api


@pytest.fixture(scope="session")
def api(images: Images, neo4j_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """The API image on the session's real Neo4j (the local server of tests/neo4j_server.py,
    reached over loopback). Its data is cleared first: the tier reads back what it sent."""
    from stack_advisor.store.registry import open_store

    with open_store(neo4j_uri, migrate=False) as store:
        store.clear()  # type: ignore[attr-defined]
        # as a deployment's first start leaves it: no schema work in the first POST
        store.ensure_schema()
    server = start_api(images, neo4j_uri, tmp_path_factory.mktemp("api-tokens"))
    yield server
    server.container.stop()


@dataclass
class Run:
    code: int
    logs: str


def run_collector(
    images: Images,
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    spool: Path | None = None,
    timeout: float = 600,
) -> Run:
    """Run the collector image to completion as the Job's pod runs it (read-only root, /tmp a
    tmpfs, non-root); ``spool`` is mounted as its state volume (XDG_STATE_HOME=/var/spool-state)."""
    run = container(images.collector, HARDENED).with_command(args)
    for key, value in {
        "HOME": "/tmp",
        "XDG_CACHE_HOME": "/tmp/cache",
        "XDG_DATA_HOME": "/tmp/data",
        **(env or {}),
    }.items():
        run = run.with_env(key, value)
    if spool is not None:
        spool.mkdir(parents=True, exist_ok=True)
        spool.chmod(0o777)  # the container's user (65532) writes there
        run = run.with_env("XDG_STATE_HOME", "/var/spool-state")
        run = run.with_volume_mapping(str(spool), "/var/spool-state", "rw")
    return wait_exit(run, timeout)


def wait_exit(started: Any, timeout: float) -> Run:
    """Start a container, wait for it to exit, return its code and log; remove it."""
    started.start()
    try:
        result = started.get_wrapped_container().wait(timeout=timeout)
        out, err = started.get_logs()
        return Run(int(result["StatusCode"]), (out + err).decode(errors="replace"))
    finally:
        started.stop()
