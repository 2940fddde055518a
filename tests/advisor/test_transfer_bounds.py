"""Transfers bounded by physics (issue 43): a figure moves with both peak compute and bandwidth,
no reference across device classes, no interval end beyond what the part's peaks allow. Over the
starter knowledge base and the catalogue's published figures."""

from __future__ import annotations

import re

import pytest

from stack_advisor.advisor.estimate import transfer
from stack_advisor.advisor.estimate.hardware import scaling_figures
from stack_advisor.advisor.results import Basis

LLAMA = {"benchmark": "llama2-70b-99", "scenario": "Offline", "metric": "tokens_per_second"}
B200_RESNET = {
    "benchmark": "resnet50",
    "scenario": "Offline",
    "metric": "samples_per_second",
    "accelerator": "B200-SXM-180GB",
    "accelerator_count": 1,
}


def test_every_blend_weighs_both_compute_and_bandwidth() -> None:
    assert transfer.ALPHAS and all(0 < a < 1 for a in transfer.ALPHAS)


def test_a_workstation_card_is_not_of_an_accelerators_device_class() -> None:
    gaudi = scaling_figures("Intel Gaudi 3", "8-bit")
    b60 = scaling_figures("Intel Arc Pro B60 Dual 48GB", "8-bit")
    h100 = scaling_figures("H100-SXM5-80GB", "8-bit")
    h200 = scaling_figures("H200-SXM-141GB", "8-bit")
    assert gaudi and b60 and h100 and h200
    assert not transfer.within_span(b60, gaudi)
    assert transfer.within_span(h100, h200)


def test_the_peak_bound_is_the_faster_resources_ratio() -> None:
    h100 = scaling_figures("H100-SXM5-80GB", "8-bit")
    b200 = scaling_figures("B200-SXM-180GB", "8-bit")
    assert h100 and b200
    refs = {"H100": (100.0, h100, "nvidia")}
    ratio = max(b200[0] / h100[0], b200[1] / h100[1])
    assert transfer.peak_bound(refs, ["H100"], b200, True) == pytest.approx(100.0 * ratio)
    assert transfer.peak_bound(refs, ["H100"], b200, False) == pytest.approx(100.0 / ratio)


