"""A query's stack is read as the result's was (issue 41 items 5, 6): the runtime of the asked
benchmark out of a multi-runtime framework field, and the vendor's own closed-division PyTorch
stack of the optimised class."""

from __future__ import annotations

from stack_advisor.advisor.estimate.query import Query
from stack_advisor.advisor.estimate.stack_adjust import query_stack

NEXT_ROUND = (
    "TensorRT 10.14, CUDA 13.1, cuDNN 9.17, TensorRT-LLM feat/1.2-mlpinf, NVIDIA Dynamo "
    "mlperf-v6.0-dynamo-v0.8.0, vLLM CentML:mlperf-inf-mm-q3vl-v6.0"
)


def _query(benchmark: str, framework: str, **components: str) -> Query:
    return Query(
        family="mlperf-inference",
        benchmark=benchmark,
        scenario="Offline",
        metric="tokens_per_second",
        division="closed",
        accelerator="GB300",
        count=4,
        placement="bare-metal",
        components=dict(components),
        framework=framework,
    )


def test_the_asked_benchmarks_runtime_and_class() -> None:
    llm = query_stack(_query("gpt-oss-120b", NEXT_ROUND))
    assert llm is not None and llm[:2] == ("tensorrt-llm", None)  # not "vllm 6.0"
    assert llm[2] is not None and llm[2].software_class == "optimised"
    vision = query_stack(_query("resnet50", NEXT_ROUND))
    assert vision is not None and vision[:2] == ("tensorrt", "10.14")


def test_the_vendors_own_pytorch_is_optimised_the_word_alone_reference() -> None:
    text = "PyTorch 2.10.0+git1f2e3d4, ROCm 7.2.2"
    own = query_stack(_query("llama2-70b-99", text, implementation="vendor"))
    assert own is not None and own[2] is not None and own[2].software_class == "optimised"
    bare = query_stack(_query("llama2-70b-99", text))
    assert bare is not None and bare[2] is not None and bare[2].software_class == "reference"


def test_a_predicted_querys_stack_is_its_benchmarks_runtime(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """Through ``predict``: the multi-runtime text of a next-round system, asked for a model that
    is not generative (rgat), is read as TensorRT 10.14 in the answer's query and components,
    not as the vLLM branch tag the same text names for another benchmark."""
    base = {"scenario": "Offline", "accelerator": "B200", "accelerator_count": 8}
    asked = [
        {**base, "benchmark": "rgat", "metric": "samples_per_second", "framework": NEXT_ROUND},
        {**base, "benchmark": "llama2-70b-99", "metric": "tokens_per_second"},
    ]
    asked[1]["framework"] = NEXT_ROUND
    gnn, llm = kb_advisor.predict(asked)
    assert (gnn.query.framework, gnn.query.components.get("tensorrt")) == ("tensorrt", "10.14")
    assert "vllm" not in gnn.query.components
    assert llm.query.framework == "tensorrt-llm"
