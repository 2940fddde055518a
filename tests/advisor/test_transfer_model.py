"""The transfer models (stack_advisor.advisor.estimate.transfer): the scikit-learn model is kept for
a slice only where its leave-one-accelerator-out error is lower than the roofline blend's; fitted
models are persisted with the calibration, and a fresh process answers from them without importing
scikit-learn."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate import calibration_file, transfer
from stack_advisor.advisor.estimate.facts import canonical_accelerator, peak_figures
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.schema.models import IngestBatch
from stack_advisor.store.registry import open_store
from stack_advisor.store.starter import load_snapshot

REPO = Path(__file__).resolve().parents[2]
GPUS = [
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA H100-SXM5-80GB",
    "NVIDIA T4",
    "NVIDIA A10",
    "NVIDIA A30",
    "NVIDIA L4",
    "NVIDIA L40S",
    "NVIDIA A2",
    "NVIDIA L40",
    "NVIDIA H100-PCIe-80GB",
]


def _refs(value_of) -> transfer.References:  # type: ignore[no-untyped-def]
    """References on the catalogue's real peak figures, with values from ``value_of(peaks)``."""
    out: transfer.References = {}
    for name in GPUS:
        peaks = peak_figures(name)
        assert peaks is not None, name
        out[name] = (value_of(peaks), peaks, "nvidia")
    return out


def _fit(refs: transfer.References) -> transfer.TransferModel:
    alpha = transfer.learn_alpha(refs, True)
    return transfer.fit(refs, True, alpha, "nvidia", "learned").model


def _roofline_error(refs: transfer.References, model: transfer.TransferModel) -> float:
    errs = []
    for acc, (value, peaks, _) in refs.items():
        others = {a: v for a, v in refs.items() if a != acc}
        errs.append(abs(math.log(value / transfer.predict(model, others, peaks)[0])))
    return float(np.mean(errs))


def test_the_learned_model_is_kept_only_where_its_held_out_error_is_lower() -> None:
    # values exactly on a roofline blend: the blend cannot be beaten, so it stays
    exact = _refs(lambda p: 3.0 * p[0] ** 0.5 * p[1] ** 0.5)
    kept = _fit(exact)
    assert kept.method == transfer.ROOFLINE and kept.alpha == 0.5
    assert kept.roofline_cv_error < 1e-9 and not kept.learned_cv_error < kept.roofline_cv_error
    # super-linear in compute (exponents summing to more than 1): no blend fits, the ridge does
    steep = _refs(lambda p: 0.01 * p[0] ** 1.6)
    learned = _fit(steep)
    assert learned.method == transfer.LEARNED
    assert learned.learned_cv_error < learned.roofline_cv_error
    alpha = transfer.learn_alpha(steep, True)
    assert learned.roofline_cv_error == pytest.approx(
        _roofline_error(steep, transfer.roofline(alpha, True))
    )
    assert learned.compute_exp > 1.0  # it found the steeper law
    value, used = transfer.predict(learned, steep, peak_figures("NVIDIA H200-SXM-141GB"))  # type: ignore[arg-type]
    assert used and value == pytest.approx(0.01 * 1979.0**1.6, rel=0.15)
    assert "Ridge" in learned.describe() and "leave-one-accelerator-out" in learned.describe()


def test_on_published_results_each_slice_keeps_the_model_with_the_lower_error(
    embedded_store,
) -> None:  # type: ignore[no-untyped-def]
    rows = [o for o in load_snapshot().observations if o.benchmark.name in ("resnet50", "bert-99")][
        :3000
    ]
    embedded_store.ingest(IngestBatch(observations=rows))
    index = EvidenceIndex(Advisor(embedded_store).table(), transfer_method="learned")
    models = index.calibration().transfers
    tried = [m for m in models.values() if not math.isnan(m.learned_cv_error)]
    assert tried, "no slice had enough accelerators to try the learned model"
    for model in tried:
        assert (model.method == transfer.LEARNED) == (
            model.learned_cv_error < model.roofline_cv_error
        )
    roofline = EvidenceIndex(index.table).calibration().transfers
    assert roofline.keys() == models.keys()
    assert all(
        m.method == transfer.ROOFLINE and math.isnan(m.learned_cv_error) for m in roofline.values()
    )
    for key, model in models.items():  # where the blend stays, it is the very same blend
        if model.method == transfer.ROOFLINE:
            assert (model.compute_exp, model.bandwidth_exp) == (
                roofline[key].compute_exp,
                roofline[key].bandwidth_exp,
            )


ANSWER = """
import json, os, sys
from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.knowledge.cache_folders import CacheFolders
from stack_advisor.store.registry import open_store

# a fresh process, its caches from the environment as the CLI's
with open_store(sys.argv[1]) as store:
    advisor = Advisor(store, caches=CacheFolders.from_environ(os.environ))
    advisor.transfer_method = sys.argv[2]
    answers = advisor.predict(json.loads(sys.argv[3]))
print(json.dumps({"sklearn": "sklearn" in sys.modules,
                  "answers": [[p.basis.value, p.value, p.interval.low, p.interval.high,
                               [f.value for f in p.factors]] for p in answers]}))
"""


def _answer(uri: str, method: str, queries: list[dict[str, object]]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", ANSWER, uri, method, json.dumps(queries)],
        check=False,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_persisted_models_answer_in_a_fresh_process_without_scikit_learn(tmp_path: Path) -> None:
    uri = f"embedded:{tmp_path / 'kb'}"
    with open_store(uri) as store:
        store.ensure_schema()
        rows = [
            o for o in load_snapshot().observations if o.benchmark.name in ("resnet50", "bert-99")
        ][:3000]
        store.ingest(IngestBatch(observations=rows))
        table = Advisor(store).table()
    index = EvidenceIndex(table, transfer_method="learned")
    learned = {
        k: m for k, m in index.calibration().transfers.items() if m.method == transfer.LEARNED
    }
    assert learned, "no slice of these results chose the learned model"
    # a learned slice and a part of its references' device class never measured on it (an
    # A100-era slice: B200 is 28x apart in peak compute times bandwidth, refused by
    # ``transfer.within_span``)
    _, benchmark, scenario, metric, division, target = next(
        (*key[:5], n)
        for key in sorted(learned)
        for n in ("NVIDIA H200-SXM-141GB", "NVIDIA L40S", "NVIDIA H100-NVL-94GB", "NVIDIA L4")
        if canonical_accelerator(n) not in index.slices[key[:5]]
    )
    queries = [
        {
            "accelerator": target,
            "accelerator_count": 1,
            "benchmark": benchmark,
            "scenario": scenario,
            "metric": metric,
            "parameters": {"division": division},
        }
    ]

    cold = _answer(uri, "learned", queries)  # calibrates: fits, and persists what it fitted
    assert cold["sklearn"] is True
    assert calibration_file.load(table, "learned", folder=Advisor.caches.calibration) is not None
    persisted = calibration_file.load(table, "learned", folder=Advisor.caches.calibration).transfers  # type: ignore[union-attr]
    assert {k: m for k, m in persisted.items() if m.method == transfer.LEARNED} == learned
    warm = _answer(uri, "learned", queries)  # answers from the persisted models
    assert warm["sklearn"] is False
    assert warm["answers"] == cold["answers"]
    basis, value, *_, factors = warm["answers"][0]  # type: ignore[index]
    assert basis == "transferred" and value > 0
    assert any("Ridge" in f for f in factors)  # the figure names the model that made it
    assert _answer(uri, "roofline", queries)["sklearn"] is False  # the default never imports it
