"""Schemathesis over the whole OpenAPI document at scale (issue 18): ≥ 5,000 generated requests,
valid and invalid, with reads open (a write token) and token-only (a read token, and none),
against the API over a throwaway store: embedded, a real Neo4j (tests/support/neo4j_server.py starts
one), or both. Prints cases, failures and server errors per store and configuration.

    python bench/fuzz_api.py [--store embedded|neo4j|both] [--positive 80] [--negative 40]
                             [--stateful 100] [--out fuzz_api.json]

With the defaults one store gets 3 configurations x ~21 operations x (80 + 40) cases, about
7,000 (operations without inputs have no invalid request, so fewer), and then a stateful run per
configuration: ``--stateful`` sequences of calls that follow the OpenAPI links between write and
read routes (``stack_advisor.api.app.LINKS``), every response checked the same way.

The counts are kept as they come: each phase's line is printed when it ends, each store's total
when its last phase ends, and ``--out`` is rewritten after every phase (rows, totals per store and
overall, ``finished``), so a run cut short still leaves what it counted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastapi.testclient import TestClient

from stack_advisor.api.deps import get_store
from stack_advisor.server import create_app
from stack_advisor.store.base import Store
from stack_advisor.store.registry import open_store
from tests.support.api import auth, document, make_settings
from tests.support.fuzz import fuzz, fuzz_stateful, summary


@contextlib.contextmanager
def _store(kind: str) -> Iterator[Store]:
    if kind == "embedded":
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(f"embedded:{tmp}/kb")
            try:
                yield store
            finally:
                store.close()
        return
    from tests.support.neo4j_server import neo4j_server

    with neo4j_server() as uri:
        store = open_store(uri, migrate=False)
        store.clear()  # type: ignore[attr-defined]
        store.ensure_schema()
        try:
            yield store
        finally:
            store.close()


def _totals(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Cases, failures, server errors and seconds per store and over all stores."""
    out: dict[str, dict[str, Any]] = {}
    for key in [*dict.fromkeys(r["store"] for r in rows), "all"]:
        mine = [r for r in rows if key in ("all", r["store"])]
        out[key] = {
            "phases": len(mine),
            "cases": sum(r["cases"] for r in mine),
            "failures": sum(r["failures"] for r in mine),
            "server_errors": sum(r["server_errors"] for r in mine),
            "seconds": round(sum(r["seconds"] for r in mine), 1),
        }
    return out


def _record(out: Path, rows: list[dict[str, Any]], meta: dict[str, Any], *, finished: bool) -> None:
    """Rewrite ``out`` (atomically) with every phase counted so far."""
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(
        json.dumps({**meta, "finished": finished, "totals": _totals(rows), "rows": rows}, indent=1)
    )
    tmp.replace(out)


def _print_total(kind: str, total: dict[str, Any]) -> None:
    print(
        f"TOTAL {kind}: phases={total['phases']} cases={total['cases']} "
        f"failures={total['failures']} server_errors={total['server_errors']} "
        f"({total['seconds']:.0f} s)",
        flush=True,
    )


def _run_store(
    kind: str, positive: int, negative: int, stateful: int, rows: list[dict[str, Any]], record: Any
) -> None:
    tokens = {scope: secrets.token_urlsafe(24) for scope in ("read", "write", "admin")}
    with _store(kind) as store:
        for label, read_auth, headers in (
            ("reads open, write token", "open", auth(tokens["write"])),
            ("reads token-only, read token", "token", auth(tokens["read"])),
            ("reads token-only, no token", "token", {}),
        ):
            app = create_app(
                make_settings(tokens, read_auth=read_auth, metrics_auth=read_auth), store=store
            )
            app.dependency_overrides[get_store] = lambda: store
            with TestClient(app) as client:  # some data, and the models fitted, before fuzzing
                client.post(
                    "/v1/observations",
                    json=document("run-fuzz", n=5),
                    headers=auth(tokens["write"]),
                )
            runs = [
                (
                    "",
                    lambda app=app, headers=headers: fuzz(
                        app, headers, positive, negative, seed_offset=1
                    ),
                )
            ]
            if stateful:
                runs.append(
                    (
                        " [stateful]",
                        lambda app=app, headers=headers: fuzz_stateful(app, headers, stateful),
                    )
                )
            for suffix, run in runs:
                start = time.perf_counter()
                result = run()
                seconds = time.perf_counter() - start
                rows.append(
                    {
                        "store": kind,
                        "config": label + suffix,
                        **summary(result),
                        "seconds": round(seconds, 1),
                        "failure_details": result.failures,
                    }
                )
                print(
                    f"{kind:8s} {label + suffix:41s} cases={result.cases:6d} "
                    f"failures={len(result.failures)} 5xx={result.server_errors} "
                    f"({seconds:.0f} s)",
                    flush=True,
                )
                for failure in result.failures:
                    print("   ", failure[:300], flush=True)
                record()
            pool = getattr(app.state, "answers", None)
            if pool is not None:
                pool.close()  # the configuration's answer worker
    _print_total(kind, _totals([r for r in rows if r["store"] == kind])[kind])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("embedded", "neo4j", "both"), default="embedded")
    parser.add_argument("--positive", type=int, default=80, help="valid cases per operation")
    parser.add_argument("--negative", type=int, default=40, help="invalid cases per operation")
    parser.add_argument(
        "--stateful",
        type=int,
        default=100,
        help="sequences of linked calls per configuration (0: none)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("fuzz_api.json"),
        help="JSON file rewritten after every phase with the counts so far",
    )
    args = parser.parse_args()
    kinds = ("embedded", "neo4j") if args.store == "both" else (args.store,)
    meta = {
        "stores": list(kinds),
        "positive": args.positive,
        "negative": args.negative,
        "stateful": args.stateful,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    rows: list[dict[str, Any]] = []
    for kind in kinds:
        _run_store(
            kind,
            args.positive,
            args.negative,
            args.stateful,
            rows,
            lambda: _record(args.out, rows, meta, finished=False),
        )
    _record(args.out, rows, meta, finished=True)
    totals = _totals(rows)
    for kind in kinds:
        _print_total(kind, totals[kind])
    _print_total("all stores", totals["all"])
    print(f"counts written to {args.out}", flush=True)
    return 0 if not any(r["failures"] or r["server_errors"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
