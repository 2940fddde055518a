"""The options of ``advisor recommend``, one alias each, so the command's signature stays a list
of names (Typer derives each flag from the parameter's name: ``batch_size`` is ``--batch-size``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from stack_advisor.advisor.manifests.target_kind import SnippetTarget
from stack_advisor.advisor.results import DEFAULT_TOP, MAX_TOP

BenchmarkOpt = Annotated[str | None, typer.Option(help="Benchmark name, e.g. resnet50, bert-99.")]
FamilyOpt = Annotated[
    str, typer.Option(help="Benchmark family: mlperf-inference, mlperf-training, cnn, pi, ...")
]
TaskOpt = Annotated[
    str | None, typer.Option(help="A task standing for a benchmark, e.g. image-classification.")
]
ScenarioOpt = Annotated[
    str | None, typer.Option(help="Offline, Server, Interactive, SingleStream, MultiStream.")
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        help="Model: a benchmark parameter by name, or a description to estimate by proxy: a "
        "Hugging Face config.json or a short YAML (docs/proxy.md)."
    ),
]
IslOpt = Annotated[int | None, typer.Option(min=1, help="Proxy: input tokens per request.")]
OslOpt = Annotated[int | None, typer.Option(min=1, help="Proxy: output tokens per request.")]
ConcurrencyOpt = Annotated[
    int | None,
    typer.Option(min=1, help="Proxy: concurrent requests per replica (default: as memory holds)."),
]
BatchSizeOpt = Annotated[int | None, typer.Option(help="Batch size (benchmark parameter).")]
PrecisionOpt = Annotated[str | None, typer.Option(help="Precision (benchmark parameter).")]
ParamOpt = Annotated[
    list[str] | None, typer.Option(help="Other benchmark parameter key=value (repeatable).")
]
MetricOpt = Annotated[
    str | None, typer.Option(help="Metric to rank on (default: from the objective).")
]
PredictMetricOpt = Annotated[
    str | None,
    typer.Option(
        "--metric",
        help="With --benchmark/--accelerator/--count: the metric to predict, e.g. "
        "tokens_per_second, ttft_p99_ms, tpot_p99_ms (default: the one a ranking of the "
        "benchmark reports).",
    ),
]
StackTextOpt = Annotated[
    str | None,
    typer.Option(
        "--stack",
        help="With --benchmark/--accelerator/--count: the software stack, as published or a "
        "framework name, e.g. 'TensorRT 10.2, CUDA 12.4' or vllm (a query's framework).",
    ),
]
FrameworkOpt = Annotated[
    list[str] | None,
    typer.Option(
        help="Component constraint NAME[SPEC], e.g. 'tensorrt>=8.5' or 'pytorch==2.1.*' "
        "(repeatable)."
    ),
]
AcceleratorOpt = Annotated[
    list[str] | None,
    typer.Option(
        help="Allowed accelerator: a board (A100-SXM4-80GB), family (H100), generation "
        "(hopper) or vendor; repeatable."
    ),
]
CountOpt = Annotated[int | None, typer.Option(help="Exact accelerator count.", min=1)]
MinCountOpt = Annotated[int | None, typer.Option(help="Minimum accelerator count.", min=1)]
MaxCountOpt = Annotated[int | None, typer.Option(help="Maximum accelerator count.", min=1)]
PlacementOpt = Annotated[
    list[str] | None,
    typer.Option(help="Allowed placement: bare-metal, passthrough, vgpu, unknown (repeatable)."),
]
NoCpuOpt = Annotated[bool, typer.Option("--no-cpu", help="Leave CPU-only systems out.")]
DriverOpt = Annotated[
    str | None, typer.Option(help="Driver on your nodes; stacks needing newer are excluded.")
]
ObjectiveOpt = Annotated[str, typer.Option(help="throughput, latency or cost.")]
MinEvidenceOpt = Annotated[int, typer.Option(help="Observations needed to count as observed.")]
MaxTtftOpt = Annotated[
    float | None,
    typer.Option(
        help="Serving limit: exclude candidates whose observed p99 time to first token is "
        "above it (ms)."
    ),
]
MaxTpotOpt = Annotated[
    float | None,
    typer.Option(
        help="Serving limit: exclude candidates whose observed p99 time per output token is "
        "above it (ms)."
    ),
]
ObservedOnlyOpt = Annotated[
    bool, typer.Option("--observed-only", help="Rank observed candidates only.")
]
MinConfidenceOpt = Annotated[
    float,
    typer.Option(
        "--min-confidence",
        min=0.0,
        max=1.0,
        help="Drop rows whose 80% interval low/high ratio is below this (0..1).",
    ),
]
WorkloadFileOpt = Annotated[
    Path | None,
    typer.Option("--workload", help="Workload as YAML or JSON (flags are ignored when given)."),
]
TopOpt = Annotated[
    int | None,
    typer.Option(
        "--top",
        min=1,
        help=f"How many recommendations (default {DEFAULT_TOP}; with --all, up to {MAX_TOP}).",
    ),
]
SnippetsOpt = Annotated[
    bool, typer.Option("--snippets", help="Also print each Kubernetes snippet (table mode).")
]
ClusterOpt = Annotated[
    str | None,
    typer.Option(
        "--cluster",
        help="Rank this cluster's node pools (an inventory recorded by `advisor nodes sync`).",
    ),
]
NodesFileOpt = Annotated[
    str | None,
    typer.Option(
        "--nodes",
        help="Rank the node pools of `kubectl get nodes -o json` output (a file, or - for stdin).",
    ),
]
PoolLabelOpt = Annotated[
    str | None,
    typer.Option(
        "--pool-label",
        help="The label that names node pools (default: the GKE/EKS/AKS/Karpenter ones).",
    ),
]
WhatIfDriverOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--what-if-driver",
        help="POOL=VERSION: re-rank as if that pool ran this driver (repeatable).",
    ),
]
GpusOpt = Annotated[
    int | None,
    typer.Option(
        "--gpus",
        min=1,
        help="GPUs (or MIG slices) the job needs; more than a node holds makes a gang. "
        "With --family mlperf-training and no cluster: the accelerator budget (rank what "
        "fits it).",
    ),
]
NodesCountOpt = Annotated[
    int | None, typer.Option("--nodes-count", min=1, help="Nodes the job spans (a gang when > 1).")
]
ImageOpt = Annotated[
    str | None,
    typer.Option(
        "--image",
        help="Container image for the Kubernetes snippets, for stacks the knowledge base "
        "records "
        "none for (without one there is no snippet).",
    ),
]
TargetOpt = Annotated[
    SnippetTarget | None,
    typer.Option(
        "--target",
        case_sensitive=False,
        help="What each Kubernetes snippet is: pod (default), deployment, dra, kueue, lws, "
        "trainjob, jobset, kubevirt (docs/placement.md). A multi-node row never becomes one Pod.",
    ),
]
PerPoolOpt = Annotated[
    int, typer.Option("--per-pool", min=1, help="Stacks per pool (cluster mode).")
]
PricesOpt = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        help="Price table YAML (cost per accelerator-hour per placement) for --objective cost.",
    ),
]
RulesOpt = Annotated[
    Path | None,
    typer.Option(
        "--rules",
        help="Compatibility rules: a YAML file or a directory of them (default: packaged).",
    ),
]

AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        help="the round figures are for: today (default: the newest round published by today, "
        "a forecast where the knowledge base lacks it), now (the newest round holding each "
        "benchmark), next (one round ahead), a date such as 2026-05-01 or a round name such as "
        "v6.0; for predict, a query's own as_of wins",
    ),
]


def checked_as_of(text: str) -> str:
    """``--as-of`` as given, when it names a round.

    Raises:
        InvalidInput: it names none (the message says what would).
    """
    from stack_advisor.advisor.estimate.as_of import as_of_error
    from stack_advisor.schema.errors import InvalidInput

    problem = as_of_error(text)
    if problem:
        raise InvalidInput(f"--{problem.replace('as_of', 'as-of', 1)}")
    return text


AllRowsOpt = Annotated[
    bool,
    typer.Option(
        "--all",
        help="Every ranked row; default: one per (accelerator, count, placement, stack "
        "family), its best evidence, with how many more results it folds in.",
    ),
]
