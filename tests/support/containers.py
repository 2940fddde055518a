"""Helpers of the container tier (tests/containers): the images' names, docker on our engine, the
API image started on a store, a collector run, and the skip-or-fail rule of the tier (under
CI=true it must run). The session fixtures that build and start these live in
tests/containers/conftest.py."""

from __future__ import annotations

import os
import secrets
import subprocess
import time
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


@dataclass(frozen=True)
class Images:
    api: str
    collector: str
    build_log: str  # build.sh's stderr: per-step times and sizes


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
