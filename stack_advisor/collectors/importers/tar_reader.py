"""Read a tar archive (plain or gzip) as a stream, fast, within limits, keeping what precedes a
cut.

``tarfile`` parses each header in Python objects; on result trees of tens of thousands of small
files that costs seconds per archive. This reader inflates the archive a megabyte at a time and
walks the 512-byte headers (ustar, GNU long names, pax path records). Nothing is held but the
member being read: members the caller does not want are inflated and dropped, and every byte is
counted against ``ImportLimits`` as it arrives (stored size, expanded size and ratio, members,
bytes per member read and in all), so a bomb is an error within a fraction of a second. Other
compressions go through ``tarfile`` in stream mode, under the same limits.
"""

from __future__ import annotations

import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

from stack_advisor.collectors.importers.archive_stream import (
    ArchiveStream,
    MemberBudget,
    check_expansion,
)
from stack_advisor.collectors.importers.limits import ImportLimits
from stack_advisor.schema.errors import InvalidInput


class ArchiveTruncated(Exception):
    """The archive ends inside a member or before its end marker (a cut-off download)."""

    def __init__(self, after: str | None) -> None:
        super().__init__(after)
        self.after = after


class NotATar(Exception):
    """The data does not start with a tar header (its checksum does not hold)."""


def _checksum_holds(header: bytes) -> bool:
    """A tar header's checksum: the sum of its bytes with the checksum field read as spaces
    (unsigned, or signed as some old tars wrote it)."""
    stored = header[148:156].split(b"\0", 1)[0].strip()
    try:
        want = int(stored, 8)
    except ValueError:
        return False
    rest = header[:148] + b" " * 8 + header[156:]
    unsigned = sum(rest)
    if want == unsigned:
        return True
    return want == unsigned - 256 * sum(1 for b in rest if b > 127)


def _octal(field: bytes, member: str) -> int:
    if field and field[0] & 0x80:  # GNU base-256: sizes of 8 GiB and more
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    text = field.split(b"\0", 1)[0].strip()
    try:
        return int(text or b"0", 8)
    except ValueError:
        raise ArchiveTruncated(member) from None


