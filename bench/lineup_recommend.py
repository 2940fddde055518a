"""Each accelerator of today's line-up (issue 27), written as users write it, through the public
CLI path: ``advisor recommend --benchmark llama2-70b-99 --scenario Offline --accelerator NAME
--json``. Prints, per name, what the catalogue resolved it to and the answer: rows (observed /
predicted) or the refusal and its reason. Goal: no refusal says "unknown accelerator".

    python bench/lineup_recommend.py [--store URI] [--benchmark B] [--scenario S] [--json]

Without --store the command runs as a new user's would: the default store under a fresh
XDG_DATA_HOME, seeded with the starter knowledge base on first use.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LINEUP = [
    # NVIDIA
    "V100",
    "Tesla V100-SXM2-32GB",
    "T4",
    "A2",
    "A10",
    "A16",
    "A30",
    "A40",
    "A100",
    "A100 PCIe 40GB",
    "A100-SXM4-80GB",
    "A800",
    "H20",
    "H800",
    "H100",
    "H100 SXM",
    "H100 PCIe",
    "H100 NVL",
    "H200",
    "H200 SXM",
    "H200 NVL",
    "GH200",
    "L4",
    "L20",
    "L40",
    "L40S",
    "RTX 4090",
    "RTX 6000 Ada",
    "RTX PRO 4500",
    "RTX PRO 4500 Blackwell Server Edition",
    "RTX PRO 6000",
    "RTX PRO 6000 Blackwell Workstation Edition",
    "RTX PRO 6000 Blackwell Server Edition",
    "B100",
    "B200",
    "B300",
    "GB200",
    "GB300",
    "GB10",
    "Jetson AGX Orin",
    "Jetson Orin NX",
    "Jetson Thor",
    # AMD
    "MI100",
    "MI210",
    "MI250",
    "MI250X",
    "MI300A",
    "MI300X",
    "MI325X",
    "MI350X",
    "MI355X",
    "Radeon PRO W7900",
    # Intel
    "Gaudi 2",
    "Gaudi 3",
    "Data Center GPU Max 1100",
    "Data Center GPU Max 1550",
    "Arc Pro B60",
    "Arc Pro B70",
    # Google, AWS, Qualcomm
    "TPU v4",
    "TPU v5e",
    "TPU v5p",
    "TPU v6e",
    "Trillium",
    "TPU v7",
    "Ironwood",
    "Inferentia2",
    "Trainium",
    "Trainium2",
    "Cloud AI 100",
    "Cloud AI 100 Ultra",
]


def _run(argv: list[str]) -> tuple[int, str, str]:
    from stack_advisor.cli.guard import run_guarded
    from stack_advisor.cli.main import app

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_guarded(app, argv)
    return code, out.getvalue(), err.getvalue()


def _resolved(name: str) -> str:
    from stack_advisor.catalog import load_catalog, resolve_accelerator
    from stack_advisor.catalog.resolve import normalize

    match = resolve_accelerator(name)
    if match.resolved:
        return match.key
    family = [
        a.id for a in load_catalog().accelerators.values() if normalize(a.family) == normalize(name)
    ]
    return f"family {name} ({len(family)} parts)" if family else f"not resolved ({match.refusal})"


def answer(name: str, common: list[str]) -> dict[str, Any]:
    code, out, err = _run(["recommend", *common, "--accelerator", name, "--json"])
    row: dict[str, Any] = {"name": name, "catalogue": _resolved(name), "exit": code}
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and "recommendations" in doc:
        recs = doc["recommendations"]
        bases = [str(r.get("basis") or r.get("evidence", {}).get("basis") or "") for r in recs]
        row["rows"] = len(recs)
        row["observed"] = sum(b.startswith("observed") for b in bases)
        row["reason"] = "; ".join(doc.get("notes") or []) or (
            "" if recs else json.dumps(doc.get("excluded"))
        )
        if not recs:
            row["reason"] += " " + json.dumps(doc.get("excluded"))
    else:
        message = (doc or {}).get("error", {}).get("message") if isinstance(doc, dict) else None
        row["rows"] = 0
        row["reason"] = message or (err.strip().splitlines() or ["(no output)"])[-1]
    row["unknown_accelerator"] = "unknown accelerator" in row["reason"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--store", help="store URI (default: a new user's default store, seeded on first use)"
    )
    parser.add_argument("--benchmark", default="llama2-70b-99")
    parser.add_argument("--scenario", default="Offline")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for var in ("ADVISOR_API", "ADVISOR_STORE"):
        os.environ.pop(var, None)
    tmp = None
    if args.store is None:
        tmp = tempfile.TemporaryDirectory(prefix="lineup-")
        os.environ["XDG_DATA_HOME"] = tmp.name
    common = ["--benchmark", args.benchmark, "--scenario", args.scenario] + (
        ["--store", args.store] if args.store else []
    )
    started = time.perf_counter()
    rows = [answer(name, common) for name in LINEUP]
    seconds = time.perf_counter() - started
    bad = [r["name"] for r in rows if r["unknown_accelerator"]]
    with_rows = sum(r["rows"] > 0 for r in rows)
    if args.json:
        print(
            json.dumps(
                {
                    "rows": rows,
                    "with_rows": with_rows,
                    "unknown_accelerator": bad,
                    "seconds": round(seconds, 1),
                },
                indent=1,
            )
        )
    else:
        for r in rows:
            what = (
                f"{r['rows']} rows ({r['observed']} observed)"
                if r["rows"]
                else "refused: " + r["reason"][:110]
            )
            print(f"{r['name']:<42} -> {r['catalogue']:<32} {what}")
        print(
            f"{len(rows)} names: {with_rows} answered with rows, "
            f"{len(rows) - with_rows - len(bad)} refused for "
            f"another reason, {len(bad)} refused as an unknown accelerator {bad} ({seconds:.0f} s)"
        )
    if tmp is not None:
        tmp.cleanup()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
