"""A family name read with the text around it: which edition a system's other fields name.

MLPerf's accelerator field may name a family whose editions differ ("NVIDIA RTX PRO 4500
Blackwell-PCIe-32GB": the Workstation and the Server Edition are both 32 GB PCIe cards) while the
system's name or description says which one ran ("... RTX PRO 4500 Blackwell Server Edition").
Where exactly one candidate's edition is written there, that candidate is the answer; otherwise
the name stays unresolved with every candidate suggested (both editions), never a guess.
"""

from __future__ import annotations

import re
from dataclasses import replace

from stack_advisor.catalog.resolve import AcceleratorMatch, load_catalog, resolve_accelerator

# words a description uses for an edition, beyond the edition's own name
_EDITION_WORDS: dict[str, tuple[str, ...]] = {
    "server": ("server edition", "server"),
    "workstation": ("workstation edition", "workstation"),
    "max-q workstation": ("max-q", "maxq"),
}


def _edition_written(edition: str, context: str) -> bool:
    words = _EDITION_WORDS.get(edition.lower(), (edition.lower(),))
    return any(re.search(rf"(?<![a-z]){re.escape(w)}(?![a-z])", context) for w in words)


def resolve_in_context(text: str, *context: str | None) -> AcceleratorMatch:
    """``resolve_accelerator(text)``; where that names a family or is ambiguous, the one
    candidate whose edition the ``context`` texts (system name, description) write, matched by
    "context". Max-Q is looked for before Workstation, as its name holds that word too."""
    match = resolve_accelerator(text)
    if match.resolved or match.refusal not in ("family", "ambiguous") or not match.suggestions:
        return match
    written = " ".join(c for c in context if c).lower()
    if not written:
        return match
    cat = load_catalog()
    entries = [cat.accelerators[s] for s in match.suggestions if s in cat.accelerators]
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
