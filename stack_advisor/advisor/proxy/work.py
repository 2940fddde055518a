"""The work of one generated token: FLOPs and bytes, from a model's shape and the traffic.

Serving throughput counts output tokens (MLPerf's tokens/s), so the prefill of a request's input
is shared among its output tokens. Per output token:

- FLOPs: 2 x active parameters x (input + output) / output tokens, plus attention's
  4 x layers x attention width x mean context per processed token;
- bytes (decode): the weights a step reads, shared by the batch (a MoE step reads the experts
  the batch's tokens touch: E x (1 - (1 - k/E)^batch) of E per layer), plus the KV cache of the
  sequence at its mean decode context.

The time model is a roofline sum, ``FLOPs / peak + bytes / bandwidth`` up to each term's
efficiency; ``stack_advisor.advisor.proxy.estimate`` learns the ratio of the two efficiencies.
"""

from __future__ import annotations

from dataclasses import dataclass

from stack_advisor.advisor.proxy.model import PRECISION_BYTES, ModelSpec
from stack_advisor.schema.errors import InvalidInput


@dataclass(frozen=True)
class Traffic:
    """Serving traffic: mean input and output tokens per request, and the sequences one
    replica decodes at once."""

    isl: int
    osl: int
    batch: int

    def __post_init__(self) -> None:
        for name in ("isl", "osl", "batch"):
            value = getattr(self, name)
            if value < 1:
                raise InvalidInput(f"{name} = {value} must be at least 1")

    @property
    def context(self) -> int:
        return self.isl + self.osl


@dataclass(frozen=True)
class TokenWork:
    flops: float
    bytes: float


def weights_read_per_step(model: ModelSpec, batch: int) -> float:
    """Parameters one decode step reads: everything but the routed experts, plus the experts
    the batch's tokens are expected to touch (uniform routing)."""
    if not model.moe:
        return model.params
    share = 1.0 - (1.0 - model.experts_per_token / model.experts) ** batch
    return model.params - model.expert_params + model.expert_params * share


def token_work(model: ModelSpec, traffic: Traffic, precision: str) -> TokenWork:
    """FLOPs and bytes of one output token (see the module's docstring)."""
    processed = traffic.context / traffic.osl
    mean_context = traffic.isl / 2 + traffic.osl / 2
    attn = 4.0 * model.layers * model.attn_dim * mean_context
    flops = (2.0 * model.active_params + attn) * processed
    width = PRECISION_BYTES[precision]
    kv_width = max(width, PRECISION_BYTES["fp8"])
    weights = weights_read_per_step(model, traffic.batch) * width / traffic.batch
    kv = model.kv_elems_per_token * (traffic.isl + traffic.osl / 2) * kv_width
    return TokenWork(flops=flops, bytes=weights + kv)
