"""Schemathesis over the whole OpenAPI document at scale (issue 18): ≥ 5,000 generated requests,
valid and invalid, with reads open (a write token) and token-only (a read token, and none),
against the API over a throwaway embedded store. Prints cases, failures and server errors.

    python bench/fuzz_api.py [--positive 80] [--negative 40]
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastapi.testclient import TestClient

from advisor.api.app import create_app
from advisor.api.deps import get_store
from graph_schema.registry import open_store
from tests.advisor.api.conftest import auth, document, make_settings
from tests.advisor.api.fuzz import fuzz, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positive", type=int, default=80, help="valid cases per operation")
    parser.add_argument("--negative", type=int, default=40, help="invalid cases per operation")
    args = parser.parse_args()
    tokens = {scope: secrets.token_urlsafe(24) for scope in ("read", "write", "admin")}
    total_cases = total_failures = total_5xx = 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"embedded:{tmp}/kb")
        for label, read_auth, headers in (("reads open, write token", "open", auth(tokens["write"])),
                                          ("reads token-only, read token", "token", auth(tokens["read"])),
                                          ("reads token-only, no token", "token", {})):
            app = create_app(make_settings(tokens, read_auth=read_auth, metrics_auth=read_auth),
                             store=store)
            app.dependency_overrides[get_store] = lambda: store
            with TestClient(app) as client:  # some data, and the models fitted, before fuzzing
                client.post("/v1/observations", json=document("run-fuzz", n=5),
                            headers=auth(tokens["write"]))
            start = time.perf_counter()
            result = fuzz(app, headers, args.positive, args.negative, seed_offset=1)
            seconds = time.perf_counter() - start
            rows.append({"config": label, **summary(result), "seconds": round(seconds, 1),
                         "failure_details": result.failures})
            total_cases += result.cases
            total_failures += len(result.failures)
            total_5xx += result.server_errors
            print(f"{label:32s} cases={result.cases:6d} failures={len(result.failures)} "
                  f"5xx={result.server_errors} ({seconds:.0f} s)", flush=True)
            for failure in result.failures:
                print("   ", failure[:300])
        store.close()
    print(f"TOTAL cases={total_cases} failures={total_failures} server_errors={total_5xx}")
    print(json.dumps(rows, indent=1))
    return 0 if total_failures == 0 and total_5xx == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
