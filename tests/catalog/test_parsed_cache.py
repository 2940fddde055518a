"""The parsed catalogue kept between runs: read back while its files are unchanged, reloaded
when one is edited, and never an error when the cached file is damaged."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from stack_advisor.catalog import loading, parsed_cache
from stack_advisor.catalog.entries import RoundEntry


@pytest.fixture
def catalogue(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A copy of the packaged catalogue, loaded from there with the cache in ``tmp/cache``."""
    copy = tmp_path / "catalog"
    shutil.copytree(loading.catalogue_folder(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(loading, "catalogue_folder", lambda: copy)
    saved = parsed_cache.cache_folder()
    parsed_cache.use_folder(tmp_path / "cache")
    loading.load_catalog.cache_clear()
    yield copy
    parsed_cache.use_folder(saved)
    loading.load_catalog.cache_clear()


def _fresh_process() -> None:
    """What a new process starts with: nothing loaded in memory."""
    loading.load_catalog.cache_clear()


def _no_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("the catalogue files were read again")

    monkeypatch.setattr(loading, "_load", refuse)


def test_an_unchanged_catalogue_is_read_back_without_its_files(
    catalogue: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = loading.load_catalog()
    assert [p.name.split("-")[0] for p in (tmp_path / "cache").iterdir()] == ["catalog"]
    _fresh_process()
    _no_yaml(monkeypatch)
    again = loading.load_catalog()
    assert again is not first
    assert sorted(again.accelerators) == sorted(first.accelerators)
    assert again.accelerators["H100-SXM5-80GB"] == first.accelerators["H100-SXM5-80GB"]
    assert again.scenario_index.find("ss") == ("SingleStream", "alias")


def test_an_edited_catalogue_file_is_seen(catalogue: Path) -> None:
    assert loading.load_catalog().scenario_index.find("bulk-mode") is None
    scenarios = catalogue / "scenarios.yaml"
    text = scenarios.read_text()
    assert "  - id: Offline\n" in text
    scenarios.write_text(
        text.replace("  - id: Offline\n", "  - id: Offline\n    aliases: [bulk-mode]\n")
    )
    _fresh_process()
    assert loading.load_catalog().scenario_index.find("bulk-mode") == ("Offline", "alias")
    assert len(list((catalogue.parent / "cache").glob("catalog-*.pickle"))) == 1  # old one gone


def test_an_edited_entries_file_is_seen(catalogue: Path) -> None:
    before = loading.load_entries("rounds.yaml", "rounds", RoundEntry)
    rounds = catalogue / "rounds.yaml"
    text = rounds.read_text()
    first_line = next(line for line in text.splitlines() if line.startswith("  - {family:"))
    rounds.write_text(text.replace(first_line + "\n", ""))
    after = loading.load_entries("rounds.yaml", "rounds", RoundEntry)
    assert len(after) == len(before) - 1


def test_a_damaged_cache_file_is_a_miss_and_is_rewritten(catalogue: Path, tmp_path: Path) -> None:
    expected = sorted(loading.load_catalog().accelerators)
    (cached,) = (tmp_path / "cache").glob("catalog-*.pickle")
    cached.write_bytes(b"\x80\x05not a pickle")
    _fresh_process()
    assert sorted(loading.load_catalog().accelerators) == expected
    assert cached.read_bytes()[:2] == b"\x80\x05" and cached.stat().st_size > 1000


def test_no_folder_no_cache(catalogue: Path, tmp_path: Path) -> None:
    parsed_cache.use_folder(None)
    assert loading.load_catalog().accelerators
    assert not (tmp_path / "cache").exists()
