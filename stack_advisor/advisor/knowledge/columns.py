"""The table's column types: ``Column`` (values as integer codes into a vocabulary) and
``KeyList`` (observation keys packed into one byte blob)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Column:
    """A categorical column: ``codes[i]`` indexes ``vocab``."""

    codes: np.ndarray
    vocab: list[Any]
    index: dict[Any, int]

    @classmethod
    def build(cls, values: list[Any]) -> Column:
        index: dict[Any, int] = {}
        codes = np.empty(len(values), dtype=np.int32)
        for i, v in enumerate(values):
            code = index.get(v)
            if code is None:
                code = index[v] = len(index)
            codes[i] = code
        return cls(codes=codes, vocab=list(index), index=index)

    def extended(self, other: Column) -> Column:
        """This column followed by ``other``'s rows: existing codes unchanged, values new to
        this vocabulary appended to it. ``self`` is not modified (a reader may hold it)."""
        vocab, index = list(self.vocab), dict(self.index)
        remap = np.empty(len(other.vocab) + 1, dtype=np.int32)
        for i, value in enumerate(other.vocab):
            code = index.get(value)
            if code is None:
                code = index[value] = len(vocab)
                vocab.append(value)
            remap[i] = code
        codes = np.concatenate([self.codes.astype(np.int32, copy=False), remap[other.codes]])
        return Column(codes=codes, vocab=vocab, index=index)

    def code(self, value: Any) -> int:
        return self.index.get(value, -1)

    def values(self, rows: np.ndarray | None = None) -> list[Any]:
        codes = self.codes if rows is None else self.codes[rows]
        return [self.vocab[c] for c in codes]

    def mask(self, allowed: Iterable[Any]) -> np.ndarray:
        lookup = np.zeros(len(self.vocab) + 1, dtype=bool)  # a table lookup beats np.isin
        lookup[[self.index[v] for v in allowed if v in self.index]] = True
        found: np.ndarray = lookup[self.codes]
        return found


class KeyList(Sequence[str]):
    """Observation keys kept as one UTF-8 blob and offsets (as a persisted table stores them),
    split into strings only when first used: no answer needs them; a digest or an evaluation
    does."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self._blob, self._offsets = blob, offsets
        self._keys: list[str] | None = None

    @classmethod
    def of(cls, keys: Sequence[str]) -> KeyList:
        if isinstance(keys, KeyList):
            return keys
        encoded = [k.encode() for k in keys]
        offsets = np.concatenate(([0], np.cumsum([len(k) for k in encoded], dtype=np.int64)))
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets.astype(np.int64))

    @property
    def blob(self) -> np.ndarray:
        return self._blob

    @property
    def offsets(self) -> np.ndarray:
        return self._offsets

    def extended(self, more: Sequence[str]) -> KeyList:
        """These keys followed by ``more``, without splitting the blob into strings."""
        tail = KeyList.of(more)
        out = KeyList(
            np.concatenate([self._blob, tail._blob]),
            np.concatenate([self._offsets, self._offsets[-1] + tail._offsets[1:]]),
        )
        if self._keys is not None:
            out._keys = [*self._keys, *more]
        return out

    def _all(self) -> list[str]:
        if self._keys is None:
            text = self._blob.tobytes().decode()
            offsets = self._offsets.tolist()
            if offsets[-1] == len(text):  # ASCII (the keys are): character offsets = byte offsets
                self._keys = [text[a:b] for a, b in itertools.pairwise(offsets)]
            else:
                raw = self._blob.tobytes()
                self._keys = [raw[a:b].decode() for a, b in itertools.pairwise(offsets)]
        return self._keys

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return f"KeyList({len(self)} keys)"
