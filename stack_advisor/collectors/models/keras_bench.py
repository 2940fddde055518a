"""TensorFlow/Keras step timer for the CNN benchmark (same architectures as the torch one)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stack_advisor.microbench.frameworks import load_tensorflow

tf = load_tensorflow()

# after load_tensorflow(), which sets TensorFlow's log level before anything imports it (Keras
# models import keras at their top)
from stack_advisor.collectors.models.keras_models import build  # noqa: E402
from stack_advisor.schema.errors import MissingEnvironment, Unsupported  # noqa: E402

if TYPE_CHECKING:
    from stack_advisor.collectors.models.params import CnnParams


def resolve_device(requested: str) -> str:
    gpus = tf.config.list_physical_devices("GPU")
    if requested == "auto":
        return "cuda" if gpus else "cpu"
    if requested == "cuda" and not gpus:
        raise MissingEnvironment("cnn: device 'cuda' requested but TensorFlow sees no GPU")
    if requested not in ("cpu", "cuda"):
        raise Unsupported(
            f"cnn: device {requested!r} is not supported by the TensorFlow backend (cpu, cuda)"
        )
    return requested


def stack_facts() -> dict[str, str]:
    facts = {"framework": "tensorflow", "framework_version": tf.__version__}
    build_info: dict[str, Any] = dict(tf.sysconfig.get_build_info())
    if tf.config.list_physical_devices("GPU"):
        for key, name in (("cuda_version", "cuda"), ("cudnn_version", "cudnn")):
            if build_info.get(key):
                facts[name] = str(build_info[key])
    return facts


class KerasStepTimer:
    def __init__(self, params: CnnParams, device: str) -> None:
        if params.precision != "fp32":
            # Keras mixed precision is a global policy; keep this backend to fp32 for now.
            raise Unsupported(
                f"cnn: precision {params.precision} is not supported by the Keras backend (fp32)"
            )
        self.device_name = "/GPU:0" if device == "cuda" else "/CPU:0"
        tf.random.set_seed(0)
        with tf.device(self.device_name):
            self.model = build(params.model, params.image_size, params.num_classes)
            self.images = tf.random.normal(
                (params.batch_size, params.image_size, params.image_size, 3)
            )
            self.labels = tf.random.uniform(
                (params.batch_size,), 0, params.num_classes, dtype=tf.int32
            )
        self.optimizer = tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        model, optimizer = self.model, self.optimizer

        def train_step(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        def forward(x: Any) -> Any:
            return tf.reduce_sum(model(x, training=False))

        # graph-compiled once, as the decorator would
        train_graph, forward_graph = tf.function(train_step), tf.function(forward)
        self._run: Callable[[], Any] = (
            (lambda: train_graph(self.images, self.labels))
            if params.mode == "training"
            else (lambda: forward_graph(self.images))
        )
        self.label = f"tensorflow {tf.__version__} {device}, fp32"

    def step(self) -> None:
        with tf.device(self.device_name):
            self._run()

    def timed_step(self) -> float:
        # Reading the result back to the host waits for the device, as tf_cnn_benchmarks'
        # session.run does.
        start = time.perf_counter()
        with tf.device(self.device_name):
            self._run().numpy()
        return time.perf_counter() - start


def prepare(params: CnnParams, device: str) -> KerasStepTimer:
    return KerasStepTimer(params, device)
