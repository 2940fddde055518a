"""``advisor import``: published results (MLPerf), collector result documents, saved logs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from stack_advisor.cli.options import FormatOpt, JsonOpt, StoreOpt
from stack_advisor.cli.tf_cnn_context import tf_cnn_context as tf_cnn_context

import_app = typer.Typer(
    name="import",
    help="Import published results, collector result documents or saved benchmark logs.",
    no_args_is_help=True,
)
CHANGED_SHOWN = 10  # results held at another value named one by one (the rest counted)
ReplaceChangedOpt = Annotated[
    bool,
    typer.Option(
        "--replace-changed",
        help="Where the store holds a result at another figure than the files now give (a "
        "publisher's correction), take the new figure instead of keeping the stored one.",
    ),
]


def _open_store(uri: str | None) -> Any:
    from stack_advisor.cli.stores import open_store

    return open_store(uri)


@import_app.command("mlperf")
def import_mlperf_cmd(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="MLPerf Inference results tree(s): a round directory or a .tar.gz of one, or a "
            "folder of them."
        ),
    ],
    round_name: Annotated[
        str | None,
        typer.Option("--round", help="Round (e.g. v3.0) when the path's name does not say it."),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Observations per transaction.")] = 2000,
    replace_changed: ReplaceChangedOpt = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Import MLPerf Inference published results; re-importing adds nothing twice."""
    from stack_advisor.cli.render import output_format

    output_format(fmt, as_json)  # a contradictory --json/--format fails before any work
    summaries: list[Any] = []
    committed: dict[str, Any] = {"source": None, "observations": 0, "batches": 0, "of": None}
    try:
        _import_sources(
            paths, store, (round_name, batch_size, replace_changed), summaries, committed
        )
    except Exception as exc:
        wrapped = _interrupted(exc, committed, summaries)
        if wrapped is exc:
            raise
        raise wrapped from exc
    _report_mlperf(summaries, as_json, fmt)


def _interrupted(exc: Exception, committed: dict[str, Any], summaries: list[Any]) -> Exception:
    """The error that stopped an import, with what was committed before it (imports are
    idempotent: running it again adds only the rest)."""
    from stack_advisor.schema.errors import AdvisorError

    if not summaries and not committed["batches"]:
        return exc
    if isinstance(exc, AdvisorError):
        message, code = exc.message, exc.code
    else:
        from stack_advisor.cli.guard import describe

        code, message, _ = describe(exc)
    done = [s.to_dict() for s in summaries]
    for d in done:
        d.pop("issues", None)
    where = f" of {committed['source']}" if committed["source"] else ""
    err = AdvisorError(
        f"{message}; the import stopped after committing {committed['observations']} "
        "observation(s) "
        f"in {committed['batches']} batch(es){where} (and {len(summaries)} complete source(s)); "
        "run it again to add the rest: imports are idempotent",
        details={"committed": committed, "completed_sources": done},
    )
    err.code = code
    return err


def _import_sources(
    paths: list[Path],
    store: str | None,
    how: tuple[str | None, int, bool],
    summaries: list[Any],
    committed: dict[str, Any],
) -> None:
    """Each source imported in turn (``how``: the round, batch size and whether changed figures
    are replaced), what each batch committed kept in ``committed``."""
    round_name, batch_size, replace_changed = how
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from stack_advisor.cli.render import stderr
    from stack_advisor.collectors.importers.mlperf import expand_sources, import_mlperf

    with (
        _open_store(store) as db,
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=stderr,
            transient=True,
            disable=not stderr.is_terminal,
        ) as progress,
    ):
        for path in [p for given in paths for p in expand_sources(given)]:
            task = progress.add_task(f"reading {path.name}", total=None)

            def step(done: int, total: int, task: Any = task, name: str = path.name) -> None:
                progress.update(task, description=f"importing {name}", completed=done, total=total)
                if done:  # called after each committed batch
                    committed.update(
                        source=name,
                        observations=done,
                        of=total,
                        batches=committed["batches"] + 1,
                    )

            committed.update(source=path.name, observations=0, batches=0, of=None)

            summaries.append(
                import_mlperf(
                    path,
                    db,
                    round_name=round_name,
                    batch_size=batch_size,
                    progress=step,
                    replace_changed=replace_changed,
                )
            )
            committed.update(source=None, observations=0, batches=0, of=None)
            progress.remove_task(task)


