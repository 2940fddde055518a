"""The stack effect checked on a sweep's own measurements, held out by repeat.

For every sweep in the result documents given (default: ``data/results/*sweep*.json``, the sweeps
our collectors ran on lent GPUs), each cell's runs are split in time order: the earlier half is
the knowledge base the advisor learns from, the later half is held out. Then, per pair of cells
of one framework at two versions (an upgrade measured on one node):

- **per benchmark identity**: the ratio ``advisor compare sweep`` measures on the learning half
  (what a pair of ``stack_advisor.advisor.estimate.stack_effect`` is) against the held-out half's
  ratio and its 95% interval (``stack_advisor.advisor.verbs.sweep.sweep_report``, the path of
  ``compare sweep``);
- **the pooled factor**: what a carry-forward applies (``StackEffects.upgrade``: the median of the
  pairs in the scope family / vendor / framework / direction, with its interval), learned from the
  learning half's store through ``Advisor.evidence``, applied to every held-out identity, judged
  against the simplest baseline, no change (ratio 1), on the same rows.

It also prints what each framework build measured on identical work (the benchmark identity less
its backend): which build does a GEMM, a convolution or a copy fastest on that node.

    python bench/sweep_factors.py [FILES...]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import itertools

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate.stack_effect import effects_of
from stack_advisor.advisor.verbs.sweep import sweep_report
from stack_advisor.schema.models import ResultDocument
from stack_advisor.store.registry import open_store

ROOT = Path(__file__).resolve().parent.parent


def split_documents(
    documents: list[ResultDocument],
) -> tuple[list[ResultDocument], list[ResultDocument]]:
    """Each (sweep, cell)'s runs in time order: the earlier half to learn from, the rest held out.
    Failure-only documents (unsupported, install) go to both."""
    runs: dict[tuple[str, str], list[str]] = defaultdict(list)
    started: dict[str, Any] = {}
    for doc in documents:
        if doc.measurements:
            details = doc.provenance.details
            key = (details.get("sweep", ""), details.get("sweep_cell", ""))
            if doc.run.run_id not in runs[key]:
                runs[key].append(doc.run.run_id)
                started[doc.run.run_id] = doc.run.started_at
    learn: set[str] = set()
    for ids in runs.values():
        ordered = sorted(ids, key=lambda r: started[r])
        learn.update(ordered[: max(1, len(ordered) // 2)])
    first = [d for d in documents if not d.measurements or d.run.run_id in learn]
    second = [d for d in documents if not d.measurements or d.run.run_id not in learn]
    return first, second


def upgrade_cells(report: Any) -> list[tuple[str, str, str]]:
    """(framework, older cell, newer cell) for each framework measured at two versions."""
    by_fw: dict[str, list[tuple[tuple[int, ...], str]]] = defaultdict(list)
    for cell in report.cells:
        fw, _, version = cell.stack.split(",")[0].strip().partition(" ")
        parts = tuple(int(p) for p in version.split("+")[0].split(".") if p.isdigit())
        if fw and parts:
            by_fw[fw].append((parts, cell.cell))
    out = []
    for fw, cells in by_fw.items():
        ordered = sorted(cells)
        out += [(fw, a, b) for (_, a), (_, b) in itertools.pairwise(ordered)]
    return out


def load(paths: list[Path]) -> list[ResultDocument]:
    docs = []
    for path in paths:
        data = json.loads(path.read_text())
        docs += [
            ResultDocument.model_validate(d) for d in (data if isinstance(data, list) else [data])
        ]
    return docs


def check(paths: list[Path]) -> int:
    documents = load(paths)
    learn_docs, held_docs = split_documents(documents)
    print(
        f"{len(documents)} documents from {len(paths)} file(s); "
        f"learning half {sum(len(d.measurements) for d in learn_docs)} measurements, "
        f"held out {sum(len(d.measurements) for d in held_docs)}"
    )
    with (
        tempfile.TemporaryDirectory() as tmp,
        open_store(f"embedded:{tmp}/learn") as learn,
        open_store(f"embedded:{tmp}/held") as held,
    ):
        for store, docs in ((learn, learn_docs), (held, held_docs)):
            for doc in docs:
                store.ingest_document(doc)
        sweeps = sorted(
            {
                d.provenance.details.get("sweep")
                for d in documents
                if d.provenance.details.get("sweep")
            }
        )
        effects = effects_of(Advisor(learn).evidence())
        for sweep in sweeps:
            check_sweep(sweep, learn, held, effects)
            frameworks_side_by_side(sweep, documents)
    return 0


def check_sweep(sweep: str, learn: Any, held: Any, effects: Any) -> None:
    for fw, old, new in upgrade_cells(sweep_report(held, sweep)):
        print(f"\n## {sweep}: {fw} {old} -> {new} (speed of {new} over {old}; > 1 faster)")
        learned = {
            (r.benchmark, r.parameters, r.metric): r
            for r in sweep_report(learn, sweep, baseline=old).ratios
            if r.cell == new
        }
        rows = [r for r in sweep_report(held, sweep, baseline=old).ratios if r.cell == new]
        print(
            "| benchmark | parameters | learned (first half) | held out (second half) | "
            "95% interval | off by | held |"
        )
        print("|---|---|---|---|---|---|---|")
        inside, off = 0, []
        for r in rows:
            seen = learned.get((r.benchmark, r.parameters, r.metric))
            if seen is None:
                continue
            ok = r.low <= seen.ratio <= r.high
            inside += ok
            off.append(abs(seen.ratio / r.ratio - 1))
            print(
                f"| {r.benchmark} | {r.parameters} | {seen.ratio:.3f} | {r.ratio:.3f} | "
                f"{r.low:.3f}..{r.high:.3f} | "
                f"{off[-1]:.1%} | {'yes' if ok else 'no'} |"
            )
        if off:
            print(
                "per identity: learned ratio off the held-out one by median "
                f"{statistics.median(off):.1%}, "
                f"at most {max(off):.1%}; inside the held-out 95% interval for {inside} "
                f"of {len(off)}"
            )
        pooled_check(effects, rows, fw)


def pooled_check(effects: Any, rows: list[Any], fw: str) -> None:
    """The factor a carry-forward would apply, against the held-out ratios, beside no change."""
    vendors = {key[1] for key in effects.upgrades if key[2] == fw}
    for vendor in sorted(vendors):
        factor = next(
            (f for key, f in effects.upgrades.items() if key[1] == vendor and key[2] == fw), None
        )
        if factor is None or not rows:
            continue
        err = [abs(math.log(factor.ratio) - math.log(r.ratio)) for r in rows]
        base = [abs(math.log(r.ratio)) for r in rows]
        held = sum(factor.spread_low <= r.ratio <= factor.spread_high for r in rows)
        print(f"pooled factor {factor.describe()}")
        print(
            f"  on {len(rows)} held-out identities: mean |log error| {statistics.mean(err):.3f} "
            f"(no change: {statistics.mean(base):.3f}); median {statistics.median(err):.3f} "
            f"(no change: {statistics.median(base):.3f}); pairs' p10..p90 holds {held} "
            f"of {len(rows)}"
        )


def frameworks_side_by_side(sweep: str, documents: list[ResultDocument]) -> None:
    """Median per (identity less backend, cell): the same work through each framework build."""
    values: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for doc in documents:
        if doc.provenance.details.get("sweep") != sweep:
            continue
        label = f"{doc.stack.framework} {doc.stack.framework_version}"
        for m in doc.measurements:
            params = {
                k: v for k, v in m.benchmark.parameters.items() if k not in ("backend", "framework")
            }
            ident = ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
            values[(m.benchmark.name, ident, m.metric)][label].append(m.value)
    shared = {k: v for k, v in values.items() if len(v) > 1}
    if not shared:
        return
    cells = sorted({c for v in shared.values() for c in v})
    print(f"\n## {sweep}: the same work through each framework build (median of runs)")
    print("| benchmark | parameters | metric | " + " | ".join(cells) + " |")
    print("|---|---|---|" + "---|" * len(cells))
    for (name, ident, metric), by_cell in sorted(shared.items()):
        cols = [f"{statistics.median(by_cell[c]):.1f}" if c in by_cell else "-" for c in cells]
        print(f"| {name} | {ident} | {metric} | " + " | ".join(cols) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    files = args.files or sorted((ROOT / "data" / "results").glob("*sweep*.json"))
    if not files:
        print("no sweep result documents (data/results/*sweep*.json)")
        return 1
    return check(files)


if __name__ == "__main__":
    sys.exit(main())
