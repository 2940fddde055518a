"""`advisor sweep MATRIX.yaml`: measure this node across the matrix's software stacks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from stack_advisor.cli.collect import check_out
from stack_advisor.cli.options import ApiOpt, FormatOpt, JsonOpt, StoreOpt
from stack_advisor.cli.render import OutputFormat, note, output_format, print_json, render
from stack_advisor.schema.errors import InvalidInput

COLUMNS = [
    "cell",
    "status",
    "framework",
    "stack",
    "measurements",
    "failures",
    "env",
    "env_s",
    "overhead_s",
    "bench_s",
]


def _row(outcome: Any) -> dict[str, Any]:
    stack = outcome.stack or {}
    shown = ", ".join(
        f"{k} {stack[k]}" for k in ("cuda", "cudnn", "nccl", "python") if stack.get(k)
    )
    return {
        "cell": outcome.cell,
        "status": outcome.status if not outcome.stage else f"{outcome.status} ({outcome.stage})",
        "framework": f"{stack.get('framework', '?')} {stack.get('framework_version', '?')}"
        if stack
        else None,
        "stack": shown or None,
        "measurements": outcome.measurements,
        "failures": outcome.failures,
        "env": None
        if outcome.status == "skipped"
        else ("cached" if outcome.env_cached else "created"),
        "env_s": round(outcome.env_seconds, 1),
        "overhead_s": round(outcome.overhead_seconds, 1),
        "bench_s": round(outcome.benchmark_seconds, 1),
        "reason": outcome.reason,
    }


# ``sweep_command``'s options
MatrixFileArg = Annotated[
    str,
    typer.Argument(
        metavar="MATRIX.yaml",
        help="The sweep matrix (docs/sweep.md), or env:NAME (the matrix in an "
        "environment variable).",
    ),
]
CellOpt = Annotated[
    list[str] | None, typer.Option("--cell", help="Run only this cell (repeatable).")
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Re-run cells already measured on this node (their results add up as more repeats).",
    ),
]
CacheDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="Environments, uv's cache and the ledger. Default: $ADVISOR_SWEEP_CACHE, "
        "else ~/.cache/stack-advisor/sweep.",
    ),
]
MaxCacheGbOpt = Annotated[
    float,
    typer.Option(
        "--max-cache-gb",
        help="Disk bound of the cache: least recently used environments are pruned beyond it.",
    ),
]
CellTimeoutOpt = Annotated[float, typer.Option("--cell-timeout", help="Seconds one cell may run.")]
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Also write every result document of this "
        "sweep (JSON, as `advisor collect --out`) to this file.",
    ),
]
NoStoreOpt = Annotated[
    bool,
    typer.Option(
        "--no-store",
        help="Write to no store (with --out: the "
        "documents only to that file, e.g. on a node cut off from the API).",
    ),
]
TokenOpt = Annotated[str | None, typer.Option("--token", envvar="ADVISOR_TOKEN", help="API token.")]


def sweep_command(
    matrix_file: MatrixFileArg,
    cell: CellOpt = None,
    force: ForceOpt = False,
    cache_dir: CacheDirOpt = None,
    max_cache_gb: MaxCacheGbOpt = 20.0,
    cell_timeout: CellTimeoutOpt = 3600.0,
    out: OutOpt = None,
    no_store: NoStoreOpt = False,
    store: StoreOpt = None,
    api: ApiOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Measure this node across a matrix of framework / CUDA / cuDNN / NCCL builds: one isolated
    environment per cell (uv), the collector run inside it, results and failures to the store
    (or --api). Progress per cell on stderr; a re-run skips finished cells unless --force.

    Exits 1 when no cell was measured."""
    from stack_advisor.collectors.sinks import ApiSink, CopySink, NoSink, Sink, StoreSink
    from stack_advisor.collectors.sweep.env import EnvCache
    from stack_advisor.collectors.sweep.matrix import load_matrix
    from stack_advisor.collectors.sweep.run import Sweep

    chosen = output_format(fmt, as_json)
    matrix = load_matrix(matrix_file)
    cache = EnvCache(cache_dir, max_gb=max_cache_gb)
    if out is not None:
        check_out(out)
    if no_store and (out is None or api or store):
        raise InvalidInput(
            "--no-store: name --out FILE (else nothing is kept), and neither --store nor --api"
        )

    def progress(tag: str, message: str) -> None:
        note(f"{tag}: {message}")

    def run(inner: Sink) -> list[Any]:
        sink = CopySink(inner, out) if out is not None else inner
        return Sweep(
            matrix, cache, sink, force=force, progress=progress, cell_timeout_s=cell_timeout
        ).run(cell)

    if no_store:
        outcomes = run(NoSink())
    elif api:
        outcomes = run(ApiSink(api, token))
    else:
        from stack_advisor.cli.stores import open_store

        with open_store(store) as kb:
            outcomes = run(StoreSink(kb, store))
    _show_sweep(matrix, cache, outcomes, chosen)
    if not any(o.status in ("measured", "skipped") for o in outcomes):
        raise typer.Exit(1)