def _pax_records(body: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(body):
        space = body.find(b" ", pos)
        if space < 0:
            break
        try:
            length = int(body[pos:space])
        except ValueError:
            break
        if length <= space - pos:
            break
        record = body[space + 1 : pos + length - 1].decode("utf-8", "replace")
        key, _, value = record.partition("=")
        out[key] = value
        pos += length
    return out


Member = tuple[str, bytes | None, float]


def _header_name(header: bytes) -> str:
    name = header[0:100].split(b"\0", 1)[0].decode("utf-8", "replace")
    if header[257:262] == b"ustar":
        prefix = header[345:500].split(b"\0", 1)[0].decode("utf-8", "replace")
        if prefix:
            name = prefix + "/" + name
    return name


_KINDS = {
    b"1": "a hard link",
    b"2": "a symbolic link",
    b"3": "a device",
    b"4": "a device",
    b"6": "a FIFO",
}
Skipped = Callable[[str, str], None]


def _link_target(header: bytes) -> str:
    return header[157:257].split(b"\0", 1)[0].decode("utf-8", "replace")


def _iter_tar_stream(
    stream: ArchiveStream,
    budget: MemberBudget,
    wanted: Callable[[str], bool],
    on_skipped: Skipped,
) -> Iterator[Member]:
    """(name, content or None when not wanted, mtime) of each regular file of a tar stream;
    links, devices and FIFOs are passed to ``on_skipped``, never read.

    Raises ArchiveTruncated when the data ends inside a member, NotATar when the first block is
    no tar header."""
    long_name: str | None = None
    pax: dict[str, str] = {}
    last: str | None = None
    first = True
    while True:
        header = _next_header(stream, last, first)
        if header is None:
            return
        first = False
        name = _header_name(header)
        size = _octal(header[124:136], name)
        mtime = float(_octal(header[136:148], name))
        kind = header[156:157]
        padded = (size + 511) // 512 * 512
        if kind in (b"L", b"x"):
            budget.reading(name, size)
            body = _body(stream, padded, size, last)
            if kind == b"L":
                long_name = body.split(b"\0", 1)[0].decode("utf-8", "replace")
            else:
                pax = _pax_records(body)
            continue
        full = pax.get("path") or long_name or name
        target = pax.get("linkpath") or _link_target(header)
        long_name, pax = None, {}
        regular = kind in (b"0", b"\0", b"7")
        if regular:
            budget.member()
        if regular and wanted(full):
            budget.reading(full, size)
            body = _body(stream, padded, size, last)
            last = full
            yield full, body, mtime
            continue
        if stream.skip(padded) < padded:
            raise ArchiveTruncated(last)
        if regular:
            last = full
            yield full, None, mtime
        elif kind in _KINDS:
            budget.member()
            on_skipped(full, _never_read(kind, target))


def _next_header(stream: ArchiveStream, last: str | None, first: bool) -> bytes | None:
    """The next member's header block; None at the end-of-archive block.

    Raises ArchiveTruncated (after ``last``) when the data ends or the block is no header,
    NotATar when that is the first block."""
    header = stream.read(512)
    if len(header) < 512:
        raise ArchiveTruncated(last)
    if not any(header):
        return None
    if not _checksum_holds(header):
        if first:
            raise NotATar
        raise ArchiveTruncated(last)
    return header


def _body(stream: ArchiveStream, padded: int, size: int, last: str | None) -> bytes:
    """A member's ``size`` bytes (its ``padded`` blocks read). Raises ArchiveTruncated."""
    body = stream.read(padded)
    if len(body) < size:
        raise ArchiveTruncated(last)
    return body[:size]


def _never_read(kind: bytes, target: str) -> str:
    return (
        f"{_KINDS[kind]}"
        + (f" to {target!r}" if target else "")
        + " inside the archive is never followed or read"
    )


def _not_a_tar(root: Path, kinds: str) -> InvalidInput:
    return InvalidInput(
        f"cannot read {str(root)!r}: it is not a tar archive ({kinds}) nor a results folder; "
        "pass the round's .tar.gz as published, or its unpacked folder"
    )


def _ignore(_name: str, _why: str) -> None:
    return None


def iter_archive(
    root: Path,
    *,
    wanted: Callable[[str], bool] | None = None,
    limits: ImportLimits | None = None,
    on_skipped: Skipped = _ignore,
) -> Iterator[Member]:
    """(name, content, mtime) of every regular file of the archive at ``root``; content is None
    for those ``wanted`` refuses (inflated and dropped, never held). Links, devices and FIFOs are
    passed to ``on_skipped(name, why)`` so that a caller can report them.

    Raises:
        InvalidInput: not an archive at all.
        ImportLimitExceeded: a limit of ``limits`` (default: from the environment) is exceeded.
        ArchiveTruncated: after yielding what could be read, when the archive is cut short.
    """
    limits = limits or ImportLimits.from_env()
    choose = wanted or (lambda _name: True)
    budget = MemberBudget(str(root), limits)
    with ArchiveStream(root, limits) as stream:
        peek = stream.peek(512)
        is_tar = len(peek) == 512 and (
            peek[257:262] == b"ustar" or root.name.endswith((".tar", ".tar.gz", ".tgz"))
        )
        if stream.gzip or is_tar:
            if not is_tar:
                raise _not_a_tar(root, "plain or gzip")
            try:
                yield from _iter_tar_stream(stream, budget, choose, on_skipped)
            except NotATar:
                raise _not_a_tar(root, "its first block is no tar header") from None
            stream.drain()
            if not stream.complete:
                raise ArchiveTruncated(None)
            return
    yield from _iter_tarfile(root, budget, choose, on_skipped)


def _open_stream(root: Path) -> tarfile.TarFile:
    """``tarfile`` in stream mode; a file it cannot open is no archive (InvalidInput)."""
    try:
        return tarfile.open(root, mode="r|*")
    except (tarfile.TarError, OSError):
        raise _not_a_tar(root, "plain, gzip, bzip2 or xz") from None


def _iter_tarfile(
    root: Path, budget: MemberBudget, wanted: Callable[[str], bool], on_skipped: Skipped
) -> Iterator[Member]:
    """bzip2, xz and old formats, through ``tarfile`` in stream mode, under the same limits."""
    last: str | None = None
    expanded = 0
    stored = root.stat().st_size
    try:
        with _open_stream(root) as archive:
            for member in archive:
                expanded += member.size + 512
                check_expansion(str(root), stored, expanded, budget.limits)
                if member.issym() or member.islnk() or member.isdev() or member.isfifo():
                    budget.member()
                    on_skipped(
                        member.name,
                        f"a link or device to {member.linkname!r} inside the archive is never "
                        "followed or read",
                    )
                    continue
                if not member.isfile():
                    continue
                budget.member()
                if not wanted(member.name):
                    yield member.name, None, float(member.mtime)
                    continue
                budget.reading(member.name, member.size)
                handle = archive.extractfile(member)
                yield member.name, handle.read() if handle else b"", float(member.mtime)
                last = member.name
    except (tarfile.TarError, OSError, EOFError):
        raise ArchiveTruncated(last) from None
