"""`full` (code frame, call chain, help) and `concise` (`path:row:col: CODE message`)."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..analyzer.findings import Finding
from . import OutputContext


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
    lines.append(summary(findings, context))
    return "\n".join(lines) + "\n"


def _frame(finding: Finding, source: str | None) -> list[str]:
    if source is None:
        return []
    lines = source.splitlines()
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
            out.append(" " * width + " | " + " " * start + "^" * (stop - start) + f" {finding.code}")
    out.append(" " * width + " |")
    return out


def full(findings: Sequence[Finding], context: OutputContext) -> str:
    blocks = []
    for finding in findings:
        block = [f"{finding.filename}:{finding.location.row}:{finding.location.column}: {finding.code}{_marker(finding, context)} {finding.message}"]
        block += _frame(finding, context.read_source(finding.filename))
        for chain in finding.chains:
            block.append("  = captured via (innermost last):")
            for step in chain:
                block.append(f"      {step.filename}:{step.location.row}:{step.location.column}: {step.message}")
        from ..rules import BY_CODE  # lazy: libcst loads only to render a finding

        rule = BY_CODE.get(finding.code)
        if rule is not None and rule.help:
            block.append(f"  = help: {rule.help}")
        blocks.append("\n".join(block))
    blocks.append(summary(findings, context))
    return "\n\n".join(blocks) + "\n"


def summary(findings: Sequence[Finding], context: OutputContext) -> str:
    """The closing lines: the count, then what `--fix` would fix, as ruff words it."""
    lines = [_summary(findings)]
    fixable = sum(1 for f in findings if _fixable(f, context))
    hidden = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "unsafe" and not context.unsafe_fixes)
    hint = f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option"
    if fixable:
        lines.append(f"[*] {fixable} fixable with the `--fix` option" + (f" ({hint})." if hidden else "."))
    elif hidden:
        lines.append(f"No fixes available ({hint}).")
    return "\n".join(lines)


def _summary(findings: Sequence[Finding]) -> str:
    if not findings:
        return "All checks passed!"
    return f"Found {len(findings)} error{'s' if len(findings) != 1 else ''}."


def statistics(findings: Sequence[Finding]) -> str:
    counts = Counter(f.code for f in findings)
    lines = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        from ..rules import BY_CODE  # lazy: libcst loads only to render a finding

        rule = BY_CODE.get(code)
        lines.append(f"{count:>5}\t{code}\t{rule.name if rule else ''}")
    return "\n".join(lines) + ("\n" if lines else "")
