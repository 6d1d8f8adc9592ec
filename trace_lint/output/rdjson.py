"""`rdjson`: reviewdog's Diagnostic Format (a `DiagnosticResult`), for `reviewdog -f=rdjson`.
Columns are 1-based UTF-8 byte offsets and ranges end exclusively, as the format defines;
a safe fix is a suggestion."""

from __future__ import annotations

import json
from typing import Optional, Sequence

from ..core.findings import Finding, Location
from ..core.rule_links import rules_page_url
from . import OutputContext

_SEVERITY = {"error": "ERROR", "warning": "WARNING", "info": "INFO", "hint": "INFO"}


def _position(location: Location, lines: list[str]) -> dict:
    """A 1-based code-point column as a 1-based UTF-8 byte column."""
    text = lines[location.row - 1] if 1 <= location.row <= len(lines) else ""
    prefix = text[: max(location.column - 1, 0)]
    column = len(prefix.encode("utf-8", "surrogatepass")) + max(location.column - 1 - len(prefix), 0) + 1
    return {"line": location.row, "column": column}


def _range(start: Location, end: Optional[Location], lines: list[str]) -> dict:
    span = {"start": _position(start, lines)}
    if end is not None and (end.row, end.column) >= (start.row, start.column):
        span["end"] = _position(end, lines)
    return span


def format_findings(findings: Sequence[Finding], context: OutputContext) -> str:
    lines_of: dict[str, list[str]] = {}
    diagnostics = []
    for finding in findings:
        if finding.filename not in lines_of:
            source = context.read_source(finding.filename)
            lines_of[finding.filename] = source.splitlines() if source is not None else []
        lines = lines_of[finding.filename]
        diagnostic: dict = {
            "message": finding.message,
            "location": {"path": finding.filename, "range": _range(finding.location, finding.end_location, lines)},
            "severity": _SEVERITY.get(finding.severity, "ERROR"),
            "code": {"value": finding.code, **({"url": finding.url} if finding.url else {})},
        }
        if finding.fix is not None and finding.fix.applicability == "safe":
            diagnostic["suggestions"] = [
                {"range": _range(edit.location, edit.end_location, lines), "text": edit.content} for edit in finding.fix.edits
            ]
        diagnostics.append(diagnostic)
    source = {"name": "trace-lint", "url": rules_page_url()}
    return json.dumps({"source": source, "severity": "ERROR" if diagnostics else "INFO", "diagnostics": diagnostics}, indent=2, ensure_ascii=False) + "\n"
