"""A CPU-fed input pipeline: what a data loader does to every image before the GPU sees it.

Each step takes ``batch`` uint8 HWC images from a dataset held in host memory, crops them at a
random offset, flips every other one, converts to float32 and normalises per channel into a
(pinned, where a GPU is used) staging buffer, then copies that to the device and waits for it.
``workers`` threads split the batch (NumPy releases the GIL in these loops). The rate is images
per second.

Where the process runs and where its memory lives is the caller's business (the NUMA runner
binds the process before it imports this); the kernel allocates everything at ``prepare``, so
first-touch places it under the caller's memory policy.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stack_advisor.microbench.timing import Kernel, NotSupported

MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)  # the usual ImageNet normalisation
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)
VERSION = 1


class PipelineParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    batch: int = Field(default=64, ge=1)
    height: int = Field(default=256, ge=2)
    width: int = Field(default=256, ge=2)
    crop: int = Field(default=224, ge=1)
    dataset_images: int = Field(default=512, ge=1, description="images kept in host memory")
    workers: int = Field(default=4, ge=1)
    device: Literal["cpu", "cuda"] = "cpu"

    @model_validator(mode="after")
    def _fits(self) -> PipelineParams:
        if self.crop > min(self.height, self.width):
            raise ValueError(
                f"crop {self.crop} is larger than the {self.height}x{self.width} images"
            )
        return self


def pipeline_bytes(p: PipelineParams) -> float:
    """Bytes one step moves through host memory: the uint8 crops read, the float32 batch
    written, and (with a GPU) read again by the copy."""
    pixels = p.batch * p.crop * p.crop * 3
    return float(pixels * 1 + pixels * 4 + (pixels * 4 if p.device == "cuda" else 0))


def prepare(p: PipelineParams, cuda_index: int = 0) -> Kernel:
    """The pipeline's kernel; one ``run`` is one batch. Raises NotSupported without NumPy, or
    without torch and a CUDA device when ``device`` is cuda."""
    try:
        import numpy as np
    except ImportError as exc:
        raise NotSupported(f"the input pipeline needs NumPy: {exc}") from None
    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, size=(p.dataset_images, p.height, p.width, 3), dtype=np.uint8)
    mean = np.asarray(MEAN, dtype=np.float32)
    inv_std = np.asarray([1.0 / s for s in STD], dtype=np.float32)
    staging, upload, sync = _staging(p, cuda_index)
    out = staging.numpy() if hasattr(staging, "numpy") else staging
    pool = ThreadPoolExecutor(max_workers=p.workers)
    chunks = [(i * p.batch // p.workers, (i + 1) * p.batch // p.workers) for i in range(p.workers)]
    state = {"step": 0}

    def part(lo: int, hi: int, seed: int) -> None:
        r = np.random.default_rng(seed)
        for j in range(lo, hi):
            img = data[r.integers(0, p.dataset_images)]
            y, x = (
                int(r.integers(0, p.height - p.crop + 1)),
                int(r.integers(0, p.width - p.crop + 1)),
            )
            view = img[y : y + p.crop, x : x + p.crop]
            if j % 2:
                view = view[:, ::-1]
            np.subtract(view, mean, out=out[j], dtype=np.float32)
            np.multiply(out[j], inv_std, out=out[j])

    def run() -> object:
        state["step"] += 1
        futures = [
            pool.submit(part, lo, hi, state["step"] * 1000 + k) for k, (lo, hi) in enumerate(chunks)
        ]
        for f in futures:
            f.result()
        upload()
        return sync()  # the copy is waited for in each step: no overlap with the next batch

    label = f"numpy crop/flip/normalise x{p.workers} threads" + (
        " + pinned H2D copy" if p.device == "cuda" else ""
    )
    return Kernel(run=run, sync=sync, label=label)


def _staging(p: PipelineParams, cuda_index: int) -> tuple[Any, Any, Any]:
    shape = (p.batch, p.crop, p.crop, 3)
    if p.device == "cpu":
        import numpy as np

        return np.empty(shape, dtype=np.float32), (lambda: None), (lambda: None)
    try:
        import torch
    except ImportError as exc:
        raise NotSupported(f"the pipeline's device copy needs torch: {exc}") from None
    if not torch.cuda.is_available():
        raise NotSupported("the pipeline's device copy needs a CUDA device")
    device = torch.device("cuda", cuda_index)
    host = torch.empty(shape, dtype=torch.float32, pin_memory=True)
    target = torch.empty(shape, dtype=torch.float32, device=device)
    return (
        host,
        (lambda: target.copy_(host, non_blocking=True)),
        (lambda: torch.cuda.synchronize(device)),
    )
