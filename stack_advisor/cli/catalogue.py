"""`advisor catalogue`: what the catalogue knows (accelerators, benchmarks), with figures and
sources. Reads the packaged catalogue only: no store, no network."""

from __future__ import annotations

from typing import Annotated

import typer

from stack_advisor.cli.options import FormatOpt, JsonOpt
from stack_advisor.cli.render import OutputFormat, note, output_format, render

catalogue_app = typer.Typer(
    help="The catalogue of accelerators and benchmarks: datasheet figures, names, sources.",
    no_args_is_help=True,
)

KindOpt = Annotated[
    str,
    typer.Option("--kind", "-k", help="accelerators or benchmarks."),
]


def _kind(value: str) -> str:
    from stack_advisor.catalog.browse import KINDS
    from stack_advisor.cli.options import choose

    return choose(value, KINDS, "--kind") or "accelerators"


@catalogue_app.command("list")
def list_cmd(
    kind: KindOpt = "accelerators",
    vendor: Annotated[
        str | None, typer.Option("--vendor", help="Only this vendor's parts (nvidia, amd, ...).")
    ] = None,
    family: Annotated[
        str | None, typer.Option("--family", help="Only this family (H100, Gaudi 3, ...).")
    ] = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Every catalogue entry of a kind; accelerators with dense peak figures (TFLOP/s, TOPS for
    int8), memory (GB), bandwidth and scale-up interconnect (GB/s), TDP (W)."""
    from stack_advisor.catalog.browse import ACCELERATOR_COLUMNS, list_entries

    chosen = output_format(fmt, as_json)
    which = _kind(kind)
    rows = list_entries(which, vendor=vendor, family=family)  # type: ignore[arg-type]
    if chosen is OutputFormat.json:
        render(rows, fmt=chosen)
        return
    if which == "accelerators":
        render(
            rows,
            fmt=chosen,
            title=f"Accelerators ({len(rows)}; dense peaks, empty = not published)",
            columns=list(ACCELERATOR_COLUMNS),
        )
    else:
        render(
            rows,
            fmt=chosen,
            title=f"Benchmarks ({len(rows)})",
            columns=[
                c
                for c in ("id", "family", "task", "model", "params_b")
                if any(c in r for r in rows)
            ],
        )
    note("`advisor catalogue show NAME` gives one entry in full, with its source")


@catalogue_app.command("show")
def show(
    name: Annotated[
        str,
        typer.Argument(
            help="Any spelling the catalogue knows (H200 NVL, NVIDIA-H100-80GB-HBM3, gb200)."
        ),
    ],
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            "-k",
            help="accelerators or benchmarks; default: the accelerator the name resolves to, "
            "else the benchmark.",
        ),
    ] = None,
    family: Annotated[
        str | None,
        typer.Option(
            "--family",
            help="A benchmark's family (mlperf-inference, mlperf-training); default: "
            "Inference first.",
        ),
    ] = None,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """One entry in full: every figure, every name it arrives under, its source and note."""
    from stack_advisor.catalog.browse import show_accelerator, show_benchmark, show_entry

    chosen = output_format(fmt, as_json)
    which = None if kind is None else _kind(kind)
    if which is None:
        row = show_entry(name, family)
    else:
        row = show_accelerator(name) if which == "accelerators" else show_benchmark(name, family)
    if chosen is OutputFormat.json:
        render([row], fmt=chosen, json_data=row)
        return
    fields = [
        {"field": k, "value": ", ".join(map(str, v)) if isinstance(v, list) else v}
        for k, v in row.items()
        if v is not None and v != []
    ]
    render(fields, fmt=chosen, title=row.get("name") or row["id"], columns=["field", "value"])


@catalogue_app.command("search")
def search_cmd(
    query: Annotated[
        str,
        typer.Argument(
            help="A name, family, vendor, generation or task (blackwell, gaudi, llama)."
        ),
    ],
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Entries whose names or properties contain the text; the part the name resolves to first,
    and the closest spellings when nothing contains it."""
    from stack_advisor.catalog.browse import search

    chosen = output_format(fmt, as_json)
    hits = search(query)
    if not hits and chosen is not OutputFormat.json:
        note(f"nothing in the catalogue matches {query!r}")
    render(
        hits,
        fmt=chosen,
        title=f"Catalogue entries for {query!r}",
        columns=["kind", "id", "name", "why"],
    )


def register(app: typer.Typer) -> None:
    app.add_typer(catalogue_app, name="catalogue", rich_help_panel="Knowledge base")
