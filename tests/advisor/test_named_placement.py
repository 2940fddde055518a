"""An accelerator written as MLCommons publishes a virtualized system ("Virtualized NVIDIA
H200-SXM-141GB") is asked where it ran, as the importers store those results (a VM of unstated
kind), not as bare metal; a placement given explicitly wins (on the starter knowledge base)."""

from __future__ import annotations

from typing import Any

QUERY = {
    "accelerator_count": 8,
    "benchmark": "llama2-70b-99",
    "scenario": "Offline",
    "metric": "tokens_per_second",
    "as_of": "now",
}


def test_a_virtualized_name_is_asked_where_it_ran(kb_advisor: Any) -> None:
    named, bare, explicit = kb_advisor.predict(
        [
            {**QUERY, "accelerator": "Virtualized NVIDIA H200-SXM-141GB"},
            {**QUERY, "accelerator": "NVIDIA H200-SXM-141GB"},
            {
                **QUERY,
                "accelerator": "Virtualized NVIDIA H200-SXM-141GB",
                "placement": "bare-metal",
            },
        ]
    )
    assert named.query.placement.value == "unknown" and named.basis.value == "observed"
    assert bare.query.placement.value == "bare-metal" and bare.basis.value == "observed"
    assert named.value != bare.value  # the virtualized systems' own results
    assert explicit.query.placement.value == "bare-metal" and explicit.value == bare.value
