"""Importers read within limits: a hostile archive, tree or JSON file is a clear error naming the
file and the limit (or a reported bad file), never an exhausted machine or a RecursionError."""

from __future__ import annotations

import io
import json
import tarfile
import time
import zlib
from pathlib import Path

import pytest

from stack_advisor.collectors.importers.limits import (
    ImportLimitExceeded,
    ImportLimits,
    load_json,
)
from stack_advisor.collectors.importers.mlperf import read_tree
from stack_advisor.collectors.importers.mlperf_training import parse_mllog
from stack_advisor.collectors.importers.tar_reader import iter_archive
from stack_advisor.schema.errors import InvalidInput
from tests.support.mlperf import small_tree, tar_gz, write

SUMMARY = "closed/Acme/results/box8/resnet50/Offline/performance/run_1/mlperf_log_summary.txt"


def _zero_member_tar_gz(out: Path, name: str, size: int) -> Path:
    """A gzip'd tar whose one member is ``size`` zero bytes, written a megabyte at a time."""
    info = tarfile.TarInfo(name)
    info.size = size
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    with out.open("wb") as handle:
        handle.write(packer.compress(info.tobuf(format=tarfile.GNU_FORMAT)))
        block = bytes(1 << 20)
        left = size + (-size % 512) + 1024
        while left > 0:
            handle.write(packer.compress(block[: min(left, len(block))]))
            left -= len(block)
        handle.write(packer.flush())
    return out


def test_a_member_over_its_limit_is_an_error_naming_the_member_and_the_limit(
    tmp_path: Path,
) -> None:
    archive = _zero_member_tar_gz(tmp_path / "inference_v9.9.tar.gz", f"x/{SUMMARY}", 2 << 20)
    with pytest.raises(ImportLimitExceeded) as caught:
        read_tree(archive, limits=ImportLimits(member_bytes=1 << 20))
    message = str(caught.value)
    assert "inference_v9.9.tar.gz" in message and "mlperf_log_summary.txt" in message
    assert "member_bytes=1,048,576" in message and "ADVISOR_IMPORT_MAX_MEMBER_BYTES" in message


def test_a_gzip_bomb_stops_at_the_expansion_ratio_fast(tmp_path: Path) -> None:
    # 80 MiB of zeros in ~80 KB: an unwanted member, so only the ratio can stop it
    archive = _zero_member_tar_gz(tmp_path / "bomb.tar.gz", "x/notes.bin", 80 << 20)
    started = time.perf_counter()
    with pytest.raises(ImportLimitExceeded, match="expansion_ratio=100"):
        list(iter_archive(archive, wanted=lambda _name: False, limits=ImportLimits()))
    assert time.perf_counter() - started < 10


def test_expanded_bytes_and_members_are_counted_while_streaming(tmp_path: Path) -> None:
    archive = _zero_member_tar_gz(tmp_path / "big.tar.gz", "x/notes.bin", 3 << 20)
    with pytest.raises(ImportLimitExceeded, match="expanded_bytes=2,097,152"):
        list(
            iter_archive(
                archive, wanted=lambda _n: False, limits=ImportLimits(expanded_bytes=2 << 20)
            )
        )
    many = tar_gz(small_tree(tmp_path / "t"), tmp_path / "inference_v9.9.tar.gz")
    with pytest.raises(ImportLimitExceeded, match="members=3"):
        read_tree(many, limits=ImportLimits(members=3))
    with pytest.raises(ImportLimitExceeded, match="held_bytes=1,000"):
        read_tree(many, limits=ImportLimits(held_bytes=1000))


def test_the_same_limits_hold_for_an_unpacked_tree(tmp_path: Path) -> None:
    tree = small_tree(tmp_path)
    with pytest.raises(ImportLimitExceeded, match="member_bytes=100"):
        read_tree(tree, limits=ImportLimits(member_bytes=100))


def test_limits_are_configured_from_the_environment() -> None:
    limits = ImportLimits.from_env({"ADVISOR_IMPORT_MAX_MEMBER_BYTES": "1_024"})
    assert limits.member_bytes == 1024 and limits.members == ImportLimits().members
    with pytest.raises(InvalidInput, match=r"ADVISOR_IMPORT_MAX_JSON_DEPTH.*'deep'"):
        ImportLimits.from_env({"ADVISOR_IMPORT_MAX_JSON_DEPTH": "deep"})


