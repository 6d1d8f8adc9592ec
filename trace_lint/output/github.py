"""`github`: GitHub Actions workflow commands, one annotation per finding.

GitHub shows at most 10 annotations of a kind per step (50 per job); SARIF upload is the
way to see many findings. Paths are relative to the repository root."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from ..core.findings import Finding
from . import OutputContext, rule_help
from ._paths import relative_to_root, repository_root

_COMMAND = {"error": "error", "warning": "warning", "info": "notice", "hint": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, path: str, root: Optional[Path] = None) -> str:
    properties = [("file", path), ("line", str(finding.location.row))]
    start, end = finding.location, finding.end_location
    if end.row == start.row:
        # Columns only mean something on a single line.
        properties.append(("col", str(start.column)))
        properties.append(("endLine", str(end.row)))
        if end.column > start.column:
            properties.append(("endColumn", str(end.column)))
    elif end.row > start.row:
        properties.append(("endLine", str(end.row)))
    properties.append(("title", f"trace-lint ({finding.code})"))
    lines = [finding.message]
    # One line per capture that reaches the finding: two chains are never joined into one path.
    for number, chain in enumerate(finding.chains, start=1):
        steps = [f"{_path(r.filename, root)}:{r.location.row} {r.message}" for r in chain]
        which = f" (chain {number} of {len(finding.chains)})" if len(finding.chains) > 1 else ""
        lines.append(f"captured via{which}: " + " -> ".join(steps))
    advice = rule_help(finding)
    if advice:
        lines.append(f"help: {advice}")
    if finding.url:
        lines.append(finding.url)
    command = _COMMAND.get(finding.severity, "error")
    rendered = ",".join(f"{name}={escape_property(value)}" for name, value in properties)
    return f"::{command} {rendered}::{escape_data(chr(10).join(lines))}"


def _path(filename: str, root: Optional[Path]) -> str:
    relative = relative_to_root(filename, root) if root is not None else None
    return relative or filename.replace("\\", "/")


def format_findings(findings: Sequence[Finding], context: OutputContext) -> str:
    root = repository_root()
    return "".join(annotation(f, _path(f.filename, root), root) + "\n" for f in findings)
