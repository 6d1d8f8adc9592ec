"""Fixes: building their edits with libcst's lossless code generation, and applying them
(`check --fix`, `--unsafe-fixes`, `--diff`, `--add-noqa`, the language server's action).

A fix is a list of edits in ruff's JSON shape (1-based rows, code-point columns; the end is
exclusive). A rule builds the replacement as libcst nodes taken from the parsed tree, so
comments, blank lines, strings and the author's formatting inside them come out exactly as
written; only the new lines (`try:`, `finally:`) are generated.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState  # the renderer behind Module.code_for_node

from .analyzer.findings import Edit, Finding, Fix, Location

if TYPE_CHECKING:
    from .analyzer.project import FunctionInfo, ModuleInfo

_LINE_END = re.compile(r"\r\n|\r|\n")
# Codes that a suppression comment cannot silence (a syntax error, an unused suppression).
NOT_SUPPRESSIBLE = ("TRC001", "TRC002")


# -- building edits ----------------------------------------------------------------------------
@lru_cache(maxsize=8)
def _line_starts(text: str) -> tuple[int, ...]:
    # Per text, once: a rule builds one fix per finding, many per file (a str caches its hash).
    return (0, *(m.end() for m in _LINE_END.finditer(text)))


def _line_text(text: str, row: int) -> str:
    starts = _line_starts(text)
    if not 1 <= row <= len(starts):
        return ""
    line = text[starts[row - 1] : starts[row] if row < len(starts) else len(text)]
    return line.rstrip("\r\n")


def source_of(module: "ModuleInfo", node: cst.CSTNode) -> str:
    """A node's text as written, sliced from the source by its position."""
    text = module.text
    starts = _line_starts(text)
    (first_row, first_column), (last_row, last_column) = module.start(node), module.end(node)
    return text[starts[first_row - 1] + first_column : starts[last_row - 1] + last_column]


def _leading_space(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]


def _default_indent(module: "ModuleInfo", function: "FunctionInfo") -> str:
    """The indent of blocks that libcst stored without their own (`IndentedBlock.indent` is
    None): the one its parse of this code inferred, read back from the function's body."""
    body = function.node.body
    if isinstance(body, cst.IndentedBlock) and body.indent is None and body.body:
        outer = _leading_space(_line_text(module.text, module.start(function.node.name)[0]))
        inner = _leading_space(_line_text(module.text, module.start(body.body[0])[0]))
        if inner.startswith(outer) and len(inner) > len(outer):
            return inner[len(outer) :]
    return "    "


def statements_replacement(
    module: "ModuleInfo",
    function: "FunctionInfo",
    block: cst.IndentedBlock,
    after: cst.BaseStatement,
    through: cst.BaseStatement,
    replacement: cst.BaseStatement,
) -> Optional[Edit]:
    """The edit that replaces the statements of `block` after `after` up to and including
    `through` (whole lines, with their comments) by `replacement`, rendered at the block's
    indentation. None where the layout is not plain (code before the statement on its line)."""
    text = module.text
    after_end = module.end(after)[0]
    through_end = module.end(through)[0]
    row, column = module.start(after)
    line = _line_text(text, row)
    indent = line[:column]
    if indent.strip(" \t\f"):
        return None
    default = _default_indent(module, function)
    newline_match = _LINE_END.search(text)
    newline = newline_match.group() if newline_match else "\n"
    if isinstance(replacement, cst.Try):
        own = block.indent if block.indent is not None else default
        replacement = replacement.with_changes(
            body=replacement.body.with_changes(indent=own),
            finalbody=replacement.finalbody.with_changes(body=replacement.finalbody.body.with_changes(indent=own))
            if replacement.finalbody is not None
            else None,
        )
    state = CodegenState(default_indent=default, default_newline=newline)
    state.indent_tokens.append(indent)
    replacement._codegen(state)
    content = "".join(state.tokens)
    return Edit(content=content, location=Location(after_end + 1, 1), end_location=Location(through_end + 1, 1))


# -- applying edits ----------------------------------------------------------------------------
def _offsets(text: str) -> list[int]:
    """offsets[n - 1]: where row n starts; one more row than the text has (its end)."""
    return [0, *(m.end() for m in _LINE_END.finditer(text)), len(text)]


def _offset(starts: list[int], text: str, location: Location) -> int:
    if location.row - 1 >= len(starts) - 1:
        return len(text)
    start = starts[location.row - 1]
    line_end = starts[location.row] if location.row < len(starts) - 1 else len(text)
    return min(start + location.column - 1, line_end)


def apply_edit_list(text: str, edits: Sequence[Edit]) -> str:
    """`text` with non-overlapping edits applied (all positions refer to `text`)."""
    starts = _offsets(text)
    spans = sorted(((_offset(starts, text, e.location), _offset(starts, text, e.end_location), e.content) for e in edits), key=lambda s: (s[0], s[1]))
    out, cursor = [], 0
    for start, end, content in spans:
        out.append(text[cursor:start])
        out.append(content)
        cursor = max(cursor, end)
    out.append(text[cursor:])
    return "".join(out)


