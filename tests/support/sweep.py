"""A small sweep matrix: numpy builds measured with the PI suite on this machine's CPU."""

from __future__ import annotations

import sys

MATRIX = {
    "name": "numpy-cpu-test",
    "device": "cpu",
    "repeats": 2,
    "benchmarks": [
        {"runner": "pi", "profile": "quick", "options": {"backends": "numpy", "pis": ["mem_triad"]}}
    ],
    "cells": [
        {"framework": "numpy", "version": "1.26.4"},
        {"framework": "numpy", "version": "2.1.3"},
        {"framework": "numpy", "version": "0.0.1", "name": "numpy-missing"},
        # pandas built against numpy 1 with no upper bound on numpy: with numpy 2 it installs, then
        # fails to import ("numpy.dtype size changed"); the first such release with wheels for this
        # Python
        {
            "framework": "numpy",
            "version": "2.1.3",
            "name": "pandas-abi",
            "packages": [
                "pandas==" + {(3, 11): "2.0.3", (3, 12): "2.1.1"}.get(sys.version_info[:2], "2.1.1")
            ],
            "imports": ["numpy", "pandas"],
        },
    ],
}
