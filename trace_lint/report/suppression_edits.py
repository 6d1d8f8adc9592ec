"""Edits of suppression comments: "suppress TRCxxx on this line" (append `# noqa: TRCxxx`, or
add the code to a `# noqa:` list or `# trace-lint: ignore[...]` already on the line), and
TRC002's fix (unused codes taken out)."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Optional, Sequence

from ..core.findings import Edit, Finding, Fix, Location
from ..core.lines import split_lines
from .comments import DIRECTIVE, NOQA

_CODE = re.compile(r"[A-Z]+[0-9]*")
_TOKEN = re.compile(r"[^,\s]+")


@dataclass
class _LineFacts:
    comments: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # row -> [(col0, text)]
    # Rows whose end is inside a string or continued by a backslash: a comment cannot go there.
    blocked: set[int] = field(default_factory=set)


def _line_facts(text: str) -> _LineFacts:
    facts = _LineFacts()
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    open_fstrings: list[int] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                facts.comments.setdefault(token.start[0], []).append((token.start[1], token.string))
            elif token.type == tokenize.STRING:
                facts.blocked.update(range(token.start[0], token.end[0]))
            elif token.type == fstring_start:
                open_fstrings.append(token.start[0])
            elif token.type == fstring_end and open_fstrings:
                facts.blocked.update(range(open_fstrings.pop(), token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass  # a broken file: what was read so far still counts
    return facts


def _insertion_in_comment(comment: str, code: str) -> Optional[tuple[int, str]]:
    """(offset in the comment, text to insert) to add `code` to a suppression list there."""
    for match in DIRECTIVE.finditer(comment):
        if match.group("verb").lower() == "ignore" and match.group("codes") is not None:
            return _after_codes(match.group("codes"), match.start("codes"), code)
    for match in NOQA.finditer(comment):
        before = comment[: match.start()]
        if before.rstrip().endswith(":") and "trace-lint" in before:
            continue  # the file-level `# trace-lint: noqa`
        if not match.group("colon"):
            return None  # a bare `# noqa` already silences the line
        return _after_codes(match.group("codes"), match.start("codes"), code)
    return None


def _after_codes(codes_text: str, offset: int, code: str) -> tuple[int, str]:
    # The list ends at the first token that is not a code: in `noqa: TRC101  # why`, at `#`.
    end = None
    for token in _TOKEN.finditer(codes_text):
        if not _CODE.fullmatch(token.group()):
            break
        end = token.end()
    if end is None:
        return offset, f"{code} " if codes_text.strip() else code
    return offset + end, f", {code}"


def suppression_edit(text: str, finding: Finding) -> Optional[Edit]:
    """The edit that suppresses `finding` on its line, or None where no comment can go."""
    lines = split_lines(text)
    facts = _line_facts(text)
    rows = [finding.location.row]
    if finding.noqa_row is not None and finding.noqa_row not in rows:
        rows.append(finding.noqa_row)
    for row in rows:
        if not 1 <= row <= len(lines) or row in facts.blocked:
            continue
        line = lines[row - 1]
        # A backslash continuation takes no comment, unless the backslash is in one.
        if line.rstrip().endswith("\\") and row not in facts.comments:
            continue
        for column, comment in facts.comments.get(row, []):
            found = _insertion_in_comment(comment, finding.code)
            if found is not None:
                offset, insert = found
                at = Location(row, column + offset + 1)
                return Edit(content=insert, location=at, end_location=at)
        stripped = line.rstrip()
        return Edit(
            content=f"  # noqa: {finding.code}",
            location=Location(row, len(stripped) + 1),
            end_location=Location(row, len(line) + 1),
        )
    return None


# -- TRC002: an unused suppression code removed ---------------------------------------------------
_CODE_TOKEN = re.compile(r"[^,\s\]]+")
_KEEP_CODE = re.compile(r"^[A-Z]+[0-9]*$")


def _code_span(codes_text: str, offset: int) -> tuple[int, int, list[str]]:
    """(start, end, codes) of the code list at the head of `codes_text` (offset: where it
    starts in the comment); the list ends at the first token that is not a code."""
    start = end = None
    codes = []
    for token in _CODE_TOKEN.finditer(codes_text):
        if not _KEEP_CODE.match(token.group()):
            break
        start = token.start() if start is None else start
        end = token.end()
        codes.append(token.group())
    if start is None:
        return offset, offset, []
    return offset + start, offset + end, codes


def unused_suppression_fix(line: str, row: int, column: int, kind: str, remove: Sequence[str]) -> Optional[Fix]:
    """The fix of TRC002: the unused or unknown `remove` codes taken out of the suppression
    comment starting at `column` (1-based) of `line`; the whole directive when none is left.
    Comments change nothing the program computes: always safe. None for `disable[...]`
    ranges (their `enable` would no longer match) and comments it cannot read back."""
    comment_start = column - 1
    comment = line[comment_start:]
    span = None
    if kind == "noqa":
        for match in NOQA.finditer(comment):
            before = comment[: match.start()]
            if before.rstrip().endswith(":") and "trace-lint" in before:
                continue
            if match.group("colon"):
                span = (match.start(), *_code_span(match.group("codes"), match.start("codes")))
                break
    elif kind == "ignore":
        for match in DIRECTIVE.finditer(comment):
            if match.group("verb").lower() == "ignore" and match.group("codes") is not None:
                start, end, codes = _code_span(match.group("codes"), match.start("codes"))
                span = (match.start(), start, end, codes)
                directive_end = match.end()
                break
    if span is None or not span[3]:
        return None
    directive_start, codes_start, codes_end, codes = span
    kept = [code for code in codes if code not in remove]
    if len(kept) == len(codes):
        return None
    names = ", ".join(f"`{code}`" for code in codes if code in remove)
    if kept:
        new_comment = comment[:codes_start] + ", ".join(kept) + comment[codes_end:]
    else:
        directive_stop = codes_end if kind == "noqa" else directive_end
        rest = comment[directive_stop:]
        head = comment[:directive_start].rstrip()
        if rest.strip() == "":
            new_comment = head  # the directive was all (or the end) of the comment
        elif head == "" and rest.lstrip().startswith("#"):
            new_comment = rest.lstrip()  # `# noqa: X  # why` -> `# why`
        else:
            return None  # text around the directive that is not a comment of its own
    if new_comment == "" or new_comment == "#":
        # Nothing left: the comment goes, with the space before it.
        start = len(line[:comment_start].rstrip()) if line[:comment_start].strip() else 0
        edit = Edit("", Location(row, start + 1), Location(row, len(line) + 1))
    else:
        edit = Edit(new_comment, Location(row, comment_start + 1), Location(row, len(line) + 1))
    return Fix("safe", f"Remove unused suppression of {names}", (edit,))
