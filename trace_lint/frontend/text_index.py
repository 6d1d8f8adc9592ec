"""What a file's raw text says without parsing it: the names it defines with `def`, the
names it calls and the modules it imports. The analysis searches every file this way (cheaply, before parsing any), and
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


# `import a.b as c, d` and `from .x import (y, z)` at the start of a line (a statement).
_IMPORT = re.compile(rb"^[ \t]*import[ \t]+([\w. \t,]+)", re.MULTILINE)
_FROM = re.compile(rb"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n#;]*)", re.MULTILINE)


def imported_modules(data: bytes, module: str, is_package: bool) -> set[str]:
    """Dotted names the text imports (`from x import y` gives `x` and `x.y`, which may be a
    module), relative imports resolved against `module`. A guess from the text: strings and
    comments that look like imports count too."""
    found: set[str] = set()
    for match in _IMPORT.finditer(data):
        for part in match.group(1).decode("utf-8", "replace").split(","):
            words = part.split()
            if words:
                found.add(words[0])
    package = module.split(".") if is_package else module.split(".")[:-1]
    for match in _FROM.finditer(data):
        dots, name = len(match.group(1)), match.group(2).decode("utf-8", "replace")
        if dots:
            if dots - 1 > len(package):
                continue
            base = package[: len(package) - (dots - 1)]
            name = ".".join([*base, name] if name else base)
        if not name:
            continue
        found.add(name)
        for item in match.group(3).decode("utf-8", "replace").strip("() \t\r\n").split(","):
            words = item.split()
            if words and words[0].isidentifier():
                found.add(f"{name}.{words[0]}")
    return found

