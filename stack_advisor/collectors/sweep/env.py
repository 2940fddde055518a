"""A cell's own Python environment, created with uv from the package registry, cached and pruned.

Layout under the sweep cache (``$ADVISOR_SWEEP_CACHE``, else
``$XDG_CACHE_HOME/stack-advisor/sweep``)::

    uv/              uv's download and build cache (shared by every cell: a re-run downloads
    nothing) envs/<key>/      one virtual environment per distinct (requirements, interpreter,
    indexes) envs/<key>.lock  what was installed (``uv pip freeze``), written last: an env without
    it is
                     half-made and is rebuilt
    envs/<key>/.stack-advisor-env  written when the env is made: ``prune`` and the rebuild of a
                     half-made env remove only folders that carry it or a ``.lock`` (never a
                     folder the sweep did not create, e.g. with ``--cache-dir ~/miniconda3``)
    results/         the sweep ledger (``stack_advisor.collectors.sweep.ledger``)

Why the collector runs from the project's source tree on ``PYTHONPATH`` and not installed in the
cell: installing the project would pull its service dependencies (FastAPI, Neo4j, SciPy,
Kubernetes...) into every cell and let them constrain the framework under test. The collector
needs only a few small libraries (``COLLECTOR_REQUIREMENTS``); they are resolved *together* with
the cell's framework, so a conflict is a recorded install failure and the lock lists them. The
source tree on ``PYTHONPATH`` holds only our packages, so it shadows nothing of the cell's.

uv is run as ``python -m uv`` from the Python running the sweep (a declared dependency), never
from the shell's PATH; it never downloads an interpreter (``UV_PYTHON_DOWNLOADS=never``) and never
builds from source (``--no-build``): a version without a wheel for this platform is an install
failure in seconds, not an hour of compiling.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from stack_advisor.collectors.sweep.matrix import FRAMEWORKS, Cell
from stack_advisor.schema.errors import InvalidInput

CACHE_ENV = "ADVISOR_SWEEP_CACHE"
UV_CACHE_ENV = "ADVISOR_SWEEP_UV_CACHE"
"""Where uv's download cache lives when not under the sweep cache (e.g. shared by test runs)."""
DEFAULT_MAX_GB = 20.0

COLLECTOR_REQUIREMENTS = ("pydantic>=2.6,<3", "pyyaml>=6", "psutil>=5.9", "nvidia-ml-py>=12")
"""What ``stack_advisor.collectors.sweep.cell`` imports besides the framework (fingerprint,
runners, models)."""

COLLECTOR_PACKAGES = ("stack_advisor",)
"""Our one top-level package (the cell imports its collectors, schema, catalogue and microbench
layers; never the advisor or the CLI, whose dependencies the cell need not have)."""


FRAMEWORK_MODULES = {name: module for name, (_dist, module, _backend) in FRAMEWORKS.items()}


