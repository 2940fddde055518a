"""`advisor collect`: fingerprint this node, run benchmarks, store or send the results."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from stack_advisor.cli.options import ApiOpt, FormatOpt, JsonOpt, StoreOpt
from stack_advisor.cli.render import OutputFormat, note, output_format, print_json, render, warning
from stack_advisor.schema.errors import InvalidInput

if TYPE_CHECKING:
    from stack_advisor.collectors.sinks import Sink

# Exit statuses of `advisor collect --api` (docs/deploy.md): 0 delivered, 1 refused or failed,
# EXIT_SPOOLED (sysexits' EX_TEMPFAIL) when the documents wait in the spool for the next run.
EXIT_SPOOLED = 75
REFUSED_STATUS = frozenset({401, 403})

BENCHMARK_HELP = (
    "Benchmark to run (repeatable): pi, cnn, tf-cnn, loadgen, allreduce, numa. Default: pi."
)


def parse_options(pairs: list[str]) -> dict[str, str]:
    """``k=v`` strings → dict. Raises InvalidInput naming the malformed one."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"--option {pair!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


def check_out(path: Path) -> None:
    """Refuse an --out the documents could not be written to, before the (long) run."""
    if path.is_dir():
        raise InvalidInput(
            f"--out: {str(path)!r} is a folder; name a file in it (e.g. {path / 'run.json'})"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InvalidInput(
            f"--out: cannot write {str(path)!r} ({exc.strerror or exc}); nothing was run"
        ) from None


class _Bars:
    """One Rich progress bar per runner, on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("{task.fields[runner]:>9}"),
            BarColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
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


NOISY_CV = 0.1
"""A measurement whose coefficient of variation exceeds this is flagged as noisy."""

# Display scaling: (unit, below this value) → (smaller unit, factor).
SMALLER_UNIT = {"TFLOP/s": ("GFLOP/s", 1e3), "TB/s": ("GB/s", 1e3), "GB/s": ("MB/s", 1e3)}


def display_unit(values: list[float | None], unit: str) -> tuple[str, float]:
    """The unit to show ``values`` in, and the factor: GFLOP/s rather than 0.0016 TFLOP/s."""
    finite = [abs(v) for v in values if v is not None]
    if unit in SMALLER_UNIT and finite and max(finite) < 1:
        smaller, factor = SMALLER_UNIT[unit]
        return smaller, factor
    return unit, 1.0


def _short(value: float | None) -> str:
    return "-" if value is None else f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def _summary_rows(documents: list[Any]) -> list[dict[str, Any]]:
    rows = []
    for doc in documents:
        for m in doc.measurements:
            params = {k: v for k, v in m.benchmark.parameters.items() if k not in ("pi_version",)}
            backend = " ".join(str(params.pop(k)) for k in ("backend", "device") if k in params)
            unit, factor = display_unit([m.value], m.unit)
            scaled = [None if v is None else v * factor for v in (m.value, m.p10, m.p90)]
            rows.append(
                {
                    "benchmark": f"{m.benchmark.family}/{m.benchmark.name}",
                    "backend": backend or None,
                    "value": f"{_short(scaled[0])} {unit}",
                    "p10..p90": f"{_short(scaled[1])}..{_short(scaled[2])}",
                    "cv": None if m.cv is None else round(m.cv, 2),
                    "parameters": ", ".join(f"{k}={v}" for k, v in params.items()) or None,
                }
            )
    return rows


def _counts(documents: list[Any]) -> dict[str, int]:
    from stack_advisor.schema.models import FailureClass

    classes = [f.failure_class for d in documents for f in d.failures]
    return {
        "measurements": sum(len(d.measurements) for d in documents),
        "failures": classes.count(FailureClass.STACK),
        "unsupported": classes.count(FailureClass.HARNESS),
        "environment": classes.count(FailureClass.ENVIRONMENT),
    }


def _noisy(documents: list[Any]) -> list[Any]:
    return [m for d in documents for m in d.measurements if m.cv is not None and m.cv > NOISY_CV]


def _note_spool(flushed: Any) -> None:
    """Say what flushing the spool did, when it did anything."""
    if flushed.sent or flushed.remaining or flushed.rejected:
        note(
            f"spool: sent {flushed.sent}, rejected {flushed.rejected}, still "
            f"waiting {flushed.remaining}"
        )


def _run_summary(outcome: Any) -> dict[str, Any]:
    """The run's summary row before delivery: its documents, counts, node and runner errors."""
    docs = outcome.documents
    return {
        "run_id": outcome.run_id,
        "documents": len(docs),
        **_counts(docs),
        "accelerator": outcome.fingerprint.accelerator.model,
        "placement": outcome.fingerprint.placement.kind.value,
        "placement_consistent": outcome.fingerprint.placement.consistent,
        "host": outcome.fingerprint.host.name,
        "runner_errors": outcome.runner_errors,
    }


def _warn_noisy(noisy: list[Any], measurements: int) -> None:
    worst = max(m.cv for m in noisy)
    warning(
        f"{len(noisy)} of {measurements} measurements are noisy (CV > {NOISY_CV}, "
        f"up to {worst:.2f}): the node was busy or the run too short; re-run on an idle node "
        "or with --profile full before trusting them"
    )


# ``collect_command``'s options
BenchmarkOpt = Annotated[list[str] | None, typer.Option("--benchmark", "-b", help=BENCHMARK_HELP)]
ProfileOpt = Annotated[
    str,
    typer.Option(
        help="quick (a short pass: seconds to a minute or two per benchmark on a "
        "small CPU) or full "
        "(longer, steadier figures)."
    ),
]
RunIdOpt = Annotated[
    str | None, typer.Option("--run-id", help="Reuse to make a re-run add nothing twice.")
]
OptionOpt = Annotated[
    list[str] | None, typer.Option("--option", "-o", help="Runner option k=v (repeatable).")
]
OutOpt = Annotated[
    Path | None, typer.Option("--out", help="Also write the result documents (JSON) here.")
]
TokenOpt = Annotated[str | None, typer.Option("--token", envvar="ADVISOR_TOKEN", help="API token.")]
FlushOpt = Annotated[
    bool, typer.Option("--flush", help="Send spooled documents to --api (alone: only that).")
]


def collect_command(
    benchmark: BenchmarkOpt = None,
    profile: ProfileOpt = "quick",
    device: Annotated[str, typer.Option(help="auto, cpu or cuda.")] = "auto",
    run_id: RunIdOpt = None,
    option: OptionOpt = None,
    out: OutOpt = None,
    no_store: Annotated[bool, typer.Option("--no-store", help="Do not write to a store.")] = False,
    store: StoreOpt = None,
    api: ApiOpt = None,
    token: TokenOpt = None,
    flush: FlushOpt = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Fingerprint this node and run benchmarks; store the observations (or send them to --api).

    Exits 1 when nothing was measured, or when documents stay spooled after --flush."""
    from stack_advisor.collectors.collect import collect

    chosen = output_format(fmt, as_json)

    if flush and not api:
        raise InvalidInput("--flush needs --api URL (spooled documents are sent to the API)")
    if out is not None:
        check_out(out)
    flushed = None
    if api:
        from stack_advisor.collectors import spool

        flushed = spool.flush(api, token)
        _note_spool(flushed)
        if flush and not benchmark:
            _report({"flush": flushed.model_dump()}, [], chosen)
            _exit_if_spooled(flushed)
            return
    with _Bars() as bars:
        outcome = collect(
            benchmark or ["pi"],
            profile=profile,
            device=device,
            run_id=run_id,
            options=parse_options(option or []),
            progress_for=bars.for_runner,
        )
    docs = outcome.documents
    summary = _run_summary(outcome)
    with _destination(out, api, token, no_store, store) as sink:
        for d in docs:
            sink.deliver(d)
    summary.update(sink.summary())
    if api and flushed is not None:
        summary["flush"] = flushed.model_dump()
    noisy = _noisy(docs)
    summary["noisy"] = len(noisy)
    _report(summary, _summary_rows(docs), chosen)
    if noisy and chosen is not OutputFormat.json:
        _warn_noisy(noisy, summary["measurements"])
    _exit_status(sink, summary["measurements"], flushed if flush else None)


def _exit_status(sink: Any, measurements: int, flushed: Any) -> None:
    """Exit 1 when documents stay spooled after --flush (``flushed``), when nothing was
    measured, or as the API's delivery says."""
    from stack_advisor.collectors.sinks import ApiSink, CopySink

    if flushed is not None:
        _exit_if_spooled(flushed)
    if measurements == 0:
        raise typer.Exit(1)
    api_sink = sink.inner if isinstance(sink, CopySink) else sink
    if isinstance(api_sink, ApiSink):
        _exit_for_delivery(api_sink.results)


@contextmanager
def _destination(
    out: Path | None, api: str | None, token: str | None, no_store: bool, store: str | None
) -> Iterator[Sink]:
    """Where ``collect`` sends its documents: the API (``--api``, spooled when it cannot take them
    now), else the store (opened for the deliveries) unless ``--no-store``; ``--out`` also writes
    them to a file, first (``collectors.sinks``, the sweep's seam too)."""
    from stack_advisor.collectors.sinks import ApiSink, CopySink, NoSink, StoreSink

    def also_out(sink: Sink) -> Sink:
        return CopySink(sink, out) if out else sink

    if api:
        yield also_out(ApiSink(api, token))
    elif no_store:
        yield also_out(NoSink())
    else:
        from stack_advisor.cli.stores import open_store

        with open_store(store) as kb:
            yield also_out(StoreSink(kb, store))


def _exit_for_delivery(results: list[Any]) -> None:
    """The exit status a Job acts on: 1 when the API refused a document (401/403: a token
    without write scope; 4xx such as 422: a document it will never take), with the reason;
    EXIT_SPOOLED when the API could not take it now (unreachable, 5xx, 408/425/429): spooled
    for the next run. Refused documents stay on disk too (the spool, or its rejected/ folder)."""
    refused = [r for r in results if r.status == "rejected" or r.http_status in REFUSED_STATUS]
    if refused:
        why = "; ".join(dict.fromkeys(str(r.message) for r in refused))
        note(
            f"delivery refused for {len(refused)} of {len(results)} document(s): {why}",
            prefix="error: ",
        )
        raise typer.Exit(1)
    spooled = [r for r in results if r.status == "spooled"]
    if spooled:
        why = "; ".join(dict.fromkeys(str(r.message) for r in spooled))
        note(
            f"{len(spooled)} document(s) spooled, the API cannot take them now ({why}); the "
            f"next run or `advisor collect --flush` re-sends them (exit {EXIT_SPOOLED})",
            prefix="warning: ",
        )
        raise typer.Exit(EXIT_SPOOLED)


def _exit_if_spooled(flushed: Any) -> None:
    """--flush fails while documents stay in the spool (API down, a 403, a rejected document)."""
    if flushed.remaining or flushed.rejected:
        why = (
            "; ".join(dict.fromkeys(flushed.errors))
            or "a token without write scope? the API unreachable?"
        )
        note(
            f"{flushed.remaining} document(s) still spooled, {flushed.rejected} rejected: {why}",
            prefix="error: ",
        )
        raise typer.Exit(1)


def _summary_table(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The run summary as (field, value) rows: nested results flattened to short text."""
    rows = []
    for key, value in summary.items():
        if key == "runner_errors" or value in (None, [], {}):
            continue
        if key == "delivery":
            outcomes: dict[str, int] = {}
            for item in value:
                outcomes[str(item.get("status"))] = outcomes.get(str(item.get("status")), 0) + 1
            value = outcomes
        rows.append({"field": key.replace("_", " "), "value": value})
    return rows


def _report(summary: dict[str, Any], rows: list[dict[str, Any]], fmt: OutputFormat) -> None:
    if fmt is OutputFormat.json:
        print_json(summary)
        return
    if rows:
        render(
            rows,
            fmt=fmt,
            title=f"run {summary.get('run_id')}",
            columns=["benchmark", "backend", "value", "p10..p90", "cv"],
            details=["parameters"],
        )
        sys.stdout.write("\n")
    render(_summary_table(summary), fmt=fmt, title="summary", columns=["field", "value"])
    for err in summary.get("runner_errors", []):
        warning(err)
    if summary.get("measurements") == 0:
        note("nothing was measured (see the warnings above)", prefix="error: ")


def register(app: typer.Typer) -> None:
    app.command("collect", rich_help_panel="Collect")(collect_command)
