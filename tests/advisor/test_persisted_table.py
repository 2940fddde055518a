"""The observation table persisted per store generation
(stack_advisor.advisor.knowledge.table_file): equal to what the store gives, invalidated by any
write, never trusted when damaged, and served to a fresh process without heavy imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.knowledge import table_file
from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.base import Store
from stack_advisor.store.starter import load_snapshot
from tests.support.tables import assert_same_table

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(
        Advisor,
        "caches",
        CacheFolders(tables=tmp_path / "tables", calibration=tmp_path / "calibration"),
    )
    return tmp_path


def _part(start: int, stop: int) -> IngestBatch:
    """A slice of the starter snapshot's real observations (MLPerf results, our own runs)."""
    return IngestBatch(observations=load_snapshot().observations[start:stop])


def _rows(start: int, stop: int) -> int:
    """How many rows that slice makes: a table holds the valid observations only (an INVALID
    LoadGen run of ours is kept in the store, not ranked)."""
    return sum(o.valid for o in load_snapshot().observations[start:stop])


def row_set(table: ObservationTable) -> list[tuple[object, ...]]:
    """The table's rows decoded, in key order: an appended table holds them in the order they
    were added, a full read in key order."""
    cols = [getattr(table, name).values() for name in table_file.COLUMNS]
    nums = [getattr(table, name).tolist() for name in table_file.NUMERIC]
    return sorted(zip(table.keys, *nums, *cols))


def _fresh_table(store: Store) -> ObservationTable:
    """The table a new process would get (a new Advisor: nothing in memory)."""
    return Advisor(store).table()


def _persisted(store: Store) -> Path:
    path = table_file.table_path(store.uri, Advisor.caches.tables)
    assert path is not None
    return path


def test_persisted_table_equals_the_table_built_from_the_store(
    store: Store, caches: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.ingest(_part(0, 400))
    generation = Advisor(store).store_generation()
    built = table_file.build_table(store, generation)
    first = _fresh_table(store)  # reads the store, writes the file
    assert _persisted(store).exists()
    assert_same_table(first, built)

    def no_store_reads(*_: object) -> None:
        raise AssertionError("the table was read from the store although its file matches")

    monkeypatch.setattr(table_file, "build_table", no_store_reads)
    loaded = _fresh_table(store)
    assert_same_table(loaded, built)
    assert loaded.digest == table_file.content_digest(built)


def test_a_write_invalidates_the_persisted_table(store: Store, caches: Path) -> None:
    store.ingest(_part(0, 300))
    before = _fresh_table(store)
    assert before.n == _rows(0, 300)
    store.ingest(_part(300, 420))  # a new generation
    after = _fresh_table(store)
    assert after.n == _rows(0, 420) and after.generation > before.generation
    assert row_set(after) == row_set(table_file.build_table(store, after.generation))
    # the file now holds the new generation: a third process reads it
    again = _fresh_table(store)
    assert_same_table(again, after)


def test_a_store_emptied_and_refilled_to_the_same_generation_is_not_answered_from_the_old_file(
    store: Store, caches: Path
) -> None:
    store.ingest(_part(0, 200))
    old = _fresh_table(store)
    store.clear()  # type: ignore[attr-defined]
    store.ensure_schema()
    store.ingest(_part(500, 650))  # other observations, same generation number as before
    new = _fresh_table(store)
    assert new.generation == old.generation
    assert new.n == 150 and set(new.keys).isdisjoint(old.keys)
    assert_same_table(new, table_file.build_table(store, new.generation))


def test_a_small_ingest_appends_to_the_table_instead_of_reading_the_store(
    store: Store, caches: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.ingest(_part(0, 300))
    held = Advisor(store)
    before = held.table()  # read from the store, persisted
    build = table_file.build_table

    def no_store_reads(*_: object) -> None:
        raise AssertionError("the whole table was read from the store again")

    monkeypatch.setattr(table_file, "build_table", no_store_reads)
    store.ingest(_part(300, 420))  # new accelerators, rounds, stacks among them
    in_memory = held.table()  # from the table this process holds
    from_file = _fresh_table(store)  # a new process: from the persisted file, no reread either
    monkeypatch.setattr(table_file, "build_table", build)
    full = table_file.build_table(store, in_memory.generation)
    assert in_memory.n == _rows(0, 420) and in_memory.generation > before.generation
    assert row_set(in_memory) == row_set(full)
    assert_same_table(from_file, in_memory)  # the appended table was persisted
    for name in table_file.COLUMNS:  # the rows that were there keep their codes
        old, new = getattr(before, name), getattr(in_memory, name)
        assert new.vocab[: len(old.vocab)] == old.vocab, name
        assert np.array_equal(new.codes[: before.n], old.codes), name
    assert in_memory.digest and in_memory.digest != before.digest
    answer = {
        "family": "mlperf-inference",
        "benchmark": "resnet50",
        "parameters": {"scenario": "Offline"},
    }
    appended = held.recommend(answer).recommendations
    # the same answer from a table read whole
    monkeypatch.setattr(Advisor, "caches", CacheFolders(calibration=Advisor.caches.calibration))
    assert [r.model_dump() for r in appended] == [
        r.model_dump() for r in Advisor(store).recommend(answer).recommendations
    ]


def test_a_reset_store_is_read_again_whatever_table_a_process_holds(
    store: Store, caches: Path
) -> None:
    store.ingest(_part(0, 200))
    held = Advisor(store)
    old = held.table()
    store.clear()  # type: ignore[attr-defined]
    store.ensure_schema()
    for start in range(500, 800, 100):  # past the old generation: only the identity tells
        store.ingest(_part(start, start + 100))
    new = held.table()
    assert new.generation > old.generation
    assert new.n == _rows(500, 800) and set(new.keys).isdisjoint(old.keys)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "codes out of range"])
