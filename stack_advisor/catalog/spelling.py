"""How a name is written and how close two names are: trademark marks, digit/letter confusions,
word order.

Published names carry marks (``Intel(R) Arc(TM) Pro B70``, ``AMD Instinct™ MI355X``) that name
nothing; users type ``H1OO`` for ``H100`` and ``RTX 6000 PRO`` for ``RTX PRO 6000``. The resolver
drops the marks before it compares, and ranks its did-you-mean suggestions by how many of the
written words a known name holds (in any order) and then by edit similarity, both on text where
the letters that look like digits (O/o → 0, l/I/i → 1) are read as those digits.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from difflib import SequenceMatcher

# (R), (TM), (C) as typed, and the symbols themselves; "(r)" only as a mark (after a word)
_MARKS = re.compile(r"\((?:r|tm|c)\)|[®™©]", re.IGNORECASE)
_CONFUSABLE = str.maketrans({"o": "0", "l": "1", "i": "1"})
_WORD = re.compile(r"[a-z0-9.+]+")
# a vendor's name is not a word of the part: "NVIDIA RTX 6000 PRO" is asked about "RTX 6000 PRO"
_VENDORS = frozenset(
    v.translate(_CONFUSABLE) for v in ("nvidia", "amd", "intel", "qualcomm", "google", "aws", "arm")
)
# below this similarity a name that holds fewer than all the written words is not suggested
SIMILAR_ENOUGH = 0.6


def strip_marks(text: str) -> str:
    """The text without trademark marks, spaces collapsed ("Intel(R) Arc(TM) Pro B70" →
    "Intel Arc Pro B70"), in Unicode's compatibility form (a full-width "Ｈ１００" is "H100"; the
    marks go first, since that form spells ™ as the letters TM)."""
    plain = unicodedata.normalize("NFKC", _MARKS.sub(" ", text))
    return " ".join(_MARKS.sub(" ", plain).split())


def fold(text: str) -> str:
    """Lower case with the letters that look like digits read as digits ("H1OO" → "h100")."""
    return text.lower().translate(_CONFUSABLE)


def words(text: str, *, folded: bool = True) -> list[str]:
    """The words of a name (split at anything but letters, digits, '.', '+'), lower case and,
    unless ``folded`` is False, with confusable letters read as digits."""
    plain = strip_marks(text).lower()
    return _WORD.findall(fold(plain) if folded else plain)


def _squeezed(text: str) -> str:
    return "".join(words(text))


def closeness(query: str, name: str) -> tuple[float, float]:
    """(share of the query's words the name holds, in any order; edit similarity of the two
    squeezed and folded) — compared as tuples, best first when sorted in reverse."""
    ratio = SequenceMatcher(None, _squeezed(query), _squeezed(name)).ratio()
    return _cover(query, name), ratio


def _cover(query: str, name: str) -> float:
    """The share of the query's words (vendor names aside) the name holds, in any order."""
    return _covered(_asked(query), name)


def _asked(query: str) -> list[str]:
    """The query's words that count towards a cover (vendor names aside, unless that is all)."""
    return [w for w in words(query) if w not in _VENDORS] or words(query)


def _covered(asked: list[str], name: str) -> float:
    held = set(words(name))
    return round(sum(w in held for w in asked) / len(asked), 3) if asked else 0.0


MAX_SUGGESTED = 512  # a text longer than this gets no suggestions (names are far shorter)


def ranked(query: str, names: Iterable[str]) -> list[str]:
    """The names worth suggesting for ``query``, closest first: those that hold every written
    word (in any order) or are at least ``SIMILAR_ENOUGH`` alike once folded."""
    scored = []
    if len(query) > MAX_SUGGESTED:  # no catalogue name is alike such a text: nothing to suggest
        return []
    asked = _squeezed(query)
    asked_words = _asked(query)  # read once, not once per name
    for name in names:
        cover = _covered(asked_words, name)
        matcher = SequenceMatcher(None, asked, _squeezed(name))
        # the length bounds first: a long query cannot be alike a short name (no full comparison,
        # which is quadratic in the query's length)
        alike = matcher.real_quick_ratio() >= SIMILAR_ENOUGH and matcher.quick_ratio() >= (
            SIMILAR_ENOUGH
        )
        if cover >= 1.0 or alike:
            ratio = matcher.ratio()
            if cover >= 1.0 or ratio >= SIMILAR_ENOUGH:
                scored.append(((cover, ratio), name))
    scored.sort(key=lambda item: item[0], reverse=True)
    return [name for _, name in scored]
