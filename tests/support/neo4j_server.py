"""A real Neo4j 5.26 Community server for the tests.

``neo4j_server()`` follows the suite's policy: ``NEO4J_URI`` when set; else testcontainers'
``neo4j:5.26-community`` when a Docker *engine* answers (``docker info`` succeeds; the CLI alone
is not enough) and already holds that image (nothing is pulled: an engine with no registry, like
the one deploy/docker/engine.sh starts, must not send the suite to a pull that fails); else a local
server assembled from Maven Central by ``deploy/neo4j-local/setup.sh`` and launched from that bare
classpath (Bolt on a free loopback port, HTTP and auth off, small memory), stopped with SIGTERM
(then SIGKILL) when the context ends. Anything that prevents a server raises
:class:`Neo4jUnavailable` with the reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

# NEO4J_JVM_FLAGS: what Neo4j's own launcher adds from the default neo4j.conf
# (server.jvm.additional); one copy, beside the bulk import that runs neo4j-admin from the same
# classpath.
from stack_advisor.store.bulk_import import NEO4J_JVM_FLAGS

REPO = Path(__file__).resolve().parents[2]
SETUP = REPO / "deploy" / "neo4j-local" / "setup.sh"
POM = REPO / "deploy" / "neo4j-local" / "pom.xml"
IMAGE = "neo4j:5.26-community"
START_TIMEOUT_S = float(os.environ.get("NEO4J_START_TIMEOUT_S", "240"))
SETUP_TIMEOUT_S = 1800
STOP_TIMEOUT_S = 60
# Memory of the local server: small by default (tests on a 2-core, shared machine); benches may
# give it more.
HEAP = os.environ.get("NEO4J_LOCAL_HEAP", "1g")
PAGECACHE = os.environ.get("NEO4J_LOCAL_PAGECACHE", "256m")


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM when the test process dies, even when it is killed, so a
    timed-out or interrupted run leaves no Neo4j behind."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Neo4jUnavailable(RuntimeError):
    """No Neo4j server can be had here; the message says why."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def docker_engine_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=15).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def image_present(image: str) -> bool:
    try:
        return (
            subprocess.run(
                ["docker", "image", "inspect", image], check=False, capture_output=True, timeout=15
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def pinned_version() -> str:
    match = re.search(r"<neo4j\.version>([^<]+)</neo4j\.version>", POM.read_text())
    if match is None:
        raise Neo4jUnavailable(f"{POM} has no <neo4j.version> property")
    return match.group(1)


def lib_dir() -> Path:
    """The cached classpath directory (assembled by setup.sh on first use)."""
    home = os.environ.get("NEO4J_LOCAL_HOME")
    base = (
        Path(home)
        if home
        else Path.home() / ".cache" / "stack-advisor" / f"neo4j-{pinned_version()}"
    )
    return base / "lib"


def ensure_lib() -> Path:
    """Run setup.sh unless the lib dir is already complete; return the lib dir."""
    if shutil.which("java") is None:
        raise Neo4jUnavailable("java is not installed (OpenJDK 17+ runs the local Neo4j server)")
    lib = lib_dir()
    if (lib / ".complete").is_file():
        return lib
    try:
        out = subprocess.run(
            ["bash", str(SETUP)],
            capture_output=True,
            text=True,
            check=True,
            timeout=SETUP_TIMEOUT_S,
        )
    except subprocess.CalledProcessError as exc:
        raise Neo4jUnavailable(f"{SETUP} failed ({exc.returncode}): {exc.stderr[-2000:]}") from None
    except subprocess.TimeoutExpired:
        raise Neo4jUnavailable(f"{SETUP} did not finish in {SETUP_TIMEOUT_S}s") from None
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
            f"server.directories.licenses={home / 'licenses'}",
            f"server.directories.transaction.logs.root={home / 'data' / 'transactions'}",
            "server.default_listen_address=127.0.0.1",
            "server.bolt.enabled=true",
            f"server.bolt.listen_address=127.0.0.1:{port}",
            f"server.bolt.advertised_address=127.0.0.1:{port}",
            "server.http.enabled=false",
            "server.https.enabled=false",
            "dbms.security.auth_enabled=false",
            "dbms.usage_report.enabled=false",
            f"server.memory.heap.initial_size={HEAP}",
            f"server.memory.heap.max_size={HEAP}",
            f"server.memory.pagecache.size={PAGECACHE}",
            "db.tx_log.rotation.retention_policy=1 files",
            "",
        ]
    )


