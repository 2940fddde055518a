"""stack_advisor.cli.render: tables that fit 80 columns without cutting a value, piped output on one
line per row, CSV and Markdown with every column, and the --json / --format choice."""

from __future__ import annotations

import csv
import io

import pytest

from stack_advisor.cli.render import FormatConflict, OutputFormat, output_format, render_text

STACK = (
    "tensorrt 8.6.0, cuda 12.0, cudnn 8.8.0, driver 525.85.12, pytorch 2.1.0, python "
    "3.10.12, nccl 2.18.3"
)
ROWS = [
    {
        "#": i,
        "accelerator": f"NVIDIA H100-SXM-80GB x{n}",
        "placement": "bare-metal",
        "value": "91,826 (88,000..93,100)",
        "basis": "observed",
        "evidence": "3 obs v3.0/v3.1",
        "stack": STACK,
        "warnings": "few samples: a single observation; " * 4,
    }
    for i, n in ((1, 1), (2, 8))
]
COLUMNS = ["#", "accelerator", "placement", "value", "basis", "evidence"]


def test_table_fits_80_columns_and_never_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    text = render_text(
        ROWS,
        OutputFormat.table,
        title="resnet50: samples/s",
        columns=COLUMNS,
        details=["stack", "warnings"],
    )
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80, text
    assert "…" not in text
    # the stack sits on its own line under its row, whole (only wrapped at word boundaries)
    flat = " ".join(line.strip() for line in lines)
    assert f"stack: {STACK}" in flat
    assert "NVIDIA H100-SXM-80GB x1" in flat and "NVIDIA H100-SXM-80GB x8" in flat
    assert lines[1].split() == COLUMNS  # header under the title


def test_narrow_table_wraps_cells_inside_their_column(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "50")
    text = render_text(ROWS, OutputFormat.table, columns=COLUMNS)
    assert max(len(line) for line in text.splitlines()) <= 50, text
    assert "…" not in text and "x8" in text


def test_plain_is_one_line_per_row_with_every_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    text = render_text(
        ROWS, OutputFormat.plain, title="t", columns=COLUMNS, details=["stack", "warnings"]
    )
    lines = text.splitlines()
    assert lines[0] == "# t" and len(lines) == 2 + len(ROWS)
    assert all(STACK in line for line in lines[2:])
    assert lines[1].split()[:6] == COLUMNS


def test_csv_and_markdown_carry_every_column() -> None:
    rows = list(
        csv.DictReader(
            io.StringIO(render_text(ROWS, OutputFormat.csv, columns=COLUMNS, details=["stack"]))
        )
    )
    assert [r["stack"] for r in rows] == [STACK, STACK] and rows[1]["accelerator"].endswith("x8")
    md = render_text(
        ROWS, OutputFormat.markdown, title="t", columns=COLUMNS, details=["stack"]
    ).splitlines()
    assert md[2].startswith("| # | accelerator |") and md[3] == "|---|---|---|---|---|---|---|"
    assert len(md) == 4 + len(ROWS)


def test_json_flag_and_format_choice() -> None:
    assert output_format(None, as_json=True) is OutputFormat.json
    assert output_format("json", as_json=True) is OutputFormat.json
    assert output_format("csv") is OutputFormat.csv
    assert output_format(None) is OutputFormat.plain  # pytest captures stdout: not a terminal
    with pytest.raises(FormatConflict, match="--json contradicts --format csv"):
        output_format("csv", as_json=True)


def test_columns_that_do_not_fit_move_under_their_row_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # recommend's nine columns at 80: splitting words inside columns ("accelerat/or", "bare-meta/l")
    # is not readable; the last columns go on one line under their row instead
    monkeypatch.setenv("COLUMNS", "80")
    rows = [
        {
            "#": i,
            "basis": "○ transferred",
            "accelerator": "H200-SXM-141GB x8",
            "placement": "bare-metal",
            "score": "96,029",
            "value": "96,029 (90,325..113,258)",
            "observed range": "69,529..94,681",
            "evidence": "3 obs x8 v4.1",
            "conf": "0.80",
            "stack": STACK,
        }
        for i in (1, 2)
    ]
    cols = [
        "#",
        "basis",
        "accelerator",
        "placement",
        "score",
        "value",
        "observed range",
        "evidence",
        "conf",
    ]
    text = render_text(rows, OutputFormat.table, columns=cols, details=["stack"])
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80, text
    assert lines[0].split() == ["#", "basis", "accelerator", "placement", "score", "value"]
    for word in ("transferred", "H200-SXM-141GB", "bare-metal", "(90,325..113,258)"):
        assert text.count(word) == 2, text  # every word whole, once per row
    assert (
        lines.count("    observed range: 69,529..94,681 · evidence: 3 obs x8 v4.1 · conf: 0.80")
        == 2
    )
    under = lines.index("    observed range: 69,529..94,681 · evidence: 3 obs x8 v4.1 · conf: 0.80")
    assert lines[under + 1].startswith("    stack: ")  # the moved columns first, then the details
    monkeypatch.setenv("COLUMNS", "200")  # a wide terminal keeps them as columns
    assert render_text(rows, OutputFormat.table, columns=cols).splitlines()[0].split()[-1] == "conf"
