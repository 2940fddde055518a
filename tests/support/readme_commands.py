"""The `advisor` commands the README and docs/*.md show, as a user would type them (shared by
tests/cli/test_readme.py, tests/cli/test_docs_commands.py and tests/kube/test_readme_nodes.py).

Two kinds: lines of fenced code blocks (``advisor ...``, continuation backslashes joined, the
trailing ``# comment`` cut), which are meant to be typed as they are, and inline code spans in
prose (`advisor db migrate --store PATH`), which may hold placeholders (PATH, URL, ``...``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
INLINE = re.compile(r"`(advisor [^`]+)`")


@dataclass(frozen=True)
class DocCommand:
    """One documented command: where it is written and its text (whitespace collapsed)."""

    file: str
    line: int
    text: str
    inline: bool

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _block_lines(block: str) -> list[tuple[int, str]]:
    """(offset in the block, command) of each ``advisor`` line, continuations joined."""
    out: list[tuple[int, str]] = []
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        start, text = i, lines[i].strip()
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1].rstrip() + " " + lines[i].strip()
        i += 1
        if text.startswith("advisor "):
            out.append((start, text.split(" #")[0].strip()))
    return out


def block_commands(path: Path) -> list[DocCommand]:
    text = path.read_text()
    name = path.relative_to(REPO).as_posix()
    found = []
    for match in FENCE.finditer(text):
        first = text.count("\n", 0, match.start(1)) + 1
        for offset, command in _block_lines(match.group(1)):
            found.append(DocCommand(name, first + offset, command, inline=False))
    return found


def inline_commands(path: Path) -> list[DocCommand]:
    text = path.read_text()
    name = path.relative_to(REPO).as_posix()
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)  # keep line numbers
    return [
        DocCommand(name, prose.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split()), True)
        for m in INLINE.finditer(prose)
    ]


def documented_commands() -> list[DocCommand]:
    """Every command of the README and docs/*.md: code blocks first, then inline spans."""
    docs = documents()
    return [c for p in docs for c in block_commands(p)] + [
        c for p in docs for c in inline_commands(p)
    ]


def readme_commands() -> list[str]:
    """The README's "Using it" sh block, in order (the README test runs them one after another)."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Using it", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block, "README's 'Using it' has no sh block"
    return [text for _, text in _block_lines(block.group(1))]
