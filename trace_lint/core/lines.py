"""Lines as Python and LSP count them: `\r\n`, `\r` or `\n` end a line; `str.splitlines` also
splits at form feeds and other separators, which would shift every line after them."""

from __future__ import annotations

import re

LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    return LINE_END.split(text)