@pytest.mark.parametrize(
    ("text", "limit"),
    [(b"[" * 200_000, "json_depth=64"), (b'{"a":' * 100_000, "json_depth=64")],
)
def test_deep_json_is_a_limit_not_a_recursion_error(text: bytes, limit: str) -> None:
    with pytest.raises(ImportLimitExceeded, match=limit):
        load_json(text, "table.json", ImportLimits())


def test_json_brackets_inside_strings_do_not_count() -> None:
    assert load_json(b'{"a": "[[[[[[", "b": [1, {"c": "}}}"}]}', "x", ImportLimits(json_depth=3))
    with pytest.raises(ImportLimitExceeded, match="json_containers=2"):
        load_json(b"[[], [], []]", "x.json", ImportLimits(json_containers=2))


def test_a_key_given_two_values_is_refused_a_harmless_repeat_is_not() -> None:
    with pytest.raises(ValueError, match="'model' appears twice"):
        load_json(b'{"model": "H100", "model": "A100"}', "x.json", ImportLimits())
    # as published (inference v1.1, Dell XE8545): the same key again, once empty
    text = b'{"cooling": "air", "cooling": "", "status": "ok", "status": "ok"}'
    assert load_json(text, "x.json", ImportLimits()) == {"cooling": "air", "status": "ok"}


def test_deep_or_duplicated_system_files_are_reported_and_the_rest_imports(
    tmp_path: Path,
) -> None:
    tree = small_tree(tmp_path)
    write(tree, "closed/Acme/systems/deep.json", '{"a":' * 100_000)
    write(tree, "closed/Acme/systems/twice.json", '{"system_name": "a", "system_name": "b"}')
    for name in ("deep", "twice"):
        write(tree, SUMMARY.replace("box8", name), (tree / SUMMARY).read_text())
    parsed = read_tree(tree)
    assert sorted(r.system_id for r in parsed.records) == ["box8", "box8"]
    reasons = {i.path: i.reason for i in parsed.issues if i.category == "malformed-system"}
    assert "json_depth=64" in reasons["closed/Acme/systems/deep.json"]
    assert "appears twice" in reasons["closed/Acme/systems/twice.json"]


def test_links_inside_a_tarball_are_reported_never_followed(tmp_path: Path) -> None:
    tree = small_tree(tmp_path / "t")
    archive = tar_gz(tree, tmp_path / "inference_v9.9.tar.gz")
    raw = io.BytesIO()
    with tarfile.open(archive) as source, tarfile.open(fileobj=raw, mode="w:gz") as out:
        for member in source:
            out.addfile(member, source.extractfile(member) if member.isfile() else None)
        link = tarfile.TarInfo("inference_v9.9/closed/Acme/systems/evil.json")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        out.addfile(link)
    archive.write_bytes(raw.getvalue())
    parsed = read_tree(archive)
    links = [i for i in parsed.issues if i.category == "link"]
    assert [(i.path, i.outcome) for i in links] == [
        ("inference_v9.9/closed/Acme/systems/evil.json", "skipped")
    ]
    assert "'/etc/passwd'" in links[0].reason and len(parsed.records) == 2


def test_a_deep_mllog_line_is_a_bad_line() -> None:
    text = ':::MLLOG {"key": "run_start", "time_ms": 1}\n:::MLLOG ' + "[" * 100_000 + "\n"
    events, bad = parse_mllog(text)
    assert len(events["run_start"]) == 1 and bad == 1


def test_the_shared_summary_json_fits_the_default_limits() -> None:
    from tests.support.mlperf import require_shared_data

    table = require_shared_data() / "summary_results_v5.1.json.gz"
    data = zlib.decompress(table.read_bytes(), wbits=31)
    assert isinstance(load_json(data, str(table), ImportLimits()), (list, dict))
    assert json.loads(data) == load_json(data, str(table), ImportLimits())


def test_a_deep_result_document_file_is_an_error_naming_the_limit(tmp_path: Path) -> None:
    from stack_advisor.collectors.importers.results import load_documents

    deep = tmp_path / "result.json"
    deep.write_text("[" * 200_000)
    with pytest.raises(ImportLimitExceeded, match=r"result.json.*json_depth=64"):
        load_documents(deep)
    twice = tmp_path / "twice.json"
    twice.write_text('{"document_version": 1, "document_version": 2}')
    with pytest.raises(InvalidInput, match="appears twice"):
        load_documents(twice)
