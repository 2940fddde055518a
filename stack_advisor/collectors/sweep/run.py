"""``advisor sweep``'s engine: for each cell, make its environment, run the collector inside it,
record what it measured (or why it could not), and hand the documents to the same sink
``advisor collect`` uses (a store, or the API with spooling).

Resumable: each finished cell leaves a ledger entry (``results/<host>/<matrix>/<store>/<cell>.json``
under the sweep cache, per store) holding its status, run ids, lock, timings and stack; a re-run
skips a cell whose entry matches the matrix's benchmarks and device (and, for measured cells, whose
run is in the store) unless ``force``. With ``force`` the cell runs again under new run ids, so its
repeats add up instead of replacing each other.

Repeats interleave across cells (repeat 1 of every cell, then repeat 2, ...; over the cells whose
environments fit the cache bound together), each repeat one collector process in the cell's
environment: a change of machine load during the sweep reaches every cell alike instead of
looking like one cell's speed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stack_advisor.collectors.sinks import Sink
from stack_advisor.collectors.sweep.env import CellEnv, EnvCache, cell_process_env
from stack_advisor.collectors.sweep.failure_docs import failure_document, sweep_details
from stack_advisor.collectors.sweep.matrix import Cell, SweepMatrix
from stack_advisor.collectors.sweep.outcome import (
    CellOutcome,
    cuda_incompatibility,
    ledger_path,
    read_ledger,
    write_ledger,
)
from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import (
    FailureIn,
    ResultDocument,
    utcnow,
)

Progress = Callable[[str, str], None]
"""progress(cell id, message)."""


@dataclass
class _Pending:
    """A cell whose environment is ready, between its repeats."""

    cell: Cell
    tag: str
    out: CellOutcome
    env: CellEnv
    stopped: bool = False  # crashed or failed to import: no further repeats


class Sweep:
    """Runs a matrix on this node."""

    def __init__(
        self,
        matrix: SweepMatrix,
        cache: EnvCache,
        sink: Sink,
        *,
        force: bool = False,
        progress: Progress | None = None,
        cell_timeout_s: float = 3600.0,
        host: str | None = None,
    ) -> None:
        self.matrix, self.cache, self.sink, self.force = matrix, cache, sink, force
        self.progress = progress or (lambda cell, message: None)
        self.cell_timeout_s = cell_timeout_s
        self._host = host
        self._fingerprint: Any = None

    @property
    def fingerprint(self) -> Any:
        """The node as seen from the sweeping process (frameworks not imported): for the failure
        documents of cells that never got as far as fingerprinting themselves."""
        if self._fingerprint is None:
            from stack_advisor.collectors.fingerprint import fingerprint_host

            self._fingerprint = fingerprint_host(libraries=False, hostname=self._host)
        return self._fingerprint

    @property
    def host(self) -> str:
        # the fingerprint's rule: the Kubernetes node name, else the host name
        return self._host or os.environ.get("NODE_NAME") or socket.gethostname()

    def run(self, cells: list[str] | None = None) -> list[CellOutcome]:
        """Run the chosen cells (default: all); outcomes in matrix order. Repeats interleave:
        each repeat runs every cell once before the next repeat starts (over the cells whose
        environments fit the cache bound together), so load that changes during a sweep reaches
        every cell alike instead of one cell's repeats.

        Raises:
            InvalidInput: an unknown cell; another sweep holds the cache; a benchmark option
                that no cell can run.
        """
        chosen = [self.matrix.cell(c) for c in cells] if cells else self.matrix.cells
        host = self._host = self.host
        outcomes: dict[str, CellOutcome] = {}
        batch: list[_Pending] = []
        with _exclusive(self.cache.root):
            for index, cell in enumerate(chosen, 1):
                prepared = self._prepare(cell, host, f"[{index}/{len(chosen)}] {cell.id}")
                if isinstance(prepared, CellOutcome):
                    outcomes[cell.id] = prepared
                    continue
                batch.append(prepared)
                if sum(p.out.env_bytes for p in batch) >= self.cache.max_bytes:
                    outcomes.update((p.cell.id, p.out) for p in self._run_batch(batch, host))
                    batch = []
            outcomes.update((p.cell.id, p.out) for p in self._run_batch(batch, host))
        return [outcomes[cell.id] for cell in chosen]

    def _run_ids(self, cell: Cell, host: str) -> list[str]:
        base = f"sweep-{self.matrix.name}-{cell.id}-{self.matrix.signature()}-{host}"
        if self.force:
            base += "-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        return [f"{base}-r{i + 1}" for i in range(self.matrix.repeats)]

    def _already_done(self, cell: Cell, host: str) -> CellOutcome | None:
        entry = read_ledger(
            ledger_path(self.cache, host, self.matrix.name, cell.id, self.sink.identity)
        )
        if self.force or not entry or entry.get("signature") != self.matrix.signature():
            return None
        if entry.get("requested") != cell.wish():
            return None
        if entry.get("status") == "measured" and not self.sink.has_run(entry["run_ids"][0], host):
            return None  # the store lost it (or it is another store): measure again
        return CellOutcome(
            cell=cell.id,
            status="skipped",
            reason=f"already {entry.get('status')} on {host} "
            f"at {entry.get('finished_at')} (--force re-runs it)",
            run_ids=entry.get("run_ids", []),
            stack_id=entry.get("stack_id"),
            requested=entry.get("requested", {}),
        )

    def _prepare(self, cell: Cell, host: str, tag: str) -> CellOutcome | _Pending:
        """The cell's environment made, ready to measure; or its finished outcome (skipped as
        done before, or failed to install)."""
        done = self._already_done(cell, host)
        if done:
            self.progress(tag, f"skipped: {done.reason}")
            return done
        out = CellOutcome(
            cell=cell.id,
            status="measured",
            run_ids=self._run_ids(cell, host),
            requested=cell.wish(),
            signature=self.matrix.signature(),
        )
        self.progress(tag, f"environment: {cell.environment or ' '.join(cell.requirements())}")
        env = self.cache.create(cell, self.matrix.python)
        out.env_key, out.env_cached, out.env_seconds, out.lock = (
            env.key,
            env.cached,
            env.seconds,
            env.lock,
        )
        pending = _Pending(cell, tag, out, env)
        if not env.ok:
            what = (
                f"cannot use {cell.environment}"
                if env.installed
                else f"cannot install {' '.join(cell.requirements())}"
            )
            self._fail(
                out,
                cell,
                "install",
                "InstallError",
                f"{what}: {_gist(env.error or '')}",
                env.error or "",
                installed_version=env.framework_version,
            )
            self._finish(pending, host, keep={env.key})
            return out
        out.env_bytes = self.cache.sizes().get(env.key, 0)
        state = "checked (installed)" if env.installed else "cached" if env.cached else "created"
        self.progress(
            tag,
            f"environment {state} in {env.seconds:.1f} s; "
            f"will run {', '.join(b.runner for b in self.matrix.benchmarks)}",
        )
        return pending

    def _run_batch(self, batch: list[_Pending], host: str) -> list[_Pending]:
        """Each repeat over every cell of ``batch`` in turn, then each cell finished."""
        repeats = self.matrix.repeats
        for repeat in range(repeats):
            for p in batch:
                if not p.stopped:
                    if repeats > 1:
                        self.progress(p.tag, f"repeat {repeat + 1}/{repeats}")
                    p.stopped = not self._measure(p.out, p.cell, p.env, repeat)
        keep = {p.env.key for p in batch}
        for p in batch:
            if p.out.measurements == 0 and p.out.status == "measured":
                p.out.status, p.out.stage = "failed", "run"
                p.out.reason = "; ".join(p.out.runner_errors) or "nothing was measured"
            self._finish(p, host, keep)
        return batch

    def _finish(self, p: _Pending, host: str, keep: set[str]) -> None:
        out = p.out
        # its own time (its repeats interleave with other cells' in the sweep's wall time)
        out.cell_seconds = out.env_seconds + out.process_seconds + out.deliver_seconds
        out.finished_at = utcnow().isoformat()
        write_ledger(
            ledger_path(self.cache, host, self.matrix.name, p.cell.id, self.sink.identity), out
        )
        removed = self.cache.prune(keep=keep)
        if removed:
            self.progress(
                p.tag, f"pruned {len(removed)} cached environment(s) to stay under the disk bound"
            )
        self.progress(
            p.tag,
            f"{out.status}: {out.measurements} measurement(s), {out.failures} failure(s)"
            + (f" [{out.stage}] {out.reason}" if out.status == "failed" else "")
            + f" in {out.cell_seconds:.1f} s",
        )

    def _measure(self, out: CellOutcome, cell: Cell, env: CellEnv, repeat: int) -> bool:
        """One repeat of the cell in its environment, its documents delivered; False when the cell
        cannot go on (the collector crashed or the framework did not import)."""
        run_id = out.run_ids[repeat]
        runnable = [b for b in self.matrix.benchmarks if not b.unsupported_by(cell.framework)]
        if repeat == 0:
            self._unsupported(out, cell, env)
        if not runnable:
            return False
        request = {
            "imports": cell.import_names,
            "device": self.matrix.device,
            "run_ids": [run_id],
            "details": sweep_details(self.matrix, out, env.key),
            "benchmarks": [
                {
                    "runner": b.runner,
                    "profile": b.profile,
                    "options": b.cell_options(cell.framework),
                }
                for b in runnable
            ],
        }
        result, log_tail = self._run_cell(out, env, request)
        if result is None:
            first = next(
                (ln for ln in reversed(log_tail.strip().splitlines()) if ln.strip()),
                "no output",
            )
            why = f"the collector inside the cell failed: {first}"
            self._fail(out, cell, "run", "CollectorCrashed", why, log_tail, run_id)
            return False
        out.import_seconds += result.get("import_seconds", 0.0)
        out.benchmark_seconds += result.get("benchmark_seconds", 0.0)
        if result["status"] == "invalid":
            raise InvalidInput(f"sweep matrix {self.matrix.name}: {result['error']}")
        if result["status"] == "import_failed":
            log = result.get("log_tail") or ""
            self._fail(out, cell, "import", "ImportError", result["error"], log, run_id)
            return False
        self._deliver(out, cell, result)
        return True

    def _run_cell(
        self, out: CellOutcome, env: CellEnv, request: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, str]:
        """(the collector process's result, or None when it crashed; its log's tail)."""
        with _scratch() as scratch:
            req, result_file = scratch / "request.json", scratch / "result.json"
            req.write_text(json.dumps(request))
            t0 = time.monotonic()
            command = [str(env.python), "-m", "stack_advisor.collectors.sweep.cell"]
            try:
                proc = subprocess.run(
                    [*command, str(req), str(result_file)],
                    env=cell_process_env(env, self.cache),
                    capture_output=True,
                    text=True,
                    timeout=self.cell_timeout_s,
                    cwd=scratch,
                    check=False,
                )
                crashed = proc.returncode != 0 or not result_file.is_file()
                log_tail = (proc.stderr or proc.stdout)[-4000:]
            except subprocess.TimeoutExpired as exc:
                crashed, log_tail = True, f"killed after {self.cell_timeout_s:.0f} s: {exc}"
            out.process_seconds += time.monotonic() - t0
            if crashed:
                return None, log_tail
            result: dict[str, Any] = json.loads(result_file.read_text())
        return result, log_tail

    def _deliver(self, out: CellOutcome, cell: Cell, result: dict[str, Any]) -> None:
        """One repeat's documents checked for CUDA compatibility and handed to the sink."""
        t0 = time.monotonic()
        documents = [ResultDocument.model_validate(d) for d in result["documents"]]
        for doc in documents:
            on_cuda = any(
                m.benchmark.parameters.get("device") in ("cuda", "gpu") for m in doc.measurements
            )
            reason = cuda_incompatibility(
                doc.stack, on_cuda, has_gpu=doc.accelerator.vendor == "NVIDIA"
            )
            if reason:
                doc.failures.append(
                    FailureIn(stage="compatibility", error_class="CudaDriverTooOld", message=reason)
                )
                out.status, out.stage, out.reason = "failed", "compatibility", reason
        framework_docs = [d for d in documents if d.stack.framework == cell.framework] or documents
        if framework_docs and not out.stack:
            out.stack = framework_docs[0].stack.model_dump(exclude_none=True)
            out.stack_id = framework_docs[0].stack.stack_id
        for doc in documents:
            out.observations_new += self.sink.deliver(doc)
        out.deliver_seconds += time.monotonic() - t0
        out.measurements += sum(len(d.measurements) for d in documents)
        out.failures += sum(len(d.failures) for d in documents)
        out.runner_errors.extend(
            e for e in result.get("runner_errors") or [] if e not in out.runner_errors
        )

    def _unsupported(self, out: CellOutcome, cell: Cell, env: CellEnv) -> None:
        """The matrix's benchmarks this cell's framework cannot run, recorded once as
        ``unsupported`` (not a failure of the stack: a benchmark that cannot run says so)."""
        skipped = [
            (b, why) for b in self.matrix.benchmarks if (why := b.unsupported_by(cell.framework))
        ]
        if not skipped:
            return
        for b, why in skipped:
            self.progress(f"{cell.id}", f"{b.runner}: unsupported ({why})")
        doc = failure_document(
            self.matrix,
            self.fingerprint,
            out,
            cell,
            [b for b, _ in skipped],
            ("unsupported", "Unsupported", [why for _, why in skipped], ""),
            None,
            env.framework_version,
        )
        self.sink.deliver(doc)
        out.failures += len(doc.failures)

    def _fail(
        self,
        out: CellOutcome,
        cell: Cell,
        stage: str,
        error_class: str,
        message: str,
        log_tail: str,
        run_id: str | None = None,
        installed_version: str | None = None,
    ) -> None:
        """Record a cell that never ran: a document on the node as the sweeper sees it, with the
        stack the matrix asked for (marked as requested: nothing of it was measured)."""
        doc = failure_document(
            self.matrix,
            self.fingerprint,
            out,
            cell,
            self.matrix.benchmarks,
            (stage, error_class, message, log_tail),
            run_id,
            installed_version,
        )
        self.sink.deliver(doc)
        out.status, out.stage, out.reason = "failed", stage, message
        out.stack, out.stack_id, out.failures = (
            doc.stack.model_dump(exclude_none=True),
            doc.stack.stack_id,
            len(doc.failures),
        )


def _gist(tool_output: str) -> str:
    """uv's explanation in one line (its last lines say why), without the box-drawing marks."""
    lines = [ln.strip(" ×╰─▶│├┬┴╭╮╯") for ln in tool_output.strip().splitlines()]
    lines = [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("hint:")]
    return " ".join(lines[-3:])[:600] or "no output"


@contextmanager
def _exclusive(root: Path) -> Iterator[None]:
    """One sweep per cache at a time: a second would rebuild environments the first is using."""
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".sweep.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InvalidInput(
                f"another sweep is using the cache {root}; wait for it or pass another --cache-dir"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def _scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="advisor-sweep-") as tmp:
        yield Path(tmp)
