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


def _list_kind(argument: str | None, option: str | None) -> str:
    """KIND written as an argument (`catalogue list benchmarks`) or as --kind; both must agree."""
    if argument is not None and option is not None and _kind(argument) != _kind(option):
        from stack_advisor.schema.errors import InvalidInput

        raise InvalidInput(f"KIND {argument!r} and --kind {option!r} disagree; give one")
    return _kind(argument or option or "accelerators")


def _kind(value: str) -> str:
    from stack_advisor.catalog.browse import KINDS
    from stack_advisor.cli.options import choose

    return choose(value, KINDS, "--kind") or "accelerators"


def _filter_value(value: str | None, known: set[str], option: str) -> None:
    """An unknown ``--vendor``/``--family`` is a usage error with the closest names, never an
    empty table."""
    if value is None:
        return
    from difflib import get_close_matches

    from stack_advisor.catalog import normalize
    from stack_advisor.schema.errors import InvalidInput

    by_key = {normalize(k): k for k in known if k}
    if normalize(value) in by_key:
        return
    close = get_close_matches(normalize(value), list(by_key), n=3, cutoff=0.6)
    hint = (
        f"did you mean {' or '.join(repr(by_key[c]) for c in close)}?"
        if close
        else f"known: {', '.join(sorted(by_key.values()))}"
    )
    raise InvalidInput(f"{option}: no catalogue entry has {value!r}; {hint}")


@catalogue_app.command("list")
def list_cmd(
    kind_arg: Annotated[
        str | None,
        typer.Argument(
            metavar="[KIND]", help="accelerators (default) or benchmarks; the same as --kind."
        ),
    ] = None,
    kind: Annotated[
        str | None, typer.Option("--kind", "-k", help="accelerators or benchmarks.")
    ] = None,
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
    which = _list_kind(kind_arg, kind)
    if which == "accelerators" and (vendor or family):
        every = list_entries("accelerators")
        _filter_value(vendor, {str(r.get("vendor") or "") for r in every}, "--vendor")
        _filter_value(family, {str(r.get("family") or "") for r in every}, "--family")
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
