"""CPU transfers (issue 27): a CPU never measured on a benchmark, from the CPUs that ran it,
scaled by the catalogue's per-socket figures and calibrated by its own replays; on a small table
of real published CPU-only results in a real embedded store (``tests.support.cpu_results``)."""

from __future__ import annotations

import pytest

from stack_advisor.advisor.engine import Advisor
from stack_advisor.advisor.estimate import hardware
from stack_advisor.advisor.estimate.cpu_transfer import SAME_CORE
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.estimate.query import Query
from stack_advisor.advisor.results import Basis
from tests.support.cpu_results import RESNET50, SOCKETS, write_cpu_results


@pytest.fixture
def index(embedded_store) -> EvidenceIndex:  # type: ignore[no-untyped-def]
    write_cpu_results(embedded_store)
    built = EvidenceIndex(Advisor(embedded_store).table())
    built.min_residuals = (
        8  # a 36-row table replays fewer transfers than a whole knowledge base's 40
    )
    return built


def _query(cpu: str, scenario: str = "Offline") -> Query:
    name = f"CPU {cpu}"
    metric = "samples_per_second" if scenario == "Offline" else "queries_per_second"
    return Query(
        family="mlperf-inference",
        benchmark="resnet50",
        scenario=scenario,
        metric=metric,
        division="closed",
        accelerator=hardware.figures(name).name,
        raw_accelerator=name,
        count=SOCKETS,
        placement="bare-metal",
    )


def test_a_cpu_of_a_measured_core_transfers_from_it_by_its_figures(index: EvidenceIndex) -> None:
    est = index.estimate(_query("Intel Xeon 6787P"))
    assert est.basis is Basis.TRANSFERRED, est.reason
    factors = {name: text for name, text, _ in est.factors}
    assert factors["transfer kind"] == SAME_CORE
    assert est.references == ["CPU Intel Xeon 6980P"]  # the one measured Granite Rapids part
    assert "352.256 T at int8" in factors["target"] and "409.6 GB/s" in factors["target"]
    measured = RESNET50[("v4.1", "Intel Xeon 6980P", "Offline")][0]
    # fewer cores and channels than the 6980P: below it per socket, and within the spec ratio's
    # reach
    assert est.value is not None and est.low is not None and est.high is not None
    assert 0.4 * measured < est.value < measured
    assert est.low < est.value < est.high
    assert any("CPU transfer (kind cpu, same core)" in n for n in est.notes)


def test_a_cpu_of_another_core_transfers_from_the_latest_cpus(index: EvidenceIndex) -> None:
    est = index.estimate(
        _query("Intel Xeon Platinum 8490H")
    )  # Sapphire Rapids: 8480+ ran it, in v3.0
    assert est.basis is Basis.TRANSFERRED, est.reason
    assert est.references == ["CPU Intel Xeon Platinum 8480+"]
    est = index.estimate(_query("Intel Xeon Platinum 8580"))  # Emerald Rapids beside the 8592+
    assert est.basis is Basis.TRANSFERRED and "CPU Intel Xeon Platinum 8592+" in est.references


def test_a_cpu_without_a_unit_in_common_or_without_figures_is_refused(index: EvidenceIndex) -> None:
    est = index.estimate(
        _query("AMD EPYC 9654")
    )  # fp32 only (no documented int8 rate) vs int8 Xeons
    assert est.basis is Basis.UNSUPPORTED and "CPU never measured on this benchmark at fp32" in (
        est.reason or ""
    )
    est = index.estimate(_query("Intel Xeon 6780E"))  # E-cores: no documented per-cycle rate
    assert est.basis is Basis.UNSUPPORTED and "no published CPU figures" in (est.reason or "")
    assert "peak compute" in (est.reason or "")


def test_accelerators_and_cpus_are_never_each_others_references(index: EvidenceIndex) -> None:
    q = Query(
        family="mlperf-inference",
        benchmark="resnet50",
        scenario="Offline",
        metric="samples_per_second",
        division="closed",
        accelerator=hardware.figures("NVIDIA H100-SXM5-80GB").name,
        raw_accelerator="NVIDIA H100-SXM5-80GB",
        count=1,
        placement="bare-metal",
    )
    est = index.estimate(q)
    assert est.basis is Basis.UNSUPPORTED and "CPU" not in " ".join(est.references)


def test_too_few_cpu_replays_are_refused_with_the_reason(index: EvidenceIndex) -> None:
    index.min_residuals = 10_000
    est = index.estimate(_query("Intel Xeon 6787P"))
    assert est.basis is Basis.UNSUPPORTED and "too few CPU transfers to calibrate" in (
        est.reason or ""
    )


def test_cpu_replays_fill_their_own_pools(index: EvidenceIndex) -> None:
    pools = index.residuals_for("mlperf-inference")
    kinds = {k[3] for k in pools if len(k) == 4 and k[0] is Basis.TRANSFERRED}
    assert kinds <= {"cpu", SAME_CORE} and kinds
    assert all(len(pools[k]) >= 1 for k in pools if len(k) == 4 and k[0] is Basis.TRANSFERRED)
