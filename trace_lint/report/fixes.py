"""Fixes applied: `check --fix`, `--unsafe-fixes`, `--diff`, `--add-noqa` and the language
server's action. A fix is a list of edits in ruff's JSON shape (1-based rows, code-point
columns; the end is exclusive); rules build them (`rules/_edits.py`)."""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from ..core.findings import Edit, Finding, Fix, Location
from ..core.lines import LINE_END

# Codes that a suppression comment cannot silence (a syntax error, an unused suppression).
NOT_SUPPRESSIBLE = ("TRC001", "TRC002")


def _offsets(text: str) -> list[int]:
    """offsets[n - 1]: where row n starts; one more row than the text has (its end)."""
    return [0, *(m.end() for m in LINE_END.finditer(text)), len(text)]


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
    from .suppression_edits import suppression_edit

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
