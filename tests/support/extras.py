"""Marks for tests that need an optional extra (torch, tensorflow): the fast tier runs from
`pip install -e '.[dev]'` alone, where these skip and say which extra to install; the full test
command (scripts/test.sh) installs them, so there they run."""

from __future__ import annotations

from importlib.util import find_spec

import pytest


def _needs(module: str, extra: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        find_spec(module) is None, reason=f"needs the {extra} extra: pip install -e '.[{extra}]'"
    )


needs_torch = _needs("torch", "torch")
needs_tensorflow = _needs("tensorflow", "tensorflow")
