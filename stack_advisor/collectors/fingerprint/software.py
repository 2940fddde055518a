"""Python, OS, kernel, installed frameworks, and the CUDA runtime / cuDNN / NCCL each framework
sees. Versions come from package metadata (no import) except where only the framework knows
(torch's CUDA build, CuPy's runtime); TensorFlow is asked only when it is already imported."""

from __future__ import annotations

import importlib.util
import platform
import sys
from importlib import metadata
from typing import Any

from stack_advisor.catalog import cudnn_version
from stack_advisor.collectors.fingerprint.sources import FileRoot, fact, unknown

# framework -> distributions that provide it (first installed wins)
FRAMEWORK_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-gpu"),
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
    "cupy": ("cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x"),
    "numpy": ("numpy",),
    "onnxruntime": ("onnxruntime", "onnxruntime-gpu"),
    "tensorrt": ("tensorrt",),
}


def _dist_version(names: tuple[str, ...]) -> tuple[str, str] | None:
    for name in names:
        try:
            return metadata.version(name), name
        except metadata.PackageNotFoundError:
            continue
    return None


def read_os(root: FileRoot) -> dict[str, Any]:
    out: dict[str, Any] = {"python": fact(platform.python_version(), "platform.python_version()")}
    release = root.read("/etc/os-release")
    pretty = None
    for line in (release or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            pretty = line.split("=", 1)[1].strip().strip('"')
    out["os"] = (
        fact(pretty, "/etc/os-release PRETTY_NAME")
        if pretty
        else unknown("/etc/os-release", "no PRETTY_NAME")
    )
    kernel = root.first_line("/proc/sys/kernel/osrelease")
    out["kernel"] = (
        fact(kernel, "/proc/sys/kernel/osrelease")
        if kernel
        else unknown("/proc/sys/kernel/osrelease", "not readable")
    )
    return out


def read_frameworks() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for framework, dists in FRAMEWORK_DISTRIBUTIONS.items():
        found = _dist_version(dists)
        if found:
            out[framework] = fact(
                found[0].split("+")[0], f"importlib.metadata.version({found[1]!r})"
            )
    return out


def torch_facts(cuda: bool) -> dict[str, str]:
    """Stack facts as torch sees them (framework, version, and with ``cuda`` its
    CUDA/cuDNN/NCCL)."""
    import torch

    facts = {"framework": "torch", "framework_version": torch.__version__.split("+")[0]}
    if cuda and torch.cuda.is_available():
        if torch.version.cuda:
            facts["cuda"] = torch.version.cuda
        if torch.backends.cudnn.is_available():
            facts["cudnn"] = cudnn_version(torch.backends.cudnn.version()) or ""  # 91900 → 9.19.0
        try:
            nccl = torch.cuda.nccl.version()
            facts["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
        except (RuntimeError, AttributeError):
            pass
    return facts


def read_libraries(frameworks: dict[str, Any]) -> dict[str, Any]:
    """CUDA runtime, cuDNN and NCCL per framework: ``{"torch": {"cuda": fact, ...}, ...}``."""
    out: dict[str, Any] = {}
    if "torch" in frameworks:
        try:
            out["torch"] = _torch_libraries()
        except Exception as exc:  # a broken install must not stop the fingerprint
            out["torch"] = {"error": unknown("import torch", str(exc))}
    if "tensorflow" in frameworks:
        out["tensorflow"] = _tensorflow_libraries()
    if "cupy" in frameworks and importlib.util.find_spec("cupy") is not None:
        out["cupy"] = _cupy_libraries()
    return out


def _torch_libraries() -> dict[str, Any]:
    """What PyTorch was built with and finds: CUDA availability, CUDA, cuDNN, NCCL."""
    import torch

    t: dict[str, Any] = {
        "cuda_available": fact(torch.cuda.is_available(), "torch.cuda.is_available()")
    }
    t["cuda"] = (
        fact(torch.version.cuda, "torch.version.cuda")
        if torch.version.cuda
        else unknown("torch.version.cuda", "torch built without CUDA")
    )
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    t["cudnn"] = (
        fact(cudnn_version(cudnn), "torch.backends.cudnn.version()")
        if cudnn
        else unknown("torch.backends.cudnn.version()", "cuDNN not available to torch")
    )
    try:
        nccl = torch.cuda.nccl.version()
        t["nccl"] = fact(
            ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl),
            "torch.cuda.nccl.version()",
        )
    except (RuntimeError, AttributeError) as exc:
        t["nccl"] = unknown("torch.cuda.nccl.version()", str(exc) or type(exc).__name__)
    return t


def _tensorflow_libraries() -> dict[str, Any]:
    """TensorFlow's build info, when TensorFlow is already imported."""
    if "tensorflow" not in sys.modules:
        reason = "TensorFlow not imported (importing it only to fingerprint is too slow)"
        return {"cuda": unknown("tf.sysconfig.get_build_info()", reason)}
    info = dict(sys.modules["tensorflow"].sysconfig.get_build_info())
    src = "tf.sysconfig.get_build_info()"
    return {
        "cuda": fact(info["cuda_version"], src)
        if info.get("cuda_version")
        else unknown(src, "no cuda_version"),
        "cudnn": fact(info["cudnn_version"], src)
        if info.get("cudnn_version")
        else unknown(src, "no cudnn_version"),
    }


def _cupy_libraries() -> dict[str, Any]:
    """The CUDA runtime CuPy loads."""
    try:
        import cupy

        v = int(cupy.cuda.runtime.runtimeGetVersion())
        return {
            "cuda": fact(f"{v // 1000}.{v % 1000 // 10}", "cupy.cuda.runtime.runtimeGetVersion()")
        }
    except Exception as exc:
        return {
            "cuda": unknown("cupy.cuda.runtime.runtimeGetVersion()", str(exc).splitlines()[0][:200])
        }
