"""PyTorch step timer for the CNN benchmark: one training or inference step on synthetic data."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from stack_advisor.collectors.models.torch_models import build
from stack_advisor.schema.errors import MissingEnvironment, Unsupported

if TYPE_CHECKING:
    from stack_advisor.collectors.models.params import CnnParams

_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def resolve_device(requested: str) -> str:
    """ "cpu" or "cuda"; "auto" picks CUDA when torch sees a GPU. Raises Unsupported for "cuda"
    without one."""
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise MissingEnvironment(
            "cnn: device 'cuda' requested but torch.cuda.is_available() is False"
        )
    if requested not in ("cpu", "cuda"):
        raise Unsupported(
            f"cnn: device {requested!r} is not supported by the torch backend (cpu, cuda)"
        )
    return requested


def stack_facts() -> dict[str, str]:
    facts = {"framework": "torch", "framework_version": torch.__version__.split("+")[0]}
    if torch.cuda.is_available():
        if torch.version.cuda:
            facts["cuda"] = torch.version.cuda
        cudnn = torch.backends.cudnn.version()
        if cudnn:
            facts["cudnn"] = str(cudnn)
    return facts


class TorchStepTimer:
    def __init__(self, params: CnnParams, device: str) -> None:
        if params.precision == "fp16" and device == "cpu":
            raise Unsupported("cnn: precision fp16 needs CUDA with torch; use fp32 or bf16 on CPU")
        self.device = torch.device(device)
        self.cuda = device == "cuda"
        self.training = params.mode == "training"
        self.autocast_dtype = _DTYPES.get(params.precision)
        memory_format = torch.channels_last if params.channels_last else torch.contiguous_format
        torch.manual_seed(0)
        self.model = build(params.model, params.num_classes).to(
            self.device, memory_format=memory_format
        )
        self.images = torch.randn(
            params.batch_size, 3, params.image_size, params.image_size, device=self.device
        ).contiguous(memory_format=memory_format)
        self.labels = torch.randint(0, params.num_classes, (params.batch_size,), device=self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.cuda and params.precision == "fp16")
        self.model.train(self.training)
        if self.cuda:
            torch.backends.cudnn.benchmark = True
            name = torch.cuda.get_device_name(self.device)
        else:
            name = f"{torch.get_num_threads()} threads"
        self.label = f"torch {torch.__version__} {device} ({name}), {params.precision}"

    def _autocast(self) -> torch.autocast:
        return torch.autocast(
            device_type=self.device.type,
            dtype=self.autocast_dtype or torch.float32,
            enabled=self.autocast_dtype is not None,
        )

    def step(self) -> None:
        if not self.training:
            with torch.inference_mode(), self._autocast():
                self.model(self.images)
            return
        self.optimizer.zero_grad(set_to_none=True)
        with self._autocast():
            loss = F.cross_entropy(self.model(self.images), self.labels)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()

    def timed_step(self) -> float:
        if not self.cuda:
            start = time.perf_counter()
            self.step()
            return time.perf_counter() - start
        # CUDA: kernels run asynchronously, so time with events on the stream and wait for the
        # end event before reading it; synchronise first so earlier work is not counted.
        torch.cuda.synchronize(self.device)
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        self.step()
        end.record()
        end.synchronize()
        return float(begin.elapsed_time(end)) / 1000.0


def prepare(params: CnnParams, device: str) -> TorchStepTimer:
    return TorchStepTimer(params, device)
