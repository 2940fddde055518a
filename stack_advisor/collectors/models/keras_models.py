"""The same architectures as ``torch_models``, in Keras (channels-last)."""

from __future__ import annotations

from typing import Any

import keras
from keras import layers


def _bottleneck(x: Any, width: int, stride: int) -> Any:
    out_channels = width * 4
    shortcut = x
    if stride != 1 or x.shape[-1] != out_channels:
        shortcut = layers.Conv2D(out_channels, 1, strides=stride, use_bias=False)(x)
        shortcut = layers.BatchNormalization()(shortcut)
    y = layers.Conv2D(width, 1, use_bias=False)(x)
    y = layers.ReLU()(layers.BatchNormalization()(y))
    y = layers.Conv2D(width, 3, strides=stride, padding="same", use_bias=False)(y)
    y = layers.ReLU()(layers.BatchNormalization()(y))
    y = layers.Conv2D(out_channels, 1, use_bias=False)(y)
    y = layers.BatchNormalization()(y)
    return layers.ReLU()(layers.Add()([y, shortcut]))


def resnet50(image_size: int, num_classes: int = 1000) -> keras.Model:
    inputs = keras.Input((image_size, image_size, 3))
    x = layers.ZeroPadding2D(3)(inputs)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False)(x)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    x = layers.ZeroPadding2D(1)(x)
    x = layers.MaxPooling2D(3, strides=2)(x)
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            x = _bottleneck(x, width, stride if i == 0 else 1)
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, layers.Dense(num_classes)(x), name="resnet50")


def small_cnn(image_size: int, num_classes: int = 1000) -> keras.Model:
    inputs = keras.Input((image_size, image_size, 3))
    x = inputs
    for width in (32, 64, 128):
        x = layers.Conv2D(width, 3, strides=2, padding="same", use_bias=False)(x)
        x = layers.ReLU()(layers.BatchNormalization()(x))
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, layers.Dense(num_classes)(x), name="small_cnn")


def build(name: str, image_size: int, num_classes: int = 1000) -> keras.Model:
    if name == "resnet50":
        return resnet50(image_size, num_classes)
    if name == "small_cnn":
        return small_cnn(image_size, num_classes)
    raise ValueError(f"unknown model {name!r}; valid: resnet50, small_cnn")
