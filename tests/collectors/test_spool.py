"""Collectors never lose results: spool while the API is down, re-send after it is back, and the
stored count is exact (no loss, no duplicates) across a real server stop and restart."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import httpx
import pytest

from stack_advisor.collectors.spool import deliver, flush, pending, spool
from stack_advisor.schema.errors import InvalidInput
from tests.support.api import document
from tests.support.servers import ServedAPI, free_port


@pytest.fixture
def tokens() -> dict[str, str]:
    return {s: secrets.token_urlsafe(24) for s in ("read", "write", "admin")}


def _count(api: ServedAPI) -> int:
    body = httpx.get(api.url + "/v1/stats", timeout=10).json()
    return int(body["counts"].get("Observation", 0))


@pytest.mark.slow
def test_spool_and_resend_across_a_restart(tmp_path: Path, tokens: dict[str, str]) -> None:
    spool_dir = tmp_path / "spool"
    api = ServedAPI(f"embedded:{tmp_path / 'kb'}", tokens, log=tmp_path / "serve.log")
    write = tokens["write"]
    docs = [document(f"run-{i}", n=3, value=10.0 * i) for i in range(6)]

    # API not running yet: both documents are spooled, in order
    for doc in docs[:2]:
        result = deliver(doc, api.url, write, spool_dir, timeout=2)
        assert result.status == "spooled", result
    assert len(pending(spool_dir)) == 2

    with api:
        # a delivery while up goes straight through
        assert deliver(docs[2], api.url, write, spool_dir).status == "delivered"
        flushed = flush(api.url, write, spool_dir)
        assert (flushed.sent, flushed.remaining, flushed.rejected) == (2, 0, 0)
        assert flushed.observations_new == 6
        assert pending(spool_dir) == []
        assert _count(api) == 9

    # stopped: spooled again
    for doc in docs[3:]:
        assert deliver(doc, api.url, write, spool_dir, timeout=2).status == "spooled"
    # a flush against a stopped server keeps everything, in order
    kept = flush(api.url, write, spool_dir, timeout=2)
    assert (kept.sent, kept.remaining) == (0, 3)

    with api:  # restarted on the same store
        assert _count(api) == 9
        # re-sending a document already stored (a reply lost after the write) adds nothing
        spool(docs[0], spool_dir)
        done = flush(api.url, write, spool_dir)
        assert (done.sent, done.remaining) == (4, 0)
        assert done.observations_new == 9
        assert _count(api) == 18  # 6 documents × 3 measurements, each exactly once


@pytest.mark.slow
def test_wrong_token_is_spooled_and_invalid_documents_are_kept_aside(
    tmp_path: Path, tokens: dict[str, str]
) -> None:
    spool_dir = tmp_path / "spool"
    with ServedAPI(f"embedded:{tmp_path / 'kb'}", tokens, log=tmp_path / "serve.log") as api:
        # a read token cannot write: a fixable problem, so the document waits in the spool
        r = deliver(document("run-x"), api.url, tokens["read"], spool_dir)
        assert r.status == "spooled" and r.http_status == 403
        assert flush(api.url, tokens["write"], spool_dir).sent == 1

        # the server rejects a document this client thought valid (too big here): kept aside
        small = ServedAPI(
            f"embedded:{tmp_path / 'kb2'}",
            tokens,
            log=tmp_path / "serve2.log",
            ADVISOR_MAX_BODY_BYTES="2048",
        )
        with small:
            r = deliver(document("run-big", n=20), small.url, tokens["write"], spool_dir)
        assert r.status == "rejected" and r.http_status == 413
        kept = Path(str(r.path))
        assert (
            kept.parent.name == "rejected"
            and json.loads(kept.read_text())["run"]["run_id"] == "run-big"
        )
        assert "413" in kept.with_suffix(".error.txt").read_text()
        assert pending(spool_dir) == []


def test_malformed_documents_fail_before_sending(tmp_path: Path) -> None:
    doc = document("run-bad")
    doc["measurements"][0]["value"] = "fast"
    with pytest.raises(InvalidInput, match=r"measurements\.0\.value"):
        deliver(doc, f"http://127.0.0.1:{free_port()}", None, tmp_path)
    assert pending(tmp_path) == []


def test_spool_writes_are_atomic_and_deduplicated(tmp_path: Path) -> None:
    doc = document("run-dup")
    first = spool(doc, tmp_path)
    assert spool(doc, tmp_path) == first
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temp files left behind
    # a stray temp file from a crash mid-write is never sent
    (tmp_path / ".half-written.tmp").write_text("{")
    assert pending(tmp_path) == [first]
