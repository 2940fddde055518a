"""``advisor recommend|predict --model``: the proxy flags as a workload. The figures, in
predict's shapes, are ``stack_advisor.advisor.proxy.predictions``'s (the API's model queries
answer through them too).
"""

from __future__ import annotations

from typing import Any

from stack_advisor.advisor.proxy.predictions import MLPERF_INFERENCE, serving_scenario
from stack_advisor.schema.errors import InvalidInput


def described_model(model: str | None) -> bool:
    """Whether ``--model`` names a description file (``advisor.proxy.model.model_file``); the
    proxy's module is imported only when a model is given (a plain recommend never needs it)."""
    if model is None:
        return False
    from stack_advisor.advisor.proxy.model import model_file

    return model_file(model)


def proxy_fields(
    model: str | None, isl: int | None, osl: int | None, concurrency: int | None
) -> dict[str, Any]:
    """The workload fields of the proxy flags: ``--model FILE`` as a model object, and the
    traffic. A name stays a name (a catalogued LLM without results is answered by proxy too).

    Raises:
        InvalidInput: --isl/--osl/--concurrency without --model or --benchmark to apply to.
    """
    out: dict[str, Any] = {"isl": isl, "osl": osl, "concurrency": concurrency}
    if model is not None and described_model(model):
        from stack_advisor.advisor.proxy.model import read_model_file

        out["model"] = read_model_file(model)
    return {k: v for k, v in out.items() if v is not None}


def proxy_workload(
    *,
    model: str | None,
    benchmark: str | None,
    scenario: str | None,
    isl: int | None,
    osl: int | None,
    concurrency: int | None,
    accelerators: list[str] | None,
    family: str = MLPERF_INFERENCE,
) -> dict[str, Any]:
    """``predict --model``'s workload (a training run has no scenario).

    Raises:
        InvalidInput: neither --model nor --benchmark.
    """
    if model is None and benchmark is None:
        raise InvalidInput(
            "give --query FILE, or describe a model: --model FILE|NAME (docs/proxy.md)"
        )
    data: dict[str, Any] = {
        "family": family,
        "benchmark": benchmark,
        "model": model,
        "scenario": serving_scenario(family, scenario),
        "hardware": {"accelerators": accelerators or None},
        **proxy_fields(model, isl, osl, concurrency),
    }
    return {k: v for k, v in data.items() if v is not None}
