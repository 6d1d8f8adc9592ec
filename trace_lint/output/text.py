"""`full` (code frame, call chain, help) and `concise` (`path:row:col: CODE message`)."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..core.findings import Finding
from . import OutputContext, rule_help


def _style(text: str, code: str, enabled: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if enabled else text


def _fixable(finding: Finding, context: OutputContext) -> bool:
    fix = finding.fix
    return fix is not None and (fix.applicability == "safe" or (context.unsafe_fixes and fix.applicability == "unsafe"))


def _marker(finding: Finding, context: OutputContext) -> str:
    return " [*]" if _fixable(finding, context) else ""


def concise(findings: Sequence[Finding], context: OutputContext) -> str:
    lines = [
        f"{f.filename}:{f.location.row}:{f.location.column}: {_style(f.code, '1;31', context.color)}{_marker(f, context)} {f.message}"
        for f in findings
    ]
    closing = summary(findings, context)
    if closing:
        lines.append(closing)
    return "".join(line + "\n" for line in lines)


def _frame(finding: Finding, lines: list[str] | None) -> list[str]:
    if lines is None:
        return []
    row = finding.location.row
    if not 1 <= row <= len(lines):
        return []
    first, last = max(1, row - 1), min(len(lines), row + 1)
    width = len(str(last))
    out = [" " * width + " |"]
    for number in range(first, last + 1):
        out.append(f"{number:>{width}} | {lines[number - 1]}")
        if number == row:
            text = lines[number - 1]
            start = finding.location.column - 1
            if finding.end_location.row == row:
                stop = max(start + 1, finding.end_location.column - 1)
            else:
                stop = max(start + 1, len(text.rstrip()))
            out.append(" " * width + " | " + _blank(text[:start]) + "^" * max(1, _display_width(text[start:stop])) + f" {finding.code}")
    out.append(" " * width + " |")
    return out


# Printable ASCII takes one column a character (wcwidth agrees: tests/test_output_formats.py).
_ASCII_BLANKS = {code: " " for code in range(0x20, 0x7F)}


def _display_width(text: str) -> int:
    """Columns `text` takes on a terminal: wide (CJK, emoji) characters take two, combining
    ones none (wcwidth's tables)."""
    if text.isascii() and text.isprintable():
        return len(text)
    from wcwidth import wcwidth  # loaded for the first text that is not printable ASCII

    return sum(max(wcwidth(character), 0) for character in text)


def _blank(text: str) -> str:
    """Blanks as wide as `text` on a terminal; tabs stay tabs, so that the caret lands on the
    same tab stop as the code above it."""
    if text.isascii() and text.replace("\t", "").isprintable():
        return text.translate(_ASCII_BLANKS)
    from wcwidth import wcwidth

    return "".join(character if character == "\t" else " " * max(wcwidth(character), 0) for character in text)


def full(findings: Sequence[Finding], context: OutputContext) -> str:
    blocks = []
    # Split each file once: a file can hold a thousand findings.
    lines_of: dict[str, list[str] | None] = {}
    for finding in findings:
        if finding.filename not in lines_of:
            source = context.read_source(finding.filename)
            lines_of[finding.filename] = source.splitlines() if source is not None else None
        code = _style(finding.code, "1;31", context.color)
        block = [f"{_style(finding.filename, '1', context.color)}:{finding.location.row}:{finding.location.column}: {code}{_marker(finding, context)} {finding.message}"]
        block += _frame(finding, lines_of[finding.filename])
        # Each capture that reaches the finding is its own chain, never merged with another.
        for number, chain in enumerate(finding.chains, start=1):
            which = f" {number} of {len(finding.chains)}" if len(finding.chains) > 1 else ""
            block.append(f"  = captured via chain{which} (capture site first):")
            for step in chain:
                block.append(f"      {step.filename}:{step.location.row}:{step.location.column}: {step.message}")
        advice = rule_help(finding)
        if advice:
            block.append(f"  = help: {advice}")
        blocks.append("\n".join(block))
    closing = summary(findings, context)
    if closing:
        blocks.append(closing)
    return "\n\n".join(blocks) + "\n" if blocks else ""


def grouped(findings: Sequence[Finding], context: OutputContext) -> str:
    """Findings under their file's name, `row:col CODE message` aligned within each file."""
    blocks = []
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        by_file.setdefault(finding.filename, []).append(finding)
    for filename, group in by_file.items():
        row_width = max(len(str(f.location.row)) for f in group)
        column_width = max(len(str(f.location.column)) for f in group)
        lines = [f"{_style(filename, '1', context.color)}:"]
        for f in group:
            place = f"{f.location.row:>{row_width}}:{f.location.column:<{column_width}}"
            lines.append(f"  {place} {_style(f.code, '1;31', context.color)}{_marker(f, context)} {f.message}")
        blocks.append("\n".join(lines) + "\n")
    closing = summary(findings, context)
    if closing:
        blocks.append(closing + "\n")
    return "\n".join(blocks)


def pylint(findings: Sequence[Finding], context: OutputContext) -> str:
    """pylint's parseable form, `path:row: [CODE] message`, that editors and CI parsers read."""
    return "".join(f"{f.filename}:{f.location.row}: [{f.code}] {f.message}\n" for f in findings)


def summary(findings: Sequence[Finding], context: OutputContext) -> str:
    """The closing lines: the count, then what `--fix` would fix, as ruff words it ("" under
    --quiet)."""
    if not context.summary:
        return ""
    count = _summary(findings, context)
    lines = [count] if count else []
    fixable = sum(1 for f in findings if _fixable(f, context))
    hidden = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "unsafe" and not context.unsafe_fixes)
    hint = f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option"
    if fixable:
        lines.append(f"[*] {fixable} fixable with the `--fix` option" + (f" ({hint})." if hidden else "."))
    elif hidden:
        lines.append(f"No fixes available ({hint}).")
    return "\n".join(lines)


def _summary(findings: Sequence[Finding], context: OutputContext) -> str:
    if not findings:
        return "" if context.errors else "All checks passed!"
    return f"Found {len(findings)} error{'s' if len(findings) != 1 else ''}."


def statistics_rows(findings: Sequence[Finding]) -> list[dict]:
    """Findings per rule, most frequent first (ruff's `--statistics` fields)."""
    from ..core.registry import BY_CODE

    counts = Counter(f.code for f in findings)
    fixable = {f.code for f in findings if f.fix is not None}
    rows = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = BY_CODE.get(code)
        rows.append({"code": code, "name": rule.name if rule else None, "count": count, "fixable": code in fixable})
    return rows


def statistics(findings: Sequence[Finding]) -> str:
    return "".join(f"{row['count']:>5}\t{row['code']}\t{row['name'] or ''}\n" for row in statistics_rows(findings))
