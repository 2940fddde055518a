"""Recovery after a Neo4j kill -9 and restart under steady traffic (issue 46): a local Neo4j 5.26
with a small knowledge base (the starter KB's resnet50 and bert-99 results), a real
``advisor serve --store bolt://...``, ``--rate`` reads a second over the recommend page, the
leaderboard, the observations list and the recommend API; Neo4j is killed with SIGKILL and
started again on the same data. Prints the seconds from the database answering ``RETURN 1`` (on a
fresh connection) to the API's first 200, and the share of 200s among the reads sent after it.
Goal: the first 200 within 5 s, >= 95% 200s after it.

    python bench/neo4j_restart_recovery.py [--rate 10] [--after 30] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stack_advisor.store.registry import open_store
from tests.support.neo4j_server import LocalNeo4j
from tests.support.restart_recovery import measure, seed_small_kb
from tests.support.servers import ServedAPI


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rate", type=float, default=10.0, help="reads a second")
    parser.add_argument("--after", type=float, default=30.0, help="seconds of traffic after")
    parser.add_argument("--timeout", type=float, default=10.0, help="a read's time limit (s)")
    parser.add_argument("--repeat", type=int, default=1, help="kill/restart cycles")
    parser.add_argument("--log", type=Path, help="keep advisor serve's log here")
    parser.add_argument("--timeline", action="store_true", help="statuses per second too")
    args = parser.parse_args()
    started = time.monotonic()

    def say(text: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {text}", file=sys.stderr, flush=True)

    tokens = {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}
    neo4j = LocalNeo4j()
    neo4j.start()
    store = open_store(neo4j.uri)
    try:
        say(f"seeded {seed_small_kb(store)} results into {neo4j.uri}")
    finally:
        store.close()
    with tempfile.TemporaryDirectory() as tmp:
        api = ServedAPI(
            neo4j.uri, tokens, log=args.log or Path(tmp) / "serve.log", ADVISOR_READ_AUTH="open"
        ).start(timeout=120)
        try:
            print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
            for cycle in range(args.repeat):
                recovery = measure(
                    neo4j,
                    api.url,
                    token=tokens["read"],
                    rate=args.rate,
                    timeout_s=args.timeout,
                    after_s=args.after,
                    log=say,
                )
                print(f"-- cycle {cycle + 1} (rate {args.rate:g}/s, read limit {args.timeout:g} s)")
                for line in recovery.lines() + (recovery.timeline() if args.timeline else []):
                    print(line)
                first = recovery.first_200_s
                met = first is not None and first <= 5.0 and recovery.share_200_after >= 0.95
                print(f"goal (first 200 <= 5 s, >= 95% 200s after): {'met' if met else 'MISSED'}")
            print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        finally:
            api.stop()
            neo4j.remove()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
