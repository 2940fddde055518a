"""The issue-27 line-up as `recommend --accelerator` reads it (stack_advisor.advisor.names): each
name is one catalogue part or a family of parts, never an unknown accelerator.
bench/lineup_recommend.py runs the command itself over the starter knowledge base."""

from __future__ import annotations

import pytest

from stack_advisor.advisor.names import accelerator_selector
from stack_advisor.catalog import load_catalog

LINEUP = [
    "V100",
    "T4",
    "A2",
    "A10",
    "A16",
    "A30",
    "A40",
    "A100",
    "A800",
    "H20",
    "H800",
    "H100",
    "H100 NVL",
    "H200",
    "H200 NVL",
    "GH200",
    "L4",
    "L20",
    "L40",
    "L40S",
    "RTX 4090",
    "RTX 6000 Ada",
    "RTX PRO 4500",
    "RTX PRO 6000",
    "RTX PRO 6000 Blackwell Server Edition",
    "B100",
    "B200",
    "B300",
    "GB200",
    "GB300",
    "GB10",
    "Jetson AGX Orin",
    "Jetson Thor",
    "MI100",
    "MI210",
    "MI250",
    "MI250X",
    "MI300A",
    "MI300X",
    "MI325X",
    "MI350X",
    "MI355X",
    "Radeon PRO W7900",
    "Gaudi 2",
    "Gaudi 3",
    "Data Center GPU Max 1100",
    "Data Center GPU Max 1550",
    "Arc Pro B60",
    "Arc Pro B70",
    "TPU v4",
    "TPU v5e",
    "TPU v5p",
    "TPU v6e",
    "TPU v7",
    "Inferentia2",
    "Trainium",
    "Trainium2",
    "Cloud AI 100",
]


@pytest.mark.parametrize("name", LINEUP)
def test_every_lineup_name_is_a_part_or_a_family_for_recommend(name: str) -> None:
    selector = accelerator_selector(name)
    assert selector.kind in ("key", "family")
    if selector.kind == "family":
        members = [a for a in load_catalog().accelerators.values() if selector.matches(a.id)]
        assert len(members) >= 2, name


def test_a_family_named_as_its_parts_are_is_their_family_for_recommend() -> None:
    """ "RTX PRO 6000 Blackwell" (the parts' names less their edition) selects the family's
    editions, as "RTX PRO 6000" does and as ``predict`` reads it (a probe got "names a family
    of several parts, not one" from recommend)."""
    selector = accelerator_selector("RTX PRO 6000 Blackwell")
    assert selector.kind == "family"
    members = {a.id for a in load_catalog().accelerators.values() if selector.matches(a.id)}
    assert {"RTX-PRO-6000-Blackwell-Server", "RTX-PRO-6000-Blackwell-WS"} <= members
