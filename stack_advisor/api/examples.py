"""Request examples shown in the OpenAPI document (illustrative values, not measurements)."""

from __future__ import annotations

from typing import Any

RESULT_DOCUMENT: dict[str, Any] = {
    "document_version": 1,
    "run": {
        "run_id": "run-2026-01-15-node-a",
        "started_at": "2026-01-15T10:00:00Z",
        "collector": "stack-advisor",
        "collector_version": "0.1.0",
        "profile": "quick",
    },
    "provenance": {
        "kind": "measured",
        "source": "stack-advisor-collector",
        "details": {"host": "node-a"},
    },
    "stack": {
        "driver": "550.54.15",
        "cuda": "12.4",
        "cudnn": "9.1.0",
        "framework": "pytorch",
        "framework_version": "2.3.1",
    },
    "accelerator": {
        "model": "NVIDIA A100-SXM4-80GB",
        "vendor": "nvidia",
        "count": 1,
        "memory_mib": 81920,
        "compute_capability": "8.0",
    },
    "placement": {"kind": "bare-metal", "evidence": ["no hypervisor cpuid bit"]},
    "host": {"name": "node-a", "cores": 64},
    "measurements": [
        {
            "benchmark": {
                "family": "cnn",
                "name": "resnet50-train",
                "parameters": {"batch_size": 64, "precision": "fp16"},
            },
            "metric": "throughput",
            "value": 1234.5,
            "unit": "images/s",
            "samples": 5,
            "p10": 1220.0,
            "p90": 1248.0,
            "cv": 0.01,
            "timestamp": "2026-01-15T10:05:00Z",
        }
    ],
    "failures": [],
}

FAILURE: dict[str, Any] = {
    "stack": RESULT_DOCUMENT["stack"],
    "accelerator": RESULT_DOCUMENT["accelerator"],
    "placement": RESULT_DOCUMENT["placement"],
    "provenance": RESULT_DOCUMENT["provenance"],
    "run_id": "run-2026-01-15-node-a",
    "benchmark": {"family": "tf_cnn", "name": "resnet50", "parameters": {"batch_size": 64}},
    "stage": "run",
    "error_class": "CUDA_ERROR_NO_BINARY_FOR_GPU",
    "message": "no kernel image is available for execution on the device",
}
