"""ResNet-50 (v1.5, as in tf_cnn_benchmarks' resnet50_v1.5 and torchvision) and a small CNN."""

from __future__ import annotations

import torch
from torch import nn


class Bottleneck(nn.Module):  # type: ignore[misc]
    """1x1 → 3x3 (carries the stride: v1.5) → 1x1 ×4, with a projection shortcut when needed."""

    expansion = 4

    def __init__(self, in_channels: int, width: int, stride: int = 1) -> None:
        super().__init__()
        out_channels = width * self.expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + self.shortcut(x))


class ResNet50(nn.Module):  # type: ignore[misc]
    STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))  # width, blocks, stride

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        layers: list[nn.Module] = []
        channels = 64
        for width, blocks, stride in self.STAGES:
            for i in range(blocks):
                layers.append(Bottleneck(channels, width, stride if i == 0 else 1))
                channels = width * Bottleneck.expansion
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))


class SmallCNN(nn.Module):  # type: ignore[misc]
    """Three conv-BN-ReLU blocks (32, 64, 128 channels, stride 2) and a classifier: a CNN that
    trains in milliseconds per step on a CPU, for quick profiles and tests."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        blocks: list[nn.Module] = []
        channels = 3
        for width in (32, 64, 128):
            blocks += [
                nn.Conv2d(channels, width, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
            ]
            channels = width
        self.features = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


def build(name: str, num_classes: int = 1000) -> nn.Module:
    if name == "resnet50":
        return ResNet50(num_classes)
    if name == "small_cnn":
        return SmallCNN(num_classes)
    raise ValueError(f"unknown model {name!r}; valid: resnet50, small_cnn")


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
