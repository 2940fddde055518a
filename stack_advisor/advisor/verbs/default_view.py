"""The default view of a ranking: one row per choice a platform team makes — (accelerator,
count, placement, stack family) — so the top rows answer "which accelerator?" instead of
listing one GPU's results submitter by submitter.

Each choice keeps its best evidence (the best basis among its rows, then the best score); the
rest are counted as "N more results" on it (``workload.all``: every row). A transferred or
interpolated row whose placement is unknown is the same prediction as the one for a named
placement of that part (the estimate does not depend on it), so it folds into that one; a
published result of unknown placement folds into the part's bare-metal row (MLPerf submitters
that do not say ran on bare metal), never into a virtualised one.
"""

from __future__ import annotations

from stack_advisor.advisor.results import BASIS_ORDER, Basis
from stack_advisor.advisor.verbs.candidates import Candidate
from stack_advisor.catalog.software import stack_family_of
from stack_advisor.schema.models import SoftwareStack

UNKNOWN_PLACEMENT = "unknown"
BARE_METAL = "bare-metal"
Choice = tuple[str, int, str, str]


def stack_family(stack: SoftwareStack) -> str:
    """The runtime that served or trained the model (TensorRT, vLLM, PyTorch ...), whatever
    its version: the framework when named (a library as the framework it runs on: NeMo is a
    PyTorch stack), else TensorRT when it is a component, else the first extra component;
    "unspecified" when the record names none."""
    if stack.framework:
        return stack_family_of(stack.framework)
    if stack.tensorrt:
        return "tensorrt"
    return next(iter(sorted(stack.extra)), "unspecified").lower()


def fold(ordered: list[Candidate]) -> list[tuple[Candidate, int]]:
    """Each choice's best row, in the ranking's order, with how many rows it folds in.

    ``ordered`` is best first (``scoring.order``); the result keeps that order for the rows
    it shows."""
    keyed = [(c, _choice(c)) for c in ordered]
    named: dict[tuple[str, int, str], list[str]] = {}
    for _, (acc, count, place, family) in keyed:  # named placements, best-ranked first
        if place != UNKNOWN_PLACEMENT:
            named.setdefault((acc, count, family), []).append(place)
    members: dict[Choice, list[int]] = {}
    for i, (c, (acc, count, place, family)) in enumerate(keyed):
        if place == UNKNOWN_PLACEMENT:
            place = _known_placement(c, named.get((acc, count, family), []))
        members.setdefault((acc, count, place, family), []).append(i)
    shown = []
    for rows in members.values():
        best = min(rows, key=lambda i: (BASIS_ORDER[_basis(ordered[i])], i))
        shown.append((best, len(rows) - 1))
    return [(ordered[i], more) for i, more in sorted(shown)]


def _known_placement(c: Candidate, named: list[str]) -> str:
    """Where a row of unknown placement folds: a prediction into the part's best-ranked named
    placement (the same figure: the estimate does not depend on it); a published result into
    bare metal (where a submitter that does not say ran it), and only there."""
    if not c.observed and named:
        return named[0]
    return BARE_METAL if BARE_METAL in named else UNKNOWN_PLACEMENT


def _choice(c: Candidate) -> Choice:
    return (c.accelerator, c.count, c.placement, stack_family(c.stack))


def _basis(c: Candidate) -> Basis:
    assert c.est is not None
    return c.est.basis
