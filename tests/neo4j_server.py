"""A real Neo4j 5.26 Community server for the tests, assembled from Maven Central.

``start_neo4j()`` uses testcontainers when a Docker engine answers, else launches the local
server built by ``deploy/neo4j-local/setup.sh`` (Bolt on a free loopback port, HTTP and auth off)
and stops it when the context ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[1]
SETUP = REPO / "deploy" / "neo4j-local" / "setup.sh"
START_TIMEOUT_S = 180


class Neo4jUnavailable(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _docker_engine_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _lib_dir() -> Path:
    if shutil.which("java") is None:
        raise Neo4jUnavailable("java is not installed (OpenJDK 17+ runs the local Neo4j server)")
    try:
        out = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True, check=True, timeout=1200)
    except subprocess.CalledProcessError as exc:
        raise Neo4jUnavailable(f"{SETUP} failed: {exc.stderr[-2000:]}") from None
    return Path(out.stdout.strip().splitlines()[-1])


def _config(home: Path, port: int) -> str:
    return "\n".join(
        [
            f"server.directories.data={home / 'data'}",
            f"server.directories.logs={home / 'logs'}",
            f"server.directories.run={home / 'run'}",
            f"server.directories.import={home / 'import'}",
            f"server.directories.plugins={home / 'plugins'}",
            f"server.directories.lib={home / 'lib'}",
            f"server.directories.transaction.logs.root={home / 'data' / 'transactions'}",
            "server.default_listen_address=127.0.0.1",
            f"server.bolt.listen_address=127.0.0.1:{port}",
            f"server.bolt.advertised_address=127.0.0.1:{port}",
            "server.bolt.enabled=true",
            "server.http.enabled=false",
            "server.https.enabled=false",
            "dbms.security.auth_enabled=false",
            "dbms.usage_report.enabled=false",
            "server.memory.pagecache.size=256m",
            "db.tx_log.rotation.retention_policy=1 files",
            "",
        ]
    )


def _wait_for_bolt(uri: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    import neo4j

    deadline = time.monotonic() + START_TIMEOUT_S
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Neo4jUnavailable(f"Neo4j exited with {proc.returncode}: {_tail(log)}")
        try:
            with neo4j.GraphDatabase.driver(uri) as driver:
                driver.verify_connectivity()
                driver.execute_query("RETURN 1", database_="neo4j")
            return
        except Exception as exc:  # noqa: BLE001 - keep polling until the deadline
            last = exc
            time.sleep(1.0)
    raise Neo4jUnavailable(f"Neo4j did not answer on {uri} in {START_TIMEOUT_S}s ({last}): {_tail(log)}")


def _tail(log: Path, n: int = 3000) -> str:
    try:
        return log.read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def start_local(lib: Path | None = None) -> Iterator[str]:
    lib = lib or _lib_dir()
    home = Path(tempfile.mkdtemp(prefix="neo4j-test-"))
    conf = home / "conf"
    for sub in ("conf", "data", "logs", "run", "import", "plugins", "lib"):
        (home / sub).mkdir()
    port = _free_port()
    (conf / "neo4j.conf").write_text(_config(home, port))
    log = home / "console.log"
    cmd = [
        "java",
        "-Xms256m",
        "-Xmx1g",
        "-XX:+UseG1GC",
        "-Dfile.encoding=UTF-8",
        "-cp",
        f"{lib}/*",
        "org.neo4j.server.CommunityEntryPoint",
        f"--home-dir={home}",
        f"--config-dir={conf}",
        "--console-mode",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    uri = f"bolt://127.0.0.1:{port}"
    try:
        _wait_for_bolt(uri, proc, log)
        yield uri
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def start_neo4j() -> Iterator[str]:
    if _docker_engine_answers():
        from testcontainers.neo4j import Neo4jContainer

        container = Neo4jContainer("neo4j:5.26-community").with_env("NEO4J_AUTH", "none")
        with container:
            host = container.get_container_host_ip()
            yield f"bolt://{host}:{container.get_exposed_port(7687)}"
        return
    with start_local() as uri:
        yield uri
