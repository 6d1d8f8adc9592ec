"""What a file's raw text says without parsing it: the names it defines with `def` and the
names it calls. The analysis searches every file this way (cheaply, before parsing any), and
the cache asks the same of an edited file to tell whether a search would now find it. No
libcst here."""

from __future__ import annotations

import re
from typing import Optional

_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")

# `def name(`; a match preceded by a word character (`undef name(`) is dropped by hand,
# since a lookbehind would stop `re` from searching for the literal first.
_DEF = re.compile(rb"def[ \t]+(\w+)[ \t]*\(")

# Every word followed by `(` (a word is matched whole: finditer starts at its first letter).
_CALLED = re.compile(rb"(\w+)\s*\(")


def defined_names(data: bytes) -> list[str]:
    """One entry per `def name(` in the text."""
    names = []
    for match in _DEF.finditer(data):
        start = match.start()
        if start == 0 or data[start - 1] not in _WORD_BYTES:
            names.append(match.group(1).decode("utf-8", "replace"))
    return names


def called_names(data: bytes) -> set[str]:
    """Every word the text follows with `(`."""
    return {called.decode("utf-8", "replace") for called in _CALLED.findall(data)}


def count_words(pattern: re.Pattern, data: bytes, limit: Optional[int] = None) -> int:
    """Matches of a pattern that starts with a literal word, not preceded by a word
    character. (A leading `\\b` would stop `re` from searching for the literal first.)"""
    count = 0
    for match in pattern.finditer(data):
        start = match.start()
        if start == 0 or data[start - 1] not in _WORD_BYTES:
            count += 1
            if limit is not None and count >= limit:
                break
    return count