def wanted(fix: Optional[Fix], unsafe: bool) -> bool:
    """Whether `--fix` applies this fix (safe ones; unsafe ones with `--unsafe-fixes`)."""
    return fix is not None and (fix.applicability == "safe" or (unsafe and fix.applicability == "unsafe"))


def apply_fixes(text: str, findings: Iterable[Finding], unsafe: bool = False) -> tuple[str, int]:
    """`text` with the fixes of `findings` applied, and how many were applied. A fix whose
    edits overlap one already taken waits for the next round (after a re-check), as in ruff."""
    starts = _offsets(text)
    taken: list[tuple[int, int]] = []
    edits: list[Edit] = []
    applied = 0
    for finding in sorted(findings, key=Finding.sort_key):
        if not wanted(finding.fix, unsafe):
            continue
        spans = [(_offset(starts, text, e.location), _offset(starts, text, e.end_location)) for e in finding.fix.edits]
        if any(a < d and c < b or (a == b == c == d) for a, b in spans for c, d in taken):
            continue
        taken.extend(spans)
        edits.extend(finding.fix.edits)
        applied += 1
    return (apply_edit_list(text, edits), applied) if applied else (text, 0)


def unified_diff(filename: str, before: str, after: str) -> str:
    diff = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=filename, tofile=filename)
    lines = []
    for line in diff:
        lines.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(lines)


# -- suppression comments ----------------------------------------------------------------------
def add_noqa(text: str, findings: Iterable[Finding]) -> tuple[str, int]:
    """`text` with a `# noqa: CODE` for every finding at its noqa line (its statement's
    first line), merged into a suppression comment already there; and how many codes were
    added. Findings that no comment can silence, or whose line takes none, are skipped."""
    from .lsp.noqa import suppression_edit

    done: set[tuple[int, str]] = set()
    added = 0
    for finding in sorted(findings, key=Finding.sort_key):
        if finding.code in NOT_SUPPRESSIBLE:
            continue
        row = finding.noqa_row or finding.location.row
        if (row, finding.code) in done:
            continue
        done.add((row, finding.code))
        # The noqa line first, then the finding's own line (both are read as its line).
        at_noqa_line = dataclasses.replace(finding, location=Location(row, 1), noqa_row=finding.location.row)
        edit = suppression_edit(text, at_noqa_line)
        if edit is None:
            continue
        text = apply_edit_list(text, [edit])
        added += 1
    return text, added


# -- a fixing run -------------------------------------------------------------------------------
MAX_ROUNDS = 10
_BOM = "\ufeff"


def read_exact(filename: str) -> Optional[str]:
    """A file's text exactly as stored (newlines untouched), or None if it is not UTF-8."""
    try:
        with open(filename, "rb") as stream:
            return stream.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def write_exact(filename: str, text: str) -> None:
    with open(filename, "wb") as stream:
        stream.write(text.encode("utf-8", "surrogatepass"))


@dataclass
class FixOutcome:
    result: object  # the checker's CheckResult for the fixed texts
    # filename -> (text before, text after), for files the fixes changed.
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    fixed: int = 0


def fix_until_stable(run: Callable[[dict[Path, str]], object], read: Callable[[str], Optional[str]], unsafe: bool) -> FixOutcome:
    """Check, apply the wanted fixes in memory, check again, until nothing more applies
    (fixes that overlapped wait for a later round). `run(texts)` checks with the fixed texts
    standing in for the files; `read(filename)` gives a file's text as stored."""
    texts: dict[str, str] = {}
    originals: dict[str, str] = {}
    outcome = FixOutcome(run({}))
    for _round in range(MAX_ROUNDS):
        by_file: dict[str, list[Finding]] = {}
        for finding in outcome.result.findings:
            if wanted(finding.fix, unsafe):
                by_file.setdefault(finding.filename, []).append(finding)
        progress = False
        for filename, findings in by_file.items():
            before = texts.get(filename)
            if before is None:
                before = read(filename)
                if before is None:
                    continue  # not readable as UTF-8: left as it is
                originals[filename] = before
            bom = _BOM if before.startswith(_BOM) else ""
            after, count = apply_fixes(before[len(bom):], findings, unsafe)
            if count and bom + after != before:
                texts[filename] = bom + after
                outcome.fixed += count
                progress = True
        if not progress:
            break
        outcome.result = run({Path(name): text.lstrip(_BOM) for name, text in texts.items()})
    outcome.changed = {name: (originals[name], text) for name, text in texts.items() if text != originals[name]}
    return outcome


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
    from .analyzer.suppressions import DIRECTIVE, NOQA

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