def _tail(log: Path, n: int = 3000) -> str:
    try:
        return log.read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


def _wait_for_bolt(uri: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    import neo4j

    deadline = time.monotonic() + START_TIMEOUT_S
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Neo4jUnavailable(f"Neo4j exited with {proc.returncode}; log tail:\n{_tail(log)}")
        try:
            with neo4j.GraphDatabase.driver(uri, connection_timeout=5) as driver:
                driver.verify_connectivity()
                driver.execute_query("RETURN 1", database_="neo4j")
            return
        except Exception as exc:
            last = exc
            time.sleep(1.0)
    raise Neo4jUnavailable(
        f"Neo4j did not answer on {uri} within {START_TIMEOUT_S:.0f}s (last error: {last}); "
        f"log tail:\n{_tail(log)}"
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class LocalNeo4j:
    """A local server in its own home on a fixed loopback port that can be stopped, killed
    (``kill -9``) and started again on the same data: what the fault tests need."""

    def __init__(
        self, lib: Path | None = None, *, extra_config: str = "", scheme: str = "bolt"
    ) -> None:
        """``extra_config``: more neo4j.conf lines (e.g. bolt TLS, ``home`` is in ``self.home``
        for paths); ``scheme``: the URI's (``bolt+ssc`` for a server that requires TLS)."""
        self.lib = lib or ensure_lib()
        self.home = Path(tempfile.mkdtemp(prefix="neo4j-test-"))
        for sub in ("conf", "data", "logs", "run", "import", "plugins", "lib", "licenses"):
            (self.home / sub).mkdir()
        self.port = _free_port()
        (self.home / "conf" / "neo4j.conf").write_text(
            _config(self.home, self.port) + extra_config.replace("{home}", str(self.home))
        )
        self.log = self.home / "console.log"
        self.uri = f"{scheme}://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        # server.jvm.additional is not read when launching the entry point directly: JVM flags go
        # here.
        cmd = [
            "java",
            f"-Xms{HEAP}",
            f"-Xmx{HEAP}",
            "-XX:+UseG1GC",
            "-XX:+ExitOnOutOfMemoryError",
            *NEO4J_JVM_FLAGS,
            "-Dfile.encoding=UTF-8",
            "-Djava.awt.headless=true",
            "-cp",
            f"{self.lib}/*",
            "org.neo4j.server.CommunityEntryPoint",
            f"--home-dir={self.home}",
            f"--config-dir={self.home / 'conf'}",
            "--console-mode",
        ]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        try:
            _wait_for_bolt(self.uri, self.proc, self.log)
        except BaseException:
            self.stop()
            raise
        return self.uri

    def kill(self) -> None:
        """SIGKILL, as an OOM killer or a node failure would."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)


@contextlib.contextmanager
def start_local(lib: Path | None = None) -> Iterator[str]:
    """Launch Neo4j from the Maven-assembled classpath in a throwaway home; yield its bolt URI."""
    server = LocalNeo4j(lib)
    try:
        yield server.start()
    finally:
        server.remove()


@contextlib.contextmanager
def start_container() -> Iterator[str]:
    try:
        from testcontainers.community.neo4j import Neo4jContainer
    except ImportError:
        from testcontainers.neo4j import Neo4jContainer  # testcontainers < 4.10

    # The container class always sets NEO4J_AUTH (its own readiness check logs in), so switch
    # authentication off through the config-override variable instead; credentials are ignored then.
    container = Neo4jContainer(IMAGE).with_env("NEO4J_dbms_security_auth__enabled", "false")
    with container:
        yield container.get_connection_url()


@contextlib.contextmanager
def neo4j_server() -> Iterator[str]:
    """Yield a bolt URI per the policy in the module docstring."""
    uri = os.environ.get("NEO4J_URI")
    if uri:
        yield uri
        return
    if docker_engine_answers() and image_present(IMAGE):
        with start_container() as uri:
            yield uri
        return
    with start_local() as uri:
        yield uri


start_neo4j = neo4j_server  # name used by earlier callers
