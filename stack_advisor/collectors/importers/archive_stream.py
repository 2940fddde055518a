"""The expanded bytes of an archive file, a megabyte at a time, counted against the limits.

``ArchiveStream`` reads a plain or gzip file (several gzip members in a row, as ``cat a.gz b.gz``
makes, are one stream) and holds at most the piece being consumed; ``MemberBudget`` counts the
members of an archive or tree and the bytes an importer reads from them. Both raise
``ImportLimitExceeded`` naming the file and the limit the moment a count goes over it.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from stack_advisor.collectors.importers.limits import (
    RATIO_FLOOR_BYTES,
    ImportLimits,
    limit_error,
)

CHUNK = 1 << 20
# What keeping one member costs beyond its bytes (its path, the objects that hold it), so that
# a million empty members count too.
MEMBER_OVERHEAD = 512
GZIP_MAGIC = b"\x1f\x8b"


def check_expansion(where: str, stored: int, expanded: int, limits: ImportLimits) -> None:
    """Raise when ``stored`` bytes have expanded past the expanded size or ratio limits."""
    if expanded > limits.expanded_bytes:
        raise limit_error(
            where, f"expands past {expanded:,} bytes", "expanded_bytes", limits.expanded_bytes
        )
    if expanded > RATIO_FLOOR_BYTES and expanded > limits.expansion_ratio * max(stored, 1):
        raise limit_error(
            where,
            f"{stored:,} stored bytes expand past {expanded:,} "
            f"({expanded // max(stored, 1):,} times: an archive bomb?)",
            "expansion_ratio",
            limits.expansion_ratio,
        )


class ArchiveStream:
    """Sequential reads of an archive's expanded bytes; ``complete`` turns False when the
    compressed data ends early or is corrupt (what came before is still returned)."""

    def __init__(self, path: Path, limits: ImportLimits) -> None:
        self.where = str(path)
        self.limits = limits
        self.stored = path.stat().st_size
        if self.stored > limits.archive_bytes:
            raise limit_error(
                self.where,
                f"a file of {self.stored:,} bytes",
                "archive_bytes",
                limits.archive_bytes,
            )
        self._file: BinaryIO = path.open("rb")
        self.head = self._file.read(2)
        self._file.seek(0)
        self.gzip = self.head == GZIP_MAGIC
        self._inflater = zlib.decompressobj(wbits=31) if self.gzip else None
        self._pending = b""
        self._member_done = False
        self.complete = True
        self.expanded = 0
        self._buf = bytearray()
        self._pos = 0

    def __enter__(self) -> ArchiveStream:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._file.close()

    def _count(self, n: int) -> None:
        self.expanded += n
        check_expansion(self.where, self.stored, self.expanded, self.limits)

    def _next_piece(self) -> bytes:
        """The next expanded bytes, b"" at the end of the file."""
        while True:
            data, self._pending = self._pending, b""
            if not data:
                data = self._file.read(CHUNK)
            if not data:
                if self._inflater is not None and not self._member_done:
                    self.complete = False
                return b""
            if self._inflater is None:
                self._count(len(data))
                return data
            try:
                out = self._inflater.decompress(data, CHUNK)
            except zlib.error:
                self.complete = False
                return b""
            self._pending = self._inflater.unconsumed_tail
            self._member_done = self._inflater.eof
            if self._inflater.eof:  # another gzip member may follow
                self._pending = self._inflater.unused_data
                self._inflater = zlib.decompressobj(wbits=31)
            if out:
                self._count(len(out))
                return out

    def _fill(self, n: int) -> None:
        while len(self._buf) - self._pos < n:
            piece = self._next_piece()
            if not piece:
                return
            if self._pos:
                del self._buf[: self._pos]
                self._pos = 0
            self._buf += piece

    def peek(self, n: int) -> bytes:
        """The next ``n`` bytes (fewer at the end), left to be read again."""
        self._fill(n)
        return bytes(self._buf[self._pos : self._pos + n])

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer only at the end of the data)."""
        self._fill(n)
        out = bytes(self._buf[self._pos : self._pos + n])
        self._pos += len(out)
        return out

    def skip(self, n: int) -> int:
        """Drop ``n`` bytes without holding them; returns how many there were."""
        dropped = 0
        while dropped < n:
            self._fill(1)
            have = len(self._buf) - self._pos
            if have == 0:
                break
            step = min(have, n - dropped)
            self._pos += step
            dropped += step
        return dropped

    def drain(self) -> None:
        """Read to the end (so that a cut after the last member is still noticed)."""
        while self.skip(CHUNK) == CHUNK:
            pass


class MemberBudget:
    """Counts an archive's (or tree's) members and the bytes an importer keeps from them."""

    def __init__(self, where: str, limits: ImportLimits) -> None:
        self.where = where
        self.limits = limits
        self.members = 0
        self.held = 0

    def member(self) -> None:
        self.members += 1
        if self.members > self.limits.members:
            raise limit_error(
                self.where,
                f"more than {self.limits.members:,} members",
                "members",
                self.limits.members,
            )

    def reading(self, name: str, size: int) -> None:
        """Before reading a member of ``size`` bytes the importer wants."""
        limits = self.limits
        if size > limits.member_bytes:
            raise limit_error(
                f"{self.where}: {name}",
                f"a member of {size:,} bytes",
                "member_bytes",
                limits.member_bytes,
            )
        self.held += size + MEMBER_OVERHEAD
        if self.held > limits.held_bytes:
            raise limit_error(
                self.where,
                f"the members kept add up to {self.held:,} bytes",
                "held_bytes",
                limits.held_bytes,
            )
