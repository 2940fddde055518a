"""Hostile imports: peak memory above idle and time to a clear error, one child process each.

Each case builds a ~10 MB hostile file in a temporary folder, then a fresh Python imports it
through the importer a user runs (``read_tree``, ``read_training_tree``, ``read_summary``) and
reports its peak RSS (ru_maxrss) above the RSS it had idle (importer modules loaded), the seconds
to the error, and the error's first words. Goal (issue 46): <= 512 MB above idle, <= 10 s.

    .venv/bin/python bench/import_bombs.py [--size-mb 10]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import zlib
from pathlib import Path

SUMMARY = (
    "inference_v9.9/closed/A/results/s/resnet50/Offline/performance/run_1/mlperf_log_summary.txt"
)
CHILD = r"""
import json, resource, sys, time
from stack_advisor.collectors.importers.mlperf import read_tree
from stack_advisor.collectors.importers.mlperf_summary import read_summary
from stack_advisor.collectors.importers.mlperf_training import read_training_tree
kind, path = sys.argv[1], sys.argv[2]
idle = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
try:
    {"tree": read_tree, "training": read_training_tree, "table": read_summary}[kind](path)
    outcome = "no error"
except Exception as exc:
    outcome = f"{type(exc).__name__}: {exc}"
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"idle_mb": idle / 1024, "above_idle_mb": (peak - idle) / 1024,
                  "seconds": seconds, "outcome": outcome[:160]}))
"""


def _gzip_of_zeros(total: int) -> bytes:
    """One gzip member of ``total`` zero bytes (deflate's ~1,000:1)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    out = [packer.compress(block) for _ in range(total // len(block))]
    return b"".join(out) + packer.flush()


def zero_member_archive(out: Path, name: str, size_mb: int) -> Path:
    """~size_mb MB packed: one tar member of ~1,000 x size_mb MB of zeros."""
    piece = _gzip_of_zeros(64 << 20)  # 64 MiB of zeros, ~65 KB packed
    repeats = max(1, size_mb * (1 << 20) // len(piece))
    info = tarfile.TarInfo(name)
    info.size = repeats * (64 << 20)
    with out.open("wb") as handle:
        handle.write(zlib.compress(info.tobuf(format=tarfile.GNU_FORMAT), wbits=31))
        for _ in range(repeats):
            handle.write(piece)
    return out


def zero_members_archive(out: Path, size_mb: int, member_mb: int) -> Path:
    """~size_mb MB packed: as many wanted members of member_mb MiB of zeros as fit."""
    piece = _gzip_of_zeros(member_mb << 20)
    with out.open("wb") as handle:
        index = 0
        while handle.tell() < size_mb * (1 << 20):
            info = tarfile.TarInfo(SUMMARY.replace("/s/", f"/s{index}/"))
            info.size = member_mb << 20
            handle.write(zlib.compress(info.tobuf(format=tarfile.GNU_FORMAT), wbits=31))
            handle.write(piece)
            index += 1
    return out


def many_members_archive(out: Path, size_mb: int) -> Path:
    """As many small wanted members as fit in ~size_mb MB packed."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = b"Samples per second: 1\n" * 20
    with out.open("wb") as handle:
        index = 0
        while handle.tell() < size_mb * (1 << 20):
            info = tarfile.TarInfo(SUMMARY.replace("/s/", f"/s{index}/"))
            info.size = len(body)
            block = info.tobuf(format=tarfile.GNU_FORMAT) + body + bytes(-len(body) % 512)
            handle.write(packer.compress(block))
            index += 1
        handle.write(packer.compress(bytes(1024)) + packer.flush())
    return out


def tables(folder: Path, size_mb: int) -> list[tuple[str, Path]]:
    n = size_mb * (1 << 20)
    deep = folder / "deep_v9.9.json"
    deep.write_bytes(b"[" * n)
    objects = folder / "objects_v9.9.json"
    objects.write_bytes(b"[" + b"{}," * (n // 3) + b"{}]")
    bomb = folder / "bomb_v9.9.json.gz"
    bomb.write_bytes(_gzip_of_zeros(64 << 20) * max(1, n // 70_000))
    return [("deep [", deep), ("10 MB of {}", objects), ("gzip of zeros", bomb)]


def run(kind: str, path: Path) -> dict[str, object]:
    answer = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if answer.returncode:
        return {"outcome": f"child exited {answer.returncode}: {answer.stderr[-300:]}"}
    result: dict[str, object] = json.loads(answer.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=10)
    size = parser.parse_args().size_mb
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = [
            (
                "tree",
                "one wanted 10 GB member",
                zero_member_archive(folder / "a_v9.9.tar.gz", SUMMARY, size),
            ),
            (
                "tree",
                "one unwanted 10 GB member",
                zero_member_archive(folder / "b_v9.9.tar.gz", "x/notes.bin", size),
            ),
            (
                "tree",
                "15 MiB wanted members",
                zero_members_archive(folder / "c_v9.9.tar.gz", size, 15),
            ),
            (
                "training",
                "one 10 GB result log",
                zero_member_archive(
                    folder / "d_v9.9.tar.gz", "training_v9.9/A/results/s/bert/result_0.txt", size
                ),
            ),
            ("tree", "small members", many_members_archive(folder / "e_v9.9.tar.gz", size)),
        ]
        rows = [(kind, name, path) for kind, name, path in cases]
        rows += [("table", name, path) for name, path in tables(folder, size)]
        print(f"{'case':28} {'packed MB':>9} {'idle MB':>8} {'+peak MB':>9} {'s':>6}  outcome")
        for kind, name, path in rows:
            got = run(kind, path)
            print(
                f"{name:28} {path.stat().st_size / 1e6:9.1f} {got.get('idle_mb', 0):8.0f} "
                f"{got.get('above_idle_mb', 0):9.0f} {got.get('seconds', 0):6.2f}  "
                f"{str(got['outcome'])[:110]}"
            )


if __name__ == "__main__":
    main()
