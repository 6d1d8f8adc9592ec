"""Per-file facts: answers that are a pure function of a file's content (and of what else
their key names), kept by the driver's cache between runs, so that a run computes only the
ones it has not seen. A stored answer is the one the computation would give: a fact changes
how fast a run is, never what it finds."""

from __future__ import annotations

import hashlib
from typing import Callable, Generic, Hashable, Optional, TypeVar

Key = TypeVar("Key", bound=Hashable)
Value = TypeVar("Value")


def content_digest(data: bytes) -> str:
    """The digest facts and cache entries name a content by."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


# Stored beyond twice the facts a run used (an undone edit finds the fact from before it).
SPARE = 256


class FileFacts(Generic[Key, Value]):
    """Facts of one kind by their key: those known from before, and those this run used."""

    def __init__(self, known: Optional[dict] = None):
        self.known: dict = dict(known or {})
        # The keys this run asked for, in order, with their facts; whether any was new.
        self.used: dict = {}
        self.new = False

    @classmethod
    def to_store(cls, kept: dict) -> "FileFacts":
        """Facts that `kept()` hands back whole: what an earlier `kept()` chose, stored later."""
        facts = cls(kept)
        facts.used = dict(kept)
        return facts

    def lookup(self, key: Key) -> Optional[Value]:
        """The fact known for `key` (marked used), or None."""
        found = self.known.get(key)
        if found is not None:
            self.used[key] = found
        return found

    def put(self, key: Key, value: Value) -> None:
        self.known[key] = self.used[key] = value
        self.new = True

    def get(self, key: Key, compute: Callable[[], Value]) -> Value:
        """The fact known for `key`, else computed now (and kept)."""
        found = self.lookup(key)
        if found is None:
            found = compute()
            self.put(key, found)
        return found

    def kept(self) -> dict:
        """What to store: this run's facts first, then as many others as the bound allows."""
        kept = dict(self.used)
        for key, value in self.known.items():
            if len(kept) >= 2 * len(self.used) + SPARE:
                break
            kept.setdefault(key, value)
        return kept


class ActiveFacts(FileFacts[Key, Value]):
    """Facts a stage consults while `with facts:` holds (the driver makes them active around
    the analysis); each kind is a subclass with its own `active`."""

    active: Optional["ActiveFacts"] = None
    _outer: Optional["ActiveFacts"] = None

    def __enter__(self):
        self._outer, type(self).active = type(self).active, self
        return self

    def __exit__(self, *exc) -> None:
        type(self).active = self._outer
