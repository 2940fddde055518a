#!/usr/bin/env python
"""Rebuild the starter knowledge base snapshot from its sources only.

Sources:
  * MLPerf Inference published results: every ``inference_v*.tar.gz`` (or round directory) in
    MLPERF_DIR (default ../shared/data/mlperf relative to the repository root), imported with
    ``stack_advisor.collectors.importers.mlperf`` exactly as ``advisor import mlperf`` does;
  * MLPerf Training published results: every ``training_v*.tar.gz`` (or round directory) in
    TRAINING_DIR (default ../shared/data/mlperf-training), imported with
    ``stack_advisor.collectors.importers.mlperf_training`` exactly as ``advisor import
    mlperf-training`` does;
  * the project's own measured runs: every collector result document in ``data/results/*.json``.

Writes stack_advisor/store/data/starter-kb-v<N>.json.gz (gzip'd JSON: a manifest plus IngestBatch
fields), deterministic for the same inputs apart from the build date, and beside it the embedded
store that snapshot seeds, ``starter-kb-v<N>.kb.gz`` with its stamp ``starter-kb-v<N>.kb.json``
(``stack_advisor.store.starter_store``: a fresh install copies it instead of ingesting);
``--store-only`` rebuilds just those two from the snapshot already at --out.

    python scripts/build_starter_kb.py [MLPERF_DIR] [--training DIR] [--results DIR] [--out FILE]
    python scripts/build_starter_kb.py --store-only
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.catalog.canonical import canonical_batch
from stack_advisor.collectors.importers import mlperf_training
from stack_advisor.collectors.importers.mlperf import (
    ATTRIBUTION,
    expand_sources,
    read_tree,
    to_observations,
)
from stack_advisor.collectors.importers.results import documents_batch, load_documents
from stack_advisor.schema.models import IngestBatch
from stack_advisor.store import starter_store
from stack_advisor.store.starter import SNAPSHOT_NAME, STARTER_VERSION

ROOT = Path(__file__).resolve().parents[1]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def mlperf_sources(directory: Path) -> list[Path]:
    return [p for p in expand_sources(directory) if p != directory]


def training_sources(directory: Path | None) -> list[Path]:
    if directory is None or not directory.is_dir():
        return []
    return sorted(
        p
        for p in directory.iterdir()
        if (
            p.is_file() and p.name.startswith("training_v") and p.name.endswith((".tar.gz", ".tgz"))
        )
        or (p.is_dir() and p.name.startswith("training_v"))
    )


def starter_training(batch: IngestBatch) -> IngestBatch:
    """What of a Training round the starter KB ships: the per system × benchmark scores (time to
    train, accelerator-hours) and the failed runs with their Run; each successful run's own time
    stays with ``advisor import mlperf-training`` (1,249 runs would slow a fresh install's
    seeding)."""
    failed = {f.run_id for f in batch.failures}
    return IngestBatch(
        observations=[o for o in batch.observations if o.run_id is None],
        failures=batch.failures,
        runs=[r for r in batch.runs if r.run_id in failed],
    )


def build(
    mlperf_dir: Path, results_dir: Path, training_dir: Path | None = None
) -> tuple[dict[str, Any], IngestBatch]:
    batch = IngestBatch()
    sources: list[dict[str, Any]] = []

    rounds: list[dict[str, Any]] = []
    for path in mlperf_sources(mlperf_dir):
        tree = read_tree(path)
        cache: dict = {}
        observations = [o for r in tree.records for o in to_observations(r, cache)]
        batch.observations.extend(observations)
        rounds.append(
            {
                "round": tree.round,
                "file": path.name,
                "sha256": _sha256(path) if path.is_file() else None,
                "url": f"https://github.com/mlcommons/inference_results_{tree.round}",
                "observations": len(observations),
                "skipped": len(tree.skipped),
                "failed": len(tree.failed),
            }
        )
        print(
            f"{path.name}: {len(observations)} observations, {len(tree.skipped)} skipped, "
            f"{len(tree.failed)} failed",
            file=sys.stderr,
        )
    if rounds:
        sources.append(
            {
                "source": "mlperf-inference",
                "kind": "published",
                "publisher": "MLCommons",
                "license": "Apache-2.0",
                "attribution": ATTRIBUTION,
                "rounds": rounds,
            }
        )

    training_rounds: list[dict[str, Any]] = []
    for path in training_sources(training_dir):
        tree = mlperf_training.read_training_tree(path)
        training = starter_training(mlperf_training.to_batch(tree))
        batch.observations.extend(training.observations)
        batch.failures.extend(training.failures)
        batch.runs.extend(training.runs)
        training_rounds.append(
            {
                "round": tree.round,
                "file": path.name,
                "sha256": _sha256(path) if path.is_file() else None,
                "url": f"https://github.com/mlcommons/training_results_{tree.round}",
                "runs": len(tree.runs),
                "failed_runs": len(training.failures),
                "observations": len(training.observations),
                "issues": len(tree.issues),
            }
        )
        print(
            f"{path.name}: {len(tree.runs)} runs, {len(training.observations)} observations, "
            f"{len(training.failures)} failed runs, {len(tree.issues)} issues",
            file=sys.stderr,
        )
    if training_rounds:
        sources.append(
            {
                "source": mlperf_training.SOURCE,
                "kind": "published",
                "publisher": "MLCommons",
                "license": "Apache-2.0",
                "attribution": mlperf_training.ATTRIBUTION,
                "note": mlperf_training.RCP_NOTE,
                "rounds": training_rounds,
            }
        )

    documents = []
    files = sorted(results_dir.glob("*.json")) if results_dir.is_dir() else []
    for file in files:
        docs = load_documents(file)
        documents.extend(docs)
    if files:
        measured = documents_batch(documents)
        batch.observations.extend(measured.observations)
        batch.failures.extend(measured.failures)
        batch.runs.extend(measured.runs)
        sources.append(
            {
                "source": "stack-advisor measured runs",
                "kind": "measured",
                "files": [
                    {
                        "file": str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f),
                        "sha256": _sha256(f),
                    }
                    for f in files
                ],
                "documents": len(documents),
                "observations": len(measured.observations),
                "failures": len(measured.failures),
            }
        )
        print(
            f"{results_dir}: {len(documents)} documents, {len(measured.observations)} "
            "observations, "
            f"{len(measured.failures)} failures",
            file=sys.stderr,
        )

    # Catalogue names, as a store keeps them (the raw names stay in the provenance).
    batch = canonical_batch(batch)
    # Stable order, one entry per key (what a store would keep).
    unique = {o.observation_key: o for o in batch.observations}
    batch.observations = [unique[k] for k in sorted(unique)]
    failures = {f.failure_key: f for f in batch.failures}
    batch.failures = [failures[k] for k in sorted(failures)]
    runs = {r.run_id: r for r in batch.runs}
    batch.runs = [runs[k] for k in sorted(runs)]

    by_source = Counter(o.provenance.source for o in batch.observations)
    manifest = {
        "name": "stack-advisor starter knowledge base",
        "version": STARTER_VERSION,
        "built_at": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "builder": "scripts/build_starter_kb.py",
        "counts": {
            "observations": len(batch.observations),
            "failures": len(batch.failures),
            "runs": len(batch.runs),
            "observations_by_source": dict(sorted(by_source.items())),
        },
        "sources": sources,
        "attribution": ATTRIBUTION,
        "notice": "Published figures are MLPerf results as submitted; compare within a round and "
        "a benchmark (metrics changed meaning across rounds).",
    }
    return manifest, batch


def write(manifest: dict[str, Any], batch: IngestBatch, out: Path) -> int:
    body = {"manifest": manifest, **batch.model_dump(mode="json", exclude_defaults=True)}
    for key in ("observations", "failures", "runs"):
        body.setdefault(key, [])
    text = json.dumps(body, separators=(",", ":"), sort_keys=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    with (
        out.open("wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as handle,
    ):
        handle.write(text.encode("utf-8"))
    return out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "mlperf_dir", nargs="?", type=Path, default=ROOT.parent / "shared" / "data" / "mlperf"
    )
    parser.add_argument(
        "--training",
        type=Path,
        default=ROOT.parent / "shared" / "data" / "mlperf-training",
        help="folder of MLPerf Training rounds (training_v*.tar.gz); skipped when absent",
    )
    parser.add_argument("--results", type=Path, default=ROOT / "data" / "results")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "stack_advisor" / "store" / "data" / SNAPSHOT_NAME
    )
    parser.add_argument(
        "--store-only",
        action="store_true",
        help="only rebuild the prebuilt starter store from the snapshot at --out",
    )
    args = parser.parse_args(argv)
    if not args.store_only:
        if not args.mlperf_dir.is_dir():
            parser.error(f"MLPerf directory {str(args.mlperf_dir)!r} does not exist")
        manifest, batch = build(args.mlperf_dir, args.results, args.training)
        size = write(manifest, batch, args.out)
        print(json.dumps({"out": str(args.out), "bytes": size, **manifest["counts"]}, indent=2))
    # the snapshot seeded into an embedded store, as a first run would: shipped beside it so a
    # fresh install copies it (stack_advisor.store.starter_store)
    store = starter_store.build(args.out.parent, args.out)
    print(json.dumps({"store": str(store), "bytes": store.stat().st_size}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