def test_a_damaged_file_is_ignored_and_rebuilt(
    embedded_store: Store, caches: Path, damage: str
) -> None:
    embedded_store.ingest(_part(0, 250))
    good = _fresh_table(embedded_store)
    path = _persisted(embedded_store)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"PK\x03\x04 not really a zip" * 50)
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # a well-formed file whose codes point past the vocabulary
        meta, arrays = table_file.read_arrays(path)
        arrays = dict(arrays, codes_accelerator=arrays["codes_accelerator"] + 10_000)
        with path.open("wb") as handle:
            table_file.write_arrays(handle, meta, arrays)
    rebuilt = _fresh_table(embedded_store)
    assert_same_table(rebuilt, good)
    assert path.read_bytes() != b""  # written again, whole
    assert_same_table(_fresh_table(embedded_store), good)


def test_caching_off_reads_the_store_every_time(
    embedded_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    off = CacheFolders.from_environ({table_file.CACHE_ENV: "0"})
    assert off.tables is None
    monkeypatch.setattr(Advisor, "caches", off)
    embedded_store.ingest(_part(0, 50))
    assert _fresh_table(embedded_store).n == 50
    assert table_file.table_path(embedded_store.uri, off.tables) is None


# ---- a fresh process --------------------------------------------------------------------------

HEAVY = (
    "scipy",
    "sklearn",
    "torch",
    "tensorflow",
    "matplotlib",
    "kubernetes",
    "fastapi",
    "uvicorn",
)

_RUN_CLI = (
    "import json, sys\n"
    "heavy_names = set(json.loads(sys.argv[2]))\n"
    "sys.argv = ['advisor'] + json.loads(sys.argv[1])\n"
    "from stack_advisor.cli.main import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "else:\n"
    "    code = 0\n"
    "heavy = sorted({m.split('.')[0] for m in sys.modules} & heavy_names)\n"
    "print(json.dumps({'code': code, 'heavy': heavy}), file=sys.stderr)\n"
)


def run_cli(args: list[str], env: dict[str, str]) -> tuple[dict[str, object], str, str]:
    done = subprocess.run(
        [sys.executable, "-c", _RUN_CLI, json.dumps(args), json.dumps(HEAVY)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report, done.stdout, done.stderr


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "ADVISOR_TABLE_CACHE": str(tmp_path / "cache" / "tables"),
        "ADVISOR_CALIBRATION_CACHE": str(tmp_path / "cache" / "calibration"),
        "PYTHONPATH": str(REPO),
    }


@pytest.mark.parametrize(
    "args", [["--help"], ["recommend", "--help"], ["db", "--help"], ["plot", "--help"]]
)
def test_help_imports_no_heavy_module(tmp_path: Path, args: list[str]) -> None:
    report, stdout, _ = run_cli(args, _env(tmp_path))
    assert report["code"] == 0
    assert "Usage" in stdout
    assert report["heavy"] == []


def test_a_warm_recommend_imports_no_heavy_module_and_answers_as_the_cold_one(
    tmp_path: Path,
) -> None:
    from stack_advisor.store.registry import open_store

    kb = tmp_path / "kb"
    with open_store(f"embedded:{kb}") as store:
        store.ingest(_part(0, 1500))
    env = _env(tmp_path)
    args = [
        "recommend",
        "--benchmark",
        "resnet50",
        "--scenario",
        "Offline",
        "--json",
        "--store",
        f"embedded:{kb}",
    ]
    cold, cold_out, cold_err = run_cli(args, env)  # reads the store, calibrates, persists both
    assert cold["code"] == 0, cold_err
    warm, warm_out, warm_err = run_cli(args, env)
    assert warm["code"] == 0, warm_err
    assert warm["heavy"] == []
    drop = ("elapsed_ms",)
    a, b = json.loads(cold_out), json.loads(warm_out)
    assert {k: v for k, v in a.items() if k not in drop} == {
        k: v for k, v in b.items() if k not in drop
    }
    assert any(r["basis"] != "observed" for r in b["recommendations"]) or b["recommendations"]
    typo, typo_out, typo_err = run_cli([*args[:2], "resnet5O", *args[3:]], env)
    # the did-you-mean (JSON on stdout with --json), without the heavy imports
    assert typo["code"] == 1 and "resnet50" in typo_out + typo_err
    assert typo["heavy"] == []


def test_first_use_says_what_it_is_doing_on_stderr_only(tmp_path: Path) -> None:
    """A fresh home: the default store is made (one line on a non-terminal stderr), the table
    read and the intervals calibrated, each said once; stdout is the JSON alone. The next call
    is quiet (table and calibration persisted)."""
    env = _env(tmp_path)
    args = ["recommend", "--benchmark", "resnet50", "--scenario", "Offline", "--json", "--top", "2"]
    first, out, err = run_cli(args, env)
    assert first["code"] == 0, err
    json.loads(out)
    lines = [line for line in err.splitlines() if line.startswith("advisor: ")]
    assert [line.split(":")[1].strip().split()[0] for line in lines] == [
        "first",
        "loading",
        "calibrating",
    ], err
    assert "the starter knowledge base" in lines[0]  # unpacked (the shipped store) or seeded
    second, out2, err2 = run_cli(args, env)
    assert second["code"] == 0 and json.loads(out2)
    assert not [line for line in err2.splitlines() if line.startswith("advisor: ")], err2


@pytest.fixture(autouse=True)
def _no_reporter() -> Iterator[None]:
    from stack_advisor.runtime import progress

    previous = progress.set_reporter(None)
    yield
    progress.set_reporter(previous)


def test_progress_on_a_terminal_draws_a_transient_bar_and_elsewhere_one_line() -> None:
    import io

    from stack_advisor.cli.progress import StderrProgress
    from stack_advisor.runtime import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream, expect_lines in ((Terminal(), 0), (io.StringIO(), 1)):
        progress.set_reporter(StderrProgress(stream))
        with progress.phase("seeding", total=10) as update:
            with progress.phase("nested, not shown") as inner:
                inner(1)
            for done in range(0, 11, 5):
                update(done)
        progress.set_reporter(None)
        text = stream.getvalue()
        assert "nested" not in text
        assert sum(line.startswith("advisor: ") for line in text.splitlines()) == expect_lines
        if expect_lines:
            assert text == "advisor: seeding ...\n"
