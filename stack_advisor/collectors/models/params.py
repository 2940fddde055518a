"""The parameters of the framework-neutral CNN benchmark: what the runner
(``stack_advisor.collectors.runners.cnn``) validates and the framework backends (``torch_bench``,
``keras_bench``) run, kept below both."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class CnnParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    framework: Literal["torch", "tensorflow"] = "torch"
    model: str = "resnet50"
    mode: Literal["training", "forward-only"] = "training"
    batch_size: int = Field(default=32, ge=1)
    image_size: int = Field(default=224, ge=16, le=1024)
    num_classes: int = Field(default=1000, ge=2)
    num_batches: int = Field(default=100, ge=2)
    num_warmup_batches: int = Field(default=10, ge=0)
    precision: Literal["fp32", "fp16", "bf16"] = "fp32"
    channels_last: bool = False

    def identity(self, device: str) -> dict[str, Any]:
        """What defines the workload (run length is not part of it; the framework is the stack)."""
        return {
            "model": self.model,
            "mode": self.mode,
            "batch_size": self.batch_size,
            "image_size": self.image_size,
            "num_classes": self.num_classes,
            "precision": self.precision,
            "data": "synthetic",
            "device": device,
        }
