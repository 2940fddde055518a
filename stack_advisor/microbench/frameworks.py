"""Loading TensorFlow safely next to PyTorch.

TensorFlow and Triton (which PyTorch loads for torch.compile/dynamo, e.g. from an optimizer's
constructor) each carry LLVM. When TensorFlow is loaded first, loading Triton afterwards aborts
the whole process ("Option ... registered more than once", LLVM ERROR); loaded the other way round
both work. So when PyTorch is installed, Triton goes first.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def load_tensorflow() -> ModuleType:
    """Import TensorFlow, Triton's LLVM first when PyTorch and Triton are installed."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's start-up chatter off stderr
    try:
        importlib.import_module("triton._C.libtriton")
    except Exception:
        pass
    return importlib.import_module("tensorflow")