def sweep_cache_dir() -> Path:
    """``$ADVISOR_SWEEP_CACHE``, else ``$XDG_CACHE_HOME/stack-advisor/sweep``."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "stack-advisor" / "sweep"


@dataclass
class CellEnv:
    """A created (or failed) cell environment."""

    key: str
    path: Path
    python: Path
    requirements: list[str]
    lock: str = ""
    seconds: float = 0.0
    cached: bool = False
    error: str | None = None  # uv's own words when resolution or installation failed
    installed: bool = False  # an environment of the node's, measured as it is (never pruned)
    framework_version: str | None = None  # as installed there (for an installed environment)

    @property
    def ok(self) -> bool:
        return self.error is None


def uv_command() -> list[str]:
    """uv from the Python running the sweep (the ``uv`` package is a dependency)."""
    return [sys.executable, "-m", "uv"]


def _interpreter(python: str | None) -> str:
    if python is None:
        return sys.executable
    return python


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


MARKER = ".stack-advisor-env"
UV_MARKER = ".stack-advisor-uv-cache"

# What a cell (and the interpreter of an ``environment:``) may see of the sweep's environment:
# locale, home and temp, the accelerators' and libraries' settings. Nothing else: no
# ADVISOR_TOKEN, NEO4J_PASSWORD, cloud keys or other secrets reach code that a cell installs.
CELL_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM", "SHELL",
        "TMPDIR", "TMP", "TEMP", "LD_LIBRARY_PATH", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR",
        "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
        # what the fingerprint reads of the pod it runs in (collectors.fingerprint.kube)
        "NODE_NAME", "POD_NAME", "POD_NAMESPACE", "ADVISOR_NODE_LABELS", "ADVISOR_LABELS_FILE",
        "ADVISOR_IMAGE",
    }
)  # fmt: skip
CELL_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "NCCL_", "ROCR_", "HIP_", "HSA_", "ROCM_", "PYTORCH_")
UV_PREFIXES: tuple[str, ...] = (
    "UV_",
    "PIP_",
    "SSL_CERT_",
    "REQUESTS_CA_BUNDLE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
)
UV_PREFIXES += ("NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy")
# Never passed on, whatever the allow-list says (a prefix above could match one).
SECRET_WORDS = ("TOKEN", "PASSWORD", "SECRET", "CREDENTIAL", "API_KEY", "ACCESS_KEY")


def allowed_environment(extra_prefixes: tuple[str, ...] = ()) -> dict[str, str]:
    """The sweep's environment reduced to the allow-list (and ``extra_prefixes``), without any
    variable whose name says it holds a secret, except uv's own index credentials
    (``UV_INDEX_*``) where ``extra_prefixes`` lets uv have them."""
    out: dict[str, str] = {}
    for name, value in os.environ.items():
        upper = name.upper()
        uv_own = "UV_" in extra_prefixes and upper.startswith("UV_INDEX_")
        if any(word in upper for word in SECRET_WORDS) and not uv_own:
            continue
        if name in CELL_NAMES or name.startswith(CELL_PREFIXES + extra_prefixes):
            out[name] = value
    return out


class EnvCache:
    """Creates cell environments under ``root`` and keeps their total size under ``max_bytes``."""

    def __init__(
        self, root: Path | None = None, max_gb: float = DEFAULT_MAX_GB, timeout_s: float = 1800.0
    ) -> None:
        if max_gb <= 0:
            raise InvalidInput(f"--max-cache-gb must be positive, got {max_gb}")
        self.root = (root or sweep_cache_dir()).expanduser()
        self.max_bytes = int(max_gb * 1024**3)
        self.timeout_s = timeout_s

    @property
    def uv_cache(self) -> Path:
        configured = os.environ.get(UV_CACHE_ENV)
        return Path(configured).expanduser() if configured else self.root / "uv"

    @property
    def envs(self) -> Path:
        return self.root / "envs"

    def _env(self) -> dict[str, str]:
        """uv's environment: the allow-list, its own settings (``UV_*``, ``PIP_*``: index and
        credentials it needs) and proxies; never our tokens or the store's password."""
        env = allowed_environment(UV_PREFIXES)
        env.update(UV_CACHE_DIR=str(self.uv_cache), UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
        return env

    def own_uv_cache(self) -> None:
        """Make the sweep's uv cache folder, marked as the sweep's, when it does not exist yet
        (or is empty): only a marked folder is ever pruned."""
        if os.environ.get(UV_CACHE_ENV):
            return
        folder = self.uv_cache
        if not folder.exists() or (folder.is_dir() and not any(folder.iterdir())):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / UV_MARKER).write_text("made by advisor sweep; pruned by it\n")

    def _uv(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*uv_command(), *args],
            capture_output=True,
            text=True,
            env=self._env(),
            timeout=self.timeout_s,
            check=False,
        )

    def key(self, cell: Cell, python: str | None) -> str:
        interp = _interpreter(python)
        text = json.dumps(
            [
                cell.requirements(),
                sorted(COLLECTOR_REQUIREMENTS),
                interp,
                cell.index_url,
                cell.extra_index_url,
            ],
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def create(self, cell: Cell, python: str | None = None) -> CellEnv:
        """The cell's environment: reused when a complete one exists, else created. Never raises
        for what uv refuses (no such version, conflicts, no wheel): that is ``CellEnv.error``.
        A cell naming an ``environment`` gets that one, checked and as it is."""
        if cell.environment is not None:
            return installed_env(cell)
        key = self.key(cell, python)
        path = self.envs / key
        lock_file = self.envs / f"{key}.lock"
        env = CellEnv(
            key=key,
            path=path,
            python=path / "bin" / "python",
            requirements=cell.requirements() + list(COLLECTOR_REQUIREMENTS),
        )
        started = time.monotonic()
        if lock_file.is_file() and env.python.exists():
            env.lock, env.cached = lock_file.read_text(), True
            os.utime(lock_file)  # most recently used: pruned last
            env.seconds = time.monotonic() - started
            return env
        self.envs.mkdir(parents=True, exist_ok=True)
        if path.exists() and not self.ours(key):
            env.error = (
                f"{path} exists and was not made by advisor sweep (no {MARKER} in it); "
                "left as it is: move it away or choose another --cache-dir"
            )
            return env
        shutil.rmtree(path, ignore_errors=True)  # a half-made one from an interrupted run
        self.own_uv_cache()
        made = self._uv("venv", "--quiet", "--python", _interpreter(python), str(path))
        if made.returncode == 0:
            (path / MARKER).write_text("made by advisor sweep; pruned by it when unused\n")
        if made.returncode != 0:
            env.error = f"uv venv: {_tail(made.stderr or made.stdout)}"
        else:
            args = ["pip", "install", "--python", str(env.python), "--no-build"]
            if cell.index_url:
                args += ["--index-url", cell.index_url]
            for url in cell.extra_index_url:
                args += ["--extra-index-url", url]
            installed = self._uv(*args, *env.requirements)
            if installed.returncode != 0:
                env.error = _tail(installed.stderr or installed.stdout)
            else:
                frozen = self._uv("pip", "freeze", "--python", str(env.python))
                env.lock = frozen.stdout
                tmp = lock_file.with_suffix(".lock.tmp")
                tmp.write_text(env.lock)
                os.replace(tmp, lock_file)
        if env.error and self.ours(key):
            shutil.rmtree(path, ignore_errors=True)  # failures keep no disk
        env.seconds = time.monotonic() - started
        return env

    def ours(self, key: str) -> bool:
        """Whether ``envs/<key>`` was made by the sweep: its marker inside, or its lock beside."""
        folder = self.envs / key
        return (folder / MARKER).is_file() or (self.envs / f"{key}.lock").is_file()

    def sizes(self) -> dict[str, int]:
        """Bytes per environment key the sweep made (hard links from the uv cache counted in
        full); other folders are neither counted nor ever removed."""
        out: dict[str, int] = {}
        if not self.envs.is_dir():
            return out
        for entry in self.envs.iterdir():
            if entry.is_dir() and not entry.is_symlink() and self.ours(entry.name):
                out[entry.name] = _tree_bytes(entry)
        return out

    def prune(self, keep: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
        """Remove least recently used environments until the cache fits ``max_bytes`` (the uv cache
        counted too); ``keep`` keys are never removed. Returns the removed keys."""
        sizes = self.sizes()
        total = sum(sizes.values()) + (_tree_bytes(self.uv_cache) if self.uv_cache.is_dir() else 0)
        removed: list[str] = []

        def used(key: str) -> float:
            lock = self.envs / f"{key}.lock"
            return lock.stat().st_mtime if lock.exists() else 0.0

        for key in sorted(sizes, key=used):
            if total <= self.max_bytes:
                break
            if key in keep:
                continue
            (self.envs / f"{key}.lock").unlink(missing_ok=True)
            shutil.rmtree(self.envs / key, ignore_errors=True)
            total -= sizes[key]
            removed.append(key)
        if total > self.max_bytes and (self.uv_cache / UV_MARKER).is_file():
            self._uv("cache", "prune")  # only a uv cache the sweep made (see own_uv_cache)
        return removed


_PROBE = """
import importlib, importlib.metadata as md, json, sys
module, wanted = sys.argv[1], sys.argv[2:]
dists = md.packages_distributions().get(module, [])
lock = sorted(
    {f"{d.metadata['Name']}=={d.version}" for d in md.distributions() if d.metadata['Name']}
)
missing = []
for name in wanted:
    try:
        importlib.import_module(name)
    except Exception as exc:
        missing.append(f"{name} ({type(exc).__name__})")
print(json.dumps({"prefix": sys.prefix, "lock": lock, "missing": missing,
                  "version": md.version(dists[0]) if dists else None}))
"""

COLLECTOR_MODULES = ("pydantic", "yaml", "psutil")
"""What the collector inside a cell imports besides the framework (``COLLECTOR_REQUIREMENTS``;
``pynvml`` is optional: without it the fingerprint reads ``nvidia-smi``)."""


def _interpreter_of(environment: str) -> Path:
    path = Path(environment).expanduser()
    if path.is_dir():
        for name in ("bin/python", "bin/python3", "python.exe"):
            if (path / name).is_file():
                return path / name
    return path


def _same_version(wanted: str, installed: str) -> bool:
    """``2.11`` or ``2.11.0`` matches an installed ``2.11.0+cu130`` (a build label is not asked)."""
    have = installed.split("+", 1)[0].split(".")
    want = wanted.split("+", 1)[0].split(".")
    return have[: len(want)] == want and ("+" not in wanted or wanted == installed)


def installed_env(cell: Cell, timeout_s: float = 120.0) -> CellEnv:
    """A cell's ``environment`` as it is: its interpreter runs, the collector's libraries import
    there, the framework is installed (at the cell's ``version``, when it names one); the lock is
    every distribution installed there. Nothing is installed and nothing is ever pruned."""
    environment = cell.environment or ""
    python = _interpreter_of(environment)
    started = time.monotonic()
    env = CellEnv(
        key="installed-" + hashlib.sha256(str(python).encode()).hexdigest()[:16],
        path=python.parent.parent,
        python=python,
        requirements=[],
        cached=True,
        installed=True,
    )
    module = FRAMEWORK_MODULES[cell.framework]
    if not python.is_file():
        env.error = f"environment {environment!r}: no Python interpreter at {python}"
        return env
    try:
        proc = subprocess.run(
            [str(python), "-I", "-c", _PROBE, module, *COLLECTOR_MODULES],
            capture_output=True,
            env=allowed_environment(),
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        env.error = f"environment {environment!r}: cannot run {python}: {exc}"
        env.seconds = time.monotonic() - started
        return env
    env.seconds = time.monotonic() - started
    if proc.returncode != 0:
        env.error = (
            f"environment {environment!r}: {python} failed: {_tail(proc.stderr or proc.stdout, 5)}"
        )
        return env
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    env.path, env.lock = Path(probe["prefix"]), "\n".join(probe["lock"]) + "\n"
    env.framework_version = probe["version"]
    if probe["version"] is None:
        env.error = (
            f"environment {environment!r} has no {cell.framework} installed (no {module!r} module)"
        )
    elif cell.version and not _same_version(cell.version, probe["version"]):
        env.error = (
            f"environment {environment!r} has {cell.framework} {probe['version']}, "
            f"the cell asks for {cell.version}"
        )
    elif probe["missing"]:
        env.error = (
            f"environment {environment!r} lacks what the collector imports: "
            f"{', '.join(probe['missing'])}; install {' '.join(COLLECTOR_REQUIREMENTS[:3])} there"
        )
    return env


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
    return total


def collector_source(cache: EnvCache) -> Path:
    """A folder holding only links to our collector packages, wherever they are installed (a
    source checkout, or a site-packages that also holds the sweeping process's numpy, torch ...,
    which must not shadow the cell's)."""
    import importlib

    folder = cache.root / "collector-src"
    folder.mkdir(parents=True, exist_ok=True)
    for name in COLLECTOR_PACKAGES:
        module = importlib.import_module(name)
        target = Path(module.__file__ or "").resolve().parent
        link = folder / name
        if link.is_symlink() and link.resolve() == target:
            continue
        tmp = folder / f".{name}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target, target_is_directory=True)
        os.replace(tmp, link)
    return folder


def cell_process_env(env: CellEnv, cache: EnvCache) -> dict[str, str]:
    """Environment of the collector process inside the cell: our packages (only) on PYTHONPATH,
    nothing of the sweeping interpreter's site-packages."""
    out = allowed_environment()
    out["PYTHONPATH"] = str(collector_source(cache))
    if not env.installed or (env.path / "pyvenv.cfg").is_file():
        out["VIRTUAL_ENV"] = str(env.path)
    out["PATH"] = os.pathsep.join([str(env.path / "bin"), os.environ.get("PATH", "")])
    out["PYTHONNOUSERSITE"] = "1"
    return out