def _report_mlperf(summaries: list[Any], as_json: bool, fmt: Any) -> None:
    from stack_advisor.cli.render import (
        OutputFormat,
        error,
        info,
        output_format,
        print_json,
        render,
    )

    chosen = output_format(fmt, as_json)
    failed = sum(s.failed for s in summaries)
    if chosen is OutputFormat.json:
        data = [s.to_dict() for s in summaries]
        print_json(data[0] if len(data) == 1 else data)
    else:
        for s in summaries:
            for issue in s.issues:
                if issue.outcome == "failed":
                    error(f"{issue.path}: {issue.reason}")
            for category, count in sorted(s.skipped_by_reason.items()):
                example = next(
                    i for i in s.issues if i.outcome == "skipped" and i.category == category
                )
                info(
                    f"{s.round}: skipped {count} {category}, e.g. {example.path}: {example.reason}"
                )
            _unresolved_benchmarks(s.unresolved_benchmarks)
            fixed = [i for i in s.issues if i.outcome == "replaced"]
            if fixed:
                info(
                    f"{s.round}: replaced {len(fixed)} stored figure(s) the files now give "
                    f"otherwise, e.g. {fixed[0].path}: {fixed[0].reason}"
                )
        render(
            [
                {
                    "source": Path(s.path).name,
                    "round": s.round,
                    "results": s.results_found,
                    "imported": s.imported,
                    "present": s.already_present,
                    "replaced": s.replaced,
                    "skipped": s.skipped,
                    "failed": s.failed,
                    "seconds": round(s.seconds, 1),
                }
                for s in summaries
            ],
            fmt=chosen,
            title="MLPerf import",
        )
    if failed and not any(s.results_found for s in summaries):
        raise typer.Exit(1)


