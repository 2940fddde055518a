"""The starter knowledge base shipped as a ready embedded store: built from the shipped snapshot,
used only where its stamp matches this install, and holding what seeding would write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stack_advisor.store import registry, starter, starter_store
from stack_advisor.store.settings import StoreSettings


def test_the_shipped_store_was_built_from_the_shipped_snapshot() -> None:
    """Rebuilding the snapshot without the store (or moving the engine or the schema on) is
    caught here, not by a slow first run: the stamp names the snapshot's digest, the engine
    and the schema version of this checkout."""
    shipped = json.loads(starter_store.shipped_file(starter_store.STAMP_NAME).read_text())
    assert shipped == starter_store.stamp(), (
        "rebuild it: python scripts/build_starter_kb.py --store-only"
    )
    assert starter_store.shipped_file(starter_store.STORE_NAME).stat().st_size < 5 * 1024 * 1024


def test_a_fresh_default_store_is_the_shipped_one_and_holds_the_snapshot(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(registry, "_seed", lambda store: pytest.fail("seeded, not copied"))
    settings = StoreSettings(data_home=tmp_path / "xdg")
    with registry.open_store(settings=settings) as store:
        stats = store.stats()
    counts = starter.manifest()["counts"]
    assert stats.observations_by_source == counts["observations_by_source"]
    assert stats.counts["Observation"] == counts["observations"]
    assert stats.counts["Failure"] == counts["failures"]
    assert stats.counts["Run"] == counts["runs"]
    assert stats.generation > 0  # not taken for an empty store to reseed
    folder = registry.default_store_path(settings).parent
    assert sorted(p.name for p in folder.iterdir()) == ["kb"]


def test_a_store_stamped_for_another_install_is_not_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Another engine version (or snapshot, or schema): the default store is seeded from the
    snapshot instead, and nothing is left where the copy would have gone."""
    data = tmp_path / "data"
    data.mkdir()
    stamp = {**starter_store.stamp(), "engine": "ladybug 0.0.1"}
    (data / starter_store.STAMP_NAME).write_text(json.dumps(stamp))
    real = starter_store.shipped_file(starter_store.STORE_NAME)
    (data / starter_store.STORE_NAME).write_bytes(real.read_bytes())
    monkeypatch.setattr(starter_store, "shipped_file", lambda name: data / name)
    target = tmp_path / "kb"
    assert not starter_store.restore(target)
    assert not target.exists()

    seeded: list[int] = []
    monkeypatch.setattr(registry, "_seed", lambda store: seeded.append(store.generation()))
    with registry.open_store(settings=StoreSettings(data_home=tmp_path / "xdg")):
        pass
    assert seeded == [0]


def test_a_truncated_store_file_falls_back_to_seeding(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / starter_store.STAMP_NAME).write_text(json.dumps(starter_store.stamp()))
    real = starter_store.shipped_file(starter_store.STORE_NAME).read_bytes()
    (data / starter_store.STORE_NAME).write_bytes(real[: len(real) // 2])
    monkeypatch.setattr(starter_store, "shipped_file", lambda name: data / name)
    target = tmp_path / "kb"
    assert not starter_store.restore(target)
    assert not target.exists()


@pytest.mark.slow  # seeds the whole snapshot (18,000 observations: ~10 CPU-seconds)
def test_the_shipped_store_holds_what_seeding_the_snapshot_writes(tmp_path: Path) -> None:
    """Row for row: the tests' starter stores are copies of the shipped store
    (tests/support/starter_kb.py), so the answers they pin are those of a seeded store."""
    from stack_advisor.advisor.knowledge.table_file import build_table
    from tests.support.tables import assert_same_table

    assert starter_store.restore(tmp_path / "shipped")
    with (
        registry.open_store(f"embedded:{tmp_path / 'shipped'}") as shipped,
        registry.open_store(f"embedded:{tmp_path / 'seeded'}") as seeded,
    ):
        starter.seed_store(seeded)
        assert shipped.stats() == seeded.stats()
        assert_same_table(
            build_table(shipped, shipped.generation()), build_table(seeded, seeded.generation())
        )
