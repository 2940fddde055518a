"""CNN model definitions for the framework-neutral CNN benchmark, in PyTorch and Keras.

The same architectures are defined for each framework here in the project (no weights, nothing
downloaded), so a throughput figure compares stacks on the same workload. Frameworks are imported
only when a builder is called.
"""

from __future__ import annotations

from typing import Any

MODELS = ("resnet50", "small_cnn")


def build_torch_model(name: str, num_classes: int = 1000) -> Any:
    """A ``torch.nn.Module`` for ``name`` (one of MODELS)."""
    from stack_advisor.collectors.models import torch_models

    return torch_models.build(name, num_classes)


def build_keras_model(name: str, image_size: int, num_classes: int = 1000) -> Any:
    """A ``keras.Model`` (channels-last input) for ``name`` (one of MODELS)."""
    from stack_advisor.collectors.models import keras_models

    return keras_models.build(name, image_size, num_classes)
