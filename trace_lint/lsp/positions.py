"""Findings count rows and columns from 1, columns in code points; LSP counts lines and
characters from 0, characters in the negotiated encoding's code units (UTF-16 unless the
client offered another)."""

from __future__ import annotations

from typing import Sequence

from ..core.lines import split_lines

__all__ = ["split_lines", "to_client", "units"]


def units(text: str, encoding: str = "utf-16") -> int:
    """Length of `text` in the client's code units."""
    if encoding == "utf-32":
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def to_client(lines: Sequence[str], row: int, column: int, encoding: str = "utf-16") -> tuple[int, int]:
    """1-based (row, code-point column) -> 0-based (line, character), clamped to the text."""
    if not lines:
        return 0, 0
    line = min(max(row - 1, 0), len(lines) - 1)
    if row - 1 >= len(lines):  # past the end: the end of the last line
        return line, units(lines[line], encoding)
    text = lines[line]
    column = min(max(column - 1, 0), len(text))
    return line, units(text[:column], encoding)


def from_client(lines: Sequence[str], line: int, character: int, encoding: str = "utf-16") -> tuple[int, int]:
    """0-based (line, character in code units) -> 1-based (row, code-point column)."""
    if not lines:
        return 1, 1
    line = min(max(line, 0), len(lines) - 1)
    text = lines[line]
    count = 0
    for index, char in enumerate(text):
        if count >= character:
            return line + 1, index + 1
        count += units(char, encoding)
    return line + 1, len(text) + 1