def test_a_part_with_a_seventh_of_the_compute_does_not_outserve_h100(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    h20, h100 = kb_advisor.predict(
        [
            {**LLAMA, "accelerator": "H20", "accelerator_count": 8},
            {**LLAMA, "accelerator": "H100-SXM5-80GB", "accelerator_count": 8},
        ]
    )
    assert h100.value is not None
    if h20.value is not None:  # transferred: it must move with compute too
        assert h20.interval is not None and h20.interval.high < h100.value
        assert any(f.name == "reference" and "compute^0 " not in f.value for f in h20.factors)


def test_no_transfer_across_device_classes(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    (gaudi,) = kb_advisor.predict(
        [
            {
                **LLAMA,
                "benchmark": "llama2-70b-99.9",
                "accelerator": "Intel Gaudi 3",
                "accelerator_count": 8,
            }
        ]
    )
    refs = " ".join(gaudi.references)
    assert "Arc" not in refs, gaudi
    if gaudi.basis is Basis.UNSUPPORTED:
        assert "device class" in (gaudi.reason or "")


def test_no_upper_end_beyond_the_parts_peaks(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    (b200,) = kb_advisor.predict([B200_RESNET])
    assert b200.basis is Basis.TRANSFERRED and b200.interval is not None
    held = [w for w in b200.warnings if "peak figures allow" in w]
    if held:  # the note states the bound the upper end was held to
        found = re.search(r"\(([\d.,]+)(?: per accelerator)? at best\)", held[0])
        assert found is not None, held[0]  # a figure as written, never 4.835e+05
        assert b200.interval.high <= float(found.group(1).replace(",", "")) * 1.001


def test_a_generation_step_is_one_device_class_whatever_precision_each_runs() -> None:
    """MI355X counted in fp4 (bandwidth in 4-bit operands) beside MI325X in fp8 is more than
    ``MAX_SPAN`` apart, but the parts are one class on their hardware (16-bit compute, memory
    bandwidth); a workstation card stays another class than a data-centre accelerator."""
    from stack_advisor.advisor.estimate import hardware, transfer
    from stack_advisor.advisor.estimate.transferred import same_device_class

    new = hardware.scaling_figures("AMD Instinct MI355X", "4-bit")
    old = hardware.scaling_figures("AMD Instinct MI325X", "4-bit")
    assert new is not None and old is not None
    assert not transfer.within_span(old, new)  # what the scaled figures alone would say
    assert same_device_class("AMD Instinct MI325X", "AMD Instinct MI355X", old, new)
    card = hardware.scaling_figures("NVIDIA L4", "8-bit")
    b200 = hardware.scaling_figures("NVIDIA B200-SXM-180GB", "8-bit")
    assert card is not None and b200 is not None
    assert not same_device_class("NVIDIA L4", "NVIDIA B200-SXM-180GB", card, b200)


def test_the_bounds_headroom_is_a_high_quantile_of_how_far_replays_passed_it() -> None:
    """``peak_headroom`` reads the cell's replays, else the way the metric runs; never tightens
    the bound; none where too few replays."""
    import numpy as np

    from stack_advisor.advisor.estimate.transfer_replay import PEAK_HEADROOM, peak_headroom

    key = ("mlperf-inference", "llama2-70b-99", "Offline", "tokens_per_second", "closed")
    passed = np.log(np.linspace(0.8, 1.4, 61))  # 61 replays, from 0.8x to 1.4x the bound
    cell = {(Basis.TRANSFERRED, "closed", "tokens_per_second", PEAK_HEADROOM): passed}
    headroom, replays = peak_headroom(cell, key, True, 20)
    assert replays == 61
    assert headroom == pytest.approx(float(np.quantile(passed, 0.9)))
    way = {(Basis.TRANSFERRED, None, "higher", PEAK_HEADROOM): passed}
    assert peak_headroom(way, key, True, 20) == (pytest.approx(headroom), 61)
    assert peak_headroom({}, key, True, 20) == (0.0, 0)
    assert peak_headroom(cell, key, True, 100) == (0.0, 0)  # too few in the cell and the way
    below = {(Basis.TRANSFERRED, "closed", "tokens_per_second", PEAK_HEADROOM): passed - 1.0}
    assert peak_headroom(below, key, True, 20) == (0.0, 61)  # never a tighter bound


def test_a_lower_is_better_figure_passes_its_bound_by_going_lower() -> None:
    """``beyond_bound`` counts a result better than the bound as positive whichever way the
    metric runs: a latency below its references' bound, a throughput above it."""
    import math
    from collections import defaultdict

    import numpy as np

    from stack_advisor.advisor.estimate.transfer_replay import PEAK_HEADROOM, beyond_bound

    class Way:
        def __init__(self, hib: bool) -> None:
            self.hib = hib

        def higher_is_better(self, key: object) -> bool:
            return self.hib

    refs = {"A": (10.0, (100.0, 1000.0), "nvidia")}
    target = (200.0, 1000.0)  # twice the compute: the bound is 2x A's figure (or half its time)
    for hib, actual, bound in ((False, 4.0, 5.0), (True, 25.0, 20.0)):
        key = ("f", "b", "s", "m", "closed")
        out: defaultdict[tuple[object, ...], list[float]] = defaultdict(list)
        beyond_bound(Way(hib), key, np.log([actual]), refs, ["A"], target, out)
        (passed,) = out[(Basis.TRANSFERRED, "closed", "m", PEAK_HEADROOM)]
        assert passed == pytest.approx(abs(math.log(actual / bound)))


def test_transfers_upper_ends_carry_the_replayed_headroom(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """On the starter knowledge base the replays record how far parts passed their references'
    peak bound; an upper end held to the bound stays within it, and a note says what the bound
    carries beyond the references' efficiency and why."""
    from stack_advisor.advisor.estimate.transfer_replay import PEAK_HEADROOM

    pools = kb_advisor.knowledge().index.residuals_for("mlperf-inference")
    passed = pools[(Basis.TRANSFERRED, None, "higher", PEAK_HEADROOM)]
    assert len(passed) >= 100 and 0 < float((passed > 0).mean()) < 0.5
    # as of the round held: no forecast carries the bound further
    (b200,) = kb_advisor.predict([{**B200_RESNET, "as_of": "v5.1"}])
    assert b200.basis is Basis.TRANSFERRED and b200.interval is not None
    (held,) = [w for w in b200.warnings if "peak figures allow" in w]
    found = re.search(r"\(([\d.e+,]+) per accelerator at best\)", held)
    assert found is not None, held
    bound = float(found.group(1).replace(",", ""))
    assert b200.interval.high <= bound * 1.001
    (why,) = [w for w in b200.warnings if w.startswith("the peak bound allows")]
    assert re.search(r"allows \d+\.\d\dx its references' efficiency: ", why)
    assert "replayed transfers' results stayed within" in why or "learned" in why


def test_a_same_vendor_transfer_s_interval_holds_its_answer_with_room_below(kb_advisor) -> None:  # type: ignore[no-untyped-def]
    """A same-vendor transfer answers at the scaling itself; its bounds are its first results'
    spread, around both that answer and the replays' centre (a part's first results over its
    older peers' scaled figures): never an interval whose low end is the answer (a part left out
    of the newest round, asked from that round's other parts, lands around the scaling)."""
    asked = [
        {**LLAMA, "accelerator": a, "accelerator_count": 8, "as_of": "now"}
        for a in ("B300-SXM-288GB", "MI355X", "H20", "MI350X")
    ] + [{**B200_RESNET, "accelerator": "H20", "as_of": "now"}]
    same_vendor = [
        p
        for p in kb_advisor.predict(asked)
        if p.basis is Basis.TRANSFERRED
        and not any(f.name in ("transfer kind", "precision") for f in p.factors)
    ]
    assert len(same_vendor) >= 3
    for p in same_vendor:
        assert p.interval is not None and p.value is not None
        assert p.interval.low < p.value * 0.95, (p.accelerator, p.value, p.interval)
        assert p.interval.high > p.value
