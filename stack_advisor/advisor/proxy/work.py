"""The work of one generated token: FLOPs and bytes, prefill and decode apart, from a model's
shape and the traffic.

Serving throughput counts output tokens (MLPerf's tokens/s), so the prefill of a request's input
is shared among its output tokens. Per output token:

- prefill FLOPs: (2 x active parameters x input tokens + causal attention's
  4 x layers x attention width x input^2 / 2) / output tokens;
- decode FLOPs: 2 x active parameters + 4 x layers x attention width x the mean decode context
  (input + output / 2);
- weight bytes: the weights a decode step reads, shared by the batch (a MoE step reads the experts
  the batch's tokens touch: E x (1 - (1 - k/E)^batch) of E per layer);
- KV bytes: the KV cache of the sequence at its mean decode context.

A replica split over ``tp`` ranks also sends its hidden state between them: two all-reduces
per layer for every token processed (``link_bytes``); that time is counted at the part's published
scale-up link bandwidth, not fitted (measured: LOO median APE Offline 25.2% -> 19.8%, Server
20.1% -> 22.8%; llama3.1-405b, the one model on 8-16 ranks, Offline 75.4% -> 46.0%, docs/proxy.md).

``stack_advisor.advisor.proxy.efficiency`` turns them into time with a compute and a memory
efficiency learned from the references.
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
    """One output token's work, by part: FLOPs of prefill and decode, bytes of weights and of
    the KV cache."""

    prefill_flops: float
    decode_flops: float
    weight_bytes: float
    kv_bytes: float

    @property
    def flops(self) -> float:
        return self.prefill_flops + self.decode_flops

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes


def weights_read_per_step(model: ModelSpec, batch: int) -> float:
    """Parameters one decode step reads: everything but the routed experts, plus the experts
    the batch's tokens are expected to touch (uniform routing)."""
    if not model.moe:
        return model.params
    share = 1.0 - (1.0 - model.experts_per_token / model.experts) ** batch
    return model.params - model.expert_params + model.expert_params * share


def token_work(model: ModelSpec, traffic: Traffic, precision: str) -> TokenWork:
    """FLOPs and bytes of one output token (see the module's docstring)."""
    isl, osl = traffic.isl, traffic.osl
    attn_width = 4.0 * model.layers * model.attn_dim
    prefill = (2.0 * model.active_params * isl + attn_width * isl * isl / 2) / osl
    decode = 2.0 * model.active_params + attn_width * (isl + osl / 2)
    width = PRECISION_BYTES[precision]
    kv_width = max(width, PRECISION_BYTES["fp8"])
    weights = weights_read_per_step(model, traffic.batch) * width / traffic.batch
    kv = model.kv_elems_per_token * (isl + osl / 2) * kv_width
    return TokenWork(prefill_flops=prefill, decode_flops=decode, weight_bytes=weights, kv_bytes=kv)


ACTIVATION_BYTES = 2.0  # the hidden state tensor-parallel ranks all-reduce, in bf16


def link_bytes(model: ModelSpec, traffic: Traffic, tp: int) -> float:
    """Bytes one of ``tp`` tensor-parallel ranks sends per output token: two all-reduces of the
    hidden state per layer (after attention and after the MLP) for every token processed (the
    request's input shared among its output tokens, and the token itself); a ring all-reduce
    sends 2 (tp - 1) / tp of the message. 0 on one rank or where the width is unknown."""
    if tp <= 1 or not model.hidden:
        return 0.0
    tokens = traffic.isl / traffic.osl + 1.0
    message = 2.0 * model.layers * model.hidden * ACTIVATION_BYTES
    return tokens * message * 2.0 * (tp - 1) / tp
