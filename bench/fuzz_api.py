"""Schemathesis over the whole OpenAPI document at scale (issue 18): ≥ 5,000 generated requests,
valid and invalid, with reads open (a write token) and token-only (a read token, and none),
against the API over a throwaway store: embedded, a real Neo4j (tests/support/neo4j_server.py starts
one), or both. Prints cases, failures and server errors per store and configuration.

    python bench/fuzz_api.py [--store embedded|neo4j|both] [--positive 80] [--negative 40]
                             [--stateful 100]

With the defaults one store gets 3 configurations x ~21 operations x (80 + 40) cases, about
7,000 (operations without inputs have no invalid request, so fewer), and then a stateful run per
configuration: ``--stateful`` sequences of calls that follow the OpenAPI links between write and
read routes (``advisor.api.app.LINKS``), every response checked the same way.
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

from advisor.api.app import create_app
from advisor.api.deps import get_store
from graph_schema.registry import open_store
from graph_schema.store import Store
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


def _run_store(kind: str, positive: int, negative: int, stateful: int) -> list[dict[str, Any]]:
    tokens = {scope: secrets.token_urlsafe(24) for scope in ("read", "write", "admin")}
    rows = []
    with _store(kind) as store:
        for label, read_auth, headers in (("reads open, write token", "open", auth(tokens["write"])),
                                          ("reads token-only, read token", "token", auth(tokens["read"])),
                                          ("reads token-only, no token", "token", {})):
            app = create_app(make_settings(tokens, read_auth=read_auth, metrics_auth=read_auth),
                             store=store)
            app.dependency_overrides[get_store] = lambda: store
            with TestClient(app) as client:  # some data, and the models fitted, before fuzzing
                client.post("/v1/observations", json=document("run-fuzz", n=5),
                            headers=auth(tokens["write"]))
            runs = [("", lambda app=app, headers=headers: fuzz(app, headers, positive, negative,
                                                              seed_offset=1))]
            if stateful:
                runs.append((" [stateful]",
                             lambda app=app, headers=headers: fuzz_stateful(app, headers,
                                                                            stateful)))
            for suffix, run in runs:
                start = time.perf_counter()
                result = run()
                seconds = time.perf_counter() - start
                rows.append({"store": kind, "config": label + suffix, **summary(result),
                             "seconds": round(seconds, 1), "failure_details": result.failures})
                print(f"{kind:8s} {label + suffix:41s} cases={result.cases:6d} "
                      f"failures={len(result.failures)} 5xx={result.server_errors} "
                      f"({seconds:.0f} s)", flush=True)
                for failure in result.failures:
                    print("   ", failure[:300], flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("embedded", "neo4j", "both"), default="embedded")
    parser.add_argument("--positive", type=int, default=80, help="valid cases per operation")
    parser.add_argument("--negative", type=int, default=40, help="invalid cases per operation")
    parser.add_argument("--stateful", type=int, default=100,
                        help="sequences of linked calls per configuration (0: none)")
    args = parser.parse_args()
    kinds = ("embedded", "neo4j") if args.store == "both" else (args.store,)
    rows = [row for kind in kinds for row in _run_store(kind, args.positive, args.negative, args.stateful)]
    for kind in kinds:
        mine = [r for r in rows if r["store"] == kind]
        print(f"TOTAL {kind}: cases={sum(r['cases'] for r in mine)} "
              f"failures={sum(r['failures'] for r in mine)} "
              f"server_errors={sum(r['server_errors'] for r in mine)} "
              f"({sum(r['seconds'] for r in mine):.0f} s)")
    print(json.dumps(rows, indent=1))
    return 0 if not any(r["failures"] or r["server_errors"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
