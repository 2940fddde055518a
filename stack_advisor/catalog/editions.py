"""A family name read with the text around it: which edition a system's other fields name.

MLPerf's accelerator field may name a family whose editions differ ("NVIDIA RTX PRO 4500
Blackwell-PCIe-32GB": the Workstation and the Server Edition are both 32 GB PCIe cards) while the
system's name or description says which one ran ("... RTX PRO 4500 Blackwell Server Edition").
Where exactly one candidate's edition is written there, that candidate is the answer. Where no
edition is written but the system is named as a product line of one class - a vendor's rack-server
line (PowerEdge, ProLiant, ThinkSystem, UCS, ...) or workstation line (Precision, ThinkStation, HP
Z) - the one candidate sold for that class is (a data-centre server takes the passively cooled
Server Edition). Otherwise the name stays unresolved with every candidate suggested (both
editions), never a guess.
"""

from __future__ import annotations

import re
from dataclasses import replace

from stack_advisor.catalog.entries import AcceleratorEntry
from stack_advisor.catalog.resolve import AcceleratorMatch, load_catalog, resolve_accelerator

# words a description uses for an edition, beyond the edition's own name
_EDITION_WORDS: dict[str, tuple[str, ...]] = {
    "server": ("server edition", "server"),
    "workstation": ("workstation edition", "workstation"),
    "max-q workstation": ("max-q", "maxq"),
}


# product lines that are one class of machine, by the vendors' own naming: rack and blade
# servers, and desktop workstations (the system names MLPerf submitters write)
_SERVER_LINES = re.compile(
    r"(?<![a-z])(?:poweredge|proliant|thinksystem|ucs|quantagrid|superserver|cray xd|"
    r"primergy|esc\d{3,4})(?![a-z])"
)
_WORKSTATION_LINES = re.compile(
    r"(?<![a-z])(?:precision \d{4}|thinkstation|hp z\d|z[468] g\d)(?![a-z])"
)


def _class_written(context: str) -> str | None:
    """ "server" or "workstation" where the context names a product line of exactly one of them."""
    server = bool(_SERVER_LINES.search(context))
    workstation = bool(_WORKSTATION_LINES.search(context))
    if server == workstation:
        return None
    return "server" if server else "workstation"


def _edition_written(edition: str, context: str) -> bool:
    words = _EDITION_WORDS.get(edition.lower(), (edition.lower(),))
    return any(re.search(rf"(?<![a-z]){re.escape(w)}(?![a-z])", context) for w in words)


def resolve_in_context(text: str, *context: str | None) -> AcceleratorMatch:
    """``resolve_accelerator(text)``; where that names a family or is ambiguous, the one
    candidate whose edition the ``context`` texts (system name, description) write, else the one
    sold for the class of machine their product line names, matched by "context". Max-Q is looked
    for before Workstation, as its name holds that word too."""
    match = resolve_accelerator(text)
    if match.resolved or match.refusal not in ("family", "ambiguous") or not match.suggestions:
        return match
    written = " ".join(c for c in context if c).lower()
    if not written:
        return match
    cat = load_catalog()
    entries = [cat.accelerators[s] for s in match.suggestions if s in cat.accelerators]
    named = _named_edition(entries, written)
    if len(named) != 1:
        return match
    return replace(
        match,
        resolved=True,
        entry=named[0],
        matched_by="context",
        suggestions=(),
        refusal=None,
    )


def _named_edition(entries: list[AcceleratorEntry], written: str) -> list[AcceleratorEntry]:
    """The candidates whose edition the context writes; failing that, those whose edition is the
    class of machine (server, workstation) the context's product line names."""
    named = [e for e in entries if e.edition and _edition_written(e.edition, written)]
    if len(named) > 1:  # "Max-Q Workstation" also writes "workstation": the longer one wins
        named = [
            e
            for e in named
            if not any(
                o is not e and o.edition and e.edition and e.edition.lower() in o.edition.lower()
                for o in named
            )
        ]
    if named:
        return named
    machine = _class_written(written)
    if machine is None:
        return []
    # a class two editions are sold for (Workstation and Max-Q Workstation) names neither
    return [e for e in entries if e.edition and machine in e.edition.lower()]