@import_app.command("mlperf-summary")
def import_mlperf_summary_cmd(
    file: Annotated[
        Path,
        typer.Argument(
            help="MLCommons' published results table of a round: summary_results[_vX.Y].json[.gz]."
        ),
    ],
    round_name: Annotated[
        str | None,
        typer.Option("--round", help="Round (e.g. v5.1) when the file's name does not say it."),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Observations per transaction.")] = 2000,
    replace_changed: ReplaceChangedOpt = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Import an MLPerf Inference round from its published results table alone; results already
    imported from the round's results tree are not added twice. Rows not imported are counted
    by reason; accelerators the catalogue does not know are imported under their published name
    and listed as unresolved."""
    from stack_advisor.cli.render import output_format
    from stack_advisor.collectors.importers.mlperf_summary import import_summary

    chosen = output_format(fmt, as_json)
    with _open_store(store) as db:
        report = import_summary(
            file, db, round_name=round_name, batch_size=batch_size, replace_changed=replace_changed
        )
    _report_summary(report, file, chosen)


def _report_summary(report: Any, file: Path, chosen: Any) -> None:
    """The summary import's report: JSON, or notes on what was skipped and a one-row table."""
    from stack_advisor.cli.render import OutputFormat, info, print_json, render, warning

    if chosen is OutputFormat.json:
        print_json(report.to_dict())
        return
    for reason, count in sorted(report.skipped_by_reason.items()):
        info(f"{report.round}: skipped {count} row(s): {reason}, e.g. {report.examples[reason]}")
    if report.power_figures_ignored:
        info(
            f"{report.round}: {report.power_figures_ignored} power figure(s) beside "
            "results not imported"
        )
    for name, count in report.unresolved_accelerators.most_common():
        warning(
            f"unresolved accelerator {name!r}: {count} result(s) imported under this published name"
        )
    _unresolved_benchmarks(dict(report.unresolved_benchmarks.most_common()))
    for row in report.changed_rows[:CHANGED_SHOWN]:
        warning(
            f"{row['result']}: the store held {row['stored']}, the table now gives "
            f"{row['table']}: replaced"
            if report.replaced
            else f"{row['result']}: the store holds {row['stored']}, the table now gives "
            f"{row['table']}: the stored figure is kept (--replace-changed takes the table's)"
        )
    if report.changed > CHANGED_SHOWN:
        warning(f"... and {report.changed - CHANGED_SHOWN} more result(s) held at another value")
    render(
        [
            {
                "source": file.name,
                "round": report.round,
                "rows": report.rows,
                "results": report.results,
                "imported": report.imported,
                "present": report.already_present,
                "changed": report.changed,
                "replaced": report.replaced,
                "skipped": sum(report.skipped_by_reason.values()),
                "unresolved": sum(report.unresolved_accelerators.values()),
                "seconds": round(report.seconds, 1),
            }
        ],
        fmt=chosen,
        title="MLPerf summary import",
    )


@import_app.command("mlperf-training")
def import_mlperf_training_cmd(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="MLPerf Training results tree(s): a round directory or a .tar.gz of one."
        ),
    ],
    round_name: Annotated[
        str | None,
        typer.Option("--round", help="Round (e.g. v4.1) when the path's name does not say it."),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Observations per transaction.")] = 2000,
    replace_changed: ReplaceChangedOpt = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Import MLPerf Training results: each run's time to train, aborted runs as failures, and
    per system × benchmark the olympic mean (MLCommons' RCP normalisation is not in the files)."""
    from stack_advisor.cli.render import output_format
    from stack_advisor.collectors.importers.mlperf_training import import_mlperf_training

    with _open_store(store) as db:
        summaries = [
            import_mlperf_training(
                p, db, round_name=round_name, batch_size=batch_size, replace_changed=replace_changed
            )
            for p in paths
        ]
    _report_training(summaries, output_format(fmt, as_json))
    if not any(s.runs for s in summaries):
        raise typer.Exit(1)


def _report_training(summaries: list[Any], chosen: Any) -> None:
    """The training import's report: JSON, or its issues, a table per source and the RCP note."""
    from stack_advisor.cli.render import OutputFormat, error, info, print_json, render
    from stack_advisor.collectors.importers.mlperf_training import RCP_NOTE

    if chosen is OutputFormat.json:
        data = [s.to_dict() for s in summaries]
        print_json(data[0] if len(data) == 1 else data)
    else:
        for s in summaries:
            for issue in s.issues:
                (error if issue.outcome == "failed" else info)(f"{issue.path}: {issue.reason}")
            _unresolved_benchmarks(s.unresolved_benchmarks)
        render(
            [
                {
                    "source": Path(s.path).name,
                    "round": s.round,
                    "runs": s.runs,
                    "failed_runs": s.failed_runs,
                    "scores": s.scores,
                    "imported": s.imported,
                    "present": s.already_present,
                    "replaced": s.replaced,
                    "seconds": round(s.seconds, 1),
                }
                for s in summaries
            ],
            fmt=chosen,
            title="MLPerf Training import",
        )
        info(f"scores: {RCP_NOTE}")


@import_app.command("results")
def import_results_cmd(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="JSON file(s), each one result document or a list; a directory means its *.json."
        ),
    ],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Import collector result documents (validated first: one bad document writes nothing).

    The error names the file, the document's index and the field."""
    from stack_advisor.cli.render import output_format, render
    from stack_advisor.collectors.importers.results import import_result_files

    chosen = output_format(fmt, as_json)

    paths: list[Path] = []
    for path in files:
        found = sorted(path.glob("*.json")) if path.is_dir() else [path]
        if not found:
            from stack_advisor.schema.errors import InvalidInput

            raise InvalidInput(
                f"files: the folder {str(path)!r} has no *.json result documents; "
                "give the files `advisor collect --out` wrote, or their folder"
            )
        paths.extend(found)
    with _open_store(store) as db:
        documents, result = import_result_files(paths, db)
    row = {"files": len(paths), "documents": documents, **result.model_dump()}
    render([row], fmt=chosen, json_data=row, title="Result documents imported")


def _tf_cnn_parser() -> Any:
    """``import_tf_cnn_log``, or an InvalidInput saying the parser is not available."""
    from stack_advisor.schema.errors import InvalidInput

    try:
        from stack_advisor.collectors.importers.tf_cnn import import_tf_cnn_log
    except ImportError as exc:  # the parser belongs to another module; say so plainly
        raise InvalidInput(f"the tf_cnn_benchmarks log parser is not available: {exc}") from None
    return import_tf_cnn_log


def _read_log(log: Path) -> str:
    """The saved log's text ('-': stdin); InvalidInput naming a missing file."""
    from stack_advisor.schema.errors import InvalidInput

    if str(log) == "-":
        return sys.stdin.read()
    try:
        return log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise InvalidInput(f"no such log file: {str(log)!r}") from None


@import_app.command("tf-cnn")
def import_tf_cnn_cmd(
    log: Annotated[Path, typer.Argument(help="A saved tf_cnn_benchmarks output ('-' for stdin).")],
    stack_json: Annotated[
        Path | None, typer.Option("--stack-json", help="JSON of the software stack.")
    ] = None,
    fingerprint: Annotated[
        Path | None,
        typer.Option("--fingerprint", help="Fingerprint / result document JSON of the node."),
    ] = None,
    framework_version: Annotated[str | None, typer.Option(help="TensorFlow version.")] = None,
    cuda: Annotated[str | None, typer.Option(help="CUDA version.")] = None,
    cudnn: Annotated[str | None, typer.Option(help="cuDNN version.")] = None,
    driver: Annotated[str | None, typer.Option(help="NVIDIA driver version.")] = None,
    accelerator: Annotated[
        str | None, typer.Option(help="Accelerator model (or 'CPU <model>').")
    ] = None,
    accelerator_count: Annotated[int | None, typer.Option(min=0, help="Accelerators used.")] = None,
    placement: Annotated[
        str | None, typer.Option(help="bare-metal | passthrough | vgpu | unknown.")
    ] = None,
    host: Annotated[str | None, typer.Option(help="Host name.")] = None,
    run_id: Annotated[str | None, typer.Option(help="Run id (default: a new one).")] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the result document (JSON) that would be stored; write nothing.",
        ),
    ] = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Import a saved tf_cnn_benchmarks log (a crash becomes a recorded failure)."""
    from stack_advisor.cli.render import output_format, print_json

    chosen = output_format(fmt, as_json)
    import_tf_cnn_log, text = _tf_cnn_parser(), _read_log(log)
    overrides: dict[Any, Any] = {
        ("stack", "framework_version"): framework_version,
        ("stack", "cuda"): cuda,
        ("stack", "cudnn"): cudnn,
        ("stack", "driver"): driver,
        ("accelerator", "model"): accelerator,
        ("accelerator", "count"): accelerator_count,
        ("placement", "kind"): placement,
        ("host", "name"): host,
        ("stack", "framework"): "tensorflow" if framework_version is not None else None,
    }
    context = tf_cnn_context(stack_json=stack_json, fingerprint=fingerprint, overrides=overrides)
    document = import_tf_cnn_log(text, run_id=run_id, **context)
    if dry_run:  # the document itself (what would be stored), whatever the format
        print_json(document)
        return
    _store_document(document, store, chosen)


def _store_document(document: Any, store: str | None, chosen: Any) -> None:
    """Ingest the log's result document and print what was stored."""
    from stack_advisor.cli.render import render

    with _open_store(store) as db:
        result = db.ingest_document(document)
    row: dict[str, Any] = {
        "run_id": document.run.run_id,
        "measurements": len(document.measurements),
        "failures": len(document.failures),
        **result.model_dump(),
    }
    render([row], fmt=chosen, json_data=row, title="tf_cnn log imported")


def register(app: typer.Typer) -> None:
    app.add_typer(import_app, name="import", rich_help_panel="Knowledge")


def _unresolved_benchmarks(counts: dict[str, int]) -> None:
    """A warning per benchmark the catalogue does not know, its results imported under the
    published name (every importer: the tree and Training ones had said nothing)."""
    from stack_advisor.cli.render import warning

    for name, count in counts.items():
        warning(
            f"benchmark {name!r} is not in the catalogue: {count} result(s) imported under this "
            "published name (`advisor catalogue list benchmarks` lists those it knows)"
        )