def _show_sweep(matrix: Any, cache: Any, outcomes: list[Any], chosen: OutputFormat) -> None:
    """One row per cell (JSON: with the matrix, its baseline and the ledger's folder)."""
    rows = [_row(o) for o in outcomes]
    if chosen is OutputFormat.json:
        print_json(
            {
                "matrix": matrix.name,
                "baseline": matrix.baseline_cell,
                "cells": rows,
                "ledger": str(cache.root / "results"),
            }
        )
    else:
        render(rows, fmt=chosen, title=f"sweep {matrix.name}", columns=COLUMNS, details=["reason"])
        note(f"compare the cells: advisor compare sweep {matrix.name}")


def compare_sweep_command(
    sweep: Annotated[str, typer.Argument(help="The matrix's name.")],
    host: Annotated[
        str | None, typer.Option(help="The node (needed when several ran the sweep).")
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            help="The cell the others are compared to (default: the first cell measured)."
        ),
    ] = None,
    cell: Annotated[
        str | None, typer.Option(help="Only this cell against the baseline (default: every cell).")
    ] = None,
    flagged_only: Annotated[
        bool, typer.Option("--flagged-only", help="Only changes beyond the spread.")
    ] = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """What each cell of a sweep changed on one node: per benchmark, its speed relative to the
    baseline cell with a 95% interval (from the repeats), flagged only beyond the run-to-run
    spread."""
    from stack_advisor.advisor.verbs.sweep import sweep_report
    from stack_advisor.cli.stores import open_store

    chosen = output_format(fmt, as_json)
    with open_store(store, create=False) as kb:
        report = sweep_report(
            kb, sweep, host=host, baseline=baseline, cell=cell, flagged_only=flagged_only
        )
    if chosen is OutputFormat.json:
        print_json(report.model_dump(mode="json"))
        return
    _show_comparison(report, sweep, chosen, flagged_only)


def _show_comparison(report: Any, sweep: str, chosen: OutputFormat, flagged_only: bool) -> None:
    """The sweep comparison as a table: one row per benchmark and cell, with a note when no row
    is left."""
    node, shown = report.host, report.ratios
    rows = [
        {
            "benchmark": r.benchmark,
            "cell": r.cell,
            "ratio": f"{r.ratio:.3f}",
            "95% interval": f"{r.low:.3f}..{r.high:.3f}",
            "spread": f"{r.spread:.3f}",
            "n": f"{r.repeats}/{r.baseline_repeats}",
            "verdict": ("! " if r.flagged else "") + r.verdict,
            "parameters": r.parameters,
            "stack": r.stack,
            "interval from": r.interval_from,
        }
        for r in shown
    ]
    render(
        rows,
        fmt=chosen,
        title=f"sweep {sweep} on {node}: speed vs baseline {report.baseline} "
        "(measured on this node)",
        columns=["benchmark", "cell", "ratio", "95% interval", "spread", "n", "verdict"],
        details=["parameters"],
        inline=["stack", "interval from"],
    )
    if not rows:
        note(
            "no cell differs from the baseline beyond the run-to-run spread"
            if flagged_only
            else "only the baseline cell has observations"
        )


def register(app: typer.Typer) -> None:
    app.command("sweep", rich_help_panel="Collect")(sweep_command)
    from stack_advisor.cli.compare import compare_app

    compare_app.command("sweep")(compare_sweep_command)
