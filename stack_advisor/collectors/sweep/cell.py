"""What runs inside a cell's environment:
``python -m stack_advisor.collectors.sweep.cell REQUEST.json OUT.json``.

The request names the modules to import, the benchmarks, the device, the run ids (one
per repeat) and the provenance details to attach. It first imports the framework (an import that
fails is an ``import`` failure, reported with its traceback, and nothing is run), then fingerprints
this environment and runs ``stack_advisor.collectors.collect.collect`` once per repeat, and writes::

    {"status": "ok" | "import_failed" | "invalid", "error": ..., "documents": [...],
     "benchmark_seconds": s, "import_seconds": s}

Only the standard library, the collector's small requirements and the framework are importable
here (see ``collectors.sweep.env``); nothing of the sweeping process's environment leaks in.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any


def _import_all(modules: list[str]) -> tuple[str | None, str | None]:
    """(None, None) when each imports; else (error line naming the module, traceback tail)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except BaseException as exc:
            first = (str(exc) or type(exc).__name__).splitlines()[0][:500]
            return f"import {module}: {type(exc).__name__}: {first}", traceback.format_exc()[-4000:]
    return None, None


def run_request(request: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    error, tail = _import_all(request["imports"])
    import_seconds = time.monotonic() - started
    if error:
        return {
            "status": "import_failed",
            "error": error,
            "log_tail": tail,
            "documents": [],
            "import_seconds": import_seconds,
            "benchmark_seconds": 0.0,
        }

    from stack_advisor.collectors.collect import collect
    from stack_advisor.collectors.fingerprint import fingerprint_host
    from stack_advisor.schema.errors import InvalidInput

    fingerprint = fingerprint_host()
    documents: list[dict[str, Any]] = []
    bench_seconds = 0.0
    errors: list[str] = []
    for run_id in request["run_ids"]:
        for spec in request["benchmarks"]:
            t0 = time.monotonic()
            try:
                outcome = collect(
                    [spec["runner"]],
                    profile=spec["profile"],
                    device=request["device"],
                    run_id=run_id,
                    options=spec.get("options") or {},
                    fingerprint=fingerprint,
                )
            except (
                InvalidInput
            ) as exc:  # the matrix is wrong, not the cell: every cell would say so
                return {
                    "status": "invalid",
                    "error": f"benchmark {spec['runner']}: {exc}",
                    "documents": [],
                }
            bench_seconds += time.monotonic() - t0
            errors.extend(outcome.runner_errors)
            for doc in outcome.documents:
                doc.provenance.details.update(request.get("details") or {})
                documents.append(doc.model_dump(mode="json"))
    return {
        "status": "ok",
        "documents": documents,
        "runner_errors": errors,
        "import_seconds": import_seconds,
        "benchmark_seconds": bench_seconds,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write(
            "usage: python -m stack_advisor.collectors.sweep.cell REQUEST.json OUT.json\n"
        )
        return 2
    request = json.loads(Path(argv[0]).read_text())
    result = run_request(request)
    tmp = Path(argv[1]).with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
