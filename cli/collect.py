"""`advisor collect`: fingerprint this node, run benchmarks, store or send the results."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.options import ApiOpt, JsonOpt, StoreOpt
from cli.render import info, print_json, render
from graph_schema.errors import InvalidInput

BENCHMARK_HELP = "Benchmark to run (repeatable): pi, cnn, tf-cnn, loadgen, allreduce. Default: pi."


def parse_options(pairs: list[str]) -> dict[str, str]:
    """``k=v`` strings → dict. Raises InvalidInput naming the malformed one."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"--option {pair!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


def _write_json(path: Path, payload: Any) -> None:
    """Write atomically: a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Bars:
    """One Rich progress bar per runner, on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("{task.fields[runner]:>9}"), BarColumn(), TextColumn("{task.description}"),
                                 TimeElapsedColumn(), console=Console(stderr=True), transient=False)
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> _Bars:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def for_runner(self, name: str) -> Callable[[str, float], None]:
        task = self.progress.add_task("starting", total=1.0, runner=name)

        def update(message: str, fraction: float) -> None:
            self.progress.update(task, completed=max(0.0, min(1.0, fraction)), description=message)

        return update


def _summary_rows(documents: list[Any]) -> list[dict[str, Any]]:
    rows = []
    for doc in documents:
        for m in doc.measurements:
            params = {k: v for k, v in m.benchmark.parameters.items() if k not in ("pi_version",)}
            rows.append({"benchmark": f"{m.benchmark.family}/{m.benchmark.name}", "parameters": params,
                         "value": m.value, "unit": m.unit, "p10": m.p10, "p90": m.p90, "cv": m.cv})
    return rows


def collect_command(
    benchmark: Annotated[list[str] | None, typer.Option("--benchmark", "-b", help=BENCHMARK_HELP)] = None,
    profile: Annotated[str, typer.Option(help="quick (about 30 s on a small CPU) or full.")] = "quick",
    device: Annotated[str, typer.Option(help="auto, cpu or cuda.")] = "auto",
    run_id: Annotated[str | None, typer.Option("--run-id", help="Reuse to make a re-run add nothing twice.")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help="Runner option k=v (repeatable).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the result documents (JSON) here.")] = None,
    no_store: Annotated[bool, typer.Option("--no-store", help="Do not write to a store.")] = False,
    store: StoreOpt = None,
    api: ApiOpt = None,
    token: Annotated[str | None, typer.Option("--token", envvar="ADVISOR_TOKEN", help="API token.")] = None,
    flush: Annotated[bool, typer.Option("--flush", help="Send spooled documents to --api (alone: only that).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fingerprint this node and run benchmarks; store the observations (or send them to --api)."""
    from collectors.collect import collect

    if flush and not api:
        raise InvalidInput("--flush needs --api URL (spooled documents are sent to the API)")
    flushed = None
    if api:
        from collectors import spool

        flushed = spool.flush(api, token)
        if flushed.sent or flushed.remaining or flushed.rejected:
            info(f"spool: sent {flushed.sent}, rejected {flushed.rejected}, still waiting {flushed.remaining}")
        if flush and not benchmark:
            _report({"flush": flushed.model_dump()}, [], as_json)
            return
    with _Bars() as bars:
        outcome = collect(benchmark or ["pi"], profile=profile, device=device, run_id=run_id,
                          options=parse_options(option or []), progress_for=bars.for_runner)
    docs = outcome.documents
    summary: dict[str, Any] = {
        "run_id": outcome.run_id, "documents": len(docs),
        "measurements": sum(len(d.measurements) for d in docs), "failures": sum(len(d.failures) for d in docs),
        "accelerator": outcome.fingerprint.accelerator.model, "placement": outcome.fingerprint.placement.kind.value,
        "placement_consistent": outcome.fingerprint.placement.consistent, "host": outcome.fingerprint.host.name,
        "runner_errors": outcome.runner_errors,
    }
    if out:
        _write_json(out, [d.model_dump(mode="json") for d in docs])
        summary["out"] = str(out)
    if api:
        from collectors import spool

        results = [spool.deliver(d, api, token) for d in docs]
        summary["delivery"] = [r.model_dump() for r in results]
        if flushed is not None:
            summary["flush"] = flushed.model_dump()
    elif not no_store:
        from graph_schema.registry import open_store

        with open_store(store) as kb:
            ingested = [kb.ingest_document(d) for d in docs]
        summary["stored"] = {
            "observations_new": sum(r.observations_new for r in ingested),
            "observations_received": sum(r.observations_received for r in ingested),
            "failures_new": sum(r.failures_new for r in ingested),
        }
    _report(summary, _summary_rows(docs), as_json)


def _report(summary: dict[str, Any], rows: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print_json(summary)
        return
    if rows:
        render(rows, as_json=False, title=f"run {summary.get('run_id')}")
    for key, value in summary.items():
        if key not in ("runner_errors",) and value not in (None, [], {}):
            info(f"{key}: {value}")
    for err in summary.get("runner_errors", []):
        info(f"[yellow]warning:[/] {err}")


def register(app: typer.Typer) -> None:
    app.command("collect", rich_help_panel="Collect")(collect_command)
