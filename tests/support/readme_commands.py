"""The commands of the README's "Using it" section, as a user would type them (shared by
tests/cli/test_readme.py and tests/kube/test_readme_nodes.py)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Using it", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block, "README's 'Using it' has no sh block"
    return [
        line.split(" #")[0].strip()
        for line in block.group(1).splitlines()
        if line.strip().startswith("advisor ")
    ]
