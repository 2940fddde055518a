"""Backends run PIs: NumPy always; PyTorch, CuPy, JAX and TensorFlow where installed.

A backend module defines ``BACKEND`` (an object with the ``Backend`` shape). ``prepare`` builds
a ``Kernel`` for one PI case or raises ``NotSupported`` with the reason; nothing is faked.
Modules are imported lazily so a missing or heavy framework costs nothing until asked for.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Protocol

from stack_advisor.microbench.timing import Kernel, NotSupported

# backend name -> (module, the package it needs)
BACKEND_MODULES: dict[str, tuple[str, str]] = {
    "numpy": ("stack_advisor.microbench.backends.numpy_backend", "numpy"),
    "torch": ("stack_advisor.microbench.backends.torch_backend", "torch"),
    "cupy": ("stack_advisor.microbench.backends.cupy_backend", "cupy"),
    "jax": ("stack_advisor.microbench.backends.jax_backend", "jax"),
    "tensorflow": ("stack_advisor.microbench.backends.tf_backend", "tensorflow"),
}
DEFAULT_BACKENDS = ("numpy", "torch", "cupy", "jax")
"""TensorFlow is opt-in: importing it takes seconds and most of a core."""


class Backend(Protocol):
    name: str

    def version(self) -> str: ...

    def devices(self) -> list[str]:
        """The devices this backend can run on here ("cpu", "cuda")."""

    def prepare(self, pi: str, params: Any, device: str) -> Kernel:
        """A kernel for one case; raises NotSupported when this backend cannot run it."""


def installed(name: str) -> bool:
    if name not in BACKEND_MODULES:
        raise KeyError(f"unknown backend {name!r}; valid: {', '.join(BACKEND_MODULES)}")
    return importlib.util.find_spec(BACKEND_MODULES[name][1]) is not None


def get_backend(name: str) -> Backend:
    """Raises KeyError for an unknown name, NotSupported when its package is not installed."""
    if not installed(name):
        raise NotSupported(
            f"backend {name!r} needs the {BACKEND_MODULES[name][1]!r} package, which is not "
            "installed"
        )
    module = importlib.import_module(BACKEND_MODULES[name][0])
    backend: Backend = module.BACKEND
    return backend


__all__ = [
    "BACKEND_MODULES",
    "DEFAULT_BACKENDS",
    "Backend",
    "Kernel",
    "NotSupported",
    "get_backend",
    "installed",
]
